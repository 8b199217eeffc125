"""The timeline of a traced step: lanes per device (and task), rows that keep overlapping
executions apart, Send/Recv executions paired into transfers (once per loop iteration), the
plotly figure, and the Chrome trace JSON checked against the trace-event format and against
the engine's TF Timeline for the same stats."""

from __future__ import annotations

import json
from numbers import Number

from engine.record.schema import CutEdgeRecord, DeviceRecord, OpStatRecord, TransferRecord
from engine.runtime.config import DeviceStepStats, NodeExecStats, NodeOutput, StepStats
from engine.runtime.timeline import Timeline
from viz.timeline import (
    OP,
    TRANSFER,
    TRANSFER_LEGEND,
    StepTrace,
    chrome_trace,
    lane_label,
    step_transfers,
    timeline_figure,
    timeline_layout,
    timeline_summary,
)

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
KEY = f"{GPU0};0000000000000001;{GPU1};edge_3_double;0:0"
DEVICES = (DeviceRecord(CPU0, "CPU", 0, "host", False),
           DeviceRecord(GPU0, "GPU", 0, "virtual GPU", True),
           DeviceRecord(GPU1, "GPU", 1, "virtual GPU", True))


def stat(node, op, device, start, end, nbytes=16) -> OpStatRecord:
    return OpStatRecord(7, node, op, device, float(start), float(end), nbytes)


def loop_trace() -> StepTrace:
    """x on CPU:0; on GPU:0 `double` and `other` overlap, and a loop sends `double` to GPU:1
    on each of three iterations (the third Recv has no transfer record)."""
    stats = [
        stat("x", "Placeholder", CPU0, 1, 3),
        stat("double", "Mul", GPU0, 10, 30),
        stat("other", "Add", GPU0, 12, 20),          # overlaps `double`: a second row
        stat("late", "Neg", GPU0, 31, 35),           # after both: back on the first row
    ]
    for i in range(3):
        stats.append(stat("double/_2", "_Send", GPU0, 40 + 10 * i, 42 + 10 * i, 0))
        stats.append(stat("double/_3", "_Recv", GPU1, 43 + 10 * i, 45 + 10 * i, 12))
        stats.append(stat("while/acc", "Add", GPU1, 46 + 10 * i, 48 + 10 * i, 12))
    edge = CutEdgeRecord(1, "double:0", GPU0, GPU1, "double/_2", "double/_3", KEY, "float32",
                         (3,), ("while/acc",), 12)
    transfers = (TransferRecord(7, KEY, "edge_3_double", GPU0, GPU1, 100),
                 TransferRecord(7, KEY, "edge_3_double", GPU0, GPU1, 200))
    return StepTrace("probe", 7, tuple(stats), transfers, (edge, edge), DEVICES, 1.7e9)


def test_lanes_follow_device_order_and_overlaps_get_their_own_row():
    trace = loop_trace()
    layout = timeline_layout(trace)
    assert [(lane.label, lane.first_row, lane.rows) for lane in layout.lanes] == [
        ("CPU:0", 0, 1), ("GPU:0 (virtual)", 1, 2), ("GPU:1 (virtual)", 3, 1)]
    rows = dict(zip((s.node for s in trace.stats), layout.rows))
    assert (rows["double"], rows["other"], rows["late"]) == (1, 2, 1)
    for row in set(layout.rows):
        spans = sorted((s.start_us, s.end_us) for s, r in zip(trace.stats, layout.rows)
                       if r == row)
        assert all(a_end < b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))


def test_several_tasks_name_job_and_task_and_group_lanes_by_task():
    worker = "/job:worker/replica:0/task:{}/device:{}"
    stats = (stat("a", "MatMul", worker.format(1, "GPU:0"), 1, 2),
             stat("b", "MatMul", worker.format(0, "GPU:0"), 1, 2),
             stat("c", "Add", worker.format(0, "CPU:0"), 1, 2),
             stat("d", "Add", "/job:ps/replica:0/task:0/device:CPU:0", 1, 2))
    layout = timeline_layout(StepTrace("r", 1, stats))
    assert [lane.label for lane in layout.lanes] == [
        "ps/0 CPU:0", "worker/0 CPU:0", "worker/0 GPU:0", "worker/1 GPU:0"]
    assert lane_label(CPU0, several_tasks=True) == "localhost/0 CPU:0"
    assert lane_label(GPU1, several_tasks=False, virtual=True) == "GPU:1 (virtual)"


