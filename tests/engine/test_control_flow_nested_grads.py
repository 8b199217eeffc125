"""Gradients through nested while loops (an inner loop's counter, accumulators and gradient
loop made once per outer iteration) against torch.autograd on the unrolled loops: fixed and
outer-dependent inner trip counts, values captured from outside both loops or from the outer
body, map_fn/scan in a loop, a loop in map_fn, a cond in the inner body, maximum_iterations,
three levels, nested loops in a cond, a virtual GPU; three cases pinned to real TF 2.21
(control flow v1) values; and the arrays of TensorArray handles the outer loop keeps."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from grad_harness import DYNAMIC, check_gradients, grad_test, rand
from kernel_harness import covers

import engine as tf

LOOP_RULES = ("Exit", "Enter", "NextIteration", "Switch", "Merge")
TA_RULES = ("TensorArrayReadV3", "TensorArrayWriteV3", "TensorArrayGatherV3",
            "TensorArrayScatterV3")


@grad_test(*LOOP_RULES)
@DYNAMIC
def test_a_fixed_inner_loop_inside_a_loop(dynamic):
    """x is a loop variable of both loops, w is captured from outside both."""
    rng = np.random.default_rng(1)
    x_val, w_val = rand(rng, (3,)), rand(rng, (3,), -1.2, 1.2)

    def tf_fn(x, w):
        def outer(i, v):
            inner = tf.while_loop(lambda j, u: j < 2,
                                  lambda j, u: (j + 1, tf.sin(u) * w + u), [0, v])[1]
            return i + 1, inner * 0.9
        return tf.while_loop(lambda i, v: i < 3, outer, [0, x])[1]

    def torch_fn(x, w):
        v = x
        for _ in range(3):
            for _ in range(2):
                v = torch.sin(v) * w + v
            v = v * 0.9
        return v
    check_gradients(tf_fn, torch_fn, [x_val, w_val], dynamic=dynamic)


@grad_test(*LOOP_RULES)
def test_an_inner_trip_count_that_depends_on_the_outer_loop_variable():
    """Outer iteration i runs the inner loop i+1 times (1, 2, 3, 4): the gradient loop
    replays each outer iteration with its own inner count."""
    rng = np.random.default_rng(2)
    x_val, w_val = rand(rng, (2,), -0.8, 0.8), rand(rng, (2,), -0.9, 0.9)

    def tf_fn(x, w):
        def outer(i, v):
            inner = tf.while_loop(lambda j, u: j <= i,
                                  lambda j, u: (j + 1, tf.tanh(u * w + 0.2)), [0, v])[1]
            return i + 1, inner + v * 0.5
        return tf.while_loop(lambda i, v: i < 4, outer, [0, x])[1]

    def torch_fn(x, w):
        v = x
        for i in range(4):
            u = v
            for _ in range(i + 1):
                u = torch.tanh(u * w + 0.2)
            v = u + v * 0.5
        return v
    check_gradients(tf_fn, torch_fn, [x_val, w_val])


@grad_test(*LOOP_RULES)
@DYNAMIC
def test_a_value_the_inner_loop_captures_from_the_outer_body(dynamic):
    """s is computed in the outer body (from the outer loop variable) and used by every
    inner iteration: its gradient sums over the inner iterations, then flows on to v and
    to w through the outer gradient loop."""
    rng = np.random.default_rng(3)
    x_val, w_val = rand(rng, (3,), -1.0, 1.0), rand(rng, (3,), -1.0, 1.0)

    def tf_fn(x, w):
        def outer(i, v, acc):
            s = tf.sin(v * w)
            inner = tf.while_loop(lambda j, u: j < 3, lambda j, u: (j + 1, u * s + s), [0, acc])
            return i + 1, v + 0.1 * inner[1], inner[1]
        return tf.while_loop(lambda i, v, a: i < 3, outer, [0, x, tf.ones_like(x)])[1]

    def torch_fn(x, w):
        v, acc = x, torch.ones_like(x)
        for _ in range(3):
            s = torch.sin(v * w)
            u = acc
            for _ in range(3):
                u = u * s + s
            v, acc = v + 0.1 * u, u
        return v
    check_gradients(tf_fn, torch_fn, [x_val, w_val], dynamic=dynamic)


@grad_test(*LOOP_RULES)
def test_a_cond_inside_the_inner_loop():
    """Each inner iteration takes the branch its parity (with the outer index) picks."""
    rng = np.random.default_rng(4)
    x_val, w_val = rand(rng, (3,), 0.2, 0.9), rand(rng, (3,), -1.0, 1.0)

    def tf_fn(x, w):
        def outer(i, v):
            def inner(j, u):
                even = tf.equal(tf.mod(i + j, 2), 0)
                return j + 1, tf.cond(even, lambda: u * w + 0.3, lambda: tf.sin(u) * 1.5)
            return i + 1, tf.while_loop(lambda j, u: j < 3, inner, [0, v])[1]
        return tf.while_loop(lambda i, v: i < 3, outer, [0, x])[1]

    def torch_fn(x, w):
        v = x
        for i in range(3):
            for j in range(3):
                v = v * w + 0.3 if (i + j) % 2 == 0 else torch.sin(v) * 1.5
        return v
    check_gradients(tf_fn, torch_fn, [x_val, w_val])


@grad_test(*LOOP_RULES)
@pytest.mark.parametrize("outer_limit,inner_limit", [(3, 2), (0, 2), (2, 0)])
def test_maximum_iterations_on_both_loops(outer_limit, inner_limit):
    """Both loops would run on (their conditions stay true); maximum_iterations stops them."""
    x_val = rand(np.random.default_rng(5), (3,), -1.0, 1.0)

    def tf_fn(x):
        def outer(v):
            return tf.while_loop(lambda u: tf.reduce_sum(u * u) < 1e9,
                                 lambda u: tf.sin(u) * 1.3 + 0.1, [v],
                                 maximum_iterations=inner_limit) * 1.1
        return tf.while_loop(lambda v: tf.reduce_sum(v * v) < 1e9, outer, [x],
                             maximum_iterations=outer_limit)

    def torch_fn(x):
        v = x
        for _ in range(outer_limit):
            for _ in range(inner_limit):
                v = torch.sin(v) * 1.3 + 0.1
            v = v * 1.1
        return v + 0.0 * x
    check_gradients(tf_fn, torch_fn, [x_val])


@grad_test(*LOOP_RULES)
def test_data_dependent_trip_counts_in_both_loops():
    """The inner loop doubles until the sum passes a bound that grows with the outer
    index; the outer loop runs while the total is small."""
    x_val = np.array([0.3, 0.2, 0.4])

    def tf_fn(x):
        def outer(i, v):
            bound = tf.cast(i + 2, tf.float64)
            inner = tf.while_loop(lambda u: tf.reduce_sum(u) < bound, lambda u: u * 1.6, [v])
            return i + 1, inner * 0.7 + 0.05
        return tf.while_loop(lambda i, v: tf.reduce_sum(v) < 6.0, outer, [0, x])[1]

    def torch_fn(x):
        v, i = x, 0
        while float(v.detach().sum()) < 6.0:
            while float(v.detach().sum()) < i + 2:
                v = v * 1.6
            v, i = v * 0.7 + 0.05, i + 1
        return v
    check_gradients(tf_fn, torch_fn, [x_val])


@grad_test(*LOOP_RULES, *TA_RULES)
def test_map_fn_inside_a_while_loop():
    rng = np.random.default_rng(6)
    x_val, w_val = rand(rng, (4, 3), -1.0, 1.0), rand(rng, (3,), -1.0, 1.0)

    def tf_fn(x, w):
        def outer(i, m):
            return i + 1, tf.map_fn(lambda row: tf.tanh(row * w) + row * 0.5, m)
        return tf.while_loop(lambda i, m: i < 3, outer, [0, x])[1]

    def torch_fn(x, w):
        m = x
        for _ in range(3):
            m = torch.stack([torch.tanh(r * w) + r * 0.5 for r in m])
        return m
    check_gradients(tf_fn, torch_fn, [x_val, w_val])


@grad_test(*LOOP_RULES, *TA_RULES)
def test_scan_inside_a_while_loop():
    rng = np.random.default_rng(7)
    x_val, init_val = rand(rng, (4, 2), -1.0, 1.0), rand(rng, (2,), -1.0, 1.0)

    def tf_fn(x, init):
        def outer(i, m):
            out = tf.scan(lambda acc, row: tf.sin(acc * row + 0.4), m, initializer=init)
            return i + 1, out + m * 0.3
        return tf.while_loop(lambda i, m: i < 2, outer, [0, x])[1]

    def torch_fn(x, init):
        m = x
        for _ in range(2):
            out, acc = [], init
            for row in m:
                acc = torch.sin(acc * row + 0.4)
                out.append(acc)
            m = torch.stack(out) + m * 0.3
        return m
    check_gradients(tf_fn, torch_fn, [x_val, init_val])


@grad_test(*LOOP_RULES, *TA_RULES)
def test_a_while_loop_inside_map_fn():
    """Each row runs its own loop, as many times as its position (0..3)."""
    rng = np.random.default_rng(8)
    x_val, w_val = rand(rng, (4, 3), -1.0, 1.0), rand(rng, (3,), -0.9, 0.9)
    counts = np.arange(4, dtype=np.int32)

    def tf_fn(x, w):
        def per_row(args):
            row, n = args
            return tf.while_loop(lambda j, r: j < n, lambda j, r: (j + 1, tf.sin(r * w) + r),
                                 [0, row])[1]
        return tf.map_fn(per_row, (x, tf.constant(counts)), dtype=tf.float64)

    def torch_fn(x, w):
        rows = []
        for row, n in zip(x, counts):
            for _ in range(int(n)):
                row = torch.sin(row * w) + row
            rows.append(row)
        return torch.stack(rows)
    check_gradients(tf_fn, torch_fn, [x_val, w_val])


@grad_test(*LOOP_RULES)
def test_a_nested_loop_output_fed_through_further_ops():
    rng = np.random.default_rng(9)
    x_val, w_val = rand(rng, (2, 3), -1.0, 1.0), rand(rng, (3, 3), -0.6, 0.6)

    def tf_fn(x, w):
        def outer(i, h):
            inner = tf.while_loop(lambda j, u: j < 2,
                                  lambda j, u: (j + 1, tf.tanh(tf.matmul(u, w))), [0, h])[1]
            return i + 1, inner + h
        y = tf.while_loop(lambda i, h: i < 2, outer, [0, x])[1]
        return tf.reduce_sum(tf.square(y), axis=1) + tf.exp(y[:, 0])

    def torch_fn(x, w):
        h = x
        for _ in range(2):
            u = h
            for _ in range(2):
                u = torch.tanh(u @ w)
            h = u + h
        return (h * h).sum(dim=1) + torch.exp(h[:, 0])
    check_gradients(tf_fn, torch_fn, [x_val, w_val])


@grad_test(*LOOP_RULES)
@DYNAMIC
def test_an_inner_loop_variable_only_the_others_depend_on(dynamic):
    """b is not returned by the inner loop's user: its Exit's gradient is zeros made in the
    outer gradient loop."""
    rng = np.random.default_rng(10)
    a_val, b_val = rand(rng, (2,)), rand(rng, (2,), -0.9, 0.9)

    def tf_fn(a, b):
        def outer(i, a):
            inner = tf.while_loop(lambda j, a, b: j < 2,
                                  lambda j, a, b: (j + 1, a + b * b, b * 0.5 + a * 0.1),
                                  [0, a, b])
            return i + 1, inner[1]
        return tf.while_loop(lambda i, a: i < 2, outer, [0, a])[1]

    def torch_fn(a, b):
        for _ in range(2):
            bb = b
            for _ in range(2):
                a, bb = a + bb * bb, bb * 0.5 + a * 0.1
        return a
    check_gradients(tf_fn, torch_fn, [a_val, b_val], dynamic=dynamic)


@grad_test(*LOOP_RULES)
def test_three_nested_loops():
    rng = np.random.default_rng(11)
    x_val, w_val = rand(rng, (2,), -1.0, 1.0), rand(rng, (2,), -1.0, 1.0)

    def tf_fn(x, w):
        def middle(j, u):
            inner = tf.while_loop(lambda k, t: k < j + 1,
                                  lambda k, t: (k + 1, tf.sin(t * w) + t), [0, u])[1]
            return j + 1, inner * 0.8
        def outer(i, v):
            return i + 1, tf.while_loop(lambda j, u: j < 2, middle, [0, v])[1] + w
        return tf.while_loop(lambda i, v: i < 2, outer, [0, x])[1]

    def torch_fn(x, w):
        v = x
        for _ in range(2):
            u = v
            for j in range(2):
                for _ in range(j + 1):
                    u = torch.sin(u * w) + u
                u = u * 0.8
            v = u + w
        return v
    check_gradients(tf_fn, torch_fn, [x_val, w_val])


@grad_test(*LOOP_RULES)
def test_outer_iterations_whose_inner_loops_run_side_by_side():
    """No outer iteration's inner loop depends on another's (each starts from x * (i+1)),
    so with parallel_iterations=10 they may run at once: each keeps its own accumulators."""
    rng = np.random.default_rng(12)
    x_val, w_val = rand(rng, (3,), -1.0, 1.0), rand(rng, (3,), -1.0, 1.0)

    def tf_fn(x, w):
        def outer(i, acc):
            start = x * tf.cast(i + 1, tf.float64)
            inner = tf.while_loop(lambda j, u: j < 3, lambda j, u: (j + 1, tf.sin(u * w)),
                                  [0, start])[1]
            return i + 1, acc + inner
        return tf.while_loop(lambda i, a: i < 4, outer, [0, tf.zeros_like(x)],
                             parallel_iterations=10)[1]

    def torch_fn(x, w):
        acc = torch.zeros_like(x)
        for i in range(4):
            u = x * (i + 1)
            for _ in range(3):
                u = torch.sin(u * w)
            acc = acc + u
        return acc
    check_gradients(tf_fn, torch_fn, [x_val, w_val])


@grad_test(*LOOP_RULES)
def test_a_loop_inside_a_cond_inside_a_loop():
    """Even outer iterations run the inner loop, odd ones a sine: the inner gradient loop
    runs only in the replayed iterations that took it."""
    rng = np.random.default_rng(13)
    x_val, w_val = rand(rng, (3,), -1.0, 1.0), rand(rng, (3,), -1.0, 1.0)

    def tf_fn(x, w):
        def outer(i, v):
            def looped():
                return tf.while_loop(lambda j, u: j < 2, lambda j, u: (j + 1, u * w + 0.1),
                                     [0, v])[1]
            return i + 1, tf.cond(tf.equal(tf.mod(i, 2), 0), looped, lambda: tf.sin(v))
        return tf.while_loop(lambda i, v: i < 4, outer, [0, x])[1]

    def torch_fn(x, w):
        v = x
        for i in range(4):
            if i % 2 == 0:
                for _ in range(2):
                    v = v * w + 0.1
            else:
                v = torch.sin(v)
        return v
    check_gradients(tf_fn, torch_fn, [x_val, w_val])


@grad_test(*LOOP_RULES, "TensorArrayWriteV3", "TensorArrayGatherV3")
def test_a_tensor_array_the_inner_loop_writes_and_the_outer_body_stacks():
    rng = np.random.default_rng(14)
    x_val, w_val = rand(rng, (3,), -1.0, 1.0), rand(rng, (3,), -1.0, 1.0)

    def tf_fn(x, w):
        def outer(i, v):
            def inner(j, u, ta):
                u = tf.tanh(u * w + 0.1)
                return j + 1, u, ta.write(j, u)
            _, u, ta = tf.while_loop(lambda j, u, ta: j < 3, inner,
                                     [0, v, tf.TensorArray(tf.float64, size=3)])
            return i + 1, tf.reduce_sum(ta.stack(), axis=0) * 0.5 + u
        return tf.while_loop(lambda i, v: i < 2, outer, [0, x])[1]

    def torch_fn(x, w):
        v = x
        for _ in range(2):
            u, parts = v, []
            for _ in range(3):
                u = torch.tanh(u * w + 0.1)
                parts.append(u)
            v = torch.stack(parts).sum(0) * 0.5 + u
        return v
    check_gradients(tf_fn, torch_fn, [x_val, w_val])


@grad_test(*LOOP_RULES, *TA_RULES)
def test_scan_inside_a_while_loop_inside_map_fn():
    """Three levels of loops, two of them TensorArray-driven."""
    rng = np.random.default_rng(15)
    x_val, w_val = rand(rng, (2, 3), -1.0, 1.0), rand(rng, (), -1.0, 1.0)

    def tf_fn(x, w):
        def per_row(row):
            def body(i, r):
                return i + 1, tf.scan(lambda a, e: a * 0.5 + e * w, r)
            return tf.while_loop(lambda i, r: i < 2, body, [0, row])[1]
        return tf.map_fn(per_row, x)

    def torch_fn(x, w):
        rows = []
        for r in x:
            for _ in range(2):
                out, a = [], None
                for e in r:
                    a = e if a is None else a * 0.5 + e * w
                    out.append(a)
                r = torch.stack(out)
            rows.append(r)
        return torch.stack(rows)
    check_gradients(tf_fn, torch_fn, [x_val, w_val])


@grad_test(*LOOP_RULES)
@pytest.mark.parametrize("take", [True, False], ids=["loops", "product"])
def test_nested_loops_inside_a_cond(take):
    """The outer body also needs the inner loop's result itself (sin's gradient reads it
    back from the outer loop's accumulator)."""
    rng = np.random.default_rng(16)
    x_val, w_val = rand(rng, (3,), -1.0, 1.0), rand(rng, (3,), -1.0, 1.0)

    def tf_fn(x, w):
        def nested():
            def outer(i, v):
                inner = tf.while_loop(lambda j, u: j < 2,
                                      lambda j, u: (j + 1, tf.sin(u * w)), [0, v])[1]
                return i + 1, tf.sin(inner) * v
            return tf.while_loop(lambda i, v: i < 2, outer, [0, x])[1]
        return tf.cond(tf.constant(take), nested, lambda: x * w)

    def torch_fn(x, w):
        if not take:
            return x * w
        v = x
        for _ in range(2):
            u = v
            for _ in range(2):
                u = torch.sin(u * w)
            v = torch.sin(u) * v
        return v
    check_gradients(tf_fn, torch_fn, [x_val, w_val])


