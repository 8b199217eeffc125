"""Each page in headless Chromium: it loads, shows the recorded data, and leaves no errors
in the browser console. Waits with wait_for_* only."""

from __future__ import annotations

from browser_helpers import WAIT_S, click_node, node_point, open_page, wait_for_graph
from selenium.webdriver.support.wait import WebDriverWait

from engine.record import RunWriter
from workbench.pages.runs import REFRESH_MS

REFRESH_WAIT_S = 3 * REFRESH_MS / 1000


def test_runs_page_lists_runs_and_the_unreadable_folder(workbench, recorded_runs):
    workbench.wait_for_element(".runs-table")
    for run in recorded_runs.runs:
        workbench.wait_for_contains_text(".runs-table", run)
    workbench.wait_for_contains_text(".runs-table", recorded_runs.unreadable)
    workbench.wait_for_contains_text(".run-unreadable", "unreadable")
    assert workbench.get_logs() == []


def test_runs_page_picks_up_a_new_live_run(workbench, recorded_runs):
    workbench.wait_for_element(".runs-table")
    with RunWriter(recorded_runs.logdir, "late-run") as writer:
        writer.scalar("loss", 1.0, 0)
        writer.flush()
        workbench.wait_for_contains_text(".run-running", "late-run", timeout=REFRESH_WAIT_S)
    assert workbench.get_logs() == []


def test_graph_page_draws_devices_cuts_and_collapses_scopes(workbench, recorded_runs):
    open_page(workbench, f"/graph?run={recorded_runs.run}")
    wait_for_graph(workbench)
    workbench.wait_for_contains_text("#graph-legend-div", "Send/Recv cut")
    workbench.wait_for_contains_text("#graph-legend-div", "GPU:1 (virtual)")
    workbench.find_element("#graph-collapse-button").click()
    workbench.wait_for_contains_text("#graph-summary-text", "7 nodes drawn")
    click_node(workbench, "layer1")
    workbench.wait_for_contains_text("#graph-inspector-div", "layer1/")
    workbench.wait_for_contains_text("#graph-summary-text", "9 nodes drawn")
    assert node_point(workbench, "layer1/MatMul") is not None
    assert workbench.get_logs() == []


def test_placement_page_filters_and_highlights_soft_fallbacks(workbench, recorded_runs):
    open_page(workbench, f"/placement?run={recorded_runs.run}")
    workbench.wait_for_contains_text("#placement-nodes-table", recorded_runs.soft_fallback_node)
    workbench.wait_for_contains_text("#placement-log-pre", ": (MatMul): /job:localhost")
    search = workbench.find_element("#placement-search-input")
    search.send_keys("soft_placement\n")
    workbench.wait_for_contains_text("#placement-count-text", "1 of")
    workbench.wait_for_style_to_equal(
        "#placement-nodes-table td[data-dash-column='reason']", "background-color",
        "rgba(255, 241, 204, 1)")
    WebDriverWait(workbench.driver, WAIT_S).until(
        lambda driver: "search=soft_placement" in driver.current_url,
        message="the address never took the search")
    workbench.driver.refresh()                  # the same filter from the address alone
    workbench.wait_for_contains_text("#placement-count-text", "1 of")
    assert workbench.find_element("#placement-search-input").get_attribute(
        "value") == "soft_placement"
    assert workbench.get_logs() == []


def test_scalars_page_overlays_the_runs(workbench, recorded_runs):
    open_page(workbench, "/scalars")
    workbench.wait_for_element("#scalars-curves-div .js-plotly-plot")
    for run in recorded_runs.runs:
        workbench.wait_for_contains_text("#scalars-curves-div .legend", run)
    workbench.wait_for_contains_text("#scalars-curves-div .annotation-text", "loss")
    assert workbench.get_logs() == []


LAYOUT_BYTES = ("return performance.getEntriesByType('resource')"
                ".filter(e => e.name.endsWith('/_dash-layout'))[0].encodedBodySize")


