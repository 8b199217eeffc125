"""Activations (relu6, leaky_relu, elu, selu, softplus, softsign), their Grad ops, L2Loss,
l2_normalize and softmax/log_softmax along any axis: kernels against numpy on CPU and a
virtual GPU, gradients and the Grad ops' own gradients (second order) against torch
autograd, and TF's op types, names and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from grad_harness import DYNAMIC, FLOAT32, check_gradients, grad_test
from kernel_harness import FLOATS, assert_close, covers, tf_dtype

import engine as tf
from engine import errors
from engine.kernels import nn as nn_kernels

SELU = (1.0507009873554804934193349852946, 1.6732632423543772848170429916717)


def _np_softplus(x):
    return np.logaddexp(x, 0)


def _np_selu(x):
    return SELU[0] * np.where(x < 0, SELU[1] * np.expm1(x), x)


ACTIVATIONS = {
    # op type: (tf.nn function, numpy forward, numpy derivative, torch function)
    "Relu6": (tf.nn.relu6, lambda x: np.clip(x, 0, 6), lambda x: ((x > 0) & (x < 6)) * 1.0,
              F.relu6),
    "LeakyRelu": (tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x),
                  lambda x: np.where(x > 0, 1.0, 0.2), lambda x: F.leaky_relu(x, 0.2)),
    "Elu": (tf.nn.elu, lambda x: np.where(x < 0, np.expm1(x), x),
            lambda x: np.where(x < 0, np.exp(x), 1.0), F.elu),
    "Selu": (tf.nn.selu, _np_selu,
             lambda x: SELU[0] * np.where(x < 0, SELU[1] * np.exp(x), 1.0), F.selu),
    "Softplus": (tf.nn.softplus, _np_softplus, lambda x: 1 / (1 + np.exp(-x)), F.softplus),
    "Softsign": (tf.nn.softsign, lambda x: x / (1 + np.abs(x)),
                 lambda x: 1 / (1 + np.abs(x)) ** 2, F.softsign),
}
# What each Grad op takes beside the incoming gradient (TF's convention).
GRAD_SECOND = {"Relu6": "output", "LeakyRelu": "input", "Elu": "output", "Selu": "output",
               "Softplus": "input", "Softsign": "input"}


def _inputs(rng, shape, dtype):
    """Values away from the kinks (0 and 6), spread over both sides of each."""
    x = rng.uniform(0.1, 8.0, shape) * rng.choice([-1.0, 1.0], shape)
    x[np.abs(x - 6) < 0.1] = 5.5
    return x.astype(dtype)


@covers(*ACTIVATIONS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op_type", sorted(ACTIVATIONS))
def test_activation_kernels(runner, op_type, dtype):
    fn, ref, _, _ = ACTIVATIONS[op_type]
    x_val = _inputs(np.random.default_rng(1), (4, 5), dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [None, 5])
        y = fn(x)
    assert y.op.type == op_type and y.op.name == op_type
    got = runner.run(y, {x: x_val})
    np.testing.assert_allclose(got, ref(x_val.astype(np.float64)),
                               rtol=2e-6 if dtype == np.float32 else 1e-12, atol=1e-7)


@covers(*(f"{op}Grad" for op in ACTIVATIONS))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op_type", sorted(f"{op}Grad" for op in ACTIVATIONS))
def test_activation_grad_kernels(runner, op_type, dtype):
    forward = op_type[:-len("Grad")]
    _, ref, derivative, _ = ACTIVATIONS[forward]
    rng = np.random.default_rng(2)
    x_val = _inputs(rng, (3, 4), np.float64)
    dy_val = rng.uniform(-2, 2, (3, 4))
    second = ref(x_val) if GRAD_SECOND[forward] == "output" else x_val
    attrs = {"T": tf_dtype(dtype)}
    if forward == "LeakyRelu":
        attrs["alpha"] = 0.2
    with runner.scope():
        dy = tf.placeholder(tf_dtype(dtype), [3, 4])
        s = tf.placeholder(tf_dtype(dtype), [3, 4])
        out = runner.graph.create_op(op_type, [dy, s], attrs).outputs[0]
    got = runner.run(out, {dy: dy_val.astype(dtype), s: second.astype(dtype)})
    np.testing.assert_allclose(got, dy_val * derivative(x_val),
                               rtol=2e-6 if dtype == np.float32 else 1e-12, atol=1e-6)


@covers("Softplus")
@pytest.mark.parametrize("dtype", FLOATS)
def test_softplus_uses_tf_thresholds_and_never_overflows(runner, dtype):
    x_val = np.array([-1000.0, -100.0, -20.0, -1.0, 0.0, 1.0, 20.0, 100.0, 1000.0], dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [9])
        y = tf.nn.softplus(x)
    got = runner.run(y, {x: x_val})
    assert np.all(np.isfinite(got))
    threshold = np.log(np.finfo(dtype).eps) + 2
    with np.errstate(over="ignore"):
        want = np.where(x_val > -threshold, x_val,
                        np.where(x_val < threshold, np.exp(x_val), np.log1p(np.exp(x_val))))
    assert_close(got, want, dtype)


def test_leaky_relu_keeps_alpha_and_casts_integers():
    with tf.Graph().as_default():
        y = tf.nn.leaky_relu(tf.constant([-2, 3]), alpha=0.1)
        assert y.op.get_attr("alpha") == pytest.approx(0.1) and y.dtype == tf.float32
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(y), [-0.2, 3.0], rtol=1e-6)


@pytest.mark.parametrize("op_type", sorted(set(ACTIVATIONS) - {"LeakyRelu"}))   # it casts
def test_activations_reject_integers_at_build_time(op_type):
    with tf.Graph().as_default(), pytest.raises(TypeError, match="int32 not in list"):
        ACTIVATIONS[op_type][0](tf.constant([1, 2]))


@grad_test(*ACTIVATIONS)
@DYNAMIC
@pytest.mark.parametrize("op_type", sorted(ACTIVATIONS))
def test_activation_gradients(op_type, dynamic):
    fn, _, _, torch_fn = ACTIVATIONS[op_type]
    x = _inputs(np.random.default_rng(3), (5, 4), np.float64)
    check_gradients(fn, torch_fn, [x], dynamic=dynamic)


@pytest.mark.parametrize("op_type", sorted(ACTIVATIONS))
def test_activation_gradients_float32(op_type):
    fn, _, _, torch_fn = ACTIVATIONS[op_type]
    x = _inputs(np.random.default_rng(4), (6, 3), np.float32)
    _, grads = check_gradients(fn, torch_fn, [x], tol=FLOAT32)
    assert grads[0].dtype == tf.float32
    assert grads[0].op.type == f"{op_type}Grad"


SECOND_ORDER = sorted(f"{op}Grad" for op in ACTIVATIONS if op != "Softsign")


@grad_test(*SECOND_ORDER)
@pytest.mark.parametrize("op_type", SECOND_ORDER)
def test_activation_grad_op_gradients(op_type):
    """Second order: tf.gradients of the gradient, with respect to x and to the incoming
    gradient, against torch's double backward."""
    fn, _, _, torch_fn = ACTIVATIONS[op_type[:-len("Grad")]]
    rng = np.random.default_rng(5)
    x, dy = _inputs(rng, (4, 3), np.float64), rng.uniform(-2, 2, (4, 3))

    def tf_grad(x_, dy_):
        return tf.gradients(fn(x_), x_, grad_ys=dy_)[0]

    def torch_grad(x_, dy_):
        return torch.autograd.grad(torch_fn(x_), x_, dy_, create_graph=True)[0]
    check_gradients(tf_grad, torch_grad, [x, dy])


