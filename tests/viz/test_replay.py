"""viz.replay against runs recorded by real Sessions (tests/browser/recorded_replay.py): the
execution order is the op stats' start order, a while-loop node counts its iterations, a
transfer is in flight exactly from its send's start to its recv's end, the curve and alerts
stop at the step, and empty, one-step, untraced and damaged inputs give plain answers."""

from __future__ import annotations

import numpy as np
import pytest
import recorded_replay

from engine.record import open_run
from engine.record.schema import AlertRecord, OpStatRecord, PlanRecord, StepRecord
from viz import replay
from viz.hierarchy import build_hierarchy, default_expansion, hierarchy_view
from viz.timeline import StepTrace


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_replay.record_replay_runs(tmp_path_factory.mktemp("replay"))


def _trace(runs, step: int) -> StepTrace:
    reader = open_run(runs.logdir / runs.run)
    plan = next(record.plan for record in reader.steps() if record.step == step)
    return StepTrace(runs.run, step, tuple(reader.step_stats(step)),
                     tuple(reader.transfers(step)), tuple(reader.cut_edges(plan)),
                     tuple(reader.devices()))


def test_execution_order_is_the_order_of_first_starts(runs):
    trace = _trace(runs, 2)
    order = replay.execution_order(trace)
    first = {}
    for stat in trace.stats:
        if not stat.op.startswith("_"):
            first.setdefault(stat.node, stat.start_us)
            first[stat.node] = min(first[stat.node], stat.start_us)
    assert sorted(order) == sorted(first)
    assert [first[node] for node in order] == sorted(first.values())
    assert not any(node.startswith("_arg") or "/_" in node for node in order)
    assert order.index("layer1/MatMul") < order.index("layer2/MatMul") < order.index("total")


def test_nodes_are_pending_then_running_then_done_at_the_playhead(runs):
    trace = _trace(runs, 2)
    matmul = next(stat for stat in trace.stats if stat.node == "layer1/MatMul")
    before = replay.node_states(trace, matmul.start_us - 0.001)["layer1/MatMul"]
    during = replay.node_states(trace, (matmul.start_us + matmul.end_us) / 2)["layer1/MatMul"]
    after = replay.node_states(trace, matmul.end_us)["layer1/MatMul"]
    assert (before.state, during.state, after.state) == (replay.PENDING, replay.RUNNING,
                                                         replay.DONE)
    assert after.first_start_us == matmul.start_us and after.busy_us == pytest.approx(
        matmul.end_us - matmul.start_us)
    assert after.device.endswith("GPU:0")
    at_end = replay.node_states(trace, None)
    assert {node.state for node in at_end.values()} == {replay.DONE}


def test_a_loop_node_counts_its_iterations(runs):
    trace = _trace(runs, 4)
    node = runs.loop_node
    runs_of = sorted((s for s in trace.stats if s.node == node), key=lambda s: s.start_us)
    assert len(runs_of) == recorded_replay.LOOP_ITERATIONS
    between = (runs_of[1].end_us + runs_of[2].start_us) / 2
    state = replay.node_states(trace, between)[node]
    assert (state.state, state.done, state.runs) == (replay.RUNNING, 2, 4)
    last = replay.node_states(trace, runs_of[-1].end_us)[node]
    assert (last.state, last.done) == (replay.DONE, 4)
    assert last.busy_us == pytest.approx(sum(s.end_us - s.start_us for s in runs_of))
    assert replay.node_states(trace, runs_of[0].start_us - 1)[node].state == replay.PENDING


def test_transfers_are_in_flight_exactly_between_send_start_and_recv_end(runs):
    trace = _trace(runs, 2)
    flights = replay.flights(trace)
    assert len(flights) == 4
    stats = {stat.node: stat for stat in trace.stats}
    for flight, cut in zip(flights, sorted(trace.cut_edges, key=lambda c: stats[
            c.send_node].start_us)):
        assert flight.start_us == stats[cut.send_node].start_us
        assert flight.end_us == stats[cut.recv_node].end_us
        assert flight.bytes == 1024 and flight.src_device == cut.src_device
        assert flight.consumers == tuple(dict.fromkeys(cut.consumers))
        assert flight in replay.in_flight(flights, flight.start_us)
        assert flight in replay.in_flight(flights, (flight.start_us + flight.end_us) / 2)
        assert flight not in replay.in_flight(flights, flight.end_us)
        assert flight not in replay.in_flight(flights, flight.start_us - 0.001)
    assert replay.in_flight(flights, None) == ()
    tanh = next(f for f in flights if f.producer == "layer2/Tanh")
    assert tanh.consumers == ("total",) and tanh.dst_device.endswith("CPU:0")


