"""The Quantization page's callbacks as plain functions against a real run store: the sample
digits MLP quantized to eightbit and compared (recorded_quantization): run and comparison
choice, the cost table, both graphs painted by SQNR with the flagged node marked, one
selection for both graphs, the selected node's histograms and metrics, and hostile input."""

from __future__ import annotations

import math
from urllib.parse import parse_qs, urlparse

import pytest
from dash import no_update
from recorded_quantization import COMPARISON, THRESHOLD_DB, record_quantized_runs
from test_robust_callbacks import call_with_every_hostile_value

from engine.record import RunWriter
from viz.first_view import element_fit_zoom, first_view
from viz.graph_elements import graph_elements
from viz.hierarchy import hierarchy_view
from viz.quantization import ORIGINAL, QUANTIZED, sqnr_bin, sqnr_bins
from workbench import data
from workbench.pages import quantization as page

ORIGINAL_CY = page.ids(ORIGINAL)["cytoscape"]
QUANTIZED_CY = page.ids(QUANTIZED)["cytoscape"]


@pytest.fixture(scope="module")
def recorded_logdir(tmp_path_factory):
    return record_quantized_runs(tmp_path_factory.mktemp("quantization"))


@pytest.fixture
def runs(recorded_logdir):
    data.set_logdir(recorded_logdir.logdir)
    yield recorded_logdir
    data.set_logdir("runs")


def comparison(runs):
    return data.quantization_comparison(runs.run, COMPARISON)


def leaves(elements):
    return {e["data"]["id"]: e for e in elements if "leaf" in e.get("classes", "")}


def test_the_run_with_a_comparison_is_chosen(runs):
    options, chosen, notice = page.run_choice({"run": None, "node": None})
    assert {o["value"] for o in options} == {runs.run, runs.plain}
    assert chosen == runs.run and notice == ""
    assert page.run_choice({"run": runs.plain})[1:] == (runs.plain, "")
    _, chosen, notice = page.run_choice({"run": "nope"})
    assert chosen == runs.run and "No readable run named 'nope'" in notice
    assert page.comparison_choice(runs.run) == ([{"label": COMPARISON, "value": COMPARISON}],
                                               COMPARISON)
    assert page.comparison_choice(runs.plain) == ([], None)


def test_the_cost_table(runs, text_of):
    table = page.costs(runs.run)
    text = text_of(table)
    assert "Accuracy" in text and "digits_mlp" in text and "eightbit, calibrated on 100" in text
    assert "98.9%" in text and "0.583" in text and "42.5 KB" in text and "1.07×" in text
    assert len(table.children[1].children) == 3
    assert "recorded no cost table" in text_of(page.costs(runs.plain))


def test_the_summary_and_the_legend(runs, text_of):
    line, legend = page.overview(runs.run, COMPARISON)
    assert f"first below {THRESHOLD_DB:g} dB: {runs.flagged}" in line and "nodes compared" in line
    assert len(legend) == len(sqnr_bins(THRESHOLD_DB)) + 1
    assert f"< {THRESHOLD_DB:g} dB" in text_of(legend) and "exact" in text_of(legend)
    problem, legend = page.overview(runs.plain, None)
    assert "recorded no quantization comparison" in problem and legend == []


def every_group(runs) -> list[str]:
    """Every scope and series of both graphs: each op drawn as its own leaf."""
    record = comparison(runs)
    trees = [data.version_hierarchy(runs.run, version) for version in (
        record.original_graph_version, record.quantized_graph_version)]
    return sorted({gid for tree in trees for gid, group in tree.groups.items()
                   if group.kind != "op"})