def _nested(x, w, tf_mod=tf):
    """The program both the engine and real TF differentiate in the reference tests."""
    def outer(i, v):
        inner = tf_mod.while_loop(lambda j, u: j <= i,
                                  lambda j, u: (j + 1, tf_mod.sin(u * w) + u * 0.5), [0, v])[1]
        return i + 1, inner * w
    return tf_mod.while_loop(lambda i, v: i < 3, outer, [0, x])[1]


def test_nested_loop_gradients_match_tensorflow():
    """TF 2.21 (tf.compat.v1, control flow v1) on x = [0.5, -1.0], w = [1.2, 0.7]:
    y = [2.0867498, -0.8120139], dy/dx = [3.1793996e-04, 0.50056016],
    dy/dw = [0.7806578, -5.6679068] (dy/dx[0] is a float32 cancellation: TF's and ours agree
    to 1e-8 absolute)."""
    with tf.Graph().as_default():
        x = tf.constant([0.5, -1.0])
        w = tf.constant([1.2, 0.7])
        y = _nested(x, w)
        grads = tf.gradients(y, [x, w])
        with tf.Session() as sess:
            got_y, got_dx, got_dw = sess.run([y] + grads)
    np.testing.assert_allclose(got_y, [2.0867498, -0.8120139], rtol=1e-6)
    np.testing.assert_allclose(got_dx, [3.1793996e-04, 0.50056016], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_dw, [0.7806578, -5.6679068], rtol=1e-6)


