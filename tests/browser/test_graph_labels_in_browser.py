"""The Graph page's labels as Chromium draws them (cytoscape's own label boxes, read back at
1280x800): on the demo's graph, its partition view (cut edges labelled; also at the partition
view's own first view), the Inception-sized sample with a mixed block opened and after each
of three "Expand a level", no two labels meet and no label lies on a node it does not belong
to; and the width the layout allows each label (viz.graph_labels.text_width) is never less
than the drawn one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from browser_helpers import open_page, wait_for_graph
from selenium.webdriver.support.wait import WebDriverWait

from engine.record import RunWriter
from viz.graph_labels import BOX_FONT, EDGE_FONT, LEAF_FONT, text_width
from workbench.app import create_app
from workbench.demo import train_mlp

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sample_graphs"))
import inception_like  # noqa: E402  (a script folder, not a package)

# Each element's label box and (for a node) its body, in model coordinates; only what has a
# label (edges without one are left out).
_LABELS = """
const cy = document.querySelector('#graph-cytoscape')._cyreg.cy;
const box = b => [b.x1, b.y1, b.x2, b.y2];
const label = {includeNodes: false, includeEdges: false, includeLabels: true,
               includeOverlays: false};
const body = {includeNodes: true, includeEdges: false, includeLabels: false,
              includeOverlays: false};
return cy.elements().filter(e => e.data('label')).map(e => [
    e.id(), e.isNode() ? (e.isParent() ? 'title' : 'leaf') : 'edge', e.data('label'),
    box(e.boundingBox(label)), e.isNode() ? box(e.boundingBox(body)) : null,
    e.isNode() ? e.ancestors().map(a => a.id()) : [e.data('source'), e.data('target')],
    e.isNode() ? null : e.source().ancestors().union(e.target().ancestors()).map(a => a.id())]);
"""
_STILL = "return document.querySelector('#graph-cytoscape')._cyreg.cy.nodes().length;"
SLACK = 0.5
OPENED = "InceptionV3/Mixed_5b/Branch_1/Conv2d_0b_5x5/Conv2D"


@pytest.fixture(scope="module")
def graph_runs(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("graph-labels")
    train_mlp(str(logdir), "demo", 0.1, steps=4)      # placed, partitioned and traced
    with RunWriter(str(logdir), "inception") as writer:
        writer.add_graph(inception_like.inception_v3())
    return logdir


def read_labels(duo, expected_nodes: int = 1) -> list:
    wait_for_graph(duo, expected_nodes)
    return WebDriverWait(duo.driver, 10, poll_frequency=0.3).until(
        lambda driver: driver.execute_script(_LABELS) or False,
        message="no label was drawn")


def meets(a, b) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > SLACK and min(a[3], b[3]) - max(
        a[1], b[1]) > SLACK


def found_overlaps(drawn: list) -> list[tuple[str, str]]:
    """(label owner, what it meets) for each label meeting another label, a leaf it is not
    on, or a box body that does not hold it."""
    out = []
    bodies = {ident: body for ident, kind, _, _, body, _, _ in drawn if kind != "edge"}
    for index, (ident, kind, _, rect, _, related, edge_boxes) in enumerate(drawn):
        for other in drawn[index + 1:]:
            if meets(rect, other[3]):
                out.append((ident, other[0]))
        allowed = set(edge_boxes) if kind == "edge" else {ident, *related}
        out += [(ident, node) for node, body in bodies.items()
                if node not in allowed and meets(rect, body)]
    return out


def estimate_ratios(drawn: list) -> list[tuple[float, str]]:
    """(allowed width / drawn width, label) of each node label and edge label."""
    font = {"leaf": (LEAF_FONT, False), "title": (BOX_FONT, True), "edge": (EDGE_FONT, False)}
    out = []
    for _, kind, text, rect, *_ in drawn:
        px, bold = font[kind]
        width = rect[2] - rect[0]
        allowed = max(text_width(line, px, bold) for line in text.split("\n"))
        if width > 0:
            out.append((allowed / width, text))
    return out


def check_page(duo, path: str, partition: bool = False) -> list:
    open_page(duo, path)
    drawn = read_labels(duo)
    if partition:
        duo.find_element("#graph-partition-checklist input").click()
        drawn = WebDriverWait(duo.driver, 10, poll_frequency=0.3).until(
            lambda driver: [found for found in driver.execute_script(_LABELS)
                            if found[1] == "edge"] and driver.execute_script(_LABELS),
            message="the partition view drew no cut edge labels")
        path += " (partition view)"
    return checked(path, drawn)


def checked(name: str, drawn: list) -> list:
    ratios = estimate_ratios(drawn)
    low, high = min(ratios), max(ratios)
    longest = max(ratios, key=lambda item: len(item[1]))
    print(f"{name}: {len(drawn)} labels; allowed/drawn width {low[0]:.3f} ({low[1]!r}) .. "
          f"{high[0]:.3f} ({high[1]!r}); longest {longest[1]!r} {longest[0]:.3f}")
    assert low[0] >= 1.0, low
    assert found_overlaps(drawn) == []
    return drawn


def expand_a_level(duo) -> None:
    before = duo.find_element("#graph-summary-text").text
    duo.find_element("#graph-expand-button").click()
    WebDriverWait(duo.driver, 20, poll_frequency=0.3).until(
        lambda driver: driver.find_element("css selector", "#graph-summary-text").text
        not in ("", before), message="Expand a level never redrew")


def test_no_label_meets_another_or_a_node_it_is_not_on(dash_duo, graph_runs):
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(create_app(graph_runs))
    check_page(dash_duo, "/graph?run=demo")
    drawn = check_page(dash_duo, "/graph?run=demo", partition=True)
    assert sum(kind == "edge" for _, kind, *_ in drawn) >= 10
    # the partition view's own first view, as its address opens it
    open_page(dash_duo, "/graph?run=demo&partition=1")
    read_labels(dash_duo)
    drawn = WebDriverWait(dash_duo.driver, 10, poll_frequency=0.3).until(
        lambda driver: [found for found in driver.execute_script(_LABELS)
                        if found[1] == "edge"] and driver.execute_script(_LABELS),
        message="the partition view drew no cut edge labels")
    checked("/graph?run=demo&partition=1", drawn)
    drawn = check_page(dash_duo, f"/graph?run=inception&node={OPENED}")
    assert OPENED in {ident for ident, *_ in drawn}
    open_page(dash_duo, "/graph?run=inception")
    read_labels(dash_duo)
    for level in range(1, 4):          # 112 scopes open at the third, 300 nodes drawn
        expand_a_level(dash_duo)
        drawn = checked(f"inception, expand a level x{level}", read_labels(dash_duo))
    assert sum(kind == "title" for _, kind, *_ in drawn) > 100
    assert dash_duo.get_logs() == []
