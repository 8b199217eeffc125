"""The quantized kernels on CPU and a virtual GPU: each against a NumPy reference of TF's
integer maths (quantized_reference.py) on random inputs, and against numbers real
TensorFlow 2.21 (tensorflow-cpu, tf.raw_ops in graph mode) gave for the same inputs."""

from __future__ import annotations

import numpy as np
import pytest
import quantized_reference as ref
import torch
from kernel_harness import covers

import engine as tf
from engine.kernels import quantized as qk

RO = tf.raw_ops
QT = {"quint8": tf.quint8, "qint8": tf.qint8, "qint32": tf.qint32}
X = [-1.0, -0.3, 0.0, 0.25, 0.7, 2.5, 1.0 / 3]


def q(values, t: str):
    return tf.constant(np.array(values, ref.NP[t]), dtype=QT[t])


def run(runner, build):
    with runner.scope():
        outs = build()
    return runner.run(list(outs) if isinstance(outs, tuple) else outs)


def values_and_range(got):
    return np.asarray(got[0]).tolist(), float(got[1]), float(got[2])


# -- QuantizeV2 ------------------------------------------------------------------------

# TF 2.21: QuantizeV2(X, -1.0, 2.0, T, mode) with round_mode HALF_AWAY_FROM_ZERO.
TF_QUANTIZE = {
    ("quint8", "MIN_COMBINED"): ([0, 60, 85, 106, 145, 255, 113], -1.0, 2.0),
    ("quint8", "MIN_FIRST"): ([0, 59, 85, 106, 145, 255, 113], -1.0, 2.0),
    ("quint8", "SCALED"): ([0, 0, 0, 32, 89, 255, 43], 0.0, 2.0),
    ("qint8", "MIN_COMBINED"): ([-128, -69, -43, -22, 17, 127, -15], -1.0, 2.0),
    ("qint8", "MIN_FIRST"): ([-128, -69, -43, -22, 17, 127, -15], -1.0, 2.0),
    ("qint8", "SCALED"): ([-64, -19, 0, 16, 44, 127, 21], -2.0157480239868164, 2.0),
    ("qint32", "MIN_COMBINED"): ([-2147483648, -1145324544, -715827840, -357913856, 286331392,
                                  -2147483648, -238609152], -1.0, 2.0),
    ("qint32", "MIN_FIRST"): ([-2147483648, -1145324544, -715827840, -357913888, 286331200,
                               2147483520, -238609216], -1.0, 2.0),
    ("qint32", "SCALED"): ([-1073741824, -322122560, 0, 268435456, 751619264, -2147483648,
                            357913952], -2.0, 2.0),
}


@covers("QuantizeV2")
@pytest.mark.parametrize("t,mode", sorted(TF_QUANTIZE))
def test_quantize_v2_matches_tensorflow(runner, t, mode):
    got = run(runner, lambda: RO.QuantizeV2(input=X, min_range=-1.0, max_range=2.0, T=QT[t],
                                            mode=mode))
    assert values_and_range(got) == TF_QUANTIZE[t, mode]


@covers("QuantizeV2")
def test_quantize_v2_rounding_narrow_range_and_small_ranges_match_tensorflow(runner):
    def build():
        return [*RO.QuantizeV2(input=X, min_range=-1.0, max_range=2.0, T=tf.quint8,
                               mode="SCALED", round_mode="HALF_TO_EVEN"),
                *RO.QuantizeV2(input=X, min_range=-1.0, max_range=2.0, T=tf.qint8,
                               mode="SCALED", narrow_range=True),
                *RO.QuantizeV2(input=[0.5, 0.75, 1.0], min_range=0.5, max_range=1.0,
                               T=tf.quint8),
                *RO.QuantizeV2(input=[0.0, 0.0005, 0.001], min_range=0.0, max_range=0.001,
                               T=tf.quint8),
                *tf.quantize([0.0, 0.0005, 0.001], 0.0, 0.001, tf.quint8,
                             ensure_minimum_range=0.0)]
    got = run(runner, build)
    triples = [values_and_range(got[i:i + 3]) for i in range(0, 15, 3)]
    # TF 2.21 for the same five calls.
    assert triples[0] == ([0, 0, 0, 32, 89, 255, 42], 0.0, 2.0)
    assert triples[1] == ([-64, -19, 0, 16, 44, 127, 21], -2.0, 2.0)
    assert triples[2] == ([128, 191, 255], 0.0, 1.0)
    assert triples[3] == ([0, 13, 26], 0.0, pytest.approx(0.009999999776482582))
    assert triples[4] == ([0, 128, 255], 0.0, pytest.approx(0.0010000000474974513))