def test_map_fn_in_a_loop_gradients_match_tensorflow():
    """TF 2.21 (control flow v1): m = [[0.3, -0.6], [0.9, 0.1]], w = [0.8, -1.1], two
    outer iterations of m <- map_fn(tanh(row * w) * 1.5, m), loss = sum(m * m):
    dloss/dm = [[1.0382177, -1.8135965], [1.017063, 1.3968971]],
    dloss/dw = [3.5206945, -2.5468419]."""
    with tf.Graph().as_default():
        m0 = tf.constant([[0.3, -0.6], [0.9, 0.1]])
        w = tf.constant([0.8, -1.1])
        m = tf.while_loop(lambda i, m: i < 2,
                          lambda i, m: (i + 1, tf.map_fn(lambda r: tf.tanh(r * w) * 1.5, m)),
                          [0, m0])[1]
        grads = tf.gradients(tf.reduce_sum(m * m), [m0, w])
        with tf.Session() as sess:
            got_dm, got_dw = sess.run(grads)
    np.testing.assert_allclose(got_dm, [[1.0382177, -1.8135965], [1.017063, 1.3968971]],
                               rtol=1e-6)
    np.testing.assert_allclose(got_dw, [3.5206945, -2.5468419], rtol=1e-6)


def test_a_cond_in_an_inner_loop_bounded_by_maximum_iterations_matches_tensorflow():
    """TF 2.21 (control flow v1) on x = [0.4, -0.7], w = [0.9, 1.3], loss = sum(y * y):
    y = [1.4955206, -1.4958491], dloss/dx = [0.00572315, 0.06942268],
    dloss/dw = [-0.47209522, -0.6384671] (agreeing to float32 summation order)."""
    def outer(i, v):
        def inner(j, u):
            even = tf.equal(tf.mod(i + j, 2), 0)
            return j + 1, tf.cond(even, lambda: u * w + 0.3, lambda: tf.sin(u) * 1.5)
        return i + 1, tf.while_loop(lambda j, u: j < 100, inner, (0, v),
                                    maximum_iterations=i + 2)[1]
    with tf.Graph().as_default():
        x = tf.constant([0.4, -0.7])
        w = tf.constant([0.9, 1.3])
        y = tf.while_loop(lambda i, v: i < 100, outer, (0, x), maximum_iterations=3)[1]
        grads = tf.gradients(tf.reduce_sum(y * y), [x, w])
        with tf.Session() as sess:
            got_y, got_dx, got_dw = sess.run([y] + grads)
    np.testing.assert_allclose(got_y, [1.4955206, -1.4958491], rtol=1e-6)
    np.testing.assert_allclose(got_dx, [0.00572315, 0.06942268], rtol=1e-5)
    np.testing.assert_allclose(got_dw, [-0.47209522, -0.6384671], rtol=1e-5)


