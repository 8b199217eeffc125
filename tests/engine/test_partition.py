"""Partitioning against TF_BEHAVIOUR section 3, and running partitioned graphs: Send/Recv
pairs, rendezvous keys, de-duplication, control edges, feeds on the client device, equal
numbers on one device and on three, no deadlock, and errors that abort the step."""

import threading

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.devices import discover_devices
from engine.passes.partition import partition, rendezvous_key
from engine.passes.place import place
from engine.passes.prune import prune

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"


def split(graph, fetches, feeds=(), gpus=2):
    gd = graph.as_graph_def()
    placement = place(gd, discover_devices(gpus)).as_dict()
    client = prune(gd, placement, list(feeds), list(fetches), [], CPU0)
    return partition(client)


def example2_graph():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            a = tf.constant([1.0, 2.0, 3.0], shape=[3], name="a")
            b = tf.constant([1.0, 2.0, 3.0], shape=[3], name="b")
        with tf.device("/gpu:1"):
            c = a + b
    return g, c


def test_example2_partitions_and_keys():
    g, c = example2_graph()
    result = split(g, ["add:0"])
    parts = {d: [(n.name, n.op) for n in nodes] for d, nodes in result.partitions.items()}
    assert parts[GPU1] == [("a/_1", "_Recv"), ("b/_3", "_Recv"), ("add", "Add"),
                           ("add/_4", "_Send")]
    assert parts[CPU0] == [("a", "Const"), ("b", "Const"), ("a/_0", "_Send"),
                           ("b/_2", "_Send"), ("add/_5", "_Recv"), ("_retval_add_0_0", "_Retval")]
    edges = {e.tensor: e for e in result.cut_edges}
    assert set(edges) == {"a:0", "b:0", "add:0"}
    assert edges["a:0"].key == (f"{CPU0};0000000000000001;{GPU1};edge_1_a;0:0")
    assert edges["a:0"].consumers == ("add",)
    add = next(n for n in result.partitions[GPU1] if n.name == "add")
    assert add.input == ["a/_1", "b/_3"]


def test_example2_runs_the_add_on_gpu1():
    g, c = example2_graph()
    with g.as_default(), tf.Session(config=tf.ConfigProto(virtual_gpus=2)) as sess:
        md = tf.RunMetadata()
        out = sess.run(c, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE,
                                                output_partition_graphs=True), run_metadata=md)
    assert out.tolist() == [2.0, 4.0, 6.0]
    devices = {d.device: [s.node_name for s in d.node_stats] for d in md.step_stats.dev_stats}
    assert "add" in devices[GPU1]
    assert len(md.partition_graphs) == 2
    recv_labels = [s.timeline_label for d in md.step_stats.dev_stats for s in d.node_stats
                   if s.node_name == "a/_1"]
    assert recv_labels == [f"a/_1 = _Recv(edge_1_a @{CPU0}"]


def test_rendezvous_key_format():
    assert rendezvous_key(CPU0, GPU0, "edge_7_a") == (
        f"{CPU0};0000000000000001;{GPU0};edge_7_a;0:0")


def test_one_transfer_per_tensor_and_destination():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            a = tf.constant([1.0], name="a")
        with tf.device("/gpu:0"):
            tf.negative(a, name="n1")
            tf.square(a, name="n2")
        with tf.device("/gpu:1"):
            tf.exp(a, name="n3")
    result = split(g, ["n1:0", "n2:0", "n3:0"])
    from_a = [e for e in result.cut_edges if e.tensor == "a:0"]
    assert sorted(e.dst_device for e in from_a) == [GPU0, GPU1]
    to_gpu0 = next(e for e in from_a if e.dst_device == GPU0)
    assert to_gpu0.consumers == ("n1", "n2")


def test_control_edge_crosses_as_const_and_identity():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            a = tf.constant([1.0], name="a")
        with tf.device("/gpu:0"), tf.control_dependencies([a]):
            tf.constant([2.0], name="b")
    result = split(g, ["b:0"])
    edge = next(e for e in result.cut_edges if e.tensor == "^a")
    cpu = {n.name: n for n in result.partitions[CPU0]}
    gpu = {n.name: n for n in result.partitions[GPU0]}
    dummy = cpu[result.partitions[CPU0][1].name]
    assert dummy.op == "Const" and dummy.input == ["^a"] and list(dummy.attr["value"].shape) == [0]
    ident = next(n for n in gpu.values() if n.op == "Identity")
    assert ident.input == [edge.recv_node]
    assert gpu["b"].input == [f"^{ident.name}"]
    assert edge.consumers == ("b",)


def test_fed_tensor_travels_from_client_device():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device("/gpu:1"):
            y = tf.negative(x, name="y")
        with tf.Session(config=tf.ConfigProto(virtual_gpus=2)) as sess:
            assert sess.run(y, {x: [1.0, 2.0]}).tolist() == [-1.0, -2.0]
    result = split(g, ["y:0"], feeds=["x:0"])
    edge = next(e for e in result.cut_edges if e.src_device == CPU0)
    assert edge.tensor == "_arg_x_0_0:0" and edge.dst_device == GPU1


