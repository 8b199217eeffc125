"""Page callbacks called as plain functions against real run stores."""

from __future__ import annotations

from dash import dcc, no_update

from engine.record import RunWriter
from engine.record.schema import SOFT_FALLBACK
from viz.hierarchy import default_expansion
from workbench import data
from workbench.pages import graph, placement, runs, scalars
from workbench.pages.graph_inspector import INSPECTOR_HINT


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


def state(trigger, run, tap=None, pattern="", current=None, query=None):
    return graph.next_state(trigger, run, tap, pattern, current, "", query)


def test_expanded_groups_follow_buttons_and_taps(recorded):
    run = recorded.run
    default, selected, _ = state(graph.RUN_DROPDOWN, run)
    # Every scope of the default expansion open fits the window at a readable zoom, so the
    # first view is all of it (viz.first_view).
    assert default == sorted(default_expansion(data.hierarchy(run)))
    assert "layer1" in default and "gradients/layer1" in default and selected == ""
    assert state(graph.COLLAPSE_BUTTON, run, current=default)[0] == []
    top, _, _ = state(graph.EXPAND_BUTTON, run, current=[])
    assert top == ["gradients", "layer1", "layer2", "loss", "train"]
    opened, selected, _ = state(graph.CYTO, run, {"id": "layer1/weights", "kind": "scope"},
                                current=top)
    assert opened == sorted(top + ["layer1/weights"]) and selected == "layer1/weights"
    closed, _, _ = state(graph.CYTO, run, {"id": "layer1", "kind": "scope"}, current=opened)
    assert "layer1" not in closed and "layer1/weights" in closed
    assert state(graph.CYTO, run, {"id": "x", "kind": "op"}, current=top) == (
        no_update, "x", "")
    partitioned = {"id": "/job:localhost/replica:0/task:0/device:CPU:0|x", "kind": "op"}
    assert state(graph.CYTO, run, partitioned, current=top)[1] == "x"


def test_a_click_that_only_selects_keeps_the_view_and_one_that_opens_fits_it(recorded):
    # The layout (the answer's last part) runs and fits the whole graph to the window: a
    # click on a leaf must not, so the user's pan and zoom stay; opening a scope must.
    run = recorded.run
    top = ["gradients", "layer1", "layer2", "loss", "train"]

    def clicked(tap):
        return graph._moved(graph.CYTO, [graph.CYTO], run, tap, None, None, [], "", top, "",
                            None, None)
    selected = clicked({"id": "x", "kind": "op"})
    assert selected[:2] == (no_update, "x")
    assert selected[-1] is no_update and isinstance(selected[3], list) and selected[3]
    opened = clicked({"id": "layer1/weights", "kind": "scope"})
    assert "layer1/weights" in opened[0] and opened[-1]["name"] == "preset"


def test_search_reveals_and_selects_the_first_match(recorded):
    run = recorded.run
    expanded, selected, told = state(graph.SEARCH_BUTTON, run, pattern=r"_grad/MatMul_1$",
                                     current=[])
    assert selected == "gradients/layer2/MatMul_grad/MatMul_1"     # the first in graph order
    assert {"gradients", "gradients/layer2", "gradients/layer2/MatMul_grad"} <= set(expanded)
    assert told == "2 matches; showing gradients/layer2/MatMul_grad/MatMul_1."
    assert state(graph.SEARCH_BUTTON, run, pattern="(", current=[])[2].startswith(
        "Not a regular expression")
    # a pattern that could backtrack for minutes is not run, and the page says why
    assert state(graph.SEARCH_BUTTON, run, pattern="(a+)+$", current=["layer1"]) == (
        ["layer1"], no_update, "Not searched: the search repeats a repeat, as (a+)+ does: it "
        "could take minutes on long names; drop the inner + or *.")
    assert state(graph.SEARCH_BUTTON, run, pattern="nothing-here", current=[])[2] == (
        "No node matches 'nothing-here'.")


