"""The Replay page's callbacks as plain functions against runs recorded by real Sessions
(tests/browser/recorded_replay.py) and the damaged sample runs: the steps and the address's
step, the graph lit at a playhead, the curve, placement and alerts up to the step, the
inspector, and bad address values answered with a message."""

from __future__ import annotations

import pytest
import recorded_replay

from engine.record import open_run
from viz import replay as viz_replay
from workbench import data
from workbench.pages import graph as graph_page
from workbench.pages import replay


@pytest.fixture(scope="module")
def recorded_runs(tmp_path_factory):
    return recorded_replay.record_replay_runs(tmp_path_factory.mktemp("replay-page"))


@pytest.fixture
def runs(recorded_runs):
    data.set_logdir(recorded_runs.logdir)
    yield recorded_runs
    data.set_logdir("runs")


def _bounds(runs, query=None):
    return replay.step_bounds(runs.run, query or {"run": runs.run})


def _flight_time(runs, step):
    """A playhead time at which the fed x is on its way to layer1/MatMul."""
    trace = data.step_trace(runs.run, step)
    fed = next(f for f in viz_replay.flights(trace) if f.producer.startswith("_arg_x"))
    return (fed.start_us + fed.end_us) / 2


def test_the_run_in_the_address_is_chosen_or_a_notice_says_why_not(runs):
    options, chosen, notice = replay.run_choice({"run": runs.run})
    assert chosen == runs.run and notice == ""
    assert {option["value"] for option in options} >= {runs.run, runs.alert_run}
    _, chosen, notice = replay.run_choice({"run": "nope"})
    assert chosen in {option["value"] for option in options}
    assert notice.startswith("No readable run named 'nope'")


def test_bounds_carry_steps_traced_spans_and_the_address_position(runs):
    bounds, position, notice, low, high, marks = _bounds(runs, {"run": runs.run, "step": "4",
                                                                "t": "100"})
    assert (bounds["first"], bounds["last"], bounds["numbers"]) == (1, 6, None)
    assert sorted(int(step) for step in bounds["traced"]) == list(runs.traced)
    for step in runs.traced:                # the ops' own span, not the step's overhead
        ends = [stat.end_us for stat in data.step_stats(runs.run, step)]
        assert bounds["traced"][str(step)] == pytest.approx(max(ends))
    assert position == {"step": 4, "t": 100.0} and notice == ""
    assert (low, high) == (1, 6) and set(marks) == {"1", "2", "4", "6"}
    assert replay._marks(list(range(1, 319)), [1, 101, 201, 301, 312], 7) == {
        "7": {"label": "NaN 7", "style": {"color": viz_replay.ALERT_COLOR}},
        "101": {"label": "101"}, "201": {"label": "201"}, "318": {"label": "318"}}
    _, position, _, _, _, _ = _bounds(runs, {"run": runs.run, "step": "3", "t": "100"})
    assert position == {"step": 3, "t": None}       # an untraced step has no playhead
    _, position, notice, _, _, _ = _bounds(runs, {"run": runs.run})
    assert position == {"step": 1, "t": None} and notice == ""


@pytest.mark.parametrize("step, told", [
    ("abc", "The step in the address must be a step number, got 'abc'; showing step 1."),
    ("-1", "The step in the address must be a step number, got '-1'; showing step 1."),
    ("99999999999999999999999", "The step in the address must be a step number"),
    (["3"], "The step in the address must be a step number, got ['3']"),
])
def test_a_bad_step_in_the_address_is_answered_with_a_message(runs, step, told):
    _, position, notice, _, _, _ = _bounds(runs, {"run": runs.run, "step": step})
    assert position == {"step": 1, "t": None}
    assert notice.startswith(told)


def test_a_step_past_the_run_or_between_steps_snaps_and_says_so(runs):
    _, position, notice, _, _, _ = _bounds(runs, {"run": runs.run, "step": "9000000"})
    assert position["step"] == 6
    assert notice == "Run replay recorded no step 9000000 (steps 1–6); showing step 6."
    _, _, notice, _, _, _ = _bounds(runs, {"run": runs.run, "t": "later"})
    assert notice.startswith("The time in the address must be microseconds from 0")