def test_both_graphs_are_painted_by_sqnr_with_the_flagged_node_marked(runs):
    record = comparison(runs)
    by_original = {n.original: n for n in record.nodes}
    opened = every_group(runs)
    elements, _layout, problem, style, line = page.draw_side(ORIGINAL, runs.run, COMPARISON,
                                                             opened)
    assert problem == "" and style == {"display": "none"} and "graph version 1" in line
    drawn = {e["data"]["original"]: e for e in leaves(elements).values()
             if e["data"]["original"]}
    assert set(drawn) == set(by_original)
    for name, element in drawn.items():
        assert element["data"]["color"] == sqnr_bin(by_original[name].sqnr_db,
                                                     THRESHOLD_DB).color
    assert [n for n, e in drawn.items() if "flagged" in e["classes"]] == [runs.flagged]
    assert drawn["images"]["data"]["color"] == sqnr_bin(math.inf, THRESHOLD_DB).color

    elements, *_rest, line = page.draw_side(QUANTIZED, runs.run, COMPARISON, opened)
    assert "graph version 2" in line
    quantized = leaves(elements)
    stands = {e["data"]["original"] for e in quantized.values()}
    assert {"dense_1/Relu", "dense/Relu", runs.flagged} <= stands
    flagged_leaves = [e for e in quantized.values() if "flagged" in e["classes"]]
    assert flagged_leaves and all(e["data"]["original"] == runs.flagged
                                  for e in flagged_leaves)
    assert {e["data"]["original"] for e in quantized.values()} <= set(by_original) | {""}


def test_a_click_in_either_graph_selects_the_original_node_in_both(runs):
    query = {"run": runs.run, "node": None}
    assert page.select(None, None, None, runs.run, COMPARISON, query) == runs.flagged
    asked = {"run": runs.run, "node": "dense/Relu"}
    assert page.select(None, None, None, runs.run, COMPARISON, asked) == "dense/Relu"
    elements = page.draw_side(QUANTIZED, runs.run, COMPARISON, every_group(runs))[0]
    leaf = next(e for e in leaves(elements).values()
                if e["data"]["original"] == "dense_1/Relu")
    tap = {"id": leaf["data"]["id"], "kind": "op", "original": "dense_1/Relu"}
    assert page.select(QUANTIZED_CY, None, tap, runs.run, COMPARISON, query) == "dense_1/Relu"
    forged = {**tap, "original": "not/a/node"}
    assert page.select(ORIGINAL_CY, forged, None, runs.run, COMPARISON, query) is no_update
    assert page.select(ORIGINAL_CY, "junk", None, runs.run, COMPARISON, query) is no_update
    style = page.side_style("dense_1/Relu")
    assert style[-1]["selector"] == 'node[original = "dense_1/Relu"]'
    assert style[-1]["style"]["border-width"] == 4
    assert page.side_style("") == page.side_style(None)


SERIES = "dense+dense_[1]"       # dense and dense_1: one series node, closed at first


def test_the_first_view_draws_collapsed_groups_painted_by_their_worst_member(runs):
    record = comparison(runs)
    by_original = {n.original: n for n in record.nodes}
    opened = page.expansion(None, None, None, runs.run, COMPARISON, None)
    assert SERIES not in opened and "logits" in opened
    for side in (ORIGINAL, QUANTIZED):
        elements, _layout, problem, _style, line = page.draw_side(side, runs.run, COMPARISON,
                                                                  opened)
        series = leaves(elements)[SERIES]
        inside = [n for n in record.nodes if n.original.startswith(("dense/", "dense_1/"))]
        worst = min(inside, key=lambda n: n.sqnr_db)
        # One node for the series, with its size, painted by its worst member, and marked:
        # it holds the flagged node.
        assert series["data"]["original"] == worst.original and problem == ""
        assert series["data"]["color"] == sqnr_bin(worst.sqnr_db, THRESHOLD_DB).color
        assert "flagged" in series["classes"] and "series" in series["classes"]
        assert [e["data"]["id"] for e in leaves(elements).values()
                if "flagged" in e["classes"]] == [SERIES]
        assert "dense/Relu" not in {e["data"]["original"] for e in leaves(elements).values()}
        assert f"{len(leaves(elements))} drawn for" in line
        # The selection outlines the series holding the selected node, whichever member.
        style = page.side_style("dense/Relu", side, runs.run, COMPARISON, opened)
        assert {"selector": f'node[id = "{SERIES}"]', "style": page.SELECTED_STYLE} in style
    assert by_original[runs.flagged].flagged


