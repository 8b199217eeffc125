"""The Scalars page's callbacks against real run stores: addressable views
(`/scalars?run=A,B&tag=loss,acc&x=wall&log=1`), the horizontal axis and log scale, the
full-resolution downloads, and the link to the current view."""

import csv
import io
import json
import urllib.parse

import numpy as np
import pytest

from engine.record import RunWriter
from workbench import data
from workbench.pages import scalars

T0 = 1_790_000_000.0


@pytest.fixture
def three_runs(tmp_path):
    for k, name in enumerate(("lr-0.1", "lr-0.01", "lr-0.001")):
        with RunWriter(tmp_path, name) as writer:
            for step in range(50):
                writer.scalar("loss", 2.0 / (1 + step * (k + 1)), step, wall_time=T0 + 2 * step)
                writer.scalar("accuracy", step / 50.0, step, wall_time=T0 + 2 * step)
    data.set_logdir(tmp_path)
    yield tmp_path
    data.set_logdir("runs")


def test_the_address_chooses_runs_tags_axis_and_scale(three_runs, text_of):
    page = scalars.layout(run="lr-0.1,lr-0.001", tag="accuracy,loss", x="relative", log="1")
    text = str(page)
    assert "'relative'" in text and "'log'" in text
    _, chosen, notice = scalars.run_choice("lr-0.1,lr-0.001")
    assert chosen == ["lr-0.1", "lr-0.001"] and notice == ""
    options, tags = scalars.tag_choice(chosen, None, "accuracy,loss")
    assert options == ["accuracy", "loss"] and tags == ["accuracy", "loss"]
    _, chosen, notice = scalars.run_choice("lr-0.1,gone")
    assert chosen == ["lr-0.1"] and "'gone'" in notice
    # A bad axis in the address falls back to steps instead of failing the page.
    assert "'step'" in str(scalars.layout(x="epoch"))


def test_curves_follow_the_axis_and_scale(three_runs, text_of):
    graphs = scalars.curves(["lr-0.1", "lr-0.01"], ["loss"], 0.0, None, "wall", ["log"])
    (figure,) = [g.figure for g in graphs]
    assert figure.layout.yaxis.type == "log"
    assert figure.layout.xaxis.title.text == "wall time"
    assert str(np.asarray(figure.data[0].x)[0]).startswith("2026-")
    relative = scalars.curves(["lr-0.1"], ["loss"], 0.0, None, "relative", [])[0].figure
    assert relative.layout.xaxis.title.text == "relative time (seconds)"
    assert list(relative.data[0].x)[:3] == [0.0, 2.0, 4.0]
    assert "horizontal axis must be one of" in text_of(
        scalars.curves(["lr-0.1"], ["loss"], 0.0, None, "epoch", []))


def test_downloads_hold_every_point_of_the_chosen_runs_and_tags(three_runs):
    sent = scalars.download_csv(1, ["lr-0.1", "lr-0.01"], ["loss", "accuracy"])
    assert sent["filename"] == "scalars.csv"
    rows = list(csv.DictReader(io.StringIO(sent["content"])))
    assert len(rows) == 2 * 2 * 50
    first = rows[0]
    assert (first["run"], first["tag"], first["step"]) == ("lr-0.1", "loss", "0")
    assert float(first["wall_time"]) == T0 and float(first["value"]) == 2.0
    doc = json.loads(scalars.download_json(1, ["lr-0.001"], ["loss"])["content"])
    assert doc["lr-0.001"]["loss"][10] == [T0 + 20, 10, pytest.approx(2.0 / 31)]
    assert scalars.download_csv(None, ["lr-0.1"], ["loss"]) is scalars.dash.no_update


def test_the_view_link_reopens_the_same_view(three_runs):
    link = scalars.view_link(["lr-0.1", "lr-0.01"], ["loss"], "wall", ["log"])
    path, _, query = link.partition("?")
    assert path == "/scalars"
    asked = dict(urllib.parse.parse_qsl(query))
    assert asked == {"run": "lr-0.1,lr-0.01", "tag": "loss", "x": "wall", "log": "1"}
    _, chosen, _ = scalars.run_choice(asked["run"])
    assert chosen == ["lr-0.1", "lr-0.01"]
    assert scalars.view_link([], [], None, []) == "/scalars"


def _find(component, ident):
    """The component with id `ident` in a layout tree (None if absent)."""
    if getattr(component, "id", None) == ident:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if hasattr(child, "to_plotly_json"):
            found = _find(child, ident)
            if found is not None:
                return found
    return None


def test_the_page_comes_with_its_first_curves(three_runs):
    """The layout holds the curves of the runs and tags it chose (no callback round trip
    before the first draw), the same ones the curves callback draws."""
    page = scalars.layout(run="lr-0.1,lr-0.001", tag="accuracy,loss", x="wall", step="5")
    drawn = _find(page, scalars.CURVES_DIV).children
    assert [graph.id["tag"] for graph in drawn] == ["accuracy,loss"]   # one graph, a subplot each
    called = scalars.curves(["lr-0.1", "lr-0.001"], ["accuracy", "loss"], 0.6, None, "wall", [],
                            5)
    assert [g.figure.to_json() for g in drawn] == [g.figure.to_json() for g in called]
    data.set_logdir(three_runs / "missing")     # no runs: the page opens and says so
    assert "Choose at least one run" in str(_find(scalars.layout(), scalars.CURVES_DIV).children)


