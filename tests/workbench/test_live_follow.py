"""Live follow, called as plain functions against run stores being written: a RunWriter open
in the test (writing between calls), one closed, one killed with kill -9 in a subprocess
(INTERRUPTED at once through the writer's pid, not after STALE_SECS). The banner's three
states, the poll switched off after the finish, no_update while nothing changed, and each
page's views taking new data without losing the user's step or tag."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import recorded_mlp
from dash import no_update
from dash.exceptions import PreventUpdate

from engine.record import RunWriter
from engine.record.schema import FINISHED, INTERRUPTED, RUNNING, OpStatRecord, StepRecord
from workbench import data, live
from workbench.app import create_app
from workbench.pages import (
    alerts,
    compare,
    graph,
    histograms,
    images,
    placement,
    scalars,
    timeline,
)
from workbench.pages.common import follow, live_changed, live_ids, zoom_key

ROOT = Path(__file__).resolve().parents[2]
PAGES = (graph, placement, scalars, histograms, images, timeline, alerts, compare)




def texts(component) -> str:
    if isinstance(component, (list, tuple)):
        return " ".join(texts(child) for child in component)
    if isinstance(component, str):
        return component
    return texts(getattr(component, "children", None) or "")


@pytest.fixture
def logdir(tmp_path):
    data.set_logdir(tmp_path)
    yield tmp_path
    data.set_logdir("runs")


def banner(runs, previous=None, parts=("steps",), now=None):
    """(banner text, poll off, new store state) for the runs chosen."""
    lines, off, state = follow(tuple(runs), previous, parts, now)
    return texts(lines), off, state


def pixels(step: int) -> np.ndarray:
    image = np.zeros((8, 8), np.uint8)
    image[:, step % 8] = 255
    return image


# -- the banner: running, finished, stopped unexpectedly --


def test_a_running_run_says_its_step_and_last_write_and_polls(logdir):
    with RunWriter(logdir, "live") as run:
        for step in range(1241):
            run.scalar("loss", 1.0 / (step + 1), step)
        run.flush()
        updated = data.live_info("live").updated
        text, off, state = banner(["live"], now=updated + 3)
        assert text == "● running: step 1,240, last write 3 s ago"
        assert off is False
        assert state["runs"]["live"] == {"status": RUNNING, "steps": 1241}
        assert "live-running" in follow(("live",), None, ())[0][0].className


def test_a_closed_run_says_when_it_finished_and_stops_polling(logdir):
    with RunWriter(logdir, "done") as run:
        for step in range(300):
            run.scalar("loss", 0.5, step)
    info = data.live_info("done")
    text, off, state = banner(["done"])
    assert text == f"finished at {time.strftime('%H:%M:%S', time.localtime(info.updated))} " \
                   f"after 300 steps"
    assert off is True and state["runs"]["done"]["status"] == FINISHED


def test_a_finish_seen_by_the_poll_switches_the_poll_off(logdir):
    run = RunWriter(logdir, "closing")
    run.scalar("loss", 1.0, 0)
    run.flush()
    _, off, first = banner(["closing"])
    assert off is False
    run.close()
    text, off, state = banner(["closing"], first)
    assert off is True and text.startswith("finished at ")
    assert state["changed"] == ["status"]
    # Picking a running run again starts the poll again.
    with RunWriter(logdir, "other") as other:
        other.scalar("loss", 1.0, 0)
        other.flush()
        assert banner(["other"], state)[1] is False


KILLED = """
import sys, time
from engine.record import RunWriter
run = RunWriter(sys.argv[1], "killed")
for step in range(213):
    run.scalar("loss", 1.0, step)
