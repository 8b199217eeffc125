"""The steady-step paths of the calibrated int8 chain give the same bits as the general ones:
torch's dequantize of a fused op's qint8 output, the SCALED input QuantizeV2 handing its quint8
to the first fused op without a copy, the per-node memo that skips reading ranges (kept while
the same tensors come back unchanged, dropped for a changed or new one), and the pass's SCALED
input for a calibrated range that starts at 0."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import engine as tf
from engine.kernels import quantized as qk
from engine.kernels import quantized_fbgemm as fbgemm
from engine.passes.quantize_graph import one_pass_scaled_max, quantize_graph, scaled_quint8_step

RO = tf.raw_ops
F32 = np.float32
needs_fbgemm = pytest.mark.skipif(not fbgemm.usable(),
                                  reason="fbgemm is not this torch's quantized engine")


def signed_made(u: np.ndarray, scale: float) -> torch.Tensor:
    """A signed_view as a fused op with qint8 output leaves it (quint8, zero point 128)."""
    fbgemm.quantize_ready()
    q = fbgemm._quantized(torch.from_numpy(u), scale, 128)
    plain = fbgemm.fresh_plain_uint8(q)
    plain._engine_quint8 = (q, scale, 128)
    return fbgemm.signed_view(plain)


@needs_fbgemm
def test_torchs_dequantize_of_a_fused_qint8_output_is_q_times_scale_bit_for_bit():
    rng = np.random.default_rng(3)
    # every level, then 13 more: torch's vector loop and its scalar tail (32 a vector)
    u = np.concatenate([np.arange(256), np.arange(13) * 19]).astype(np.uint8).reshape(1, 269)
    scales = [float(F32(s)) for s in 10.0 ** rng.uniform(-29, 29, 200)]
    scales += [float(F32(2.0 ** -100)), float(F32(2.0 ** 100)), float(F32(1 / 127)),
               float(np.nextafter(F32(1.0), F32(0)))]
    for scale in scales:
        signed = signed_made(u, scale)
        assert signed.dtype == torch.int8
        np.testing.assert_array_equal(signed.numpy(), (u.astype(np.int16) - 128))
        got = fbgemm.dequantize_made(signed, scale)
        want = signed.numpy().astype(F32) * F32(scale)
        np.testing.assert_array_equal(got.numpy().view(np.uint32), want.view(np.uint32),
                                      err_msg=f"scale {scale!r}")


@needs_fbgemm
def test_dequantize_made_declines_another_scale_a_tiny_one_or_a_plain_tensor():
    u = np.arange(256, dtype=np.uint8).reshape(1, 256)
    signed = signed_made(u, 0.5)
    assert fbgemm.dequantize_made(signed, 0.25) is None
    assert fbgemm.dequantize_made(signed_made(u, 2.0 ** -110), 2.0 ** -110) is None
    assert fbgemm.dequantize_made(torch.zeros(3, dtype=torch.int8), 0.5) is None


def fused_then_dequantize(rng, relu=False):
    a = rng.integers(0, 256, size=(33, 40)).astype(np.uint8)
    b = rng.integers(-64, 65, size=(40, 7)).astype(np.int8)
    bias = rng.normal(0, 1, 7).astype(F32)
    op = RO.QuantizedMatMulWithBiasAndReluAndRequantize if relu else \
        RO.QuantizedMatMulWithBiasAndRequantize
    fused = op(a=tf.constant(a, dtype=tf.quint8), b=tf.constant(b, dtype=tf.qint8),
               bias=bias, min_a=0.0, max_a=2.0, min_b=-1.0, max_b=1.0,
               min_freezed_output=0.0 if relu else -9.0, max_freezed_output=9.0,
               Toutput=tf.quint8 if relu else tf.qint8)
    return fused, tf.dequantize(fused[0], fused[1], fused[2],
                                mode="MIN_FIRST" if relu else "SCALED")


@needs_fbgemm
def test_a_fused_qint8_output_dequantizes_in_one_torch_call_to_tfs_scaled_values(monkeypatch):
    taken = []
    original = fbgemm.dequantize_made

    def spy(q, scale):
        made = original(q, scale)
        taken.append(made is not None)
        return made
    monkeypatch.setattr(fbgemm, "dequantize_made", spy)
    with tf.Graph().as_default():
        fused, out = fused_then_dequantize(np.random.default_rng(5))
        with tf.Session() as sess:
            runs = [sess.run([fused[0], fused[2], out]) for _ in range(2)]
    for q, hi, got in runs:
        want = q.astype(F32) * F32(F32(hi) / F32(127))       # TF's SCALED qint8, lo = -hi
        np.testing.assert_array_equal(got, want)
    assert taken == [True, True]


def test_a_fused_op_follows_a_range_or_weights_variable_that_changes():
    """The memo knows its inputs by identity and version: an assign (in place, same shape)
    to a range or to the weights is read on the next step."""
    rng = np.random.default_rng(8)
    a = rng.integers(0, 256, size=(9, 12)).astype(np.uint8)
    b0, b1 = (rng.integers(-64, 65, size=(12, 5)).astype(np.int8) for _ in range(2))
    bias = rng.normal(0, 1, 5).astype(F32)

    def graph(b_value, top):
        return RO.QuantizedMatMulWithBiasAndReluAndRequantize(
            a=tf.constant(a, dtype=tf.quint8), b=b_value, bias=bias, min_a=0.0, max_a=1.0,
            min_b=-1.0, max_b=1.0, min_freezed_output=0.0, max_freezed_output=top,
            Toutput=tf.quint8)[0]
    with tf.Graph().as_default():
        top = tf.Variable(4.0)
        weights = tf.Variable(tf.constant(b0, dtype=tf.qint8))
        out = graph(weights, top)
        fixed = [graph(tf.constant(b, dtype=tf.qint8), t) for b, t in
                 ((b0, 4.0), (b0, 2.5), (b1, 2.5))]
        set_top = top.assign(2.5)
        set_weights = weights.assign(tf.constant(b1, dtype=tf.qint8))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            steps = [sess.run(out), sess.run(out)]
            sess.run(set_top)
            steps.append(sess.run(out))
            sess.run(set_weights)
            steps.append(sess.run(out))
            want = sess.run(fixed)
    for got, expected in zip(steps, [want[0], want[0], want[1], want[2]]):
        np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(want[0], want[1]) and not np.array_equal(want[1], want[2])


def test_same_inputs_memo_drops_a_new_or_written_tensor():
    memo = qk._SameInputs()
    lo, hi = torch.tensor(0.0), torch.tensor(1.0)
    assert memo.get((lo, hi)) is None
    memo.put((lo, hi), "kept")
    assert memo.get((lo, hi)) == "kept"
    assert memo.get((lo, torch.tensor(1.0))) is None         # another tensor, same value
    hi.add_(1.0)
    assert memo.get((lo, hi)) is None                        # written in place
    memo.put((lo, hi), "again")
    assert memo.get((lo, hi)) == "again"
    assert memo.get((torch.tensor(0.0), hi)) is None         # a fresh one each step


@needs_fbgemm
@pytest.mark.parametrize("hi", [1.0, 0.9999995, 2.0, 0.37, 0.011, 255.0])
def test_the_scaled_input_reaches_the_first_fused_op_without_a_copy(monkeypatch, hi):
    """one_pass_scaled_max picks a max whose one-pass step is the consumer's own scale_a, so
    the fused op takes QuantizeV2's quint8 as it is; the values are TF's SCALED ones."""
    top = one_pass_scaled_max(hi)
    factor = float(F32(255.0) / F32(top))
    assert scaled_quint8_step(factor) == float(F32(F32(F32(255.0) / F32(factor)) / F32(255)))
    rng = np.random.default_rng(2)
    x = rng.uniform(-0.1 * hi, 1.1 * hi, size=(20, 16)).astype(F32)
    b = rng.integers(-64, 65, size=(16, 4)).astype(np.int8)
    with tf.Graph().as_default():
        ph = tf.placeholder(tf.float32, [None, 16])
        q = RO.QuantizeV2(input=ph, min_range=0.0, max_range=top, T=tf.quint8, mode="SCALED",
                          round_mode="HALF_TO_EVEN")
        fused = RO.QuantizedMatMulWithBiasAndReluAndRequantize(
            a=q.output, b=tf.constant(b, dtype=tf.qint8), bias=np.zeros(4, F32),
            min_a=q.output_min, max_a=q.output_max, min_b=-1.0, max_b=1.0,
            min_freezed_output=0.0, max_freezed_output=4.0 * hi, Toutput=tf.quint8,
            input_quant_mode="SCALED")
        with tf.Session() as sess:
            first = sess.run([q.output, fused[0]], {ph: x})
            wraps = []
            original = fbgemm._quantized
            monkeypatch.setattr(fbgemm, "_quantized", lambda *a: wraps.append(1) or original(*a))
            second = sess.run([q.output, fused[0]], {ph: x})
    assert wraps == []
    want = np.clip(np.rint(np.clip(x, 0, F32(top)) * F32(factor)), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(first[0], want)
    for a_got, b_got in zip(first, second):
        np.testing.assert_array_equal(a_got, b_got)


def dense_chain(x_range):
    """x -> (MatMul + BiasAdd + Relu) -> (MatMul + BiasAdd) -> out, with the pass's inputs."""
    rng = np.random.default_rng(4)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, rng.normal(size=(6, 8)).astype(F32)),
                                      rng.normal(size=8).astype(F32)))
        tf.identity(tf.nn.bias_add(tf.matmul(h, rng.normal(size=(8, 3)).astype(F32)),
                                   rng.normal(size=3).astype(F32)), name="out")
    samples = rng.uniform(*x_range, size=(64, 6)).astype(F32)
    return g.as_graph_def(), samples


