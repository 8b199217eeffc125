"""viz.edge_routes: edges bend around the boxes they do not belong to (out of their source's
boxes downwards, through the gaps of the rows between, into their target's boxes from
above), counted on hand-made layouts, the demo's graph and the Inception-sized sample."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.runtime.recording import graph_record
from viz.edge_routes import crossings, geometry, route, segments
from viz.graph_elements import drawn_geometry, graph_elements
from viz.hierarchy import build_hierarchy, default_expansion, hierarchy_view
from viz.layout import nested_layout
from workbench.demo import build_mlp

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sample_graphs"))
import inception_like  # noqa: E402  (a script folder, not a package)

SIZE = (60.0, 26.0)


def laid_out(parents, edges):
    leaves = [item for item in parents if item not in set(parents.values())]
    sizes = {leaf: SIZE for leaf in leaves}
    return geometry(parents, nested_layout(parents, sizes, edges), sizes)


def drawn(elements):
    """(geometry, edges, routes) of graph_elements' output, as cytoscape will draw it."""
    geo, _ = drawn_geometry(elements)
    edges = [(e["data"]["source"], e["data"]["target"]) for e in elements
             if "source" in e["data"]]
    return geo, edges, {edge: route(geo, *edge) for edge in edges}


def test_a_long_edge_goes_around_the_box_between_its_ends():
    parents = {"top": "", "mid": "", "mid/x": "mid", "mid/y": "mid", "bottom": ""}
    edges = [("top", "mid/x"), ("mid/x", "mid/y"), ("mid/y", "bottom"), ("top", "bottom")]
    geo = laid_out(parents, edges)
    assert crossings(geo, [("top", "bottom")]) == 1          # straight down through "mid"
    bends = route(geo, "top", "bottom")
    assert bends and crossings(geo, [("top", "bottom")], {("top", "bottom"): bends}) == 0
    left, top, right, bottom = geo.rects["mid"]
    assert not any(left < x < right and top < y < bottom for x, y in bends)


def test_an_edge_leaves_its_box_through_the_bottom_and_enters_the_next_from_above():
    parents = {"a": "", "a/x": "a", "a/y": "a", "a/z": "a", "b": "", "b/x": "b", "b/y": "b"}
    edges = [("a/x", "a/y"), ("a/y", "a/z"), ("a/x", "b/y"), ("b/x", "b/y"), ("a/z", "b/x")]
    geo = laid_out(parents, edges)
    routes = {edge: route(geo, *edge) for edge in edges}
    assert crossings(geo, edges, routes, boxes_only=False) == 0   # not even through a/y
    assert crossings(geo, [("a/x", "b/y")], boxes_only=False) > 0
    assert not routes[("a/x", "a/y")]                             # neighbours: straight


def test_an_edge_back_up_goes_round_the_side():
    parents = {"a": "", "b": "", "c": ""}
    edges = [("a", "b"), ("b", "c"), ("c", "a")]                  # a cycle: c -> a goes up
    geo = laid_out(parents, edges)
    bends = route(geo, "c", "a")
    assert len(bends) >= 3 and crossings(geo, edges, {("c", "a"): bends},
                                         boxes_only=False) == 0


def test_segments_are_what_cytoscape_draws():
    # cytoscape puts a point at (1 - w) * source + w * target + d * (-dy, dx) / length
    distances, weights = segments((0.0, 0.0), (0.0, 100.0), [(10.0, 50.0), (0.0, 120.0)])
    assert weights == [0.5, 1.2] and distances == [-10.0, 0.0]


def test_the_demo_graph_routes_around_every_box():
    graph = build_mlp(0.1).graph
    record = graph_record(graph.as_graph_def())
    tree = build_hierarchy(record)
    for expanded in (default_expansion(tree), [g for g in tree.groups if g]):
        elements, _ = graph_elements(hierarchy_view(tree, expanded), record, [])
        geo, edges, routes = drawn(elements)
        assert crossings(geo, edges, routes) == 0


@pytest.fixture(scope="module")
def inception():
    record = graph_record(inception_like.inception_v3().as_graph_def())
    return record, build_hierarchy(record)


@pytest.mark.parametrize("opened", [(), ("InceptionV3",),
                                    ("InceptionV3", "InceptionV3/Mixed_5b", "gradients")])
def test_inception_edges_cross_no_box_they_do_not_belong_to(inception, opened):
    record, tree = inception
    view = hierarchy_view(tree, default_expansion(tree) | set(opened))
    elements, _ = graph_elements(view, record, [])
    geo, edges, routes = drawn(elements)
    assert crossings(geo, edges, routes, boxes_only=False) == 0
    if "InceptionV3/Mixed_5b" in opened:
        assert crossings(geo, edges) > 0                     # drawn straight, they would
    routed = {e["data"]["id"] for e in elements if "routed" in e.get("classes", "")}
    assert routed == {f"{a}->{b}" for (a, b), bends in routes.items() if bends}


def test_opening_inception_bundles_what_reaches_many_of_its_scopes(inception):
    # gradients, Momentum, regularization, the moving averages and the summaries each reach
    # about twenty of InceptionV3's scopes: one edge each to the box, not twenty routed ones
    record, tree = inception
    view = hierarchy_view(tree, default_expansion(tree) | {"InceptionV3"})
    elements, _ = graph_elements(view, record, [])
    edges = {e["data"]["id"]: e["data"] for e in elements if "source" in e["data"]}
    assert len(edges) < len(view.edges) / 2
    assert {"InceptionV3->gradients", "InceptionV3->summaries"} <= edges.keys()
    assert sum(edge["count"] for edge in edges.values()) == sum(
        len(edge.edges) for edge in view.edges)


def test_the_svg_export_draws_every_box_leaf_and_edge_along_its_route(mlp):
    from xml.etree import ElementTree

    from viz.graph_svg import graph_svg
    graph, placements = mlp
    view = hierarchy_view(build_hierarchy(graph), ["layer1", "layer2"])
    elements, _ = graph_elements(view, graph, placements)
    tree = ElementTree.fromstring(graph_svg(elements))      # well-formed XML
    tag = "{http://www.w3.org/2000/svg}"
    edges = [e for e in elements if "source" in e["data"]]
    leaves = [e for e in elements if "position" in e]
    boxes = len(elements) - len(edges) - len(leaves)
    assert len(tree.findall(f"{tag}polyline")) == len(edges)
    assert len(tree.findall(f"{tag}ellipse")) == sum(e["data"]["kind"] == "op" for e in leaves)
    assert len(tree.findall(f"{tag}rect")) == 1 + boxes + sum(
        e["data"]["kind"] != "op" for e in leaves)                 # 1: the background
    routed = [e for e in edges if "routed" in e["classes"]]
    lines = {len(line.get("points").split()) for line in tree.findall(f"{tag}polyline")}
    assert routed and max(lines) > 2                               # bends are drawn too
    assert "layer1/" in {text.findtext(f"{tag}tspan") for text in tree.iter(f"{tag}text")}