def test_softsign_grad_has_no_gradient_as_in_tf():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        g = tf.gradients(tf.reduce_sum(tf.nn.softsign(x)), x)[0]
        with pytest.raises(LookupError, match=r"No gradient defined for operation '.*' "
                                              r"\(op type: SoftsignGrad\)"):
            tf.gradients(tf.reduce_sum(g), x)


# ---- L2Loss and l2_normalize ----

@covers("L2Loss")
@pytest.mark.parametrize("dtype", FLOATS)
def test_l2_loss(runner, dtype):
    x_val = np.random.default_rng(6).uniform(-2, 2, (3, 4)).astype(dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [None, 4])
        y = tf.nn.l2_loss(x)
    assert y.shape.as_list() == [] and y.op.type == "L2Loss" and y.op.name == "L2Loss"
    np.testing.assert_allclose(runner.run(y, {x: x_val}), (x_val.astype(np.float64) ** 2)
                               .sum() / 2, rtol=1e-6)


@grad_test("L2Loss")
@DYNAMIC
def test_l2_loss_gradients(dynamic):
    x = np.random.default_rng(7).uniform(-2, 2, (3, 4))
    check_gradients(tf.nn.l2_loss, lambda t: (t * t).sum() / 2, [x], dynamic=dynamic)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, [0, 1]], ids=str)
def test_l2_normalize_matches_numpy_and_torch(axis):
    x = np.random.default_rng(8).uniform(-2, 2, (3, 4))
    x[0] = 0.0                              # an all-zero row stays zero (epsilon guards it)
    dims = tuple(range(2)) if axis is None else tuple(np.atleast_1d(axis))

    def torch_fn(t):
        return t / torch.sqrt(torch.clamp((t * t).sum(dims, keepdim=True), min=1e-12))
    with tf.Graph().as_default():
        with tf.Session() as s:
            got = s.run(tf.nn.l2_normalize(tf.constant(x), axis=axis))
    want = x / np.sqrt(np.maximum((x * x).sum(dims, keepdims=True), 1e-12))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    check_gradients(lambda t: tf.nn.l2_normalize(t, axis), torch_fn, [x + 0.5])