def test_another_runs_address_and_odd_runs(runs):
    _, position, notice, _, _, _ = replay.step_bounds(runs.one_step, {"run": runs.run,
                                                                      "step": "5"})
    assert position == {"step": 1, "t": None} and notice == ""
    bounds, position, notice, *_ = replay.step_bounds(runs.no_steps, {"run": runs.no_steps})
    assert bounds is None and position is None
    assert notice == "Run no-steps recorded no step (no Session.run) to replay."
    assert replay.step_bounds(None, None)[2] == "No readable run in the log directory."
    assert replay.step_bounds("../etc", None)[2] == "Not a run name: '../etc'."
    bounds, *_ = replay.step_bounds(runs.alert_run, None)
    assert bounds["alert"] == runs.alert_step


def test_the_graph_is_drawn_once_with_positions(runs):
    opened, elements, text, style, layout, address, told = replay.draw(runs.run)
    assert text == "" and style == {"display": "none"} and told == ""
    assert opened == sorted(data.graph_first_view(runs.run))
    assert address is replay.no_update                 # the address is left as it is
    ids = {element["data"]["id"] for element in elements}
    assert "layer1/MatMul" in ids or "layer1" in ids
    # The positions travel in the elements (as on the Graph page); the layout only fits.
    assert layout["name"] == "preset" and layout["positions"] == {}
    assert all("position" in e for e in elements if "leaf" in e.get("classes", ""))
    assert replay.draw(None)[2] == "No readable run in the log directory."
    assert replay.draw("nope")[2].startswith("No run named 'nope'")


def _tap(ident: str, kind: str = "scope") -> dict:
    return {"id": ident, "kind": kind}


def _leaf_ids(elements) -> set[str]:
    return {e["data"]["id"] for e in elements if "leaf" in e.get("classes", "")}


def test_scopes_open_and_close_as_on_the_graph_page_and_go_to_the_address(runs):
    default = sorted(data.graph_first_view(runs.run))
    assert "while" not in default
    opened, elements, *_rest, address, _told = replay.draw(
        runs.run, replay.CYTO, _tap("while"), default)
    assert opened == sorted({*default, "while"}) and address == opened
    assert "while" not in _leaf_ids(elements) and "while/Merge" in _leaf_ids(elements)
    closed, elements, *_rest, address, _ = replay.draw(runs.run, replay.CYTO, _tap("while"),
                                                       opened)
    assert closed == default and "while" in _leaf_ids(elements)
    assert replay.draw(runs.run, replay.CYTO, _tap("x", "op"), default) == (
        replay.no_update,) * 7                          # an op: nothing opens
    assert replay.draw(runs.run, replay.CYTO, _tap("nope"), default)[0] is replay.no_update
    assert replay.draw(runs.run, replay.COLLAPSE_BUTTON, None, opened)[0::5] == ([], [])
    deeper = replay.draw(runs.run, replay.EXPAND_BUTTON, None, [])[0]
    assert deeper and deeper == graph_page.next_state(graph_page.EXPAND_BUTTON, runs.run,
                                                      None, None, [], "", {})[0]
    # The address's groups (those of this graph only) on a new run; another run's ignored.
    asked = {"run": runs.run, "open": "layer1,while,nope"}
    assert replay.draw(runs.run, None, None, None, asked)[0] == ["layer1", "while"]
    assert replay.draw(runs.run, None, None, None, {"run": runs.run, "open": ""})[0] == []
    other = {"run": runs.one_step, "open": "while"}
    assert replay.draw(runs.run, None, None, None, other)[0::5] == (default, None)  # dropped
    assert replay.draw(runs.run, None, None, None, asked)[5] is replay.no_update
    assert replay.draw(runs.run, replay.CYTO, _tap("while"), {"no": 1})[2].startswith(
        "The expanded scopes must be")


