"""The fake quantization kernels on CPU and a virtual GPU against the numbers TensorFlow 2.21
gave for the same inputs (data/fake_quant_tf_reference.npz, written by
data/make_fake_quant_reference.py), plus TF's build-time and run-time errors."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from kernel_harness import covers, mark_executed

import engine as tf
from engine import errors

REF = np.load(pathlib.Path(__file__).parent / "data" / "fake_quant_tf_reference.npz",
              allow_pickle=False)
CONFIGS = [tuple(c) for c in REF["configs"]]
Q = tf.quantization
# At 16 bits a level is 4e-5 wide and a few inputs sit within float32 rounding of a tie:
# TF's vectorised division rounds those to the other level (at most 1 in 100 here).
SIXTEEN_BIT_SLACK = 0.01


def _kw(config) -> dict:
    lo, hi, bits, narrow = config
    return {"num_bits": int(bits), "narrow_range": bool(narrow)}


def _case(i: int):
    lo, hi = (float(v) for v in CONFIGS[i][:2])
    return REF[f"x{i}"], REF[f"g{i}"], lo, hi, _kw(CONFIGS[i])


def _assert_levels(got, want, config) -> None:
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    assert got.shape == want.shape and got.dtype == np.float32
    if int(config[2]) < 16:
        np.testing.assert_array_equal(got, want)
        return
    step = 2 * (config[1] - config[0]) / 65535     # the widest level of either channel
    off = np.abs(got.astype(np.float64) - want) > step / 4
    assert off.mean() <= SIXTEEN_BIT_SLACK
    np.testing.assert_allclose(got, want, atol=step * 1.01, rtol=0)


CASES = pytest.mark.parametrize("i", range(len(CONFIGS)),
                                ids=[f"{c[0]}_{c[1]}_{int(c[2])}b{'n' if c[3] else ''}"
                                     for c in CONFIGS])


def run(runner, build):
    with runner.scope():
        outs = build()
    return runner.run(list(outs) if isinstance(outs, tuple) else outs)


@covers("FakeQuantWithMinMaxArgs")
@CASES
def test_args_matches_tf(runner, i):
    x, _, lo, hi, kw = _case(i)
    got = run(runner, lambda: Q.fake_quant_with_min_max_args(x, lo, hi, **kw))
    _assert_levels(got, REF[f"args{i}"], CONFIGS[i])


@covers("FakeQuantWithMinMaxArgsGradient")
@CASES
def test_args_gradient_matches_tf(runner, i):
    x, g, lo, hi, kw = _case(i)
    got = run(runner, lambda: Q.fake_quant_with_min_max_args_gradient(g, x, lo, hi, **kw))
    np.testing.assert_array_equal(got, REF[f"args_grad{i}"])


@covers("FakeQuantWithMinMaxVars")
@CASES
def test_vars_matches_tf(runner, i):
    x, _, lo, hi, kw = _case(i)
    got = run(runner, lambda: Q.fake_quant_with_min_max_vars(
        x, tf.constant(lo), tf.constant(hi), **kw))
    _assert_levels(got, REF[f"vars{i}"], CONFIGS[i])


@covers("FakeQuantWithMinMaxVarsGradient")
@CASES
def test_vars_gradient_matches_tf(runner, i):
    x, g, lo, hi, kw = _case(i)
    got = run(runner, lambda: tuple(Q.fake_quant_with_min_max_vars_gradient(g, x, lo, hi,
                                                                            **kw)))
    want = REF[f"vars_grad{i}"]
    np.testing.assert_array_equal(got[0], want[:-2])
    np.testing.assert_allclose([got[1], got[2]], want[-2:], rtol=1e-5, atol=1e-4)


@covers("FakeQuantWithMinMaxVarsPerChannel")
@CASES
def test_per_channel_matches_tf(runner, i):
    x, _, lo, hi, kw = _case(i)
    got = run(runner, lambda: Q.fake_quant_with_min_max_vars_per_channel(
        x.reshape(-1, 2), [lo, lo / 2], [hi, hi * 2], **kw))
    _assert_levels(got, REF[f"pc{i}"], CONFIGS[i])


@covers("FakeQuantWithMinMaxVarsPerChannelGradient")
@CASES
def test_per_channel_gradient_matches_tf(runner, i):
    x, g, lo, hi, kw = _case(i)
    got = run(runner, lambda: tuple(Q.fake_quant_with_min_max_vars_per_channel_gradient(
        g.reshape(-1, 2), x.reshape(-1, 2), [lo, lo / 2], [hi, hi * 2], **kw)))
    want = REF[f"pc_grad{i}"]
    np.testing.assert_array_equal(np.ravel(got[0]), want[:-4])
    np.testing.assert_allclose(np.concatenate([got[1], got[2]]), want[-4:], rtol=1e-5,
                               atol=1e-4)


@covers("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsGradient")
@pytest.mark.parametrize("j", range(2), ids=["min_above_max", "min_equals_max"])
def test_vars_odd_ranges_as_tf(runner, j):
    """The Vars forms check nothing: min > max and min == max (NaN) give what TF gives."""
    lo, hi = (float(v) for v in REF["odd_ranges"][j])
    x = REF["odd_x"]
    got = run(runner, lambda: (Q.fake_quant_with_min_max_vars(x, lo, hi),
                               *Q.fake_quant_with_min_max_vars_gradient(x, x, lo, hi)))
    np.testing.assert_array_equal(got[0], REF[f"odd_vars{j}"])
    np.testing.assert_array_equal(got[1], REF[f"odd_vars_grad{j}"][:-2])
    np.testing.assert_allclose(got[2:], REF[f"odd_vars_grad{j}"][-2:], rtol=1e-5)


@covers("FakeQuantWithMinMaxArgs")
def test_zero_is_exact_and_ties_round_up(runner):
    """TF 2.21: [0.5, 1.5, 2.5, -0.5, 254.5] in [0, 255] -> [1, 2, 3, 0, 255]; in
    [-128, 127]: [-0.5, -1.5, -2.5, -127.5, 0.5, 1.5] -> [0, -1, -2, -127, 1, 2]."""
    got = run(runner, lambda: (
        Q.fake_quant_with_min_max_args([0.5, 1.5, 2.5, -0.5, 254.5], 0.0, 255.0),
        Q.fake_quant_with_min_max_args([-0.5, -1.5, -2.5, -127.5, 0.5, 1.5], -128.0, 127.0),
        Q.fake_quant_with_min_max_args([0.0, -0.0], 0.1, 1.0)))
    assert got[0].tolist() == [1, 2, 3, 0, 255]
    assert got[1].tolist() == [0, -1, -2, -127, 1, 2]
    assert got[2].tolist() == [0.0, 0.0]


def _run_error(runner, build, op_type: str) -> str:
    with runner.scope():
        out = build()
    mark_executed(op_type)
    with pytest.raises(errors.InvalidArgumentError) as e:
        runner.run(out)
    return e.value.message


@covers("FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxArgsGradient")
@pytest.mark.parametrize("kw,message", [
    ({"min": 1.0, "max": -1.0}, "min has to be smaller than max, was: 1 >= -1"),
    ({"min": 0.5, "max": 0.5}, "min has to be smaller than max, was: 0.5 >= 0.5"),
    ({"num_bits": 1}, "num_bits must be between 2 and 16, inclusive"),
    ({"num_bits": 17}, "num_bits must be between 2 and 16, inclusive")])
def test_args_refusals_are_tfs(runner, kw, message):
    x = np.zeros(3, np.float32)
    assert message in _run_error(runner, lambda: Q.fake_quant_with_min_max_args(x, **kw),
                                 "FakeQuantWithMinMaxArgs")
    assert message in _run_error(
        runner, lambda: Q.fake_quant_with_min_max_args_gradient(x, x, **kw),
        "FakeQuantWithMinMaxArgsGradient")


@covers("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel",
        "FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsPerChannelGradient")
def test_vars_num_bits_refused(runner):
    x = np.zeros((2, 2), np.float32)
    builds = {
        "FakeQuantWithMinMaxVars": lambda: Q.fake_quant_with_min_max_vars(x, 0.0, 1.0,
                                                                          num_bits=1),
        "FakeQuantWithMinMaxVarsGradient": lambda: Q.fake_quant_with_min_max_vars_gradient(
            x, x, 0.0, 1.0, num_bits=17)[0],
        "FakeQuantWithMinMaxVarsPerChannel": lambda: Q.fake_quant_with_min_max_vars_per_channel(
            x, [0.0, 0.0], [1.0, 1.0], num_bits=17),
        "FakeQuantWithMinMaxVarsPerChannelGradient":
            lambda: Q.fake_quant_with_min_max_vars_per_channel_gradient(
                x, x, [0.0, 0.0], [1.0, 1.0], num_bits=1)[0]}
    for op_type, build in builds.items():
        assert "num_bits must be between 2 and 16, inclusive" in _run_error(runner, build,
                                                                             op_type)


@covers("FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxVarsPerChannel")
def test_run_time_shape_checks(runner):
    """TF 2.21: 'Inputs to operation FakeQuantWithMinMaxArgsGradient of type
    FakeQuantWithMinMaxArgsGradient must have the same size and shape.  Input 0: [3] !=
    input 1: [4]' (its shape function checks nothing); per-channel ranges fed at run time."""
    x = np.zeros(4, np.float32)
    message = _run_error(runner, lambda: Q.fake_quant_with_min_max_args_gradient(x[:3], x),
                         "FakeQuantWithMinMaxArgsGradient")
    assert message.startswith("Inputs to operation FakeQuantWithMinMaxArgsGradient of type "
                       "FakeQuantWithMinMaxArgsGradient must have the same size and shape.  "
                       "Input 0: [3] != input 1: [4]\n")
    with runner.scope():
        lo = tf.placeholder(tf.float32, [None])
        out = Q.fake_quant_with_min_max_vars_per_channel(np.zeros((2, 3), np.float32), lo,
                                                         [1.0, 1.0, 1.0])
    mark_executed("FakeQuantWithMinMaxVarsPerChannel")
    with pytest.raises(errors.InvalidArgumentError, match="min has incorrect size, expected 3"):
        runner.run(out, {lo: [0.0, 0.0]})