def test_in_flight_transfers_light_the_drawn_cut_edges(runs):
    reader = open_run(runs.logdir / runs.run)
    tree = build_hierarchy(reader.graph())
    view = hierarchy_view(tree, default_expansion(tree))
    edge_ids = [f"{edge.src}->{edge.dst}" for edge in view.edges]
    trace = _trace(runs, 2)
    fed = next(f for f in replay.flights(trace) if f.producer.startswith("_arg_x"))
    assert replay.fed_node(fed.producer) == "x"
    state = replay.step_state(2, trace, fed.start_us)
    lit = replay.flight_edge_ids(state, view.rep, edge_ids)
    assert f"{view.rep['x']}->{view.rep['layer1/MatMul']}" in lit
    assert set(lit) <= set(edge_ids)
    leaves = replay.leaf_states(state, view.rep)
    assert leaves[view.rep["loss"]] == replay.PENDING
    assert leaves[view.rep["x"]] == replay.IDLE        # a fed placeholder does not run
    rules = replay.replay_rules(leaves, lit)
    flight_rule = rules[-1]
    assert flight_rule["style"]["line-color"] == replay.FLIGHT_COLOR
    assert f'edge[id = "{lit[0]}"]' in flight_rule["selector"]


def test_step_state_clamps_the_playhead_and_knows_untraced_steps(runs):
    trace = _trace(runs, 2)
    span = replay.span_us(trace)
    assert span == max(stat.end_us for stat in trace.stats)
    assert replay.step_state(2, trace, span + 5).at_us is None
    assert replay.step_state(2, trace, -3).at_us == 0.0
    assert all(n.state == replay.PENDING for n in replay.step_state(2, trace, 0).nodes.values()
               if n.first_start_us > 0)
    untraced = replay.step_state(3, None, 100.0)
    assert (untraced.traced, untraced.nodes, untraced.in_flight) == (False, {}, ())
    empty = replay.step_state(3, StepTrace("r", 3, ()), 5.0)
    assert not empty.traced


def test_steps_snap_to_the_nearest_recorded_one(runs):
    numbers = replay.step_numbers(open_run(runs.logdir / runs.run).steps())
    assert numbers == list(runs.steps)
    assert replay.snapped_step(numbers, None) == 1
    assert replay.snapped_step(numbers, 4) == 4
    assert replay.snapped_step(numbers, 10 ** 12) == 6
    assert replay.snapped_step([1, 3, 7], 2) == 1 and replay.snapped_step([1, 3, 7], 6) == 7
    assert replay.snapped_step([], 3) is None
    one = replay.step_numbers(open_run(runs.logdir / runs.one_step).steps())
    assert one == [1] and replay.snapped_step(one, 99) == 1
    assert replay.step_numbers(open_run(runs.logdir / runs.no_steps).steps()) == []
    assert replay.nearest_traced([2, 4], 3) == 2 and replay.nearest_traced([], 3) is None


def test_an_untraced_step_names_the_traced_ones():
    assert replay.untraced_text(57, [0, 100, 299]) == (
        "Step 57 was not traced; traced steps: 0, 100, 299.")
    assert replay.untraced_text(5, []) == "Step 5 was not traced; no step of this run was traced."
    many = replay.untraced_text(500, list(range(0, 2000, 100)))
    assert many == ("Step 500 was not traced; traced steps: 0, 100, 200, 300, 400, 500, 600, "
                    "700, 800, 900 (of 20).")