def test_the_playhead_lights_nodes_inside_open_scopes_and_closed_ones_as_a_whole(runs):
    trace = data.step_trace(runs.run, 4)
    loop = sorted((s for s in trace.stats if s.node == runs.loop_node),
                  key=lambda stat: stat.start_us)
    between = (loop[1].end_us + loop[2].start_us) / 2   # the loop is half way through
    position = {"step": 4, "t": between}
    default = sorted(data.graph_first_view(runs.run))
    opened = sorted({*default, "while", runs.loop_node})
    inside = data.view(runs.run, frozenset(opened)).rep[runs.loop_node]
    assert inside != "while" and inside.startswith("while/")
    sheet = replay.paint(runs.run, position, None, opened)[0]
    running = [rule for rule in sheet if rule["style"].get("background-color") ==
               viz_replay.RUNNING_COLOR]
    assert running and f'node[id = "{inside}"]' in running[0]["selector"]
    assert 'node[id = "while"]' not in running[0]["selector"]
    closed = replay.paint(runs.run, position, None, default)[0]
    running = [rule for rule in closed if rule["style"].get("background-color") ==
               viz_replay.RUNNING_COLOR]
    assert running and 'node[id = "while"]' in running[0]["selector"]
    assert f'node[id = "{inside}"]' not in running[0]["selector"]


def test_a_traced_step_lights_nodes_and_the_transfer_in_flight(runs):
    bounds = _bounds(runs)[0]
    at = _flight_time(runs, 2)
    sheet, step_text, trace_text, button, status, near = replay.paint(
        runs.run, {"step": 2, "t": at}, bounds)
    assert step_text == "Step 2 of 6 (traced)" and trace_text == "" and near is None
    assert button == {"display": "none"}
    flying = [rule for rule in sheet if rule["style"].get("line-color") ==
              viz_replay.FLIGHT_COLOR]
    assert len(flying) == 1 and '->' in flying[0]["selector"]
    pending = [rule for rule in sheet if rule["style"].get("background-color") ==
               viz_replay.PENDING_COLOR]
    assert pending and '"loss"' in pending[0]["selector"]
    assert "nodes done" in status
    assert "moving fed x to GPU:" in status and "(1 KB)" in status
    sheet, _, _, _, status, _ = replay.paint(runs.run, {"step": 2, "t": None}, bounds)
    assert not [rule for rule in sheet if rule["style"].get("line-color") ==
                viz_replay.FLIGHT_COLOR]
    assert status.startswith("end of step of ")


def test_transfers_under_way_together_are_all_named(runs):
    """Both copies of the fed x are named while both are in flight; the trace's own times
    say when that is (on a busy machine the two copies need not overlap at all)."""
    bounds = _bounds(runs)[0]
    trace = data.step_trace(runs.run, 2)
    fed = [f for f in viz_replay.flights(trace) if f.producer.startswith("_arg_x")]
    assert sorted(f.dst_device.rpartition("device:")[2] for f in fed) == ["GPU:0", "GPU:1"]
    start, end = max(f.start_us for f in fed), min(f.end_us for f in fed)
    if start < end:
        _, _, _, _, status, _ = replay.paint(runs.run, {"step": 2, "t": (start + end) / 2},
                                             bounds)
        assert "moving fed x to GPU:0 (1 KB); moving fed x to GPU:1 (1 KB)" in status
    for flight in fed:
        _, _, _, _, status, _ = replay.paint(
            runs.run, {"step": 2, "t": (flight.start_us + flight.end_us) / 2}, bounds)
        device = flight.dst_device.rpartition("device:")[2]
        assert f"moving fed x to {device} (1 KB)" in status


def test_an_untraced_step_says_so_and_offers_the_nearest_traced_one(runs):
    bounds = _bounds(runs)[0]
    _, step_text, trace_text, button, status, near = replay.paint(
        runs.run, {"step": 3, "t": None}, bounds)
    assert step_text == "Step 3 of 6"
    assert trace_text == "Step 3 was not traced; traced steps: 2, 4."
    assert near == 2 and button == {} and status == ""
    assert replay.nearest_label(near) == "Go to traced step 2"
    assert replay.nearest_label(None) == ""
    _, _, trace_text, button, _, near = replay.paint(runs.one_step, {"step": 1}, None)
    assert trace_text == "Step 1 was not traced; no step of this run was traced."
    assert near is None and button == {"display": "none"}


