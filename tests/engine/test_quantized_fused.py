"""TF's fused quantized MatMul ops (QuantizedMatMulWithBias[AndRelu][AndRequantize]) on CPU
(fbgemm) and a virtual GPU (the integer path): against a NumPy reference of the same integer
maths, the meaning of their ranges, the fbgemm pair guard and prepack cache, and their
static shapes and errors. TF 2.21's CPU build computes these ops in graph mode only (in eager
mode: "Missing 0-th output"); test_quantized_matmul_tf.py holds ours against its outputs, and
the maths here is that of TF's oneDNN kernel (mkl_qmatmul_op.cc) with fbgemm's rounding."""

from __future__ import annotations

import functools
import gc
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import quantized_reference as ref
import torch
from kernel_harness import covers, mark_executed

import engine as tf
from engine.kernels import quantized_fbgemm as fbgemm

RO = tf.raw_ops
F32 = np.float32
REQUANTIZE_OPS = ("QuantizedMatMulWithBiasAndRequantize",
                  "QuantizedMatMulWithBiasAndReluAndRequantize")
INT32_OPS = ("QuantizedMatMulWithBias", "QuantizedMatMulWithBiasAndRelu")


# -- the NumPy reference -----------------------------------------------------------------

def scales(ra, rb, mode="MIN_FIRST"):
    """(scale_a, zero_a, scale_b, acc_scale): a = scale_a (q - zero_a), b = scale_b q."""
    lo, hi = F32(ra[0]), F32(ra[1])
    if mode == "MIN_FIRST":
        scale_a, zero_a = F32(F32(hi - lo) / F32(255)), ref.zero_point(lo, hi, "quint8")
    else:
        scale_a, zero_a = F32(max(abs(lo), abs(hi)) / F32(255)), 0
    scale_b = F32(max(abs(F32(rb[0])), abs(F32(rb[1]))) / F32(127))
    return scale_a, zero_a, scale_b, F32(scale_a * scale_b)


def accumulator(a, b, zero_a):
    acc = (np.asarray(a, np.int64) - zero_a) @ np.asarray(b, np.int64)
    assert np.abs(acc).max(initial=0) < 2 ** 31
    return acc.astype(np.int32)


def float_step(acc, bias, acc_scale):
    """fbgemm: float32(acc) + bias / acc_scale; a qint32 bias is first bias * acc_scale."""
    bias_f = bias.astype(F32) if bias.dtype == F32 else (bias.astype(F32) * acc_scale)
    return acc.astype(F32) + (bias_f.astype(F32) / acc_scale).astype(F32)


def fused_requantize(a, b, bias, ra, rb, rout, tout="quint8", relu=False, mode="MIN_FIRST"):
    scale_a, zero_a, scale_b, acc_scale = scales(ra, rb, mode)
    step = float_step(accumulator(a, b, zero_a), bias, acc_scale)
    top = max(abs(F32(rout[0])), abs(F32(rout[1])))
    s_out = F32(top / F32(255 if tout == "quint8" else 127))
    scaled = (step * F32(acc_scale / s_out)).astype(F32)
    low, high = ref.LIMITS[tout]
    return np.rint(np.clip(scaled, 0 if relu else low, high)).astype(ref.NP[tout])


def fused_int32(a, b, bias, ra, rb, relu=False, mode="MIN_FIRST"):
    _, zero_a, _, acc_scale = scales(ra, rb, mode)
    acc = accumulator(a, b, zero_a)
    if bias.dtype == np.int32:
        out = acc.astype(np.int64) + bias
    else:
        out = np.rint(float_step(acc, bias, acc_scale).astype(np.float64))
    out = np.maximum(out, 0) if relu else out
    level_a = F32(F32(F32(ra[1]) - F32(ra[0])) / F32(255))
    level_b = F32(F32(F32(rb[1]) - F32(rb[0])) / F32(254))
    quantum = F32(level_a * level_b)
    return out.astype(np.int32), (F32(quantum * F32(-2 ** 31)), F32(quantum * F32(2 ** 31)))


# -- helpers -----------------------------------------------------------------------------

