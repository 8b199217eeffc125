"""Batch normalization: the fused ops (FusedBatchNorm, V2, V3; training and inference;
NHWC and NCHW; exponential averaging) and their Grad ops against numpy and torch, their
gradient rules and the Grad ops' own gradients (second order) against torch autograd, the
composite tf.nn.batch_normalization and tf.nn.moments, and TF's build-time errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from grad_harness import DYNAMIC, check_gradients, grad_test
from kernel_harness import covers, tf_dtype

import engine as tf

VERSIONS = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
EPS = 0.001


def _fused(op_type, x, scale, offset, mean, variance, training, nchw, factor=1.0):
    attrs = {"T": x.dtype.base_dtype, "epsilon": EPS, "is_training": training,
             "data_format": "NCHW" if nchw else "NHWC", "exponential_avg_factor": factor}
    if op_type != "FusedBatchNorm":
        attrs["U"] = scale.dtype.base_dtype
    return x.graph.create_op(op_type, [x, scale, offset, mean, variance], attrs).outputs


def _np_stats(x, nchw):
    axes = (0, 2, 3) if nchw else (0, 1, 2)
    return axes, x.mean(axes), x.var(axes)


def _view(v, nchw):
    return v.reshape(1, -1, 1, 1) if nchw else v


@covers(*VERSIONS)
@pytest.mark.parametrize("nchw", [False, True], ids=["NHWC", "NCHW"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "infer"])
@pytest.mark.parametrize("op_type", VERSIONS)
def test_fused_batch_norm_kernels(runner, op_type, training, nchw):
    rng = np.random.default_rng(1)
    shape = (2, 3, 4, 5) if nchw else (2, 4, 5, 3)
    x_val = rng.normal(1.0, 2.0, shape).astype(np.float32)
    scale, offset = np.array([1.0, 2.0, 0.5], np.float32), np.array([0.0, 1.0, -1.0],
                                                                    np.float32)
    pop_mean, pop_var = np.array([0.1, 0.2, 0.3], np.float32), np.array([1.0, 2.0, 0.5],
                                                                       np.float32)
    with runner.scope():
        x = tf.placeholder(tf.float32, [None, *shape[1:]])
        stats = (tf.constant([], tf.float32), tf.constant([], tf.float32)) if training else \
            (tf.constant(pop_mean), tf.constant(pop_var))
        outs = _fused(op_type, x, tf.constant(scale), tf.constant(offset), *stats, training,
                      nchw)
    assert len(outs) == (6 if op_type == "FusedBatchNormV3" else 5)
    assert [o.shape.as_list() for o in outs[1:5]] == [[3]] * 4
    got = runner.run(list(outs[:5]), {x: x_val})
    xd = x_val.astype(np.float64)
    axes, mean, var = _np_stats(xd, nchw)
    use_mean, use_var = (mean, var) if training else (pop_mean, pop_var)
    y = (xd - _view(use_mean, nchw)) / np.sqrt(_view(use_var, nchw) + EPS) * \
        _view(scale, nchw) + _view(offset, nchw)
    count = xd.size / 3
    want_running = (mean, var * count / (count - 1)) if training else (pop_mean, pop_var)
    tol = {"rtol": 2e-5, "atol": 2e-5}
    np.testing.assert_allclose(got[0], y, **tol)
    np.testing.assert_allclose(got[1], want_running[0], **tol)
    np.testing.assert_allclose(got[2], want_running[1], **tol)
    if training:                   # reserve spaces: the batch mean and biased variance
        np.testing.assert_allclose(got[3], mean, **tol)
        np.testing.assert_allclose(got[4], var, **tol)


@covers("FusedBatchNormV3")
def test_fused_batch_norm_exponential_average(runner):
    x_val = np.random.default_rng(2).normal(size=(2, 3, 3, 2)).astype(np.float32)
    with runner.scope():
        x = tf.placeholder(tf.float32, x_val.shape)
        _, running_mean, running_var = tf.nn.fused_batch_norm(
            x, [1.0, 2.0], [0.0, 1.0], mean=[0.1, 0.2], variance=[1.0, 2.0],
            exponential_avg_factor=0.3)
    got_mean, got_var = runner.run([running_mean, running_var], {x: x_val})
    xd = x_val.astype(np.float64)
    np.testing.assert_allclose(got_mean, 0.7 * np.array([0.1, 0.2]) + 0.3 * xd.mean((0, 1, 2)),
                               rtol=1e-5)
    np.testing.assert_allclose(got_var, 0.7 * np.array([1.0, 2.0]) +
                               0.3 * xd.var((0, 1, 2), ddof=1), rtol=1e-5)


@covers("FusedBatchNormV3")
def test_fused_batch_norm_half_input_float_statistics(runner):
    x_val = np.random.default_rng(3).normal(size=(2, 2, 2, 3)).astype(np.float16)
    with runner.scope():
        x = tf.placeholder(tf.float16, x_val.shape)
        y, mean, _ = tf.nn.fused_batch_norm(x, tf.ones([3]), tf.zeros([3]))
    assert y.dtype == tf.float16 and mean.dtype == tf.float32
    got_y, got_mean = runner.run([y, mean], {x: x_val})
    xd = x_val.astype(np.float64)
    np.testing.assert_allclose(got_mean, xd.mean((0, 1, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_y, (xd - xd.mean((0, 1, 2))) / np.sqrt(
        xd.var((0, 1, 2)) + EPS), rtol=2e-3, atol=2e-3)


def _torch_bn(nchw, training, pop_mean=None, pop_var=None):
    def fn(x, scale, offset):
        xt = x if nchw else x.permute(0, 3, 1, 2)
        if training:
            y = F.batch_norm(xt, None, None, scale, offset, training=True, eps=EPS)
        else:
            y = (xt - pop_mean.reshape(1, -1, 1, 1)) / torch.sqrt(
                pop_var.reshape(1, -1, 1, 1) + EPS) * scale.reshape(1, -1, 1, 1) + \
                offset.reshape(1, -1, 1, 1)
        return y if nchw else y.permute(0, 2, 3, 1)
    return fn


def _bn_inputs(rng, nchw):
    shape = (2, 3, 4, 3) if nchw else (2, 4, 3, 3)
    return [rng.normal(0.5, 1.5, shape), rng.uniform(0.5, 2, 3), rng.uniform(-1, 1, 3)]


POP = (np.array([0.1, -0.2, 0.3]), np.array([1.0, 2.0, 0.5]))


@covers(*(v.replace("Norm", "NormGrad") for v in VERSIONS))
@pytest.mark.parametrize("nchw", [False, True], ids=["NHWC", "NCHW"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "infer"])
@pytest.mark.parametrize("op_type", VERSIONS)
def test_fused_batch_norm_grad_kernels(runner, op_type, training, nchw):
    rng = np.random.default_rng(4)
    x_val, scale_val, offset_val = _bn_inputs(rng, nchw)
    weight = rng.uniform(-1, 1, x_val.shape)
    with runner.scope():
        x, scale, offset = (tf.placeholder(tf.float64, v.shape) for v in (x_val, scale_val,
                                                                           offset_val))
        stats = (tf.constant(np.zeros(0)), tf.constant(np.zeros(0))) if training else \
            tuple(tf.constant(p) for p in POP)
        y = _fused(op_type, x, scale, offset, *stats, training, nchw)[0]
        grads = tf.gradients(tf.reduce_sum(y * weight), [x, scale, offset])
    assert grads[0].op.type == op_type.replace("Norm", "NormGrad")
    got = runner.run(grads, {x: x_val, scale: scale_val, offset: offset_val})
    pop = [torch.tensor(p) for p in POP]
    ts = [torch.tensor(v, requires_grad=True) for v in (x_val, scale_val, offset_val)]
    out = _torch_bn(nchw, training, *pop)(*ts)
    want = torch.autograd.grad((out * torch.tensor(weight)).sum(), ts)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-10, atol=1e-10)


@grad_test("FusedBatchNormV3")
@DYNAMIC
@pytest.mark.parametrize("nchw", [False, True], ids=["NHWC", "NCHW"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "infer"])
def test_fused_batch_norm_gradients(training, nchw, dynamic):
    rng = np.random.default_rng(5)
    fmt = "NCHW" if nchw else "NHWC"
    pop = (None, None) if training else POP
    check_gradients(
        lambda x, s, o: tf.nn.fused_batch_norm(x, s, o, *(tf.constant(p) for p in POP)
                                               if not training else (None, None),
                                               epsilon=EPS, data_format=fmt,
                                               is_training=training)[0],
        _torch_bn(nchw, training, *(None if p is None else torch.tensor(p) for p in pop)),
        _bn_inputs(rng, nchw), dynamic=dynamic, tol={"rtol": 1e-9, "atol": 1e-10})


@grad_test("FusedBatchNorm", "FusedBatchNormV2")
@pytest.mark.parametrize("op_type", ["FusedBatchNorm", "FusedBatchNormV2"])
def test_older_fused_batch_norm_versions_have_the_same_gradient(op_type):
    rng = np.random.default_rng(6)
    check_gradients(
        lambda x, s, o: _fused(op_type, x, s, o, tf.constant(np.zeros(0)),
                               tf.constant(np.zeros(0)), True, False)[0],
        _torch_bn(False, True), _bn_inputs(rng, False), tol={"rtol": 1e-9, "atol": 1e-10})


GRAD_VERSIONS = [v.replace("Norm", "NormGrad") for v in VERSIONS]


SECOND_ORDER_CASES = [("FusedBatchNormV3", True, False), ("FusedBatchNormV3", True, True),
                      ("FusedBatchNormV3", False, False), ("FusedBatchNormV3", False, True),
                      ("FusedBatchNorm", True, True), ("FusedBatchNormV2", False, False)]


@grad_test(*GRAD_VERSIONS)
@pytest.mark.parametrize(("op_type", "training", "nchw"), SECOND_ORDER_CASES, ids=str)
def test_fused_batch_norm_grad_gradients(op_type, training, nchw):
    """Second order: gradients of the batch-norm gradient with respect to dy, x and scale,
    against torch's double backward, one output of the Grad op at a time."""
    rng = np.random.default_rng(7)
    x_val, scale_val, offset_val = _bn_inputs(rng, nchw)
    dy_val = rng.uniform(-1, 1, x_val.shape)
    torch_bn = _torch_bn(nchw, training, *(torch.tensor(p) for p in POP))
    for index in range(3):
        def tf_fn(dy, x, scale, index=index):
            stats = (tf.constant(np.zeros(0)), tf.constant(np.zeros(0))) if training else \
                tuple(tf.constant(p) for p in POP)
            y = _fused(op_type, x, scale, tf.constant(offset_val), *stats, training, nchw)[0]
            return tf.gradients(y, [x, scale, y.op.inputs[2]], grad_ys=dy)[index]

        def torch_fn(dy, x, scale, index=index):
            offset = torch.tensor(offset_val, requires_grad=True)
            y = torch_bn(x, scale, offset)
            return torch.autograd.grad(y, [x, scale, offset], dy, create_graph=True)[index]
        check_gradients(tf_fn, torch_fn, [dy_val, x_val, scale_val],
                        tol={"rtol": 1e-8, "atol": 1e-9})


