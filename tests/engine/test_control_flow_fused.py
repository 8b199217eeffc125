"""The dynamic executor's fused twin (engine/runtime/clusters.py, loops.py), which untraced
steps run: a top-level loop compiled into one Python while, loop bodies fused into clusters
of plain kernels. Its results, dead tensors, side effects and errors must be the per-node
executor's (a traced step runs node by node); expected values are TensorFlow 2.21's
(tf.compat.v1, control flow v1) for the same programs."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine.runtime.loops import CompiledLoop


def _traced(sess, fetches, feeds=None):
    return sess.run(fetches, feeds, options=tf.RunOptions(trace_level=3),
                    run_metadata=tf.RunMetadata())


def _fused_items(sess) -> list:
    found = []
    for part in (p for plan in sess._plans.values() for p in plan.partitions):
        frames, _ = getattr(part, "_fused", ({}, None))
        found.extend(item for info in frames.values() for item in info.items)
    return found


def test_dynamic_rnn_gradients_fused_match_node_by_node():
    """The same gradients from the compiled loops as from the traced per-node run; the two
    loops (forward and gradient) each run as one compiled item."""
    rng = np.random.RandomState(0)
    x_val = rng.uniform(-1, 1, (3, 5, 4)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 5, 4])
        cell = tf.nn.rnn_cell.BasicLSTMCell(6)
        outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        loss = tf.reduce_sum(outputs[:, -1] ** 2)
        grads = tf.gradients(loss, [x] + tf.trainable_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            fused = sess.run(grads, {x: x_val})
            loops = [i for i in _fused_items(sess) if isinstance(i.cluster, CompiledLoop)]
            traced = _traced(sess, grads, {x: x_val})
    assert len(loops) == 2
    for a, b in zip(fused, traced):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_the_condition_runs_in_the_last_iteration_too():
    """TF 2.21: a counter updated in the loop condition reads 4 after i < 3 ends the loop."""
    with tf.Graph().as_default():
        v = tf.Variable(0.0)

        def cond(i):
            with tf.control_dependencies([tf.assign_add(v, 1.0)]):
                return i < 3
        r = tf.while_loop(cond, lambda i: i + 1, [0])
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(r) == 3
            assert sess.run(v) == 4.0


def test_a_cond_in_the_body_leaves_dead_inputs_to_its_clusters():
    """TF 2.21 gives (6, 15.0): even iterations double, odd ones add one. The untaken
    branch's cluster gets dead inputs and runs nothing (its assign_add counts the taken
    iterations only)."""
    with tf.Graph().as_default():
        taken = tf.Variable(0.0)

        def doubled(x):
            with tf.control_dependencies([tf.assign_add(taken, 1.0)]):
                return tf.identity(x * 2.0) + 0.0

        def body(i, x):
            return i + 1, tf.cond(tf.equal(i % 2, 0), lambda: doubled(x), lambda: x + 1.0)
        r = tf.while_loop(lambda i, x: i < 6, body, [0, 1.0])
        with tf.Session() as sess:
            sess.run(taken.initializer)
            assert tuple(sess.run(r)) == (6, 15.0)
            assert sess.run(taken) == 3.0
            assert tuple(_traced(sess, r)) == (6, 15.0)


@pytest.mark.parametrize("flag", [True, False])
def test_a_loop_fed_by_a_cond_runs_on_either_branch(flag):
    """A loop whose input is a cond's Merge (which could be dead, so the loop is not
    compiled) still counts from the branch's value."""
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        start = tf.cond(p, lambda: tf.constant(1.0), lambda: tf.constant(-3.0))
        r = tf.while_loop(lambda i, x: i < 4, lambda i, x: (i + 1, x * 2.0), [0, start])
        with tf.Session() as sess:
            assert sess.run(r, {p: flag})[1] == (16.0 if flag else -48.0)


