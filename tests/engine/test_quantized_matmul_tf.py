"""The fused quantized MatMul ops against TensorFlow 2.21 itself: the outputs and ranges its
oneDNN kernels gave in graph mode for the same inputs (data/quantized_matmul_tf_reference.npz,
written by data/make_quantized_matmul_reference.py), on the CPU and the virtual GPU."""

from __future__ import annotations

import numpy as np
import pytest
import quantized_reference
from kernel_harness import covers

import engine as tf

MAKE, REF = quantized_reference.tf_reference("quantized_matmul")


def build(op: str, i: int):
    a, b, bias, ranges, mode, (ta, tb) = MAKE.case(i)
    kw = dict(a=tf.constant(a.T if ta else a, tf.quint8),
              b=tf.constant(b.T if tb else b, tf.qint8),
              bias=tf.constant(bias, tf.qint32 if bias.dtype == np.int32 else tf.float32),
              min_a=ranges[0], max_a=ranges[1], min_b=ranges[2], max_b=ranges[3],
              transpose_a=ta, transpose_b=tb, input_quant_mode=mode)
    if op in MAKE.REQUANTIZE_OPS:
        lo, hi = MAKE.freezed_range(i, "Relu" in op)
        kw.update(min_freezed_output=lo, max_freezed_output=hi, Toutput=tf.quint8)
    return getattr(tf.raw_ops, op)(**kw)


def cases(op: str, below_zero: bool = False) -> list[int]:
    """The cases TF computed for op: those whose a range starts at 0 (SCALED, or MIN_FIRST
    from 0), or with below_zero those whose MIN_FIRST range starts below 0."""
    def starts_below_zero(i):
        return MAKE.case(i)[3][0] < 0
    return [i for i in MAKE.CASES if f"{op}/{i}" in REF and starts_below_zero(i) == below_zero]


# With a float bias, TF's oneDNN kernel adds it to the qint32 accumulator in another float
# order than fbgemm's step (and than its own requantizing kernels, which agree with ours bit
# for bit): measured over these cases, 82 of 17,741 QuantizedMatMulWithBias outputs and 62 of
# 11,819 ...AndRelu outputs are one unit apart, the rest equal.
INT32_APART = 0.01


@covers(*MAKE.OPS)
@pytest.mark.parametrize("op_type", MAKE.OPS)
def test_fused_matmuls_give_what_tensorflow_gives(runner, op_type):
    with runner.scope():
        outs = [build(op_type, i) for i in cases(op_type)]
    got = runner.run([t for out in outs for t in out])
    apart, total = 0, 0
    for k, i in enumerate(cases(op_type)):
        value, lo, hi = got[3 * k:3 * k + 3]
        want = REF[f"{op_type}/{i}"]
        assert value.dtype == want.dtype and value.shape == want.shape, f"case {i}"
        diff = np.abs(value.astype(np.int64) - want.astype(np.int64))
        assert diff.max(initial=0) <= (0 if op_type in MAKE.REQUANTIZE_OPS else 1), \
            f"{op_type}, case {i}: {diff.max()} apart"
        apart, total = apart + int((diff > 0).sum()), total + diff.size
        assert (float(lo), float(hi)) == tuple(float(v) for v in REF[f"{op_type}/{i}/range"]), \
            f"{op_type}, case {i}"
    assert apart <= INT32_APART * total, f"{op_type}: {apart} of {total} outputs differ"


@covers("QuantizedMatMulWithBias")
def test_below_zero_min_first_tensorflow_scales_the_zero_point_twice(runner):
    # For a MIN_FIRST a whose range starts below 0, TF 2.21's oneDNN kernel subtracts the zero
    # point's share zp * sum_k(b) divided by the accumulator scale once more than it should,
    # so its qint32 output is off by about 1e8-1e9 units (its 8-bit ops then clip to 0 or 255).
    # Ours subtracts zp * sum_k(b) in accumulator units: a product that means what the ranges
    # say (test_quantized_fused.test_values_mean_what_the_ranges_say).
    below = cases("QuantizedMatMulWithBias", below_zero=True)
    assert len(below) >= 5
    with runner.scope():
        outs = [build("QuantizedMatMulWithBias", i) for i in below]
    got = runner.run([out[0] for out in outs])
    for value, i in zip(got, below):
        a, b, bias, ranges, _, _ = MAKE.case(i)
        lo, hi = np.float32(ranges[0]), np.float32(ranges[1])
        scale_a = float(np.float32(np.float32(hi - lo) / np.float32(255)))
        scale_b = float(np.float32(max(abs(np.float32(ranges[2])), abs(np.float32(ranges[3])))
                                   / np.float32(127)))
        acc_scale, zero_point = scale_a * scale_b, -float(lo) / scale_a
        raw = a.astype(np.float64) @ b.astype(np.float64)
        share = zero_point * b.astype(np.float64).sum(0)
        tf_formula = raw + bias / acc_scale - share / acc_scale
        np.testing.assert_allclose(REF[f"QuantizedMatMulWithBias/{i}"], tf_formula, rtol=1e-6,
                                   atol=200, err_msg=f"case {i}")
        ours = raw - np.round(zero_point) * b.astype(np.float64).sum(0) + bias / acc_scale
        np.testing.assert_allclose(value, ours, atol=1, err_msg=f"case {i}")
