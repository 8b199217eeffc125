"""The eightbit pass's fused Conv2D pattern (engine/passes/quantize_patterns.fused_conv):
calibrated Conv2D + BiasAdd [+ Relu] on constant weights becomes one
QuantizedConv2DWithBias[AndRelu]AndRequantize, the node map names the last float node, the
digits CNN keeps its accuracy, and convolutions the fused op cannot read stay on the one-op
rules."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from test_quantize_graph import run

import engine as tf
from engine.compression import calibrate
from engine.compression.compare import compare
from engine.graph_def import GraphDef
from engine.passes.quantize_graph import quantize_graph
from engine.passes.quantize_patterns import FUSED_CONV, FUSED_CONV_RELU, fused_conv_registered

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
RNG = np.random.RandomState(7)
pytestmark = pytest.mark.skipif(not fused_conv_registered(),
                                reason="the fused Conv2D ops are not registered")


@pytest.fixture(scope="module")
def data():
    spec = importlib.util.spec_from_file_location("digits_data", SAMPLES / "digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.read_data_sets(0)


@pytest.fixture(scope="module")
def cnn():
    return tf.load_graph_def(SAMPLES / "digits_cnn_frozen.json")


def ops(graph_def: GraphDef) -> list[str]:
    return [n.op for n in graph_def.node]


def conv_graph(relu: bool, padding: str = "SAME", strides=(1, 1, 1, 1)) -> GraphDef:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 6, 6, 3], name="x")
        w = tf.constant((RNG.randn(3, 3, 3, 4) * 0.3).astype(np.float32))
        b = tf.constant((RNG.randn(4) * 0.1).astype(np.float32))
        y = tf.nn.bias_add(tf.nn.conv2d(x, w, list(strides), padding, name="conv"), b,
                           name="ba")
        (tf.nn.relu if relu else tf.identity)(y, name="out")
    return g.as_graph_def()


def test_calibrated_cnn_fuses_each_conv_layer_and_keeps_its_accuracy(cnn, data):
    ranges = calibrate(cnn, {"images": data.train.images[:1000]})
    result = quantize_graph(cnn, "eightbit", calibration=ranges)
    gd, node_map = result.graph_def, result.node_map
    by_name = {n.name: n for n in gd.node}
    for layer in ("conv2d", "conv2d_1"):
        fused = by_name[f"{layer}/Conv2D_eightbit_fused_conv"]
        assert fused.op == FUSED_CONV_RELU and fused.attr["out_type"] is tf.quint8
        assert fused.attr["Tfilter"] is tf.qint8 and fused.attr["padding"] == "SAME"
        assert node_map[fused.name] == f"{layer}/Relu"
        assert not {f"{layer}/Conv2D", f"{layer}/BiasAdd"} & set(by_name)
        q = np.asarray(by_name[f"{layer}/kernel_qint8_const"].attr["value"])
        assert q.dtype == np.int8 and q.ndim == 4 and np.abs(q.astype(int)).max() == 64
    assert not set(ops(gd)) & {"QuantizedConv2D", "QuantizedBiasAdd", "QuantizedRelu",
                               "Requantize", "RequantizationRange", "Conv2D"}
    assert not set(result.kept_float) & {"conv2d/Conv2D", "conv2d/Relu", "conv2d_1/Relu"}
    test = data.test
    base = run(cnn, "probabilities:0", {"images:0": test.images}).argmax(1)
    pred = run(gd, "probabilities:0", {"images:0": test.images}).argmax(1)
    assert np.mean(pred == test.labels) >= np.mean(base == test.labels) - 0.01


def test_the_per_node_comparison_reads_the_fused_conv_output(cnn, data):
    images = data.train.images[:64]
    result = quantize_graph(cnn, "eightbit", calibration=calibrate(cnn, {"images": images}))
    # The fused op's own quint8 output, dequantized with its frozen range, stands for Relu.
    node = compare(cnn, result, {"images": images}).node("conv2d/Relu")
    assert node.compared == "conv2d/Conv2D_eightbit_fused_conv" and node.sqnr_db > 25


@pytest.mark.parametrize("relu", [True, False], ids=["relu", "no-relu"])
@pytest.mark.parametrize("padding, strides", [("SAME", (1, 1, 1, 1)),
                                              ("VALID", (1, 2, 2, 1))])
def test_a_fused_conv_layer_tracks_the_float_layer(relu, padding, strides):
    gd = conv_graph(relu, padding, strides)
    x = RNG.uniform(0, 1, [8, 6, 6, 3]).astype(np.float32)
    result = quantize_graph(gd, "eightbit", calibration=calibrate(gd, {"x": x}),
                            output_names=["out"])
    fused = [n for n in result.graph_def.node if n.op in (FUSED_CONV, FUSED_CONV_RELU)]
    assert [n.op for n in fused] == [FUSED_CONV_RELU if relu else FUSED_CONV]
    assert fused[0].attr["out_type"] is (tf.quint8 if relu else tf.qint8)
    want = run(gd, "out:0", {"x:0": x})
    got = run(result.graph_def, "out:0", {"x:0": x})
    span = float(np.max(np.abs(want)))
    assert np.max(np.abs(got - want)) <= 6 * span / 127


def test_an_input_below_zero_or_no_calibration_keeps_the_one_op_rules():
    # The fused op reads its quint8 input with zero point 0: negative inputs cannot ride it.
    gd = conv_graph(True)
    x = RNG.uniform(-1, 1, [8, 6, 6, 3]).astype(np.float32)
    for result in (quantize_graph(gd, "eightbit", calibration=calibrate(gd, {"x": x}),
                                  output_names=["out"]),
                   quantize_graph(gd, "eightbit", output_names=["out"]),
                   quantize_graph(gd, "eightbit", calibration=calibrate(gd, {"x": x}),
                                  output_names=["out"], fuse=False)):
        kinds = set(ops(result.graph_def))
        assert "QuantizedConv2D" in kinds and not kinds & {FUSED_CONV, FUSED_CONV_RELU}
        got = run(result.graph_def, "out:0", {"x:0": x})
        want = run(gd, "out:0", {"x:0": x})
        assert np.max(np.abs(got - want)) <= 8 * float(np.max(np.abs(want))) / 127