def test_the_address_node_is_revealed_and_selected(recorded):
    run = recorded.run
    query = {"run": run, "step": "49", "node": "layer1/weights"}
    expanded, selected, _ = state(graph.RUN_DROPDOWN, run, query=query)
    assert selected == "layer1/weights/(weights)" and "layer1/weights" in expanded
    _, selected, told = state(graph.RUN_DROPDOWN, run, query={"run": run, "node": "ghost"})
    assert selected == "" and told == "No node named 'ghost' in this graph."
    options, step = graph.step_choice(run, query)
    assert step == 49 and options[0] == {"label": "step 49 (traced)", "value": 49}
    assert graph.step_choice(run, {"run": run, "step": "12345"})[1] == 49


def test_draw_colours_devices_and_marks_cuts(recorded, text_of):
    elements, legend, shown, style, summary, layout = graph.draw(recorded.run, [], "device",
                                                                 None, [])
    assert shown == "" and style == {"display": "none"}
    # The positions travel in the elements; the layout only fits (it places no node).
    assert layout["name"] == "preset" and layout["fit"] and layout["positions"] == {}
    assert all("position" in e for e in elements if "leaf" in e["classes"])
    assert [text_of(item).strip() for item in legend] == [
        "CPU:0", "GPU:0 (virtual)", "GPU:1 (virtual)", "Send/Recv cut"]
    assert summary.startswith("graph version 1: 7 nodes drawn for 28")
    cuts = [e for e in elements if "cut" in e.get("classes", "")]
    assert cuts and all("source" in e["data"] for e in cuts)
    assert "No readable run" in graph.draw(None, [], "device", None, [])[2]


def test_draw_in_every_colour_mode_and_the_partition_view(recorded, text_of):
    run = recorded.run
    opened = state(graph.RUN_DROPDOWN, run)[0]
    _, legend, _, _, _, _ = graph.draw(run, opened, "op", None, [])
    assert "MatMul" in text_of(legend)
    _, legend, _, _, _, _ = graph.draw(run, opened, "time", 49, [])
    assert " us" in text_of(legend) and "did not run in step 49" in text_of(legend)
    _, legend, _, _, _, _ = graph.draw(run, opened, "bytes", 49, [])
    assert " B" in text_of(legend) or "KB" in text_of(legend)
    _, legend, _, _, _, _ = graph.draw(run, opened, "requested", None, [])
    assert "/device:GPU:0" in text_of(legend)
    elements, _, _, _, _, _ = graph.draw(run, opened, "device", 49, [graph.PARTITION])
    boxes = [e["data"]["label"] for e in elements if "device" in e.get("classes", "")]
    assert boxes == ["CPU:0", "GPU:0", "GPU:1"]
    labels = [e["data"]["label"] for e in elements if "labelled" in e.get("classes", "")]
    assert labels and all(" B" in label or "KB" in label for label in labels)


def test_selection_outlines_the_node_in_both_views(recorded):
    opened = state(graph.RUN_DROPDOWN, recorded.run)[0]
    plain = graph.draw(recorded.run, opened, "device", None, [])[0]
    chosen = graph.draw(recorded.run, opened, "device", None, [], "layer1/MatMul")[0]
    marked = [e["data"]["id"] for e in chosen if "selected" in e["classes"].split()]
    assert marked == ["layer1/MatMul"]
    assert not any("selected" in e["classes"].split() for e in plain)   # the cache is not
    split = graph.draw(recorded.run, opened, "device", None, [graph.PARTITION], "x")[0]
    (found,) = [e["data"]["id"] for e in split if "selected" in e["classes"].split()]
    assert found.endswith("|x")                        # "DEVICE|x" in the partition view


def test_selection_style_outlines_the_node_in_both_views():
    style = graph.selection_style("layer1/MatMul")
    assert style[-1]["selector"] == 'node[id = "layer1/MatMul"], node[id $= "|layer1/MatMul"]'
    assert len(graph.selection_style("")) == len(style) - 1