def case(rng, m, k, n, weight_bits=8, bias_type="float32"):
    a = rng.integers(0, 256, size=(m, k)).astype(np.uint8)
    half = 1 << (weight_bits - 1)
    b = rng.integers(-half, half, size=(k, n)).astype(np.int8)
    if bias_type == "float32":
        bias = rng.normal(0.0, 2.0, size=n).astype(F32)
    else:
        bias = rng.integers(-50000, 50000, size=n).astype(np.int32)
    return a, b, bias


def const(values, dtype):
    return tf.constant(values, dtype=dtype)


def requantize_op(op_type, a, b, bias, ra, rb, rout, tout="quint8", transpose=(False, False),
                  mode="MIN_FIRST"):
    bias_t = const(bias, tf.qint32) if bias.dtype == np.int32 else const(bias, tf.float32)
    return getattr(RO, op_type)(
        a=const(a.T if transpose[0] else a, tf.quint8),
        b=const(b.T if transpose[1] else b, tf.qint8), bias=bias_t, min_a=ra[0], max_a=ra[1],
        min_b=rb[0], max_b=rb[1], min_freezed_output=rout[0], max_freezed_output=rout[1],
        Toutput=tf.quint8 if tout == "quint8" else tf.qint8, transpose_a=transpose[0],
        transpose_b=transpose[1], input_quant_mode=mode)


def int32_op(op_type, a, b, bias, ra, rb):
    bias_t = const(bias, tf.qint32) if bias.dtype == np.int32 else const(bias, tf.float32)
    return getattr(RO, op_type)(a=const(a, tf.quint8), b=const(b.T, tf.qint8), bias=bias_t,
                                min_a=ra[0], max_a=ra[1], min_b=rb[0], max_b=rb[1],
                                transpose_b=True)


def output_range(rng, a, b, bias, ra, rb, mode):
    """A freezed output range that puts most outputs inside the type (not all clipped)."""
    scale_a, zero_a, _, acc_scale = scales(ra, rb, mode)
    step = float_step(accumulator(a, b, zero_a), bias, acc_scale) * acc_scale
    top = float(np.abs(step).max()) * rng.uniform(0.6, 1.1) + 1e-3
    return (0.0, top) if rng.random() < 0.5 else (-top, top)


def run(runner, build):
    with runner.scope():
        outs = build()
    return runner.run(list(outs))


SHAPES = [(1, 1, 1), (1, 1024, 10), (3, 7, 5), (17, 64, 33), (40, 257, 31), (256, 300, 64)]


# -- the requantizing ops against the reference --------------------------------------------

@covers(*REQUANTIZE_OPS)
@pytest.mark.parametrize("op_type", REQUANTIZE_OPS)
@pytest.mark.parametrize("shape", SHAPES)
def test_requantizing_ops_match_the_integer_reference(runner, op_type, shape):
    relu = "Relu" in op_type
    rng = np.random.default_rng(sum(shape) * (3 if relu else 1))
    for trial in range(4):
        weight_bits = 8 if trial % 2 else 7
        a, b, bias = case(rng, *shape, weight_bits, "qint32" if trial == 3 else "float32")
        mode = "SCALED" if trial == 2 else "MIN_FIRST"
        ra = (0.0, 3.5) if mode == "SCALED" else (float(rng.uniform(-2, 0)), 1.5)
        rb = (-float(rng.uniform(0.1, 1)), float(rng.uniform(0.1, 1)))
        rout = output_range(rng, a, b, bias, ra, rb, mode)
        tout = "qint8" if trial == 1 else "quint8"
        transpose = (bool(trial & 1), bool(trial & 2))
        got = run(runner, functools.partial(requantize_op, op_type, a, b, bias, ra, rb, rout,
                                            tout, transpose, mode))
        want = fused_requantize(a, b, bias, ra, rb, rout, tout, relu, mode)
        np.testing.assert_array_equal(got[0], want, err_msg=f"trial {trial}")
        assert (float(got[1]), float(got[2])) == (float(F32(rout[0])), float(F32(rout[1])))


