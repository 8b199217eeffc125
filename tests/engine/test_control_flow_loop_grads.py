"""Gradients through tf.while_loop (the gradient loop replaying the forward iterations in
reverse, reading per-iteration accumulators) against torch.autograd on the unrolled loop:
a counting loop, loop invariants used every iteration, maximum_iterations, a cond in the
body, a loop variable only the others depend on, on a virtual GPU, and training through a
loop with GradientDescentOptimizer; TensorArray gradients (TensorArrayGradV3) and through
them map_fn, scan and foldl."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from grad_harness import DYNAMIC, check_gradients, grad_test, rand
from kernel_harness import covers

import engine as tf

LOOP_RULES = ("Exit", "Enter", "NextIteration", "Switch", "Merge")


@grad_test(*LOOP_RULES)
@DYNAMIC
def test_counting_loop_multiplies_by_an_outside_tensor(dynamic):
    x_val = rand(np.random.default_rng(1), (4,))
    w_val = rand(np.random.default_rng(2), (4,))

    def tf_fn(x, w):
        _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * w + 1.0), [0, x])
        return y

    def torch_fn(x, w):
        y = x
        for _ in range(3):
            y = y * w + 1.0
        return y
    check_gradients(tf_fn, torch_fn, [x_val, w_val], dynamic=dynamic)


@grad_test(*LOOP_RULES)
def test_loop_invariants_used_in_every_iteration():
    """A matrix and a bias read each iteration: their gradients sum over the iterations."""
    rng = np.random.default_rng(3)
    h_val, w_val, b_val = rand(rng, (2, 3)), rand(rng, (3, 3), -0.7, 0.7), rand(rng, (3,))

    def tf_fn(h, w, b):
        _, out = tf.while_loop(lambda i, h: i < 4,
                               lambda i, h: (i + 1, tf.tanh(tf.matmul(h, w) + b) * h), [0, h])
        return out

    def torch_fn(h, w, b):
        for _ in range(4):
            h = torch.tanh(h @ w + b) * h
        return h
    check_gradients(tf_fn, torch_fn, [h_val, w_val, b_val])


@grad_test(*LOOP_RULES)
@pytest.mark.parametrize("limit", [0, 2, 5])
def test_maximum_iterations_bounds_the_replayed_iterations(limit):
    x_val = rand(np.random.default_rng(4), (3,))

    def tf_fn(x):
        return tf.while_loop(lambda v: tf.reduce_sum(v * v) < 1e6, lambda v: tf.sin(v) * 2.0,
                             [x], maximum_iterations=limit)

    def torch_fn(x):
        v = x
        for _ in range(limit):
            v = torch.sin(v) * 2.0
        return v + 0.0 * x
    check_gradients(tf_fn, torch_fn, [x_val])


@grad_test(*LOOP_RULES)
def test_a_data_dependent_trip_count():
    """The loop runs until the value is large; the gradient loop replays as many
    iterations as the forward one ran."""
    x_val = np.array([1.5, 0.5, 2.0])

    def tf_fn(x):
        return tf.while_loop(lambda v: tf.reduce_sum(v) < 40.0, lambda v: v * 1.7 + 0.1, [x])

    def torch_fn(x):
        v = x
        while float(v.detach().sum()) < 40.0:
            v = v * 1.7 + 0.1
        return v
    check_gradients(tf_fn, torch_fn, [x_val])


@grad_test(*LOOP_RULES)
def test_a_cond_inside_the_loop_body():
    """Each iteration takes one branch (by the iteration's parity); the gradient loop reads
    the branch's values only in the iterations that took it."""
    x_val = rand(np.random.default_rng(5), (3,), 0.2, 1.0)

    def tf_fn(x):
        def body(i, v):
            even = tf.equal(tf.mod(i, 2), 0)
            return i + 1, tf.cond(even, lambda: v * v + 0.5, lambda: tf.sin(v) * 3.0)
        return tf.while_loop(lambda i, v: i < 5, body, [0, x])[1]

    def torch_fn(x):
        v = x
        for i in range(5):
            v = v * v + 0.5 if i % 2 == 0 else torch.sin(v) * 3.0
        return v
    check_gradients(tf_fn, torch_fn, [x_val])


@grad_test(*LOOP_RULES)
def test_a_loop_variable_only_the_others_depend_on():
    """`a` is returned, `b` is not: b's Exit leads nowhere, yet b's gradient flows into a's
    through the iterations (its Exit's gradient is zeros)."""
    rng = np.random.default_rng(6)
    a_val, b_val = rand(rng, (2,)), rand(rng, (2,), -0.9, 0.9)

    def tf_fn(a, b):
        return tf.while_loop(lambda i, a, b: i < 3,
                             lambda i, a, b: (i + 1, a + b * b, b * 0.5 + a * 0.1),
                             [0, a, b])[1]

    def torch_fn(a, b):
        for _ in range(3):
            a, b = a + b * b, b * 0.5 + a * 0.1
        return a
    check_gradients(tf_fn, torch_fn, [a_val, b_val])


def _loop_grads_on(device: str | None, config=None):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        with tf.device(device):
            w = tf.constant([0.5, -1.5, 2.0])
            y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.exp(v * w) * 0.5),
                              [0, x])[1]
            grads = tf.gradients(tf.reduce_sum(y), [x, w])
        with tf.Session(config=config) as sess:
            return sess.run(grads, {x: [0.1, 0.2, -0.3]})