# ---- composites ----

@pytest.mark.parametrize("with_scale_offset", [True, False])
def test_batch_normalization_composite(with_scale_offset):
    rng = np.random.default_rng(8)
    x, mean, var = rng.normal(size=(4, 3)), rng.normal(size=3), rng.uniform(0.5, 2, 3)
    offset, scale = rng.normal(size=3), rng.uniform(0.5, 2, 3)
    with tf.Graph().as_default():
        y = tf.nn.batch_normalization(tf.constant(x), mean, var,
                                      offset if with_scale_offset else None,
                                      scale if with_scale_offset else None, 1e-3)
        assert y.op.name.startswith("batchnorm/")
        with tf.Session() as s:
            got = s.run(y)
    want = (x - mean) / np.sqrt(var + 1e-3)
    if with_scale_offset:
        want = want * scale + offset
    np.testing.assert_allclose(got, want, rtol=1e-12)

    def torch_fn(x_, m_, v_, o_, s_):
        return (x_ - m_) / torch.sqrt(v_ + 1e-3) * s_ + o_
    check_gradients(lambda *a: tf.nn.batch_normalization(*a, 1e-3), torch_fn,
                    [x, mean, var, offset, scale], dynamic=True)


@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("axes", [[0], [0, 1, 2], [1, 2], [-1]], ids=str)
def test_moments(axes, keep_dims):
    x = np.random.default_rng(9).normal(size=(2, 3, 4, 5))
    dims = tuple(a % 4 for a in axes)
    with tf.Graph().as_default():
        mean, var = tf.nn.moments(tf.constant(x), axes, keep_dims=keep_dims)
        assert mean.op.name.startswith("moments/")
        want_shape = list(np.mean(x, dims, keepdims=keep_dims).shape)
        assert mean.shape.as_list() == want_shape and var.shape.as_list() == want_shape
        with tf.Session() as s:
            got_mean, got_var = s.run([mean, var])
    np.testing.assert_allclose(got_mean, x.mean(dims, keepdims=keep_dims), rtol=1e-12)
    np.testing.assert_allclose(got_var, x.var(dims, keepdims=keep_dims), rtol=1e-12)
    for pick in (0, 1):
        check_gradients(lambda t, pick=pick: tf.nn.moments(t, axes, keepdims=keep_dims)[pick],
                        lambda t, pick=pick: (t.mean(dims, keepdim=keep_dims), t.var(
                            dims, unbiased=False, keepdim=keep_dims))[pick], [x],
                        dynamic=True)


