"""The structural diff of two graph records: added, removed and changed nodes (by field),
the unchanged count, stable order, and the painting of drawn leaves by status."""

from __future__ import annotations

import pytest

from engine.record.schema import GraphRecord, NodeRecord, TensorSpec
from viz.graph_diff import (
    ADDED,
    CHANGED,
    REMOVED,
    STATUS_COLORS,
    UNCHANGED,
    graph_diff,
    leaf_status,
    painted,
    rows,
    side_statuses,
    summary,
)

OUT = (TensorSpec("float32", (2, 2)),)


def node(name, op="Identity", inputs=(), device="", attrs=None, stack=()):
    return NodeRecord(name, op, tuple(inputs), device, attrs or {"T": "float32"}, OUT, stack)


def graph(*nodes):
    return GraphRecord(1, tuple(nodes))


BASE = graph(node("x", "Placeholder"), node("w", "VariableV2"),
             node("mm", "MatMul", ["x", "w"], attrs={"T": "float32", "transpose_a": False}),
             node("relu", "Relu", ["mm"]), node("old", "Identity", ["relu"]))


def test_identical_graphs_have_no_difference():
    diff = graph_diff(BASE, BASE)
    assert diff.same and diff.unchanged == 5
    assert (diff.added, diff.removed, diff.changed) == ((), (), ())
    assert summary(diff) == "The graphs are the same (5 nodes)."
    assert rows(diff) == []


def test_added_and_removed_nodes_in_their_graphs_order():
    other = graph(*BASE.nodes[:4], node("new_b", "Neg", ["relu"]), node("new_a", "Exp", ["relu"]))
    diff = graph_diff(BASE, other)
    assert diff.added == ("new_b", "new_a")         # B's order, not sorted
    assert diff.removed == ("old",)
    assert diff.changed == () and diff.unchanged == 4
    assert summary(diff) == "2 added, 1 removed, 0 changed, 4 unchanged."
    assert [(r["name"], r["status"]) for r in rows(diff)] == [
        ("old", REMOVED), ("new_b", ADDED), ("new_a", ADDED)]


@pytest.mark.parametrize("changed, field, detail", [
    (node("relu", "Relu6", ["mm"]), "op", "op: Relu -> Relu6"),
    (node("relu", "Relu", ["x"]), "inputs", "inputs: mm -> x"),
    (node("relu", "Relu", ["mm", "^w"]), "inputs", "inputs: mm -> mm, ^w"),
    (node("relu", "Relu", ["mm"], device="/device:GPU:0"), "device",
     "device: (none) -> /device:GPU:0"),
    (node("relu", "Relu", ["mm"], attrs={"T": "half"}), "attrs", "attrs: T"),
])
def test_a_changed_node_says_which_field(changed, field, detail):
    other = graph(*BASE.nodes[:3], changed, BASE.nodes[4])
    diff = graph_diff(BASE, other)
    assert diff.added == diff.removed == ()
    assert len(diff.changed) == 1 and diff.unchanged == 4
    change = diff.changed[0]
    assert (change.name, change.fields, change.details) == ("relu", (field,), (detail,))


def test_several_fields_and_attrs_added_or_dropped():
    mm = node("mm", "BatchMatMul", ["x", "w"], attrs={"T": "float32", "adj_x": True})
    diff = graph_diff(BASE, graph(BASE.nodes[0], BASE.nodes[1], mm, *BASE.nodes[3:]))
    change = diff.changed[0]
    assert change.fields == ("op", "attrs")
    assert change.details == ("op: MatMul -> BatchMatMul", "attrs: adj_x, transpose_a")
    assert rows(diff)[0]["detail"] == "op: MatMul -> BatchMatMul; attrs: adj_x, transpose_a"


def test_the_creation_site_is_not_a_change():
    moved = graph(*(node(n.name, n.op, n.inputs, n.device, n.attrs, ("other.py:3",))
                    for n in BASE.nodes))
    assert graph_diff(BASE, moved).same


def test_a_missing_graph_counts_as_empty():
    diff = graph_diff(None, BASE)
    assert diff.added == ("x", "w", "mm", "relu", "old") and diff.unchanged == 0
    assert graph_diff(BASE, None).removed == diff.added


def test_each_side_paints_its_own_statuses():
    other = graph(*BASE.nodes[:3], node("relu", "Relu6", ["mm"]), node("new", "Neg"))
    diff = graph_diff(BASE, other)
    assert side_statuses(diff, "a") == {"old": REMOVED, "relu": CHANGED}
    assert side_statuses(diff, "b") == {"new": ADDED, "relu": CHANGED}
    with pytest.raises(ValueError, match="side must be"):
        side_statuses(diff, "c")


def test_a_closed_scope_shares_its_members_status_or_says_changed():
    statuses = {"s/a": ADDED, "s/b": ADDED, "t/a": REMOVED}
    assert leaf_status(["s/a", "s/b"], statuses) == ADDED
    assert leaf_status(["t/a", "t/b"], statuses) == CHANGED
    assert leaf_status(["u/a"], statuses) == UNCHANGED


def test_painting_copies_leaves_and_keeps_boxes_and_edges():
    elements = [{"data": {"id": "s", "label": "s/"}, "classes": "box scope"},
                {"data": {"id": "s/a", "color": "#000", "text": "#fff"}, "classes": "leaf op"},
                {"data": {"id": "k", "color": "#000", "text": "#fff"}, "classes": "leaf op"},
                {"data": {"id": "s/a->k", "source": "s/a", "target": "k"}, "classes": "edge"}]
    shown = painted(elements, {"s/a": ("s/a",), "k": ("k",)}, {"s/a": ADDED})
    assert shown[0] is elements[0] and shown[3] is elements[3]
    assert shown[1]["data"]["color"] == STATUS_COLORS[ADDED]
    assert shown[1]["classes"] == "leaf op diff-added"
    assert shown[2]["data"]["diff"] == UNCHANGED
    assert elements[1]["data"]["color"] == "#000"     # the cached originals stay
