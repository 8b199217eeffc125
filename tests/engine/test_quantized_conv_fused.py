"""TF 2.21's fused QuantizedConv2DWithBias[AndRelu]AndRequantize on CPU (fbgemm) and a
virtual GPU (the exact int32 path): against a NumPy reference of the same integer maths, the
meaning of their ranges, the int16 pair guard, the prepack cache, static shapes and errors.
TF 2.21's tensorflow-cpu registers these ops but, without its oneDNN rewrite, its CPU kernel
returns empty outputs (shape (0,)) in eager mode, so the maths is that of TF's oneDNN kernel
(quint8 input read as max|range| / 255, qint8 filter as max|range| / 127) with fbgemm's
float requantization step."""

from __future__ import annotations

import functools
import gc

import numpy as np
import pytest
import quantized_reference as ref
import torch
from kernel_harness import covers, mark_executed

import engine as tf
from engine.kernels import quantized_conv as qconv
from engine.kernels import quantized_fbgemm as fbgemm

RO = tf.raw_ops
F32 = np.float32
OPS = ("QuantizedConv2DWithBiasAndRequantize", "QuantizedConv2DWithBiasAndReluAndRequantize")


# -- the NumPy reference -----------------------------------------------------------------

def scales(rx, rf):
    scale_x = F32(max(abs(F32(rx[0])), abs(F32(rx[1]))) / F32(255))
    scale_f = F32(max(abs(F32(rf[0])), abs(F32(rf[1]))) / F32(127))
    return scale_x, scale_f, F32(scale_x * scale_f)


def accumulator(x, f, stride, padding, dilation=1):
    """sum over the window of x * f in int64 (the zero point is 0: SAME pads with 0)."""
    span = (np.array(f.shape[:2]) - 1) * dilation + 1
    win, _ = ref.windows_nhwc(np.asarray(x, np.int64), tuple(int(s) for s in span),
                              (stride, stride), padding, 0)
    win = win[:, :, :, ::dilation, ::dilation]
    acc = np.einsum("nijabc,abck->nijk", win, np.asarray(f, np.int64))
    assert np.abs(acc).max(initial=0) < 2 ** 31
    return acc


def fused_conv(x, f, bias, rx, rf, rout, stride=1, padding="SAME", tout="quint8", relu=False,
               dilation=1):
    _, _, acc_scale = scales(rx, rf)
    acc = accumulator(x, f, stride, padding, dilation).astype(F32)
    bias_f = bias.astype(F32) if bias.dtype == F32 else bias.astype(F32) * acc_scale
    step = acc + (bias_f.astype(F32) / acc_scale).astype(F32)
    top = max(abs(F32(rout[0])), abs(F32(rout[1])))
    s_out = F32(top / F32(255 if tout == "quint8" else 127))
    scaled = (step * F32(acc_scale / s_out)).astype(F32)
    low, high = ref.LIMITS[tout]
    return np.rint(np.clip(scaled, 0 if relu else low, high)).astype(ref.NP[tout])


# -- helpers -----------------------------------------------------------------------------

def case(rng, n, h, w, c, k, out, weight_bits=7, bias_type="float32"):
    x = rng.integers(0, 256, size=(n, h, w, c)).astype(np.uint8)
    half = 1 << (weight_bits - 1)
    f = rng.integers(-half, half, size=(k, k, c, out)).astype(np.int8)
    if bias_type == "float32":
        bias = rng.normal(0.0, 2.0, size=out).astype(F32)
    else:
        bias = rng.integers(-50000, 50000, size=out).astype(np.int32)
    return x, f, bias


