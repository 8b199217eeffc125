"""The Timeline page's callbacks as plain functions against a real run store: a Session on
CPU:0 and two virtual GPUs (a while loop on GPU:1) whose steps 2 and 4 were traced. Also the
Graph page opening the node a timeline click asks for (`node=`)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest
from dash import no_update

import engine as tf
from viz.timeline import OP, TRANSFER, TRANSFER_LEGEND
from workbench import data
from workbench.app import create_app
from workbench.pages import graph, timeline

RUN = "loop-two-gpus"
TRACED = [2, 4]
ITERATIONS = 3
PREFIX = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0, GPU1 = PREFIX + "CPU:0", PREFIX + "GPU:0", PREFIX + "GPU:1"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    """x (CPU:0) -> double (GPU:0) -> a 3-iteration loop adding it up (GPU:1) -> out (CPU:0);
    four steps, FULL_TRACE on steps 2 and 4 only."""
    root = tmp_path_factory.mktemp("timeline-logs")
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        with tf.device("/gpu:0"):
            double = tf.multiply(x, 2.0, name="double")
        with tf.device("/gpu:1"):
            _, total = tf.while_loop(
                lambda i, acc: i < ITERATIONS,
                lambda i, acc: (i + 1, tf.add(acc, double, name="acc")),
                [tf.constant(0), tf.zeros([3])])
        with tf.device("/cpu:0"):
            out = tf.reduce_sum(total, name="out")
    config = tf.ConfigProto(virtual_gpus=2, trace_every_n_steps=0)
    full = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session(graph=g, config=config, logdir=str(root), run_name=RUN) as sess:
        for step in range(1, 5):
            value = sess.run(out, {x: np.ones(3, np.float32)},
                             options=full if step in TRACED else None)
            assert value == 18.0
    with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=2, trace_every_n_steps=0),
                    logdir=str(root), run_name="untraced") as sess:
        sess.run(out, {x: np.ones(3, np.float32)})
    return root


@pytest.fixture
def store(logdir):
    data.set_logdir(logdir)
    yield logdir
    data.set_logdir("runs")


def bar_rows(figure) -> list[tuple]:
    return [tuple(row) for trace in figure.data if trace.type == "bar"
            for row in trace.customdata]


def test_data_lists_traced_steps_and_reads_one(store):
    assert data.traced_steps(RUN) == TRACED
    assert data.traced_steps("untraced") == []
    trace = data.step_trace(RUN, 4)
    assert (trace.run, trace.step) == (RUN, 4)
    assert {s.device for s in trace.stats} == {CPU0, GPU0, GPU1}
    assert len(trace.transfers) == 3 and len(trace.cut_edges) == 3
    assert [s.node for s in trace.stats].count("while/acc") == ITERATIONS
    with pytest.raises(data.UnknownStepError, match=r"step 3 of run loop-two-gpus was not "
                                                     r"traced \(traced steps: 2, 4\)"):
        data.step_trace(RUN, 3)


def test_the_step_picker_lists_only_traced_steps_latest_first(store):
    options, value, notice = timeline.step_choice(RUN, {"run": RUN, "step": None})
    assert [o["value"] for o in options] == [4, 2] and value == 4 and notice == ""
    assert timeline.step_choice(RUN, {"run": RUN, "step": "2"})[1:] == (2, "")
    _, value, notice = timeline.step_choice(RUN, {"run": RUN, "step": "3"})
    assert value == 4 and "Step 3 of loop-two-gpus was not traced" in notice
    # A step asked for another run does not carry over when the user picks this one.
    assert timeline.step_choice(RUN, {"run": "untraced", "step": "2"})[1:] == (4, "")
    assert timeline.step_choice("untraced", {})[2] == (
        "Run untraced has no traced step (no step recorded per-op stats).")
    assert timeline.step_choice(RUN, {"run": RUN, "step": "two"}) == (
        [], None, "The step in the address must be a step number, got 'two'.")


def test_run_choice_keeps_the_asked_run_or_says_why_not(store):
    options, chosen, notice = timeline.run_choice({"run": RUN})
    assert chosen == RUN and notice == "" and {o["value"] for o in options} == {RUN, "untraced"}
    _, chosen, notice = timeline.run_choice({"run": "nope"})
    assert chosen in (RUN, "untraced") and notice.startswith("No readable run named 'nope'")


def test_the_figure_has_a_bar_per_execution_and_an_arrow_per_transfer(store):
    figure, summary, drawn, zoom = timeline.timeline_view(RUN, 4)
    assert drawn == RUN and zoom is None
    trace = data.step_trace(RUN, 4)
    rows = bar_rows(figure)
    assert len(rows) == len(trace.stats)
    assert [r[1] for r in rows].count("while/acc") == ITERATIONS
    assert all(r[0] == OP for r in rows)
    assert all(min(t.x) >= 0 for t in figure.data if t.type == "bar")
    lanes = [t.name for t in figure.data if t.type == "bar"]
    assert lanes == ["CPU:0", "GPU:0 (virtual)", "GPU:1 (virtual)"]
    (arrows,) = [t for t in figure.data if t.name == TRANSFER_LEGEND]
    assert len(arrows.x) == 3 * 3 and arrows.customdata[0][0] == TRANSFER
    assert summary.startswith(f"step 4: {len(trace.stats)} op executions on 3 devices, "
                              "3 transfers (36 bytes)")
    assert figure.layout.uirevision == f"{RUN}:4"


def test_another_step_of_the_drawn_run_keeps_the_zoom_another_run_forgets_it(store):
    zoom = {timeline.BARS_GRAPH: {"xaxis": [10.0, 50.0]}}
    figure, _, drawn, kept = timeline.timeline_view(RUN, 2, zoom, RUN)
    assert list(figure.layout.xaxis.range) == [10.0, 50.0]
    assert figure.layout.xaxis.autorange is False and kept is timeline.no_update
    assert drawn == RUN
    fresh, _, drawn, forgot = timeline.timeline_view(RUN, 2, zoom, "another-run")
    assert fresh.layout.xaxis.range != (10.0, 50.0) and forgot is None and drawn == RUN
    unzoomed, *_ = timeline.timeline_view(RUN, 2, {"other-graph": {"xaxis": [1, 2]}}, RUN)
    assert unzoomed.layout.xaxis.autorange is not False


def test_the_figure_answers_bad_requests_with_a_message(store):
    def said(figure) -> str:
        return figure.layout.annotations[0].text

    assert said(timeline.timeline_view(RUN, 3)[0]).startswith("Step 3 of run loop-two-gpus")
    assert said(timeline.timeline_view(RUN, True)[0]) == (
        "The step must be a step number, got True.")
    assert said(timeline.timeline_view(RUN, -1)[0]).startswith("The step must be a step")
    assert said(timeline.timeline_view("../etc", 4)[0]) == "Not a run name: '../etc'."
    assert said(timeline.timeline_view("untraced", None)[0]) == (
        "Run untraced has no traced step to draw.")
    assert said(timeline.timeline_view(None, None)[0]) == "No readable run in the log directory."


def test_the_download_is_the_steps_chrome_trace(store):
    sent, said = timeline.download_trace(1, RUN, 2)
    assert sent["filename"] == f"{RUN}-step2.trace.json" and "Perfetto" in said
    doc = json.loads(sent["content"])
    events = doc["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == len(data.step_trace(RUN, 2).stats)
    assert all(e["dur"] >= 0 and isinstance(e["ts"], float) for e in complete)
    starts = sorted(e["id"] for e in events if e["ph"] == "s")
    assert starts == sorted(e["id"] for e in events if e["ph"] == "f") == [0, 1, 2]
    processes = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert f"{CPU0} Compute" in processes and len(processes) == 3
    assert doc["otherData"]["step"] == 2
    assert timeline.download_trace(1, RUN, 3)[0] is no_update
    assert timeline.download_trace(1, "untraced", None) == (
        no_update, "Run untraced has no traced step to export.")


def click(custom) -> dict:
    return {"points": [{"customdata": custom}]}


def test_a_click_on_a_bar_opens_the_node_in_the_graph(store):
    bar = [OP, "while/acc", "Add", "GPU:1", "1.0", "2.0", "12", "while/acc"]
    href, _ = timeline.open_in_graph(click(bar), RUN, 4)
    url = urlparse(href)
    assert url.path == "/graph"
    assert parse_qs(url.query) == {"run": [RUN], "step": ["4"], "node": ["while/acc"]}
    send = [OP, "double/_2", "_Send", "GPU:0", "1.0", "2.0", "0", "double"]
    assert parse_qs(urlparse(timeline.open_in_graph(click(send), RUN, 4)[0]).query)[
        "node"] == ["double"]
    for ignored in (click([TRANSFER, "double:0"]), click(bar[:7]), click("x"), {"points": []},
                    None, 7):
        assert timeline.open_in_graph(ignored, RUN, 4) == (no_update, no_update)


def test_the_graph_page_reveals_and_inspects_the_node_in_the_address(store, text_of):
    """The Timeline links to /graph?run=&step=&node=: the node's loop scope opens, the node
    is selected and the inspector reads that step's stats."""
    query = {"run": RUN, "node": "while/acc", "step": "2"}
    plain, _, _ = graph.next_state(None, RUN, None, None, None, None, {})
    expanded, selected, note = graph.next_state(None, RUN, None, None, None, None, query)
    assert "while" not in plain and "while" in expanded and note == ""
    assert selected
    panel = graph.inspect(RUN, selected, 2)
    assert "while/acc" in text_of(panel) and str(ITERATIONS) in text_of(panel)
    # Another run asked for, or a node the graph lacks: nothing is selected.
    assert graph.next_state(None, "untraced", None, None, None, None, query)[1] == ""
    missing = graph.next_state(None, RUN, None, None, None, None, {**query, "node": "nope"})
    assert missing[1] == "" and "No node named 'nope'" in missing[2]


