"""Batch matmul: tf.matmul on inputs of rank > 2 (or unknown rank) builds BatchMatMulV2 with
broadcast batch dims and transposes mapped onto adj_x/adj_y, as TF 1.14+ dispatches; kernels
on CPU and a virtual GPU against numpy, static shapes and TF's build-time errors (messages as
observed from TensorFlow 2.21's tf.compat.v1)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_harness import FLOATS, covers, rand, tf_dtype

import engine as tf

BATCH_SHAPES = [((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((3, 4), (2, 4, 5)),
                ((2, 3, 4), (4, 5)), ((1, 3, 4), (7, 4, 2))]


def _t(m: np.ndarray) -> np.ndarray:
    return np.swapaxes(m, -1, -2)


@covers("BatchMatMulV2")
@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.int64])
@pytest.mark.parametrize("adj_a", [False, True])
@pytest.mark.parametrize("adj_b", [False, True])
def test_batch_matmul_broadcasts_batch_dims(runner, dtype, adj_a, adj_b):
    if runner.device == "gpu" and np.issubdtype(dtype, np.integer):
        pytest.skip("TF's GPU BatchMatMul is float-only, as its GPU MatMul")
    rng = np.random.default_rng(1)
    feeds, outs, wants = {}, [], []
    with runner.scope():
        for a_shape, b_shape in BATCH_SHAPES:
            a_val, b_val = rand(rng, a_shape, dtype), rand(rng, b_shape, dtype)
            a_in = _t(a_val).copy() if adj_a else a_val
            b_in = _t(b_val).copy() if adj_b else b_val
            a = tf.placeholder(tf_dtype(dtype), a_in.shape)
            b = tf.placeholder(tf_dtype(dtype), b_in.shape)
            feeds.update({a: a_in, b: b_in})
            outs.append(tf.matmul(a, b, transpose_a=adj_a, adjoint_b=adj_b))
            wants.append(np.matmul(a_val.astype(np.float64), b_val.astype(np.float64)))
    for out, got, want in zip(outs, runner.run(outs, feeds), wants):
        assert out.op.type == "BatchMatMulV2"
        assert out.shape.as_list() == list(want.shape)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want.astype(dtype), rtol=tol, atol=tol)


def test_matmul_dispatch_as_tf():
    """Observed in TF: [2,1,3,4] x [5,4,6] is BatchMatMulV2 `MatMul` of shape (2, 5, 3, 6);
    transpose_b sets adj_y; unknown rank gives <unknown>; [?,?,3] x [3,4] is (?, ?, 4);
    rank-2 inputs with adjoint_a stay MatMul with transpose_a."""
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [2, 1, 3, 4])
        m = tf.matmul(a, tf.placeholder(tf.float32, [5, 4, 6]))
        assert (m.op.type, m.op.name, m.shape.as_list()) == ("BatchMatMulV2", "MatMul",
                                                             [2, 5, 3, 6])
        assert m.op.attrs["adj_x"] is False
        t = tf.matmul(a, tf.placeholder(tf.float32, [5, 6, 4]), transpose_b=True)
        assert t.op.attrs["adj_y"] is True and t.shape.as_list() == [2, 5, 3, 6]
        u = tf.matmul(tf.placeholder(tf.float32), tf.placeholder(tf.float32, [3, 4]))
        assert u.op.type == "BatchMatMulV2" and u.shape.ndims is None
        p = tf.matmul(tf.placeholder(tf.float32, [None, None, 3]),
                      tf.placeholder(tf.float32, [3, 4]))
        assert p.shape.as_list() == [None, None, 4]
        two = tf.matmul(tf.placeholder(tf.float32, [2, 2]), tf.placeholder(tf.float32, [2, 2]),
                        adjoint_a=True)
        assert two.op.type == "MatMul" and two.op.attrs["transpose_a"] is True


@pytest.mark.parametrize("a_shape, b_shape, match", [
    ([2, 1, 3, 4], [3, 5, 6], r"Dimensions must be equal, but are 4 and 5 for 'MatMul' "
                              r"\(op: 'BatchMatMulV2'\) with input shapes: \[2,1,3,4\], "
                              r"\[3,5,6\]"),
    ([2, 3, 4], [3, 4, 5], r"Dimensions must be equal, but are 2 and 3"),
    ([4], [2, 4, 6], r"Shape must be at least rank 2 but is rank 1"),
])
def test_batch_matmul_shape_errors(a_shape, b_shape, match):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=match):
        tf.matmul(tf.placeholder(tf.float32, a_shape), tf.placeholder(tf.float32, b_shape))


def test_transpose_and_adjoint_together_is_an_error():
    """Observed in TF: `Only one of `transpose_a` and `adjoint_a` can be True. Received
    `transpose_a`=True, `adjoint_a`=True.`"""
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Only one of `transpose_a` "
                                                                  "and `adjoint_a` can be True"):
        x = tf.placeholder(tf.float32, [2, 2])
        tf.matmul(x, x, transpose_a=True, adjoint_a=True)


@covers("BatchMatMulV2")
def test_batch_matmul_of_unknown_rank_runs(runner):
    rng = np.random.default_rng(2)
    a_val, b_val = rand(rng, (2, 3, 4), np.float64), rand(rng, (4, 2), np.float64)
    with runner.scope():
        a = tf.placeholder(tf.float64)
        b = tf.placeholder(tf.float64, [4, 2])
        c = a @ b
    np.testing.assert_allclose(runner.run(c, {a: a_val, b: b_val}), a_val @ b_val, rtol=1e-12)


@covers("BatchMatMulV2")
def test_complex_adjoint_conjugates(runner):
    if runner.device == "gpu":
        pytest.skip("complex BatchMatMul is a CPU kernel here")
    rng = np.random.default_rng(3)
    a_val = (rand(rng, (2, 3, 2), np.float64) + 1j * rand(rng, (2, 3, 2), np.float64))
    b_val = (rand(rng, (2, 3, 4), np.float64) + 1j * rand(rng, (2, 3, 4), np.float64))
    with runner.scope():
        a = tf.placeholder(tf.complex128, [2, 3, 2])
        b = tf.placeholder(tf.complex128, [2, 3, 4])
        c = tf.matmul(a, b, adjoint_a=True)
    got = runner.run(c, {a: a_val, b: b_val})
    np.testing.assert_allclose(got, np.conj(_t(a_val)) @ b_val, rtol=1e-12)
