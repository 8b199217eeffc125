"""The Graph page in Chromium at 1280x800 on the demo's runs: drawn within the window, a
scope opened by a click, edges drawn along the server's routes, a node found by search,
colour modes and the partition view switched, the view exported, the view kept in the address
(a reload shows the same selection, colour and partition view), a node selected from the
address; no console errors."""

from __future__ import annotations

import pytest
from browser_helpers import click_node, drawn_ids, open_page, wait_for_graph
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait

from viz.edge_routes import geometry, route
from workbench.app import create_app
from workbench.demo import run_demo

DEMO_STEPS = 4
_FITS = """
const box = document.querySelector('#graph-cytoscape').getBoundingClientRect();
return [box.top, box.bottom, box.width, window.innerHeight, window.innerWidth];
"""
_DRAWN = """
const cy = document.querySelector('#graph-cytoscape')._cyreg.cy;
return [cy.nodes().map(n => [n.id(), n.data('parent') || '', n.isParent(), n.position(),
                             n.data('width'), n.data('height'), n.data('label')]),
        cy.edges('.routed').map(e => [e.data('source'), e.data('target'), e.segmentPoints()])];
"""
_DEVICE_BOXES = """
const cy = document.querySelector('#graph-cytoscape')._cyreg.cy;
return cy.nodes('.device').map(node => node.data('label'));
"""


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("graph-demo")
    paths = run_demo(str(logdir), steps=DEMO_STEPS, progress=False)
    return logdir, [p.rsplit("/", 1)[-1] for p in paths]


