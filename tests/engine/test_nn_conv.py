"""Convolution, pooling and bias_add: kernels against naive numpy loops with TF's padding rules
(SAME puts the odd pixel after), on CPU and on a virtual GPU; every gradient rule (and the
second-order rules of the backprop ops) against torch autograd; static shapes."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from grad_harness import DYNAMIC, check_gradients, grad_test
from kernel_harness import covers, tf_dtype

import engine as tf
from engine.ops import conv_ops

TOL = {np.float32: {"rtol": 2e-5, "atol": 2e-5}, np.float64: {"rtol": 1e-10, "atol": 1e-10}}


# ---- references: TF's window arithmetic written out, numpy loops, torch for autograd ----

def _same_pads(size, k, stride, dilation):
    effective = (k - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


def _pads(padding, size_hw, k_hw, strides, dilations):
    if padding == "VALID":
        return [(0, 0), (0, 0)]
    if padding == "SAME":
        return [_same_pads(size_hw[i], k_hw[i], strides[i], dilations[i]) for i in range(2)]
    return [tuple(padding[1]), tuple(padding[2])]       # explicit NHWC pairs


def np_conv2d(x, w, strides, padding, dilations=(1, 1), depthwise=False):
    """NHWC input, HWIO filter (HW, in, multiplier for depthwise), by loops over outputs."""
    n, h, wd, c = x.shape
    kh, kw = w.shape[:2]
    (t, b), (left, r) = _pads(padding, (h, wd), (kh, kw), strides, dilations)
    xp = np.pad(x, ((0, 0), (t, b), (left, r), (0, 0)))
    eh, ew = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    oh = (xp.shape[1] - eh) // strides[0] + 1
    ow = (xp.shape[2] - ew) // strides[1] + 1
    if depthwise:
        out = np.zeros((n, oh, ow, c * w.shape[3]))
    else:
        groups, c_out = c // w.shape[2], w.shape[3]
        out = np.zeros((n, oh, ow, c_out))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * strides[0]:i * strides[0] + eh:dilations[0],
                       j * strides[1]:j * strides[1] + ew:dilations[1], :]
            if depthwise:
                out[:, i, j] = np.einsum("nhwc,hwcm->ncm", patch, w).reshape(n, -1)
                continue
            gi, go = w.shape[2], c_out // groups
            for g in range(groups):
                out[:, i, j, g * go:(g + 1) * go] = np.einsum(
                    "nhwc,hwco->no", patch[..., g * gi:(g + 1) * gi], w[..., g * go:(g + 1) * go])
    return out


def np_pool(x, k, strides, padding, reduce):
    """NHWC pooling that skips padded positions (TF's SAME: max ignores them, the mean's
    count leaves them out)."""
    n, h, wd, c = x.shape
    (t, b), (left, r) = _pads(padding, (h, wd), k, strides, (1, 1))
    oh = (h + t + b - k[0]) // strides[0] + 1
    ow = (wd + left + r - k[1]) // strides[1] + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * strides[0] - t, j * strides[1] - left
            window = x[:, max(r0, 0):r0 + k[0], max(c0, 0):c0 + k[1], :]
            out[:, i, j] = reduce(window, axis=(1, 2))
    return out


def torch_conv2d(x, w, strides, padding, dilations=(1, 1), nchw=False, depthwise=False):
    xt = x if nchw else x.permute(0, 3, 1, 2)
    (t, b), (left, r) = _pads(padding, xt.shape[2:], w.shape[:2], strides, dilations)
    xt = F.pad(xt, (left, r, t, b))
    if depthwise:
        kh, kw, c, m = w.shape
        weight, groups = w.reshape(kh, kw, c * m).permute(2, 0, 1).unsqueeze(1), c
    else:
        weight, groups = w.permute(3, 2, 0, 1), xt.shape[1] // w.shape[2]
    y = F.conv2d(xt, weight, stride=strides, dilation=dilations, groups=groups)
    return y if nchw else y.permute(0, 2, 3, 1)


def torch_max_pool(x, k, strides, padding, nchw=False):
    xt = x if nchw else x.permute(0, 3, 1, 2)
    (t, b), (left, r) = _pads(padding, xt.shape[2:], k, strides, (1, 1))
    y = F.max_pool2d(F.pad(xt, (left, r, t, b), value=float("-inf")), k, strides)
    return y if nchw else y.permute(0, 2, 3, 1)


def torch_avg_pool(x, k, strides, padding, nchw=False):
    xt = x if nchw else x.permute(0, 3, 1, 2)
    (t, b), (left, r) = _pads(padding, xt.shape[2:], k, strides, (1, 1))
    sums = F.avg_pool2d(F.pad(xt, (left, r, t, b)), k, strides, divisor_override=1)
    ones = F.pad(torch.ones_like(xt[:1, :1]), (left, r, t, b))
    y = sums / F.avg_pool2d(ones, k, strides, divisor_override=1)
    return y if nchw else y.permute(0, 2, 3, 1)


def _alternate(cases, options):
    """Pairs each case with the next option in turn, so every option is exercised without
    the full cross product (kernels and rules are the same code for each)."""
    return [(case, options[i % len(options)]) for i, case in enumerate(cases)]


def _nchw(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def _nhwc(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


# ---- Conv2D ----

CONV_CASES = [
    # (input shape NHWC, filter HWIO, strides, padding, dilations)
    ((2, 6, 6, 3), (3, 3, 3, 4), (2, 2), "SAME", (1, 1)),      # even input: pad (0, 1)
    ((2, 7, 7, 3), (3, 3, 3, 4), (2, 2), "SAME", (1, 1)),      # odd input: pad (1, 1)
    ((1, 6, 5, 2), (2, 2, 2, 3), (1, 1), "SAME", (1, 1)),      # even filter: pad (0, 1)
    ((2, 8, 7, 3), (4, 3, 3, 2), (3, 2), "SAME", (1, 1)),
    ((2, 7, 6, 3), (3, 2, 3, 4), (2, 1), "VALID", (1, 1)),
    ((1, 9, 9, 2), (3, 3, 2, 3), (1, 1), "SAME", (2, 2)),      # dilated
    ((1, 9, 8, 2), (3, 2, 2, 3), (2, 2), "VALID", (2, 3)),
    ((2, 5, 5, 4), (3, 3, 2, 6), (1, 1), "SAME", (1, 1)),      # grouped: 4 / 2 = 2 groups
    ((1, 5, 6, 2), (3, 3, 2, 2), (2, 1), [[0, 0], [1, 2], [0, 1], [0, 0]], (1, 1)),
]


def _conv_id(case):
    return f"{case[0]}-{case[1]}-s{case[2]}-{case[3] if isinstance(case[3], str) else 'EXPL'}" \
           f"-d{case[4]}"


DTYPES = [np.float32, np.float64]


@covers("Conv2D")
@pytest.mark.parametrize("nchw", [False, True], ids=["NHWC", "NCHW"])
@pytest.mark.parametrize(("case", "dtype"), _alternate(CONV_CASES, DTYPES), ids=str)
def test_conv2d_matches_numpy(runner, case, dtype, nchw):
    x_shape, w_shape, strides, padding, dilations = case
    if nchw and not isinstance(padding, str):
        padding = [padding[0], padding[3], padding[1], padding[2]]
    rng = np.random.default_rng(7)
    x_val = rng.uniform(-1, 1, x_shape).astype(dtype)
    w_val = rng.uniform(-1, 1, w_shape).astype(dtype)
    want = np_conv2d(x_val.astype(np.float64), w_val.astype(np.float64), strides,
                     case[3], dilations)
    fmt = "NCHW" if nchw else "NHWC"
    feed_x = _nchw(x_val) if nchw else x_val
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), feed_x.shape)
        y = tf.nn.conv2d(x, tf.constant(w_val), strides=list(strides), padding=padding,
                         data_format=fmt, dilations=list(dilations))
    got = runner.run(y, {x: feed_x})
    assert y.shape.as_list() == list(got.shape)
    np.testing.assert_allclose(_nhwc(got) if nchw else got, want, **TOL[dtype])


def test_conv2d_static_shapes_follow_tf():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 28, 28, 1])
        w = tf.zeros([5, 5, 1, 32])
        assert tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME").shape.as_list() == [None, 28, 28, 32]
        assert tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME").shape.as_list() == [None, 14, 14, 32]
        assert tf.nn.conv2d(x, w, 3, "VALID").shape.as_list() == [None, 8, 8, 32]
        assert tf.nn.conv2d(x, w, [2, 2], "SAME", dilations=2).shape.as_list() == \
            [None, 14, 14, 32]
        unknown = tf.placeholder(tf.float32)
        assert tf.nn.conv2d(unknown, w, 1, "SAME").shape.as_list() == [None] * 3 + [32]
        hw = tf.placeholder(tf.float32, [None, None, None, 1])
        assert tf.nn.conv2d(hw, w, 2, "SAME").shape.as_list() == [None, None, None, 32]
        nchw = tf.placeholder(tf.float32, [2, 3, 5, 5])
        out = tf.nn.conv2d(nchw, tf.zeros([3, 3, 3, 4]), [1, 1, 2, 2], "SAME",
                           data_format="NCHW")
        assert out.shape.as_list() == [2, 4, 3, 3]
        assert out.op.type == "Conv2D" and out.op.get_attr("strides") == [1, 1, 2, 2]


# ---- depthwise ----

DEPTHWISE_CASES = [
    ((2, 6, 6, 3), (3, 3, 3, 2), (2, 2), "SAME", (1, 1)),
    ((1, 7, 5, 2), (2, 3, 2, 1), (1, 2), "SAME", (1, 1)),
    ((2, 6, 7, 2), (3, 3, 2, 3), (1, 1), "VALID", (1, 1)),
    ((1, 9, 9, 2), (3, 3, 2, 2), (1, 1), "SAME", (2, 2)),
]


@covers("DepthwiseConv2dNative")
@pytest.mark.parametrize("nchw", [False, True], ids=["NHWC", "NCHW"])
@pytest.mark.parametrize(("case", "dtype"), _alternate(DEPTHWISE_CASES, DTYPES), ids=str)
def test_depthwise_conv2d_matches_numpy(runner, case, dtype, nchw):
    x_shape, w_shape, strides, padding, rate = case
    rng = np.random.default_rng(8)
    x_val = rng.uniform(-1, 1, x_shape).astype(dtype)
    w_val = rng.uniform(-1, 1, w_shape).astype(dtype)
    want = np_conv2d(x_val.astype(np.float64), w_val.astype(np.float64), strides, padding,
                     rate, depthwise=True)
    fmt = "NCHW" if nchw else "NHWC"
    feed_x = _nchw(x_val) if nchw else x_val
    strides_4 = [1, 1, *strides] if nchw else [1, *strides, 1]
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), feed_x.shape)
        y = tf.nn.depthwise_conv2d(x, tf.constant(w_val), strides_4, padding, rate=list(rate),
                                   data_format=fmt)
    assert y.op.type == "DepthwiseConv2dNative" and y.op.name == "depthwise"
    got = runner.run(y, {x: feed_x})
    np.testing.assert_allclose(_nhwc(got) if nchw else got, want, **TOL[dtype])


# ---- pooling ----

POOL_CASES = [
    ((2, 6, 6, 3), (2, 2), (2, 2), "SAME"),
    ((2, 7, 7, 3), (2, 2), (2, 2), "SAME"),     # odd input: last window hangs over the edge
    ((1, 7, 6, 2), (3, 3), (2, 2), "SAME"),
    ((2, 5, 8, 2), (3, 2), (1, 3), "SAME"),
    ((2, 7, 6, 3), (3, 3), (2, 2), "VALID"),
    ((1, 4, 4, 1), (1, 1), (1, 1), "VALID"),
]


def _pool_id(case):
    return f"{case[0]}-k{case[1]}-s{case[2]}-{case[3]}"


POOLS = {"MaxPool": (tf.nn.max_pool, np.max), "AvgPool": (tf.nn.avg_pool, np.mean)}


@covers(*POOLS)
@pytest.mark.parametrize("nchw", [False, True], ids=["NHWC", "NCHW"])
@pytest.mark.parametrize(("case", "dtype"), _alternate(POOL_CASES, DTYPES), ids=str)
@pytest.mark.parametrize("op_type", sorted(POOLS))
def test_pooling_matches_numpy(runner, op_type, case, dtype, nchw):
    x_shape, k, strides, padding = case
    fn, reduce = POOLS[op_type]
    x_val = np.random.default_rng(9).uniform(-2, 2, x_shape).astype(dtype)
    want = np_pool(x_val.astype(np.float64), k, strides, padding, reduce)
    fmt = "NCHW" if nchw else "NHWC"
    feed_x = _nchw(x_val) if nchw else x_val
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), feed_x.shape)
        y = fn(x, list(k), list(strides), padding, data_format=fmt)
    assert y.op.type == op_type and y.op.name == op_type
    got = runner.run(y, {x: feed_x})
    assert y.shape.as_list() == list(got.shape)
    np.testing.assert_allclose(_nhwc(got) if nchw else got, want, **TOL[dtype])


@covers("MaxPool")
def test_max_pool_explicit_padding_counts_as_minus_infinity(runner):
    x_val = -np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4, 1)
    with runner.scope():
        x = tf.placeholder(tf.float32, [1, 4, 4, 1])
        y = tf.nn.max_pool(x, 2, 2, [[0, 0], [1, 1], [1, 1], [0, 0]])
    got = runner.run(y, {x: x_val})
    assert got.shape == (1, 3, 3, 1)
    assert got[0, 0, 0, 0] == -1.0 and got[0, 2, 2, 0] == -16.0


# ---- bias_add ----

@covers("BiasAdd", "BiasAddGrad")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize(("shape", "data_format"), [
    ((3, 4), None), ((2, 3, 4), "NHWC"), ((2, 3, 4, 5), "N...C"), ((2, 3, 4), "NC..."),
    ((2, 3, 4, 5), "NCHW")], ids=str)
def test_bias_add_and_its_grad(runner, shape, data_format, dtype):
    nchw = bool(data_format and data_format.startswith("NC"))
    channels = shape[1] if nchw else shape[-1]
    rng = np.random.default_rng(10)
    x_val = rng.integers(-5, 5, shape).astype(dtype)
    b_val = rng.integers(-5, 5, channels).astype(dtype)
    bias_shape = [1, channels] + [1] * (len(shape) - 2) if nchw else [channels]
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), shape)
        y = tf.nn.bias_add(x, b_val, data_format=data_format)
        grad = runner.graph.create_op("BiasAddGrad", [x], {
            "T": tf_dtype(dtype), "data_format": "NCHW" if nchw else "NHWC"}).outputs[0]
    got, got_grad = runner.run([y, grad], {x: x_val})
    np.testing.assert_array_equal(got, x_val + b_val.reshape(bias_shape))
    axes = tuple(i for i in range(len(shape)) if i != (1 if nchw else len(shape) - 1))
    np.testing.assert_allclose(got_grad, x_val.sum(axis=axes), rtol=1e-6)
    assert grad.shape.as_list() == [channels]


# ---- backprop kernels, run on each device through tf.gradients ----

def _run_grads(runner, build, inputs, wants, dtype):
    with runner.scope():
        xs = [tf.placeholder(tf_dtype(dtype), v.shape) for v in inputs]
        out, weight = build(*xs)
        grads = tf.gradients(tf.reduce_sum(out * weight), xs)
    got = runner.run(grads, dict(zip(xs, inputs)))
    for g, w in zip(got, wants):
        np.testing.assert_allclose(g, w, **TOL[dtype])


def _torch_grads(torch_fn, inputs, weight):
    ts = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in inputs]
    out = torch_fn(*ts)
    return [g.numpy() for g in torch.autograd.grad((out * torch.tensor(weight)).sum(), ts)]


@covers("Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNativeBackpropInput",
        "DepthwiseConv2dNativeBackpropFilter")
@pytest.mark.parametrize(("case", "nchw"), _alternate([CONV_CASES[i] for i in (0, 1, 5, 7)],
                                                      [False, True]), ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_conv_backprop_kernels(runner, dtype, case, nchw):
    x_shape, w_shape, strides, padding, dilations = case
    rng = np.random.default_rng(11)
    x_val = rng.uniform(-1, 1, x_shape)
    w_val = rng.uniform(-1, 1, w_shape)
    dw_val = rng.uniform(-1, 1, (*w_shape[:2], x_shape[3], 2))
    out = np_conv2d(x_val, w_val, strides, padding, dilations)
    # tf.nn.depthwise_conv2d refuses strides > 1 together with rate > 1, as TF does.
    rate = dilations if strides == (1, 1) else (1, 1)
    dout = np_conv2d(x_val, dw_val, strides, padding, rate, depthwise=True)
    weight, dweight = rng.uniform(-1, 1, out.shape), rng.uniform(-1, 1, dout.shape)
    if nchw:
        x_val, weight, dweight = _nchw(x_val), _nchw(weight), _nchw(dweight)
    fmt = "NCHW" if nchw else "NHWC"
    strides_4 = [1, 1, *strides] if nchw else [1, *strides, 1]

    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), x_val.shape)
        w = tf.placeholder(tf_dtype(dtype), w_shape)
        dw = tf.placeholder(tf_dtype(dtype), dw_val.shape)
        y = tf.nn.conv2d(x, w, strides_4, padding, data_format=fmt, dilations=list(dilations))
        z = tf.nn.depthwise_conv2d(x, dw, strides_4, padding, data_format=fmt, rate=rate)
        loss = tf.reduce_sum(y * weight.astype(dtype)) + tf.reduce_sum(z * dweight.astype(dtype))
        grads = tf.gradients(loss, [x, w, dw])
    got = runner.run(grads, {x: x_val.astype(dtype), w: w_val.astype(dtype),
                             dw: dw_val.astype(dtype)})
    conv = functools.partial(torch_conv2d, strides=strides, padding=padding, nchw=nchw)

    def both(x, w, dw):
        return (conv(x, w, dilations=dilations) * torch.tensor(weight)).sum() + \
            (conv(x, dw, dilations=rate, depthwise=True) * torch.tensor(dweight)).sum()
    want = _torch_grads(both, [x_val, w_val, dw_val], np.ones(()))
    for g, wv in zip(got, want):
        np.testing.assert_allclose(g, wv, **TOL[dtype])


@covers("MaxPoolGrad", "AvgPoolGrad")
@pytest.mark.parametrize(("case", "nchw"), _alternate(POOL_CASES[:4], [False, True]), ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_pool_backprop_kernels(runner, dtype, case, nchw):
    x_shape, k, strides, padding = case
    rng = np.random.default_rng(12)
    x_val = rng.permutation(np.prod(x_shape)).reshape(x_shape) / 7.0   # no ties
    out = np_pool(x_val, k, strides, padding, np.max)
    weights = rng.uniform(-1, 1, out.shape), rng.uniform(-1, 1, out.shape)
    if nchw:
        x_val, weights = _nchw(x_val), [_nchw(w) for w in weights]
    fmt = "NCHW" if nchw else "NHWC"
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), x_val.shape)
        m = tf.nn.max_pool(x, list(k), list(strides), padding, data_format=fmt)
        a = tf.nn.avg_pool(x, list(k), list(strides), padding, data_format=fmt)
        loss = tf.reduce_sum(m * weights[0].astype(dtype)) + \
            tf.reduce_sum(a * weights[1].astype(dtype))
        grad, = tf.gradients(loss, [x])
    got = runner.run(grad, {x: x_val.astype(dtype)})

    def both(x):
        return (torch_max_pool(x, k, strides, padding, nchw) * torch.tensor(weights[0])).sum() \
            + (torch_avg_pool(x, k, strides, padding, nchw) * torch.tensor(weights[1])).sum()
    want, = _torch_grads(both, [x_val], np.ones(()))
    np.testing.assert_allclose(got, want, **TOL[dtype])


@covers("MaxPoolGrad")
def test_max_pool_grad_gives_ties_to_the_first_maximum(runner):
    """TF's CPU kernel, like torch, routes a window's gradient to its first maximum in
    row-major order (relu outputs are full of such ties)."""
    x_val = np.zeros((1, 4, 4, 1), np.float32)
    x_val[0, 1, 1, 0] = 1.0                      # window (0, 0) has one max; the others tie
    with runner.scope():
        x = tf.placeholder(tf.float32, [1, 4, 4, 1])
        grad, = tf.gradients(tf.reduce_sum(tf.nn.max_pool(x, 2, 2, "VALID")), [x])
    got = runner.run(grad, {x: x_val})[0, :, :, 0]
    want = np.zeros((4, 4))
    want[1, 1] = want[0, 2] = want[2, 0] = want[2, 2] = 1.0
    np.testing.assert_array_equal(got, want)


@covers("MaxPoolGradGrad")
@pytest.mark.parametrize(("case", "nchw"), _alternate(POOL_CASES[:4], [False, True]), ids=str)
def test_max_pool_grad_grad_picks_each_windows_maximum(runner, case, nchw):
    x_shape, k, strides, padding = case
    rng = np.random.default_rng(21)
    x_val, g_val = _distinct(rng, x_shape), rng.uniform(-1, 1, x_shape)
    # Pooling the inputs' global ranks finds each window's argmax.
    order = np.argsort(x_val, axis=None)
    ranked = np.empty(x_val.size)
    ranked[order] = np.arange(x_val.size)
    pooled_rank = np_pool(ranked.reshape(x_shape), k, strides, padding, np.max)
    argmax = order[pooled_rank.astype(int)]
    want = g_val.reshape(-1)[argmax]
    fmt, attrs = ("NCHW" if nchw else "NHWC"), _pool_attrs(k, strides, padding)
    if nchw:
        x_val, g_val, want = _nchw(x_val), _nchw(g_val), _nchw(want)
        attrs.update(ksize=[1, 1, *k], strides=[1, 1, *strides], data_format=fmt)
    with runner.scope():
        x = tf.placeholder(tf.float64, x_val.shape)
        g = tf.placeholder(tf.float64, x_val.shape)
        y = tf.nn.max_pool(x, attrs["ksize"], attrs["strides"], padding, data_format=fmt)
        out = conv_ops.create("MaxPoolGradGrad", [x, y, g], attrs)
    np.testing.assert_array_equal(runner.run(out, {x: x_val, g: g_val}), want)


# ---- gradient rules against torch autograd ----

def _conv_case_args(case, nchw):
    x_shape, w_shape, strides, padding, dilations = case
    fmt = "NCHW" if nchw else "NHWC"
    strides_4 = [1, 1, *strides] if nchw else [1, *strides, 1]
    if not isinstance(padding, str) and nchw:
        tf_padding = [padding[0], padding[3], padding[1], padding[2]]
    else:
        tf_padding = padding
    x_shape = (x_shape[0], x_shape[3], *x_shape[1:3]) if nchw else x_shape
    return x_shape, w_shape, strides_4, tf_padding, padding, dilations, fmt


LAYOUTS = [(False, False), (True, True), (False, True), (True, False)]   # (nchw, dynamic)


@grad_test("Conv2D")
@pytest.mark.parametrize(("case", "layout"), _alternate(CONV_CASES, LAYOUTS), ids=str)
def test_conv2d_gradients(case, layout):
    nchw, dynamic = layout
    x_shape, w_shape, strides_4, tf_padding, padding, dilations, fmt = _conv_case_args(case,
                                                                                       nchw)
    rng = np.random.default_rng(13)
    check_gradients(
        lambda x, w: tf.nn.conv2d(x, w, strides_4, tf_padding, data_format=fmt,
                                  dilations=list(dilations)),
        lambda x, w: torch_conv2d(x, w, case[2], padding, dilations, nchw),
        [rng.uniform(-1, 1, x_shape), rng.uniform(-1, 1, w_shape)], dynamic=dynamic)


@grad_test("DepthwiseConv2dNative")
@pytest.mark.parametrize(("case", "layout"), _alternate(DEPTHWISE_CASES, LAYOUTS), ids=str)
def test_depthwise_conv2d_gradients(case, layout):
    nchw, dynamic = layout
    x_shape, w_shape, strides_4, padding, _, rate, fmt = _conv_case_args(case, nchw)
    rng = np.random.default_rng(14)
    check_gradients(
        lambda x, w: tf.nn.depthwise_conv2d(x, w, strides_4, padding, rate=list(rate),
                                            data_format=fmt),
        lambda x, w: torch_conv2d(x, w, case[2], padding, rate, nchw, depthwise=True),
        [rng.uniform(-1, 1, x_shape), rng.uniform(-1, 1, w_shape)], dynamic=dynamic)


def _input_grad(conv, x_shape):
    """torch's gradient of a convolution with respect to its input, as a function of
    (filter, dy): what a BackpropInput op computes."""
    def fn(w, dy):
        x0 = torch.zeros(x_shape, dtype=torch.float64, requires_grad=True)
        return torch.autograd.grad(conv(x0, w), x0, dy, create_graph=True)[0]
    return fn


def _filter_grad(conv, w_shape):
    def fn(x, dy):
        w0 = torch.zeros(w_shape, dtype=torch.float64, requires_grad=True)
        return torch.autograd.grad(conv(x, w0), w0, dy, create_graph=True)[0]
    return fn


BACKPROP_CASES = [CONV_CASES[0], CONV_CASES[1], CONV_CASES[4], CONV_CASES[5], CONV_CASES[7],
                  CONV_CASES[8]]


@grad_test("Conv2DBackpropInput", "Conv2DBackpropFilter")
@pytest.mark.parametrize(("case", "nchw"), _alternate(BACKPROP_CASES, [False, True]), ids=str)
def test_conv2d_backprop_gradients(case, nchw):
    """Second order: the rules of the two backprop ops, each against torch's double
    backward of a convolution."""
    x_shape, w_shape, strides_4, tf_padding, padding, dilations, fmt = _conv_case_args(case,
                                                                                       nchw)
    rng = np.random.default_rng(15)
    x = rng.uniform(-1, 1, x_shape)
    w = rng.uniform(-1, 1, w_shape)
    conv = functools.partial(torch_conv2d, strides=case[2], padding=padding,
                             dilations=dilations, nchw=nchw)
    dy = rng.uniform(-1, 1, tuple(conv(torch.tensor(x), torch.tensor(w)).shape))
    kw = {"strides": strides_4, "padding": tf_padding, "data_format": fmt,
          "dilations": list(dilations)}
    check_gradients(lambda w_, dy_: tf.nn.conv2d_backprop_input(list(x_shape), w_, dy_, **kw),
                    _input_grad(conv, x_shape), [w, dy])
    check_gradients(lambda x_, dy_: tf.nn.conv2d_backprop_filter(x_, list(w_shape), dy_, **kw),
                    _filter_grad(conv, w_shape), [x, dy])


@grad_test("Conv2DBackpropInput")
@DYNAMIC
def test_conv2d_transpose_gradients(dynamic):
    rng = np.random.default_rng(16)
    value = rng.uniform(-1, 1, (2, 3, 3, 4))
    w = rng.uniform(-1, 1, (3, 3, 2, 4))
    conv = functools.partial(torch_conv2d, strides=(2, 2), padding="SAME")
    check_gradients(
        lambda v, f: tf.nn.conv2d_transpose(v, f, [2, 6, 6, 2], [1, 2, 2, 1], "SAME"),
        lambda v, f: _input_grad(conv, (2, 6, 6, 2))(f, v), [value, w], dynamic=dynamic)


@grad_test("DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter")
@pytest.mark.parametrize("case", DEPTHWISE_CASES, ids=_conv_id)
def test_depthwise_backprop_gradients(case):
    x_shape, w_shape, strides, padding, rate = case
    rng = np.random.default_rng(17)
    x, w = rng.uniform(-1, 1, x_shape), rng.uniform(-1, 1, w_shape)
    conv = functools.partial(torch_conv2d, strides=strides, padding=padding, dilations=rate,
                             depthwise=True)
    dy = rng.uniform(-1, 1, tuple(conv(torch.tensor(x), torch.tensor(w)).shape))
    attrs = {"strides": [1, *strides, 1], "padding": padding, "explicit_paddings": [],
             "data_format": "NHWC", "dilations": [1, *rate, 1]}

    def sizes(shape):
        return tf.constant(np.asarray(shape, np.int32))
    check_gradients(
        lambda w_, dy_: conv_ops.create("DepthwiseConv2dNativeBackpropInput",
                                        [sizes(x_shape), w_, dy_], attrs),
        _input_grad(conv, x_shape), [w, dy])
    check_gradients(
        lambda x_, dy_: conv_ops.create("DepthwiseConv2dNativeBackpropFilter",
                                        [x_, sizes(w_shape), dy_], attrs),
        _filter_grad(conv, w_shape), [x, dy])


def _distinct(rng, shape):
    return rng.permutation(int(np.prod(shape))).reshape(shape) / 5.0 - 2.0


TORCH_POOLS = {"MaxPool": (tf.nn.max_pool, torch_max_pool),
               "AvgPool": (tf.nn.avg_pool, torch_avg_pool)}


@grad_test(*TORCH_POOLS)
@pytest.mark.parametrize(("case", "layout"), _alternate(POOL_CASES, LAYOUTS), ids=str)
@pytest.mark.parametrize("op_type", sorted(TORCH_POOLS))
def test_pool_gradients(op_type, case, layout):
    nchw, dynamic = layout
    tf_fn, torch_fn = TORCH_POOLS[op_type]
    x_shape, k, strides, padding = case
    x_shape = (x_shape[0], x_shape[3], *x_shape[1:3]) if nchw else x_shape
    fmt = "NCHW" if nchw else "NHWC"
    x = _distinct(np.random.default_rng(18), x_shape)
    check_gradients(lambda v: tf_fn(v, list(k), list(strides), padding, data_format=fmt),
                    lambda v: torch_fn(v, k, strides, padding, nchw), [x], dynamic=dynamic)


def _pool_attrs(k, strides, padding):
    return {"ksize": [1, *k, 1], "strides": [1, *strides, 1], "padding": padding,
            "data_format": "NHWC"}


@grad_test("MaxPoolGrad", "MaxPoolGradGrad", "AvgPoolGrad")
@pytest.mark.parametrize("case", POOL_CASES[:5], ids=_pool_id)
def test_pool_backprop_gradients(case):
    """Second and third order: MaxPoolGrad's gradient is MaxPoolGradGrad (and back), each
    checked against torch's double backward; AvgPoolGrad's is AvgPool."""
    x_shape, k, strides, padding = case
    rng = np.random.default_rng(19)
    x = _distinct(rng, x_shape)
    pool = functools.partial(torch_max_pool, k=k, strides=strides, padding=padding)
    y_shape = tuple(pool(torch.tensor(x)).shape)
    attrs = _pool_attrs(k, strides, padding)

    def tf_max_grad(x_, dy_):
        y_ = tf.nn.max_pool(x_, list(k), list(strides), padding)
        return conv_ops.create("MaxPoolGrad", [x_, y_, dy_], attrs)

    def torch_max_grad(x_, dy_):
        return torch.autograd.grad(pool(x_), x_, dy_, create_graph=True)[0]
    check_gradients(tf_max_grad, torch_max_grad, [x, rng.uniform(-1, 1, y_shape)])

    def tf_max_grad_grad(x_, g_):
        y_ = tf.nn.max_pool(x_, list(k), list(strides), padding)
        return conv_ops.create("MaxPoolGradGrad", [x_, y_, g_], attrs)

    def torch_max_grad_grad(x_, g_):
        dy0 = torch.zeros(y_shape, dtype=torch.float64, requires_grad=True)
        gx = torch.autograd.grad(pool(x_), x_, dy0, create_graph=True)[0]
        return torch.autograd.grad(gx, dy0, g_, create_graph=True)[0]
    check_gradients(tf_max_grad_grad, torch_max_grad_grad, [x, rng.uniform(-1, 1, x_shape)])

    avg = functools.partial(torch_avg_pool, k=k, strides=strides, padding=padding)
    check_gradients(
        lambda dy_: conv_ops.create("AvgPoolGrad", [tf.constant(np.int32(x_shape)), dy_],
                                    attrs),
        lambda dy_: _input_grad(lambda x0, _: avg(x0), x_shape)(None, dy_),
        [rng.uniform(-1, 1, y_shape)])


@grad_test("BiasAdd", "BiasAddGrad")
@DYNAMIC
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 4, 5)], ids=str)
def test_bias_add_gradients(shape, data_format, dynamic):
    rng = np.random.default_rng(20)
    channels = shape[1] if data_format == "NCHW" else shape[-1]
    view = [1, channels] + [1] * (len(shape) - 2) if data_format == "NCHW" else [channels]
    keep = 1 if data_format == "NCHW" else len(shape) - 1
    dims = [d for d in range(len(shape)) if d != keep]
    check_gradients(lambda x, b: tf.nn.bias_add(x, b, data_format=data_format),
                    lambda x, b: x + b.reshape(view),
                    [rng.uniform(-1, 1, shape), rng.uniform(-1, 1, channels)], dynamic=dynamic)
    grad_op = functools.partial(conv_ops.create, "BiasAddGrad", attrs={"data_format":
                                                                       data_format})
    check_gradients(lambda dy: grad_op([dy]), lambda dy: dy.sum(dims),
                    [rng.uniform(-1, 1, shape)], dynamic=dynamic)


def test_tf2_pool_names_and_dense_helpers():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4, 4, 1])
        assert tf.nn.max_pool2d(x, 2, 2, "VALID").op.name == "MaxPool2d"
        assert tf.nn.avg_pool2d(x, 2, 2, "VALID").op.name == "AvgPool2D"
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        w = np.ones((3, 2), np.float32) - 1.5
        b = np.array([1.0, -2.0], np.float32)
        dense = tf.nn.xw_plus_b(a, w, b)
        layer = tf.nn.relu_layer(a, w, b)
        assert dense.op.type == "BiasAdd" and dense.op.name == "xw_plus_b"
        assert layer.op.type == "Relu" and layer.op.name == "relu_layer"
        with tf.Session() as s:
            got_dense, got_layer = s.run([dense, layer])
    np.testing.assert_allclose(got_dense, a @ w + b)
    np.testing.assert_allclose(got_layer, np.maximum(a @ w + b, 0))
