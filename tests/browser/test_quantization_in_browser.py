"""The Quantization page in Chromium at 1280x800: the recorded digits MLP comparison draws
the cost table and both graphs side by side painted by SQNR, the flagged node selected at
first inside the collapsed dense/dense_1 series, which is marked and outlined in both graphs;
a click on the series opens it in both, a click on a scope opens it, and a click on a node of
the quantized graph selects its original node in both graphs and shows its histograms and
metrics; no console errors, no sideways scrolling."""

from __future__ import annotations

from recorded_quantization import THRESHOLD_DB, record_quantized_runs
from selenium.webdriver.support.wait import WebDriverWait
from test_compare_in_browser import click_node_in, wait_drawn

from workbench.app import create_app

ORIGINAL_CY, QUANTIZED_CY = "#quantization-original-cytoscape", "#quantization-quantized-cytoscape"
# The id of the leaf standing for an original node, and the border it is drawn with.
_LEAF_FOR = """
const cy = document.querySelector(arguments[0])._cyreg.cy;
const found = cy.nodes().filter(n => n.data('original') === arguments[1] && !n.isParent());
return found.empty() ? null : [found[0].id(), found[0].style('border-width'),
                               found.length];
"""
_SIDES = """
return [...document.querySelectorAll('.quantization-cytoscape')].map(e => {
    const r = e.getBoundingClientRect(); return [r.left, r.right, r.width]; });
"""


SERIES = "dense+dense_[1]"
# A drawn node's [classes, border width, whether it is a box (holds others)], or null.
_NODE = """
const cy = document.querySelector(arguments[0])._cyreg.cy;
const node = cy.getElementById(arguments[1]);
return node.empty() ? null : [node.classes(), node.style('border-width'), node.isParent()];
"""


def node_state(duo, selector, ident):
    return duo.driver.execute_script(_NODE, selector, ident)


def wait_node(duo, selector, ident, check, message):
    return WebDriverWait(duo.driver, 10).until(
        lambda d: (found := node_state(duo, selector, ident)) is not None and check(found)
        and found, message=message)


def leaf_for(duo, selector, original):
    return duo.driver.execute_script(_LEAF_FOR, selector, original)


def test_the_page_draws_both_graphs_and_links_the_selection(dash_duo, tmp_path):
    runs = record_quantized_runs(tmp_path / "logs")
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(create_app(runs.logdir))
    dash_duo.driver.get(f"{dash_duo.server_url}/quantization")
    wait_drawn(dash_duo, ORIGINAL_CY)
    wait_drawn(dash_duo, QUANTIZED_CY)
    dash_duo.wait_for_element("#quantization-costs-div .quantization-cost-row")
    dash_duo.wait_for_contains_text("#quantization-summary-text",
                                    f"first below {THRESHOLD_DB:g} dB: {runs.flagged}")
    dash_duo.wait_for_contains_text("#quantization-details-div", f"Selected: {runs.flagged}")
    (left_o, right_o, width_o), (left_q, right_q, width_q) = dash_duo.driver.execute_script(
        _SIDES)
    assert right_o <= left_q and right_q <= 1280 and min(width_o, width_q) > 300

    # The flagged node is inside the closed series: one node, marked, outlined as selected.
    for side in (ORIGINAL_CY, QUANTIZED_CY):
        wait_node(dash_duo, side, SERIES, lambda f: "flagged" in f[0] and f[1] == "4px"
                  and not f[2], f"the series is not drawn closed, flagged, outlined in {side}")
    click_node_in(dash_duo, QUANTIZED_CY, SERIES)
    for side in (ORIGINAL_CY, QUANTIZED_CY):      # opened in both graphs
        wait_node(dash_duo, side, "dense_1", lambda f: not f[2],
                  f"the series did not open in {side}")
        assert node_state(dash_duo, side, SERIES)[2], f"the series is not a box in {side}"
    click_node_in(dash_duo, QUANTIZED_CY, "dense_1")
    wait_node(dash_duo, QUANTIZED_CY, "dense_1", lambda f: f[2], "dense_1 did not open")
    leaf, _border, count = WebDriverWait(dash_duo.driver, 10).until(
        lambda d: leaf_for(dash_duo, QUANTIZED_CY, "dense_1/Relu"))
    assert count >= 1
    click_node_in(dash_duo, QUANTIZED_CY, leaf)
    dash_duo.wait_for_contains_text("#quantization-details-div", "Selected: dense_1/Relu")
    dash_duo.wait_for_element("#quantization-outputs-graph .barlayer")
    dash_duo.wait_for_element("#quantization-error-graph .barlayer")
    outlined = WebDriverWait(dash_duo.driver, 10).until(
        lambda d: (found := leaf_for(dash_duo, ORIGINAL_CY, "dense_1/Relu"))
        and found[1] == "4px" and found)
    assert outlined
    assert dash_duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")
    assert dash_duo.get_logs() == []