def conv_op(op_type, x, f, bias, rx, rf, rout, stride=1, padding="SAME", tout="quint8",
            dilation=1):
    bias_t = tf.constant(bias, dtype=tf.qint32 if bias.dtype == np.int32 else tf.float32)
    return getattr(RO, op_type)(
        input=tf.constant(x, dtype=tf.quint8), filter=tf.constant(f, dtype=tf.qint8),
        bias=bias_t, min_input=rx[0], max_input=rx[1], min_filter=rf[0], max_filter=rf[1],
        min_freezed_output=rout[0], max_freezed_output=rout[1], strides=[1, stride, stride, 1],
        padding=padding, dilations=[1, dilation, dilation, 1],
        out_type=tf.quint8 if tout == "quint8" else tf.qint8)


def output_range(rng, x, f, bias, rx, rf, stride, padding, dilation=1):
    """A freezed range that puts most outputs inside the type (not all clipped)."""
    _, _, acc_scale = scales(rx, rf)
    real = accumulator(x, f, stride, padding, dilation) * float(acc_scale)
    top = float(np.abs(real).max()) * rng.uniform(0.6, 1.1) + 1e-3
    return (0.0, top) if rng.random() < 0.5 else (-top, top)


def run(runner, build):
    with runner.scope():
        outs = build()
    return runner.run(list(outs))


# (batch, h, w, in channels, kernel, out channels, stride, padding, dilation)
GEOMETRIES = [(1, 8, 8, 1, 3, 16, 1, "SAME", 1), (3, 4, 4, 16, 3, 32, 1, "SAME", 1),
              (2, 7, 6, 3, 2, 5, 1, "SAME", 1), (2, 9, 9, 4, 3, 6, 2, "SAME", 1),
              (1, 9, 8, 2, 3, 4, 2, "VALID", 1), (2, 8, 8, 3, 3, 4, 1, "SAME", 2),
              (1, 1, 1, 1, 1, 1, 1, "VALID", 1)]


# -- against the reference ---------------------------------------------------------------

@covers(*OPS)
@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("geo", GEOMETRIES)
def test_fused_convolutions_match_the_integer_reference(runner, op_type, geo):
    relu = "Relu" in op_type
    n, h, w, c, k, out, stride, padding, dilation = geo
    rng = np.random.default_rng(sum(geo[:6]) * (3 if relu else 1))
    for trial in range(3):
        bits = 8 if trial == 1 else 7
        x, f, bias = case(rng, n, h, w, c, k, out, bits, "qint32" if trial == 2 else "float32")
        rx = (0.0, float(rng.uniform(0.5, 4)))
        rf = (-float(rng.uniform(0.1, 1)), float(rng.uniform(0.1, 1)))
        rout = output_range(rng, x, f, bias, rx, rf, stride, padding, dilation)
        tout = "qint8" if trial == 1 else "quint8"
        got = run(runner, functools.partial(conv_op, op_type, x, f, bias, rx, rf, rout, stride,
                                            padding, tout, dilation))
        want = fused_conv(x, f, bias, rx, rf, rout, stride, padding, tout, relu, dilation)
        np.testing.assert_array_equal(got[0], want, err_msg=f"trial {trial}")
        assert (float(got[1]), float(got[2])) == (float(F32(rout[0])), float(F32(rout[1])))


@covers(OPS[1])
def test_values_mean_what_the_ranges_say(runner):
    # relu(conv(x_f, f_f) + bias) with x_f = x * max|rx| / 255 and f_f = f * max|rf| / 127,
    # read back as out * max_out / 255: within one half output step plus float rounding.
    rng = np.random.default_rng(5)
    x, f, bias = case(rng, 2, 6, 6, 3, 3, 8)
    rx, rf, rout = (0.0, 2.0), (-0.4, 0.5), (0.0, 30.0)
    got = run(runner, lambda: conv_op(OPS[1], x, f, bias, rx, rf, rout))
    sx, sf, _ = scales(rx, rf)
    real = np.maximum(accumulator(x, f, 1, "SAME") * float(sx) * float(sf) + bias, 0)
    step = 30.0 / 255
    np.testing.assert_allclose(got[0] * step, np.minimum(real, 30.0), atol=step / 2 + 1e-4)