def test_a_scalars_address_opens_its_view_and_the_axis_and_scale_switch(workbench,
                                                                         recorded_runs):
    """The page loaded at an address comes in Dash's first layout, its figure with it
    (workbench/first_page.py: the bare shell is about 3 kB), titled as the router titles it;
    dcc's graph chunk is fetched once."""
    run = recorded_runs.run
    open_page(workbench, f"/scalars?run={run}&tag=loss&x=relative")
    workbench.wait_for_element("#scalars-curves-div .js-plotly-plot .scatterlayer .trace")
    assert workbench.driver.execute_script(LAYOUT_BYTES) > 8_000
    # assets/scalars.js fetched dcc's graph chunk as the page loaded; dcc's loader took it.
    assert workbench.driver.execute_script(
        "return performance.getEntriesByType('resource')"
        ".filter(e => e.name.endsWith('/dcc/async-graph.js')).length") == 1
    WebDriverWait(workbench.driver, WAIT_S).until(lambda d: d.title == "Scalars · Workbench")
    workbench.wait_for_contains_text("#scalars-curves-div .xtitle", "relative time")
    workbench.wait_for_contains_text("#scalars-curves-div .legend", run)
    workbench.find_element("#scalars-x-axis-radio input[value='wall']").click()
    workbench.wait_for_contains_text("#scalars-curves-div .xtitle", "wall time")
    workbench.find_element("#scalars-log-scale-check input").click()
    workbench.wait_for_element("#scalars-curves-div .yaxislayer-above")
    WebDriverWait(workbench.driver, 10).until(
        lambda d: "log=1" in d.find_element("css selector", "#scalars-view-link")
        .get_attribute("href"))
    workbench.find_element("#scalars-csv-button").click()
    assert workbench.get_logs() == []


CYTOSCAPE_FETCHES = ("return performance.getEntriesByType('resource')"
                     ".filter(e => e.name.includes('dash_cytoscape.min.js')).length")


def test_from_a_run_to_its_graph_inspector_then_to_its_loss(workbench, recorded_runs):
    """Also: the Runs page does not fetch dash-cytoscape's bundle; the Graph page, reached
    in the app, fetches it once (assets/cytoscape.js)."""
    run = recorded_runs.run
    link = workbench.wait_for_element(f".runs-table a[href='/graph?run={run}']")
    assert workbench.driver.execute_script(CYTOSCAPE_FETCHES) == 0
    link.click()
    wait_for_graph(workbench)
    assert workbench.driver.execute_script(CYTOSCAPE_FETCHES) == 1
    click_node(workbench, recorded_runs.node)
    workbench.wait_for_contains_text(".inspector-title", recorded_runs.node)
    workbench.wait_for_contains_text(".inspector-op", recorded_runs.node_op)
    workbench.wait_for_contains_text(".inspector", recorded_runs.node_device)
    workbench.find_element("#app-nav-scalars-link").click()
    workbench.wait_for_element("#scalars-curves-div .js-plotly-plot .scatterlayer .trace")
    workbench.wait_for_contains_text("#scalars-curves-div .legend", run)
    assert workbench.get_logs() == []


def test_runs_page_pages_a_large_logdir(dash_duo, tmp_path):
    """Past PAGE_ROWS runs the table shows a page at a time; Next and Previous turn it."""
    from workbench.app import create_app
    from workbench.pages.runs import PAGE_ROWS

    logdir = tmp_path / "logs"
    for k in range(PAGE_ROWS + 3):
        with RunWriter(logdir, f"run-{k:03d}") as writer:
            writer.scalar("loss", 1.0, 0)
    dash_duo.start_server(create_app(logdir))
    dash_duo.wait_for_contains_text("#runs-page-text", f"Runs 1–{PAGE_ROWS} of {PAGE_ROWS + 3}")
    assert len(dash_duo.find_elements(".runs-table .run-row")) == PAGE_ROWS
    dash_duo.find_element("#runs-next-button").click()
    dash_duo.wait_for_contains_text("#runs-page-text", f"Runs {PAGE_ROWS + 1}–{PAGE_ROWS + 3}")
    dash_duo.wait_for_contains_text(".runs-table", f"run-{PAGE_ROWS + 2:03d}")
    dash_duo.find_element("#runs-previous-button").click()
    dash_duo.wait_for_contains_text("#runs-page-text", f"Runs 1–{PAGE_ROWS}")
    assert dash_duo.get_logs() == []


def test_a_long_logdir_is_cut_in_the_header_not_scrolled_sideways(dash_duo, tmp_path):
    from workbench.app import create_app

    logdir = tmp_path / ("a-log-directory-with-a-long-name-" * 4)
    logdir.mkdir()
    dash_duo.start_server(create_app(logdir))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, "/")
    dash_duo.wait_for_contains_text(".app-logdir", "logdir:")
    assert dash_duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")
    assert dash_duo.find_element(".app-logdir").get_attribute("title").endswith(
        "a-long-name-")
    # At 1280 px the header is one line (a wrapped one pushed the Graph page's drawing below
    # the window), also beside a vertical scrollbar: one line is under 60 px, two are 69.
    for width in (1280, 1265):
        dash_duo.driver.execute_script(
            f"document.querySelector('.app-header').style.maxWidth = '{width}px'")
        assert dash_duo.driver.execute_script(
            "return document.querySelector('.app-header').getBoundingClientRect().height") < 60
    assert dash_duo.get_logs() == []