@pytest.mark.parametrize("position, told", [
    ({"step": "abc"}, "The step must be a step number, got 'abc'."),
    ({"step": -1}, "The step must be a step number from 0, got -1."),
    ({"step": 2, "t": "soon"}, "The time in the step must be microseconds from 0"),
    ({"step": 2, "t": float("nan")}, "The time in the step must be microseconds from 0"),
])
def test_a_forged_position_is_answered_with_a_message(runs, position, told):
    answer = replay.paint(runs.run, position, None)
    assert answer[2].startswith(told)
    assert replay.inspect({"id": "total"}, runs.run, position).children.startswith(told)


def test_odd_positions_and_huge_steps_draw_nothing_lit(runs):
    assert replay.paint(runs.run, ["x"], None)[1:] == ("", "", {"display": "none"}, "", None)
    _, step_text, trace_text, *_ = replay.paint(runs.run, {"step": 2 ** 62}, {"last": 6})
    assert step_text == f"Step {2 ** 62} of 6"
    assert trace_text.startswith(f"Step {2 ** 62} was not traced")


def test_the_curve_and_logs_follow_the_browsers_run_and_step_pair(runs):
    assert replay.shown_step([runs.alert_run, 2], runs.run) == (runs.alert_run, 2)
    assert replay.shown_step(None, runs.run) == (runs.run, None)
    assert replay.shown_step("junk", runs.run) == (runs.run, None)
    figure = replay._curve_input_first([runs.run, 2], runs.alert_run)
    assert figure["data"][0]["x"] == [1]       # step 2's own loss is logged after it ran
    assert replay._logs_input_first([{"a": 1}, 2], runs.run)[0].children.startswith(
        "A run name must be text")


def test_the_curve_grows_up_to_the_step(runs):
    # What had been logged when the step ended: the script logs each step's loss after it.
    figure = replay.curve(runs.run, 3)
    assert figure["data"][0]["x"] == [1, 2]
    assert figure["layout"]["xaxis"]["range"] == [1.0, 6.0]
    alerted = replay.curve(runs.alert_run, runs.alert_step)
    assert [shape["x0"] for shape in alerted["layout"]["shapes"]] == [runs.alert_step - 1] * 2
    assert len(replay.curve(runs.alert_run, runs.alert_step - 1)["layout"]["shapes"]) == 1
    bad = replay.curve(runs.run, "abc")
    assert "must be a step number" in bad.layout.annotations[0].text
    assert replay.curve(runs.run, None).layout.annotations[0].text == "No step to show."


def test_the_curve_is_cut_by_wall_time_where_the_numberings_differ(tmp_path):
    name = recorded_replay.record_training_counter_run(tmp_path)
    data.set_logdir(tmp_path)
    reader = open_run(tmp_path / name)
    steps, _values, walls = reader.scalar_series("loss")
    for record in reader.steps():
        shown = replay.curve(name, record.step)["data"][0]["x"]
        end = record.wall_start + record.duration_us / 1e6
        assert shown == sorted(s for s, w in zip(steps.tolist(), walls.tolist()) if w <= end)
    data.set_logdir("runs")


def test_the_placement_in_force_and_the_alerts_up_to_the_step(runs, text_of):
    placement, alerts = replay.logs(runs.run, 3)
    version = data.graph(runs.run).version
    assert f"Placement in force (graph version {version})" in text_of(placement)
    assert "layer1/MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0" in text_of(
        placement)
    assert alerts == []
    _, before = replay.logs(runs.alert_run, runs.alert_step - 1)
    assert text_of(before) == f"No alert up to step {runs.alert_step - 1}."
    _, reached = replay.logs(runs.alert_run, runs.alert_step)
    assert reached[0].className == "replay-alert-banner replay-alert-now"
    assert f"step {runs.alert_step}: Log (Log)" in text_of(reached)
    assert text_of(replay.logs(runs.run, "x")[0]).startswith("The step must be")