@covers("QuantizeV2")
def test_quantize_v2_basic_example_from_the_brief(runner):
    # TF 2.21: QuantizeV2 of [0, 0.5, 1] in [0, 1] to quint8 gave [0, 128, 255], range (0, 1).
    got = run(runner, lambda: tf.quantization.quantize([0.0, 0.5, 1.0], 0.0, 1.0, tf.quint8))
    assert values_and_range(got) == ([0, 128, 255], 0.0, 1.0)
    assert got[0].dtype == np.uint8


@covers("QuantizeV2")
@pytest.mark.parametrize("t", ["quint8", "qint8"])
@pytest.mark.parametrize("mode", ["MIN_COMBINED", "MIN_FIRST", "SCALED"])
def test_quantize_v2_matches_the_numpy_reference(runner, t, mode):
    rng = np.random.default_rng(7)
    x = rng.uniform(-4.0, 9.0, size=(6, 50)).astype(np.float32)
    got = run(runner, lambda: RO.QuantizeV2(input=x, min_range=-3.0, max_range=7.5, T=QT[t],
                                            mode=mode))
    want, lo, hi = ref.quantize_v2(x, -3.0, 7.5, t, mode)
    np.testing.assert_array_equal(got[0], want)
    assert (float(got[1]), float(got[2])) == (float(lo), float(hi))


# -- Dequantize ------------------------------------------------------------------------

U8 = [0, 1, 77, 128, 200, 255]
S8 = [-128, -1, 0, 1, 50, 127]
# TF 2.21: Dequantize(values, -1.0, 2.0, mode) in float32.
TF_DEQUANTIZE = {
    ("quint8", "MIN_COMBINED"): [-1.0, -0.9882352948188782, -0.09411764144897461,
                                 0.5058823823928833, 1.3529412746429443, 2.0],
    ("qint8", "MIN_COMBINED"): [-1.0, 0.4941176176071167, 0.5058823823928833,
                                0.5176471471786499, 1.0941176414489746, 2.0],
    ("qint8", "MIN_FIRST"): [-1.0, 0.4941176772117615, 0.5058823823928833, 0.5176470875740051,
                             1.0941176414489746, 2.0],
    ("quint8", "SCALED"): [0.0, 0.007843137718737125, 0.6039215922355652, 1.003921627998352,
                           1.5686275959014893, 2.0],
    ("qint8", "SCALED"): [-2.0157480239868164, -0.015748031437397003, 0.0,
                          0.015748031437397003, 0.787401556968689, 2.0],
}


@covers("Dequantize")
@pytest.mark.parametrize("t,mode", sorted(TF_DEQUANTIZE))
def test_dequantize_matches_tensorflow(runner, t, mode):
    values = U8 if t == "quint8" else S8
    got = run(runner, lambda: tf.dequantize(q(values, t), -1.0, 2.0, mode=mode))
    assert got.dtype == np.float32
    assert got.tolist() == TF_DEQUANTIZE[t, mode]