def test_a_click_on_a_collapsed_group_opens_it_in_both_graphs(runs):
    opened = page.expansion(None, None, None, runs.run, COMPARISON, None)
    tap = {"id": SERIES, "kind": "series", "original": "x"}
    deeper = page.expansion(QUANTIZED_CY, None, tap, runs.run, COMPARISON, opened)
    assert deeper == sorted({*opened, SERIES})
    for side in (ORIGINAL, QUANTIZED):       # the same series is open on both sides
        drawn = leaves(page.draw_side(side, runs.run, COMPARISON, deeper)[0])
        assert SERIES not in drawn and {"dense", "dense_1"} <= set(drawn)
        style = page.side_style("dense/Relu", side, runs.run, COMPARISON, deeper)
        assert {"selector": 'node[id = "dense"]', "style": page.SELECTED_STYLE} in style
    # A click on the open series' box closes it again; a click on an op opens nothing.
    assert page.expansion(ORIGINAL_CY, {"id": SERIES, "kind": "series"}, None, runs.run,
                          COMPARISON, deeper) == opened
    op = {"id": "probabilities", "kind": "op", "original": "probabilities"}
    assert page.expansion(ORIGINAL_CY, op, None, runs.run, COMPARISON, deeper) is no_update
    assert page.expansion(ORIGINAL_CY, {"id": "nope", "kind": "scope"}, None, runs.run,
                          COMPARISON, deeper) is no_update
    assert page.expansion(None, None, None, runs.plain, None, deeper) == []


def test_the_open_groups_round_trip_through_the_address(runs):
    """`open=` keeps the expansion both graphs show: written only when it is not their first
    view, read back when the page loads, "" for all closed; another run's address or junk
    groups open only what the graphs have."""
    first = page.expansion(None, None, None, runs.run, COMPARISON, None)
    tap = {"id": SERIES, "kind": "series", "original": "x"}
    deeper = page.expansion(QUANTIZED_CY, None, tap, runs.run, COMPARISON, first)
    assert SERIES in deeper and SERIES not in first
    assert "open=" not in page.view_address(runs.run, COMPARISON, "dense/Relu", first)
    for opened in (deeper, []):
        href = page.view_address(runs.run, COMPARISON, "dense/Relu", opened)
        query = parse_qs(urlparse(href).query, keep_blank_values=True)
        assert query["open"] == [",".join(opened)]
        asked = {"run": runs.run, "open": query["open"][0]}
        assert page.expansion(None, None, None, runs.run, COMPARISON, None, asked) == opened
        assert page.expansion(page.COMPARISON_DROPDOWN, None, None, runs.run, COMPARISON,
                              None, asked) == opened
    layout = page.layout(run=runs.run, open=SERIES)
    assert _component(layout, page.QUERY_STORE).data["open"] == SERIES
    junk = {"run": runs.run, "open": f"{SERIES},nope,../x"}
    assert page.expansion(None, None, None, runs.run, COMPARISON, None, junk) == [SERIES]
    other = {"run": "another-run", "open": SERIES}
    assert page.expansion(None, None, None, runs.run, COMPARISON, None, other) == first
    assert page.expansion(None, None, None, runs.run, COMPARISON, None, {"open": 7}) is (
        no_update)


