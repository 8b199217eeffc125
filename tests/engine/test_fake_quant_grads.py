"""Gradients of the fake quantization ops through tf.gradients against torch.autograd of
torch.fake_quantize_per_tensor_affine / per_channel_affine with TF's nudged scale and zero
point (straight-through inside the nudged range); for the Vars forms the min and max
gradients (TF: the sums of the gradients below and above the range) are added in torch as
x < nudged_min and x > nudged_max terms. Inputs keep half a level away from the range's ends,
where torch's mask (after rounding) and TF's (before it) differ by design."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from grad_harness import FLOAT32, check_gradients, grad_test

import engine as tf

Q = tf.quantization
F = np.float32
RANGES = [(-1.0, 1.0, 8, False), (-0.3, 2.7, 4, True), (0.2, 0.8, 8, False),
          (-1.7, 0.9, 6, False)]


def tf_nudge(lo, hi, num_bits: int, narrow_range: bool):
    """TF's Nudge in float32: (scale, zero point, quant_min, quant_max, nudged_min, nudged_max)."""
    qmin, qmax = (1 if narrow_range else 0), (1 << num_bits) - 1
    lo, hi = np.asarray(lo, F), np.asarray(hi, F)
    scale = (hi - lo) / F(qmax - qmin)
    zero = F(qmin) - lo / scale
    rounded = np.floor(zero) + (zero - np.floor(zero) >= 0.5)
    zp = np.clip(np.where(zero < qmin, qmin, np.where(zero > qmax, qmax, rounded)), qmin, qmax)
    return scale, zp.astype(np.int32), qmin, qmax, (qmin - zp) * scale, (qmax - zp) * scale


def inputs_clear_of_ends(rng, shape, nudged_min, nudged_max, scale):
    """Uniform values over the range and a level beyond it, none within half a level (plus
    a margin) of either nudged end."""
    span = nudged_max - nudged_min
    x = rng.uniform(nudged_min - 0.3 * span, nudged_max + 0.3 * span, size=shape).astype(F)
    near = (np.abs(x - nudged_min) < scale) | (np.abs(x - nudged_max) < scale)
    return np.where(near, (nudged_min + nudged_max) / 2, x).astype(F)


def _ranged(case):
    lo, hi, bits, narrow = case
    return lo, hi, {"num_bits": bits, "narrow_range": narrow}


CASES = pytest.mark.parametrize("case", RANGES, ids=[f"{c[0]}_{c[1]}_{c[2]}b" for c in RANGES])


@grad_test("FakeQuantWithMinMaxArgs")
@CASES
def test_args_gradient_is_straight_through(case):
    lo, hi, kw = _ranged(case)
    scale, zp, qmin, qmax, nmin, nmax = tf_nudge(lo, hi, **kw)
    x = inputs_clear_of_ends(np.random.default_rng(0), (40, 3), nmin, nmax, scale)
    check_gradients(
        lambda t: Q.fake_quant_with_min_max_args(t, lo, hi, **kw),
        lambda t: torch.fake_quantize_per_tensor_affine(t, float(scale), int(zp), qmin, qmax),
        [x], tol=FLOAT32)


def _torch_vars(t, lo, hi, nudged):
    scale, zp, qmin, qmax, nmin, nmax = nudged
    out = torch.fake_quantize_per_tensor_affine(t, float(scale), int(zp), qmin, qmax)
    below, above = (t < float(nmin)).to(t.dtype), (t > float(nmax)).to(t.dtype)
    return out + below * (lo - lo.detach()) + above * (hi - hi.detach())


@grad_test("FakeQuantWithMinMaxVars")
@CASES
def test_vars_gradient_reaches_min_and_max(case):
    lo, hi, kw = _ranged(case)
    nudged = tf_nudge(lo, hi, **kw)
    x = inputs_clear_of_ends(np.random.default_rng(1), (30, 4), *nudged[4:], nudged[0])
    check_gradients(lambda t, a, b: Q.fake_quant_with_min_max_vars(t, a, b, **kw),
                    lambda t, a, b: _torch_vars(t, a, b, nudged),
                    [x, np.asarray(lo, F), np.asarray(hi, F)], dynamic=True, tol=FLOAT32)


def _channel_inputs(rng, shape, nudged):
    scale, _, _, _, nmin, nmax = nudged
    columns = [inputs_clear_of_ends(rng, shape[:-1], nmin[c], nmax[c], scale[c])
               for c in range(shape[-1])]
    return np.stack(columns, axis=-1)


