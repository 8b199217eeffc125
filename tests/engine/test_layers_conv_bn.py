"""tf.layers convolution, pooling and batch normalization against direct numpy versions:
strides, dilations, SAME/VALID padding, channels first, transposed convolution, the moving
averages batch normalization keeps (and when it does not update them)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def _run(fetches, feeds=None, config=None):
    with tf.Session(config=config) as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feeds)


def _same_pads(size: int, k: int, s: int, d: int = 1) -> tuple[int, int]:
    """TF's SAME padding: the output has ceil(size / s) positions; the odd pixel goes after."""
    total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def _conv_nhwc(x, w, strides, padding, dilation=(1, 1)):
    (kh, kw, _, out_c), (sh, sw), (dh, dw) = w.shape, strides, dilation
    if padding == "same":
        ph, pw = _same_pads(x.shape[1], kh, sh, dh), _same_pads(x.shape[2], kw, sw, dw)
        x = np.pad(x, [(0, 0), ph, pw, (0, 0)])
    oh = (x.shape[1] - (kh - 1) * dh - 1) // sh + 1
    ow = (x.shape[2] - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, out_c))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * sh:i * sh + (kh - 1) * dh + 1:dh, j * sw:j * sw + (kw - 1) * dw + 1:dw]
            out[:, i, j] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def _pool_nhwc(x, k, s, padding, reduce):
    if padding == "same":
        ph, pw = _same_pads(x.shape[1], k, s), _same_pads(x.shape[2], k, s)
        x = np.pad(x, [(0, 0), ph, pw, (0, 0)], constant_values=np.nan)
    oh, ow = (x.shape[1] - k) // s + 1, (x.shape[2] - k) // s + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = reduce(x[:, i * s:i * s + k, j * s:j * s + k], axis=(1, 2))
    return out


@pytest.mark.parametrize("padding, strides, dilation", [
    ("valid", (1, 1), (1, 1)), ("same", (2, 2), (1, 1)), ("same", (1, 2), (1, 1)),
    ("valid", (1, 1), (2, 2)), ("same", (1, 1), (2, 1))])
def test_conv2d_matches_a_direct_convolution(graph, padding, strides, dilation):
    rng = np.random.default_rng(1)
    x_val = rng.normal(size=(2, 7, 6, 3))
    x = tf.placeholder(tf.float64, [None, 7, 6, 3])
    layer = tf.layers.Conv2D(4, (3, 2), strides=strides, padding=padding,
                             dilation_rate=dilation, activation=tf.nn.relu,
                             bias_initializer=tf.constant_initializer(0.1))
    y = layer(x)
    y_val, w = _run([y, layer.kernel], {x: x_val})
    want = np.maximum(_conv_nhwc(x_val, w, strides, padding, dilation) + 0.1, 0)
    assert y.shape.as_list() == [None, *want.shape[1:]]
    np.testing.assert_allclose(y_val, want, rtol=1e-10, atol=1e-12)