run.flush()
print("ready", flush=True)
time.sleep(600)
"""


def test_a_killed_writer_is_stopped_unexpectedly_at_once(logdir):
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(logdir)], cwd=ROOT,
                             stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout.readline().strip() == "ready"
        running, off, before = banner(["killed"])
        assert running.startswith("● running: step 212") and off is False
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()               # reaped: its pid is gone, as the reader's rule checks
        child.stdout.close()
    info = data.live_info("killed")
    assert info.status == INTERRUPTED
    text, off, state = banner(["killed"], before)
    since = time.strftime("%H:%M:%S", time.localtime(info.updated))
    assert text == f"stopped unexpectedly: no write since {since} (last step 212)"
    assert off is True and state["changed"] == ["status"]
    assert "live-interrupted" in follow(("killed",), None, ())[0][0].className


def test_the_writers_exception_is_on_the_banner(logdir):
    with pytest.raises(ValueError), RunWriter(logdir, "failed") as run:
        run.scalar("loss", 1.0, 0)
        raise ValueError("loss became NaN at step 7")
    text, off, _ = banner(["failed"])
    assert text.startswith("finished at ") and off is True
    assert text.endswith("the writer recorded an exception: ValueError: loss became NaN at "
                         "step 7")


def test_several_runs_get_a_line_each_and_the_poll_runs_while_one_runs(logdir):
    with RunWriter(logdir, "old") as run:
        run.scalar("loss", 1.0, 0)
    with RunWriter(logdir, "new") as run:
        run.scalar("loss", 1.0, 0)
        run.flush()
        lines, off, _ = follow((["old", "new"],), None, ())
        assert [texts(line).split(":")[0] for line in lines] == ["old", "new"]
        assert off is False
    assert follow((["old", "new"],), None, ())[1] is True


def test_status_lines_for_long_waits_other_days_and_no_steps(logdir):
    with RunWriter(logdir, "empty") as run:
        run.flush()
        info = data.live_info("empty")
        assert live.status_line(info, info.updated + 300)[0] == (
            "● running: no step yet, last write 5 min ago")
    assert live.status_line(data.live_info("empty"))[0].endswith("after 0 steps")
    yesterday = data.live_info("empty").updated
    assert live.clock(yesterday, yesterday + 86_400).count("-") == 2
    assert live.ago(7300) == "2 h ago"


def test_bad_run_values_are_a_message_not_a_failure(logdir):
    for value in ([{"a": 1}], 5, "../x", "nope"):
        lines, off, state = follow((value,), None, ("steps",))
        assert off is True and state is not None
    lines, off, state = follow(("nope",), {"runs": 7}, ("steps",))
    assert "no run named" in texts(lines).lower()


# -- the store: no_update while nothing changed, the parts that changed when something did --


def test_an_idle_poll_answers_no_update_and_a_new_step_changes_the_store(logdir):
    with RunWriter(logdir, "live", flush_secs=0.05) as run:
        run.scalar("loss", 1.0, 0)
        run.flush()
        _, _, first = banner(["live"], parts=scalars.LIVE_PARTS)
        time.sleep(0.1)            # not a timing assertion: only lets the writer commit again
        run.flush()                # a heartbeat-only commit: new stamp, nothing new to show
        assert banner(["live"], first, scalars.LIVE_PARTS)[2] is no_update
        run.scalar("loss", 0.5, 1)
        run.flush()
        _, _, second = banner(["live"], first, scalars.LIVE_PARTS)
        assert second["changed"] == ["steps"]
        run.scalar("accuracy", 0.5, 1)
        run.flush()
        _, _, third = banner(["live"], second, scalars.LIVE_PARTS)
        assert third["changed"] == ["tags"]
        assert live_changed(third) == {"tags"}
    assert live_changed(None) >= {"steps", "graph", "status"}


def test_another_run_changes_every_part(logdir):
    for name in ("a", "b"):
        with RunWriter(logdir, name) as run:
            run.scalar("loss", 1.0, 0)
    _, _, first = banner(["a"], parts=("steps",))
    _, _, second = banner(["b"], first, ("steps",))
    assert set(second["changed"]) == {"runs", "status", "steps"}


def test_data_sees_a_new_step_at_once_and_the_runs_list_too(logdir):
    with RunWriter(logdir, "live") as run:
        for step in range(3):
            run.scalar("loss", 1.0, step)
            run.flush()
            assert data.scalars("live", "loss")[0].tolist() == list(range(step + 1))
            listed = {info.name: info for info in data.runs()}
            assert listed["live"].num_steps == step + 1 and listed["live"].status == RUNNING


# -- each page's views: new data when it changed, the user's choice kept --


def test_every_page_has_a_banner_and_a_poll_served(logdir):
    app = create_app(logdir)
    for page in PAGES:
        own = live_ids(page.PATH.strip("/"))
        assert f"{own['banner']}.children" in " ".join(app.callback_map), page.NAME
        assert own["store"] in str(page.layout())


def test_scalars_and_histograms_draw_the_new_steps(logdir):
    rng = np.random.default_rng(0)
    with RunWriter(logdir, "live") as run:
        for step in range(3):
            run.scalar("loss", 1.0 / (step + 1), step)
            run.histogram("w", rng.normal(size=50), step)
        run.flush()
        figure = scalars.curves(["live"], ["loss"], 0.0, None)[0].figure
        assert len(figure.data[0].x) == 3 and figure.layout.uirevision == "loss"
        drawn = histograms.figures(["live"], ["w"], "offset")
        assert len(drawn[0].children[0].figure.data) == 3
        run.scalar("loss", 0.2, 3)
        run.histogram("w", rng.normal(size=50), 3)
        run.flush()
        _, _, state = banner(["live"], parts=scalars.LIVE_PARTS)
        # A poll sets the new figures on the graphs drawn (plotly keeps the zoom there) and
        # leaves the chosen tags as they are (a new list would rebuild the graphs).
        curve_id = {"type": scalars.CURVE_GRAPH, "tag": "loss"}
        refreshed = scalars.refresh_curves([curve_id], ["live"], ["loss"], 0.0, None, [],
                                           None, state)
        assert len(refreshed[0].data[0].x) == 4 and refreshed[0].layout.uirevision == "loss"
        zoomed = scalars.refresh_curves([curve_id], ["live"], ["loss"], 0.0, None, [], None,
                                        state, {zoom_key(curve_id): {"xaxis": [1, 2]}})
        assert list(zoomed[0].layout.xaxis.range) == [1, 2]     # the zoom, stated
        assert zoomed[0].layout.xaxis.autorange is False
        assert scalars.tag_choice(["live"], ["loss"], None, state) == (["loss"], no_update)
        ids = [histograms.graph_id(kind, "live", "w", "offset")
               for kind in ("histogram", "distribution")]
        ridges, bands = histograms.refresh_figures(ids, "offset", state)
        assert len(ridges.data) == 4 and bands.layout.uirevision == drawn[0].children[
            1].figure.layout.uirevision
        assert histograms.tag_choice(["live"], ["w"], None, state) == (["w"], no_update)
        with pytest.raises(PreventUpdate):     # not a poll: the full redraw does it
            scalars.refresh_curves([curve_id], ["live"], ["loss"], 0.0, None, [], None, None)


def test_images_slider_follows_the_latest_step_but_keeps_an_earlier_choice(logdir):
    with RunWriter(logdir, "live") as run:
        for step in (0, 2):
            run.image("digits", pixels(step), step)
        run.flush()
        first = images.step_choice("live", "digits", {"run": "live"})
        assert first[1] == 1 and first[3] == 1
        tick = {"runs": {}, "changed": ["steps"]}
        assert images.step_choice("live", "digits", None, 1, 1, tick) == (no_update,) * 5
        run.image("digits", pixels(4), 4)
        run.flush()
        at_latest = images.step_choice("live", "digits", None, 1, 1, tick)
        assert at_latest[1] == 2 and at_latest[3] == 2 and at_latest[2][2] == "4"
        kept = images.step_choice("live", "digits", None, 0, 1, tick)
        assert kept[1] == 2 and kept[3] is no_update
        assert images.tag_choice("live", None, "digits", tick) == (["digits"], no_update)
        run.image("photos", pixels(1), 4)
        run.flush()
        assert images.tag_choice("live", None, "digits", tick) == (["digits", "photos"],
                                                                    no_update)


def _traced(run, step: int) -> None:
    run.step(StepRecord(step, 1, 1.7e9 + step, 100.0, 1, 0),
             [OpStatRecord(step, "layer1/MatMul", "MatMul", "/device:CPU:0", 0.0, 5.0, 64)], [])


def test_timeline_and_graph_step_pickers_follow_the_latest_traced_step(logdir):
    record, placements = recorded_mlp.mlp_graph()
    with RunWriter(logdir, "live") as run:
        run.graph(record)
        run.placements(placements)
        for step in range(2):
            _traced(run, step)
        run.flush()
        options, chosen, _ = timeline.step_choice("live", None)
        graph_options, graph_chosen = graph.step_choice("live", None)
        assert chosen == 1 and graph_chosen == 1
        tick = {"runs": {}, "changed": ["traced"]}
        assert timeline.step_choice("live", None, 1, options, tick) == (no_update,) * 3
        assert graph.step_choice("live", None, 1, graph_options, tick) == (no_update,) * 2
        _traced(run, 2)
        run.flush()
        followed = timeline.step_choice("live", None, 1, options, tick)
        assert followed[0][0]["value"] == 2 and followed[1] == 2
        assert timeline.step_choice("live", None, 0, options, tick)[1] is no_update
        followed = graph.step_choice("live", None, 1, graph_options, tick)
        assert followed[1] == 2 and followed[0][0]["label"] == "step 2 (traced)"
        assert graph.step_choice("live", None, 0, graph_options, tick)[1] is no_update


def test_graph_expansion_stays_and_redraws_only_for_a_new_graph_version(logdir):
    record, placements = recorded_mlp.mlp_graph()
    with RunWriter(logdir, "live") as run:
        run.graph(record)
        run.placements(placements)
        run.flush()
        store = graph.LIVE["store"]
        opened = ["layer1"]
        steps_only = {"runs": {}, "changed": ["steps"]}
        assert graph.next_state(store, "live", None, "", opened, "", None, steps_only) == (
            no_update,) * 3
        run.graph(type(record)(record.version + 1, record.nodes))
        run.flush()
        _, _, state = banner(["live"], parts=graph.LIVE_PARTS)
        assert state["runs"]["live"]["graph"] == [record.version, record.version + 1]
        expanded, selected, said = graph.next_state(store, "live", None, "", opened, "x",
                                                    None, {"runs": {}, "changed": ["graph"]})
        assert expanded == opened and selected is no_update
        # The page's first poll (or one after the run chooser moved) names every part: it
        # saw the run just drawn, so nothing is drawn again (a redraw would fit the view
        # anew and lose the address's pan and zoom).
        assert "runs" in state["changed"] and "graph" in state["changed"]
        assert graph.next_state(store, "live", None, "", opened, "x", None, state) == (
            no_update,) * 3


def test_alerts_placement_and_compare_take_the_poll(logdir, text_of):
    record, placements = recorded_mlp.mlp_graph()
    with RunWriter(logdir, "a") as run:
        run.graph(record)
        run.scalar("loss", 1.0, 0)
    with RunWriter(logdir, "b") as run:
        run.graph(record)
        run.placements(placements)
        run.scalar("loss", 1.0, 0)
        run.flush()
        rows, _, count = placement.placement_content("b", "", [], [], None)
        assert len(rows) == len(placements)
        _, _, state = banner(["b"], parts=alerts.LIVE_PARTS)
        assert state["runs"]["b"]["alerts"] == 0
        assert "No NaN or Inf" in text_of(alerts.alerts_table(["b"], state)[1])
        tick = {"runs": {}, "changed": ["steps"]}
        assert compare.diff_view("a", "b", tick) == (no_update, no_update)
        assert compare.side_state("a", "a", "b", "", None, tick) == (no_update, no_update)
        view, _ = compare.side_state("a", "a", "b", "", None)
        assert view["version"] == record.version
        # A poll leaves Compare's plots in place and sets their new points with the zoom
        # their last relayout set; new tags rebuild them.
        assert compare.curves("a", "b", tick) is no_update
        graph_id = {"type": compare.CURVE_GRAPH, "tag": "loss"}
        (curve,) = compare.refresh_curves([graph_id], "a", "b", tick,
                                          {zoom_key(graph_id): {"xaxis": [0, 3],
                                                                "yaxis": [0.5, 2]}})
        assert curve.layout.uirevision == "loss" and list(curve.layout.xaxis.range) == [0, 3]
        assert list(curve.layout.yaxis.range) == [0.5, 2]
        assert compare.curves("a", "b", {"runs": {}, "changed": ["tags"]})[0].id == graph_id
        with pytest.raises(PreventUpdate):
            compare.refresh_curves([graph_id], "a", "b", {"runs": {}, "changed": ["tags"]})


def test_the_zoom_store_is_checked_and_stated_on_a_figure():
    assert live.zoomed_axes({"xaxis": [1, 5], "yaxis2": [0, 2], "zaxis": [1, 2]}) == {
        "xaxis": [1, 5], "yaxis2": [0, 2]}
    assert live.zoomed_axes({"xaxis": ["2026-12-01 10:00", "2026-12-01 11:00"]}) == {
        "xaxis": ["2026-12-01 10:00", "2026-12-01 11:00"]}        # a wall-time axis
    for bad in (None, [], {"xaxis": [1]}, {"xaxis": [True, 1]}, {"xaxis": [float("nan"), 1]},
                {"xaxis": [1, 2, 3]}, {"xaxis": None}, {3: [1, 2]}, {"xaxis": ["x" * 100, 1]},
                {"xaxis": [None, 1]}):
        assert live.zoomed_axes(bad) == {}, bad
    figure = {"layout": {"xaxis": {"title": "step"}}}
    assert live.kept_zoom(figure, {"xaxis": [1, 2]})["layout"]["xaxis"] == {
        "title": "step", "range": [1, 2], "autorange": False}
    assert live.kept_zoom(figure, None) is figure
    assert zoom_key({"type": "t", "tag": "loss"}) == "tag=loss&type=t"