def test_the_inspector_gives_start_duration_and_iterations(runs, text_of):
    trace = data.step_trace(runs.run, 4)
    matmul = next(stat for stat in trace.stats if stat.node == "layer1/MatMul")
    middle = (matmul.start_us + matmul.end_us) / 2
    elements = replay.draw(runs.run)[1]
    ident = "layer1/MatMul" if any(e["data"]["id"] == "layer1/MatMul" for e in elements) \
        else "layer1"
    panel = text_of(replay.inspect({"id": ident}, runs.run, {"step": 4, "t": middle}))
    assert "layer1/MatMul running start" in panel and "on GPU:0" in panel
    loop = data.view(runs.run, data.graph_first_view(runs.run)).rep[runs.loop_node]
    panel = text_of(replay.inspect({"id": loop}, runs.run, {"step": 4, "t": None}))
    assert f"{runs.loop_node} done ×4 (4 done)" in panel
    panel = text_of(replay.inspect({"id": "total/(total)"}, runs.run, {"step": 3}))
    assert panel == "total Step 3 was not traced: no timing."
    assert replay.inspect(None, runs.run, {"step": 3}) == replay.INSPECTOR_HINT
    box = text_of(replay.inspect({"id": "layer2"}, runs.run, {"step": 4, "t": None}))
    assert box.startswith("layer2 layer2/MatMul done") and "layer2/Tanh done" in box
    assert text_of(replay.inspect({"id": "nope"}, runs.run, {"step": 4})) == (
        "No node 'nope' in this drawing.")


def test_damaged_runs_show_what_is_whole(damaged):
    assert replay.draw(damaged.missing_graph)[2].startswith("Cannot show this: the run is "
                                                            "damaged")
    assert "damaged" in replay.curve(damaged.bad_scalars, 5).layout.annotations[0].text
    bounds, position, *_ = replay.step_bounds(damaged.bad_scalars, None)
    assert position == {"step": 0, "t": None} and bounds["last"] == 49


def test_workbench_replay_serves_the_parent_and_prints_the_address(recorded_runs, monkeypatch,
                                                                   capsys):
    from workbench import cli
    served = {}
    monkeypatch.setattr(cli, "serve", lambda logdir, host, port, *rest: served.update(
        logdir=logdir, host=host, port=port) or 0)
    assert cli.main(["replay", str(recorded_runs.logdir / recorded_runs.run), "--port",
                     "8124"]) == 0
    assert served == {"logdir": recorded_runs.logdir.resolve(), "host": "127.0.0.1",
                      "port": 8124}
    out = capsys.readouterr().out
    assert f"Replay: http://127.0.0.1:8124/replay?run={recorded_runs.run}" in out


def test_workbench_replay_of_a_missing_folder_or_a_non_run_says_so(tmp_path, capsys):
    from workbench import cli
    assert cli.main(["replay", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("workbench: error: no run folder ")
    (tmp_path / "plain").mkdir()
    assert cli.main(["replay", str(tmp_path / "plain")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "plain is not a run (no run.sqlite" in err


def test_a_poll_of_a_run_being_written_grows_the_slider_and_keeps_the_users_step(tmp_path):
    from dash import no_update

    from engine.record import RunWriter
    from engine.record.schema import StepRecord

    data.set_logdir(tmp_path)
    try:
        with RunWriter(tmp_path, "live") as run:
            for step in range(3):
                run.step(StepRecord(step, 1, 1.7e9 + step, 100.0, 1, 0), [], [])
            run.flush()
            _, position, _, low, high, _ = replay.step_bounds("live", {"run": "live"})
            assert (position["step"], low, high) == (0, 0, 2)
            for step in range(3, 6):
                run.step(StepRecord(step, 1, 1.7e9 + step, 100.0, 1, 0), [], [])
            run.flush()
            bounds, position, notice, low, high, _ = replay.step_bounds(
                "live", {"run": "live"}, {"changed": ["steps"]})
            assert (bounds["last"], low, high) == (5, 0, 5)
            assert position is no_update and notice is no_update
    finally:
        data.set_logdir("runs")


def test_the_first_drawing_opens_the_graph_pages_first_view(runs, monkeypatch):
    """With no `open` in the address the replay opens what the Graph page first shows
    (data.graph_first_view), not the whole default expansion."""
    assert replay.draw(runs.run)[0] == sorted(data.graph_first_view(runs.run))
    monkeypatch.setattr(data, "graph_first_view", lambda run: frozenset({"while"}))
    opened, elements, *_ = replay.draw(runs.run)
    assert opened == ["while"] and "while/Merge" in _leaf_ids(elements)
    assert replay.expansion(runs.run, None) == {"while"}
