"""engine.compression.compare on small graphs quantized by hand (QuantizeV2 -> QuantizedMatMul
-> Requantize / Dequantize around a float MatMul, with the node map such a pass gives):
metrics against NumPy, exact and all-zero nodes, the flagged node, and bad feeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.compression import compare as qc

W = np.array([[1.0, -2.0], [0.5, 1.0], [2.0, 0.0]], np.float32)
X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]], np.float32)


def original_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.constant(W, name="w")
        mm = tf.matmul(x, w, name="mm")
        relu = tf.nn.relu(mm, name="relu")
        tf.multiply(relu, 0.0, name="zero")
        tf.identity(relu, name="out")
    return g.as_graph_def()


def quantized_graph(x_range=(-3.0, 3.0), requantize=False):
    """MatMul as QuantizeV2 x2 -> QuantizedMatMul -> Dequantize (or, with requantize,
    -> Requantize to quint8 -> QuantizedRelu -> Dequantize, so the value standing for mm is
    the quantized Requantize output); the rest stays float."""
    g = tf.Graph()
    node_map = {}
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.constant(W, name="w")
        before = {op.name for op in g.get_operations()}
        qx = tf.quantization.quantize(x, *x_range, tf.quint8, mode="MIN_FIRST", name="mm/x_q")
        qw = tf.quantization.quantize(w, -2.0, 2.0, tf.quint8, mode="MIN_FIRST", name="mm/w_q")
        q = tf.raw_ops.QuantizedMatMul(a=qx[0], b=qw[0], min_a=qx[1], max_a=qx[2],
                                       min_b=qw[1], max_b=qw[2], Toutput=tf.qint32,
                                       name="mm/q")
        if requantize:
            r = tf.raw_ops.Requantize(input=q[0], input_min=q[1], input_max=q[2],
                                      requested_output_min=-10.0, requested_output_max=10.0,
                                      out_type=tf.quint8, name="mm/requantize")
            for op in g.get_operations():
                if op.name not in before:
                    node_map[op.name] = "mm"
            mark = {op.name for op in g.get_operations()}
            rq = tf.raw_ops.QuantizedRelu(features=r[0], min_features=r[1],
                                          max_features=r[2], out_type=tf.quint8,
                                          name="relu/q")
            relu = tf.quantization.dequantize(rq[0], rq[1], rq[2], mode="MIN_FIRST",
                                              name="relu/dequantize")
            for op in g.get_operations():
                if op.name not in mark:
                    node_map[op.name] = "relu"
        else:
            mm = tf.quantization.dequantize(q[0], q[1], q[2], mode="MIN_FIRST",
                                            name="mm/dequantize")
            for op in g.get_operations():
                if op.name not in before:
                    node_map[op.name] = "mm"
            relu = tf.nn.relu(mm, name="relu")
            node_map["relu"] = "relu"
        tf.multiply(relu, 0.0, name="zero")
        tf.identity(relu, name="out")
    node_map.update({"x": "x", "w": "w", "zero": "zero", "out": "out"})
    for op in g.get_operations():
        node_map.setdefault(op.name, op.name)   # the Mul's constant
    return g.as_graph_def(), node_map


def fetch(graph_def, names, feeds):
    return qc.run_graph(graph_def, names, qc.check_feeds(graph_def, feeds))


def numpy_metrics(ref, got):
    ref, got = np.ravel(ref).astype(np.float64), np.ravel(got).astype(np.float64)
    err = got - ref
    return {"mse": np.mean(err ** 2), "max_abs_error": np.max(np.abs(err)),
            "sqnr_db": 10 * np.log10(np.sum(ref ** 2) / np.sum(err ** 2)),
            "cosine": ref @ got / (np.linalg.norm(ref) * np.linalg.norm(got))}


def test_error_metrics_by_hand():
    got = qc.error_metrics(np.array([1.0, 2.0]), np.array([1.0, 3.0]))
    assert got["mse"] == pytest.approx(0.5)
    assert got["max_abs_error"] == pytest.approx(1.0)
    assert got["sqnr_db"] == pytest.approx(10 * math.log10(5.0))     # 6.99 dB
    assert got["cosine"] == pytest.approx(7 / math.sqrt(50))


def test_error_metrics_zero_and_exact_cases_have_no_nan():
    exact = qc.error_metrics(np.array([1.0, -2.0]), np.array([1.0, -2.0]))
    assert exact == {"mse": 0.0, "max_abs_error": 0.0, "sqnr_db": math.inf, "cosine": 1.0}
    zeros = qc.error_metrics(np.zeros(3), np.zeros(3))
    assert zeros == {"mse": 0.0, "max_abs_error": 0.0, "sqnr_db": math.inf, "cosine": 1.0}
    noisy_zero = qc.error_metrics(np.zeros(2), np.array([0.0, 0.5]))
    assert noisy_zero["sqnr_db"] == -math.inf and noisy_zero["cosine"] == 0.0
    assert noisy_zero["mse"] == pytest.approx(0.125)
    lost = qc.error_metrics(np.array([1.0, 2.0]), np.zeros(2))
    assert lost["sqnr_db"] == pytest.approx(0.0) and lost["cosine"] == 0.0
    empty = qc.error_metrics(np.zeros(0), np.zeros(0))
    assert empty["sqnr_db"] == math.inf and empty["cosine"] == 1.0


def test_compare_matches_numpy_on_the_dequantized_matmul():
    original = original_graph()
    quantized, node_map = quantized_graph()
    result = qc.compare(original, (quantized, node_map), {"x": X})
    mm = result.node("mm")
    assert mm.compared == "mm/dequantize" and mm.op == "MatMul"
    assert mm.quantized[-1] == "mm/dequantize" and "mm/q" in mm.quantized
    got = fetch(quantized, ["mm/dequantize:0"], {"x": X})["mm/dequantize:0"]
    want = numpy_metrics(X @ W, got)
    for key, value in want.items():
        assert getattr(mm, key) == pytest.approx(value, rel=1e-9)
    assert 0 < mm.mse < 0.01 and mm.shape == (2, 2)


def test_compare_dequantizes_a_quantized_output_with_its_range():
    original = original_graph()
    quantized, node_map = quantized_graph(requantize=True)
    result = qc.compare(original, (quantized, node_map), {"x:0": X})
    mm = result.node("mm")
    assert mm.compared == "mm/requantize"    # its output leaves mm's group for the relu
    values = fetch(quantized, ["mm/requantize:0", "mm/requantize:1", "mm/requantize:2"],
                   {"x": X})
    q = np.asarray(values["mm/requantize:0"]).astype(np.float64)
    lo, hi = float(values["mm/requantize:1"]), float(values["mm/requantize:2"])
    scale = (hi - lo) / 255
    engine_dequantized = _engine_dequantize(values).astype(np.float64)
    # QuantizedToFloat: min rounded to a whole step (float32 decides the tie at -127.5)
    by_hand = np.trunc(lo / np.float32(scale)) * scale + q * scale
    np.testing.assert_allclose(by_hand, engine_dequantized, atol=1e-5)
    assert mm.mse == pytest.approx(np.mean((engine_dequantized - X @ W) ** 2), rel=1e-6)
    assert result.node("relu").compared == "relu/dequantize"


def _engine_dequantize(values):
    g = tf.Graph()
    with g.as_default():
        q = tf.constant(np.asarray(values["mm/requantize:0"]), dtype=tf.quint8)
        out = tf.quantization.dequantize(q, float(values["mm/requantize:1"]),
                                         float(values["mm/requantize:2"]), mode="MIN_FIRST")
    with tf.Session(graph=g) as session:
        return session.run(out)


def test_exact_and_constant_zero_nodes():
    original = original_graph()
    result = qc.compare(original, quantized_graph(), {"x": X})
    x = result.node("x")
    assert x.sqnr_db == math.inf and x.mse == 0.0 and x.cosine == 1.0
    zero = result.node("zero")      # relu * 0: both all zeros
    assert zero.sqnr_db == math.inf and zero.cosine == 1.0 and zero.max_abs_error == 0.0
    assert result.node("w").sqnr_db == math.inf
    for record in result.nodes:
        assert not any(math.isnan(v) for v in (record.mse, record.max_abs_error,
                                                record.sqnr_db, record.cosine))


def test_histograms_share_edges_and_count_every_element():
    result = qc.compare(original_graph(), quantized_graph(), {"x": X})
    mm = result.node("mm")
    assert len(mm.edges) == qc.DEFAULT_BINS + 1
    assert sum(mm.original_counts) == sum(mm.quantized_counts) == 4
    assert sum(mm.error_counts) == 4
    low = min((X @ W).min(), min(mm.edges))
    assert mm.edges[0] == pytest.approx(low)
    zero = result.node("zero")
    assert zero.edges[0] == -0.5 and zero.edges[-1] == 0.5     # one value: a unit span


def test_flags_the_first_node_in_execution_order_below_the_threshold():
    original = original_graph()
    coarse = quantized_graph(x_range=(-300.0, 300.0))   # x quantized with steps of 2.35
    result = qc.compare(original, coarse, {"x": X})
    order = [r.original for r in result.nodes]
    assert order.index("x") < order.index("mm") < order.index("relu") < order.index("out")
    assert result.node("mm").sqnr_db < qc.DEFAULT_THRESHOLD_DB
    assert result.flagged == "mm" and result.node("mm").flagged
    assert result.node("relu").sqnr_db < qc.DEFAULT_THRESHOLD_DB     # later: not flagged
    assert [r.original for r in result.nodes if r.flagged] == ["mm"]
    fine = qc.compare(original, quantized_graph(), {"x": X})
    assert fine.flagged is None
    strict = qc.compare(original, quantized_graph(), {"x": X}, threshold_db=200.0)
    assert strict.flagged == "mm"     # the first below 200 dB; x and w are exact


def test_bad_feeds_name_the_placeholder():
    original, quantized = original_graph(), quantized_graph()
    # TF 2.21: "Cannot feed value of shape (2, 4) for Tensor x:0, which has shape (?, 3)"
    # and "You must feed a value for placeholder tensor 'x' with dtype float and shape [?,3]"
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2, 4\) for Tensor "
                       r"'x:0', which has shape '\(\?, 3\)'"):
        qc.compare(original, quantized, {"x": np.zeros((2, 4), np.float32)})
    with pytest.raises(errors.InvalidArgumentError, match=r"You must feed a value for "
                       r"placeholder tensor 'x' with dtype float and shape \[\?,3\]"):
        qc.compare(original, quantized, {})
    with pytest.raises(errors.InvalidArgumentError, match="'images' names no placeholder.*x"):
        qc.compare(original, quantized, {"images": X})
    with pytest.raises(TypeError, match="for Tensor 'x:0' of dtype float32"):
        qc.compare(original, quantized, {"x": np.array([["a", "b", "c"]])})
    with pytest.raises(errors.InvalidArgumentError, match="'mm' names no placeholder"):
        qc.compare(original, quantized, {"mm": X})


def test_compare_accepts_any_pair_that_unpacks_and_refuses_other_graphs():
    quantized, node_map = quantized_graph()
    result = qc.compare(original_graph(), [quantized, node_map], {"x": X})
    assert result.node("mm").compared == "mm/dequantize"
    with pytest.raises(TypeError, match="GraphDefs"):
        qc.compare("graph.json", (quantized, node_map), {"x": X})
    with pytest.raises(KeyError, match="'nope' was not compared"):
        result.node("nope")


def noisy_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        noise = tf.random_uniform([2, 3], name="noise")
        tf.add(x, noise, name="noisy")
    return g.as_graph_def()


def test_random_draws_are_shared_so_they_count_as_no_error():
    graph = noisy_graph()
    identity_map = {n.name: n.name for n in graph.node}
    result = qc.compare(graph, (graph, identity_map), {"x": X})
    assert result.node("noisy").sqnr_db == math.inf
    assert result.node("noise").sqnr_db == math.inf
    assert result.flagged is None


def test_the_digits_mlp_quantized_by_the_pass():
    """quantize_graph's eightbit MLP: each weight is read from its 8-bit constant with the
    range its reader takes; the chain stays 8-bit, calibrated on 100 samples no node falls
    below the default threshold, and the nodes fused into another are said not compared."""
    import sys
    from pathlib import Path

    from engine.compression import quantize
    from engine.graph_io import load_graph_def
    samples = Path(__file__).resolve().parents[2] / "sample_graphs"
    sys.path.insert(0, str(samples))
    try:
        import digits
    finally:
        sys.path.remove(str(samples))
    data = digits.read_data_sets(0)
    graph_def = load_graph_def(samples / "digits_mlp_frozen.json")
    result = quantize(graph_def, "eightbit",
                      calibration_samples={"images": data.train.images[:100]})
    comparison = qc.compare(graph_def, result, {"images": data.test.images[:32]})
    kernel = comparison.node("dense/kernel")
    q = result.graph_def
    const = q.by_name(kernel.compared)      # quint8, or qint8 where the fused ops take it
    assert const.op == "Const" and const.output_dtypes[0].is_quantized
    dtype = const.output_dtypes[0].name
    want = qc.dequantized(const.attr["value"].astype(np.int64),
                          float(q.by_name("dense/kernel_min").attr["value"]),
                          float(q.by_name("dense/kernel_max").attr["value"]), dtype,
                          "SCALED" if dtype == "qint8" else "MIN_FIRST")
    original_kernel = graph_def.by_name("dense/kernel").attr["value"]
    assert kernel.mse == pytest.approx(np.mean((want - original_kernel) ** 2), rel=1e-6)
    relu = comparison.node("dense/Relu")
    assert q.by_name(relu.compared).output_dtypes[0].is_quantized    # the chain stays 8-bit
    assert comparison.flagged is None
    assert set(comparison.skipped) <= {"dense/kernel/read", "dense/bias/read",
                                       "dense_1/kernel/read", "dense_1/bias/read",
                                       "logits/kernel/read", "logits/bias/read",
                                       "dense/MatMul", "dense/BiasAdd", "dense_1/MatMul",
                                       "dense_1/BiasAdd", "logits/MatMul"}
    assert comparison.node("probabilities").sqnr_db > qc.DEFAULT_THRESHOLD_DB


def test_symmetric_qint8_is_read_in_scaled_mode():
    """A fused op's qint8 output (TF's SCALED: zero at 0, scale max|range| / 127)."""
    values = qc.dequantized(np.array([-127, 0, 64, 127]), -2.0, 2.0, "qint8", "SCALED")
    np.testing.assert_allclose(values, [-2.0, 0.0, 64 * 2.0 / 127, 2.0], rtol=1e-6)
    fused = qc.NodeDef("f", "QuantizedMatMulWithBiasAndRequantize")
    assert qc._mode(fused) == "SCALED"
    assert qc._mode(qc.NodeDef("r", "Requantize")) == "MIN_FIRST"
