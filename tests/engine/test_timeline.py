"""StepStats -> Chrome trace: byte-for-byte TF's output for the same step stats (golden file
made with tensorflow 2.21's python/client/timeline.py), and a traced Session step."""

from __future__ import annotations

import json
import pathlib

import pytest

import engine as tf
from engine.runtime.config import DeviceStepStats, NodeExecStats, NodeOutput, StepStats
from engine.runtime.timeline import Timeline

GOLDEN = pathlib.Path(__file__).parent / "golden" / "timeline_tf_2_21.json"
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"


def _node(name, start, dur, label, outputs):
    return NodeExecStats(node_name=name, all_start_micros=start, op_start_rel_micros=0,
                         op_end_rel_micros=dur, all_end_rel_micros=dur, timeline_label=label,
                         thread_id=0, output=[NodeOutput(i, b) for i, b in enumerate(outputs)])


def _step_stats() -> StepStats:
    """The same stats the golden file was generated from: overlapping CPU ops (two lanes), a
    two-output op, a Send/Recv pair and a GPU consumer of a CPU tensor."""
    cpu = DeviceStepStats(CPU, [
        _node("x", 100, 5, "x = Const()", [16]),
        _node("y", 102, 10, "y = Const()", [16]),
        _node("add", 113, 4, "add = Add(x, y)", [16]),
        _node("split", 118, 3, "split = Split(add)", [8, 8]),
        _node("send", 122, 2, f"send = _Send(split:1 @{GPU}", []),
    ])
    gpu = DeviceStepStats(GPU, [
        _node("recv", 123, 3, f"recv = _Recv(split:1 @{CPU}", [8]),
        _node("mul", 127, 6, "mul = Mul(recv, add)", [8]),
        _node("mul2", 128, 2, "mul2 = Mul(split:1, mul)", [8]),
    ])
    return StepStats([cpu, gpu])


@pytest.mark.parametrize("variant,show_dataflow,show_memory", [
    ("dataflow", True, False), ("memory", False, True), ("both", True, True),
    ("plain", False, False)])
def test_chrome_trace_is_tfs_byte_for_byte(variant, show_dataflow, show_memory):
    want = json.loads(GOLDEN.read_text())[variant]
    got = Timeline(_step_stats()).generate_chrome_trace_format(show_dataflow=show_dataflow,
                                                               show_memory=show_memory)
    assert got == want


def test_trace_rules_lanes_and_arrows():
    events = json.loads(Timeline(_step_stats()).generate_chrome_trace_format())["traceEvents"]
    ops = {e["args"]["name"]: e for e in events if e["ph"] == "X"}
    # y starts while x still runs, so it takes a second lane; add fits the first again.
    assert (ops["x"]["tid"], ops["y"]["tid"], ops["add"]["tid"]) == (0, 1, 0)
    assert ops["add"]["args"] == {"name": "add", "op": "Add", "input0": "x", "input1": "y"}
    assert ops["recv"]["name"] == "unknown"   # TF's Recv label has no closing parenthesis
    assert ops["mul"]["pid"] == 3 and ops["x"]["pid"] == 1
    arrows = [(e["ph"], e["name"], e["pid"]) for e in events if e.get("cat") == "DataFlow"]
    assert ("s", "y", 1) in arrows and ("t", "add", 3) in arrows   # y: lane 1 -> lane 0


def test_timeline_of_a_traced_two_device_step():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            a = tf.constant([1.0, 2.0], name="a")
        with tf.device("/gpu:0"):
            b = tf.multiply(a, 3.0, name="b")
        with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
            meta = tf.RunMetadata()
            sess.run(b, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=meta)
    trace = json.loads(Timeline(meta.step_stats).generate_chrome_trace_format())
    pids = {e["args"]["name"]: e["pid"] for e in trace["traceEvents"] if e["ph"] == "M"}
    assert f"{CPU} Compute" in pids and f"{GPU} Compute" in pids
    ops = {e["args"]["name"]: e for e in trace["traceEvents"] if e["ph"] == "X"}
    assert ops["b"]["pid"] == pids[f"{GPU} Compute"]
    assert ops["b"]["name"] == "Mul" and ops["b"]["dur"] >= 0


def test_other_op_times_are_refused_by_name():
    with pytest.raises(ValueError, match="op_time='gpu'"):
        Timeline(_step_stats()).generate_chrome_trace_format(op_time="gpu")