def test_each_loop_send_pairs_with_its_recv_once_per_iteration():
    transfers = step_transfers(loop_trace())
    assert [(t.send.start_us, t.recv.start_us) for t in transfers] == [
        (40.0, 43.0), (50.0, 53.0), (60.0, 63.0)]
    # Bytes from the step's transfers in order; the third falls back to the Recv's output.
    assert [t.bytes for t in transfers] == [100, 200, 12]
    assert {t.tensor for t in transfers} == {"double:0"}


def test_figure_draws_a_bar_per_execution_and_arrows_from_send_end_to_recv_end():
    trace = loop_trace()
    figure = timeline_figure(trace)
    bars = [t for t in figure.data if t.type == "bar"]
    assert [bar.name for bar in bars] == ["CPU:0", "GPU:0 (virtual)", "GPU:1 (virtual)"]
    assert sum(len(bar.x) for bar in bars) == len(trace.stats)
    custom = [tuple(row) for bar in bars for row in bar.customdata]
    loop_runs = [row for row in custom if row[1] == "while/acc"]
    assert [row[4] for row in loop_runs] == ["46.0", "56.0", "66.0"]    # once per iteration
    assert all(row[0] == OP for row in custom)
    double = next(row for row in custom if row[1] == "double")
    assert double == (OP, "double", "Mul", "GPU:0 (virtual)", "10.0", "20.0", "16", "double")
    send = next(row for row in custom if row[1] == "double/_2")
    assert send[7] == "double"      # a click on a Send/Recv opens the tensor's producer
    gpu0 = bars[1]
    assert list(gpu0.base[:2]) == [10.0, 12.0] and list(gpu0.x[:2]) == [20.0, 8.0]
    (arrows,) = [t for t in figure.data if t.name == TRANSFER_LEGEND]
    assert list(arrows.x) == [42.0, 45.0, None, 52.0, 55.0, None, 62.0, 65.0, None]
    assert list(arrows.y) == [1.0, 3.0, None] * 3        # GPU:0's first row -> GPU:1's row
    assert tuple(arrows.customdata[0]) == (TRANSFER, "double:0", "GPU:0 (virtual)",
                                           "GPU:1 (virtual)", "100", "42.0", "45.0", "3.0")
    assert list(figure.layout.yaxis.ticktext) == ["CPU:0", "GPU:0 (virtual)", "GPU:1 (virtual)"]
    assert figure.layout.yaxis.fixedrange and figure.layout.barmode == "overlay"


def test_summary_counts_executions_transfers_and_span():
    assert timeline_summary(loop_trace()) == (
        "step 7: 13 op executions on 3 devices, 3 transfers (312 bytes), 67.0 µs")
    assert timeline_summary(StepTrace("r", 2, ())) == "step 2: no op executions recorded"


# The trace-event format (Chrome's "Trace Event Format" document, as Perfetto imports it):
# required keys and their types per phase.
_NUMBER, _TEXT, _ID = (Number,), (str,), (int, str)
_REQUIRED = {
    "X": {"name": _TEXT, "ph": _TEXT, "ts": _NUMBER, "dur": _NUMBER, "pid": (int,),
          "tid": (int,)},
    "M": {"name": _TEXT, "ph": _TEXT, "pid": (int,), "args": (dict,)},
    "s": {"name": _TEXT, "cat": _TEXT, "ph": _TEXT, "ts": _NUMBER, "pid": (int,),
          "tid": (int,), "id": _ID},
    "f": {"name": _TEXT, "cat": _TEXT, "ph": _TEXT, "ts": _NUMBER, "pid": (int,),
          "tid": (int,), "id": _ID},
}
_METADATA_ARGS = {"process_name": "name", "thread_name": "name", "process_sort_index":
                  "sort_index", "thread_sort_index": "sort_index"}