@pytest.mark.parametrize("x_range,scaled", [((0.0, 1.0), True), ((-1.0, 1.0), False)])
def test_the_pass_quantizes_a_range_from_zero_in_scaled_mode(x_range, scaled):
    from engine.compression import calibrate
    gd, samples = dense_chain(x_range)
    ranges = calibrate(gd, {"x": samples})
    result = quantize_graph(gd, "eightbit", calibration=ranges, output_names=["out"])
    nodes = {n.name: n for n in result.graph_def.node}
    quantize = [n for n in nodes.values() if n.op == "QuantizeV2"]
    fused = [n for n in nodes.values() if n.op.startswith("QuantizedMatMulWith")]
    assert len(quantize) == 1 and len(fused) == 2        # one quantize: the chain stays 8-bit
    (q,) = quantize
    assert q.attr["mode"] == ("SCALED" if scaled else "MIN_FIRST")
    assert q.attr["round_mode"] == ("HALF_TO_EVEN" if scaled else "HALF_AWAY_FROM_ZERO")
    first = next(n for n in fused if n.input[0] == q.name)
    assert first.attr["input_quant_mode"] == q.attr["mode"]
    assert [n.attr["input_quant_mode"] for n in fused if n is not first] == ["MIN_FIRST"]
    top = float(np.asarray(nodes[q.input[2]].attr["value"]))
    seen = float(ranges["x:0"][1])
    assert top == (one_pass_scaled_max(seen) if scaled else seen)
    with tf.Graph().as_default() as g:
        tf.import_graph_def(result.graph_def, name="")
        with tf.Session(graph=g) as sess:
            got = sess.run("out:0", {"x:0": samples})
    with tf.Graph().as_default() as g:
        tf.import_graph_def(gd, name="")
        with tf.Session(graph=g) as sess:
            want = sess.run("out:0", {"x:0": samples})
    assert np.max(np.abs(got - want)) <= 0.05 * np.max(np.abs(want))
