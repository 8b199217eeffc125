"""tf.gradients of the math family's rules (engine/ops/math_grad.py) against torch autograd on
seeded random inputs, static and dynamic shapes: unary functions, the piecewise-constant ops
(whose rule sends nothing back), remainders, no-NaN products, clipping, batch matmul with
broadcast batch dims, Min/Prod (zeros included), scans, and RsqrtGrad's second-order rule;
plus TF's numbers for ties and zeros (observed from TensorFlow 2.21's tf.compat.v1)."""

from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest
import torch
from grad_harness import DYNAMIC, away_from_zero, check_gradients, grad_test, rand

import engine as tf

# ---- unary functions ----

UNARY = {
    "Log1p": (tf.log1p, torch.log1p, (-0.8, 3.0)),
    "Expm1": (tf.expm1, torch.expm1, (-2.0, 2.0)),
    "Sin": (tf.sin, torch.sin, (-3.0, 3.0)),
    "Cos": (tf.cos, torch.cos, (-3.0, 3.0)),
    "Erf": (tf.erf, torch.erf, (-2.0, 2.0)),
    "Rsqrt": (tf.rsqrt, torch.rsqrt, (0.2, 3.0)),
}


@grad_test(*UNARY)
@DYNAMIC
@pytest.mark.parametrize("op_type", sorted(UNARY))
def test_unary_gradients(op_type, dynamic):
    tf_fn, torch_fn, (low, high) = UNARY[op_type]
    x = rand(np.random.default_rng(zlib.crc32(op_type.encode())), (5, 4), low, high)
    check_gradients(tf_fn, torch_fn, [x], dynamic=dynamic)


# Each is piecewise constant: TF's rule sends nothing back, torch's derivative is 0, so the
# only gradient is the one through the outer product with x.
STEPS = {
    "Floor": (tf.floor, torch.floor), "Ceil": (tf.ceil, torch.ceil),
    "Round": (tf.round, torch.round), "Rint": (tf.rint, torch.round),
    "Sign": (tf.sign, torch.sign),
}


@grad_test(*STEPS)
@pytest.mark.parametrize("op_type", sorted(STEPS))
def test_piecewise_constant_gradients(op_type):
    tf_step, torch_step = STEPS[op_type]
    x = rand(np.random.default_rng(4), (3, 4), -3.0, 3.0)
    check_gradients(lambda x: x * tf_step(x), lambda x: x * torch_step(x), [x])


def test_floor_and_round_give_none_and_sign_gives_zeros_as_tf():
    """Observed in TF: tf.gradients(tf.floor(v), v) and of tf.round are [None]; of tf.sign
    [0, 0, 0]."""
    with tf.Graph().as_default():
        v = tf.constant([1.0, 5.0, 2.0])
        assert tf.gradients(tf.floor(v), v) == [None]
        assert tf.gradients(tf.round(v), v) == [None]
        assert tf.gradients(tf.floordiv(v, 2.0), v) == [None]
        with tf.Session() as s:
            np.testing.assert_array_equal(s.run(tf.gradients(tf.sign(v), v)[0]), [0, 0, 0])


def test_truncatemod_has_no_gradient_as_tf():
    """TF raises `LookupError: No gradient defined for operation 'TruncateMod' (op type:
    TruncateMod)`."""
    with tf.Graph().as_default():
        v = tf.constant([1.0, 5.0])
        with pytest.raises(LookupError, match=r"No gradient defined for operation 'TruncateMod' "
                                              r"\(op type: TruncateMod\)"):
            tf.gradients(tf.truncatemod(v, 2.0), v)


# ---- binary ops ----

SHAPE_PAIRS = [((4, 3), (4, 3)), ((4, 3), (3,)), ((4, 1), (1, 3)), ((), (4, 3))]


def _floor_div(x, y):
    return torch.div(x, y, rounding_mode="floor")


def _trunc_div(x, y):
    return torch.div(x, y, rounding_mode="trunc")


BINARY = {
    "FloorMod": (tf.floormod, torch.remainder),
    "MulNoNan": (tf.multiply_no_nan, torch.mul),
    "DivNoNan": (tf.div_no_nan, torch.div),
    # Piecewise constant in both inputs: the gradient comes through `* x + y` only.
    "FloorDiv": (lambda x, y: x * tf.floordiv(x, y) + y, lambda x, y: x * _floor_div(x, y) + y),
    "TruncateDiv": (lambda x, y: x * tf.truncatediv(x, y) + y,
                    lambda x, y: x * _trunc_div(x, y) + y),
}