def _component(tree, ident):
    if getattr(tree, "id", None) == ident:
        return tree
    children = getattr(tree, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        found = _component(child, ident) if child is not None else None
        if found is not None:
            return found
    return None


def test_the_selected_node_shows_its_histograms_and_metrics(runs, text_of):
    record = comparison(runs)
    shown = page.details(runs.run, COMPARISON, "dense_1/Relu")
    text = text_of(shown)
    node = next(n for n in record.nodes if n.original == "dense_1/Relu")
    assert node.compared in text and f"{node.sqnr_db:.2f} dB" in text
    assert f"{node.mse:.4g}" in text and "cosine similarity" in text
    graphs = [c for c in shown.children[2].children]
    outputs, error = (g.children.figure for g in graphs)
    assert [t.name for t in outputs.data] == ["original", "quantized"]
    assert list(outputs.data[0].y) == list(node.original_counts)
    assert list(error.data[0].y) == list(node.error_counts)
    assert "yes" in text_of(page.details(runs.run, COMPARISON, runs.flagged))
    assert "Click a node" in text_of(page.details(runs.run, COMPARISON, ""))
    assert "not compared" in text_of(page.details(runs.run, COMPARISON, "nope"))


def test_a_run_without_a_comparison_says_how_to_record_one(runs, text_of):
    elements, _layout, problem, style, _line = page.draw_side(ORIGINAL, runs.plain, None)
    assert elements == [] and "record_comparison" in problem and style == {"display": "block"}
    assert "record_comparison" in text_of(page.details(runs.plain, None, "x"))
    assert page.select(None, None, None, runs.plain, None, {}) == ""


CALLBACKS = {
    "run_choice": (page.run_choice, lambda r: ({"run": r.run, "node": "dense_1/Relu"},)),
    "comparison_choice": (page.comparison_choice, lambda r: (r.run,)),
    "costs": (page.costs, lambda r: (r.run,)),
    "overview": (page.overview, lambda r: (r.run, COMPARISON)),
    "draw_side": (page.draw_side, lambda r: (ORIGINAL, r.run, COMPARISON, ["logits"])),
    "comparison_choice_polled": (page.comparison_choice, lambda r: (
        r.run, COMPARISON, [{"label": COMPARISON, "value": COMPARISON}],
        {"runs": {}, "changed": ["quantization"]})),
    "costs_polled": (page.costs, lambda r: (r.run, {"runs": {}, "changed": ["quantization"]})),
    "select": (page.select, lambda r: (QUANTIZED_CY, None, {"id": "x", "kind": "op",
                                                            "original": "dense_1/Relu"},
                                       r.run, COMPARISON, {"run": r.run})),
    "details": (page.details, lambda r: (r.run, COMPARISON, "dense_1/Relu")),
    "style": (page._guarded_style, lambda r: ("dense_1/Relu", QUANTIZED, r.run, COMPARISON,
                                             ["dense+dense_[1]"])),
    "expansion": (page.expansion, lambda r: (ORIGINAL_CY, {"id": "dense+dense_[1]",
                                                           "kind": "series"}, None, r.run,
                                             COMPARISON, [])),
    "expansion.address": (page.expansion, lambda r: (None, None, None, r.run, COMPARISON, None,
                                                     {"run": r.run, "open": SERIES})),
    "view_address": (page.view_address, lambda r: (r.run, COMPARISON, "dense/Relu",
                                                   [SERIES])),
}


@pytest.mark.parametrize("name", sorted(CALLBACKS))
def test_every_callback_takes_any_value(runs, name, caplog):
    function, valid = CALLBACKS[name]
    call_with_every_hostile_value(function, valid(runs))
    assert [r.getMessage() for r in caplog.records if r.levelno >= 40] == []


# -- live follow: comparisons and costs recorded while the page is open --


def _poll(changed=("quantization",)) -> dict:
    return {"runs": {}, "changed": list(changed)}


def test_a_poll_shows_new_comparisons_and_costs_and_keeps_the_users_choice(runs, tmp_path):
    import dataclasses

    from recorded_quantization import COSTS

    from workbench.live import PARTS
    record = comparison(runs)
    data.set_logdir(tmp_path)
    with RunWriter(tmp_path, "growing") as writer:
        writer.scalar("loss", 1.0, 0)
        writer.flush()
        assert page.comparison_choice("growing") == ([], None)
        before = PARTS["quantization"]("growing", None)
        writer.quantization_comparison(dataclasses.replace(record, name="first"))
        writer.quantization_costs(COSTS[:1])
        writer.flush()
        assert PARTS["quantization"]("growing", None) != before
        options, chosen = page.comparison_choice("growing", None, [], _poll())
        assert chosen == "first" and [o["value"] for o in options] == ["first"]
        assert len(page.costs("growing", _poll()).children[1].children) == 1
        assert page.costs("growing", _poll(["steps"])) is no_update
        assert page.comparison_choice("growing", "first", options, _poll(["alerts"])) == (
            no_update, no_update)
        writer.quantization_comparison(dataclasses.replace(record, name="second"))
        writer.flush()
        # At the newest: the newer one is chosen; at an older one: it stays.
        got = page.comparison_choice("growing", "first", options, _poll())
        assert [o["value"] for o in got[0]] == ["first", "second"] and got[1] == "second"
        kept = page.comparison_choice("growing", "first", got[0], _poll())
        assert kept == (no_update, no_update)


# -- the drawings are kept per (graph version, expansion) and (comparison, side, expansion) --


def _fresh(side, run, record, opened):
    """The side drawn from nothing kept: the Graph page's builder, then the SQNR paint."""
    from viz.graph_elements import graph_elements
    from viz.quantization import painted_by_sqnr
    version = (record.original_graph_version if side == ORIGINAL
               else record.quantized_graph_version)
    graph, view = data.version_view(run, version, frozenset(opened))
    members = {node.id: node.members for node in view.nodes if not node.expanded}
    return painted_by_sqnr(graph_elements(view, graph, ())[0], members, record, side)


def test_a_kept_drawing_equals_a_fresh_build(runs):
    record = comparison(runs)
    first = page.expansion(None, None, None, runs.run, COMPARISON, None)
    for opened in (first, every_group(runs), first):
        for side in (ORIGINAL, QUANTIZED):
            kept = page.draw_side(side, runs.run, COMPARISON, opened)
            again = page.draw_side(side, runs.run, COMPARISON, opened)
            assert again[0] is kept[0] and again[4] == kept[4]      # the kept drawing
            assert kept[0] == _fresh(side, runs.run, record, opened)
            data.clear_cache()
            assert page.draw_side(side, runs.run, COMPARISON, opened) == kept


def _copied_run(runs, logdir, name, comparisons) -> None:
    """A run holding the recorded run's two graph versions and the given comparisons."""
    record = comparison(runs)
    graphs = [data.graph(runs.run, version) for version in (
        record.original_graph_version, record.quantized_graph_version)]
    with RunWriter(logdir, name) as writer:
        for graph in graphs:
            writer.graph(graph)
        for one in comparisons:
            writer.quantization_comparison(one)


def test_another_comparison_of_the_same_graphs_is_only_repainted(runs, tmp_path,
                                                                 monkeypatch):
    import dataclasses

    from viz.graph_elements import graph_elements
    record = comparison(runs)
    strict = dataclasses.replace(record, name="strict", threshold_db=200.0)
    _copied_run(runs, tmp_path, "two", [record, strict])
    opened = every_group(runs)
    data.set_logdir(tmp_path)
    laid_out = []
    monkeypatch.setattr(page, "graph_elements", lambda *args: (
        laid_out.append(args[0].expanded), graph_elements(*args))[1])
    loose = leaves(page.draw_side(QUANTIZED, "two", COMPARISON, opened)[0])
    tight = leaves(page.draw_side(QUANTIZED, "two", "strict", opened)[0])
    assert len(laid_out) == 1                  # one layout, two paintings
    assert loose.keys() == tight.keys()
    by_original = {n.original: n for n in record.nodes}
    for ident, leaf in tight.items():
        name = leaf["data"]["original"]
        shown = sqnr_bin(by_original[name].sqnr_db if name else None, 200.0)
        assert leaf["data"]["color"] == shown.color
        assert leaf["position"] == loose[ident]["position"]
    assert any(tight[i]["data"]["color"] != loose[i]["data"]["color"] for i in tight)
    page.draw_side(QUANTIZED, "two", COMPARISON, opened)
    assert len(laid_out) == 1


def test_a_comparison_recorded_live_under_the_same_name_is_drawn(runs, tmp_path):
    """The drawing is kept per recorded comparison (its row), not per name: a newer one of
    the same name, written while the page is open, is what the page draws."""
    import dataclasses
    record = comparison(runs)
    opened = every_group(runs)
    originals = [data.graph(runs.run, v) for v in (record.original_graph_version,
                                                    record.quantized_graph_version)]
    data.set_logdir(tmp_path)
    with RunWriter(tmp_path, "growing") as writer:
        for graph in originals:
            writer.graph(graph)
        writer.quantization_comparison(record)
        writer.flush()
        before = leaves(page.draw_side(ORIGINAL, "growing", COMPARISON, opened)[0])
        assert [e["data"]["original"] for e in before.values() if "flagged" in e["classes"]] == [
            runs.flagged]
        worse = dataclasses.replace(record, flagged="dense/Relu", nodes=tuple(
            dataclasses.replace(n, sqnr_db=1.0, flagged=n.original == "dense/Relu")
            for n in record.nodes))
        writer.quantization_comparison(worse)
        writer.flush()
        after = leaves(page.draw_side(ORIGINAL, "growing", COMPARISON, opened)[0])
        below = sqnr_bin(1.0, THRESHOLD_DB).color
        assert [e["data"]["original"] for e in after.values() if "flagged" in e["classes"]] == [
            "dense/Relu"]
        assert {e["data"]["color"] for e in after.values() if e["data"]["original"]} == {
            below}
        assert page.draw_side(ORIGINAL, "growing", None, opened)[0] == page.draw_side(
            ORIGINAL, "growing", COMPARISON, opened)[0]


def test_a_selection_only_restyles_the_graphs(runs):
    """The selected node reaches the canvases' stylesheets, never their elements."""
    from workbench.app import create_app
    served = create_app(runs.logdir).callback_map
    for side in (ORIGINAL, QUANTIZED):
        own = page.ids(side)["cytoscape"]
        drawn = next(spec for key, spec in served.items() if f"{own}.elements" in key)
        styled = next(spec for key, spec in served.items() if key == f"{own}.stylesheet")
        assert page.SELECTED_STORE not in {i["id"] for i in drawn["inputs"]}
        assert page.SELECTED_STORE in {i["id"] for i in styled["inputs"]}


def test_the_first_view_joins_both_graphs_first_views_chosen_as_the_graph_page_does(
        runs, monkeypatch):
    """Each graph version's first view is chosen as the Graph page chooses its own
    (viz.first_view over that version's drawings), and the page opens both joined."""
    record = comparison(runs)
    versions = (record.original_graph_version, record.quantized_graph_version)
    for version in versions:
        graph, tree = data.graph(runs.run, version), data.version_hierarchy(runs.run, version)

        def zoom_of(expanded, graph=graph, tree=tree):
            return element_fit_zoom(graph_elements(hierarchy_view(tree, expanded), graph,
                                                   ())[0])
        assert data.version_first_view(runs.run, version) == first_view(tree, zoom_of)
    opened = page.expansion(None, None, None, runs.run, COMPARISON, None)
    assert opened == sorted(frozenset().union(
        *(data.version_first_view(runs.run, version) for version in versions)))
    monkeypatch.setattr(data, "version_first_view", lambda run, version: frozenset(
        {"logits"} if version == versions[1] else ()))
    assert page.expansion(None, None, None, runs.run, COMPARISON, None) == ["logits"]
