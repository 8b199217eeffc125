"""The quantized kernels' fast paths give the same bits as the general ones: QuantizeV2 on
ties, their float32 neighbours, NaN and infinities against the NumPy reference of TF's maths;
Dequantize's and the fused ops' per-step memo (kept for constants, never for a fed or changed
tensor); a fused op's quint8 output handed to the next op only when its scale agrees."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import quantized_reference as ref
import torch
from kernel_harness import covers

import engine as tf
from engine.kernels import quantized as qk
from engine.kernels import quantized_fbgemm as fbgemm

F32 = np.float32
RO = tf.raw_ops
QT = {"quint8": tf.quint8, "qint8": tf.qint8, "qint32": tf.qint32}


def hard_values(lo: float, hi: float) -> np.ndarray:
    """Exact ties of x * scale, the float32 values either side of them, specials, random."""
    scale = float(F32(255.0 / F32(F32(hi) - F32(lo))))
    ties = ((np.arange(-300, 560) + 0.5) / scale).astype(F32)
    rng = np.random.default_rng(7)
    return np.concatenate([
        ties, np.nextafter(ties, F32(np.inf)), np.nextafter(ties, F32(-np.inf)),
        np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30], F32),
        rng.uniform(2 * lo - 1, 2 * hi + 1, 3000).astype(F32)]).astype(F32)


def reference_min_first(x, lo, hi, t):
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore")
        return ref.quantize_min_first(x, lo, hi, t)


@pytest.mark.parametrize("t", ["quint8", "qint8", "qint32"])
@pytest.mark.parametrize("lo,hi", [(0.0, 1.0), (0.0, 0.01), (0.0, 510.0), (-1.0, 2.0),
                                   (-3.3, 0.0), (-1e-9, 4.0)])
def test_quantize_eigen_matches_the_reference_on_ties_and_specials(t, lo, hi):
    x = hard_values(lo, hi)
    if t == "qint32":       # NaN: x86's cast gives INT_MIN, the reference's NumPy cast 0
        x = x[~np.isnan(x)]
    got = qk.quantize_eigen(torch.from_numpy(x), lo, hi, QT[t])
    want = reference_min_first(x, lo, hi, t)
    assert got.dtype == torch.from_numpy(want).dtype
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("lo,hi", [(0.0, 1.0), (0.0, 510.0)])
@pytest.mark.parametrize("tail", range(1, 9))
def test_quantize_eigen_from_zero_on_specials_past_the_last_full_vector(lo, hi, tail):
    """fbgemm's quantize works 8 floats at a time and the remainder one by one: the range
    starting at 0 leaves clamping to it, so specials and ties must come out right in both."""
    scale = float(F32(255.0 / F32(F32(hi) - F32(lo))))
    specials = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3.4e38, 254.5 / scale,
                         255.5 / scale, -0.5 / scale], F32)
    for start in range(len(specials) - tail + 1):
        x = np.concatenate([np.linspace(lo, hi, 8, dtype=F32), specials[start:start + tail]])
        got = qk.quantize_eigen(torch.from_numpy(x), lo, hi, tf.quint8)
        np.testing.assert_array_equal(got.numpy(), reference_min_first(x, lo, hi, "quint8"))


def scaled_hard_values(hi: float) -> np.ndarray:
    """SCALED quint8's ties (x * 255 / hi = n + 0.5), their neighbours, specials, random."""
    factor = F32(255.0) / F32(hi)
    ties = ((np.arange(-5, 300) + 0.5) / factor).astype(F32)
    rng = np.random.default_rng(11)
    return np.concatenate([
        ties, np.nextafter(ties, F32(np.inf)), np.nextafter(ties, F32(-np.inf)),
        np.array([np.inf, 0.0, -0.0, 1e30, -1e30, 3.4e38, -3.4e38], F32),
        rng.uniform(-hi, 2 * hi, 3001).astype(F32)]).astype(F32)


def test_the_one_pass_step_exists_for_most_factors_and_is_exact():
    """fbgemm multiplies by 1.0f / step: the step is kept only where that is the factor
    itself; 255 (range [0, 1]) has no such step and takes the general path."""
    assert qk._step_with_reciprocal(255.0) is None
    factors = (F32(255.0) / np.linspace(0.01, 100.0, 500).astype(F32)).astype(F32)
    steps = [qk._step_with_reciprocal(float(f)) for f in factors]
    assert sum(s is not None for s in steps) > 400
    assert all(F32(1.0) / F32(s) == f for s, f in zip(steps, factors) if s is not None)


@pytest.mark.parametrize("hi", [1.0, 0.9999995, 2.0, 7.3e-5, 0.37])
def test_one_pass_scaled_max_widens_a_range_by_a_few_ulps_to_a_one_pass_step(hi):
    top = qk.one_pass_scaled_max(hi)
    assert F32(hi) <= F32(top) <= F32(hi) * F32(1.0 + 1e-5)
    assert qk._step_with_reciprocal(float(F32(255.0) / F32(top))) is not None


@covers("QuantizeV2")
@pytest.mark.parametrize("lo,hi", [(0.0, 1.0), (0.0, 0.01), (0.0, 510.0), (-1.0, 2.0),
                                   (-3.0, 0.37), (0.0, 7.3e-5)])
