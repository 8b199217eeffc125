"""The Quantization page in Chromium at 1280x800: the recorded digits MLP comparison draws
the cost table and both graphs side by side painted by SQNR, the flagged node selected at
first; a click on a node of the quantized graph selects its original node in both graphs and
shows its histograms and metrics; no console errors, no sideways scrolling."""

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
