"""The Histograms and Images pages in headless Chromium at 1280x800: the histogram draws one
ridge per step beside its distribution bands, the mode toggle redraws it overlaid with a step
colour bar and puts the mode in the address (a reload keeps it, a bad one is told); the image
shows at the address's step and the slider moves it to another step that logged one; neither
page scrolls sideways and the console stays free of errors."""

from __future__ import annotations

import numpy as np
import pytest
from browser_helpers import WAIT_S, open_page
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait

from engine.record import RunWriter
from workbench.app import create_app

RUN = "hist-images"
STEPS = 6
IMAGE_STEPS = (0, 2, 4)

# The drawn traces of the first histogram figure: [name, fill] each.
_HISTOGRAM_TRACES = """
const plot = document.querySelector('#histograms-figures-div .js-plotly-plot');
if (!plot || !plot._fullData) { return null; }
return plot._fullData.map(trace => [trace.name, trace.fill]);
"""


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("hist-images-browser")
    rng = np.random.default_rng(0)
    with RunWriter(root, RUN) as run:
        for step in range(STEPS):
            run.histogram("layer1/weights", rng.normal(step, 1.0, 500), step)
            if step in IMAGE_STEPS:
                pixels = np.zeros((8, 8), np.uint8)
                pixels[:, step] = 255
                run.image("digits", pixels, step)
    return root


def _fits(duo) -> bool:
    return duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")


def test_histograms_toggle_modes_and_images_follow_the_slider(dash_duo, logdir):
    dash_duo.start_server(create_app(logdir))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, f"/histograms?run={RUN}&tag=layer1/weights")
    traces = WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: driver.execute_script(_HISTOGRAM_TRACES), message="no histogram drawn")
    assert [name for name, _ in traces] == [f"step {s}" for s in range(STEPS)]
    assert {fill for _, fill in traces} == {"toself"}
    dash_duo.wait_for_contains_text("#histograms-figures-div", "(distribution)")
    assert len(dash_duo.find_elements("#histograms-figures-div .js-plotly-plot")) == 2
    assert _fits(dash_duo), "the histograms page scrolls sideways at 1280x800"

    dash_duo.find_element("#histograms-mode-radio input[value='overlay']").click()
    dash_duo.wait_for_element("#histograms-figures-div .colorbar")
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: (drawn := driver.execute_script(_HISTOGRAM_TRACES))
        and drawn[0][1] != "toself", message="the overlay mode never drew")
    # The mode is in the address: a reload draws the overlay again; a bad one is told.
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: "mode=overlay" in driver.current_url,
        message="the address never took the mode")
    assert f"run={RUN}" in dash_duo.driver.current_url
    dash_duo.driver.refresh()
    dash_duo.wait_for_element("#histograms-figures-div .colorbar")
    assert dash_duo.find_element(
        "#histograms-mode-radio input[value='overlay']").is_selected()
    open_page(dash_duo, f"/histograms?run={RUN}&tag=layer1/weights&mode=stacked")
    dash_duo.wait_for_contains_text("#histograms-notice-text", "not one of offset, overlay")
    dash_duo.wait_for_contains_text("#histograms-figures-div", "(distribution)")
    assert dash_duo.find_element("#histograms-mode-radio input[value='offset']").is_selected()

    open_page(dash_duo, f"/images?run={RUN}&tag=digits&step=2")
    dash_duo.wait_for_element("#images-picture-img")
    dash_duo.wait_for_contains_text("#images-caption-text", f"{RUN} · digits · step 2")
    assert dash_duo.find_element("#images-picture-img").size["width"] == 8 * 32 + 2
    handle = dash_duo.find_element("#images-step-slider [role='slider']")
    handle.send_keys(Keys.ARROW_RIGHT)
    dash_duo.wait_for_contains_text("#images-caption-text", "step 4")
    handle.send_keys(Keys.HOME)
    dash_duo.wait_for_contains_text("#images-caption-text", "step 0")
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: driver.current_url.endswith("step=0"),
        message="the address never took the slider's step")
    dash_duo.driver.refresh()                   # the address alone shows the same image
    dash_duo.wait_for_contains_text("#images-caption-text", f"{RUN} · digits · step 0")
    assert _fits(dash_duo), "the images page scrolls sideways at 1280x800"
    assert dash_duo.get_logs() == []