def test_nested_loop_gradients_on_a_virtual_gpu():
    with tf.Graph().as_default():
        with tf.device("/device:GPU:0"):
            x = tf.constant([0.5, -1.0])
            w = tf.constant([1.2, 0.7])
            grads = tf.gradients(_nested(x, w), [x, w])
        with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
            got_dx, got_dw = sess.run(grads)
    np.testing.assert_allclose(got_dx, [3.1793996e-04, 0.50056016], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got_dw, [0.7806578, -5.6679068], rtol=1e-5)


def test_gradient_descent_trains_through_nested_loops():
    """w applied 2 x 3 times: x * w^6 driven to 1."""
    with tf.Graph().as_default():
        w = tf.Variable(0.8, name="w")
        x = tf.constant(2.0)

        def outer(i, v):
            return i + 1, tf.while_loop(lambda j, u: j < 3, lambda j, u: (j + 1, u * w),
                                        [0, v])[1]
        y = tf.while_loop(lambda i, v: i < 2, outer, [0, x])[1]
        loss = tf.square(y - 1.0)
        train = tf.train.GradientDescentOptimizer(0.02).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(300):
                sess.run(train)
            last, w_val = sess.run([loss, w])
    assert last < 1e-8
    np.testing.assert_allclose(w_val, 0.5 ** (1 / 6), rtol=1e-4)