def test_l2_normalize_takes_tf1_dim_argument():
    with tf.Graph().as_default():
        y = tf.nn.l2_normalize(tf.constant([[3.0, 4.0]]), dim=1)
        assert y.op.name == "l2_normalize"
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(y), [[0.6, 0.8]], rtol=1e-6)


# ---- softmax and log_softmax along any axis ----

SOFTMAXES = {"Softmax": (tf.nn.softmax, torch.softmax),
             "LogSoftmax": (tf.nn.log_softmax, torch.log_softmax)}


@pytest.mark.parametrize("axis", [0, 1, -2, 2, -1], ids=str)
@pytest.mark.parametrize("op_type", sorted(SOFTMAXES))
def test_softmax_along_any_axis(op_type, axis):
    tf_fn, torch_fn = SOFTMAXES[op_type]
    x = np.random.default_rng(9).uniform(-30, 30, (2, 3, 4))
    with tf.Graph().as_default():
        y = tf_fn(tf.constant(x), axis=axis)
        dim_y = tf_fn(tf.constant(x), dim=axis)
        last = axis in (2, -1)
        assert (y.op.type == op_type) == last
        with tf.Session() as s:
            got, got_dim = s.run([y, dim_y])
    want = torch_fn(torch.tensor(x), axis).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_dim, want, rtol=1e-12, atol=1e-12)
    check_gradients(lambda t: tf_fn(t, axis=axis), lambda t: torch_fn(t, axis), [x / 10],
                    dynamic=True)


def test_softmax_axis_out_of_range_is_tf_error():
    with tf.Graph().as_default():
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"^`dim` must be in the range \[-2, 2\) where 2 is the number "
                                 r"of dimensions in the input\. Received: dim=2$"):
            tf.nn.softmax(tf.zeros([2, 3]), axis=2)


def test_softmax_on_unknown_rank_uses_the_op():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        assert tf.nn.softmax(x).op.type == "Softmax"
        assert tf.nn.log_softmax(x, axis=1).op.type != "LogSoftmax"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(200, 10), (64, 3), (5, 40, 15), (300, 1)], ids=str)
def test_softmax_with_a_small_last_dim_is_tfs_formula(shape, dtype, monkeypatch):
    # Below 16 classes and from 64 rows on, the kernel computes TF's formula itself
    # (exp(x - max) * 1 / sum) instead of torch.softmax: the same values to rounding, every
    # row summing to 1, logits far beyond exp's range, and -inf / +inf / NaN as TF gives them.
    rng = np.random.default_rng(sum(shape))
    x = rng.uniform(-100, 100, shape).astype(dtype)
    flat = x.reshape(-1, shape[-1])
    flat[0, :] = -np.inf                   # every logit -inf: NaN (-inf - -inf)
    flat[1, 0] = np.inf                    # one +inf: NaN (inf - inf, then 0 * 1/NaN)
    flat[2, 0] = np.nan
    if shape[-1] > 1:
        flat[3, 1] = -np.inf               # one -inf among finite ones: exactly 0
        flat[4, :] = 1e30 if dtype == np.float32 else 1e300     # ties: 1 / n each
    calls = []

    def spy(t, real=nn_kernels.softmax_small_last_dim):
        calls.append(tuple(t.shape))
        return real(t)
    monkeypatch.setattr(nn_kernels, "softmax_small_last_dim", spy)
    with tf.Graph().as_default():
        y = tf.nn.softmax(tf.constant(x))
        with tf.Session() as s:
            got = s.run(y)
    wide = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(wide - wide.max(-1, keepdims=True))
        want = e * (1.0 / e.sum(-1, keepdims=True))
    # float32: x - max rounds to half an ulp of 100 (3.8e-6), which exp turns into a relative
    # error of the same size
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=1e-30)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert calls == [shape]
    torch_y = torch.softmax(torch.from_numpy(x), -1).numpy()
    assert np.array_equal(np.isnan(got), np.isnan(torch_y))
    np.testing.assert_allclose(got, torch_y, rtol=tol, atol=1e-30)
    got_flat = got.reshape(-1, shape[-1])
    if shape[-1] > 1:
        assert got_flat[3, 1] == 0.0
        np.testing.assert_array_equal(got_flat[4], np.full(shape[-1], 1 / shape[-1], dtype))
    finite = got_flat[5:]
    np.testing.assert_allclose(finite.sum(-1), 1.0, rtol=tol)
