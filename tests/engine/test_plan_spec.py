"""The plan as data: a PlanSpec (pruned graph, placement, one partition GraphDef per device with
its Send/Recv keys in attrs, executor kinds) round-trips through JSON, and a Plan rebuilt from
the decoded spec alone gives bitwise the same results as the original: an MLP over a CPU and two
virtual GPUs, a cond across devices, a while loop fed from another device, a loop whose body
runs on another device."""

import json

import numpy as np
import pytest

import engine as tf
from engine.graph_def import graph_def_from_json, graph_def_to_json
from engine.graph_schema import GraphFileError
from engine.passes.partition import key_of
from engine.runtime.fetches import feed_value, to_numpy
from engine.runtime.partition_threads import PartitionThreads
from engine.runtime.plan import Plan
from engine.runtime.plan_spec import PlanSpec

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"


def mlp():
    rng = np.random.default_rng(0)
    x = tf.placeholder(tf.float32, [None, 8], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    with tf.device("/gpu:0"):
        w1 = tf.Variable(rng.standard_normal((8, 16)).astype(np.float32), name="w1")
        h = tf.nn.relu(tf.matmul(x, w1))
    with tf.device("/gpu:1"):
        w2 = tf.Variable(rng.standard_normal((16, 4)).astype(np.float32), name="w2")
        logits = tf.matmul(h, w2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    grads = tf.gradients(loss, [w1, w2])
    feeds = {x: rng.standard_normal((5, 8)).astype(np.float32),
             labels: np.array([0, 1, 2, 3, 1], np.int64)}
    return [loss, logits] + grads, feeds


def cond_across_devices():
    x = tf.placeholder(tf.float32, [3], name="x")
    with tf.device("/cpu:0"):
        pred = tf.reduce_sum(x) > 0.0
    with tf.device("/gpu:1"):
        out = tf.cond(pred, lambda: tf.square(x) * 3.0, lambda: tf.negative(x))
    big = tf.constant(np.arange(5000, dtype=np.float32), name="big")   # > the inline limit
    return [out, tf.reduce_sum(big)], {x: np.array([1.5, -0.25, 2.0], np.float32)}


def while_loop_from_another_device():
    with tf.device("/cpu:0"):
        start = tf.placeholder(tf.float32, [2], name="start")
    with tf.device("/gpu:0"):
        _, total = tf.while_loop(lambda i, v: i < 7, lambda i, v: (i + 1, v * 1.5 + 0.125),
                                 [tf.constant(0), start])
    with tf.device("/cpu:0"):
        out = total + 1.0
    return [out], {start: np.array([0.5, -2.0], np.float32)}


def the_plan(build):
    """The session's plan for the program's fetches and feeds, its session and feed values."""
    g = tf.Graph()
    with g.as_default():
        fetches, feeds = build()
        init = tf.global_variables_initializer()
        sess = tf.Session(config=tf.ConfigProto(virtual_gpus=2))
        sess.run(init)
        expected = sess.run(fetches, feeds)
        (plan,) = [p for p in sess._plans.values() if p.key.fetches]
        values = [feed_value(t, v) for t, v in feeds.items()]
    by_name = dict(zip(plan.key.feeds, values))
    ordered = [by_name[name] for name in plan.key.feeds]
    return sess, plan, ordered, expected


def run(plan, feeds):
    pool = PartitionThreads() if len(plan.partitions) > 1 else None
    return [to_numpy(v) for v in plan.run(feeds, pool, None)]


def loop_body_across_devices():
    """The loop on the CPU, its body's product on GPU:1: control loops and in-loop transfers."""
    with tf.device("/cpu:0"):
        start = tf.placeholder(tf.float32, [2], name="start")

        def body(i, v):
            with tf.device("/gpu:1"):
                return i + 1, v * 1.5 + 0.125
        _, total = tf.while_loop(lambda i, v: i < 7, body, [tf.constant(0), start])
    return [total], {start: np.array([0.5, -2.0], np.float32)}


PROGRAMS = [mlp, cond_across_devices, while_loop_from_another_device, loop_body_across_devices]


@pytest.mark.parametrize("build", PROGRAMS, ids=lambda f: f.__name__)
def test_a_plan_rebuilt_from_its_json_gives_bitwise_the_same_results(build):
    sess, plan, feeds, expected = the_plan(build)
    text = plan.spec.to_json()
    spec = PlanSpec.from_json(text)
    rebuilt = Plan.from_spec(spec, sess._devices_by_name, sess._variables)
    original, again = run(plan, feeds), run(rebuilt, feeds)
    for want, a, b in zip(expected, original, again):
        np.testing.assert_array_equal(a, want)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    kinds = [p.kind for p in rebuilt.partitions]
    assert kinds == [p.kind for p in plan.partitions]
    assert ("dynamic" in kinds) == (build is not mlp)
    assert spec.to_json() == text
    sess.close()


@pytest.mark.parametrize("build", PROGRAMS, ids=lambda f: f.__name__)
def test_every_partition_round_trips_through_the_graph_json_form(build):
    sess, plan, _, _ = the_plan(build)
    spec = PlanSpec.from_json(plan.spec.to_json())
    assert len(plan.spec.partitions) >= 2
    assert list(spec.partitions) == list(plan.spec.partitions)
    for device, nodes in plan.spec.partitions.items():
        decoded = spec.partitions[device]
        assert [(n.name, n.op, n.input, n.device) for n in decoded] == \
            [(n.name, n.op, n.input, n.device) for n in nodes]
        for a, b in zip(nodes, decoded):
            assert set(a.attr) == set(b.attr), a.name
            assert a.output_dtypes == b.output_dtypes and a.output_shapes == b.output_shapes
            if a.op in ("_Send", "_Recv"):
                assert b.meta["key"] == a.meta["key"] == key_of(b)
    assert spec.client.devices == plan.client.devices
    assert [(e.key, e.dtype, e.shape, e.consumers) for e in spec.cut_edges] == \
        [(e.key, e.dtype, e.shape, e.consumers) for e in plan.result.cut_edges]
    assert spec.executors == plan.spec.executors
    sess.close()


def test_a_partition_needs_the_runtime_flag_to_load():
    """Graph files may not hold the runtime's _Send/_Recv/_Arg/_Retval; a partition may."""
    sess, plan, _, _ = the_plan(cond_across_devices)
    text = graph_def_to_json(plan.spec.partition_graph(CPU0))
    with pytest.raises(GraphFileError, match="node name|Op type not registered"):
        graph_def_from_json(text)
    sess.close()


def test_a_damaged_plan_names_the_partition_and_field():
    sess, plan, _, _ = the_plan(mlp)
    doc = json.loads(plan.spec.to_json())
    send = next(n for n in doc["partitions"][1]["graph"]["node"] if n["op"] == "_Send")
    del send["attr"]["tensor_name"]
    with pytest.raises(GraphFileError, match=r"partitions\[1\].*missing attr 'tensor_name'"):
        PlanSpec.from_json(json.dumps(doc), "p.json")
    doc = json.loads(plan.spec.to_json())
    doc["partitions"][0]["executor"] = "jit"
    with pytest.raises(GraphFileError, match=r"unknown executor 'jit'"):
        PlanSpec.from_json(json.dumps(doc), "p.json")
    with pytest.raises(GraphFileError, match="not an engine.planspec document"):
        PlanSpec.from_json("{}", "p.json")
    sess.close()