def test_a_nested_loop_gradient_graph_round_trips_through_graph_def():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([0.5, -1.0], name="x")
        w = tf.constant([1.2, 0.7], name="w")
        dw = tf.gradients(_nested(x, w), [w])[0]
        graph_def = g.as_graph_def()
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            got = sess.run(dw.name)
    np.testing.assert_allclose(got, [0.7806578, -5.6679068], rtol=1e-6)


def test_two_gradients_calls_on_one_nested_loop_build_their_own_gradient_loops():
    with tf.Graph().as_default():
        x = tf.constant([0.5, -1.0])
        w = tf.constant([1.2, 0.7])
        y = _nested(x, w)
        first = tf.gradients(y, [w])[0]
        second = tf.gradients(tf.reduce_sum(y * 2.0), [w])[0]
        with tf.Session() as sess:
            got_first, got_second = sess.run([first, second])
    np.testing.assert_allclose(got_first, [0.7806578, -5.6679068], rtol=1e-6)
    np.testing.assert_allclose(got_second, 2.0 * got_first, rtol=1e-6)


def test_the_gradient_of_a_loop_inside_a_gradient_loop_is_refused():
    """A second derivative through a while loop (the inner loop here is built by the first
    gradients call) is not supported and says so."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        y = tf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v * x), [0, x])[1]
        dx = tf.gradients(y, [x])[0]
        with pytest.raises(tf.errors.UnimplementedError, match="second derivative"):
            tf.gradients(dx, [x])


# -- arrays of TensorArray handles -----------------------------------------------------------

@covers("TensorArrayV3", "TensorArrayWriteV3", "TensorArrayReadV3")
def test_an_array_of_array_handles_reads_back_each_array(runner):
    """What a nested loop's gradient keeps per outer iteration: element i of a resource
    array is the handle of the i-th inner array (TF 2.21 reads [3, 4] back the same way)."""
    with runner.scope():
        first = tf.TensorArray(tf.float32, size=1).write(0, [1.0, 2.0])
        second = tf.TensorArray(tf.float32, size=1).write(0, [3.0, 4.0])
        handles = tf.TensorArray(tf.resource, size=2, infer_shape=False)
        handles = handles.write(0, first.handle).write(1, second.handle)
        picked = tf.TensorArray(tf.float32, handle=handles.read(1), flow=second.flow)
        value = picked.read(0)
    np.testing.assert_array_equal(runner.run(value), [3.0, 4.0])