def test_the_first_view_comes_with_the_page(recorded):
    page = graph.layout(run=recorded.run, node="layer1/MatMul")
    first = graph.initial_view({"run": recorded.run, "step": None, "node": "layer1/MatMul"})
    assert first["run"] == recorded.run and first["selected"] == "layer1/MatMul"
    assert first["step"] == 49 and "layer1" in first["expanded"]
    assert first["elements"] and set(first["layout"]["positions"]) <= {
        e["data"]["id"] for e in first["elements"]}
    assert "layer1/MatMul" in str(page) and first["summary"].startswith("graph version 1")
    assert graph.initial_view({"run": None, "step": None, "node": None})["run"] is not None


def test_warming_builds_the_first_view_of_the_newest_runs(recorded):
    data.clear_cache()
    data.warm_graphs(limit=1)
    grouped, _ = data.cache_stats()
    data.clear_cache()
    graph.warm(limit=1)
    assert data.cache_stats()[0] > grouped         # the elements and what they need too
    data.set_logdir(recorded.logdir / "missing")   # nothing to warm is not an error
    graph.warm()


def test_export_writes_the_svg_and_asks_cytoscape_for_the_png(recorded):
    opened = state(graph.RUN_DROPDOWN, recorded.run)[0]
    request, svg, told = graph.export(graph.SVG_BUTTON, recorded.run, opened, "device", None,
                                      [])
    assert request is no_update and svg["filename"] == f"graph-{recorded.run}.svg"
    assert svg["content"].startswith("<svg") and "layer1/" in svg["content"]
    assert svg["content"].count("<polyline") == svg["content"].count("marker-end")
    assert told == f"Saved the view as graph-{recorded.run}.svg."
    png, download, _ = graph.export(graph.PNG_BUTTON, "../x")
    assert png["type"] == "png" and png["filename"] == "graph-graph"   # never a path
    assert download is no_update and png["options"]["full"]
    assert graph.export(None, recorded.run) == (no_update, no_update, no_update)


def test_inspector_shows_op_devices_and_reason(recorded, text_of):
    text = text_of(graph.inspect(recorded.run, recorded.node, 49))
    assert recorded.node_op in text and recorded.node_device in text
    assert "/device:GPU:0" in text and "explicit" in text
    assert "float32 [?, 64]" in text  # the x input's dtype and shape
    assert "train_mlp.py:18 in build_model" in text
    assert "step 49: ran once" in text


def test_inspector_for_a_scope_and_for_no_selection(recorded, text_of):
    assert "4 nodes" in text_of(graph.inspect(recorded.run, "loss", None))
    assert graph.inspect(recorded.run, "", None) == INSPECTOR_HINT


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
    _, _, shown, _, summary, _ = graph.draw("scalars-only", [], "device", None, [])
    assert "recorded no graph" in shown and summary == ""
    assert graph.next_state(graph.RUN_DROPDOWN, "scalars-only", None, "", None, "", None) == (
        [], "", "")
    rows, log, count = placement.placement_content("scalars-only", "", [], [])
    assert rows == [] and count == "0 of 0 nodes, 0 soft fallbacks"
    assert log == "(no placements match)"


def test_the_partition_view_opens_its_own_readable_first_view(recorded):
    """The partition view draws each scope once per device, so with `partition=1` and no
    `open` the page closes scopes until that drawing reads (viz.first_view over it)."""
    from viz.first_view import READABLE_ZOOM, element_fit_zoom
    run = recorded.run
    plain, split = data.graph_first_view(run), data.graph_first_view(run, partition=True)
    assert element_fit_zoom(data.default_elements(run, split, True)[0]) >= READABLE_ZOOM
    assert element_fit_zoom(data.default_elements(run, plain, True)[0]) < READABLE_ZOOM
    assert split < plain                     # further along the same closings
    first = graph.initial_view({"run": run, "partition": "1"})
    assert first["expanded"] == sorted(split) and first["partition"] == [graph.PARTITION]
    assert "open=" not in graph.view_address(run, None, "", "device", [graph.PARTITION],
                                             sorted(split))
    assert "open=" in graph.view_address(run, None, "", "device", [graph.PARTITION],
                                         sorted(plain))
    assert graph.initial_view({"run": run})["expanded"] == sorted(plain)