def test_the_page_follows_a_run_that_records_its_comparison_while_open(dash_duo, tmp_path):
    """Opened on a run still being written with no comparison yet: the page says so and
    polls; the comparison and the cost table recorded then appear without a reload."""
    from live_zoom import write_on_thread
    from recorded_quantization import COMPARISON, COSTS, SAMPLES, digits_data

    from engine.compression import quantize
    from engine.compression.report import record_comparison
    from engine.graph_io import load_graph_def
    from engine.record import RunWriter
    digits = digits_data()
    graph_def = load_graph_def(SAMPLES / "digits_mlp_frozen.json")
    quantized = quantize(graph_def, "eightbit",
                         calibration_samples={"images": digits.train.images[:100]})
    writer = RunWriter(tmp_path, "growing")
    write_on_thread(lambda: (writer.scalar("loss", 1.0, 0), writer.flush()))
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(create_app(tmp_path))
    dash_duo.driver.get(f"{dash_duo.server_url}/quantization?run=growing")
    dash_duo.wait_for_contains_text("#quantization-live-banner-div", "● running", timeout=30)
    dash_duo.wait_for_contains_text("#quantization-original-message",
                                    "recorded no quantization comparison")

    def record():
        record_comparison(writer, graph_def, quantized, {"images": digits.test.images[:64]},
                          name=COMPARISON, threshold_db=THRESHOLD_DB)
        writer.quantization_costs(COSTS)
        writer.flush()
    write_on_thread(record)
    wait_drawn(dash_duo, ORIGINAL_CY)
    wait_drawn(dash_duo, QUANTIZED_CY)
    dash_duo.wait_for_element("#quantization-costs-div .quantization-cost-row", timeout=30)
    dash_duo.wait_for_contains_text("#quantization-summary-text", "first below")
    dash_duo.wait_for_contains_text("#quantization-details-div", "Selected: ")
    writer.close()
    dash_duo.wait_for_contains_text("#quantization-live-banner-div", "finished", timeout=30)
    assert dash_duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")
    assert dash_duo.get_logs() == []


def _address(driver) -> dict:
    from urllib.parse import parse_qs, urlparse
    return {key: values[0] for key, values in parse_qs(urlparse(driver.current_url).query,
                                                       keep_blank_values=True).items()}


def test_the_open_groups_are_kept_in_the_address(dash_duo, tmp_path):
    """`open=` opens the groups it names in both graphs; opening or closing one by a click
    writes them (the first view writes none), and a reload opens the same ones."""
    from urllib.parse import quote
    runs = record_quantized_runs(tmp_path / "logs")
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(create_app(runs.logdir))
    dash_duo.driver.get(f"{dash_duo.server_url}/quantization?run={runs.run}")
    wait_drawn(dash_duo, QUANTIZED_CY)
    wait_node(dash_duo, QUANTIZED_CY, SERIES, lambda f: not f[2], "the series is not closed")
    WebDriverWait(dash_duo.driver, 10).until(
        lambda d: _address(d).get("run") == runs.run and "node" in _address(d),
        message="the address was never written")
    assert "open" not in _address(dash_duo.driver)
    click_node_in(dash_duo, QUANTIZED_CY, SERIES)
    for side in (ORIGINAL_CY, QUANTIZED_CY):
        wait_node(dash_duo, side, "dense_1", lambda f: not f[2], f"no dense_1 in {side}")
    opened = WebDriverWait(dash_duo.driver, 10).until(
        lambda d: SERIES in _address(d).get("open", "").split(",") and _address(d)["open"],
        message="the opened series is not in the address")
    dash_duo.driver.refresh()
    for side in (ORIGINAL_CY, QUANTIZED_CY):
        wait_drawn(dash_duo, side)
        wait_node(dash_duo, side, SERIES, lambda f: f[2], f"the reload closed it in {side}")
        wait_node(dash_duo, side, "dense_1", lambda f: not f[2], f"no dense_1 in {side}")
    assert _address(dash_duo.driver)["open"] == opened
    assert dash_duo.get_logs() == []

    # All closed (`open=`), and junk in the address opens nothing it names.
    dash_duo.driver.get(f"{dash_duo.server_url}/quantization?run={runs.run}&open="
                        f"{quote('nope,../x')}")
    for side in (ORIGINAL_CY, QUANTIZED_CY):
        wait_drawn(dash_duo, side)
        wait_node(dash_duo, side, SERIES, lambda f: not f[2], f"the series opened in {side}")
    WebDriverWait(dash_duo.driver, 10).until(
        lambda d: _address(d).get("open") == "", message="the address did not say all closed")
    assert dash_duo.get_logs() == []