def _torch_loop_grads():
    x = torch.tensor([0.1, 0.2, -0.3], requires_grad=True)
    w = torch.tensor([0.5, -1.5, 2.0], requires_grad=True)
    v = x
    for _ in range(3):
        v = torch.exp(v * w) * 0.5
    return [t.numpy() for t in torch.autograd.grad(v.sum(), [x, w])]


def test_loop_gradients_on_a_virtual_gpu():
    got = _loop_grads_on("/device:GPU:0", tf.ConfigProto(virtual_gpus=1))
    for g, want in zip(got, _torch_loop_grads()):
        np.testing.assert_allclose(g, want, rtol=1e-5)


def test_gradient_descent_trains_through_a_loop():
    """minimize() through a loop that applies the variable three times: w -> w^3 * x,
    driven to the target."""
    with tf.Graph().as_default():
        w = tf.Variable(0.5, name="w")
        x = tf.constant(2.0)
        y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * w), [0, x])[1]
        loss = tf.square(y - 1.0)   # w^3 * 2 = 1  at  w = 0.7937
        train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss)
            for _ in range(200):
                sess.run(train)
            last, w_val = sess.run([loss, w])
    assert first > 0.5
    assert last < 1e-6
    np.testing.assert_allclose(w_val, 0.5 ** (1 / 3), rtol=1e-3)


def test_back_prop_false_stops_the_gradient():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        y = tf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v * x), [0, x],
                          back_prop=False)[1]
        assert tf.gradients(y, [x]) == [None]


# -- TensorArray gradients ---------------------------------------------------------------------

TA_RULES = ("TensorArrayReadV3", "TensorArrayWriteV3", "TensorArrayGatherV3",
            "TensorArrayScatterV3")


@covers("TensorArrayGradV3")
def test_gradient_array_sums_writes_and_is_shared_per_source(runner):
    """TF 2.21: two writes of [1,2] and [3,4] to index 1 of a size-3 array's gradient array
    read back, through a second grad() of the same source, as [[0,0],[4,6],[0,0]]."""
    with runner.scope():
        ta = tf.TensorArray(tf.float32, size=3, element_shape=[2])
        ta = ta.write(0, [1.0, 1.0]).write(1, [2.0, 2.0]).write(2, [3.0, 3.0])
        g = ta.grad("gradients", flow=ta.flow)
        g = g.write(1, [1.0, 2.0]).write(1, [3.0, 4.0])
        again = ta.grad("gradients", flow=g.flow)
        stacked = again.stack()
    np.testing.assert_array_equal(runner.run(stacked), [[0, 0], [4, 6], [0, 0]])


@grad_test("TensorArrayConcatV3", "TensorArraySplitV3")
def test_tensor_array_split_and_concat_gradients():
    x_val = rand(np.random.default_rng(7), (6, 2))

    def tf_fn(x):
        ta = tf.TensorArray(tf.float64, size=3, infer_shape=False).split(x, [1, 2, 3])
        parts = tf.TensorArray(tf.float64, size=3, infer_shape=False)
        parts = parts.write(0, ta.read(2) * 2.0).write(1, tf.sin(ta.read(0)))
        parts = parts.write(2, tf.square(ta.read(1)))
        return tf.reshape(parts.concat(), [6, 2])

    def torch_fn(x):
        return torch.cat([x[3:6] * 2.0, torch.sin(x[0:1]), x[1:3] ** 2])
    check_gradients(tf_fn, torch_fn, [x_val])


@grad_test(*LOOP_RULES, *TA_RULES)
@DYNAMIC
def test_map_fn_gradients(dynamic):
    x_val = rand(np.random.default_rng(8), (5, 3))
    w_val = rand(np.random.default_rng(9), (3,))

    def tf_fn(x, w):
        return tf.map_fn(lambda row: tf.sin(row) * w + row * row, x)

    def torch_fn(x, w):
        return torch.stack([torch.sin(r) * w + r * r for r in x])
    check_gradients(tf_fn, torch_fn, [x_val, w_val], dynamic=dynamic)


@grad_test(*LOOP_RULES, *TA_RULES)
def test_scan_gradients():
    x_val = rand(np.random.default_rng(10), (4, 2), -1.0, 1.0)
    init_val = rand(np.random.default_rng(11), (2,))

    def tf_fn(x, init):
        return tf.scan(lambda acc, row: tf.tanh(acc * row + 0.3), x, initializer=init)

    def torch_fn(x, init):
        out, acc = [], init
        for row in x:
            acc = torch.tanh(acc * row + 0.3)
            out.append(acc)
        return torch.stack(out)
    check_gradients(tf_fn, torch_fn, [x_val, init_val])


@grad_test(*LOOP_RULES, "TensorArrayReadV3", "TensorArrayScatterV3")
def test_foldl_gradients():
    x_val = rand(np.random.default_rng(12), (5, 3), -1.0, 1.0)

    def tf_fn(x):
        return tf.foldl(lambda acc, row: acc * row + row, x, initializer=tf.ones([3], tf.float64))

    def torch_fn(x):
        acc = torch.ones(3, dtype=torch.float64)
        for row in x:
            acc = acc * row + row
        return acc
    check_gradients(tf_fn, torch_fn, [x_val])


def test_a_loop_gradient_graph_round_trips_through_graph_def():
    """Counters, accumulators and the gradient loop are plain ops with plain attrs: the
    imported graph computes the same gradient."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        w = tf.constant([0.5, 2.0, -1.0], name="w")
        y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * w + 1.0), [0, x])[1]
        dx = tf.gradients(tf.reduce_sum(y), [x])[0]
        graph_def = g.as_graph_def()
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            got = sess.run(dx.name, {"x:0": [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(got, [0.125, 8.0, -1.0], rtol=1e-6)   # w ** 3