def _torch_per_channel(t, lo, hi, nudged):
    scale, zp, qmin, qmax, nmin, nmax = nudged
    out = torch.fake_quantize_per_channel_affine(t, torch.from_numpy(scale),
                                                 torch.from_numpy(zp), t.dim() - 1, qmin, qmax)
    below = (t < torch.from_numpy(nmin)).to(t.dtype)
    above = (t > torch.from_numpy(nmax)).to(t.dtype)
    return out + below * (lo - lo.detach()) + above * (hi - hi.detach())


@grad_test("FakeQuantWithMinMaxVarsPerChannel")
@pytest.mark.parametrize("shape", [(5,), (6, 3), (2, 3, 3, 4)], ids=["rank1", "rank2", "nhwc"])
def test_per_channel_gradient_sums_per_channel(shape):
    rng = np.random.default_rng(2)
    depth = shape[-1]
    lo = rng.uniform(-2.0, 0.3, depth).astype(F)
    hi = (lo + rng.uniform(0.5, 3.0, depth)).astype(F)
    kw = {"num_bits": 5, "narrow_range": False}
    nudged = tf_nudge(lo, hi, **kw)
    x = _channel_inputs(rng, shape, nudged)
    check_gradients(lambda t, a, b: Q.fake_quant_with_min_max_vars_per_channel(t, a, b, **kw),
                    lambda t, a, b: _torch_per_channel(t, a, b, nudged), [x, lo, hi],
                    tol=FLOAT32)


def test_gradient_ops_match_the_rules_output():
    """The registered rule emits TF's *Gradient ops with the forward op's attrs."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        lo, hi = tf.constant(-1.0), tf.constant(1.0)
        y = Q.fake_quant_with_min_max_vars(x, lo, hi, num_bits=6, narrow_range=True)
        gx, glo, ghi = tf.gradients(tf.reduce_sum(y * 2.0), [x, lo, hi])
        assert gx.op.type == "FakeQuantWithMinMaxVarsGradient"
        assert gx.op.attrs["num_bits"] == 6 and gx.op.attrs["narrow_range"] is True
        a = Q.fake_quant_with_min_max_args(x, -0.5, 0.5)
        (ga,) = tf.gradients(a, [x])
        assert ga.op.type == "FakeQuantWithMinMaxArgsGradient"
        assert ga.op.attrs["min"] == -0.5
        with tf.Session() as s:
            got = s.run([gx, glo, ghi, ga], {x: [-3.0, 0.25, 2.0]})
    assert got[0].tolist() == [0.0, 2.0, 0.0] and float(got[1]) == 2.0 and float(got[2]) == 2.0
    assert got[3].tolist() == [0.0, 1.0, 0.0]


def test_registered_gradients_give_tfs_numbers():
    """tf.gradients through each forward op, as TF 2.21 gave them (a (-1, 1) 8-bit range
    nudges to [-0.99608, 1.00392] in float32: -0.999 falls below it, 1.003 inside)."""
    x = np.array([-3.0, -1.0, -0.999, 0.2, 0.7, 1.0, 1.003, 1.5, 4.0], F)
    w = np.arange(1, 10, dtype=F)
    with tf.Graph().as_default():
        xt, lo, hi = tf.constant(x), tf.constant(-1.0), tf.constant(1.0)
        y = Q.fake_quant_with_min_max_vars(xt, lo, hi, num_bits=4, narrow_range=True)
        pairs = tf.reshape(xt[:8], [4, 2])
        los, his = tf.constant([-1.0, -0.5]), tf.constant([1.0, 2.0])
        y2 = Q.fake_quant_with_min_max_vars_per_channel(pairs, los, his)
        y3 = Q.fake_quant_with_min_max_args(xt, -1.0, 1.0, num_bits=4)
        grads = [tf.gradients(tf.reduce_sum(y * w), [xt, lo, hi]),
                 tf.gradients(tf.reduce_sum(y2 * w[:8].reshape(4, 2)), [pairs, los, his]),
                 tf.gradients(tf.reduce_sum(y3 * w), [xt])]
        with tf.Session() as s:
            vars_g, channel_g, args_g = s.run(grads)
    assert vars_g[0].tolist() == [0, 2, 3, 4, 5, 6, 0, 0, 0]
    assert float(vars_g[1]) == 1.0 and float(vars_g[2]) == 24.0
    assert channel_g[0].tolist() == [[0, 0], [0, 4], [5, 6], [7, 8]]
    assert channel_g[1].tolist() == [4, 2] and channel_g[2].tolist() == [0, 0]
    assert args_g[0].tolist() == [0, 0, 0, 4, 5, 6, 7, 0, 0]