@covers("QuantizedMatMulWithBiasAndReluAndRequantize")
def test_values_mean_what_the_ranges_say(runner):
    # The float maths the op stands for: relu(a_f @ b_f + bias) with a_f, b_f from the
    # ranges (MIN_FIRST a, symmetric b), read back as out * max_out / 255: within one half
    # output step plus float32 rounding of the sums.
    rng = np.random.default_rng(5)
    a, b, bias = case(rng, 32, 200, 24)
    ra, rb, rout = (-1.0, 3.0), (-0.5, 0.5), (0.0, 20.0)
    got = run(runner, lambda: requantize_op(REQUANTIZE_OPS[1], a, b, bias, ra, rb, rout))
    scale_a, zero_a, scale_b, _ = scales(ra, rb)
    real = np.maximum((a.astype(np.float64) - zero_a) * scale_a @ (b * scale_b) + bias, 0)
    step = 20.0 / 255
    np.testing.assert_allclose(got[0] * step, np.minimum(real, 20.0), atol=step / 2 + 1e-4)


@covers(*REQUANTIZE_OPS)
def test_ties_round_half_to_even_and_relu_clamps_at_zero(runner):
    # acc_scale 1 and an output step 2 put every odd accumulator on a tie.
    a = np.array([[1, 3, 5, 7, 9, 11, 0, 0]], np.uint8)
    b = np.eye(8, dtype=np.int8)
    b[6, 6] = b[7, 7] = -1
    bias = np.array([0, 0, 0, 0, 0, 0, -5, 0], F32)
    ranges = dict(ra=(0.0, 255.0), rb=(-127.0, 127.0), rout=(-254.0, 254.0))
    got = run(runner, lambda: [
        *requantize_op(REQUANTIZE_OPS[0], a, b, bias, tout="qint8", **ranges),
        *requantize_op(REQUANTIZE_OPS[1], a, b, bias, tout="qint8", **ranges)])
    assert got[0].tolist() == [[0, 2, 2, 4, 4, 6, -2, 0]]      # -2.5 -> -2, half to even
    assert got[3].tolist() == [[0, 2, 2, 4, 4, 6, 0, 0]]


# -- fbgemm's pair saturation and the prepack cache ---------------------------------------

def fbgemm_or_skip():
    if not fbgemm.usable():
        pytest.skip("torch has no x86/fbgemm quantized engine here")


def exact_product(a, w_nk, zero_a):
    return (a.astype(np.int64) - zero_a) @ w_nk.T.astype(np.int64)


def through_fbgemm(a, w_nk, zero_a=0):
    """fbgemm's u8 output with scales 1 and an output step 2^10: the accumulator / 1024."""
    bias = torch.zeros(w_nk.shape[0])
    product = fbgemm.Product(torch.from_numpy(w_nk), True, 1.0, bias, bias)
    out = product.run(torch.from_numpy(a), 1.0, zero_a, 1024.0, 0, False)
    return out.numpy().astype(np.int64), product


def test_the_pair_guard_keeps_saturating_products_exact():
    fbgemm_or_skip()
    # Adjacent k pairs (0,1) and (2,3) each hold one 127: safe for any a. Pairs (1,2) would
    # hold two, so a shifted pairing would show. Then a weight with 127 in both rows of a pair.
    a = np.full((3, 4), 255, np.uint8)
    safe = np.array([[0, 127, 127, 0]] * 2, np.int8)
    got, product = through_fbgemm(a, safe)
    assert product.entry.safe_max == 255
    np.testing.assert_array_equal(got, np.rint(exact_product(a, safe, 0) / 1024.0))
    unsafe = np.array([[127, 127, 0, 0]] * 2, np.int8)
    got, product = through_fbgemm(a, unsafe)
    np.testing.assert_array_equal(got, np.rint(exact_product(a, unsafe, 0) / 1024.0))
    if fbgemm.pairs_saturate():
        assert product.entry.safe_max == 129 and product.entry.spread is not None
        assert fbgemm.spread_columns(torch.from_numpy(unsafe)).tolist() == [0, -1, 1, -1, 2, 3]
        assert product.entry.spread[0].tolist() == [0, 0, 1, 1, 2, 3]     # a's columns
        # Unguarded, this CPU's fbgemm clips the pair to 32767: 32767 / 1024 -> 32, where
        # the exact 255 * 254 / 1024 gives 63.
        raw = torch.ops.quantized.linear(
            fbgemm._quantized(torch.from_numpy(a), 1.0, 0), product.entry.packed, 1024.0, 0)
        assert raw.int_repr()[0, 0].item() == 32 and got[0, 0] == 63