@covers(*OPS)
def test_the_frozen_range_clips_and_relu_clamps_at_zero(runner):
    x = np.full((1, 1, 2, 1), 255, np.uint8)
    f = np.array([[[[127, -127]]]], np.int8)
    bias = np.zeros(2, F32)
    ranges = dict(rx=(0.0, 255.0), rf=(-127.0, 127.0), rout=(-100.0, 100.0), padding="VALID")
    got = run(runner, lambda: [*conv_op(OPS[0], x, f, bias, tout="qint8", **ranges),
                               *conv_op(OPS[1], x, f, bias, tout="qint8", **ranges)])
    assert got[0].tolist() == [[[[127, -128], [127, -128]]]]
    assert got[3].tolist() == [[[[127, 0], [127, 0]]]]


# -- fbgemm: the pair guard and the prepack cache -----------------------------------------

def fbgemm_or_skip():
    if not qconv.usable():
        pytest.skip("torch has no fbgemm quantized engine here")


def test_the_pair_bound_holds_for_seven_bit_filters_and_not_for_eight():
    seven = torch.full((3, 3, 4, 2), 64, dtype=torch.int8)
    eight = torch.full((3, 3, 4, 2), 127, dtype=torch.int8)
    assert qconv.safe_input_max(seven) == 255
    if fbgemm.pairs_saturate():
        assert qconv.safe_input_max(eight) == 32767 // 254 == 129
        assert qconv.safe_input_max(-eight) == 32768 // 254
    else:
        assert qconv.safe_input_max(eight) == 255


@covers(OPS[0])
def test_eight_bit_filters_that_could_saturate_stay_exact(runner):
    # Every weight 127 and every input 255: each adjacent pair is 64770, over int16; the
    # kernel leaves fbgemm for the integer path where a pair could saturate.
    x = np.full((1, 3, 3, 8), 255, np.uint8)
    f = np.full((3, 3, 8, 4), 127, np.int8)
    bias = np.zeros(4, F32)
    rx, rf, rout = (0.0, 255.0), (-127.0, 127.0), (-(127.0 * 255 * 72), 127.0 * 255 * 72)
    got = run(runner, lambda: conv_op(OPS[0], x, f, bias, rx, rf, rout, tout="qint8"))
    np.testing.assert_array_equal(got[0], fused_conv(x, f, bias, rx, rf, rout, tout="qint8"))
    assert got[0][0, 1, 1].tolist() == [127] * 4


def test_each_filter_is_prepacked_once_and_forgotten_with_it():
    fbgemm_or_skip()
    rng = np.random.default_rng(1)
    x, f, bias = case(rng, 2, 5, 5, 3, 3, 4)
    rx, rf, rout = (0.0, 2.0), (-1.0, 1.0), (0.0, 40.0)
    graph = tf.Graph()
    with graph.as_default():
        out = conv_op(OPS[1], x, f, bias, rx, rf, rout)
    before = qconv.cached_filter_ids()
    with tf.Session(graph=graph) as session:
        first = session.run(out[0])
        packed = qconv.cached_filter_ids() - before
        second = session.run(out[0])
        assert qconv.cached_filter_ids() - before == packed and len(packed) == 1
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, fused_conv(x, f, bias, rx, rf, rout, relu=True))
    del session, graph, out
    gc.collect()
    assert not qconv.cached_filter_ids() & packed


def test_packing_leaves_the_quantized_engine_as_it_was():
    fbgemm_or_skip()
    before = torch.backends.quantized.engine
    rng = np.random.default_rng(2)
    x, f, bias = case(rng, 1, 4, 4, 2, 3, 3)
    with tf.Session(graph=tf.Graph()) as session:
        with session.graph.as_default():
            out = conv_op(OPS[0], x, f, bias, (0.0, 1.0), (-1.0, 1.0), (-9.0, 9.0),
                          tout="qint8")
        session.run(out[0])
    assert torch.backends.quantized.engine == before