@covers("Dequantize")
@pytest.mark.parametrize("t", ["quint8", "qint8", "qint32"])
@pytest.mark.parametrize("mode", ["MIN_COMBINED", "MIN_FIRST", "SCALED"])
def test_dequantize_matches_the_numpy_reference(runner, t, mode):
    rng = np.random.default_rng(3)
    low, high = ref.LIMITS[t]
    values = rng.integers(low // 2, high // 2, size=40)
    got = run(runner, lambda: RO.Dequantize(input=q(values, t), min_range=-2.5, max_range=6.0,
                                            mode=mode))
    np.testing.assert_array_equal(got, ref.dequantize(values.astype(ref.NP[t]), -2.5, 6.0, t,
                                                      mode))


# -- QuantizedMatMul -------------------------------------------------------------------

A = [[217, 163, 130, 69, 78], [10, 19, 4, 44, 208], [166, 233, 128, 155, 248]]
B = [[186, 161, 139, 143], [239, 71, 208, 171], [0, 100, 219, 141], [8, 195, 186, 216],
     [44, 22, 220, 5]]
# TF 2.21 for A, B quint8 with ranges a [-1, 2], b [-0.5, 0.5].
TF_AB = [[13062, -1680, 10215, 5372], [-6720, -12230, -4538, -23753],
         [-6470, -19555, 35700, -5751]]


@covers("QuantizedMatMul")
def test_quantized_mat_mul_example_from_the_brief(runner):
    # TF 2.21: a = b = [[1,2],[3,4]] quint8 in [0, 1] gave [[7,10],[15,22]], +-33025.51.
    got = run(runner, lambda: RO.QuantizedMatMul(
        a=q([[1, 2], [3, 4]], "quint8"), b=q([[1, 2], [3, 4]], "quint8"), min_a=0.0,
        max_a=1.0, min_b=0.0, max_b=1.0, Toutput=tf.qint32))
    assert got[0].dtype == np.int32 and got[0].tolist() == [[7, 10], [15, 22]]
    assert (float(got[1]), float(got[2])) == (-33025.51171875, 33025.51171875)


@covers("QuantizedMatMul")
@pytest.mark.parametrize("transpose", [False, True])
def test_quantized_mat_mul_with_offsets_matches_tensorflow(runner, transpose):
    a, b = (np.array(A).T, np.array(B).T) if transpose else (A, B)
    got = run(runner, lambda: RO.QuantizedMatMul(
        a=q(a, "quint8"), b=q(b, "quint8"), min_a=-1.0, max_a=2.0, min_b=-0.5, max_b=0.5,
        Toutput=tf.qint32, transpose_a=transpose, transpose_b=transpose))
    assert got[0].tolist() == TF_AB
    assert (float(got[1]), float(got[2])) == (-99076.53125, 99076.53125)


@covers("QuantizedMatMul")
@pytest.mark.parametrize("t", ["quint8", "qint8"])
@pytest.mark.parametrize("shape", [(1, 3, 2), (33, 24, 40), (20, 7, 13)])
def test_quantized_mat_mul_matches_the_numpy_reference(runner, t, shape):
    # qint8 operands are an extension: TF 2.21 registers only quint8 x quint8 -> qint32.
    m, k, n = shape
    rng = np.random.default_rng(m * k * n)
    low, high = ref.LIMITS[t]
    a = rng.integers(low, high + 1, size=(m, k))
    b = rng.integers(low, high + 1, size=(k, n))
    got = run(runner, lambda: RO.QuantizedMatMul(
        a=q(a, t), b=q(b, t), min_a=-0.7, max_a=1.3, min_b=-2.0, max_b=0.25))
    want, (lo, hi) = ref.quantized_matmul(a, b, (-0.7, 1.3), (-2.0, 0.25), t, t)
    np.testing.assert_array_equal(got[0], want)
    assert (float(got[1]), float(got[2])) == (float(lo), float(hi))


@pytest.mark.parametrize("shape", [(1, 3, 2), (16, 8, 8), (17, 16, 8), (40, 9, 30),
                                   (18, 1100, 9)])
def test_int8_product_is_exact_with_and_without_the_padding_cuda_needs(shape):
    m, k, n = shape
    rng = np.random.default_rng(1)
    a = torch.from_numpy(rng.integers(-128, 128, size=(m, k)).astype(np.int8))
    b = torch.from_numpy(rng.integers(-128, 128, size=(k, n)).astype(np.int8))
    want = a.numpy().astype(np.int64) @ b.numpy().astype(np.int64)
    for backend in qk.CPU_INT8_BACKENDS:
        got = qk.int8_matmul(a, b, pad=False, backend=backend)
        assert got.dtype == torch.int32
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(qk.int8_matmul(a, b, pad=True).numpy(), want)


@pytest.mark.parametrize("m, n", [(1, 10), (3, 1), (1, 1)])
@pytest.mark.parametrize("b_transposed", [False, True])
def test_int8_product_of_transposed_views_with_a_single_row_or_column(m, n, b_transposed):
    # A [1, k] view of a [k, 1] tensor has strides (1, 1) and counts as contiguous; on some
    # CPUs (AVX-512 here) torch._int_mm reads it with leading dimension 1 and returns a wrong
    # product, which broke transpose_a with batch 1 on the virtual GPU's integer path.
    rng = np.random.default_rng(m * 10 + n)
    a_np = rng.integers(-128, 128, size=(m, 1024)).astype(np.int8)
    b_np = rng.integers(-128, 128, size=(1024, n)).astype(np.int8)
    a = torch.tensor(a_np.T.copy()).t()     # a [k, 1] C array has strides (1, 1)
    b = torch.tensor(b_np.T.copy()).t() if b_transposed else torch.tensor(b_np)
    assert a.stride() == (1, 1) if m == 1 else a.stride() == (1, m)
    want = a_np.astype(np.int64) @ b_np.astype(np.int64)
    for backend in qk.CPU_INT8_BACKENDS:
        np.testing.assert_array_equal(qk.int8_matmul(a, b, pad=False, backend=backend).numpy(),
                                      want)
    np.testing.assert_array_equal(qk.int8_matmul(a, b, pad=True).numpy(), want)


def test_the_cpu_product_is_integer_arithmetic_unless_float32_gemm_is_asked_for(monkeypatch):
    # torch._int_mm by default; the float32 GEMM stand-in only when chosen, by name.
    assert qk.CPU_INT8_BACKEND == "int_mm" == qk.cpu_int8_backend()
    calls = []
    monkeypatch.setattr(qk, "float32_gemm_matmul", lambda a, b: calls.append(1))
    qk.int8_matmul(torch.ones((2, 3), dtype=torch.int8), torch.ones((3, 2), dtype=torch.int8))
    assert calls == []
    monkeypatch.setattr(qk, "CPU_INT8_BACKEND", "float32_gemm")
    qk.int8_matmul(torch.ones((2, 3), dtype=torch.int8), torch.ones((3, 2), dtype=torch.int8))
    assert calls == [1]
    monkeypatch.setattr(qk, "CPU_INT8_BACKEND", "auto")
    with pytest.raises(ValueError, match="CPU_INT8_BACKEND is 'auto'; choose one of"):
        qk.cpu_int8_backend()


def test_the_float32_backend_is_exact_at_its_worst_case_over_several_blocks():
    # Every product at its extreme (-128 * -128 = 2^14) over 1024-long blocks sums to 2^24,
    # the largest integer float32 holds exactly; 2500 spans three blocks.
    k = 2500
    a = torch.full((3, k), -128, dtype=torch.int8)
    b = torch.full((k, 2), -128, dtype=torch.int8)
    got = qk.float32_gemm_matmul(a, b)
    assert got.dtype == torch.int32 and got.tolist() == [[k * 16384] * 2] * 3
    a[0, 1] = 127
    assert qk.float32_gemm_matmul(a, b)[0, 0].item() == (k - 1) * 16384 - 127 * 128


# -- Requantize, RequantizationRange, QuantizeDownAndShrinkRange -----------------------

I32 = [[-2000000, -3, 0], [5, 123456, 2 ** 31 - 1]]
# TF 2.21: Requantize(I32, -33025.5, 33025.5, lo, hi, out_type).
TF_REQUANTIZE = {
    ("quint8", 0.0, 6.0): [[0, 0, 0], [0, 81, 255]],
    ("qint8", 0.0, 6.0): [[-128, -128, -128], [-128, -47, 127]],
    ("quint8", -2.0, 3.0): [[0, 102, 102], [102, 199, 0]],
    ("qint8", -2.0, 3.0): [[-128, -26, -26], [-26, 71, 127]],
    ("quint8", -1.0, 1.0): [[0, 127, 128], [128, 255, 255]],
    ("qint8", -1.0, 1.0): [[-128, 0, 0], [0, 127, 127]],
}


@covers("Requantize")
@pytest.mark.parametrize("t,lo,hi", sorted(TF_REQUANTIZE))
def test_requantize_matches_tensorflow(runner, t, lo, hi):
    got = run(runner, lambda: RO.Requantize(
        input=q(I32, "qint32"), input_min=-33025.5, input_max=33025.5, requested_output_min=lo,
        requested_output_max=hi, out_type=QT[t]))
    assert values_and_range(got) == (TF_REQUANTIZE[t, lo, hi], lo, hi)


@covers("Requantize")
@pytest.mark.parametrize("t", ["quint8", "qint8"])
def test_requantize_matches_the_numpy_reference(runner, t):
    rng = np.random.default_rng(11)
    values = rng.integers(-(2 ** 28), 2 ** 28, size=(5, 30))
    rin, rout = (-900.0, 1200.0), (-0.75, 3.5)
    got = run(runner, lambda: RO.Requantize(
        input=q(values, "qint32"), input_min=rin[0], input_max=rin[1],
        requested_output_min=rout[0], requested_output_max=rout[1], out_type=QT[t]))
    if t == "quint8":
        want = ref.requantize_32_to_u8(values, rin, rout)
    else:
        want = ref.requantize_float(values, rin, rout, "qint32", "qint8")
    np.testing.assert_array_equal(got[0], want)


@covers("RequantizationRange", "QuantizeDownAndShrinkRange")
def test_range_ops_match_tensorflow(runner):
    small = [[5, 1000], [70000, 123]]

    def build():
        return [*RO.RequantizationRange(input=q(I32, "qint32"), input_min=-33025.5,
                                        input_max=33025.5),
                *RO.RequantizationRange(input=q(small, "qint32"), input_min=-10.0,
                                        input_max=10.0),
                *RO.QuantizeDownAndShrinkRange(input=q(I32, "qint32"), input_min=-33025.5,
                                               input_max=33025.5, out_type=tf.quint8),
                *RO.QuantizeDownAndShrinkRange(input=q(small, "qint32"), input_min=-10.0,
                                               input_max=10.0, out_type=tf.quint8)]
    got = run(runner, build)
    # TF 2.21 for the same four calls.
    assert [float(v) for v in got[:2]] == [-30.75738525390625, 33025.5]
    assert [float(v) for v in got[2:4]] == [0.0, 0.000325965229421854]
    assert values_and_range(got[4:7]) == ([[0, 0, 0], [0, 0, 255]], -30.75738525390625,
                                          33025.5)
    assert values_and_range(got[7:10]) == ([[0, 4], [255, 0]], 0.0, 0.000325965229421854)


@covers("RequantizationRange")
def test_requantization_range_matches_the_numpy_reference(runner):
    rng = np.random.default_rng(5)
    values = rng.integers(-(2 ** 30), 2 ** 30, size=(4, 9))
    got = run(runner, lambda: RO.RequantizationRange(input=q(values, "qint32"),
                                                     input_min=-50.0, input_max=80.0))
    assert tuple(float(v) for v in got) == ref.used_range(values, -50.0, 80.0)


# -- Relu, BiasAdd ---------------------------------------------------------------------

FEATURES = [0, 30, 63, 64, 100, 170, 200, 255]


@covers("QuantizedRelu", "QuantizedRelu6")
def test_quantized_relus_match_tensorflow(runner):
    def build():
        return [*RO.QuantizedRelu(features=q(FEATURES, "quint8"), min_features=-3.0,
                                  max_features=9.0),
                *RO.QuantizedRelu6(features=q(FEATURES, "quint8"), min_features=-3.0,
                                   max_features=9.0),
                *RO.QuantizedRelu(features=q([-5, 0, 7], "qint32"), min_features=-3.0,
                                  max_features=9.0, out_type=tf.qint32)]
    got = run(runner, build)
    # TF 2.21 for the same three calls.
    assert values_and_range(got[0:3]) == ([64, 64, 64, 64, 100, 170, 200, 255], -3.0, 9.0)
    assert values_and_range(got[3:6]) == ([64, 64, 64, 64, 100, 170, 192, 192], -3.0, 9.0)
    assert values_and_range(got[6:9]) == ([-5, 0, 7], -3.0, 9.0)


@covers("QuantizedRelu6")
def test_quantized_relu6_matches_the_numpy_reference(runner):
    values = np.arange(256)
    got = run(runner, lambda: RO.QuantizedRelu6(features=q(values, "quint8"),
                                                min_features=-1.5, max_features=8.0))
    low = ref.float_to_quantized(0.0, -1.5, 8.0, "quint8")
    high = ref.float_to_quantized(6.0, -1.5, 8.0, "quint8")
    np.testing.assert_array_equal(got[0], np.clip(values, low, high))


@covers("QuantizedBiasAdd")
def test_quantized_bias_add_matches_tensorflow(runner):
    got = run(runner, lambda: RO.QuantizedBiasAdd(
        input=q([[138, 20, 76], [123, 108, 103]], "quint8"), bias=q([7, 1, 31], "quint8"),
        min_input=-1.0, max_input=2.0, min_bias=-0.5, max_bias=0.5, out_type=tf.qint32))
    # TF 2.21 for the same call.
    assert values_and_range(got) == ([[1253, -10312, -3951], [-193, -1831, -1349]],
                                     -262144.0, 262144.0)


@covers("QuantizedBiasAdd")
def test_quantized_bias_add_matches_the_numpy_reference(runner):
    rng = np.random.default_rng(9)
    x, bias = rng.integers(0, 256, size=(3, 4, 6)), rng.integers(0, 256, size=6)
    got = run(runner, lambda: RO.QuantizedBiasAdd(
        input=q(x, "quint8"), bias=q(bias, "quint8"), min_input=-4.0, max_input=3.0,
        min_bias=-0.2, max_bias=0.9, out_type=tf.qint32))
    want, (lo, hi) = ref.bias_add(x, bias, (-4.0, 3.0), (-0.2, 0.9))
    np.testing.assert_array_equal(got[0], want)
    assert (float(got[1]), float(got[2])) == (float(lo), float(hi))


# -- pooling, conv, concat, reshape ----------------------------------------------------

POOL_IN = [[[[2, 171], [134, 165], [65, 157], [195, 98]],
            [[117, 255], [206, 251], [97, 175], [243, 166]],
            [[215, 176], [180, 99], [224, 34], [148, 184]],
            [[216, 134], [96, 79], [108, 124], [184, 227]]]]
# TF 2.21 for POOL_IN in [-1, 2]: (op, ksize, stride, padding) -> output.
TF_POOL = {
    ("QuantizedMaxPool", 2, 2, "VALID"): [[[[206, 255], [243, 175]], [[216, 176], [224, 227]]]],
    ("QuantizedAvgPool", 2, 2, "VALID"): [[[[114, 210], [150, 149]], [[176, 122], [166, 142]]]],
    ("QuantizedAvgPool", 3, 2, "SAME"): [[[[137, 164], [162, 135]], [[173, 107], [166, 142]]]],
    ("QuantizedMaxPool", 2, 1, "SAME"): [[
        [[206, 255], [206, 251], [243, 175], [243, 166]],
        [[215, 255], [224, 251], [243, 184], [243, 184]],
        [[216, 176], [224, 124], [224, 227], [184, 227]],
        [[216, 134], [108, 124], [184, 227], [184, 227]]]],
}


@pytest.mark.parametrize("op_type,k,s,padding", sorted(TF_POOL))
@covers("QuantizedMaxPool", "QuantizedAvgPool")
def test_quantized_pools_match_tensorflow(runner, op_type, k, s, padding):
    got = run(runner, lambda: getattr(RO, op_type)(
        input=q(POOL_IN, "quint8"), min_input=-1.0, max_input=2.0, ksize=[1, k, k, 1],
        strides=[1, s, s, 1], padding=padding))
    assert values_and_range(got) == (TF_POOL[op_type, k, s, padding], -1.0, 2.0)


@covers("QuantizedMaxPool", "QuantizedAvgPool")
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_quantized_pools_match_the_numpy_reference(runner, padding):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, size=(2, 7, 6, 3))

    def build():
        kw = dict(min_input=0.0, max_input=1.0, ksize=[1, 3, 2, 1], strides=[1, 2, 2, 1],
                  padding=padding)
        return [RO.QuantizedMaxPool(input=q(x, "quint8"), **kw)[0],
                RO.QuantizedAvgPool(input=q(x, "quint8"), **kw)[0]]
    got_max, got_avg = run(runner, build)
    np.testing.assert_array_equal(got_max, ref.max_pool(x, (3, 2), (2, 2), padding))
    np.testing.assert_array_equal(got_avg, ref.avg_pool(x, (3, 2), (2, 2), padding))