def test_the_curve_stops_at_the_step(runs):
    steps, values = open_run(runs.logdir / runs.run).scalars("loss")
    cut_steps, cut_values = replay.curve_until(steps, values, 3)
    assert cut_steps.tolist() == [1, 2, 3]
    assert cut_values.tolist() == pytest.approx(values[:3].tolist())
    assert replay.curve_until(steps, values, 0)[0].size == 0
    shuffled = replay.curve_until(np.array([3, 1, 2]), np.array([30.0, 10.0, 20.0]), 2)
    assert shuffled[0].tolist() == [1, 2] and shuffled[1].tolist() == [10.0, 20.0]
    figure = replay.replay_curve_figure("loss", steps, values, 3, alert_step=None)
    assert figure["data"][0]["x"] == [1, 2, 3]
    assert figure["layout"]["xaxis"]["range"] == [1.0, 6.0]  # the whole run: it grows in place
    longer = replay.replay_curve_figure("loss", steps, values, 3, last_step=9)
    assert longer["layout"]["xaxis"]["range"] == [1.0, 9.0]  # steps past the last point
    nan = replay.replay_curve_figure("loss", np.array([1, 2]), np.array([1.0, np.nan]), 2)
    assert nan["data"][0]["y"] == [1.0, None]                # JSON has no NaN


def test_the_curve_tag_prefers_loss():
    assert replay.curve_tag(["accuracy", "train/loss", "loss"]) == "loss"
    assert replay.curve_tag(["accuracy", "train/loss"]) == "train/loss"
    assert replay.curve_tag(["accuracy", "xent_loss_avg"]) == "xent_loss_avg"
    assert replay.curve_tag(["accuracy", "lr"]) == "accuracy"
    assert replay.curve_tag([]) is None


def test_alerts_appear_up_to_the_step(runs):
    alerts = open_run(runs.logdir / runs.alert_run).alerts()
    assert replay.first_alert_step(alerts) == runs.alert_step
    assert replay.alerts_until(alerts, runs.alert_step - 1) == []
    assert [a.step for a in replay.alerts_until(alerts, runs.alert_step)] == [runs.alert_step]
    assert replay.first_alert_step([]) is None
    late = AlertRecord(9, "n", "Log", "/cpu:0", "nan", "m", seq=2)
    early = AlertRecord(4, "m", "Log", "/cpu:0", "nan", "m", seq=5)
    assert replay.alerts_until([late, early], 9) == [early, late]
    steps, values = open_run(runs.logdir / runs.alert_run).scalars("train/loss")
    figure = replay.replay_curve_figure("train/loss", steps, values, 3, runs.alert_step)
    lines = [shape["x0"] for shape in figure["layout"]["shapes"]]
    assert lines == [3, runs.alert_step]


def test_the_graph_version_in_force_is_the_steps_plan(runs):
    reader = open_run(runs.logdir / runs.run)
    record = replay.step_record(reader.steps(), 3)
    version = replay.graph_version_at(record, reader.plans())
    assert version == reader.graph().version
    assert replay.graph_version_at(None, reader.plans()) is None
    plans = [PlanRecord(1, 2, (), (), (), ()), PlanRecord(2, 5, (), (), (), ())]
    assert replay.graph_version_at(StepRecord(7, 2, 0.0, 1.0, 0, 0), plans) == 5
    assert replay.graph_version_at(StepRecord(7, 9, 0.0, 1.0, 0, 0), plans) is None
    repeated = [StepRecord(3, 1, 0.0, 1.0, 0, 0, seq=1), StepRecord(3, 2, 0.0, 1.0, 0, 0, seq=8)]
    assert replay.step_record(repeated, 3).plan == 2
    assert replay.traced_spans(repeated, [3]) == {3: 1.0}


