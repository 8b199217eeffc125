"""viz.graph_labels: label widths from glyph metrics, long labels cut in the middle, boxes as
wide as their titles, cut-edge labels moved to free places; and, as geometry over the graphs
a user opens (the demo MLP and its partition view with the recorded cut edges, the
Inception-sized sample and its towers, the digits MLP and CNN quantized), at the first view,
with each first-view group opened and after each "Expand a level": no label meets another
label, a leaf it is not on or a box that does not hold it, and no edge runs through a box or
a title band it does not belong to."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.compression import quantize
from engine.graph_io import load_graph_def
from engine.record.reader import open_run
from engine.runtime.recording import graph_record
from viz.edge_routes import crossings, geometry, route
from viz.first_view import element_fit_zoom, first_view
from viz.graph_elements import NO_STEP, drawn_geometry, graph_elements, step_facts
from viz.graph_labels import (
    LABEL_MARGIN,
    LABEL_MAX,
    Label,
    clipped_label,
    drawn,
    drawn_edge_labels,
    element_overlaps,
    overlaps,
    place_edge_labels,
    text_width,
    title_width,
)
from viz.hierarchy import build_hierarchy, default_expansion, expand_level_within, hierarchy_view
from viz.layout import BOX_PAD, nested_layout
from workbench.demo import train_mlp

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
sys.path.insert(0, str(SAMPLES))
import inception_like  # noqa: E402  (a script folder, not a package)

EXPAND_LIMIT = 300             # as the Graph page's "Expand a level"


def test_widths_follow_the_glyphs_not_the_character_count():
    assert text_width("MMMM", 11) > 2.5 * text_width("iiii", 11) - 10
    assert text_width("Conv2D", 12, bold=True) > text_width("Conv2D", 12)
    assert text_width("ab", 22) - 5 == pytest.approx(2 * (text_width("ab", 11) - 5))
    assert text_width("", 11) == 5                       # cytoscape's box around no text


def test_a_long_label_keeps_both_ends():
    name = "gradients/logits/MatMul_grad/tuple/control_dependency_1"
    cut = clipped_label(name)
    assert len(cut) == LABEL_MAX and "…" in cut
    assert cut.startswith("gradients/logits/Ma…") and cut.endswith("control_dependency_1")
    assert clipped_label("short") == "short"


def test_a_box_is_as_wide_as_its_title_with_its_member_centred():
    parents = {"box": "", "box/x": "box", "next": ""}
    sizes = {"box/x": (30.0, 20.0), "next": (30.0, 20.0)}
    at = nested_layout(parents, sizes, [], box_widths={"box": 200.0})
    # the two top-level items sit side by side: "next" clears the whole 200 px box
    assert at["next"][0] - at["box/x"][0] >= 100 + 15 - 0.5
    geo = geometry(parents, at, sizes, {"box": "x" * 40})
    left, _, right, _ = geo.rects["box"]
    assert right - left == pytest.approx(title_width("x" * 40))
    assert (left + right) / 2 == pytest.approx(at["box/x"][0])
    plain = geometry(parents, at, sizes)
    assert plain.rects["box"][2] - plain.rects["box"][0] == 30 + 2 * BOX_PAD


def elements_with_titles(title: str) -> list[dict]:
    return [{"data": {"id": "a", "label": title}, "classes": "box scope"},
            {"data": {"id": "a/x", "parent": "a", "label": "x", "width": 30, "height": 26},
             "position": {"x": 0.0, "y": 0.0}, "classes": "leaf op"},
            {"data": {"id": "y", "label": "y", "width": 30, "height": 26},
             "position": {"x": 60.0, "y": -32.0}, "classes": "leaf op"}]


def test_a_title_wider_than_its_box_is_found_on_its_neighbour():
    assert element_overlaps(elements_with_titles("a/")) == []
    found = element_overlaps(elements_with_titles("a_very_long_scope_name/"))
    assert {(o.label.owner, o.other, o.what) for o in found} >= {("a", "y", "leaf")}


def test_an_edge_label_moves_off_the_leaf_at_its_middle():
    elements = [
        {"data": {"id": "s", "label": "s", "width": 30, "height": 26},
         "position": {"x": 0.0, "y": 0.0}, "classes": "leaf op"},
        {"data": {"id": "t", "label": "t", "width": 30, "height": 26},
         "position": {"x": 0.0, "y": 200.0}, "classes": "leaf op"},
        {"data": {"id": "m", "label": "in the way", "width": 90, "height": 26},
         "position": {"x": 0.0, "y": 100.0}, "classes": "leaf op"}]
    found = drawn(elements)
    text = "s:0 · 16 KB · 20 us"
    offsets = place_edge_labels(found, [("s->t", "s", "t", text, [])])
    assert offsets["s->t"] != (0.0, 0.0)
    edge = {"data": {"id": "s->t", "source": "s", "target": "t", "label": text,
                     "lx": offsets["s->t"][0], "ly": offsets["s->t"][1]}}
    assert element_overlaps([*elements, edge]) == []
    still = {**edge, "data": {**edge["data"], "lx": 0.0, "ly": 0.0}}
    found = element_overlaps([*elements, still])       # m's label, and m itself
    assert {(o.label.owner, o.other, o.what) for o in found} == {
        ("m", "s->t", "label"), ("s->t", "m", "leaf")}
    # it keeps LABEL_MARGIN clear of m, not only off it
    (label,) = drawn_edge_labels([*elements, edge])
    m = drawn(elements).leaves["m"]
    clear = max(m[0] - label.rect[2], label.rect[0] - m[2], m[1] - label.rect[3],
                label.rect[1] - m[3])
    assert clear >= LABEL_MARGIN


def test_the_svg_export_draws_each_edge_label_where_the_page_places_it():
    from xml.etree import ElementTree

    from viz.graph_svg import graph_svg
    elements = [
        {"data": {"id": "s", "label": "s", "width": 30, "height": 26},
         "position": {"x": 0.0, "y": 0.0}, "classes": "leaf op"},
        {"data": {"id": "t", "label": "t", "width": 30, "height": 26},
         "position": {"x": 0.0, "y": 200.0}, "classes": "leaf op"},
        {"data": {"id": "s->t", "source": "s", "target": "t", "label": "s:0 · 16 KB",
                  "lx": 40.0, "ly": 5.0}, "classes": "edge cut labelled"}]
    tag = "{http://www.w3.org/2000/svg}"
    tree = ElementTree.fromstring(graph_svg(elements))
    texts = {text.findtext(f"{tag}tspan"): text for text in tree.iter(f"{tag}text")}
    assert "s:0 · 16 KB" in texts
    (label,) = drawn_edge_labels(elements)
    spot = texts["s:0 · 16 KB"].find(f"{tag}tspan")
    assert (float(spot.get("x")), float(spot.get("y"))) == pytest.approx(
        ((label.rect[0] + label.rect[2]) / 2, (label.rect[1] + label.rect[3]) / 2), abs=0.1)
    assert (label.rect[0] + label.rect[2]) / 2 == pytest.approx(40.0)   # middle + its lx


def test_overlapping_labels_are_found_once_per_pair():
    found = drawn([])
    labels = [Label("a", "edge", (0, 0, 10, 10)), Label("b", "edge", (5, 5, 15, 15)),
              Label("c", "edge", (10, 0, 20, 4))]                # touches a: fine
    assert [(o.label.owner, o.other) for o in overlaps(found, labels)] == [("a", "b")]


# -- the graphs a user opens -------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path, _ = train_mlp(str(tmp_path_factory.mktemp("labels")), "demo", 0.1, steps=4)
    reader = open_run(path)
    record = reader.graph()
    step = reader.last_traced_step()
    return (record, reader.placements(record.version), reader.cut_edges(None),
            step_facts(step, reader.step_stats(step), reader.transfers(step)))


def sample(name: str):
    return graph_record(inception_like.BUILDERS[name]().as_graph_def()), [], (), NO_STEP


def quantized(name: str):
    graph_def = load_graph_def(SAMPLES / f"{name}_frozen.json")
    return graph_record(quantize(graph_def, "eightbit").graph_def), [], (), NO_STEP


def views(tree, each_group: bool = True, zoom_of=None):
    """(what was opened, expanded groups): the page's first view (viz.first_view, measured
    by `zoom_of`) where it is not the default expansion, the default expansion, each of its
    closed groups opened alone, then "Expand a level" three times."""
    first = default_expansion(tree)
    if zoom_of is not None and (page := first_view(tree, zoom_of)) != first:
        yield "page's first view", page
    yield "first view", first
    if each_group:
        for node in hierarchy_view(tree, first).nodes:
            if not node.expanded and node.kind != "op":
                yield node.id, first | {node.id}
    current = first
    for level in range(1, 4):
        current, _, _ = expand_level_within(tree, current, EXPAND_LIMIT)
        yield f"expand a level x{level}", current


def check_views(record, placements, cuts, facts, partition=False, each_group=True) -> int:
    tree = build_hierarchy(record)
    labelled = 0

    def zoom_of(expanded):
        return element_fit_zoom(graph_elements(hierarchy_view(tree, expanded), record,
                                               placements)[0])
    for opened, expanded in views(tree, each_group, zoom_of):
        elements, _ = graph_elements(hierarchy_view(tree, expanded), record, placements,
                                     facts=facts, partition=partition, cuts=cuts)
        found = element_overlaps(elements)
        assert found == [], (opened, found[:3])
        assert through_boxes(elements) == 0, opened
        labelled += sum(1 for e in elements if "source" in e["data"] and "label" in e["data"])
    return labelled


def through_boxes(elements) -> int:
    """Edges whose drawn path crosses a box (its title band included) or a leaf that holds
    neither end."""
    geo, _ = drawn_geometry(elements)
    pairs = [(e["data"]["source"], e["data"]["target"]) for e in elements
             if "source" in e["data"]]
    return crossings(geo, pairs, {pair: route(geo, *pair) for pair in pairs},
                     boxes_only=False)


def test_the_demo_graph_has_no_overlap_at_any_view(demo):
    check_views(*demo)


def test_the_demo_partition_view_places_every_cut_label_clear(demo):
    assert check_views(*demo, partition=True) > 100         # 20-24 labels a view


@pytest.mark.parametrize("name", ["inception_v3", "towers"])
def test_the_sample_graphs_have_no_overlap_at_any_view(name):
    check_views(*sample(name), each_group=name == "towers")


def test_inception_opened_scope_by_scope_has_no_overlap():
    record, *rest = sample("inception_v3")
    tree = build_hierarchy(record)
    first = default_expansion(tree) | {"InceptionV3"}
    for block in ("InceptionV3/Mixed_5b", "InceptionV3/Mixed_6a", "InceptionV3/AuxLogits"):
        elements, _ = graph_elements(hierarchy_view(tree, first | {block}), record, [])
        assert element_overlaps(elements) == [], block
        assert through_boxes(elements) == 0, block


@pytest.mark.parametrize("name", ["digits_mlp", "digits_cnn"])
def test_the_quantized_digits_graphs_have_no_overlap_at_any_view(name):
    check_views(*quantized(name))