def build_mlp(rng):
    x = tf.placeholder(tf.float32, [None, 8], name="x")
    w1 = tf.constant(rng.randn(8, 16).astype(np.float32))
    w2 = tf.constant(rng.randn(16, 4).astype(np.float32))
    with tf.device("/gpu:0"):
        h = tf.nn.relu(tf.matmul(x, w1))
    with tf.device("/gpu:1"):
        out = tf.nn.softmax(tf.matmul(h, w2))
    with tf.device("/cpu:0"):
        loss = tf.reduce_sum(out * out)
    return x, out, loss


def test_partitioned_run_equals_single_device_run():
    rng = np.random.RandomState(0)
    data = rng.randn(5, 8).astype(np.float32)
    results = []
    for gpus in (0, 2):
        g = tf.Graph()
        with g.as_default():
            x, out, loss = build_mlp(np.random.RandomState(1))
            config = tf.ConfigProto(virtual_gpus=gpus, allow_soft_placement=True)
            with tf.Session(config=config) as sess:
                results.append(sess.run([out, loss], {x: data}))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)


def test_ping_pong_between_devices_does_not_deadlock():
    g = tf.Graph()
    with g.as_default():
        v = tf.constant([1.0], name="v")
        for i in range(20):
            with tf.device("/gpu:0" if i % 2 else "/gpu:1"):
                v = tf.add(v, 1.0, name=f"step{i}")
        with tf.Session(config=tf.ConfigProto(virtual_gpus=2)) as sess:
            result = []
            worker = threading.Thread(target=lambda: result.append(sess.run(v)))
            worker.start()
            worker.join(timeout=30)
    assert not worker.is_alive(), "partitions deadlocked"
    assert result[0].tolist() == [21.0]


def test_error_in_one_partition_aborts_the_step():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/gpu:1"):
            v = tf.Variable([1.0], name="v")
        with tf.device("/cpu:0"):
            y = tf.negative(v, name="y")
        with tf.Session(config=tf.ConfigProto(virtual_gpus=2)) as sess:
            with pytest.raises(errors.FailedPreconditionError,
                               match="Attempting to use uninitialized value v"):
                sess.run(y)
            sess.run(v.initializer)
            assert sess.run(y).tolist() == [-1.0]


# -- location policies ------------------------------------------------------------------------

W0_CPU = "/job:worker/replica:0/task:0/device:CPU:0"
W0_GPU = "/job:worker/replica:0/task:0/device:GPU:0"
W1_CPU = "/job:worker/replica:0/task:1/device:CPU:0"
TASK0, TASK1 = "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"


def two_task_client():
    """a on task 0's CPU, b = a*2 on task 0's GPU, c = b+a on task 1's CPU; fetched on
    task 0's CPU (the client). Placement is given directly, so no real devices are needed."""
    g = tf.Graph()
    with g.as_default():
        a = tf.constant([1.0, 2.0], name="a")
        b = tf.multiply(a, 2.0, name="b")
        tf.add(b, a, name="c")
    gd = g.as_graph_def()
    placement = {n.name: W0_CPU for n in gd.node}
    placement.update({"b": W0_GPU, "b/y": W0_GPU, "c": W1_CPU})
    return prune(gd, placement, [], ["c:0"], [], W0_CPU)


def test_by_task_names_the_task_of_a_device():
    from engine.passes.partition import by_device, by_task
    assert by_task(W0_GPU) == TASK0 and by_task(W1_CPU) == TASK1
    assert by_device(W0_GPU) == W0_GPU


def test_by_device_makes_one_partition_per_device():
    result = partition(two_task_client())
    assert sorted(result.partitions) == sorted([W0_CPU, W0_GPU, W1_CPU])
    assert {(e.tensor, e.src_device, e.dst_device) for e in result.cut_edges} == {
        ("a:0", W0_CPU, W0_GPU), ("a:0", W0_CPU, W1_CPU), ("b:0", W0_GPU, W1_CPU),
        ("c:0", W1_CPU, W0_CPU)}


def test_by_task_keeps_send_recv_between_devices_of_one_task():
    from engine.passes.partition import by_task, key_of
    result = partition(two_task_client(), location=by_task)
    assert sorted(result.partitions) == [TASK0, TASK1]
    # The same cut edges as by device: a same-task, cross-device edge (a -> b) still crosses
    # by Send/Recv, as TF's per-task graphs do before the worker splits them by device.
    assert {(e.tensor, e.src_device, e.dst_device) for e in result.cut_edges} == {
        ("a:0", W0_CPU, W0_GPU), ("a:0", W0_CPU, W1_CPU), ("b:0", W0_GPU, W1_CPU),
        ("c:0", W1_CPU, W0_CPU)}
    task0 = {n.name: n for n in result.partitions[TASK0]}
    assert task0["b"].device == W0_GPU and task0["a"].device == W0_CPU
    assert task0["b"].input[0] != "a"        # a Recv on the GPU, not a direct edge
    sends = [n for nodes in result.partitions.values() for n in nodes if n.op == "_Send"]
    recvs = {n.attr["tensor_name"]: n for nodes in result.partitions.values() for n in nodes
             if n.op == "_Recv"}
    assert len(sends) == len(recvs) == 4
    for send in sends:
        recv = recvs[send.attr["tensor_name"]]
        assert key_of(send) == key_of(recv) == send.meta["key"] == recv.meta["key"]
        assert send.device == send.attr["send_device"]
        assert recv.device == recv.attr["recv_device"]