def trace_event_problems(doc) -> list[str]:
    """Every way `doc` breaks the trace-event format (empty when it is a valid trace)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not an object with a traceEvents list"]
    problems, starts, finishes = [], {}, {}
    for k, event in enumerate(doc["traceEvents"]):
        phase = event.get("ph") if isinstance(event, dict) else None
        if phase not in _REQUIRED:
            problems.append(f"event {k}: unknown phase {phase!r}")
            continue
        for key, types in _REQUIRED[phase].items():
            value = event.get(key)
            if not isinstance(value, types) or isinstance(value, bool):
                problems.append(f"event {k} ({phase}): {key} is {value!r}")
        if phase == "X" and isinstance(event.get("dur"), Number) and event["dur"] < 0:
            problems.append(f"event {k}: negative dur {event['dur']}")
        if phase == "M" and _METADATA_ARGS.get(event.get("name")) not in event.get("args", {}):
            problems.append(f"event {k}: metadata {event.get('name')!r} without its argument")
        if phase in "sf":
            ends = starts if phase == "s" else finishes
            flow = (event.get("cat"), event.get("id"))
            if flow in ends:
                problems.append(f"event {k}: flow id {flow} repeats its {phase}")
            ends[flow] = event
    for flow, start in starts.items():
        finish = finishes.get(flow)
        if finish is None:
            problems.append(f"flow {flow} starts but never finishes")
        elif finish["ts"] < start["ts"]:
            problems.append(f"flow {flow} finishes before it starts")
    problems += [f"flow {flow} finishes but never starts" for flow in finishes.keys() - starts]
    return problems


def test_chrome_trace_is_a_valid_trace_event_file():
    doc = json.loads(json.dumps(chrome_trace(loop_trace())))      # what the download holds
    assert trace_event_problems(doc) == []
    events = doc["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == 13
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {1: f"{CPU0} Compute", 2: f"{GPU0} Compute", 3: f"{GPU1} Compute"}
    threads = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    assert threads == {(1, 0), (2, 0), (2, 1), (3, 0)}
    assert {(e["pid"], e["tid"]) for e in complete} == threads
    double = next(e for e in complete if e["args"]["name"] == "double")
    assert double == {"ph": "X", "cat": "Op", "name": "Mul", "pid": 2, "tid": 0, "ts": 10.0,
                      "dur": 20.0, "args": {"name": "double", "op": "Mul", "device": GPU0,
                                            "output_bytes": 16}}
    starts = [e for e in events if e["ph"] == "s"]
    finishes = [e for e in events if e["ph"] == "f"]
    assert [(e["pid"], e["ts"]) for e in starts] == [(2, 42.0), (2, 52.0), (2, 62.0)]
    assert [(e["pid"], e["ts"], e["bp"]) for e in finishes] == [
        (3, 45.0, "e"), (3, 55.0, "e"), (3, 65.0, "e")]
    assert doc["otherData"] == {"run": "probe", "step": 7, "wall_start": 1.7e9}


def test_the_validator_catches_what_breaks_a_trace():
    good = chrome_trace(loop_trace())
    assert trace_event_problems({"events": []}) == ["not an object with a traceEvents list"]
    unfinished = [e for e in good["traceEvents"] if e["ph"] != "f"]
    assert "never finishes" in trace_event_problems({"traceEvents": unfinished})[0]
    bad = [{**e, "dur": -1.0} if e["ph"] == "X" else e for e in good["traceEvents"]]
    assert any("negative dur" in p for p in trace_event_problems({"traceEvents": bad}))
    untyped = [{"ph": "X", "name": "Mul", "ts": "10", "dur": 1, "pid": 1, "tid": 0}]
    assert trace_event_problems({"traceEvents": untyped}) == ["event 0 (X): ts is '10'"]


def test_a_negative_duration_is_drawn_and_exported_as_zero():
    trace = StepTrace("r", 1, (stat("clock_skew", "Add", CPU0, 10, 9),))
    (bar,) = timeline_figure(trace).data
    assert list(bar.x) == [0.0]
    assert trace_event_problems(chrome_trace(trace)) == []


def _tf_step_stats(trace: StepTrace) -> StepStats:
    """The same executions as TF's StepStats (integer microseconds, as TF records them)."""
    by_device: dict[str, DeviceStepStats] = {}
    for s in sorted(trace.stats, key=lambda s: s.start_us):
        dev = by_device.setdefault(s.device, DeviceStepStats(s.device))
        dur = int(s.end_us - s.start_us)
        dev.node_stats.append(NodeExecStats(
            s.node, int(s.start_us), 0, dur, dur, f"{s.node} = {s.op}()", 0,
            [NodeOutput(0, s.output_bytes)], s.op))
    return StepStats([by_device[d] for d in (CPU0, GPU0, GPU1)])


def test_ops_and_lanes_match_the_engines_tf_timeline_for_the_same_stats():
    """Same op events as TF's Timeline (cat, name, lane, ts, dur, args name/op) and the same
    process names; TF counts pids from its Allocators process and two per device."""
    trace = loop_trace()
    ours = chrome_trace(trace)["traceEvents"]
    theirs = json.loads(Timeline(_tf_step_stats(trace)).generate_chrome_trace_format(
        show_dataflow=False))["traceEvents"]

    def processes(events):
        return {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}

    def ops(events, pids):
        return sorted((pids[e["pid"]], e["tid"], e["cat"], e["name"], e["ts"], e["dur"],
                       e["args"]["name"], e["args"]["op"]) for e in events if e["ph"] == "X")

    our_pids, their_pids = processes(ours), processes(theirs)
    assert set(our_pids.values()) <= set(their_pids.values())
    assert ops(ours, our_pids) == ops(theirs, their_pids)