# -- static shapes and errors ------------------------------------------------------------

def test_static_shapes_and_default_output_types():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.quint8, [None, 7, 6, 3])
        f = tf.constant(np.zeros((3, 3, 3, 5), np.int8), dtype=tf.qint8)
        b = tf.constant(np.zeros(5, F32))
        kw = dict(input=x, filter=f, bias=b, min_input=0.0, max_input=1.0, min_filter=-1.0,
                  max_filter=1.0, min_freezed_output=-1.0, max_freezed_output=1.0)
        same = RO.QuantizedConv2DWithBiasAndReluAndRequantize(strides=[1, 2, 2, 1],
                                                              padding="SAME", **kw)
        valid = RO.QuantizedConv2DWithBiasAndRequantize(strides=[1, 1, 1, 1],
                                                        padding="VALID", **kw)
        assert same.output.dtype == tf.quint8 and valid.output.dtype == tf.qint8
        assert same.output.shape.as_list() == [None, 4, 3, 5]
        assert valid.output.shape.as_list() == [None, 5, 4, 5]
        assert same.min_output.shape.as_list() == []
        unknown = RO.QuantizedConv2DWithBiasAndRequantize(
            strides=[1, 1, 1, 1], padding="SAME",
            **dict(kw, input=tf.placeholder(tf.quint8)))
        assert unknown.output.shape.as_list() == [None, None, None, 5]


@pytest.mark.parametrize("change, error, words", [
    (dict(filter_shape=(3, 3, 4, 5)), ValueError, "Dimensions must be equal"),
    (dict(bias_shape=(5, 1)), ValueError, "must be rank 1"),
    (dict(padding="EXPLICIT"), ValueError, "padding"),
    (dict(min_input=np.zeros(2, F32)), ValueError, "must be rank 0"),
    (dict(bias_dtype=tf.int32), TypeError, "bias"),
])
def test_build_time_errors(change, error, words):
    with tf.Graph().as_default():
        f = tf.constant(np.zeros(change.get("filter_shape", (3, 3, 3, 5)), np.int8),
                        dtype=tf.qint8)
        b = tf.constant(np.zeros(change.get("bias_shape", (5,)), np.int32),
                        dtype=change.get("bias_dtype", tf.qint32))
        with pytest.raises(error, match=words):
            RO.QuantizedConv2DWithBiasAndRequantize(
                input=tf.placeholder(tf.quint8, [1, 5, 5, 3]), filter=f, bias=b,
                min_input=change.get("min_input", 0.0), max_input=1.0, min_filter=-1.0,
                max_filter=1.0, min_freezed_output=-1.0, max_freezed_output=1.0,
                strides=[1, 1, 1, 1], padding=change.get("padding", "SAME"))


@covers(OPS[0])
def test_run_time_errors_name_the_problem(runner):
    mark_executed(OPS[0])
    x, f, bias = case(np.random.default_rng(3), 1, 4, 4, 2, 3, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="range of input is empty"):
        run(runner, lambda: conv_op(OPS[0], x, f, bias, (0.0, 0.0), (-1.0, 1.0),
                                    (-1.0, 1.0)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="bias must be a vector"):
        run(runner, lambda: conv_op(OPS[0], x, f, bias[:2], (0.0, 1.0), (-1.0, 1.0),
                                    (-1.0, 1.0)))
    with runner.scope():
        small = tf.placeholder(tf.quint8, None)
        out = RO.QuantizedConv2DWithBiasAndRequantize(
            input=small, filter=tf.constant(f, dtype=tf.qint8), bias=tf.constant(bias),
            min_input=0.0, max_input=1.0, min_filter=-1.0, max_filter=1.0,
            min_freezed_output=-1.0, max_freezed_output=1.0, strides=[1, 1, 1, 1],
            padding="VALID")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Negative dimension size"):
        runner.run([out.output], {small: np.zeros((1, 2, 2, 2), np.uint8)})
