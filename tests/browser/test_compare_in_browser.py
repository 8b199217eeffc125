"""The Compare page in Chromium at 1280x800: /compare?a=&b= on an MLP run and a variant
of it (Relu6 for Relu, a summary added) draws the shared curve and both graphs side by side,
painted by diff status; a click on a node in A selects and inspects it in B too; no console
errors."""

from __future__ import annotations

import dataclasses

from recorded_mlp import CPU0, DEVICES, mlp_graph, record_sample_runs
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.support.wait import WebDriverWait

from engine.record import RunWriter
from engine.record.schema import NodeRecord, PlacementRecord, TensorSpec
from workbench.app import create_app

A_CY, B_CY = "#compare-a-cytoscape", "#compare-b-cytoscape"
_CY = "const cy = document.querySelector(arguments[0])._cyreg.cy;"
_COUNT = "const box = document.querySelector(arguments[0]); " \
         "return box && box._cyreg ? box._cyreg.cy.nodes().length : 0;"
_DIFF = _CY + "const n = cy.getElementById(arguments[1]); return n.empty() ? null : " \
              "[n.data('diff'), n.style('border-color'), n.style('border-width')];"
# Where a node is drawn (viewport pixels), its canvas scrolled into view (browser_helpers'
# click_node knows only the Graph page's canvas).
_NODE_AT = """
const box = document.querySelector(arguments[0]);
const node = box._cyreg.cy.getElementById(arguments[1]);
if (node.empty()) { return null; }
box.scrollIntoView({block: 'nearest'});
const frame = box.getBoundingClientRect();
const at = node.renderedPosition();
return [frame.left + at.x, frame.top + at.y];
"""
_SIDES = """
return [...document.querySelectorAll('.compare-cytoscape')].map(e => {
    const r = e.getBoundingClientRect(); return [r.left, r.right, r.width]; });
"""


def write_variant(logdir) -> str:
    graph, placements = mlp_graph()
    nodes = [dataclasses.replace(n, op="Relu6") if n.name == "layer1/Relu" else n
             for n in graph.nodes]
    nodes.append(NodeRecord("summaries/loss", "ScalarSummary", ("loss/Mean",), "", {},
                            (TensorSpec("string", ()),), ()))
    placements.append(PlacementRecord("summaries/loss", "ScalarSummary", "", CPU0, "default",
                                      "", "", graph_version=1))
    with RunWriter(logdir, "mlp-variant") as run:
        run.devices(DEVICES)
        run.graph(dataclasses.replace(graph, nodes=tuple(nodes)))
        run.placements(placements)
        for step in range(4):
            run.scalar("loss", 2.0 - 0.2 * step, step)
    return "mlp-variant"


def click_node_in(duo, selector: str, node_id: str) -> None:
    """A real mouse click where the node is drawn, once it stays still."""
    seen: list = [None]

    def settled(driver):
        now = driver.execute_script(_NODE_AT, selector, node_id)
        before, seen[0] = seen[0], now
        return now if now is not None and now == before else None
    x, y = WebDriverWait(duo.driver, 10, poll_frequency=0.2).until(
        settled, message=f"{node_id!r} never appeared in {selector}")
    actions = ActionChains(duo.driver)
    actions.w3c_actions.pointer_action.move_to_location(int(x), int(y))
    actions.w3c_actions.pointer_action.click()
    actions.perform()


def wait_drawn(duo, selector: str) -> None:
    WebDriverWait(duo.driver, 10).until(
        lambda driver: driver.execute_script(_COUNT, selector) > 0,
        message=f"{selector} was never drawn")


def test_compare_draws_curves_and_both_graphs_with_linked_selection(dash_duo, tmp_path):
    runs = record_sample_runs(tmp_path / "logs")
    variant = write_variant(runs.logdir)
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(create_app(runs.logdir))
    dash_duo.driver.get(f"{dash_duo.server_url}/compare?a={runs.run}&b={variant}")
    wait_drawn(dash_duo, A_CY)
    wait_drawn(dash_duo, B_CY)
    dash_duo.wait_for_contains_text("#compare-diff-summary", "1 added, 0 removed, 1 changed")
    dash_duo.wait_for_element("#compare-curves-div .js-plotly-plot")
    (left_a, right_a, width_a), (left_b, right_b, width_b) = dash_duo.driver.execute_script(
        _SIDES)
    assert right_a <= left_b and right_b <= 1280 and min(width_a, width_b) > 300

    added = WebDriverWait(dash_duo.driver, 10).until(
        lambda d: d.execute_script(_DIFF, B_CY, "summaries/loss"))
    assert added[0] == "added"
    assert dash_duo.driver.execute_script(_DIFF, A_CY, "layer1/Relu")[0] == "changed"

    click_node_in(dash_duo, A_CY, "layer1/Relu")
    dash_duo.wait_for_contains_text("#compare-selected-text", "layer1/Relu")
    dash_duo.wait_for_contains_text("#compare-b-inspector", "Relu6")
    dash_duo.wait_for_contains_text("#compare-a-inspector", "layer1/Relu")
    outlined = WebDriverWait(dash_duo.driver, 10).until(
        lambda d: (s := d.execute_script(_DIFF, B_CY, "layer1/Relu")) and s[2] == "4px" and s)
    assert outlined[1] == "rgb(17,17,17)"
    WebDriverWait(dash_duo.driver, 10).until(
        lambda d: "node=layer1/Relu" in d.current_url, message="the address lost the node")
    dash_duo.driver.refresh()                   # both runs and the selection, from the address
    dash_duo.wait_for_contains_text("#compare-selected-text", "layer1/Relu")
    dash_duo.wait_for_contains_text("#compare-b-inspector", "Relu6")
    assert dash_duo.get_logs() == []