def test_build_time_errors_are_tfs():
    """The shape functions' messages, as TF 2.21 words them."""
    with tf.Graph().as_default():
        x = np.zeros((2, 2), np.float32)
        with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
            Q.fake_quant_with_min_max_vars(x, [0.0], [1.0])
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
            Q.fake_quant_with_min_max_vars_per_channel(x, [0.0] * 3, [1.0] * 3)
        with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 0"):
            Q.fake_quant_with_min_max_vars_per_channel(x, 0.0, 1.0)
        with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
            Q.fake_quant_with_min_max_vars_per_channel(np.float32(1.0), [0.0], [1.0])
        with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal, but "
                                             r"are 3 and 4. Shapes are \[3\] and \[4\]."):
            Q.fake_quant_with_min_max_vars_gradient(np.zeros(3, np.float32),
                                                    np.zeros(4, np.float32), 0.0, 1.0)
        with pytest.raises(TypeError, match="has type float64 that does not match expected "
                                            "type of float32"):
            Q.fake_quant_with_min_max_args(tf.constant([1.0], tf.float64))


def test_static_shapes_names_and_raw_ops():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3])
        y = tf.fake_quant_with_min_max_vars(p, tf.placeholder(tf.float32),
                                            tf.placeholder(tf.float32))
        g = Q.fake_quant_with_min_max_vars_per_channel_gradient(
            y, y, tf.placeholder(tf.float32), tf.placeholder(tf.float32))
        a = tf.raw_ops.FakeQuantWithMinMaxArgs(inputs=p, min=-1.0, max=1.0, name="fq")
        r = tf.raw_ops.FakeQuantWithMinMaxVarsGradient(gradients=p, inputs=p, min=0.0, max=1.0)
        assert y.op.type == y.op.name == "FakeQuantWithMinMaxVars"
        assert y.shape.as_list() == [None, 3]
        assert [t.shape.as_list() for t in g] == [[None, 3], [3], [3]]
        assert g._fields == ("backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max")
        assert a.op.name == "fq" and a.op.attrs["min"] == -1.0 and a.op.attrs["num_bits"] == 8
        assert r.backprop_wrt_min.shape.as_list() == []
        assert "fake_quant_with_min_max_vars_per_channel" in Q.__all__


def test_a_graph_file_keeps_the_fake_quant_ops(tmp_path):
    """Saved and loaded through the graph-file checks (engine/graph_signatures.py)."""
    x = np.array([-7.0, -0.3, 0.02, 0.5, 9.0], np.float32)
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [None], name="x")
        a = Q.fake_quant_with_min_max_args(p, -1.0, 1.0, num_bits=5, name="a")
        v = Q.fake_quant_with_min_max_vars(a, -0.5, 0.75, narrow_range=True, name="v")
        Q.fake_quant_with_min_max_vars_gradient(v, p, -0.5, 0.75, name="g")
        with tf.Session(graph=g) as s:
            want = s.run(["v:0", "g:1"], {p: x})
    path = tmp_path / "fq.json"
    tf.save_graph(g.as_graph_def(), path)
    loaded = tf.Graph()
    with loaded.as_default():
        tf.import_graph_def(tf.load_graph_def(path), name="")
        with tf.Session(graph=loaded) as s:
            got = s.run(["v:0", "g:1"], {"x:0": x})
    assert loaded.get_operation_by_name("a").attrs["num_bits"] == 5
    np.testing.assert_array_equal(got[0], want[0])
    assert float(got[1]) == float(want[1])