@pytest.mark.parametrize("nan", [False, True])
def test_scaled_half_to_even_quint8_in_one_pass_matches_the_reference(runner, lo, hi, nan):
    """The one-pass path (fbgemm's Quantize with the step whose reciprocal is the factor)
    gives TF's bits on ties, neighbours and specials; a NaN (or -inf beside inf) sends the
    step to the general path, which makes NaN 0."""
    x = scaled_hard_values(hi)
    x = np.concatenate([x, np.array([np.nan, -np.inf], F32)]) if nan else x
    factor = float(F32(255.0) / F32(hi))
    fast = qk._quantize_scaled_half_even_cpu(torch.from_numpy(x), factor)
    assert (fast is None) == (nan or qk._step_with_reciprocal(factor) is None)
    with runner.scope():
        out = RO.QuantizeV2(input=x, min_range=lo, max_range=hi, T=tf.quint8, mode="SCALED",
                            round_mode="HALF_TO_EVEN")
    got = np.asarray(runner.run(out[0]))
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore")
        want = ref.quantize_v2(x, lo, hi, "quint8", mode="SCALED", half_to_even=True)[0]
    np.testing.assert_array_equal(got, want)
    if fast is not None:
        np.testing.assert_array_equal(fast.numpy(), want)


@covers("QuantizeV2")
@pytest.mark.parametrize("t", ["quint8", "qint8"])
@pytest.mark.parametrize("mode,half_to_even", [("MIN_FIRST", False), ("SCALED", False),
                                               ("SCALED", True)])
def test_quantize_v2_fast_paths_match_the_reference(runner, t, mode, half_to_even):
    lo, hi = (0.0, 1.0) if mode == "MIN_FIRST" else (-1.0, 1.0)
    x = hard_values(lo, hi)
    with runner.scope():
        out = RO.QuantizeV2(input=x, min_range=lo, max_range=hi, T=QT[t], mode=mode,
                            round_mode="HALF_TO_EVEN" if half_to_even else
                            "HALF_AWAY_FROM_ZERO")
    got = runner.run(out[0])
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore")
        want = ref.quantize_v2(x, lo, hi, t, mode=mode, half_to_even=half_to_even)[0]
    np.testing.assert_array_equal(np.asarray(got), want)


def test_step_memo_keeps_a_repeated_constant_and_drops_changed_or_new_tensors():
    memo = qk._StepMemo(repeats_only=True)
    calls = []

    def make(t):
        calls.append(1)
        return t * 2

    const = torch.arange(4.0)
    first = memo.get((const,), (0.0, 1.0), lambda: make(const))
    second = memo.get((const,), (0.0, 1.0), lambda: make(const))
    third = memo.get((const,), (0.0, 1.0), lambda: make(const))
    assert len(calls) == 2 and third is second and torch.equal(first, second)
    memo.get((const,), (0.0, 2.0), lambda: make(const))          # another range: made again
    assert len(calls) == 3
    const.add_(1.0)                                                # written in place: made again
    got = memo.get((const,), (0.0, 2.0), lambda: make(const))
    assert len(calls) == 4 and got.tolist() == [2.0, 4.0, 6.0, 8.0]
    fresh = [torch.full((2,), float(i)) for i in range(3)]       # a fed tensor each step
    for t in fresh:
        assert memo.get((t,), (0.0, 2.0), lambda t=t: make(t)).tolist() == [2 * t[0].item()] * 2
    assert memo.entry[1] is None                                   # nothing of theirs held


def test_dequantize_follows_its_feed_and_repeats_a_constant():
    with tf.Graph().as_default():
        fed = tf.placeholder(tf.quint8, [3])
        const = tf.constant(np.array([0, 128, 255], np.uint8), dtype=tf.quint8)
        out_fed = tf.dequantize(fed, -1.0, 1.0, mode="MIN_FIRST")
        out_const = tf.dequantize(const, 0.0, 2.0, mode="MIN_FIRST")
        with tf.Session() as sess:
            runs = [sess.run([out_fed, out_const], {fed: np.array([i, 0, 255], np.uint8)})
                    for i in (10, 200, 10)]
    want_fed = [ref.dequantize_min_first(np.array([i, 0, 255]), F32(-1.0), F32(1.0), "quint8")
                for i in (10, 200, 10)]
    want_const = ref.dequantize_min_first(np.array([0, 128, 255]), F32(0.0), F32(2.0), "quint8")
    for (got_fed, got_const), want in zip(runs, want_fed):
        np.testing.assert_array_equal(got_fed, want.astype(F32))
        np.testing.assert_array_equal(got_const, want_const.astype(F32))


@pytest.mark.skipif(not fbgemm.usable(), reason="fbgemm is not this torch's quantized engine")
def test_a_fused_output_is_rewrapped_where_the_next_scale_differs():
    a = torch.tensor([[0, 10, 200, 255]], dtype=torch.uint8)
    fbgemm.quantize_ready()
    made = fbgemm.as_quint8(a, 0.5, 3)
    a._engine_quint8 = (made, 0.5, 3)
    assert fbgemm.as_quint8(a, 0.5, 3) is made
    other = fbgemm.as_quint8(a, 0.25, 3)
    assert other is not made and other.q_scale() == 0.25 and other.q_zero_point() == 3
    assert fbgemm.plain_uint8(other).tolist() == a.tolist()