def test_an_error_in_a_nested_loop_cluster_names_the_node():
    """The inner loop runs in clusters (the outer one is not compiled: it holds a loop);
    an error names the node that failed, not the cluster."""
    with tf.Graph().as_default():
        def inner_body(j, y):
            return j + 1, tf.check_numerics(y / tf.cast(1 - j, tf.float32), "inner bad")

        def outer_body(i, x):
            _, y = tf.while_loop(lambda j, y: j < 3, inner_body, [0, x])
            return i + 1, y
        r = tf.while_loop(lambda i, x: i < 2, outer_body, [0, 1.0])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as caught:
                sess.run(r)
    assert str(caught.value).startswith("inner bad : Tensor had Inf values")
    assert caught.value.node_def.name == "while/while/CheckNumerics"


def test_nested_loops_fused_match_node_by_node():
    """TF 2.21 gives (3, 15.0): outer iteration i runs the inner y*2+1 i times (0, 1, 2)."""
    with tf.Graph().as_default():
        def outer_body(i, x):
            _, y = tf.while_loop(lambda j, y: j < i, lambda j, y: (j + 1, y * 2.0 + 1.0),
                                 [0, x])
            return i + 1, y
        r = tf.while_loop(lambda i, x: i < 3, outer_body, [0, 1.0])
        with tf.Session() as sess:
            fused = tuple(sess.run(r))
            assert fused == tuple(_traced(sess, r))
    assert fused == (3, 15.0)


@pytest.mark.parametrize("captured", [False, True])
def test_an_outer_body_cluster_never_waits_on_the_inner_loop_it_feeds(captured):
    """The outer body's constants (the inner loop's start counter among them) and the op
    reading the inner loop's result must not share a cluster: a cluster waits for all its
    inputs, so it would wait on the loop it feeds. The cycle check once lost track of nodes
    it had not seen (ids of freed one-node lists were reused) and fused them: the step ended
    without a value. Values are the traced run's and a Python reference."""
    x_val = np.array([0.3, -0.2], np.float32)
    w_val = np.array([0.4, 0.9], np.float32)
    with tf.Graph().as_default():
        x = tf.constant(x_val)
        w = tf.constant(w_val) if captured else 2.0

        def outer(i, v):
            inner = tf.while_loop(lambda j, u: j < 2, lambda j, u: (j + 1, u * w + u), [0, v])
            return i + 1, inner[1] * 0.9
        y = tf.while_loop(lambda i, v: i < 3, outer, [0, x])[1]
        grads = tf.gradients(tf.reduce_sum(y), [x])
        with tf.Session() as sess:
            fused = sess.run([y] + grads)
            traced = _traced(sess, [y] + grads)
    factor = (w_val if captured else 2.0) + 1.0
    want = x_val * (factor ** 2 * 0.9) ** 3
    np.testing.assert_allclose(fused[0], want, rtol=1e-5)
    for a, b in zip(fused, traced):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(fused[1], np.broadcast_to((factor ** 2 * 0.9) ** 3, (2,)),
                               rtol=1e-5)


def test_an_inner_loop_body_reading_an_outer_body_value_is_waited_for():
    """s (outer body) reaches the inner loop's exit only through the inner body and its
    NextIteration: the cluster check must follow that back edge (an inner loop's exit waits
    on its body), or s and the op reading the exit fuse and wait on each other."""
    x_val = np.array([0.5, -0.25, 1.0], np.float32)
    with tf.Graph().as_default():
        x = tf.constant(x_val)

        def outer(i, v, acc):
            s = tf.sin(v)
            inner = tf.while_loop(lambda j, u: j < 3, lambda j, u: (j + 1, u * s + s), [0, acc])
            return i + 1, v + 0.1 * inner[1], inner[1]
        y = tf.while_loop(lambda i, v, a: i < 3, outer, [0, x, tf.ones_like(x)])[1]
        with tf.Session() as sess:
            fused, traced = sess.run(y), _traced(sess, y)
    v, acc = x_val.astype(np.float64), np.ones(3)
    for _ in range(3):
        s = np.sin(v)
        for _ in range(3):
            acc = acc * s + s
        v = v + 0.1 * acc
    np.testing.assert_allclose(fused, v, rtol=1e-5)
    np.testing.assert_allclose(fused, traced, rtol=1e-6)