@grad_test(*BINARY)
@DYNAMIC
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("op_type", sorted(BINARY))
def test_binary_gradients(op_type, shapes, dynamic):
    rng = np.random.default_rng(zlib.crc32(f"{op_type}{shapes}".encode()))
    x, y = rand(rng, shapes[0], -5.0, 5.0), away_from_zero(rng, shapes[1], 0.5, 2.0)
    check_gradients(*BINARY[op_type], [x, y], dynamic=dynamic)


def test_floormod_gradient_as_tf():
    """Observed in TF: for v = [1, 5, 2], y = [2, 3, 0.5] the gradients of floormod(v, y)
    are [1, 1, 1] and [-0, -1, -4]."""
    with tf.Graph().as_default():
        v, y = tf.constant([1.0, 5.0, 2.0]), tf.constant([2.0, 3.0, 0.5])
        with tf.Session() as s:
            gv, gy = s.run(tf.gradients(tf.floormod(v, y), [v, y]))
    np.testing.assert_array_equal(gv, [1, 1, 1])
    np.testing.assert_array_equal(gy, [0, -1, -4])


# ---- clipping ----

CLIP_SHAPES = [((4, 3), (), ()), ((4, 3), (3,), ()), ((4, 3), (4, 1), (3,))]


@grad_test("ClipByValue")
@DYNAMIC
@pytest.mark.parametrize("shapes", CLIP_SHAPES, ids=str)
def test_clip_by_value_gradients(shapes, dynamic):
    rng = np.random.default_rng(zlib.crc32(str(shapes).encode()))
    t = rand(rng, shapes[0], -3.0, 3.0)
    lo, hi = rand(rng, shapes[1], -1.5, -0.5), rand(rng, shapes[2], 0.5, 1.5)
    check_gradients(tf.clip_by_value, lambda t, lo, hi: torch.maximum(torch.minimum(t, hi), lo),
                    [t, lo, hi], dynamic=dynamic)


# ---- batch matmul ----

BATCH_SHAPES = [((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5)),
                ((2, 3, 4), (4, 5)), ((1, 3, 4), (3, 4, 2))]


def _mT(x):  # noqa: N802 - torch's spelling
    return x.transpose(-1, -2)


@grad_test("BatchMatMulV2")
@DYNAMIC
@pytest.mark.parametrize("adj_a", [False, True])
@pytest.mark.parametrize("adj_b", [False, True])
@pytest.mark.parametrize("shapes", BATCH_SHAPES, ids=str)
def test_batch_matmul_gradients(shapes, adj_a, adj_b, dynamic):
    rng = np.random.default_rng(zlib.crc32(f"{shapes}{adj_a}{adj_b}".encode()))
    a, b = rand(rng, shapes[0]), rand(rng, shapes[1])
    a = np.swapaxes(a, -1, -2).copy() if adj_a else a
    b = np.swapaxes(b, -1, -2).copy() if adj_b else b

    def torch_fn(a, b):
        return torch.matmul(_mT(a) if adj_a else a, _mT(b) if adj_b else b)
    check_gradients(functools.partial(tf.matmul, transpose_a=adj_a, adjoint_b=adj_b), torch_fn,
                    [a, b], dynamic=dynamic)


def test_batch_matmul_gradient_of_unknown_rank():
    rng = np.random.default_rng(5)
    a, b, w = rand(rng, (2, 3, 4)), rand(rng, (4, 2)), rand(rng, (2, 3, 2))
    g = tf.Graph()
    with g.as_default():
        pa, pb = tf.placeholder(tf.float64), tf.placeholder(tf.float64, [4, 2])
        pw = tf.placeholder(tf.float64)
        out = tf.matmul(pa, pb)
        assert out.op.type == "BatchMatMulV2" and out.shape.ndims is None
        ga, gb = tf.gradients(out, [pa, pb], grad_ys=pw)
        with tf.Session() as s:
            got_a, got_b = s.run([ga, gb], {pa: a, pb: b, pw: w})
    ta, tb = (torch.from_numpy(v).requires_grad_() for v in (a, b))
    want_a, want_b = torch.autograd.grad(ta @ tb, [ta, tb], grad_outputs=torch.from_numpy(w))
    np.testing.assert_allclose(got_a, want_a.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got_b, want_b.numpy(), rtol=1e-12)