# (batch, height, width, channels, ksize, strides, padding): 1x1 windows, strides past the
# window, windows as large as the image, SAME pads on one side only, an empty batch.
AVG_POOL_CASES = [
    (3, 8, 8, 16, (2, 2), (2, 2), "VALID"), (2, 5, 7, 3, (3, 2), (1, 3), "SAME"),
    (1, 4, 4, 2, (1, 1), (3, 3), "VALID"), (2, 3, 6, 1, (3, 6), (1, 1), "VALID"),
    (1, 6, 5, 4, (4, 4), (2, 1), "SAME"), (0, 4, 4, 2, (2, 2), (2, 2), "SAME")]


@covers("QuantizedAvgPool")
@pytest.mark.parametrize("n,h,w,ch,k,s,padding", AVG_POOL_CASES)
def test_quantized_avg_pool_matches_the_numpy_reference_on_any_window(runner, n, h, w, ch, k,
                                                                      s, padding):
    """The window sums come from a float pool: every truncated mean must still be the
    integer maths of the reference (SAME pads counted out of the divisor)."""
    x = np.random.default_rng(n * 100 + h).integers(0, 256, size=(n, h, w, ch))
    got = run(runner, lambda: RO.QuantizedAvgPool(
        input=q(x, "quint8"), min_input=0.0, max_input=1.0, ksize=[1, *k, 1],
        strides=[1, *s, 1], padding=padding))
    np.testing.assert_array_equal(got[0], ref.avg_pool(x, k, s, padding))


