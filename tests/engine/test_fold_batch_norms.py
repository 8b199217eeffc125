"""engine/passes/fold_batch_norms.py: Conv2D / DepthwiseConv2dNative / MatMul [+ BiasAdd] +
inference FusedBatchNorm or Mul by a constant folds into scaled weights and one BiasAdd named
as the folded node (TF's fold_old_batch_norms / fold_batch_norms); the folded graph computes
what the original did (random graphs, NHWC convolutions with several channels, depthwise
convolutions with channel multipliers); chains with a non-constant or
shared piece are left alone with the reason; quantize_graph(fold_batch_norms=True) uses it."""

from __future__ import annotations

import numpy as np
import pytest
from test_quantize_graph import run

import engine as tf
from engine import errors
from engine.passes.fold_batch_norms import fold_batch_norms
from engine.passes.quantize_graph import quantize_graph

TOL = {"rtol": 1e-4, "atol": 1e-4}


def c(rng, *shape, low=-1.0, high=1.0, name=None):
    return tf.constant(rng.uniform(low, high, shape).astype(np.float32), name=name)


def batch_norm(rng, x, channels, version="V3", **kw):
    args = (x, c(rng, channels, low=0.5, high=2.0), c(rng, channels),
            c(rng, channels), c(rng, channels, low=0.1, high=3.0))
    if version == "V3":
        return tf.nn.fused_batch_norm(*args, epsilon=1e-3, is_training=False, name="bn",
                                      **kw)[0]
    g = x.graph
    return g.create_op("FusedBatchNorm", list(args),
                       {"T": tf.float32, "epsilon": 1e-3, "data_format": "NHWC",
                        "is_training": False}, name="bn").outputs[0]


def conv_graph(seed, channels, bias, strides=1, padding="SAME", version="V3"):
    rng = np.random.default_rng(seed)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 7, 6, 3], name="x")
        y = tf.nn.conv2d(x, c(rng, 3, 3, 3, channels, name="w"), [1, strides, strides, 1],
                         padding, name="conv")
        if bias:
            y = tf.nn.bias_add(y, c(rng, channels), name="bias")
        tf.nn.relu(batch_norm(rng, y, channels, version), name="out")
    return g.as_graph_def()


def feeds(seed, shape=(2, 7, 6, 3)):
    return {"x:0": np.random.default_rng(100 + seed).normal(size=shape).astype(np.float32)}


@pytest.mark.parametrize("seed,channels,bias,strides,padding,version", [
    (0, 5, False, 1, "SAME", "V3"), (1, 8, True, 2, "VALID", "V3"),
    (2, 1, True, 1, "VALID", "V1"), (3, 16, False, 2, "SAME", "V1")])
def test_conv_batch_norm_folds_and_computes_the_same(seed, channels, bias, strides, padding,
                                                     version):
    gd = conv_graph(seed, channels, bias, strides, padding, version)
    result = fold_batch_norms(gd)
    ops = [n.op for n in result.graph_def.node]
    assert not any(op.startswith("FusedBatchNorm") for op in ops)
    assert ops.count("BiasAdd") == 1 and "bn" in result.graph_def
    assert result.graph_def.by_name("bn").op == "BiasAdd"
    assert result.folded == {"bn": "conv"}
    assert result.node_map["bn"] == "bn" and result.node_map["x"] == "x"
    # New values stand for no original node (a per-node comparison would flag them).
    assert "w" not in result.node_map and "conv" not in result.node_map
    assert result.graph_def.by_name("conv").input[1] == "w"   # TF keeps the name
    np.testing.assert_allclose(run(result.graph_def, "out:0", feeds(seed)),
                               run(gd, "out:0", feeds(seed)), **TOL)


def test_folded_weights_are_tfs_formula():
    """scale = gamma / sqrt(variance + epsilon); offset = beta - mean * scale (TF's
    GetScaleAndOffsetValues), bias folded through: (b - mean) * scale + beta."""
    gd = conv_graph(4, 3, bias=True)
    nodes = {n.name: n for n in gd.node}
    bn = nodes["bn"]
    gamma, beta, mean, var = (np.asarray(nodes[i.split(":")[0]].attr["value"])
                              for i in bn.input[1:5])
    b = np.asarray(nodes[nodes["bias"].input[1]].attr["value"])
    scale = gamma / np.sqrt(var + np.float32(1e-3))
    folded = fold_batch_norms(gd).graph_def
    w = np.asarray(folded.by_name("w").attr["value"])
    np.testing.assert_allclose(w, np.asarray(nodes["w"].attr["value"]) * scale, rtol=1e-6)
    offset = folded.by_name(folded.by_name("bn").input[1])
    np.testing.assert_allclose(offset.attr["value"], (b - mean) * scale + beta, rtol=1e-5,
                               atol=1e-6)