def test_damaged_traces_give_what_they_can():
    """A recv with no send (a step cut short), an end before its start, an empty step."""
    stats = (OpStatRecord(1, "a", "Add", "/cpu:0", 5.0, 3.0, 4),
             OpStatRecord(1, "a/_1", "_Recv", "/cpu:0", 1.0, 2.0, 4))
    trace = StepTrace("r", 1, stats)
    assert replay.flights(trace) == []
    state = replay.step_state(1, trace, 4.0)
    assert state.nodes["a"].state == replay.PENDING and state.nodes["a"].busy_us == 0.0
    assert replay.step_state(1, trace, 5.0).at_us is None    # the span ends at 5
    assert replay.step_state(1, trace, 5.0).nodes["a"].state == replay.DONE
    assert replay.leaf_states(state, {"a": "s", "b": "s", "c": "c"}) == {"s": replay.PENDING,
                                                                         "c": replay.IDLE}
    mixed = replay.step_state(1, StepTrace("r", 1, stats + (
        OpStatRecord(1, "b", "Add", "/cpu:0", 0.0, 1.0, 4),)), 2.0)
    assert replay.leaf_states(mixed, {"a": "s", "b": "s"}) == {"s": replay.RUNNING}
    assert replay.leaf_states(mixed, {"b": "s"}) == {"s": replay.DONE}


def test_quoted_ids_cannot_break_the_selector():
    rules = replay.replay_rules({'we"ird\\': replay.DONE, "p": replay.PENDING}, [])
    assert rules == [{"selector": 'node[id = "p"]', "style": {
        "background-color": replay.PENDING_COLOR, "color": "#555555"}}]
    rules = replay.replay_rules({'we"ird': replay.IDLE}, [])
    assert rules[0]["selector"] == 'node[id = "we\\"ird"]'


def test_the_curve_is_cut_where_the_step_ended_not_by_step_number(tmp_path):
    # Logged by the training counter while Session steps also count the initializer and
    # evaluation runs: each step shows exactly the points logged before it ended.
    name = recorded_replay.record_training_counter_run(tmp_path)
    reader = open_run(tmp_path / name)
    steps, values, walls = reader.scalar_series("loss")
    by_wall = sorted(zip(walls.tolist(), steps.tolist()))
    differs = False
    for record in reader.steps():
        end = replay.step_end_wall(record)
        assert end == pytest.approx(record.wall_start + record.duration_us / 1e6)
        figure = replay.replay_curve_figure("loss", steps, values, record.step,
                                            walls=walls, cut=replay.CurveCut(end))
        shown = figure["data"][0]["x"]
        logged = [step for wall, step in by_wall if wall <= end]
        assert shown == sorted(logged)
        if shown:
            last_wall = walls[steps.tolist().index(shown[-1])]
            assert last_wall <= end
            assert figure["layout"]["shapes"][0]["x0"] == shown[-1]
        later = [wall for wall, _step in by_wall if wall > end]
        assert all(wall > end for wall in later) and len(shown) + len(later) == len(steps)
        by_step = replay.replay_curve_figure("loss", steps, values, record.step)
        differs = differs or by_step["data"][0]["x"] != shown
    assert differs, "the two numberings should differ in this run"
    last = reader.steps()[-1]
    whole = replay.replay_curve_figure("loss", steps, values, last.step, walls=walls,
                                       cut=replay.CurveCut(replay.step_end_wall(last)))
    # The last run's own loss is logged after it ended: the curve ends one point short.
    assert whole["data"][0]["x"] == sorted(steps.tolist())[:-1]
    assert whole["layout"]["xaxis"]["range"] == [0.0, float(steps.max())]


def test_the_alert_line_stands_at_what_was_logged_when_it_fired(runs):
    reader = open_run(runs.logdir / runs.alert_run)
    steps, values, walls = reader.scalar_series("train/loss")
    ends = {record.step: replay.step_end_wall(record) for record in reader.steps()}
    before = replay.replay_curve_figure(
        "train/loss", steps, values, runs.alert_step - 1, walls=walls,
        cut=replay.CurveCut(ends[runs.alert_step - 1], ends[runs.alert_step]))
    assert len(before["layout"]["shapes"]) == 1                 # not reached yet
    at = replay.replay_curve_figure(
        "train/loss", steps, values, runs.alert_step, walls=walls,
        cut=replay.CurveCut(ends[runs.alert_step], ends[runs.alert_step]))
    assert at["data"][0]["x"] == [1, 2]
    assert [shape["x0"] for shape in at["layout"]["shapes"]] == [2.0, 2.0]
