"""viz.hierarchy: TensorBoard's grouping (name scopes, series of numbered siblings with one
structure), what is drawn for a set of expanded groups, default expansion, reveal, search."""

from __future__ import annotations

import re

import pytest
from viz_records import make_node

from engine.record.schema import GraphRecord
from viz.hierarchy import (
    OP,
    SCOPE,
    SERIES,
    build_hierarchy,
    default_expansion,
    expand_level,
    expand_level_within,
    fold_edges,
    format_numbers,
    group_members,
    hierarchy_view,
    reveal,
    search,
    series_label,
)


def blocks(count: int, width: int = 2) -> GraphRecord:
    """x -> block_0 -> … -> block_{count-1} -> out; every block the same structure."""
    nodes = [make_node("x", "Placeholder")]
    previous = "x"
    for i in range(count):
        outs = []
        for j in range(width):
            nodes.append(make_node(f"block_{i}/branch_{j}/w", "Const"))
            nodes.append(make_node(f"block_{i}/branch_{j}/MatMul", "MatMul",
                                   (previous, f"block_{i}/branch_{j}/w")))
            outs.append(f"block_{i}/branch_{j}/MatMul")
        nodes.append(make_node(f"block_{i}/join", "AddN", tuple(outs)))
        previous = f"block_{i}/join"
    nodes.append(make_node("out", "Identity", (previous,)))
    return GraphRecord(1, tuple(nodes))


