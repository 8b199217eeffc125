"""Scope collapsing: member counts, device spread, edge re-targeting, default expansion."""

from __future__ import annotations

from viz_records import CPU0, GPU0, GPU1, make_node, placed

from engine.record.schema import GraphRecord
from viz.scopes import (
    OP,
    SCOPE,
    all_scopes,
    default_expansion,
    expand_level,
    frontier,
    loop_frames,
    scope_chain,
    scope_view,
    visible_count,
)


def by_name(view):
    return {node.name: node for node in view.nodes}


def edge_map(view):
    return {(edge.src, edge.dst): edge for edge in view.edges}


def test_scopes_are_proper_prefixes(mlp):
    graph, _ = mlp
    assert all_scopes(graph) == {"layer1", "layer1/weights", "layer2", "loss"}


def test_a_node_named_like_a_scope_belongs_to_it():
    scopes = frozenset({"layer1", "layer1/weights"})
    assert scope_chain("layer1/weights", scopes) == ("layer1", "layer1/weights")
    assert scope_chain("layer1/weights/read", scopes) == ("layer1", "layer1/weights")
    assert scope_chain("x", scopes) == ()


def test_everything_collapsed_gives_one_node_per_top_level_scope(mlp):
    graph, placements = mlp
    view = scope_view(graph, placements, ())
    nodes = by_name(view)
    assert set(nodes) == {"x", "layer1", "layer2", "loss"}
    assert nodes["x"].kind == OP and nodes["x"].op == "Placeholder"
    assert nodes["layer1"].kind == SCOPE and nodes["layer1"].members == 4
    assert nodes["layer1"].devices == ((CPU0, 4),)
    assert nodes["loss"].devices == ((GPU1, 2),)
    edges = edge_map(view)
    assert set(edges) == {("x", "layer1"), ("layer1", "layer2"), ("layer2", "loss")}
    # layer1/Relu -> layer2/MatMul (data) and -> layer2/Relu (control) fold into one edge.
    assert edges[("layer1", "layer2")].count == 2
    assert edges[("layer1", "layer2")].cut == 2
    assert edges[("layer1", "layer2")].data_cut == 1
    assert not edges[("layer1", "layer2")].control
    assert edges[("x", "layer1")].cut == 0


def test_expanding_a_scope_retargets_its_edges(mlp):
    graph, placements = mlp
    view = scope_view(graph, placements, {"layer1"})
    nodes = by_name(view)
    assert {"layer1/weights", "layer1/MatMul", "layer1/Relu"} <= set(nodes)
    assert nodes["layer1/weights"].kind == SCOPE and nodes["layer1/weights"].members == 2
    edges = edge_map(view)
    assert ("layer1/weights", "layer1/MatMul") in edges
    assert ("x", "layer1/MatMul") in edges
    assert edges[("layer1/Relu", "layer2")].count == 2
    assert len(view.edges) == len(edges)


def test_fully_expanded_view_is_the_graph(mlp):
    graph, placements = mlp
    view = scope_view(graph, placements, all_scopes(graph))
    assert [node.name for node in view.nodes] == [node.name for node in graph.nodes]
    assert all(node.kind == OP for node in view.nodes)
    control = edge_map(view)[("layer1/Relu", "layer2/Relu")]
    assert control.control and control.cut == 1 and control.data_cut == 0


def test_mixed_scope_reports_majority_device_first():
    graph = GraphRecord(1, (make_node("s/a", "Const"), make_node("s/b", "Const"),
                            make_node("s/c", "Add", ("s/a", "s/b"))))
    placements = [placed(graph.nodes[0], GPU0), placed(graph.nodes[1], CPU0),
                  placed(graph.nodes[2], GPU0)]
    node = scope_view(graph, placements, ()).nodes[0]
    assert node.device == GPU0
    assert node.devices == ((GPU0, 2), (CPU0, 1))


def test_expand_level_opens_the_visible_collapsed_scopes(mlp):
    graph, _ = mlp
    assert frontier(graph, ()) == {"layer1", "layer2", "loss"}
    first = expand_level(graph, ())
    assert first == {"layer1", "layer2", "loss"}
    assert expand_level(graph, first) == first | {"layer1/weights"}


def test_default_expansion_stops_before_the_limit():
    nodes = [make_node(f"block{b}/unit{u}/op{o}", "Add") for b in range(4)
             for u in range(10) for o in range(10)]
    graph = GraphRecord(1, tuple(nodes))
    assert visible_count(graph, ()) == 4
    chosen = default_expansion(graph, limit=300)
    assert chosen == {f"block{b}" for b in range(4)}
    assert visible_count(graph, chosen) == 40
    assert default_expansion(graph, limit=400) == all_scopes(graph)
    assert default_expansion(graph, limit=3) == frozenset()


def test_while_loops_start_collapsed_and_open_on_request():
    """A while loop's frame (the scope holding its LoopCond) stays collapsed by default, as
    TensorBoard shows it; the scopes around it and beside it open as usual."""
    nodes = [make_node("x", "Placeholder"),
             make_node("rnn/while/Enter", "Enter", ("x",)),
             make_node("rnn/while/Merge", "Merge", ("rnn/while/Enter",)),
             make_node("rnn/while/LoopCond", "LoopCond", ("rnn/while/Merge",)),
             make_node("rnn/while/cell/MatMul", "MatMul", ("rnn/while/Merge",)),
             make_node("rnn/while/Exit", "Exit", ("rnn/while/Merge",)),
             make_node("rnn/transpose", "Transpose", ("rnn/while/Exit",)),
             make_node("loss/Mean", "Mean", ("rnn/transpose",))]
    graph = GraphRecord(1, tuple(nodes))
    assert loop_frames(graph) == {"rnn/while"}
    chosen = default_expansion(graph, limit=300)
    assert chosen == {"rnn", "loss"}
    assert by_name(scope_view(graph, [], chosen))["rnn/while"].kind == SCOPE
    assert "rnn/while" in expand_level(graph, chosen)
