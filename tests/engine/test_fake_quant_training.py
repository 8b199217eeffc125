"""Quantization-aware training end to end: a small regression net trained with
fake_quant_with_min_max_vars on variable ranges (the ranges learn through the registered
gradients), frozen with convert_variables_to_constants, then quantized: quantize_graph takes
the learned ranges from the FakeQuant nodes, so those layers need no RequantizationRange."""

from __future__ import annotations

import numpy as np

import engine as tf
from engine.passes.quantize_graph import quantize_graph

RNG = np.random.default_rng(0)
X = RNG.normal(size=(256, 6)).astype(np.float32)
TRUE_W = RNG.normal(size=(6, 1)).astype(np.float32)
Y = np.maximum(X @ TRUE_W, 0.0) * 0.5


def train():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        w1 = tf.Variable((RNG.normal(size=(6, 8)) * 0.5).astype(np.float32), name="w1")
        b1 = tf.Variable(np.zeros(8, np.float32), name="b1")
        lo = tf.Variable(-0.5, name="act_min")
        hi = tf.Variable(0.5, name="act_max")
        h = tf.nn.bias_add(tf.matmul(x, w1), b1, name="hidden")
        h = tf.quantization.fake_quant_with_min_max_vars(h, lo, hi, name="act_quant")
        w2 = tf.Variable((RNG.normal(size=(8, 1)) * 0.5).astype(np.float32), name="w2")
        out = tf.matmul(tf.nn.relu(h), w2, name="out")
        loss = tf.reduce_mean(tf.square(out - y))
        step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            first = s.run(loss, {x: X, y: Y})
            for _ in range(300):
                s.run(step, {x: X, y: Y})
            last, ranges = s.run(loss, {x: X, y: Y}), s.run([lo, hi])
            frozen = tf.graph_util.convert_variables_to_constants(s, g.as_graph_def(), ["out"])
    return first, last, ranges, frozen


def test_training_moves_the_ranges_and_quantize_graph_takes_them():
    first, last, (lo, hi), frozen = train()
    assert last < 0.5 * first
    # Values clipped at the range's ends pull its ends outward.
    assert lo < -0.5 or hi > 0.5
    result = quantize_graph(frozen, "eightbit", fuse=False)
    assert set(result.fake_quant) == {"act_quant"}
    np.testing.assert_allclose(result.fake_quant["act_quant"], (lo, hi), rtol=1e-6)
    q = result.graph_def
    requantize = q.by_name("hidden_eightbit_requantize")
    bounds = [float(q.by_name(i).attr["value"]) for i in requantize.input[3:5]]
    np.testing.assert_allclose(bounds, (lo, hi), rtol=1e-6)
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(frozen, name="float")
        tf.import_graph_def(q, name="q")
        with tf.Session(graph=g) as s:
            want, got = s.run(["float/out:0", "q/out:0"], {"float/x:0": X, "q/x:0": X})
    assert np.sqrt(np.mean((got - want) ** 2)) < 0.05 * np.abs(want).max()