# ---- reductions and scans ----

AXES = [None, 0, -1, [0, 2], [2, 1]]


def _dims(axis, rank=3):
    return tuple(range(rank)) if axis is None else tuple(np.atleast_1d(axis).tolist())


def _torch_prod(x, dims, keepdim):
    for d in sorted((d % x.dim() for d in dims), reverse=True):
        x = torch.prod(x, d, keepdim=keepdim)
    return x


@grad_test("Min")
@DYNAMIC
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
def test_min_gradients(axis, keepdims, dynamic):
    x = rand(np.random.default_rng(6), (2, 3, 4))
    check_gradients(lambda x: tf.reduce_min(x, axis=axis, keepdims=keepdims),
                    lambda x: torch.amin(x, dim=_dims(axis), keepdim=keepdims), [x],
                    dynamic=dynamic)


@grad_test("Prod")
@DYNAMIC
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("zeros", [0, 1, 2])
def test_prod_gradients_with_zeros(axis, keepdims, zeros, dynamic):
    x = rand(np.random.default_rng(7), (2, 3, 4), 0.5, 1.5)
    x.reshape(-1)[[5, 17][:zeros]] = 0.0
    check_gradients(lambda x: tf.reduce_prod(x, axis=axis, keepdims=keepdims),
                    lambda x: _torch_prod(x, _dims(axis), keepdims), [x], dynamic=dynamic)


def test_min_and_prod_gradients_as_tf():
    """Observed in TF: d reduce_min(x, 1) at [[1, 1, 3], [3, 0, 3]] is [[.5, .5, 0], [0, 1,
    0]]; d reduce_prod(x, 1) at [[1, 2, 0], [3, 0, 0]] is [[0, 0, 2], [0, 0, 0]], and
    d reduce_prod(x) there is all zeros."""
    with tf.Graph().as_default():
        m = tf.constant([[1.0, 1.0, 3.0], [3.0, 0.0, 3.0]])
        p = tf.constant([[1.0, 2.0, 0.0], [3.0, 0.0, 0.0]])
        grads = [tf.gradients(tf.reduce_min(m, 1), m)[0], tf.gradients(tf.reduce_prod(p, 1), p)[0],
                 tf.gradients(tf.reduce_prod(p), p)[0]]
        with tf.Session() as s:
            got = s.run(grads)
    np.testing.assert_array_equal(got[0], [[0.5, 0.5, 0], [0, 1, 0]])
    np.testing.assert_array_equal(got[1], [[0, 0, 2], [0, 0, 0]])
    np.testing.assert_array_equal(got[2], np.zeros((2, 3)))


def test_reduction_gradients_with_runtime_axes_and_unknown_rank():
    """Axes fed at run time, or an all-axes reduction of unknown rank, still differentiate
    (grad_ys stands in for a loss: the core Sum rule wants a known rank)."""
    rng = np.random.default_rng(8)
    x_val, w_val = rand(rng, (2, 3, 4), 0.5, 1.5), rand(rng, (3,))
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64)
        axes = tf.placeholder(tf.int32, [None])
        w = tf.placeholder(tf.float64)
        gx_min, = tf.gradients(tf.reduce_min(x, axes), x, grad_ys=w)
        gx_prod, = tf.gradients(tf.reduce_prod(x), x)
        with tf.Session() as s:
            got_min, got_prod = s.run([gx_min, gx_prod], {x: x_val, axes: [2, 0], w: w_val})
    t = torch.from_numpy(x_val).requires_grad_()
    want_min, = torch.autograd.grad(torch.amin(t, dim=(0, 2)), t,
                                    grad_outputs=torch.from_numpy(w_val))
    want_prod, = torch.autograd.grad(torch.prod(t), t)
    np.testing.assert_allclose(got_min, want_min.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got_prod, want_prod.numpy(), rtol=1e-10)


def _torch_scan(scan, identity, x, dim, exclusive, reverse):
    if reverse:
        x = x.flip(dim)
    out = scan(x, dim)
    if exclusive:
        pad = torch.full_like(out.narrow(dim, 0, 1), identity)
        out = torch.cat([pad, out.narrow(dim, 0, out.shape[dim] - 1)], dim)
    return out.flip(dim) if reverse else out


SCANS = {"Cumsum": (tf.cumsum, torch.cumsum, 0.0), "Cumprod": (tf.cumprod, torch.cumprod, 1.0)}


