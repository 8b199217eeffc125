"""The Text page in a browser at 1280x800: the address's run, tag and step shown, markdown
drawn and a <script> in a summary shown as text (never run), the slider moving to other
steps, "show all" listing every step newest first, a page at a time, the view in the
address; an unknown run is named on the page; a string tensor drawn as TensorBoard's
table of markdown cells (a 3-D one as its first slice under the warning, a <script> cell as
text); no console errors."""

from __future__ import annotations

import pytest
from browser_helpers import WAIT_S, open_page
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait

from engine.record import RunWriter
from workbench.app import create_app

RUN = "text-browser"
STEPS = (0, 3, 7)
HOSTILE = "<script>window.textPageRan = true</script> <b>not bold</b>"
TABLE = [["**metric**", "value"], ["loss", "`0.25`"],
         ["<script>window.tableRan = true</script>", "*x*"]]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("text-browser")
    with RunWriter(root, RUN) as run:
        for step in STEPS:
            run.scalar("loss", 1.0, step)
            run.text("notes", f"**note {step}**\n\n| a | b |\n|---|---|\n| {step} | x |", step)
        run.text("hostile", HOSTILE, 1)
        for step in range(25):
            run.text("long", f"entry {step}", step)
        run.text("table", TABLE, 2)
        run.text("cube", [[["a", "b"], ["c", "d"]], [["e", "f"], ["g", "h"]]], 2)
    return root


def _fits(duo) -> bool:
    return duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")


def test_the_text_page_follows_the_slider_and_shows_all(dash_duo, logdir):
    dash_duo.start_server(create_app(logdir))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, f"/text?run={RUN}&tag=notes&step=3")
    dash_duo.wait_for_contains_text("#text-entries-div", "note 3")
    assert dash_duo.find_element("#text-entries-div strong").text == "note 3"
    assert dash_duo.find_element("#text-entries-div table td").text == "3"
    handle = dash_duo.find_element("#text-step-slider [role='slider']")
    handle.send_keys(Keys.ARROW_RIGHT)
    dash_duo.wait_for_contains_text("#text-entries-div", "note 7")
    handle.send_keys(Keys.HOME)
    dash_duo.wait_for_contains_text("#text-entries-div", "note 0")
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: "step=0" in driver.current_url, message="the address never took step 0")
    assert _fits(dash_duo), "the text page scrolls sideways at 1280x800"

    dash_duo.find_element("#text-all-checklist input[value='all']").click()
    dash_duo.wait_for_contains_text("#text-page-text", "Entries 1–3 of 3")
    heads = [element.text for element in dash_duo.find_elements(".text-entry-head")]
    assert [head.split(" · ")[2] for head in heads] == ["step 7", "step 3", "step 0"]
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: "all=1" in driver.current_url, message="the address never took all=1")

    open_page(dash_duo, f"/text?run={RUN}&tag=long&all=1")
    dash_duo.wait_for_contains_text("#text-page-text", "Entries 1–20 of 25")
    assert dash_duo.find_element("#text-newer-button").get_attribute("disabled")
    dash_duo.find_element("#text-older-button").click()
    dash_duo.wait_for_contains_text("#text-page-text", "Entries 21–25 of 25")
    dash_duo.wait_for_contains_text("#text-entries-div", "entry 0")
    assert dash_duo.find_element("#text-older-button").get_attribute("disabled")

    open_page(dash_duo, f"/text?run={RUN}&tag=hostile")
    dash_duo.wait_for_contains_text("#text-entries-div", "window.textPageRan")
    assert dash_duo.find_elements("#text-entries-div script") == []
    assert dash_duo.find_elements("#text-entries-div .text-markdown b") == []
    assert dash_duo.driver.execute_script("return window.textPageRan === undefined")

    open_page(dash_duo, "/text?run=nope&tag=notes")
    dash_duo.wait_for_contains_text("#text-notice-text", "No readable run named 'nope'")
    dash_duo.wait_for_contains_text("#text-entries-div", "note 7")
    assert dash_duo.get_logs() == []


def test_a_string_tensor_is_a_table_of_markdown_cells(dash_duo, logdir):
    dash_duo.start_server(create_app(logdir))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, f"/text?run={RUN}&tag=table")
    dash_duo.wait_for_element("#text-entries-div .text-table td")
    rows = dash_duo.find_elements("#text-entries-div .text-table tr")
    cells = [[cell.text for cell in row.find_elements("css selector", "td")] for row in rows]
    assert cells == [["metric", "value"], ["loss", "0.25"],
                     ["<script>window.tableRan = true</script>", "x"]]
    assert dash_duo.find_element(".text-table td strong").text == "metric"
    assert dash_duo.find_element(".text-table td code").text == "0.25"
    assert dash_duo.find_elements("#text-entries-div script") == []
    assert dash_duo.driver.execute_script("return window.tableRan === undefined")
    assert _fits(dash_duo), "the text table scrolls the page sideways at 1280x800"

    open_page(dash_duo, f"/text?run={RUN}&tag=cube")
    dash_duo.wait_for_contains_text("#text-entries-div", "dimensionality 3")
    assert dash_duo.find_element("#text-entries-div strong").text == "Warning:"
    rows = dash_duo.find_elements("#text-entries-div .text-table tr")
    assert [row.text.split() for row in rows] == [["a", "b"], ["c", "d"]]
    assert dash_duo.get_logs() == []
