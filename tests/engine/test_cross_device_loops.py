"""While loops whose body spans devices (TF's AddControlFlow): each device that receives a value
inside the loop runs a control loop of its own, driven by the loop's predicate, so each
in-loop transfer happens once per iteration under a `frame_id:iteration` key; results and
gradients match the same program on one device; nested loops, conds inside the loop (dead
tensors crossing), parallel iterations, concurrent steps and a JSON round trip of the plan."""

import threading

import numpy as np
import pytest

import engine as tf
from engine.kernels.control_flow import NO_VALUE
from engine.passes.cross_device_loops import CONTROL_LOOP_PREFIX
from engine.runtime import frames
from engine.runtime.rendezvous import Rendezvous, parse_key

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
FRAME = "while/while_context"


def _session(gpus: int = 2) -> tf.Session:
    """A deadlock fails the step instead of hanging the test run."""
    return tf.Session(config=tf.ConfigProto(virtual_gpus=gpus, operation_timeout_in_ms=60000))


def _plan(sess):
    """The plan of the session's latest step that fetched something."""
    return [p for p in sess._plans.values() if p.key.fetches][-1]


def _doubling_loop(n):
    """i, x = 0, 1; while i < n: x = 2x (on GPU:0); the loop itself on the CPU."""
    def body(i, x):
        with tf.device("/gpu:0"):
            y = x * 2.0
        return i + 1, y
    with tf.device("/cpu:0"):
        return tf.while_loop(lambda i, x: i < n, body, [0, 1.0])


def test_a_loop_whose_body_spans_two_devices_runs_and_gets_a_control_loop():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        i, x = _doubling_loop(n)
        with _session(1) as sess:
            assert sess.run([i, x], {n: 5}) == [5, 32.0]
            assert sess.run(x, {n: 0}) == 1.0       # no iteration: only the final predicate
            plan = _plan(sess)
    gpu = plan.spec.partitions[GPU0]
    control = [nd for nd in gpu if nd.name.startswith(CONTROL_LOOP_PREFIX)]
    assert sorted(nd.op for nd in control) == ["Const", "Enter", "Merge", "NextIteration",
                                               "Switch"]
    (merge,) = [nd for nd in control if nd.op == "Merge"]
    recvs = [nd for nd in gpu if nd.op == "_Recv"]
    assert recvs and all(f"^{merge.name}" in nd.input for nd in recvs)
    (switch,) = [nd for nd in control if nd.op == "Switch"]
    pred_recv = [nd for nd in recvs if nd.name == switch.input[1]]
    assert pred_recv and pred_recv[0].attr["send_device"] == CPU0   # the predicate, broadcast
    assert plan.spec.executors[GPU0] == "dynamic"
    # The loop's own control structure stays with its variables on the CPU.
    placed = plan.spec.client.devices
    for name in ("while/Enter_1", "while/Merge_1", "while/Switch_1", "while/NextIteration_1",
                 "while/Exit_1"):
        assert placed[name] == CPU0, name


def _recorded_sends(monkeypatch) -> list[tuple[str, bool]]:
    sent = []
    original = Rendezvous.send

    def send(self, key, value, dead=False):
        sent.append((key, dead or value is NO_VALUE))
        return original(self, key, value, dead)
    monkeypatch.setattr(Rendezvous, "send", send)
    return sent


def test_each_transfer_inside_the_loop_happens_once_per_iteration(monkeypatch):
    """5 iterations run the body; the 6th sees the predicate false: each in-loop edge
    crosses 6 times, keyed `frame_id:0` .. `frame_id:5`, the last one dead."""
    with tf.Graph().as_default():
        _, x = _doubling_loop(5)
        with _session(1) as sess:
            sent = _recorded_sends(monkeypatch)
            assert sess.run(x) == 32.0
    frame_id = frames.frame_instance_id(0, 0, FRAME)
    by_tensor: dict[tuple, list] = {}
    for key, dead in sent:
        parsed = parse_key(key)
        by_tensor.setdefault((parsed.src_device, parsed.tensor_name, parsed.frame_id),
                             []).append((parsed.iteration, dead))
    in_loop = {k: v for k, v in by_tensor.items() if k[2] == frame_id}
    # The predicate, x into the body, the body pivot's control edge to the constant 2.0 on
    # GPU:0 (TF's control transfer: a tiny Const sent over), and 2x back.
    assert len(in_loop) == 4
    for (_, tensor, _), seen in in_loop.items():
        assert [it for it, _ in seen] == list(range(6)), tensor
        is_predicate = "LoopCond" in tensor
        assert [dead for _, dead in seen] == [False] * 5 + [not is_predicate], tensor
    outside = [k for k in by_tensor if k[2] != frame_id]
    assert all(k[2] == 0 for k in outside)


def test_a_loop_local_to_one_device_gets_no_control_loop():
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            _, x = tf.while_loop(lambda i, x: i < 4, lambda i, x: (i + 1, x * 3.0), [0, 1.0])
        with tf.device("/cpu:0"):
            out = x + 1.0
        with _session(1) as sess:
            assert sess.run(out) == 82.0
            plan = _plan(sess)
    names = [nd.name for nodes in plan.spec.partitions.values() for nd in nodes]
    assert not [name for name in names if name.startswith(CONTROL_LOOP_PREFIX)]