@grad_test(*SCANS)
@DYNAMIC
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("op_type", sorted(SCANS))
def test_scan_gradients(op_type, axis, exclusive, reverse, dynamic):
    tf_scan, torch_scan, identity = SCANS[op_type]
    # Cumprod's rule divides by x (as TF's), so its inputs stay away from zero.
    x = away_from_zero(np.random.default_rng(9), (3, 4), 0.5, 1.5)
    check_gradients(lambda x: tf_scan(x, axis, exclusive=exclusive, reverse=reverse),
                    lambda x: _torch_scan(torch_scan, identity, x, axis, exclusive, reverse),
                    [x], dynamic=dynamic)


def test_cumsum_gradient_as_tf():
    """Observed in TF: d sum(cumsum(v, exclusive=True, reverse=True) * [1, 2, 3]) is [0, 1, 3]."""
    with tf.Graph().as_default():
        v = tf.constant([1.0, 5.0, 2.0])
        g, = tf.gradients(tf.cumsum(v, exclusive=True, reverse=True) * [1.0, 2.0, 3.0], v)
        with tf.Session() as s:
            np.testing.assert_array_equal(s.run(g), [0, 1, 3])


# ---- second order ----

@grad_test("RsqrtGrad")
@DYNAMIC
def test_rsqrt_second_order(dynamic):
    """Differentiates RsqrtGrad(y, dy) in both inputs: dy comes from grad_ys = w."""
    rng = np.random.default_rng(10)
    x, w = rand(rng, (3, 4), 0.3, 2.0), rand(rng, (3, 4))

    def tf_fn(x, w):
        return tf.gradients(tf.rsqrt(x), x, grad_ys=w)[0]

    def torch_fn(x, w):
        return torch.autograd.grad(torch.rsqrt(x), x, grad_outputs=w, create_graph=True)[0]
    g, _ = check_gradients(tf_fn, torch_fn, [x, w], dynamic=dynamic)
    assert sum(op.type == "RsqrtGrad" for op in g.get_operations()) >= 3


def test_rsqrt_second_derivative_as_tf():
    """Observed in TF: d/dv of tf.gradients(tf.rsqrt(v), v) at v = [1, 5, 2] is [0.75,
    0.01341641, 0.1325825], built from RsqrtGrad ops."""
    with tf.Graph().as_default():
        v = tf.constant([1.0, 5.0, 2.0])
        first, = tf.gradients(tf.rsqrt(v), v)
        second, = tf.gradients(first, v)
        assert first.op.type == "RsqrtGrad"
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(second), [0.75, 0.01341641, 0.1325825], rtol=1e-6)


# ---- composites ----

@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (0, True), (-1, True)])
def test_reduce_logsumexp_gradients(axis, keepdims):
    x = rand(np.random.default_rng(11), (3, 4), -3.0, 3.0) + 500.0   # large: stability matters
    dims = (0, 1) if axis is None else axis
    check_gradients(lambda x: tf.reduce_logsumexp(x, axis, keepdims=keepdims),
                    lambda x: torch.logsumexp(x, dims, keepdim=keepdims), [x])


def test_reduce_logsumexp_gradient_as_tf():
    """Observed in TF: d reduce_logsumexp([1, 5, 2]) is [0.01714783, 0.93623954,
    0.04661262] (the softmax)."""
    with tf.Graph().as_default():
        v = tf.constant([1.0, 5.0, 2.0])
        g, = tf.gradients(tf.reduce_logsumexp(v), v)
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(g), [0.01714783, 0.93623954, 0.04661262],
                                       rtol=1e-6)


def test_clip_by_norm_and_global_norm_gradients():
    rng = np.random.default_rng(12)
    a, b = rand(rng, (3, 2)), rand(rng, (4,))

    def tf_fn(a, b):
        clipped, _ = tf.clip_by_global_norm([tf.clip_by_norm(a, 0.7, axes=[1]), b], 1.5)
        return clipped[0] * tf.reduce_sum(clipped[1])

    def torch_fn(a, b):
        a = a * 0.7 / torch.clamp(torch.sqrt((a * a).sum(1, keepdim=True)), min=0.7)
        norm = torch.sqrt((a * a).sum() + (b * b).sum())
        scale = 1.5 * torch.minimum(1 / norm, torch.tensor(1 / 1.5, dtype=norm.dtype))
        return (a * scale) * (b * scale).sum()
    check_gradients(tf_fn, torch_fn, [a, b])