def test_graph_page_expands_searches_colours_partitions_and_exports(dash_duo, demo_runs,
                                                                   tmp_path):
    logdir, runs = demo_runs
    run = runs[0]
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(create_app(logdir))
    open_page(dash_duo, f"/graph?run={run}")
    wait_for_graph(dash_duo)
    top, bottom, width, height, window_width = dash_duo.driver.execute_script(_FITS)
    assert bottom <= height and width < window_width      # the drawing fits the window

    dash_duo.find_element("#graph-collapse-button").click()
    dash_duo.wait_for_contains_text("#graph-summary-text", "12 nodes drawn")
    click_node(dash_duo, "layer1")
    dash_duo.wait_for_contains_text("#graph-inspector-div", "layer1/")
    dash_duo.wait_for_contains_text("#graph-summary-text", "drawn")
    assert "layer1/MatMul" in drawn_ids(dash_duo)
    check_routes(dash_duo)

    search = dash_duo.find_element("#graph-search-input")
    search.send_keys(r"gradients/layer2/MatMul_grad/MatMul$" + Keys.ENTER)
    dash_duo.wait_for_contains_text("#graph-search-text", "1 match")
    dash_duo.wait_for_contains_text(".inspector-title", "gradients/layer2/MatMul_grad/MatMul")
    assert "gradients/layer2/MatMul_grad/MatMul" in drawn_ids(dash_duo)

    dash_duo.select_dcc_dropdown("#graph-color-dropdown", "Op type")
    dash_duo.wait_for_contains_text("#graph-legend-div", "MatMul")
    dash_duo.select_dcc_dropdown("#graph-color-dropdown", "Compute time (step)")
    dash_duo.wait_for_contains_text("#graph-legend-div", "us")

    dash_duo.find_element("#graph-partition-checklist input").click()
    boxes = wait_devices(dash_duo)
    assert {"CPU:0", "GPU:0", "GPU:1"} <= set(boxes)

    dash_duo.driver.execute_cdp_cmd("Page.setDownloadBehavior", {
        "behavior": "allow", "downloadPath": str(downloads)})
    dash_duo.find_element("#graph-svg-button").click()
    dash_duo.wait_for_contains_text("#graph-export-text", f"graph-{run}.svg")
    svg = wait_file(downloads / f"graph-{run}.svg")
    assert "<svg" in svg.read_text()[:500]
    dash_duo.find_element("#graph-png-button").click()
    dash_duo.wait_for_contains_text("#graph-export-text", f"graph-{run}.png")
    assert wait_file(downloads / f"graph-{run}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The address follows the view; a reload shows the same one.
    found = "gradients/layer2/MatMul_grad/MatMul"
    address = WebDriverWait(dash_duo.driver, 10).until(
        lambda d: "partition=1" in d.current_url and "color=time" in d.current_url
        and d.current_url, message="the address never took the colour and partition view")
    assert f"run={run}" in address and f"node={found}" in address and "open=" in address
    dash_duo.driver.refresh()
    dash_duo.wait_for_contains_text(".inspector-title", found)
    assert {"CPU:0", "GPU:0", "GPU:1"} <= set(wait_devices(dash_duo))
    dash_duo.wait_for_contains_text("#graph-color-dropdown", "Compute time (step)")
    assert dash_duo.driver.current_url == address
    assert dash_duo.get_logs() == []


def check_routes(duo) -> None:
    """cytoscape bends each routed edge exactly where viz.edge_routes put its bend points."""
    nodes, routed = duo.driver.execute_script(_DRAWN)
    parents = {ident: parent for ident, parent, *_ in nodes}
    leaves = [(ident, at, w, h) for ident, _, box, at, w, h, _ in nodes if not box]
    titles = {ident: label for ident, _, box, *_, label in nodes if box}
    geo = geometry(parents, {i: (at["x"], at["y"]) for i, at, _, _ in leaves},
                   {i: (w, h) for i, _, w, h in leaves}, titles)
    assert routed
    for src, dst, points in routed:
        wanted = route(geo, src, dst)
        assert len(points) == len(wanted)
        assert all(abs(p["x"] - x) < 1 and abs(p["y"] - y) < 1
                   for p, (x, y) in zip(points, wanted))


def wait_file(path):
    return WebDriverWait(None, 10).until(
        lambda _: path if path.exists() and path.stat().st_size else False,
        message=f"{path.name} was never saved")


def wait_devices(duo) -> list[str]:
    return WebDriverWait(duo.driver, 10).until(
        lambda driver: driver.execute_script(_DEVICE_BOXES) or False,
        message="the partition view never drew its device boxes")


def test_the_address_selects_and_reveals_a_node(dash_duo, demo_runs):
    logdir, runs = demo_runs
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(create_app(logdir))
    node = "gradients/layer1/MatMul_grad/MatMul_1"
    open_page(dash_duo, f"/graph?run={runs[0]}&step={DEMO_STEPS - 1}&node={node}")
    wait_for_graph(dash_duo)
    dash_duo.wait_for_contains_text(".inspector-title", node)
    assert node in drawn_ids(dash_duo)
    assert dash_duo.get_logs() == []


def _address(driver) -> dict:
    from urllib.parse import parse_qs, urlparse
    return {key: values[0] for key, values in parse_qs(urlparse(driver.current_url).query,
                                                       keep_blank_values=True).items()}


def test_the_address_keeps_the_search(dash_duo, demo_runs):
    """`search=REGEX` fills the search box, reveals and selects the first match as the box
    does; a search run in the box is written, an emptied one dropped; a bad pattern is told
    and the graph still drawn."""
    from urllib.parse import quote
    logdir, runs = demo_runs
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(create_app(logdir))
    found = "gradients/layer2/MatMul_grad/MatMul"
    open_page(dash_duo, f"/graph?run={runs[0]}&search={quote(found + '$')}")
    wait_for_graph(dash_duo)
    dash_duo.wait_for_contains_text("#graph-search-text", f"1 match; showing {found}.")
    dash_duo.wait_for_contains_text(".inspector-title", found)
    assert found in drawn_ids(dash_duo)
    assert dash_duo.find_element("#graph-search-input").get_attribute("value") == found + "$"
    WebDriverWait(dash_duo.driver, 10).until(
        lambda d: _address(d).get("search") == found + "$" and _address(d).get("node") == found
        and "open" in _address(d), message="the address did not keep the search and its match")

    search = dash_duo.find_element("#graph-search-input")
    search.clear()
    search.send_keys("layer1/Relu$" + Keys.ENTER)
    dash_duo.wait_for_contains_text("#graph-search-text", "showing layer1/Relu.")
    WebDriverWait(dash_duo.driver, 10).until(
        lambda d: _address(d).get("search") == "layer1/Relu$"
        and _address(d).get("node") == "layer1/Relu", message="the new search was not written")
    dash_duo.driver.refresh()
    dash_duo.wait_for_contains_text(".inspector-title", "layer1/Relu")
    assert dash_duo.find_element("#graph-search-input").get_attribute("value") == (
        "layer1/Relu$")
    search = dash_duo.find_element("#graph-search-input")
    search.clear()
    search.send_keys(Keys.ENTER)
    WebDriverWait(dash_duo.driver, 10).until(
        lambda d: "search" not in _address(d) and _address(d).get("node") == "layer1/Relu",
        message="an emptied search stayed in the address")
    assert dash_duo.get_logs() == []

    open_page(dash_duo, f"/graph?run={runs[0]}&search={quote('layer1/[')}")
    wait_for_graph(dash_duo)
    dash_duo.wait_for_text_to_equal(
        "#graph-search-text",
        "Not a regular expression: unterminated character set at position 7.")
    assert dash_duo.find_element("#graph-search-input").get_attribute("value") == "layer1/["
    assert dash_duo.get_logs() == []


_VIEWPORT = """
const cy = document.querySelector('#graph-cytoscape')._cyreg.cy;
return [cy.zoom(), cy.pan().x, cy.pan().y];
"""
# As a drag on the background does: cytoscape pans, then says "dragpan".
_DRAG_PAN = """
const cy = document.querySelector('#graph-cytoscape')._cyreg.cy;
cy.panBy({x: 50, y: 10});
cy.emit('dragpan');
"""
# The canvas may narrow once as the page settles (a scrollbar comes), and cytoscape's
# responsive mode then scales the view to keep the drawing's margins: a few per cent.
NEAR = 0.05


def _near(duo, zoom: float, x: float, y: float) -> bool:
    at = duo.driver.execute_script(_VIEWPORT)
    return bool(at) and abs(at[0] / zoom - 1) < NEAR and abs(at[1] - x) < 40 and abs(
        at[2] - y) < 40


def _written(duo) -> tuple[str, str]:
    """The address's zoom and pan as the browser writes the view it shows."""
    zoom, x, y = duo.driver.execute_script(_VIEWPORT)
    return f"{round(zoom, 3):g}", f"{round(x)},{round(y)}"


# An op node wholly inside the canvas (its id), away from the edges.
_VISIBLE_LEAF = """
const cy = window.cy, box = cy.container().getBoundingClientRect();
const inside = cy.nodes('[kind = "op"]').filter((n) => {
    const b = n.renderedBoundingBox();
    return b.x1 > 20 && b.y1 > 20 && b.x2 < box.width - 20 && b.y2 < box.height - 20;
});
return inside.length ? inside[0].id() : null;
"""


def test_the_address_keeps_the_pan_and_zoom(dash_duo, demo_runs):
    """`zoom=Z&pan=X,Y` opens the drawing there; a pan (or zoom) is written to the address
    once it settles, without a reload, and a reload comes back to it; a new drawing fitted
    to the window takes them out; a bad value is told and the drawing fitted."""
    logdir, runs = demo_runs
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(create_app(logdir))
    open_page(dash_duo, f"/graph?run={runs[0]}&zoom=0.8&pan=120,-40")
    wait_for_graph(dash_duo)
    WebDriverWait(dash_duo.driver, 10).until(
        lambda _d: _near(dash_duo, 0.8, 120, -40), message="the view was not restored")
    dash_duo.wait_for_contains_text("#graph-summary-text", "nodes drawn")
    dash_duo.driver.execute_script("window.__kept = true;")      # gone after a reload
    dash_duo.driver.execute_script(_DRAG_PAN)
    WebDriverWait(dash_duo.driver, 10).until(
        lambda d: (_address(d).get("zoom"), _address(d).get("pan")) == _written(dash_duo)
        and _address(d).get("run") == runs[0], message="the pan was not written")
    assert dash_duo.driver.execute_script("return window.__kept === true;")
    zoom, pan = _written(dash_duo)
    dash_duo.driver.refresh()
    wait_for_graph(dash_duo)
    x, y = (float(part) for part in pan.split(","))
    WebDriverWait(dash_duo.driver, 10).until(
        lambda _d: _near(dash_duo, float(zoom), x, y), message="a reload lost the view")
    # A click that selects a leaf keeps the view (it used to fit the whole graph again).
    leaf = dash_duo.driver.execute_script(_VISIBLE_LEAF)
    assert leaf, "no leaf node drawn inside the canvas to click"
    click_node(dash_duo, leaf)
    dash_duo.wait_for_contains_text("#graph-inspector-div", leaf.rpartition("/")[2])
    assert _near(dash_duo, float(zoom), x, y), "selecting a node moved the view"
    assert (_address(dash_duo.driver).get("zoom"), _address(dash_duo.driver).get("pan")) == (
        zoom, pan)

    dash_duo.find_element("#graph-collapse-button").click()
    WebDriverWait(dash_duo.driver, 10).until(
        lambda d: "zoom" not in _address(d) and "pan" not in _address(d)
        and _address(d).get("open") == "", message="a fitted drawing kept the old view")
    assert dash_duo.get_logs() == []

    open_page(dash_duo, f"/graph?run={runs[0]}&zoom=abc&pan=120,-40")
    wait_for_graph(dash_duo)
    dash_duo.wait_for_contains_text(
        "#graph-notice-text", "Not restoring the view: the address's zoom must be a number")
    assert not _near(dash_duo, 0.8, 120, -40)
    assert dash_duo.get_logs() == []
