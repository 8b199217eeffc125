"""The Compare page's callbacks as functions against real run stores: two MLP runs at two
learning rates (one graph) and a third whose graph differs (a node added, one removed, two
changed); the runs chosen from the address or by default, the shared curves overlaid, the
diff listed, both graphs painted, one selection revealed and inspected in both; hostile
inputs answered with a message."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest
from dash import no_update

from engine.record import RunWriter
from engine.record.schema import NodeRecord, PlacementRecord, TensorSpec
from viz.graph_diff import ADDED, CHANGED, REMOVED, STATUS_COLORS, UNCHANGED
from workbench import data
from workbench.pages import compare
from workbench.pages.graph_inspector import INSPECTOR_HINT

VARIANT = "mlp-variant"
ADDED_NODE = "summaries/loss"
REMOVED_NODE = "train/step_count/AssignAdd"


def write_variant(logdir) -> str:
    """The sample MLP with Relu6 for Relu, a loss summary added, and the step counter's
    update removed (so "train" loses a control input)."""
    mlp = sys.modules["recorded_mlp"]         # loaded by conftest's `recorded` fixture
    graph, placements = mlp.mlp_graph()
    nodes = []
    for node in graph.nodes:
        if node.name == REMOVED_NODE:
            continue
        if node.name == "layer1/Relu":
            node = dataclasses.replace(node, op="Relu6")
        if node.name == "train":
            node = dataclasses.replace(node, inputs=node.inputs[:2])
        nodes.append(node)
    nodes.append(NodeRecord(ADDED_NODE, "ScalarSummary", ("loss/Mean",), "", {},
                            (TensorSpec("string", ()),), ()))
    graph = dataclasses.replace(graph, nodes=tuple(nodes))
    placements = [p for p in placements if p.node != REMOVED_NODE] + [PlacementRecord(
        ADDED_NODE, "ScalarSummary", "", mlp.CPU0, "default", "", "", graph_version=1)]
    with RunWriter(logdir, VARIANT) as run:
        run.devices(mlp.DEVICES)
        run.graph(graph)
        run.placements(placements)
        for step in range(4):
            run.scalar("loss", 2.0 - 0.1 * step, step)
            run.scalar("accuracy", 0.5 + 0.1 * step, step)
        name = run.path
    return name.rsplit("/", 1)[-1] if isinstance(name, str) else name.name


@pytest.fixture
def runs(recorded):
    variant = write_variant(recorded.logdir)
    data.clear_cache()
    return recorded.runs[0], recorded.runs[1], variant


def view_of(a, b, selected=""):
    view, style = compare.side_state("a", a, b, selected, None)
    view_b, style_b = compare.side_state("b", a, b, selected, None)
    return (view, style), (view_b, style_b)


def test_the_address_picks_both_runs(runs):
    lr05, lr01, _ = runs
    options, a, options_b, b, notice = compare.run_choice({"a": lr01, "b": lr05})
    assert (a, b, notice) == (lr01, lr05, "")
    assert {o["value"] for o in options} >= {lr01, lr05} and options == options_b


def test_by_default_the_two_newest_healthy_runs(runs):
    _, a, _, b, notice = compare.run_choice({"a": None, "b": None})
    healthy = data.healthy_run_names()
    assert (a, b) == (healthy[0], healthy[1]) and a != b and notice == ""


def test_an_unknown_run_in_the_address_is_told_and_replaced(runs):
    lr05, _, _ = runs
    _, a, _, b, notice = compare.run_choice({"a": "nope", "b": lr05})
    assert b == lr05 and a not in (None, lr05)
    assert "No readable run named 'nope'" in notice


def test_the_same_run_twice_is_told(runs):
    lr05, _, _ = runs
    assert "Both sides show" in compare.run_choice({"a": lr05, "b": lr05})[4]


def test_shared_tags_are_drawn_overlaid(runs):
    lr05, lr01, variant = runs
    figures = compare.curves(lr05, lr01)
    assert [f.id["tag"] for f in figures] == ["loss"]
    traces = figures[0].figure.data
    assert {t.legendgroup or t.name for t in traces} >= {lr05, lr01}
    # the variant logged accuracy too; only the tag both have is drawn
    assert [f.id["tag"] for f in compare.curves(lr05, variant)] == ["loss"]


def test_same_graphs_have_no_difference(runs, text_of):
    lr05, lr01, _ = runs
    summary, table = compare.diff_view(lr05, lr01)
    assert summary == "The graphs are the same (28 nodes)." and table == []


def test_the_diff_lists_added_removed_and_changed_nodes(runs, text_of):
    lr05, _, variant = runs
    summary, table = compare.diff_view(lr05, variant)
    assert summary == "1 added, 1 removed, 2 changed, 25 unchanged."
    shown = text_of(table)
    assert f"{REMOVED_NODE} removed only in A" in shown
    assert f"{ADDED_NODE} added only in B" in shown
    assert "layer1/Relu changed op: Relu -> Relu6" in shown
    assert "train changed inputs:" in shown


def test_both_graphs_are_painted_by_diff_status(runs):
    lr05, _, variant = runs
    (view_a, _), (view_b, _) = view_of(lr05, variant)
    elements_a, _, problem, _, summary_a = compare.draw_side("a", view_a)
    elements_b, _, _, _, _ = compare.draw_side("b", view_b)
    assert problem == "" and summary_a.startswith(f"{lr05}: graph version 1")
    diff_a = {e["data"]["id"]: e["data"].get("diff") for e in elements_a
              if "leaf" in e.get("classes", "")}
    diff_b = {e["data"]["id"]: e["data"].get("diff") for e in elements_b
              if "leaf" in e.get("classes", "")}
    assert ADDED in diff_b.values() and ADDED not in diff_a.values()
    assert REMOVED in diff_a.values() and REMOVED not in diff_b.values()
    assert CHANGED in diff_a.values() and UNCHANGED in diff_a.values()
    painted = [e for e in elements_a if e["data"].get("diff") == REMOVED]
    assert painted[0]["data"]["color"] == STATUS_COLORS[REMOVED]
    # the Graph page's own cached drawing keeps its device colours
    from workbench.pages import graph
    own = graph.draw(lr05, view_a["expanded"], "device", None, [])[0]
    assert all("diff" not in e["data"] for e in own)


def test_a_tap_in_one_graph_selects_and_reveals_it_in_both(runs, text_of):
    lr05, _, variant = runs
    tree = data.hierarchy(variant)
    tap = {"id": tree.op_ids["layer1/Relu"], "kind": "op"}
    selected = compare.select(compare.ids("b")["cytoscape"], None, tap, lr05, variant)
    assert selected == "layer1/Relu"
    (view_a, style_a), (view_b, _) = view_of(lr05, variant, selected)
    assert set(data.hierarchy(lr05).chains["layer1/Relu"]) <= set(view_a["expanded"])
    drawn_a = {e["data"]["id"] for e in compare.draw_side("a", view_a)[0]}
    assert data.hierarchy(lr05).op_ids["layer1/Relu"] in drawn_a
    outline = json.dumps(style_a[-1])
    assert "layer1/Relu" in outline and "#111111" in outline
    assert "Relu6" in text_of(compare.inspect_side("b", lr05, variant, selected))
    assert "Relu" in text_of(compare.inspect_side("a", lr05, variant, selected))


def test_a_node_only_in_one_run_is_said_missing_in_the_other(runs, text_of):
    lr05, _, variant = runs
    shown = text_of(compare.inspect_side("a", lr05, variant, ADDED_NODE))
    assert shown == f"'{ADDED_NODE}' is not in {lr05}'s graph."
    assert ADDED_NODE in text_of(compare.inspect_side("b", lr05, variant, ADDED_NODE))


def test_a_tapped_scope_opens_in_both(runs):
    lr05, lr01, _ = runs
    selected = compare.select(compare.ids("a")["cytoscape"], {"id": "layer1", "kind": "scope"},
                              None, lr05, lr01)
    assert selected == "layer1"
    (view_a, _), (view_b, _) = view_of(lr05, lr01, selected)
    assert "layer1" in view_a["expanded"] and "layer1" in view_b["expanded"]


def test_a_new_run_clears_the_selection(runs):
    lr05, lr01, _ = runs
    assert compare.select(compare.A_DROPDOWN, None, None, lr05, lr01) == ""


def test_an_unchanged_view_is_not_redrawn(runs):
    lr05, lr01, _ = runs
    (view_a, _), _ = view_of(lr05, lr01, "")
    again, _ = compare.side_state("a", lr05, lr01, "", view_a)
    assert again is no_update


HOSTILE = [None, 7, True, [], {"a": 1}, "x" * 5000, "../../etc", "\x00", {"id": None}]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_inputs_answer_with_a_message(runs, value, text_of):
    lr05, lr01, _ = runs
    options, a, _, b, _ = compare.run_choice(value if not isinstance(value, dict) else {
        "a": value, "b": value})
    assert isinstance(options, list)
    for call in (lambda: compare.curves(value, lr01), lambda: compare.diff_view(lr05, value),
                 lambda: compare.inspect_side("a", value, lr01, "x"),
                 lambda: compare.inspect_side("a", lr05, lr01, value)):
        assert isinstance(text_of(call()), str)
    assert compare.select(compare.ids("a")["cytoscape"], value, value, lr05, lr01) in (
        no_update, "")
    view, style = compare.side_state("a", lr05, lr01, value, value)
    assert isinstance(style, list)
    drawn = compare.draw_side("a", value)
    assert drawn[0] == [] and isinstance(drawn[2], str) and drawn[2]
    drawn = compare.draw_side("b", {"a": lr05, "b": lr01, "expanded": value})
    assert isinstance(drawn[0], list)


def test_hostile_messages_name_the_problem(runs, text_of):
    lr05, _, _ = runs
    assert compare.run_choice("a=b")[4] == "The page address must be a mapping, got 'a=b'."
    assert text_of(compare.curves("nope", lr05)) == "No run named 'nope' in the log directory."
    assert text_of(compare.curves(7, lr05)) == "A run name must be text, got int."
    assert compare.draw_side("a", 7)[2] == "The view must be a mapping, got 7."
    assert compare.inspect_side("a", None, None, "") == INSPECTOR_HINT


def test_both_sides_open_the_graph_pages_first_view(runs, monkeypatch):
    """The first expansion is the Graph page's (data.graph_first_view: the default one with
    scopes closed until it reads), so one run looks the same on every page."""
    lr05, lr01, _ = runs
    (view_a, _), (view_b, _) = view_of(lr05, lr01)
    assert view_a["expanded"] == sorted(data.graph_first_view(lr05))
    assert view_b["expanded"] == sorted(data.graph_first_view(lr01))
    monkeypatch.setattr(data, "graph_first_view", lambda run: frozenset({"layer2"}))
    (view_a, _), (view_b, _) = view_of(lr05, lr01)
    assert view_a["expanded"] == view_b["expanded"] == ["layer2"]
