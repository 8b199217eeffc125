"""Clipping: tf.clip_by_value (ClipByValue kernel on CPU and a virtual GPU), tf.clip_by_norm,
tf.clip_by_global_norm and tf.global_norm, with their names, None entries, zero and infinite
norms and gradients at the bounds, against numbers observed from TensorFlow 2.21
(tf.compat.v1)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_harness import NUMERIC, assert_close, covers, rand, tf_dtype

import engine as tf


@covers("ClipByValue")
@pytest.mark.parametrize("dtype", NUMERIC)
def test_clip_by_value(runner, dtype):
    x_val = rand(np.random.default_rng(1), (4, 3), dtype, -5, 5)
    lo_val = np.array([-1, 0, 2], dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [None, 3])
        lo = tf.placeholder(tf_dtype(dtype), [3])
        outs = [tf.clip_by_value(x, -2, 3), tf.clip_by_value(x, lo, 4)]
    assert outs[0].op.name == "clip_by_value" and outs[0].shape.as_list() == [None, 3]
    got = runner.run(outs, {x: x_val, lo: lo_val})
    assert_close(got[0], np.clip(x_val, -2, 3), dtype)
    assert_close(got[1], np.clip(x_val, lo_val, 4), dtype)


@covers("ClipByValue")
def test_clip_with_crossed_bounds_gives_the_lower_bound(runner):
    """TF's composite maximum(minimum(t, max), min) returns min when min > max."""
    with runner.scope():
        y = tf.clip_by_value(tf.constant([0.0, 5.0, 10.0]), 6.0, 4.0)
    np.testing.assert_array_equal(runner.run(y), [6.0, 6.0, 6.0])


def test_clip_may_not_broadcast_t():
    """Observed in TF: clip_by_value([1., 2.], [[0.], [1.]], 3.) raises `Shapes (2,) and
    (2, 2) are incompatible`."""
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"Shapes \(2,\) and \(2, 2\) "
                                                                  r"are incompatible"):
        tf.clip_by_value(tf.constant([1.0, 2.0]), [[0.0], [1.0]], 3.0)


def test_clip_by_value_gradient_includes_the_bounds():
    """Observed in TF: d/dx sum(clip_by_value([[1, 2], [3, 4]], 2, 3)) is [[0, 1], [1, 0]]
    (a value on a bound passes the gradient)."""
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        lo, hi = tf.constant(2.0), tf.constant(3.0)
        grads = tf.gradients(tf.reduce_sum(tf.clip_by_value(x, lo, hi)), [x, lo, hi])
        with tf.Session() as s:
            gx, glo, ghi = s.run(grads)
    np.testing.assert_array_equal(gx, [[0.0, 1.0], [1.0, 0.0]])
    assert (glo, ghi) == (1.0, 1.0)


def test_clip_by_norm_as_tf():
    """Observed in TF: clip_by_norm([[1, 2], [3, 4]], 1.) is [[0.18257418, 0.36514837],
    [0.5477225, 0.73029673]] (an Identity named clip_by_norm); with axes=[1] [[0.4472136,
    0.8944272], [0.6, 0.8]]; of zeros it stays zeros, and the gradient of sum(clip_by_norm(z,
    1.) * [1, 2]) at z = 0 is [1, 2]."""
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        whole, rows = tf.clip_by_norm(x, 1.0), tf.clip_by_norm(x, 1.0, axes=[1])
        small = tf.clip_by_norm(x, 100.0)
        z = tf.zeros([2])
        clipped_zero = tf.clip_by_norm(z, 1.0)
        grad_zero, = tf.gradients(tf.reduce_sum(clipped_zero * [1.0, 2.0]), z)
        assert (whole.op.type, whole.op.name) == ("Identity", "clip_by_norm")
        with tf.Session() as s:
            got = s.run([whole, rows, small, clipped_zero, grad_zero])
    np.testing.assert_allclose(got[0], [[0.18257418, 0.36514837], [0.5477225, 0.73029673]],
                               rtol=1e-6)
    np.testing.assert_allclose(got[1], [[0.4472136, 0.8944272], [0.6, 0.8]], rtol=1e-6)
    np.testing.assert_allclose(got[2], [[1.0, 2.0], [3.0, 4.0]], rtol=1e-6)
    np.testing.assert_array_equal(got[3], [0.0, 0.0])
    np.testing.assert_array_equal(got[4], [1.0, 2.0])