def test_nested_loops_spanning_three_devices():
    """The inner trip count depends on the outer variable; the inner body runs on GPU:1, the
    outer body's update on GPU:0: control loops stack (outer Merge -> inner Enter)."""
    def reference(n):
        total = 0.0
        for j in range(n):
            acc = 1.0
            for _ in range(j + 1):
                acc = acc * 1.5
            total = total + acc
        return total

    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])

        def outer_body(j, total):
            def inner_body(k, acc):
                with tf.device("/gpu:1"):
                    return k + 1, acc * 1.5
            _, acc = tf.while_loop(lambda k, acc: k < j + 1, inner_body, [0, 1.0])
            with tf.device("/gpu:0"):
                return j + 1, total + acc
        with tf.device("/cpu:0"):
            _, total = tf.while_loop(lambda j, t: j < n, outer_body, [0, 0.0])
        with _session(2) as sess:
            for count in (0, 1, 4):
                assert sess.run(total, {n: count}) == pytest.approx(reference(count))
            plan = _plan(sess)
    on_gpu1 = [nd for nd in plan.spec.partitions[GPU1]
               if nd.name.startswith(CONTROL_LOOP_PREFIX) and nd.op == "Enter"]
    assert sorted(nd.attr["frame_name"] for nd in on_gpu1) == \
        ["while/while/while_context", "while/while_context"]
    inner_enter = [nd for nd in on_gpu1 if nd.attr["frame_name"] == "while/while/while_context"]
    by_name = {nd.name: nd for nd in plan.spec.partitions[GPU1]}
    assert by_name[inner_enter[0].input[0]].op == "Merge"     # the outer control loop's


def test_a_cond_inside_the_loop_sends_dead_tensors_across():
    """Odd iterations take the branch on GPU:0, even ones the CPU branch: the untaken side's
    transfers carry dead tensors and the Merge takes the live one."""
    with tf.Graph().as_default():
        def body(i, x):
            def on_gpu():
                with tf.device("/gpu:0"):
                    return x * 3.0
            out = tf.cond(tf.equal(i % 2, 1), on_gpu, lambda: x + 1.0)
            return i + 1, out
        with tf.device("/cpu:0"):
            _, x = tf.while_loop(lambda i, x: i < 6, body, [0, 0.0])
        with _session(1) as sess:
            got = sess.run(x)
    want = 0.0
    for i in range(6):
        want = want * 3.0 if i % 2 else want + 1.0
    assert got == want


def _two_layer_rnn(devices, rng_values=None):
    """A 2-layer LSTM by dynamic_rnn, layer k on devices[k], with a loss and its gradients."""
    inputs = tf.placeholder(tf.float32, [None, 6, 4], name="inputs")    # as tutorials write it
    lengths = tf.placeholder(tf.int32, [3], name="lengths")
    cells = [tf.nn.rnn_cell.DeviceWrapper(tf.nn.rnn_cell.LSTMCell(5, name=f"layer{k}"), d)
             for k, d in enumerate(devices)]
    outputs, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(cells), inputs,
                                       sequence_length=lengths, dtype=tf.float32)
    with tf.device("/cpu:0"):
        loss = tf.reduce_sum(tf.square(outputs)) + tf.reduce_sum(state[1].h)
    variables = tf.trainable_variables()
    grads = tf.gradients(loss, variables, colocate_gradients_with_ops=True)
    return [loss, outputs] + grads, variables, inputs, lengths