def test_small_activations_take_the_direct_path():
    fbgemm_or_skip()
    rng = np.random.default_rng(2)
    w = rng.integers(-128, 128, size=(20, 64)).astype(np.int8)
    a = rng.integers(0, 110, size=(9, 64)).astype(np.uint8)
    got, product = through_fbgemm(a, w, zero_a=40)
    np.testing.assert_array_equal(got, np.clip(np.rint(exact_product(a, w, 40) / 1024.0),
                                               0, 255))
    if fbgemm.pairs_saturate():
        assert product.entry.safe_max >= 110 and product.entry.spread is None


def test_prepacked_weights_are_reused_and_never_stale():
    fbgemm_or_skip()
    rng = np.random.default_rng(3)
    w = torch.from_numpy(rng.integers(-60, 60, size=(6, 10)).astype(np.int8))
    a = torch.from_numpy(rng.integers(0, 256, size=(4, 10)).astype(np.uint8))
    bias = torch.zeros(6)
    first = fbgemm.Product(w, True, 1.0, bias, bias)
    assert fbgemm.Product(w, True, 1.0, bias, bias).entry is first.entry
    w.add_(3)                                  # in place: a new version, a new pack
    again = fbgemm.Product(w, True, 1.0, bias, bias)
    assert again.entry is not first.entry
    out = again.run(a, 1.0, 0, 64.0, 0, False).numpy()
    np.testing.assert_array_equal(out, np.clip(np.rint(exact_product(
        a.numpy(), w.numpy(), 0) / 64.0), 0, 255))
    half = fbgemm.Product(w, True, 0.5, bias, bias)
    assert half.entry is not again.entry                                  # a new scale
    new_bias = torch.zeros(6)                  # equal values, another tensor: a new pack
    assert fbgemm.Product(w, True, 0.5, new_bias, new_bias).entry is not half.entry
    del half
    weight_id = id(w)
    assert weight_id in fbgemm.cached_weight_ids()
    del w, first, again
    gc.collect()
    assert weight_id not in fbgemm.cached_weight_ids()       # a dead weight's pack is freed


def test_the_plain_uint8_view_shares_the_quantized_values():
    fbgemm_or_skip()
    values = torch.arange(24, dtype=torch.uint8).reshape(4, 6) * 10
    q = fbgemm._quantized(values, 0.5, 3)
    for t in (q, q[1:, 2:]):
        view = fbgemm.plain_uint8(t)
        assert view.dtype == torch.uint8 and torch.equal(view, t.int_repr())
        assert view.untyped_storage().data_ptr() == q.untyped_storage().data_ptr()


def test_a_session_packs_a_constant_weight_once():
    fbgemm_or_skip()
    rng = np.random.default_rng(4)
    a, b, bias = case(rng, 8, 32, 16)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.quint8, [None, 32])
        out = RO.QuantizedMatMulWithBiasAndReluAndRequantize(
            a=x, b=const(b, tf.qint8), bias=bias, min_a=-1.0, max_a=1.0, min_b=-1.0,
            max_b=1.0, min_freezed_output=0.0, max_freezed_output=50.0).out
        with tf.Session() as sess:
            sess.run(out, {x: a})
            packs = fbgemm.cached_weight_ids()
            for _ in range(3):
                got = sess.run(out, {x: a})
            assert fbgemm.cached_weight_ids() == packs
    want = fused_requantize(a, b, bias, (-1.0, 1.0), (-1.0, 1.0), (0.0, 50.0), relu=True)
    np.testing.assert_array_equal(got, want)