def test_clip_by_global_norm_with_a_none_entry_as_tf():
    """Observed in TF: clip_by_global_norm([[3., 4.], None, [[12.]]], 6.5) returns
    ([[1.5, 2.], None, [[6.]]], 13.0); the tensors are named
    clip_by_global_norm/clip_by_global_norm/_0 and _2, the norm global_norm/global_norm."""
    with tf.Graph().as_default():
        a, b = tf.constant([3.0, 4.0]), tf.constant([[12.0]])
        clipped, norm = tf.clip_by_global_norm([a, None, b], 6.5)
        assert clipped[1] is None
        assert [clipped[0].op.name, clipped[2].op.name, norm.op.name] == [
            "clip_by_global_norm/clip_by_global_norm/_0",
            "clip_by_global_norm/clip_by_global_norm/_2", "global_norm/global_norm"]
        assert clipped[2].shape.as_list() == [1, 1]
        with tf.Session() as s:
            got = s.run([clipped[0], clipped[2], norm, tf.global_norm([a, None, b])])
    np.testing.assert_allclose(got[0], [1.5, 2.0], rtol=1e-6)
    np.testing.assert_allclose(got[1], [[6.0]], rtol=1e-6)
    assert got[2] == 13.0 and got[3] == 13.0


def test_clip_by_global_norm_edge_cases_as_tf():
    """Observed in TF: an infinite norm makes every clipped value NaN (the norm stays inf);
    global_norm([None]) and the norm of clip_by_global_norm([None], 1.) are 0.0; a bare
    tensor is a TypeError."""
    with tf.Graph().as_default():
        inf_list, inf_norm = tf.clip_by_global_norm([tf.constant([np.inf, 1.0])], 1.0)
        nothing, zero = tf.clip_by_global_norm([None], 1.0)
        assert nothing == [None]
        with tf.Session() as s:
            got = s.run([inf_list[0], inf_norm, zero, tf.global_norm([None])])
        with pytest.raises(TypeError, match="`t_list` should be a sequence of tensors"):
            tf.clip_by_global_norm(tf.constant([1.0]), 1.0)
        with pytest.raises(TypeError, match="`t_list` should be a sequence"):
            tf.global_norm(tf.constant([1.0]))
    assert np.isnan(got[0]).all() and got[1] == np.inf
    assert got[2] == 0.0 and got[3] == 0.0


def test_clip_by_global_norm_use_norm_and_gradient_flow():
    rng = np.random.default_rng(2)
    a_val, b_val = rng.normal(size=(3,)), rng.normal(size=(2, 2))
    with tf.Graph().as_default():
        a, b = tf.constant(a_val), tf.constant(b_val)
        norm = tf.global_norm([a, b])
        clipped, used = tf.clip_by_global_norm([a, b], 0.5, use_norm=norm)
        assert used is norm
        loss = tf.reduce_sum(clipped[0]) + tf.reduce_sum(clipped[1])
        ga, = tf.gradients(loss, a)
        with tf.Session() as s:
            got_a, got_norm, got_ga = s.run([clipped[0], norm, ga])
    want_norm = np.sqrt(np.sum(a_val ** 2) + np.sum(b_val ** 2))
    np.testing.assert_allclose(got_norm, want_norm, rtol=1e-12)
    np.testing.assert_allclose(got_a, a_val * 0.5 / want_norm, rtol=1e-12)
    assert got_ga.shape == (3,) and np.isfinite(got_ga).all()