def test_dynamic_rnn_with_its_layers_on_two_devices_matches_one_device():
    """Forward and gradient loops both span GPU:0 and GPU:1; the numbers are those of the
    same model (same weights) on the CPU alone."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 6, 4)).astype(np.float32)
    lengths = np.array([6, 2, 4], np.int32)
    results = []
    weights = None
    for devices in (["/cpu:0", "/cpu:0"], ["/gpu:0", "/gpu:1"]):
        with tf.Graph().as_default():
            fetches, variables, inputs, lens = _two_layer_rnn(devices)
            with _session(2) as sess:
                sess.run(tf.global_variables_initializer())
                if weights is None:
                    weights = sess.run(variables)
                for var, value in zip(variables, weights):
                    var.load(value, sess)
                results.append(sess.run(fetches, {inputs: x, lens: lengths}))
                plan = _plan(sess)
                placed = sess.placement.as_dict()
                placed_ops = [(op.name, op.type)
                              for op in tf.get_default_graph().get_operations()]
    for single, split in zip(*results):
        np.testing.assert_allclose(split, single, rtol=1e-5, atol=1e-6)
    # Each layer's ops, forward and gradient, on its own device: the gradient loop's
    # accumulators sit with the values they keep and pull no layer onto the other's device.
    # (Their accumulators of the other layer's values sit with those values.)
    maths = {"MatMul", "BiasAdd", "BiasAddGrad", "ConcatV2", "Sigmoid", "Tanh", "SigmoidGrad",
             "TanhGrad", "Mul"}
    for k, device in enumerate((GPU0, GPU1)):
        layer = [name for name, op in placed_ops if f"multi_rnn_cell/cell_{k}/" in name
                 and op in maths]
        assert len(layer) > 20 and any(name.startswith("gradients/") for name in layer)
        assert {placed[name] for name in layer} == {device}, k
    crossing = [e for e in plan.result.cut_edges
                if {e.src_device, e.dst_device} == {GPU0, GPU1}]
    consumers = {c for e in crossing for c in e.consumers}
    assert any(c.startswith("rnn/while/") for c in consumers)            # the forward loop
    assert any(c.startswith("gradients/") for c in consumers)            # the gradient loop


def test_parallel_iterations_and_concurrent_steps_across_devices_do_not_deadlock():
    """Ten iterations in flight, each sending to GPU:0 and back, from four threads at once;
    a watchdog turns a deadlock into a failure."""
    with tf.Graph().as_default():
        n = 60
        values = tf.placeholder(tf.float32, [n])

        def body(i, ta):
            with tf.device("/gpu:0"):
                v = tf.gather(values, i) * 2.0
            return i + 1, ta.write(i, v + 1.0)
        with tf.device("/cpu:0"):
            ta = tf.TensorArray(tf.float32, size=n)
            _, ta = tf.while_loop(lambda i, ta: i < n, body, [0, ta], parallel_iterations=10)
            out = ta.stack()
        sess = _session(1)
        results, failures = {}, []

        def worker(k):
            try:
                feed = np.arange(n, dtype=np.float32) + k
                for _ in range(5):
                    results[k] = sess.run(out, {values: feed},
                                          options=tf.RunOptions(timeout_in_ms=60000))
            except Exception as e:      # noqa: BLE001  (reported below)
                failures.append(e)
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads), "deadlocked"
        sess.close()
    assert not failures, failures
    for k, got in results.items():
        np.testing.assert_array_equal(got, (np.arange(n, dtype=np.float32) + k) * 2.0 + 1.0)


def test_an_error_inside_a_cross_device_loop_aborts_the_step_and_names_the_node():
    with tf.Graph().as_default():
        def body(i, x):
            with tf.device("/gpu:0"):
                checked = tf.check_numerics(tf.log(x), "in the loop")
            return i + 1, checked - 5.0
        with tf.device("/cpu:0"):
            _, x = tf.while_loop(lambda i, x: i < 5, body, [0, 10.0])
        with _session(1) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="in the loop"):
                sess.run(x, options=tf.RunOptions(timeout_in_ms=20000))
            assert sess.run(x + 0.0, {x: 2.0}) == 2.0       # the session still runs steps


def test_a_frame_without_a_loop_cond_cannot_span_devices():
    """TF's error for an imported frame with no predicate to broadcast."""
    from engine.graph_def import NodeDef
    from engine.passes.cross_device_loops import add_control_loops
    from engine.passes.prune import ClientGraph

    f32 = tf.float32
    nodes = [NodeDef("start", "Const", [], CPU0, {"dtype": f32}, (f32,), (None,), {}),
             NodeDef("enter", "Enter", ["start"], CPU0, {"T": f32, "frame_name": "f"}, (f32,),
                     (None,), {}),
             NodeDef("body", "Identity", ["enter"], GPU0, {"T": f32}, (f32,), (None,), {}),
             NodeDef("back", "Identity", ["body"], CPU0, {"T": f32}, (f32,), (None,), {}),
             NodeDef("exit", "Exit", ["back"], CPU0, {"T": f32}, (f32,), (None,), {})]
    client = ClientGraph(nodes, {n.name: n.device for n in nodes}, [], [])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="A cross-device loop must have a pivot predicate: f"):
        add_control_loops(client)


def test_control_flow_nodes_are_colocated_with_their_data():
    """TF's OptimizeControlFlowColocation: the placer put the loop's Merge/Switch/Exit on
    GPU:0 with the body (they have no device scope of their own here) but the loop variable
    comes from the CPU: the Switch follows its Merge, the Exit its Switch, the Enter and the
    NextIteration their first consumer."""
    from engine.passes.cross_device_loops import colocate_control_flow

    with tf.Graph().as_default() as g:
        with tf.device("/cpu:0"):
            start = tf.placeholder(tf.float32, [], name="start")
        with tf.device("/gpu:0"):
            tf.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, [start])
        graph_def = g.as_graph_def()
    placed = {n.name: (CPU0 if n.name == "start" else GPU0) for n in graph_def.node}
    placed["while/Merge"] = CPU0
    moved = colocate_control_flow(graph_def.node, placed)
    assert moved["while/Switch"] == CPU0            # its data input, the Merge
    assert moved["while/Exit"] == CPU0              # its input, the Switch
    assert moved["while/Enter"] == CPU0             # its first consumer, the Merge
    assert moved["while/NextIteration"] == CPU0     # its consumer, the Merge
    assert moved["while/mul"] == GPU0 and moved["while/Identity"] == GPU0
    assert placed["while/Switch"] == GPU0           # the placer's answer is left alone