CONV_IN = [[[[18, 239], [136, 91], [172, 146], [65, 82]],
            [[184, 152], [129, 86], [194, 100], [84, 227]],
            [[67, 58], [182, 159], [12, 21], [96, 213]],
            [[102, 201], [81, 61], [202, 224], [20, 14]]]]
CONV_FILTER = [[[[171, 86, 146], [38, 220, 115]], [[229, 203, 180], [59, 196, 13]]],
               [[[145, 103, 255], [50, 242, 23]], [[159, 148, 230], [76, 230, 172]]]]


@covers("QuantizedConv2D")
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_quantized_conv2d_matches_tensorflow(runner, padding):
    got = run(runner, lambda: RO.QuantizedConv2D(
        input=q(CONV_IN, "quint8"), filter=q(CONV_FILTER, "quint8"), min_input=-1.0,
        max_input=2.0, min_filter=-0.5, max_filter=0.5, strides=[1, 2, 2, 1],
        padding=padding))
    # TF 2.21 gave the same numbers for SAME and VALID at stride 2 on this 4x4 input.
    assert values_and_range(got) == (
        [[[[-14235, 27360, 8824], [-10294, 13703, 18492]],
          [[-1288, 20850, -14924], [-12276, 11086, -24120]]]], -99076.53125, 99076.53125)