def test_the_app_serves_the_timeline_page(store):
    app = create_app(store)
    client = app.server.test_client()
    assert client.get(f"/timeline?run={RUN}&step=2").status_code == 200
    assert b"app-nav-timeline-link" in client.get("/_dash-layout").data
    outputs = " ".join(dep["output"] for dep in client.get("/_dash-dependencies").json)
    assert "timeline-bars-graph" in outputs and "timeline-nav-location" in outputs


def _component(tree, ident):
    if getattr(tree, "id", None) == ident:
        return tree
    children = getattr(tree, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        found = _component(child, ident) if child is not None else None
        if found is not None:
            return found
    return None


def test_the_zoomed_window_round_trips_through_the_address(store):
    """`from=US&to=US`: the zoom store's time window is written (from 0, to a tenth of a
    microsecond), the layout reads it and the first drawing of that run zooms to it; the
    page's later drawings keep the zoom store's own window."""
    zoom = {timeline.BARS_GRAPH: {"xaxis": [12.25, 340.0], "yaxis": [0, 2]}}
    href = timeline.view_address(RUN, 4, zoom)
    assert parse_qs(urlparse(href).query) == {"run": [RUN], "step": ["4"], "from": ["12.2"],
                                              "to": ["340"]}
    query = {key: values[0] for key, values in parse_qs(urlparse(href).query).items()}
    page = timeline.layout(**query)
    asked = _component(page, timeline.QUERY_STORE).data
    assert asked["window"] == [12.2, 340.0]
    assert _component(page, timeline.WINDOW_NOTICE_TEXT).children == ""
    figure, _, drawn, kept = timeline.timeline_view(RUN, 4, None, None, asked)
    assert list(figure.layout.xaxis.range) == [12.2, 340.0] and drawn == RUN
    assert kept == {timeline.BARS_GRAPH: {"xaxis": [12.2, 340.0]}}
    # Drawn already (another step, a poll): the zoom store's window, not the address's.
    figure, *_ = timeline.timeline_view(RUN, 2, {timeline.BARS_GRAPH: {"xaxis": [1, 5]}}, RUN,
                                        asked)
    assert list(figure.layout.xaxis.range) == [1, 5]
    # The address of another run: its window is not this run's.
    figure, _, _, kept = timeline.timeline_view(RUN, 4, None, None, {**asked, "run": "x"})
    assert figure.layout.xaxis.autorange is not False and kept is None
    # Dragged to before the step began: from 0. Unzoomed, or not a window: none written.
    assert "from=0&to=50" in timeline.view_address(RUN, 4, {
        timeline.BARS_GRAPH: {"xaxis": [-20.0, 50.0]}})
    for junk in (None, {}, {timeline.BARS_GRAPH: {"xaxis": [-20.0, -5.0]}},
                 {timeline.BARS_GRAPH: {"xaxis": ["a", "b"]}},
                 {timeline.BARS_GRAPH: {"xaxis": [float("nan"), 5]}},
                 {"other-graph": {"xaxis": [1, 2]}}):
        assert timeline.view_address(RUN, 4, junk) == f"/timeline?run={RUN}&step=4"


@pytest.mark.parametrize(("start", "end", "told"), [
    ("nan", "5", "The window's start (from, in microseconds) must be a number, got 'nan'"),
    ("0", "inf", "The window's end (to, in microseconds) must be a number, got 'inf'"),
    ("0", "1e400", "The window's end (to, in microseconds) must be a finite number from 0, "
                   "got '1e400'"),
    ("-5", "10", "The window's start (from, in microseconds) must be a finite number from 0, "
                 "got '-5'"),
    ("x" * 10_000, "10", "The window's start (from, in microseconds) must be a number, got "
                         "'xxxx"),
    ("10", None, "The time window needs both from and to"),
    ("10", "10", "The time window's end (to=10) must be after its start (from=10)"),
    (["1", "2"], "10", None),
])
def test_a_bad_window_in_the_address_is_told_and_the_whole_step_shown(store, start, end,
                                                                       told):
    page = timeline.layout(run=RUN, **{"from": start, "to": end})
    notice = _component(page, timeline.WINDOW_NOTICE_TEXT).children
    window = _component(page, timeline.QUERY_STORE).data["window"]
    if told is None:                           # a repeated parameter: its first value
        assert (notice, window) == ("", [1.0, 10.0])
        return
    assert notice.startswith(told) and notice.endswith("; showing the whole step.")
    assert len(notice) < 200 and window is None
    figure, *_ = timeline.timeline_view(RUN, 4, None, None, {"run": RUN, "window": [
        start, end]})
    assert figure.layout.xaxis.autorange is not False