def mul_graph(seed, transpose_b=False, bias=True, factor_shape=(6,)):
    rng = np.random.default_rng(seed)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w = c(rng, *((6, 4) if transpose_b else (4, 6)), name="w")
        y = tf.matmul(x, w, transpose_b=transpose_b, name="mm")
        if bias:
            y = tf.nn.bias_add(y, c(rng, 6), name="bias")
        y = tf.multiply(c(rng, *factor_shape, name="factor"), y, name="mul")
        tf.identity(y, name="out")
    return g.as_graph_def()


@pytest.mark.parametrize("transpose_b,bias,factor_shape", [
    (False, True, (6,)), (True, True, (1, 6)), (False, False, ()), (True, False, (6,))])
def test_matmul_times_constant_folds(transpose_b, bias, factor_shape):
    gd = mul_graph(5, transpose_b, bias, factor_shape)
    result = fold_batch_norms(gd)
    assert "Mul" not in [n.op for n in result.graph_def.node]
    assert result.graph_def.by_name("mul").op == "BiasAdd"
    f = {"x:0": np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)}
    np.testing.assert_allclose(run(result.graph_def, "out:0", f), run(gd, "out:0", f), **TOL)


def depthwise_graph(seed, multiplier, bias, tail):
    """x [N, 7, 6, 3] -> DepthwiseConv2dNative (multiplier m: 3 * m output channels, channel
    c * m + j from input c) [+ BiasAdd] -> batch norm or Mul by a per-channel Const."""
    rng = np.random.default_rng(seed)
    channels = 3 * multiplier
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 7, 6, 3], name="x")
        y = tf.nn.depthwise_conv2d_native(x, c(rng, 3, 3, 3, multiplier, name="w"),
                                          [1, 1, 1, 1], "SAME", name="conv")
        if bias:
            y = tf.nn.bias_add(y, c(rng, channels), name="bias")
        if tail == "bn":
            y = batch_norm(rng, y, channels)
        else:
            y = tf.multiply(y, c(rng, channels, low=0.5, high=2.0), name="bn")
        tf.nn.relu(y, name="out")
    return g.as_graph_def()


@pytest.mark.parametrize("seed,multiplier,bias,tail", [
    (20, 1, False, "bn"), (21, 2, True, "bn"), (22, 3, False, "mul"), (23, 2, True, "mul")])
def test_depthwise_batch_norm_folds_per_output_channel(seed, multiplier, bias, tail):
    """TF's fold_old_batch_norms scales a depthwise filter [h, w, in, m] by the factor of
    output channel c * m + j; a multiplier above 1 pins that order (a transposed reshape
    would scale the wrong channels and the outputs would differ)."""
    gd = depthwise_graph(seed, multiplier, bias, tail)
    result = fold_batch_norms(gd)
    assert result.folded == {"bn": "conv"}
    assert result.graph_def.by_name("bn").op == "BiasAdd"
    assert result.graph_def.by_name("conv").op == "DepthwiseConv2dNative"
    assert not [n.op for n in result.graph_def.node if n.op.startswith("FusedBatchNorm")
                or n.op == "Mul"]
    np.testing.assert_allclose(run(result.graph_def, "out:0", feeds(seed)),
                               run(gd, "out:0", feeds(seed)), **TOL)


def test_a_factor_that_is_not_per_channel_is_skipped():
    gd = mul_graph(6, factor_shape=(5, 6))
    result = fold_batch_norms(gd)
    assert result.folded == {}
    assert "does not scale each of the 6 output channels" in result.skipped["mul"]