@covers("QuantizedConv2D")
@pytest.mark.parametrize("padding,stride", [("SAME", 1), ("VALID", 1), ("SAME", 2)])
def test_quantized_conv2d_matches_the_numpy_reference(runner, padding, stride):
    rng = np.random.default_rng(stride)
    x, f = rng.integers(0, 256, size=(2, 6, 5, 3)), rng.integers(0, 256, size=(3, 2, 3, 4))
    got = run(runner, lambda: RO.QuantizedConv2D(
        input=q(x, "quint8"), filter=q(f, "quint8"), min_input=-0.3, max_input=1.7,
        min_filter=-1.0, max_filter=1.0, strides=[1, stride, stride, 1], padding=padding))
    want, (lo, hi) = ref.conv2d(x, f, (-0.3, 1.7), (-1.0, 1.0), stride, padding)
    np.testing.assert_array_equal(got[0], want)
    assert (float(got[1]), float(got[2])) == (float(lo), float(hi))


@covers("QuantizedConcat", "QuantizedReshape")
def test_quantized_concat_and_reshape_match_tensorflow(runner):
    def build():
        a, b = q([[1, 2]], "quint8"), q([[3, 250]], "quint8")
        return [*RO.QuantizedConcat(concat_dim=0, values=[a, b], input_mins=[-1.0, -2.0],
                                    input_maxes=[2.0, 4.0]),
                *RO.QuantizedConcat(concat_dim=1, values=[a, b], input_mins=[-1.0, -1.0],
                                    input_maxes=[2.0, 2.0]),
                *RO.QuantizedReshape(tensor=q([[1, 2], [3, 4]], "quint8"), shape=[4],
                                     input_min=-1.0, input_max=2.0)]
    got = run(runner, build)
    # TF 2.21 for the same three calls.
    assert values_and_range(got[0:3]) == ([[43, 43], [3, 250]], -2.0, 4.0)
    assert values_and_range(got[3:6]) == ([[1, 2, 3, 250]], -1.0, 2.0)
    assert values_and_range(got[6:9]) == ([1, 2, 3, 4], -1.0, 2.0)