def test_moments_of_unknown_shape_and_dtype_float16():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float16)
        mean, var = tf.nn.moments(x, [0])
        assert mean.dtype == tf.float16
        with tf.Session() as s:
            got = s.run([mean, var], {x: np.array([[1, 2], [3, 6]], np.float16)})
    np.testing.assert_allclose(got[0], [2, 4])
    np.testing.assert_allclose(got[1], [1, 4])


# ---- errors ----

BN_ERRORS = [
    (lambda: tf.nn.fused_batch_norm(tf.zeros([2, 5, 5, 3]), tf.ones([3]), tf.zeros([3]),
                                    is_training=False),
     r"^Both `mean` and `variance` must be a 1D tensor when `is_training` is False or "
     r"`exponential_avg_factor` != 1\.0\. Received: `mean` None and `variance` None$"),
    (lambda: tf.nn.fused_batch_norm(tf.zeros([2, 5, 5, 3]), tf.ones([4]), tf.zeros([3])),
     r"^Dimensions must be equal, but are 3 and 4 for 'FusedBatchNormV3' "
     r"\(op: 'FusedBatchNormV3'\)"),
    (lambda: tf.nn.fused_batch_norm(tf.zeros([2, 5, 3]), tf.ones([3]), tf.zeros([3])),
     r"^Shape must be rank 4 but is rank 3 for 'FusedBatchNormV3'"),
    (lambda: tf.nn.fused_batch_norm(tf.zeros([2, 5, 5, 3]), tf.ones([3]), tf.zeros([3]),
                                    data_format="NWHC"),
     r"^Attr 'data_format' of 'FusedBatchNormV3' Op passed string 'NWHC' not in"),
]


@pytest.mark.parametrize(("build", "message"), BN_ERRORS, ids=[m[1:30] for _, m in BN_ERRORS])
def test_fused_batch_norm_build_errors(build, message):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=message):
        build()


def test_fused_batch_norm_static_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 5, 5, 3])
        y, mean, var = tf.nn.fused_batch_norm(x, tf.placeholder(tf.float32), tf.zeros([3]))
        assert y.shape.as_list() == [None, 5, 5, 3]
        assert mean.shape.as_list() == [3] and var.shape.as_list() == [3]
        assert y.op.type == "FusedBatchNormV3" and y.op.outputs[5].shape.ndims is None
        assert tf_dtype(np.float32) == y.op.get_attr("U")
