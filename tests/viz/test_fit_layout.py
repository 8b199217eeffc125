"""viz.fit_layout: rows of a layout too tall for the window wrap into side-by-side columns
(read top to bottom, then left to right), edges climb between the columns, and on the demo
graph, its partition view and the Inception-sized sample the drawing then fits the
1280x800 page at a larger zoom with no box, label or edge through a box overlapping."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import viz.layout
from engine.record.reader import open_run
from engine.runtime.recording import graph_record
from viz.edge_routes import crossings, geometry, route
from viz.first_view import READABLE_ZOOM, element_fit_zoom
from viz.fit_layout import (
    CANVAS,
    COLUMN_GAP,
    column_spans,
    columns_size,
    fit_zoom,
    wrap_rows,
)
from viz.graph_elements import NO_STEP, drawn_geometry, graph_elements, step_facts
from viz.graph_labels import drawn, element_overlaps
from viz.hierarchy import build_hierarchy, default_expansion, hierarchy_view
from viz.layout import ROW_GAP, nested_layout
from workbench.demo import train_mlp

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sample_graphs"))
import inception_like  # noqa: E402  (a script folder, not a package)

SIZE = (60.0, 26.0)


def test_a_tall_stack_of_rows_wraps_into_balanced_columns():
    widths, heights = [100.0] * 30, [40.0] * 30
    starts = wrap_rows(widths, heights, ROW_GAP)
    assert len(starts) > 2 and starts[0] == 0 and starts == sorted(starts)
    bounds = [*starts, 30]
    counts = [b - a for a, b in zip(bounds, bounds[1:])]
    assert max(counts) - min(counts) <= 2                  # even heights: even columns
    one = fit_zoom(*columns_size(widths, heights, [0], ROW_GAP))
    wrapped = fit_zoom(*columns_size(widths, heights, starts, ROW_GAP))
    assert one < 0.3 and wrapped > 2 * one
    width, height = columns_size(widths, heights, starts, ROW_GAP)
    assert width == 100 * len(starts) + COLUMN_GAP * (len(starts) - 1)


def test_a_layout_that_fits_readably_keeps_its_one_column():
    assert wrap_rows([100.0] * 3, [40.0] * 3, ROW_GAP) == [0]      # zoom above 1 already
    assert wrap_rows([2000.0] * 12, [40.0] * 12, ROW_GAP) == [0]   # too wide to gain
    with pytest.raises(ValueError, match="one width per height, got 2 widths and 3"):
        wrap_rows([1.0, 2.0], [1.0, 2.0, 3.0], ROW_GAP)


def test_columns_are_found_again_from_the_x_extents():
    # holes up to a node gap (14 px) stay inside one column, COLUMN_GAP parts two
    spans = [(0, 60), (78, 138), (30, 100), (138 + COLUMN_GAP, 250), (260, 300)]
    assert column_spans(spans) == [(0, 138), (138 + COLUMN_GAP, 300)]


def chain(length: int) -> tuple[dict, list]:
    parents = {f"n{i}": "" for i in range(length)}
    return parents, [(f"n{i}", f"n{i + 1}") for i in range(length - 1)]


def test_a_long_chain_reads_down_each_column_then_the_next():
    parents, edges = chain(40)
    sizes = {item: SIZE for item in parents}
    at = nested_layout(parents, sizes, edges)
    columns = sorted({x for x, _ in at.values()})
    assert len(columns) > 2
    order = sorted(parents, key=lambda item: (at[item][0], at[item][1]))
    assert order == [f"n{i}" for i in range(40)]            # data flow order kept
    rects = [(x - 30, y - 13, x + 30, y + 13) for x, y in at.values()]
    width = max(r[2] for r in rects) - min(r[0] for r in rects)
    height = max(r[3] for r in rects) - min(r[1] for r in rects)
    assert fit_zoom(width, height) > 3 * fit_zoom(SIZE[0], 40 * SIZE[1] + 39 * ROW_GAP)


def test_edges_between_columns_climb_in_the_gap_and_cross_nothing():
    parents, edges = chain(40)
    parents.update({"box": "", "box/a": "box", "box/b": "box"})
    edges += [("n39", "box/a"), ("box/a", "box/b"), ("n0", "n30"), ("n35", "n2")]
    sizes = {item: SIZE for item in parents if item != "box"}
    geo = geometry(parents, nested_layout(parents, sizes, edges), sizes)
    assert len(geo.columns[""]) > 2
    routes = {edge: route(geo, *edge) for edge in edges}
    assert crossings(geo, edges, routes, boxes_only=False) == 0
    assert crossings(geo, edges, boxes_only=False) > 0             # drawn straight, they do
    strips = geo.columns[""]
    gaps = [(a.right, b.left) for a, b in zip(strips, strips[1:])]
    jump = next(edge for edge in edges
                if geo.rows[""][geo.row_of[edge[0]]].column
                != geo.rows[""][geo.row_of[edge[1]]].column)
    assert any(left < x < right for x, _ in routes[jump] for left, right in gaps)


# -- the graphs a user opens -------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path, _ = train_mlp(str(tmp_path_factory.mktemp("fit")), "demo", 0.1, steps=4)
    reader = open_run(path)
    record = reader.graph()
    step = reader.last_traced_step()
    return (record, reader.placements(record.version), reader.cut_edges(None),
            step_facts(step, reader.step_stats(step), reader.transfers(step)))


def inception():
    return graph_record(inception_like.inception_v3().as_graph_def()), [], (), NO_STEP


def drawing(found, expanded=None, partition=False):
    record, placements, cuts, facts = found
    tree = build_hierarchy(record)
    view = hierarchy_view(tree, default_expansion(tree) if expanded is None else expanded)
    return graph_elements(view, record, placements, facts=facts, partition=partition,
                          cuts=cuts)[0]


def unwrapped(monkeypatch, *args, **kwargs):
    with monkeypatch.context() as patched:
        patched.setattr(viz.layout, "wrap_rows", lambda *_: [0])
        return drawing(*args, **kwargs)


def check_drawing(elements) -> None:
    """No label overlap, no edge through a box or leaf it does not belong to, every node
    inside its box's body and no two siblings' footprints meeting."""
    assert element_overlaps(elements) == []
    geo, _ = drawn_geometry(elements)
    pairs = [(e["data"]["source"], e["data"]["target"]) for e in elements
             if "source" in e["data"]]
    assert crossings(geo, pairs, {pair: route(geo, *pair) for pair in pairs},
                     boxes_only=False) == 0
    found = drawn(elements)
    siblings: dict[str, list[str]] = {}
    for item, parent in found.parents.items():
        siblings.setdefault(parent, []).append(item)
        if parent:
            inner, outer = found.footprints[item], found.bodies[parent]
            assert (outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2]
                    and inner[3] <= outer[3]), (item, parent)
    for items in siblings.values():
        rects = sorted(found.footprints[item] for item in items)
        for index, a in enumerate(rects):
            for b in rects[index + 1:]:
                assert min(a[2], b[2]) - max(a[0], b[0]) <= 0.5 or min(
                    a[3], b[3]) - max(a[1], b[1]) <= 0.5, (a, b)


def test_the_demo_fits_about_2_6_times_larger_with_columns(demo, monkeypatch):
    elements = drawing(demo)
    check_drawing(elements)
    wrapped, before = element_fit_zoom(elements), element_fit_zoom(unwrapped(monkeypatch, demo))
    assert before == pytest.approx(0.22, abs=0.02)          # one long column
    assert wrapped == pytest.approx(0.60, abs=0.01) and wrapped >= READABLE_ZOOM
    assert CANVAS == (920.0, 500.0)


def test_the_demo_partition_view_fits_larger_with_columns(demo, monkeypatch):
    elements = drawing(demo, partition=True)
    check_drawing(elements)
    assert sum(1 for e in elements if e["data"].get("label") and "source" in e["data"]) >= 20
    before = element_fit_zoom(unwrapped(monkeypatch, demo, partition=True))
    assert before == pytest.approx(0.18, abs=0.02)
    assert element_fit_zoom(elements) == pytest.approx(0.47, abs=0.02)


@pytest.mark.parametrize("opened, before, after", [((), 0.73, 1.52),
                                                   (("InceptionV3",), 0.24, 0.88)])
def test_inception_fits_larger_with_columns(monkeypatch, opened, before, after):
    found = inception()
    expanded = default_expansion(build_hierarchy(found[0])) | set(opened)
    elements = drawing(found, expanded)
    check_drawing(elements)
    assert element_fit_zoom(unwrapped(monkeypatch, found, expanded)) == pytest.approx(
        before, abs=0.03)
    assert element_fit_zoom(elements) == pytest.approx(after, abs=0.05)