@covers("QuantizedConcat")
def test_quantized_concat_requantizes_to_the_joint_range_like_the_reference(runner):
    rng = np.random.default_rng(4)
    parts = [rng.integers(0, 256, size=(2, 3)) for _ in range(3)]
    ranges = [(-1.0, 1.0), (-0.5, 3.0), (-1.0, 1.0)]
    got = run(runner, lambda: RO.QuantizedConcat(
        concat_dim=1, values=[q(p, "quint8") for p in parts],
        input_mins=[r[0] for r in ranges], input_maxes=[r[1] for r in ranges]))
    joint = (-1.0, 3.0)
    want = np.concatenate([ref.requantize_float(p, r, joint, "quint8", "quint8")
                           for p, r in zip(parts, ranges)], axis=1)
    np.testing.assert_array_equal(got[0], want)
    assert (float(got[1]), float(got[2])) == joint


# -- a quantized MLP layer, end to end -------------------------------------------------

@covers("QuantizeV2", "QuantizedMatMul", "RequantizationRange", "Requantize",
        "QuantizedBiasAdd", "QuantizedRelu", "Dequantize")
def test_an_eightbit_dense_layer_tracks_the_float_layer(runner):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(32, 64)).astype(np.float32)
    w = rng.uniform(-0.3, 0.3, size=(64, 16)).astype(np.float32)
    bias = rng.uniform(0.0, 0.5, size=16).astype(np.float32)

    def build():
        qx = tf.quantize(x, float(x.min()), float(x.max()), tf.quint8, mode="MIN_FIRST")
        qw = tf.quantize(w, float(w.min()), float(w.max()), tf.quint8, mode="MIN_FIRST")
        qb = tf.quantize(bias, float(bias.min()), float(bias.max()), tf.quint8,
                         mode="MIN_FIRST")
        acc = RO.QuantizedMatMul(a=qx.output, b=qw.output, min_a=qx.output_min,
                                 max_a=qx.output_max, min_b=qw.output_min, max_b=qw.output_max)
        lo, hi = RO.RequantizationRange(input=acc.out, input_min=acc.min_out,
                                        input_max=acc.max_out)
        y8 = RO.Requantize(input=acc.out, input_min=acc.min_out, input_max=acc.max_out,
                           requested_output_min=lo, requested_output_max=hi,
                           out_type=tf.quint8)
        added = RO.QuantizedBiasAdd(input=y8.output, bias=qb.output, min_input=y8.output_min,
                                    max_input=y8.output_max, min_bias=qb.output_min,
                                    max_bias=qb.output_max, out_type=tf.qint32)
        lo2, hi2 = RO.RequantizationRange(input=added.output, input_min=added.min_out,
                                          input_max=added.max_out)
        z8 = RO.Requantize(input=added.output, input_min=added.min_out,
                           input_max=added.max_out, requested_output_min=lo2,
                           requested_output_max=hi2, out_type=tf.quint8)
        relu = RO.QuantizedRelu(features=z8.output, min_features=z8.output_min,
                                max_features=z8.output_max)
        return tf.dequantize(relu.activations, relu.min_activations, relu.max_activations,
                             mode="MIN_FIRST")
    got = run(runner, build)
    want = np.maximum(x @ w + bias, 0.0)
    span = float(want.max() - want.min())
    assert np.abs(got - want).max() < 0.03 * span
    assert np.corrcoef(got.ravel(), want.ravel())[0, 1] > 0.999


