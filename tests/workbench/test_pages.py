"""Page callbacks called as plain functions against real run stores."""

from __future__ import annotations

from dash import dcc, no_update

from engine.record import RunWriter
from engine.record.schema import SOFT_FALLBACK
from viz.graph_figure import CUT_LEGEND
from workbench.pages import graph, placement, runs, scalars
from workbench.pages.graph_inspector import INSPECTOR_HINT


def click(name: str, kind: str) -> dict:
    return {"points": [{"curveNumber": 3, "pointNumber": 0, "customdata": [name, kind]}]}


def test_runs_table_lists_runs_and_the_unreadable_folder(recorded, text_of):
    table = runs.runs_table(None)
    rows = table.children[1].children
    assert len(rows) == 3
    by_name = {row.children[0].children: text_of(row) for row in rows}
    assert "unreadable" in by_name[recorded.unreadable]
    assert "not a database" in by_name[recorded.unreadable]
    assert "finished" in by_name[recorded.run] and " 50 " in f" {by_name[recorded.run]} "
    assert "loss" in by_name[recorded.run]


def test_runs_table_says_when_the_logdir_is_empty(empty_logdir, text_of):
    assert "No runs" in text_of(runs.runs_table(None))


def test_run_choice_prefers_the_query_then_the_newest(recorded):
    options, value, notice = graph.run_choice(recorded.runs[1])
    assert value == recorded.runs[1] and notice == ""
    assert {o["value"] for o in options} == set(recorded.runs)
    _, newest, notice = graph.run_choice("no-such-run")
    assert newest == recorded.runs[1]  # recorded last, so started last
    assert notice == (f"No readable run named 'no-such-run' in the log directory; "
                      f"showing {newest}.")


def test_expanded_scopes_follow_buttons_and_clicks(recorded):
    run = recorded.run
    default = graph.next_expanded(graph.RUN_DROPDOWN, run, None, None)
    assert "layer1" in default and "gradients/layer1" in default
    assert graph.next_expanded(graph.COLLAPSE_BUTTON, run, None, default) == []
    top = graph.next_expanded(graph.EXPAND_BUTTON, run, None, [])
    assert top == ["gradients", "layer1", "layer2", "loss", "train"]
    opened = graph.next_expanded(graph.DAG_GRAPH, run, click("layer1/weights", "scope"), top)
    assert opened == sorted(top + ["layer1/weights"])
    assert graph.next_expanded(graph.DAG_GRAPH, run, click("x", "op"), top) is no_update


def test_dag_figure_colours_devices_and_marks_cuts(recorded):
    figure, summary = graph.dag_figure(recorded.run, [], "")
    legend = [t.name for t in figure.data if t.showlegend is not False]
    assert CUT_LEGEND in legend
    assert {"CPU:0", "GPU:0 (virtual)", "GPU:1 (virtual)"} <= set(legend)
    assert summary.startswith("graph version 1: 7 of 28 nodes shown")
    empty, _ = graph.dag_figure(None, [], "")
    assert "No readable run" in empty.layout.annotations[0].text


def test_inspector_shows_op_devices_and_reason(recorded, text_of):
    panel, selected = graph.inspect(graph.DAG_GRAPH, click(recorded.node, "op"), recorded.run)
    text = text_of(panel)
    assert selected == recorded.node
    assert recorded.node_op in text and recorded.node_device in text
    assert "/device:GPU:0" in text and "explicit" in text
    assert "float32 [?, 64]" in text  # the x input's dtype and shape
    assert "train_mlp.py:18 in build_model" in text


def test_inspector_for_a_scope_and_for_a_new_run(recorded, text_of):
    panel, selected = graph.inspect(graph.DAG_GRAPH, click("loss", "scope"), recorded.run)
    assert "4 nodes" in text_of(panel) and selected == ""
    assert graph.inspect(graph.RUN_DROPDOWN, click("x", "op"), recorded.run) == (
        INSPECTOR_HINT, "")


def test_placement_filters_and_log(recorded):
    rows, log, count = placement.placement_content(recorded.run, "", [], [])
    assert len(rows) == 28 and count == "28 of 28 nodes, 1 soft fallback"
    assert log.splitlines()[0].startswith("x: (Placeholder): /job:localhost/")
    rows, log, _ = placement.placement_content(recorded.run, "", [SOFT_FALLBACK], [])
    assert [row["node"] for row in rows] == [recorded.soft_fallback_node]
    assert log == f"{recorded.soft_fallback_node}: (VariableV2): " \
                  "/job:localhost/replica:0/task:0/device:CPU:0"
    rows, _, count = placement.placement_content(recorded.run, "matmul", [], [])
    assert {row["op"] for row in rows} == {"MatMul"} and count == "5 of 28 nodes, 0 soft fallbacks"
    gpu1 = "/job:localhost/replica:0/task:0/device:GPU:1"
    rows, _, _ = placement.placement_content(recorded.run, "", [], [gpu1])
    assert {row["assigned"] for row in rows} == {gpu1} and len(rows) == 4


def test_placement_device_options_are_short_labels(recorded):
    labels = [o["label"] for o in placement.device_options(recorded.run)]
    assert labels == ["CPU:0", "GPU:0", "GPU:1"]
    assert placement.device_options(None) == []


def test_soft_fallback_rows_are_highlighted():
    assert SOFT_FALLBACK in placement.SOFT_FALLBACK_STYLE["if"]["filter_query"]


def test_scalars_one_bold_trace_per_run(recorded):
    options, chosen, _ = scalars.run_choice(None)
    assert set(chosen) == set(recorded.runs)
    tag_options, tags = scalars.tag_choice(chosen, None)
    assert tag_options == ["loss"] and tags == ["loss"]
    graphs = scalars.curves(chosen, tags, 0.6)
    assert len(graphs) == 1 and isinstance(graphs[0], dcc.Graph)
    bold = [t for t in graphs[0].figure.data if t.showlegend is not False]
    assert sorted(t.name for t in bold) == sorted(recorded.runs)
    assert all(len(t.x) == 50 for t in bold)


def test_scalars_query_run_and_empty_choice(recorded, text_of):
    _, chosen, _ = scalars.run_choice(recorded.run)
    assert chosen == [recorded.run]
    assert "Choose at least one run" in text_of(scalars.curves([], ["loss"], 0.6))


def test_a_run_with_only_scalars_has_no_graph_and_no_placements(empty_logdir):
    with RunWriter(empty_logdir, "scalars-only") as writer:
        writer.scalar("loss", 1.0, 0)
    figure, summary = graph.dag_figure("scalars-only", [], "")
    assert "recorded no graph" in figure.layout.annotations[0].text and summary == ""
    assert graph.next_expanded(graph.RUN_DROPDOWN, "scalars-only", None, None) == []
    rows, log, count = placement.placement_content("scalars-only", "", [], [])
    assert rows == [] and count == "0 of 0 nodes, 0 soft fallbacks"
    assert log == "(no placements match)"