def test_warming_reads_every_curve_the_first_visit_draws(three_runs, monkeypatch):
    from engine.record import RunReader

    scalars.warm(limit=3)
    reads = []
    for name in ("scalar_values", "scalar_points"):
        original = getattr(RunReader, name)
        monkeypatch.setattr(RunReader, name, lambda self, *args, _original=original, _name=name:
                            reads.append(_name) or _original(self, *args))
    scalars.layout(run="lr-0.1,lr-0.01,lr-0.001", tag="accuracy,loss")     # two columns
    scalars.layout(run="lr-0.1,lr-0.01,lr-0.001", tag="loss")              # one
    assert reads == []
    data.set_logdir(three_runs / "missing")     # nothing to warm is not an error
    scalars.warm()


def test_curves_keep_the_points_their_subplot_can_show(tmp_path):
    """One tag draws 1,200 points a curve; two or more (two columns, half as wide) 544,
    each curve's extremes kept (a spike still shows)."""
    values = np.sin(np.arange(12_000) / 300.0)
    values[7_345] = 50.0
    with RunWriter(tmp_path, "long") as writer:
        for step, value in enumerate(values.tolist()):
            writer.scalar("loss", value, step, wall_time=T0 + step)
            if step % 4 == 0:
                writer.scalar("accuracy", -value, step, wall_time=T0 + step)
    data.set_logdir(tmp_path)
    try:
        (one,) = scalars.curves(["long"], ["loss"], 0.6, None, "step", [])
        assert {len(trace.y) for trace in one.figure.data} == {1200}
        (two,) = scalars.curves(["long"], ["loss", "accuracy"], 0.6, None, "step", [])
        assert {len(trace.y) for trace in two.figure.data} == {544}
        raw = [t for t in two.figure.data if t.name == "long (raw)" and t.xaxis == "x"][0]
        assert float(np.max(raw.y)) == 50.0 and 7_345 in raw.x.tolist()
    finally:
        data.set_logdir("runs")


def test_the_first_fingerprint_of_finished_runs_redraws_nothing(three_runs):
    """The live store's first value (the page just opened) wakes the refresh: for runs that
    are not running there is nothing newer than what the layout drew."""
    graph_id = [{"type": scalars.CURVE_GRAPH, "tag": "loss"}]
    first = {"runs": {"lr-0.1": {"status": "finished", "steps": 50}},
             "changed": ["runs", "status", "steps"]}
    with pytest.raises(scalars.PreventUpdate):
        scalars.refresh_curves(graph_id, ["lr-0.1"], ["loss"], 0.6, None, [], None, first)
    running = {"runs": {"lr-0.1": {"status": "running", "steps": 50}},
               "changed": ["runs", "status", "steps"]}
    polled = {"runs": {"lr-0.1": {"status": "finished", "steps": 50}}, "changed": ["steps"]}
    for state in (running, polled):
        (figure,) = scalars.refresh_curves(graph_id, ["lr-0.1"], ["loss"], 0.6, None, [], None,
                                           state)
        assert figure.layout.uirevision == "loss" and len(figure.data) == 2


def test_the_tags_are_subplots_of_one_figure(three_runs, text_of):
    """One graph for every chosen tag: a subplot each (own axes, own title, own log scale and
    step mark), one colour per run across them, each run once in the legend."""
    (graph,) = scalars.curves(["lr-0.1", "lr-0.01"], ["loss", "accuracy"], 0.6, None, "step",
                              ["log"], 7)
    figure = graph.figure
    assert graph.id == {"type": scalars.CURVE_GRAPH, "tag": "loss,accuracy"}
    assert [t.xaxis for t in figure.data] == ["x"] * 4 + ["x2"] * 4
    assert figure.layout.yaxis.type == figure.layout.yaxis2.type == "log"
    assert figure.layout.xaxis2.anchor == "y2" and figure.layout.yaxis2.anchor == "x2"
    assert figure.layout.xaxis.domain[1] < figure.layout.xaxis2.domain[0]   # side by side
    texts = [a.text for a in figure.layout.annotations]
    assert texts == ["step 7", "step 7", "loss", "accuracy"]
    assert [(s.xref, s.x0) for s in figure.layout.shapes] == [("x", 7), ("x2", 7)]
    in_legend = [t.name for t in figure.data if t.showlegend is not False]
    assert in_legend == ["lr-0.01", "lr-0.1"]
    colors = {t.name: t.line.color for t in figure.data if "raw" not in t.name}
    assert len(set(colors.values())) == 2
    assert figure.layout.uirevision == "loss,accuracy"
    # A tag no chosen run has gets no subplot; a tag none has at all, a message.
    (graph,) = scalars.curves(["lr-0.1"], ["loss", "gone"], 0.6, None, "step", [])
    assert {t.xaxis for t in graph.figure.data} == {"x"}
    assert "None of the chosen runs" in text_of(
        scalars.curves(["lr-0.1"], ["gone"], 0.6, None, "step", []))


def test_a_poll_refreshes_only_the_view_the_graph_was_drawn_for(three_runs):
    poll = {"runs": {"lr-0.1": {"status": "running", "steps": 50}}, "changed": ["steps"]}
    ident = {"type": scalars.CURVE_GRAPH, "tag": "loss,accuracy"}
    zoom = {"tag=loss,accuracy&type=scalars-curve-graph": {"xaxis2": [3, 9]}}
    (figure,) = scalars.refresh_curves([ident], ["lr-0.1"], ["loss", "accuracy"], 0.6, None, [],
                                       None, poll, zoom)
    assert len(figure.data) == 4 and list(figure.layout.xaxis2.range) == [3, 9]
    assert figure.layout.xaxis.range is None        # the other subplot keeps its own axes
    # Other tags chosen since: that graph is being replaced, not refreshed.
    assert scalars.refresh_curves([ident], ["lr-0.1"], ["loss"], 0.6, None, [], None,
                                  poll) == [scalars.dash.no_update]
