"""The fused quantized Conv2D ops against TensorFlow 2.21 itself: the outputs and ranges its
oneDNN kernels gave in graph mode for the same inputs (data/quantized_conv_tf_reference.npz,
written by data/make_quantized_conv_reference.py), on the CPU and the virtual GPU: the
qint32 ops QuantizedConv2DWithBias[AndRelu] and QuantizedConv2DAndRelu, and the requantizing
QuantizedConv2D[WithBias][AndRelu]AndRequantize."""

from __future__ import annotations

import numpy as np
import pytest
import quantized_reference
from kernel_harness import covers

import engine as tf

MAKE, REF = quantized_reference.tf_reference("quantized_conv")
CASES = list(MAKE.cases())
OPS = MAKE.INT32_OPS + MAKE.REQUANTIZE_OPS


def build(op: str, i: int, geo, ranges):
    x, f, bias = MAKE.case(i)
    stride, padding, dilation = geo[7:]
    kw = dict(input=tf.constant(x, tf.quint8), filter=tf.constant(f, tf.qint8),
              min_input=ranges[0], max_input=ranges[1], min_filter=ranges[2],
              max_filter=ranges[3], strides=[1, stride, stride, 1], padding=padding,
              dilations=[1, dilation, dilation, 1])
    if op in MAKE.BIASED:
        kw["bias"] = tf.constant(bias)
    if op in MAKE.REQUANTIZE_OPS:
        kw.update(min_freezed_output=ranges[4], max_freezed_output=ranges[5],
                  out_type=tf.quint8 if "Relu" in op else tf.qint8)
    return getattr(tf.raw_ops, op)(**kw)


# TF's oneDNN kernels fold the scales in another float order than fbgemm's step, so an
# output whose scaled value lies within a few float32 steps of a half level can round the
# other way. Measured over these cases on the CPU and the virtual GPU alike: 6 of the 39,774
# outputs of the seven ops, all from QuantizedConv2DWithBias in one channel whose bias is
# 17,242.502 accumulator units (a near-tie), each one level apart. Everything else is equal.
NEAR_TIES = 0.002


@covers(*OPS)
@pytest.mark.parametrize("op_type", OPS)
def test_fused_convolutions_give_what_tensorflow_gives(runner, op_type):
    with runner.scope():
        outs = [build(op_type, i, geo, ranges) for i, geo, ranges in CASES]
    got = runner.run([t for out in outs for t in out])
    apart, total = 0, 0
    for k, (i, _, _) in enumerate(CASES):
        value, lo, hi = got[3 * k:3 * k + 3]
        want = REF[f"{op_type}/{i}"]
        assert value.dtype == want.dtype and value.shape == want.shape, f"case {i}"
        diff = np.abs(value.astype(np.int64) - want.astype(np.int64))
        assert diff.max(initial=0) <= 1, f"{op_type}, case {i}: {diff.max()} levels apart"
        apart, total = apart + int((diff > 0).sum()), total + diff.size
        assert (float(lo), float(hi)) == tuple(float(v) for v in REF[f"{op_type}/{i}/range"]), \
            f"{op_type}, case {i}"
    assert apart <= NEAR_TIES * total, f"{op_type}: {apart} of {total} outputs differ"


def test_the_reference_covers_relu_clipping_and_both_signs():
    # The cases exercise what the ops do differently: negative accumulators (relu clips them),
    # outputs at the freezed range's ends, and a range whose minimum is below zero.
    int32 = np.concatenate([REF[f"QuantizedConv2DWithBias/{i}"].ravel() for i, _, _ in CASES])
    assert (int32 < 0).mean() > 0.2 and (int32 > 0).mean() > 0.2
    clipped = np.concatenate([REF[f"QuantizedConv2DWithBiasAndRequantize/{i}"].ravel()
                              for i, _, _ in CASES])
    assert ((clipped == -128) | (clipped == 127)).any()
    assert any(r[0] < 0 for r in MAKE.RANGES)


def test_static_shapes_and_types_of_the_new_ops():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.quint8, [2, 5, 5, 3])
        f = tf.placeholder(tf.qint8, [3, 3, 3, 4])
        r = dict(min_input=0.0, max_input=1.0, min_filter=-1.0, max_filter=1.0,
                 strides=[1, 1, 1, 1], padding="SAME")
        for op, kw, dtype in [("QuantizedConv2DWithBias", {"bias": [0.0] * 4}, tf.qint32),
                              ("QuantizedConv2DWithBiasAndRelu", {"bias": [0.0] * 4},
                               tf.qint32),
                              ("QuantizedConv2DAndRelu", {}, tf.qint32),
                              ("QuantizedConv2DAndRequantize", {"min_freezed_output": -1.0,
                                                                "max_freezed_output": 1.0},
                               tf.qint8),
                              ("QuantizedConv2DAndReluAndRequantize",
                               {"min_freezed_output": 0.0, "max_freezed_output": 1.0},
                               tf.quint8)]:
            out = getattr(tf.raw_ops, op)(input=x, filter=f, **r, **kw)
            assert out[0].shape.as_list() == [2, 5, 5, 4] and out[0].dtype == dtype, op
            assert out[1].shape.as_list() == [] == out[2].shape.as_list(), op


def test_a_qint32_bias_is_refused_where_tensorflow_takes_only_float():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.quint8, [1, 3, 3, 1])
        f = tf.placeholder(tf.qint8, [1, 1, 1, 2])
        with pytest.raises(TypeError, match="bias"):
            tf.raw_ops.QuantizedConv2DWithBias(
                input=x, filter=f, bias=tf.constant([1, 2], tf.qint32), min_input=0.0,
                max_input=1.0, min_filter=-1.0, max_filter=1.0, strides=[1, 1, 1, 1],
                padding="SAME")