def test_the_fbgemm_path_prints_no_deprecation_warning():
    # torch 2.13 warns once per process when a quint8/qint8 tensor is first made; the kernel
    # spends that warning quietly. A fresh process shows whether any warning gets out.
    code = textwrap.dedent("""
        import warnings
        import numpy as np
        import engine as tf
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a = tf.constant(np.full((2, 3), 255, np.uint8), dtype=tf.quint8)
            b = tf.constant(np.full((3, 2), 127, np.int8), dtype=tf.qint8)
            out = tf.raw_ops.QuantizedMatMulWithBiasAndRequantize(
                a=a, b=b, bias=[0.0, 0.0], min_a=0.0, max_a=1.0, min_b=-1.0, max_b=1.0,
                min_freezed_output=0.0, max_freezed_output=4.0).out
            print(tf.Session().run(out).tolist())
        print([str(w.message) for w in caught])
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=pathlib.Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    result, warned = done.stdout.strip().splitlines()
    assert result == "[[191, 191], [191, 191]]"      # 3.0 in steps of 4/255
    assert warned == "[]"


# -- the qint32 ops ----------------------------------------------------------------------

@covers(*INT32_OPS)
@pytest.mark.parametrize("op_type", INT32_OPS)
@pytest.mark.parametrize("shape", [(1, 5, 3), (19, 40, 9)])
def test_int32_ops_match_the_integer_reference(runner, op_type, shape):
    relu = "Relu" in op_type
    rng = np.random.default_rng(sum(shape))
    biases = ["float32"] if relu else ["float32", "qint32"]   # AndRelu takes float bias only
    for bias_type in biases:
        a, b, bias = case(rng, *shape, bias_type=bias_type)
        ra, rb = (-0.75, 2.0), (-0.3, 0.4)
        got = run(runner, functools.partial(int32_op, op_type, a, b, bias, ra, rb))
        want, (lo, hi) = fused_int32(a, b, bias, ra, rb, relu)
        np.testing.assert_array_equal(got[0], want)
        assert (float(got[1]), float(got[2])) == (float(lo), float(hi))


# -- shapes and errors ---------------------------------------------------------------------

def fused(op_type=REQUANTIZE_OPS[0], **over):
    args = dict(a=tf.placeholder(tf.quint8, [None, 8]),
                b=const(np.zeros((8, 3), np.int8), tf.qint8),
                bias=np.zeros(3, F32), min_a=0.0, max_a=1.0, min_b=-1.0, max_b=1.0,
                min_freezed_output=0.0, max_freezed_output=1.0)
    if op_type in INT32_OPS:
        del args["min_freezed_output"], args["max_freezed_output"]
    args.update(over)
    return getattr(RO, op_type)(**args)


def test_static_shapes_dtypes_and_attrs():
    with tf.Graph().as_default():
        out = fused()
        assert out._fields == ("out", "min_out", "max_out")
        assert out.out.dtype is tf.quint8 and out.out.shape.as_list() == [None, 3]
        assert out.min_out.shape.as_list() == [] and out.max_out.dtype is tf.float32
        op = out.out.op
        assert (op.get_attr("T1"), op.get_attr("T2"), op.get_attr("Tbias")) == \
            (tf.quint8, tf.qint8, tf.float32)
        assert op.get_attr("input_quant_mode") == "MIN_FIRST"
        assert op.get_attr("transpose_a") is False
        t = fused(a=tf.placeholder(tf.quint8, [8, 5]), b=tf.placeholder(tf.qint8, [3, None]),
                  transpose_a=True, transpose_b=True, Toutput=tf.qint8)
        assert t.out.dtype is tf.qint8 and t.out.shape.as_list() == [5, 3]
        unknown = fused(REQUANTIZE_OPS[1], a=tf.placeholder(tf.quint8),
                        b=tf.placeholder(tf.qint8), bias=tf.placeholder(tf.float32))
        assert unknown.out.shape.as_list() == [None, None]
        wide = fused(INT32_OPS[0], bias=const(np.zeros(3, np.int32), tf.qint32))
        assert wide.out.dtype is tf.qint32 and wide.out.op.get_attr("Tbias") is tf.qint32


def test_build_time_errors_use_tensorflows_wording():
    # TF 2.21 raised each of these while building, with these messages.
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match=r"parameter 'a' of op "
                                            r"'QuantizedMatMulWithBiasAndRequantize' .* "
                                            r"DataType float32 not in list of allowed values: "
                                            r"qint8, quint8, qint32, qint16, quint16"):
            fused(a=tf.constant(np.zeros((4, 8), F32)))
        with pytest.raises(TypeError, match=r"parameter 'bias' .* DataType int32 not in list "
                                            r"of allowed values: float32, qint32"):
            fused(bias=tf.constant([1, 2, 3]))
        with pytest.raises(TypeError, match="parameter 'bias' .* allowed values: float32$"):
            fused(INT32_OPS[1], bias=const(np.zeros(3, np.int32), tf.qint32))
        with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
            fused(min_freezed_output=tf.constant([0.0]))
        with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
            fused(bias=np.zeros((1, 3), F32))
        with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
            fused(a=tf.placeholder(tf.quint8, [8]))
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 8 and 5"):
            fused(b=const(np.zeros((5, 3), np.int8), tf.qint8))
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 8 and 3"):
            fused(transpose_b=True)
        with pytest.raises(ValueError, match="Attr 'input_quant_mode' of "
                                             "'QuantizedMatMulWithBiasAndRequantize' Op passed "
                                             "string 'FOO' not in: \"MIN_FIRST\", \"SCALED\"."):
            fused(input_quant_mode="FOO")
        with pytest.raises(TypeError, match="Input 'min_a' of "
                                            "'QuantizedMatMulWithBiasAndRequantize' Op .*has "
                                            "type int32 that does not match expected type of "
                                            "float32."):
            fused(min_a=tf.constant(0))


BAD_RUNS = [
    ({"bias": np.zeros(4, F32)}, "Must provide as many biases as the columns of the product: "
                                 r"bias \[4\] vs. product \[2, 3\]"),
    ({"min_a": 1.0}, r"max_a \(1\) must be larger than min_a \(1\)"),
    ({"min_b": 0.0, "max_b": 0.0}, "the range of b is empty"),
    ({"min_a": 0.0, "max_a": 0.0, "input_quant_mode": "SCALED"}, "the range of a is empty"),
    ({"max_freezed_output": 0.0}, "must give a finite, non-empty output range"),
]


@covers(*REQUANTIZE_OPS)
@pytest.mark.parametrize("over,message", BAD_RUNS)
def test_bad_ranges_and_biases_are_refused_at_run_time(runner, over, message):
    for op_type in REQUANTIZE_OPS:
        mark_executed(op_type)
        with runner.scope():
            x = tf.placeholder(tf.quint8, [None, 8])
            out = fused(op_type, a=x, **over).out
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            runner.run(out, {x: np.ones((2, 8), np.uint8)})


@covers(REQUANTIZE_OPS[0])
def test_matrices_fed_at_run_time_must_fit(runner):
    mark_executed(REQUANTIZE_OPS[0])
    with runner.scope():
        x = tf.placeholder(tf.quint8, None)
        out = fused(a=x).out
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Matrix size-incompatible: "
                                                             r"In\[0\]: \[2, 5\], In\[1\]: "
                                                             r"\[8, 3\]"):
        runner.run(out, {x: np.ones((2, 5), np.uint8)})


@covers(*REQUANTIZE_OPS)
def test_an_empty_batch_gives_an_empty_output(runner):
    with runner.scope():
        x = tf.placeholder(tf.quint8, [None, 8])
        outs = [fused(op_type, a=x).out for op_type in REQUANTIZE_OPS]
    got = runner.run(outs, {x: np.zeros((0, 8), np.uint8)})
    assert [g.shape for g in got] == [(0, 3), (0, 3)]


# -- the rounding helper the quantize kernels share ----------------------------------------

def test_round_half_away_is_exact_on_whole_binades():
    # Every float32 in [0.25, 0.5), [0.5, 1), [1, 2), [2^22, 2^23), [2^23, 2^24), both signs,
    # and every half in (-2^22, 2^22), against std::round done in float64.
    from engine.kernels import quantized as qk
    for start in (0x3E800000, 0x3F000000, 0x3F800000, 0x4A800000, 0x4B000000):
        bits = np.arange(start, start + (1 << 23), dtype=np.uint32)
        values = np.concatenate([bits.view(F32), -bits.view(F32)])
        got = qk.round_half_away(torch.from_numpy(values)).numpy()
        np.testing.assert_array_equal(got, ref.round_away(values).astype(F32))
    halves = np.arange(-2 ** 22, 2 ** 22, dtype=F32) + F32(0.5)
    np.testing.assert_array_equal(qk.round_half_away(torch.from_numpy(halves)).numpy(),
                                  ref.round_away(halves).astype(F32))
    assert qk.round_half_away(torch.tensor([0.49999997, -0.49999997, 2.5, -2.5])).tolist() == \
        [0.0, -0.0, 3.0, -3.0]