@covers("Requantize", "QuantizedConcat", "QuantizedRelu6", "QuantizedConv2D")
def test_edge_ranges_match_tensorflow(runner):
    def build():
        return [*RO.Requantize(input=q(I32, "qint32"), input_min=-33025.5, input_max=33025.5,
                               requested_output_min=-6.0, requested_output_max=-0.5,
                               out_type=tf.quint8),
                *RO.QuantizedConcat(concat_dim=0, values=[q([[1, 2]], "qint32"),
                                                          q([[3, -250]], "qint32")],
                                    input_mins=[-1.0, -2.0], input_maxes=[2.0, 4.0]),
                *RO.QuantizedConcat(concat_dim=0, values=[q([[1, 2]], "quint8"),
                                                          q([[3, 250]], "quint8")],
                                    input_mins=[0.5, 1.0], input_maxes=[2.0, 4.0]),
                *RO.QuantizedRelu6(features=q([-5, 0, 7, 2 ** 30], "qint32"),
                                   min_features=-3.0, max_features=9.0, out_type=tf.qint32),
                *RO.QuantizedConv2D(input=q(np.full((1, 3, 3, 1), 10), "quint8"),
                                    filter=q(np.full((2, 2, 1, 1), 3), "quint8"),
                                    min_input=0.5, max_input=2.0, min_filter=-1.0,
                                    max_filter=1.0, strides=[1, 1, 1, 1], padding="SAME")]
    got = run(runner, build)
    triples = [values_and_range(got[i:i + 3]) for i in range(0, 15, 3)]
    # TF 2.21 for the same five calls: a requested range below zero; qint32 concat takes a
    # range symmetric around zero, quint8 concat one that holds zero; a conv whose input
    # range lacks zero (its padding still adds nothing).
    assert triples[0] == ([[0, 255, 255], [255, 255, 255]], -6.0, -0.5)
    assert triples[1] == ([[268435456, 268435456], [536870912, 536870720]], -4.0, 4.0)
    assert triples[2] == ([[32, 33], [66, 251]], 0.0, 4.0)
    assert triples[3] == ([-5, 0, 7, 1073741824], -3.0, 9.0)
    assert triples[4] == ([[[[-47500], [-47500], [-23750]], [[-47500], [-47500], [-23750]],
                            [[-23750], [-23750], [-11875]]]], -99076.53125, 99076.53125)


def test_wide_product_is_exact():
    rng = np.random.default_rng(8)
    a = rng.integers(-40000, 40000, size=(5, 300))
    b = rng.integers(-40000, 40000, size=(300, 4))
    got = qk.wide_matmul(torch.from_numpy(a.astype(np.int32)), torch.from_numpy(b.astype(np.int32)))
    np.testing.assert_array_equal(got.numpy(), ((a @ b + 2 ** 31) % 2 ** 32 - 2 ** 31))