def test_non_constant_pieces_are_skipped_with_the_reason():
    rng = np.random.default_rng(7)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 5, 5, 2], name="x")
        gamma = tf.placeholder(tf.float32, [4], name="gamma")
        y = tf.nn.conv2d(x, c(rng, 1, 1, 2, 4, name="w"), [1, 1, 1, 1], "SAME", name="conv")
        tf.nn.fused_batch_norm(y, gamma, c(rng, 4), c(rng, 4), c(rng, 4, low=0.5),
                               is_training=False, name="bn")
        w2 = tf.placeholder(tf.float32, [1, 1, 2, 4], name="w2")
        y2 = tf.nn.conv2d(x, w2, [1, 1, 1, 1], "SAME", name="conv2")
        tf.nn.fused_batch_norm(y2, c(rng, 4), c(rng, 4), c(rng, 4), c(rng, 4, low=0.5),
                               is_training=False, name="bn2")
        y3 = tf.nn.conv2d(x, c(rng, 1, 1, 2, 4), [1, 1, 1, 1], "SAME", name="conv3")
        tf.nn.fused_batch_norm(y3, c(rng, 4), c(rng, 4), is_training=True, name="bn3")
    result = fold_batch_norms(g.as_graph_def())
    assert result.folded == {}
    assert result.skipped["bn"] == "its scale comes from Placeholder node 'gamma', not a Const"
    assert result.skipped["bn2"] == ("its 'conv2' weights comes from Placeholder node 'w2', "
                                     "not a Const")
    assert "training mode" in result.skipped["bn3"]
    assert [n.op for n in result.graph_def.node].count("FusedBatchNormV3") == 3


def test_shared_weights_get_a_new_const_and_a_read_conv_output_is_kept():
    rng = np.random.default_rng(8)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 5, 5, 2], name="x")
        w = c(rng, 3, 3, 2, 4, name="w")
        a = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="conv_a")
        b = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="conv_b")
        tf.add(batch_norm(rng, a, 4), b, name="out")
        side = tf.nn.conv2d(x, c(rng, 1, 1, 2, 4), [1, 1, 1, 1], "SAME", name="side")
        tf.identity(side, name="side_out")
        tf.nn.fused_batch_norm(side, c(rng, 4), c(rng, 4), c(rng, 4), c(rng, 4, low=0.5),
                               is_training=False, name="bn_side")
    gd = g.as_graph_def()
    result = fold_batch_norms(gd)
    folded = result.graph_def
    assert folded.by_name("conv_a").input[1] == "w_bn_folded"
    assert folded.by_name("conv_b").input[1] == "w"
    assert "w_bn_folded" not in result.node_map and result.node_map["w"] == "w"
    assert "other readers" in result.skipped["bn_side"]
    f = {"x:0": np.random.default_rng(2).normal(size=(2, 5, 5, 2)).astype(np.float32)}
    np.testing.assert_allclose(run(folded, "out:0", f), run(gd, "out:0", f), **TOL)


def test_the_input_graph_is_unchanged_and_bad_outputs_refused():
    gd = conv_graph(9, 4, bias=True)
    before = [(n.name, n.op, list(n.input)) for n in gd.node]
    fold_batch_norms(gd)
    assert [(n.name, n.op, list(n.input)) for n in gd.node] == before
    with pytest.raises(errors.NotFoundError, match="'nope'"):
        fold_batch_norms(gd, ["nope"])


def test_quantize_graph_folds_first_when_asked():
    gd = conv_graph(10, 6, bias=True)
    plain = quantize_graph(gd, "eightbit", fold_batch_norms=False)
    folded = quantize_graph(gd, "eightbit")
    assert "bn" in plain.kept_float and plain.graph_def.by_name("bn").op == \
        "FusedBatchNormV3"
    assert "bn" not in folded.kept_float
    assert not any(n.op.startswith("FusedBatchNorm") for n in folded.graph_def.node)
    assert "bn" in folded.node_map.values() and folded.folded == {"bn": "conv"}
    assert "conv" not in folded.node_map.values() and "w" not in folded.node_map.values()
    f = feeds(10)
    want = run(gd, "out:0", f)
    got = run(folded.graph_def, "out:0", f)
    assert np.abs(got - want).max() <= 0.05 * np.abs(want).max()


def test_the_per_node_comparison_of_a_folded_graph_holds_no_rescaled_value():
    from engine.compression.compare import compare

    gd = conv_graph(11, 6, bias=True)
    result = quantize_graph(gd, "eightbit")
    comparison = compare(gd, result, {"x": feeds(11)["x:0"]})
    compared = {r.original for r in comparison.nodes}
    assert "conv" not in compared and "w" not in compared
    assert "out" in compared
    out = next(r for r in comparison.nodes if r.original == "out")
    assert out.sqnr_db > 20
