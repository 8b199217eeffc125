"""quantize_graph's TF options beyond calibration: `fallback_range` (TF's
--quantized_fallback_min/max: shared Consts fallback_quantization_{min,max}_value in every
Requantize instead of RequantizationRange; inputs still measured by Min/Max), and
FakeQuantWithMinMaxVars/Args nodes whose ranges become the calibrated ranges of the tensors
they read (the node itself bypassed, as TF's tool merged it into the op before it)."""

from __future__ import annotations

import numpy as np
import pytest
from test_quantize_graph import run

import engine as tf
from engine import errors
from engine.passes.quantize_graph import calibration_tensors, quantize_graph

RNG = np.random.default_rng(0)


def const(*shape, scale=0.5, name=None):
    return tf.constant((RNG.normal(size=shape) * scale).astype(np.float32), name=name)


def mlp(fake_quant=None):
    """x -> MatMul -> BiasAdd -> [FakeQuant] -> Relu -> MatMul -> out."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        h = tf.nn.bias_add(tf.matmul(x, const(8, 16), name="mm1"), const(16), name="b1")
        if fake_quant == "vars":
            h = tf.quantization.fake_quant_with_min_max_vars(h, -2.0, 3.0, name="fq")
        elif fake_quant == "args":
            h = tf.quantization.fake_quant_with_min_max_args(h, -2.5, 2.5, name="fq")
        elif fake_quant == "fed":
            h = tf.quantization.fake_quant_with_min_max_vars(
                h, tf.placeholder(tf.float32, [], name="lo"), 3.0, name="fq")
        tf.matmul(tf.nn.relu(h, name="relu"), const(16, 4), name="out")
    return g.as_graph_def()


FEEDS = {"x:0": RNG.normal(size=(32, 8)).astype(np.float32)}


def by_op(graph_def, op):
    return [n for n in graph_def.node if n.op == op]


def test_fallback_range_replaces_requantization_range():
    gd = mlp()
    result = quantize_graph(gd, "eightbit", fallback_range=(-8.0, 8.0))
    q = result.graph_def
    assert not by_op(q, "RequantizationRange")
    names = {n.name for n in q.node}
    assert {"fallback_quantization_min_value", "fallback_quantization_max_value"} <= names
    assert float(q.by_name("fallback_quantization_min_value").attr["value"]) == -8.0
    requantizes = by_op(q, "Requantize")
    assert requantizes and all(n.input[3:5] == ["fallback_quantization_min_value",
                                                 "fallback_quantization_max_value"]
                               for n in requantizes)
    # TF measured the inputs of each quantized op at run time all the same.
    assert by_op(q, "Min") and by_op(q, "Max")
    want = run(gd, "out:0", FEEDS)
    got = run(q, "out:0", FEEDS)
    assert np.abs(got - want).max() < 0.1 * np.abs(want).max()


def test_a_tight_fallback_range_clamps_like_tfs():
    """Every layer's output is cut to the fallback range (why TF called the tool coarse)."""
    q = quantize_graph(mlp(), "eightbit", output_names=["relu", "out"],
                       fallback_range=(-0.25, 0.25)).graph_def
    got = run(q, "relu:0", FEEDS)
    assert got.max() <= 0.26     # the top of the range, plus MIN_FIRST's widening
    assert run(mlp(), "relu:0", FEEDS).max() > 0.5


def test_calibrated_ranges_win_over_the_fallback():
    gd = mlp()
    ranges = {"mm1:0": (-4.0, 4.0)}
    q = quantize_graph(gd, "eightbit", calibration=ranges, fallback_range=(-8.0, 8.0),
                       fuse=False).graph_def
    first = q.by_name("mm1_eightbit_requantize")
    assert first.input[3:5] == ["mm1_eightbit_requant_range_min",
                                "mm1_eightbit_requant_range_max"]
    assert q.by_name("b1_eightbit_requantize").input[3] == "fallback_quantization_min_value"


@pytest.mark.parametrize("kw,message", [
    ({"mode": "eightbit", "fallback_range": (1.0, 1.0)},
     "Invalid fallback_quantization_range: [1.0,1.0]"),
    ({"mode": "weights", "fallback_range": (-1.0, 1.0)},
     "fallback_quantization_range can only be specified in eightbit mode")])
def test_bad_fallback_ranges_are_refused_in_tfs_words(kw, message):
    with pytest.raises(errors.InvalidArgumentError) as e:
        quantize_graph(mlp(), **kw)
    assert message in e.value.message


@pytest.mark.parametrize("form,lo,hi", [("vars", -2.0, 3.0), ("args", -2.5, 2.5)])
def test_fake_quant_ranges_become_calibrated_ranges(form, lo, hi):
    gd = mlp(form)
    result = quantize_graph(gd, "eightbit", fuse=False)
    q = result.graph_def
    assert result.fake_quant == {"fq": (lo, hi)}
    assert result.ranges["b1:0"] == (lo, hi)
    assert not [n for n in q.node if n.op.startswith("FakeQuant")]
    bias_requantize = q.by_name("b1_eightbit_requantize")
    assert [float(q.by_name(i).attr["value"]) for i in bias_requantize.input[3:5]] == [lo, hi]
    # The other layers still find their ranges at run time.
    assert by_op(q, "RequantizationRange")
    want = run(gd, "out:0", FEEDS)
    assert np.abs(run(q, "out:0", FEEDS) - want).max() < 0.1 * np.abs(want).max()


def test_a_fake_quant_output_keeps_its_name_and_a_fed_range_stays_float():
    gd = mlp("vars")
    q = quantize_graph(gd, "eightbit", output_names=["fq", "out"], fuse=False).graph_def
    assert q.by_name("fq").op == "Identity"
    got = run(q, "fq:0", FEEDS)
    assert got.min() >= -2.0 - 1e-6 and got.max() <= 3.0 + 0.02     # clamped to its range
    # 8-bit inputs, weights and two requantizations: a few levels (5 / 255 each) of error.
    np.testing.assert_allclose(got, run(gd, "fq:0", FEEDS), atol=0.2)
    fed = quantize_graph(mlp("fed"), "eightbit")
    assert fed.kept_float["fq"] == "its min/max inputs are not Consts (freeze the graph first)"
    assert fed.fake_quant == {}


def test_calibration_tensors_follow_the_folded_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 5, 5, 2], name="x")
        y = tf.nn.conv2d(x, const(3, 3, 2, 4), [1, 1, 1, 1], "SAME", name="conv")
        tf.nn.fused_batch_norm(y, const(4), const(4), const(4), tf.constant(np.ones(4, np.float32)),
                               is_training=False, name="bn")
    gd = g.as_graph_def()
    assert calibration_tensors(gd) == ["x:0", "bn:0"]
    assert calibration_tensors(gd, fold_batch_norms=False) == ["x:0", "conv:0"]