def test_format_numbers_and_series_labels():
    assert format_numbers([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert series_label("block", list(range(1250)), False) == "block_[0-1249]"
    assert series_label("add", [1, 2, 3], True) == "add, add_[1-3]"


def test_numbered_siblings_of_one_structure_are_one_series():
    tree = build_hierarchy(blocks(1250, width=1))
    (series,) = [g for g in tree.groups.values() if g.kind == SERIES]
    assert series.label == "block_[0-1249]" and series.id == "block_[0-1249]"
    assert len(series.children) == 1250 and series.members == 1250 * 3
    assert tree.groups[""].children == ("x", "block_[0-1249]", "out")
    # inside each block the branches are a series too only when numbered and alike
    assert tree.groups["block_7"].parent == "block_[0-1249]"
    assert tree.chains["block_7/branch_0/MatMul"] == ("block_[0-1249]", "block_7",
                                                       "block_7/branch_0")


def test_siblings_with_different_structures_stay_apart():
    nodes = [make_node("m/Branch_0/Conv", "Conv2D"), make_node("m/Branch_1/Conv", "Conv2D"),
             make_node("m/Branch_1/Relu", "Relu"), make_node("m/Branch_2/Pool", "AvgPool")]
    tree = build_hierarchy(GraphRecord(1, tuple(nodes)))
    assert tree.groups["m"].children == ("m/Branch_0", "m/Branch_1", "m/Branch_2")
    assert all(g.kind != SERIES for g in tree.groups.values())


def test_op_series_need_three_of_one_op_type_and_take_the_unnumbered_base():
    nodes = [make_node(name, "Add") for name in ("add", "add_1", "add_2", "add_3")]
    nodes += [make_node("mul", "Mul"), make_node("mul_1", "Mul")]      # two: not a series
    nodes += [make_node("sub", "Sub"), make_node("sub_1", "Mul"), make_node("sub_2", "Sub")]
    tree = build_hierarchy(GraphRecord(1, tuple(nodes)))
    series = {g.label: g for g in tree.groups.values() if g.kind == SERIES}
    assert list(series) == ["add, add_[1-3]"]
    assert series["add, add_[1-3]"].children == ("add", "add_1", "add_2", "add_3")
    assert {"mul", "mul_1", "sub", "sub_1", "sub_2"} <= set(tree.groups[""].children)


def test_four_towers_are_a_series_and_an_op_named_as_its_scope_is_drawn_inside_it():
    nodes = []
    for i in range(4):
        nodes += [make_node(f"tower_{i}/w", "VariableV2"),
                  make_node(f"tower_{i}/w/read", "Identity", (f"tower_{i}/w",))]
    tree = build_hierarchy(GraphRecord(1, tuple(nodes)))
    assert tree.groups[""].children == ("tower_[0-3]",)
    assert tree.op_ids["tower_2/w"] == "tower_2/w/(w)"
    assert tree.groups["tower_2/w/(w)"].kind == OP and tree.groups["tower_2/w"].kind == SCOPE


def test_view_draws_boxes_around_expanded_groups_and_folds_edges():
    graph = blocks(3)
    tree = build_hierarchy(graph)
    closed = hierarchy_view(tree, [])
    assert [node.id for node in closed.nodes] == ["x", "block_[0-2]", "out"]
    assert [(e.src, e.dst, len(e.edges)) for e in closed.edges] == [
        ("x", "block_[0-2]", 2), ("block_[0-2]", "out", 1)]
    opened = hierarchy_view(tree, ["block_[0-2]", "block_1"])
    by_id = {node.id: node for node in opened.nodes}
    assert by_id["block_[0-2]"].expanded and by_id["block_1"].expanded
    assert by_id["block_1"].parent == "block_[0-2]" and not by_id["block_0"].expanded
    # the two alike branches of a block are a series of their own, closed
    branches = by_id["block_1/branch_[0-1]"]
    assert branches.parent == "block_1" and branches.kind == SERIES and branches.size == 2
    assert by_id["block_0"].members == tuple(
        n.name for n in graph.nodes if n.name.startswith("block_0/"))
    assert ("block_0", "block_1/branch_[0-1]", 2) in [
        (e.src, e.dst, len(e.edges)) for e in opened.edges]
    assert all(e.src != e.dst for e in opened.edges)
    # a box is listed before what it holds, as cytoscape needs parents first
    order = [node.id for node in opened.nodes]
    assert order.index("block_1") < order.index("block_1/branch_[0-1]")


def test_a_view_folds_only_the_edges_of_open_groups_and_maps_leaves_by_their_members():
    """The shortcuts of a view (each group's members kept, only the edges within open
    groups folded) draw what folding every edge of the graph draws."""
    nodes = list(blocks(3).nodes) + [
        make_node("w", "VariableV2"), make_node("w/read", "Identity", ("w",)),
        make_node("block_1/branch_0/use", "MatMul", ("w/read", "block_1/join")),
        make_node("loop", "Identity", ("loop",))]          # an edge from a node to itself
    graph = GraphRecord(1, tuple(nodes))
    tree = build_hierarchy(graph)
    for gid in tree.groups:
        wanted = group_members(tree, gid) if gid else [n.name for n in graph.nodes]
        assert list(tree.members_of(gid)) == wanted
    views = [[], ["w"], ["block_[0-2]"], ["block_[0-2]", "block_1"],
             ["block_[0-2]", "block_1", "block_1/branch_[0-1]", "block_1/branch_0", "w"]]
    for expanded in views:
        view = hierarchy_view(tree, expanded)
        assert view.edges == fold_edges(tree.edges, view.rep)
        assert all(view.rep[name] == leaf.id for leaf in view.leaves() for name in leaf.members)
        assert set(view.rep) == set(tree.op_ids)


def test_expanded_ids_inside_a_closed_group_or_unknown_are_ignored():
    tree = build_hierarchy(blocks(3))
    view = hierarchy_view(tree, ["block_1", "nope", "x"])
    assert view.expanded == frozenset()
    assert [node.id for node in view.nodes] == ["x", "block_[0-2]", "out"]


def test_default_expansion_keeps_series_and_loops_closed():
    big = build_hierarchy(blocks(1250, width=1))
    assert default_expansion(big) == frozenset()
    assert len(hierarchy_view(big, default_expansion(big)).nodes) == 3
    nodes = [make_node("x", "Placeholder"), make_node("while/LoopCond", "LoopCond"),
             make_node("while/add", "Add"), make_node("model/dense/MatMul", "MatMul")]
    tree = build_hierarchy(GraphRecord(1, tuple(nodes)))
    assert default_expansion(tree) == {"model", "model/dense"}
    assert "while" in expand_level(tree, default_expansion(tree))


def test_reveal_opens_every_group_above_a_node_and_search_is_a_regex():
    tree = build_hierarchy(blocks(20))
    assert reveal(tree, {"x"}, "block_13/branch_1/MatMul") == {
        "x", "block_[0-19]", "block_13", "block_13/branch_[0-1]", "block_13/branch_1"}
    assert reveal(tree, (), "block_13") == {"block_[0-19]"}
    assert search(tree, r"block_1\d/join$") == [f"block_{i}/join" for i in range(10, 20)]
    assert search(tree, "MatMul", limit=3) == [
        "block_0/branch_0/MatMul", "block_0/branch_1/MatMul", "block_1/branch_0/MatMul"]
    with pytest.raises(re.error):
        search(tree, "(")


def test_expanding_a_level_stops_before_too_many_nodes_show():
    tree = build_hierarchy(blocks(3))
    top = frozenset({"block_[0-2]"})
    deeper, opened, closed = expand_level_within(tree, top, limit=100)
    assert (opened, closed) == (3, 3) and deeper == top | {"block_0", "block_1", "block_2"}
    deeper, opened, closed = expand_level_within(tree, top, limit=6)
    assert (opened, closed) == (1, 3) and deeper == top | {"block_0"}
    deeper, opened, _ = expand_level_within(tree, top, limit=1)   # the first always opens
    assert opened == 1 and len(hierarchy_view(tree, deeper).leaves()) == 6   # x, 2, 1, 1, out