def test_conv2d_channels_first_matches_channels_last(graph):
    rng = np.random.default_rng(2)
    x_val = rng.normal(size=(2, 6, 6, 3)).astype(np.float32)
    init = tf.constant_initializer(rng.normal(size=(3, 3, 3, 4)).astype(np.float32))
    last = tf.layers.conv2d(tf.constant(x_val), 4, 3, strides=2, padding="same",
                            kernel_initializer=init)
    first = tf.layers.conv2d(tf.constant(x_val.transpose(0, 3, 1, 2)), 4, 3, strides=2,
                             padding="same", kernel_initializer=init,
                             data_format="channels_first")
    a, b = _run([last, first])
    np.testing.assert_allclose(b.transpose(0, 2, 3, 1), a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv2d_transpose_scatters_each_input_pixel(graph, padding):
    """The transposed convolution as a scatter: each input pixel adds kernel * value into
    the stride-spaced output window, then SAME crops the padding conv2d would add."""
    rng = np.random.default_rng(3)
    x_val = rng.normal(size=(2, 3, 4, 2))
    x = tf.placeholder(tf.float64, [None, 3, 4, 2])
    layer = tf.layers.Conv2DTranspose(5, 3, strides=2, padding=padding, use_bias=False)
    y = layer(x)
    y_val, w = _run([y, layer.kernel], {x: x_val})       # w [kh, kw, out, in]
    full = np.zeros((2, (3 - 1) * 2 + 3, (4 - 1) * 2 + 3, 5))
    for i in range(3):
        for j in range(4):
            full[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3] += np.einsum("nc,hwoc->nhwo",
                                                                  x_val[:, i, j], w)
    if padding == "same":
        (top, _), (left, _) = _same_pads(6, 3, 2), _same_pads(8, 3, 2)
        full = full[:, top:top + 6, left:left + 8]
    assert y.shape.as_list() == [None, *full.shape[1:]]
    np.testing.assert_allclose(y_val, full, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_pooling_layers(graph, padding):
    rng = np.random.default_rng(4)
    x_val = rng.normal(size=(2, 7, 5, 3))
    x = tf.placeholder(tf.float64, [None, 7, 5, 3])
    mx = tf.layers.max_pooling2d(x, 3, 2, padding=padding)
    av = tf.layers.average_pooling2d(x, 3, 2, padding=padding)
    got_max, got_avg = _run([mx, av], {x: x_val})
    np.testing.assert_allclose(got_max, _pool_nhwc(x_val, 3, 2, padding, np.nanmax))
    np.testing.assert_allclose(got_avg, _pool_nhwc(x_val, 3, 2, padding, np.nanmean),
                               rtol=1e-12)


def test_a_conv_layer_runs_on_a_virtual_gpu(graph):
    x_val = np.ones((1, 4, 4, 2), np.float32)
    with tf.device("/gpu:0"):
        y = tf.layers.conv2d(tf.constant(x_val), 3, 2, kernel_initializer=tf.ones_initializer())
    with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as s:
        s.run(tf.global_variables_initializer())
        value = s.run(y)
        placement = s.placement.as_dict()
    np.testing.assert_array_equal(value, np.full((1, 3, 3, 3), 8.0))
    assert placement["conv2d/Conv2D"].endswith("GPU:0")
    assert placement["conv2d/kernel/Initializer/ones"].endswith("GPU:0")


# ---- batch normalization ----

def _bn(x, mean, var, gamma, beta, eps):
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def test_batch_norm_training_normalizes_with_batch_statistics(graph):
    rng = np.random.default_rng(5)
    x_val = rng.normal(2.0, 3.0, size=(16, 5))
    gamma = rng.uniform(0.5, 2, size=5)
    x = tf.placeholder(tf.float64, [None, 5])
    y = tf.layers.batch_normalization(x, training=True, epsilon=0.01,
                                      gamma_initializer=tf.constant_initializer(gamma),
                                      beta_initializer=tf.constant_initializer(0.5))
    want = _bn(x_val, x_val.mean(0), x_val.var(0), gamma, 0.5, 0.01)
    np.testing.assert_allclose(_run(y, {x: x_val}), want, rtol=1e-10)


def test_batch_norm_moving_averages_follow_momentum(graph):
    rng = np.random.default_rng(6)
    x_val = rng.normal(1.0, 2.0, size=(10, 3))
    img_val = rng.normal(-1.0, 0.5, size=(2, 3, 3, 4))
    x = tf.placeholder(tf.float64, [None, 3])
    img = tf.placeholder(tf.float64, [None, 3, 3, 4])
    flat = tf.layers.BatchNormalization(momentum=0.9)
    conv = tf.layers.BatchNormalization(momentum=0.7)
    flat(x, training=True)
    conv(img, training=True)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert [op.name for op in updates] == [
        "batch_normalization/AssignMovingAvg", "batch_normalization/AssignMovingAvg_1",
        "batch_normalization_1/AssignMovingAvg", "batch_normalization_1/AssignMovingAvg_1"]
    assert [op.name for op in flat.updates] == [op.name for op in updates[:2]]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for _ in range(2):
            s.run(updates, {x: x_val, img: img_val})
        got = s.run([flat.moving_mean, flat.moving_variance, conv.moving_mean,
                     conv.moving_variance])

    def after_two(start, value, momentum):
        return start * momentum ** 2 + value * (1 - momentum ** 2)
    np.testing.assert_allclose(got[0], after_two(0.0, x_val.mean(0), 0.9), rtol=1e-10)
    # 2-D input: the biased batch variance (tf.nn.moments), as TF's non-fused path.
    np.testing.assert_allclose(got[1], after_two(1.0, x_val.var(0), 0.9), rtol=1e-10)
    per_channel = img_val.reshape(-1, 4)
    np.testing.assert_allclose(got[2], after_two(0.0, per_channel.mean(0), 0.7), rtol=1e-10)
    # 4-D input: Bessel-corrected, as TF's fused kernel reports the batch variance.
    np.testing.assert_allclose(got[3], after_two(1.0, per_channel.var(0, ddof=1), 0.7),
                               rtol=1e-10)


def test_batch_norm_inference_uses_moving_statistics_and_updates_nothing(graph):
    x_val = np.arange(12, dtype=np.float64).reshape(4, 3)
    x = tf.placeholder(tf.float64, [None, 3])
    y = tf.layers.batch_normalization(x, training=False,
                                      moving_mean_initializer=tf.constant_initializer(2.0),
                                      moving_variance_initializer=tf.constant_initializer(4.0))
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    np.testing.assert_allclose(_run(y, {x: x_val}), (x_val - 2.0) / np.sqrt(4.0 + 1e-3))


def test_a_training_tensor_picks_statistics_and_gates_the_update(graph):
    """With `training` a tensor the moving averages update only when it is true (TF's
    momentum trick: momentum is 1 otherwise)."""
    rng = np.random.default_rng(7)
    x_val = rng.normal(3.0, 2.0, size=(8, 2))
    x = tf.placeholder(tf.float64, [None, 2])
    training = tf.placeholder(tf.bool, [])
    layer = tf.layers.BatchNormalization(momentum=0.5, center=False, scale=False)
    y = layer(x, training=training)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert layer.gamma is None and layer.beta is None
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        test_out, _ = s.run([y, updates], {x: x_val, training: False})
        assert s.run(layer.moving_mean).tolist() == [0.0, 0.0]
        train_out, _ = s.run([y, updates], {x: x_val, training: True})
        moving = s.run([layer.moving_mean, layer.moving_variance])
    np.testing.assert_allclose(test_out, x_val / np.sqrt(1 + 1e-3))
    np.testing.assert_allclose(train_out, _bn(x_val, x_val.mean(0), x_val.var(0), 1, 0, 1e-3),
                               rtol=1e-10)
    np.testing.assert_allclose(moving[0], 0.5 * x_val.mean(0), rtol=1e-12)
    np.testing.assert_allclose(moving[1], 0.5 + 0.5 * x_val.var(0), rtol=1e-12)


def test_fused_batch_norm_with_a_training_tensor(graph):
    rng = np.random.default_rng(10)
    x_val = rng.normal(1.0, 2.0, size=(3, 2, 4, 4))            # NCHW, channels on axis 1
    x = tf.placeholder(tf.float64, [None, 2, 4, 4])
    training = tf.placeholder(tf.bool, [])
    layer = tf.layers.BatchNormalization(axis=1, momentum=0.6, epsilon=0.01)
    y = layer(x, training=training)
    assert {op.type for op in graph.get_operations()} >= {"FusedBatchNormV3"}
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    mean = x_val.mean(axis=(0, 2, 3))
    var = x_val.var(axis=(0, 2, 3))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        infer, _ = s.run([y, updates], {x: x_val, training: False})
        unchanged = s.run([layer.moving_mean, layer.moving_variance])
        train, _ = s.run([y, updates], {x: x_val, training: True})
        moved = s.run([layer.moving_mean, layer.moving_variance])
    np.testing.assert_allclose(infer, x_val / np.sqrt(1.01), rtol=1e-10)
    assert [u.tolist() for u in unchanged] == [[0.0, 0.0], [1.0, 1.0]]
    np.testing.assert_allclose(train, _bn(x_val, mean[:, None, None], var[:, None, None], 1, 0,
                                         0.01), rtol=1e-10)
    n = 3 * 4 * 4
    np.testing.assert_allclose(moved[0], 0.4 * mean, rtol=1e-10)
    np.testing.assert_allclose(moved[1], 0.6 + 0.4 * var * n / (n - 1), rtol=1e-10)


def test_batch_norm_over_the_channels_first_axis(graph):
    rng = np.random.default_rng(8)
    x_val = rng.normal(size=(3, 2, 4, 5))
    x = tf.placeholder(tf.float64, [None, 2, 4, 5])
    y = tf.layers.batch_normalization(x, axis=1, training=True)
    mean = x_val.mean(axis=(0, 2, 3), keepdims=True)
    var = x_val.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(_run(y, {x: x_val}), _bn(x_val, mean, var, 1, 0, 1e-3),
                               rtol=1e-10)
    assert [v.shape.as_list() for v in tf.global_variables()] == [[2]] * 4


def test_batch_norm_gradients_match_autograd(graph):
    import torch
    rng = np.random.default_rng(9)
    x_val = rng.normal(size=(6, 3))
    x = tf.placeholder(tf.float64, [None, 3])
    layer = tf.layers.BatchNormalization()
    y = layer(x, training=True)
    w = rng.normal(size=(6, 3))
    grads = tf.gradients(tf.reduce_sum(y * w), [x, layer.gamma, layer.beta])
    got = _run(grads, {x: x_val})
    xt = torch.tensor(x_val, requires_grad=True)
    g = torch.ones(3, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    out = torch.nn.functional.batch_norm(xt, None, None, g, b, training=True, eps=1e-3)
    want = torch.autograd.grad((out * torch.tensor(w)).sum(), [xt, g, b])
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e.numpy(), rtol=1e-8, atol=1e-10)


def test_batch_norm_errors(graph):
    with pytest.raises(ValueError, match="Input has undefined rank"):
        tf.layers.batch_normalization(tf.placeholder(tf.float32))
    with pytest.raises(ValueError, match="Input has undefined `axis` dimension"):
        tf.layers.batch_normalization(tf.placeholder(tf.float32, [2, None]))
    with pytest.raises(ValueError, match="Invalid axis: 3"):
        tf.layers.batch_normalization(tf.placeholder(tf.float32, [2, 3]), axis=3)
    with pytest.raises(ValueError, match="fused batch norm"):
        tf.layers.batch_normalization(tf.placeholder(tf.float32, [2, 3]), fused=True)
    with pytest.raises(NotImplementedError, match="renorm is not supported"):
        tf.layers.batch_normalization(tf.placeholder(tf.float32, [2, 3]), renorm=True)
