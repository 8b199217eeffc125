"""engine/passes/quantize_graph.py: TF's node names and structure, the node_map contract,
redundant Dequantize -> QuantizeV2 pairs removed, calibrated ranges as Consts, weights mode,
ops kept in float with their reason, and numbers within quantization error of the float graph
(per op, and accuracy on the digits MLP and CNN)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.compression import calibrate, quantize
from engine.graph_def import GraphDef
from engine.passes.quantize_graph import (
    WEIGHTS_MIN_ELEMENTS,
    QuantizeResult,
    adjusted_range,
    calibration_tensors,
    quantize_graph,
    quantize_quint8,
)
from engine.passes.quantize_patterns import FUSED_RELU, fused_ops_registered

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
RNG = np.random.RandomState(0)


def digits():
    spec = importlib.util.spec_from_file_location("digits_data", SAMPLES / "digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.read_data_sets(0)


def run(graph_def: GraphDef, fetch: str, feeds: dict):
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=g) as s:
            return s.run(fetch, feeds)


def build(fn, shape):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, shape, name="x")
        fn(x)
    return g.as_graph_def()


def ops(graph_def: GraphDef) -> list[str]:
    return [n.op for n in graph_def.node]


def const(shape, scale=1.0, name=None):
    return tf.constant((RNG.randn(*shape) * scale).astype(np.float32), name=name)


# -- structure ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mlp():
    return tf.load_graph_def(SAMPLES / "digits_mlp_frozen.json")


@pytest.fixture(scope="module")
def cnn():
    return tf.load_graph_def(SAMPLES / "digits_cnn_frozen.json")


@pytest.fixture(scope="module")
def data():
    return digits()


def test_eightbit_mlp_uses_tensorflows_node_names(mlp):
    gd, node_map = quantize_graph(mlp, "eightbit")
    names = {n.name: n.op for n in gd.node}
    assert names["dense/MatMul_eightbit_quantized_mat_mul"] == "QuantizedMatMul"
    assert names["dense/MatMul_eightbit_requant_range"] == "RequantizationRange"
    assert names["dense/MatMul_eightbit_requantize"] == "Requantize"
    assert names["dense/BiasAdd_eightbit_quantized_bias_add"] == "QuantizedBiasAdd"
    assert names["dense/Relu_eightbit_quantized"] == "QuantizedRelu"
    assert names["flatten/Reshape_eightbit_quantized"] == "QuantizedReshape"
    assert names["flatten/Reshape_eightbit_quantize_images"] == "QuantizeV2"
    assert names["flatten/Reshape_eightbit_min_images"] == "Min"
    assert names["flatten/Reshape_eightbit_max_images"] == "Max"
    assert names["flatten/Reshape_eightbit_reshape_images"] == "Reshape"
    assert names["dense/kernel_quint8_const"] == "Const"
    # The float interface: the last quantized op's Dequantize keeps the original name.
    assert names["logits/BiasAdd"] == "Dequantize"
    assert names["probabilities"] == "Softmax"


def test_a_chain_stays_eight_bit_and_dequantizes_once(mlp):
    gd, _ = quantize_graph(mlp, "eightbit")
    assert ops(gd).count("QuantizeV2") == 1          # the float input only
    assert ops(gd).count("Dequantize") == 1          # before the float Softmax
    assert not [n for n in gd.node if n.op in ("MatMul", "BiasAdd", "Relu", "Identity")]
    by_name = {n.name: n for n in gd.node}
    for n in gd.node:
        if n.op == "QuantizeV2":
            assert by_name[n.input[0].split(":")[0]].op != "Dequantize"


def test_node_map_contract(mlp):
    result = quantize_graph(mlp, "eightbit")
    gd, node_map = result
    assert isinstance(result, QuantizeResult) and result.graph_def is gd
    assert set(node_map) == {n.name for n in gd.node}
    originals = {n.name for n in mlp.node}
    assert set(node_map.values()) <= originals
    assert node_map["probabilities"] == "probabilities"
    assert node_map["images"] == "images"
    for name in ("dense/MatMul_eightbit_quantized_mat_mul", "dense/MatMul_eightbit_requantize",
                 "dense/MatMul_eightbit_requant_range"):
        assert node_map[name] == "dense/MatMul"
    assert node_map["logits/BiasAdd"] == "logits/BiasAdd"
    assert node_map["flatten/Reshape_eightbit_quantize_images"] == "flatten/Reshape"
    assert node_map["dense/kernel_quint8_const"] == "dense/kernel"


def test_the_input_graph_is_not_changed(mlp):
    before = [(n.name, n.op, list(n.input), n.output_dtypes, sorted(n.attr)) for n in mlp.node]
    values = [np.array(n.attr["value"]) for n in mlp.node if n.op == "Const"]
    quantize_graph(mlp, "eightbit")
    quantize_graph(mlp, "weights")
    assert before == [(n.name, n.op, list(n.input), n.output_dtypes, sorted(n.attr))
                      for n in mlp.node]
    after = [n.attr["value"] for n in mlp.node if n.op == "Const"]
    assert all(np.array_equal(a, b) for a, b in zip(values, after))


def test_inserted_nodes_carry_no_stack_of_their_own(mlp):
    gd, node_map = quantize_graph(mlp, "eightbit")
    original = {n.name: n for n in mlp.node}
    for n in gd.node:
        if n.name in original:
            assert n.meta.get("stack") == original[n.name].meta.get("stack")
        else:
            assert not n.meta.get("stack")


def test_ops_without_a_quantized_form_stay_float_with_a_reason(cnn):
    result = quantize_graph(cnn, "eightbit")
    assert result.kept_float["probabilities"].startswith("Softmax has no quantized form")
    assert "SelectV2" in result.kept_float["dropout/SelectV2"]
    assert {n.op for n in result.graph_def.node} >= {"QuantizedConv2D", "QuantizedMaxPool"}


def test_a_float64_matmul_is_kept_with_its_reason():
    def f(x):
        w = tf.constant(np.ones((3, 4)), dtype=tf.float64)
        tf.matmul(tf.cast(x, tf.float64), w, name="mm")
    result = quantize_graph(build(f, [None, 3]), "eightbit")
    assert result.kept_float["mm"] == "MatMul on float64: only float32 ops are quantized"
    assert "QuantizedMatMul" not in ops(result.graph_def)


def test_the_quantized_op_keeps_the_control_inputs_of_the_node_it_replaces():
    def f(x):
        first = tf.identity(x, name="first")
        with tf.control_dependencies([first.op]):
            tf.nn.relu(x, name="out")
    gd, _ = quantize_graph(build(f, [None, 3]), "eightbit", output_names=["out", "first"])
    assert "^first" in gd.by_name("out_eightbit_quantized").input


def test_bad_mode_and_unknown_output_are_refused(mlp):
    with pytest.raises(errors.InvalidArgumentError, match="mode 'round' is not one of"):
        quantize_graph(mlp, "round")
    with pytest.raises(errors.NotFoundError, match=r"\['nope'\]"):
        quantize_graph(mlp, "eightbit", output_names=["nope"])


# -- calibration ------------------------------------------------------------------------------

def test_calibrated_ranges_are_consts_and_run_time_range_nodes_disappear(mlp, data):
    ranges = calibrate(mlp, {"images": data.train.images[:50]})
    assert set(ranges) == set(calibration_tensors(mlp))
    result = quantize_graph(mlp, "eightbit", calibration=ranges, fuse=False)
    kinds = set(ops(result.graph_def))
    assert not kinds & {"RequantizationRange", "Min", "Max"}
    gd = result.graph_def
    lo = gd.by_name("dense/MatMul_eightbit_requant_range_min").attr["value"]
    assert float(lo) == pytest.approx(min(0.0, ranges["dense/MatMul:0"][0]))
    assert float(gd.by_name("flatten/Reshape_eightbit_max_images").attr["value"]) == \
        pytest.approx(ranges["images:0"][1])
    assert "dense/MatMul:0" in result.ranges and "images:0" in result.ranges
    uncalibrated = set(ops(quantize_graph(mlp, "eightbit").graph_def))
    assert {"RequantizationRange", "Min", "Max"} <= uncalibrated


def test_calibration_tensors_look_through_identities(mlp):
    wanted = calibration_tensors(mlp)
    assert "images:0" in wanted and "dense/Relu:0" in wanted and "dense/MatMul:0" in wanted
    assert not [t for t in wanted if "/read" in t or "kernel" in t]


def test_calibration_refuses_bad_samples_naming_the_placeholder(mlp):
    images = np.zeros((4, 8, 8, 1), np.float32)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"placeholder 'images' expects samples of shape \[\?,8,8,1\], got "
                             r"\[4, 64\]"):
        calibrate(mlp, {"images": images.reshape(4, 64)})
    with pytest.raises(errors.InvalidArgumentError,
                       match="placeholder 'images' expects float32 samples, got float64"):
        calibrate(mlp, {"images": images.astype(np.float64)})
    with pytest.raises(errors.InvalidArgumentError,
                       match="no placeholder named 'pixels' in the graph .*images"):
        calibrate(mlp, {"pixels": images})


# -- weights mode -----------------------------------------------------------------------------

def test_weights_mode_stores_big_constants_as_quint8_and_changes_nothing_else(mlp, data):
    gd, node_map = quantize_graph(mlp, "weights")
    by_name = {n.name: n for n in gd.node}
    for n in mlp.node:
        if n.op == "Const" and n.attr["dtype"] is tf.float32 and \
                np.asarray(n.attr["value"]).size >= WEIGHTS_MIN_ELEMENTS:
            q = by_name[f"{n.name}_quint8_const"]
            assert q.attr["dtype"] is tf.quint8 and q.attr["value"].dtype == np.uint8
            assert by_name[n.name].op == "Dequantize"
            assert by_name[n.name].attr["mode"] == "MIN_COMBINED"
            assert node_map[f"{n.name}_max"] == n.name
        elif n.op != "Const":
            assert (by_name[n.name].op, by_name[n.name].input) == (n.op, n.input)
    small = [n for n in mlp.node if n.op == "Const" and
             np.asarray(n.attr["value"]).size < WEIGHTS_MIN_ELEMENTS]
    assert small and all(by_name[n.name].op == "Const" for n in small)
    feeds = {"images:0": data.test.images[:100]}
    want = run(mlp, "logits/BiasAdd:0", feeds)
    got = run(gd, "logits/BiasAdd:0", feeds)
    assert np.max(np.abs(got - want)) < 0.05 * np.max(np.abs(want))


@pytest.mark.parametrize("mode", ["MIN_FIRST", "MIN_COMBINED"])
def test_numpy_quantize_matches_the_quantize_v2_kernel(mode):
    values = (RNG.randn(200) * 3).astype(np.float32)
    lo, hi = adjusted_range(float(values.min()), float(values.max()))
    with tf.Graph().as_default(), tf.Session() as s:
        got = s.run(tf.quantization.quantize(values, lo, hi, tf.quint8, mode=mode)[0])
    np.testing.assert_array_equal(quantize_quint8(values, lo, hi, mode), got)


# -- numbers ----------------------------------------------------------------------------------

def conv(x, k=3, c_out=4, stride=1, padding="SAME"):
    w = const((k, k, int(x.shape[-1]), c_out), 0.5)
    return tf.nn.conv2d(x, w, [1, stride, stride, 1], padding)


PER_OP = {
    "MatMul": (lambda x: tf.matmul(x, const((6, 5)), name="out"), [None, 6]),
    "MatMul_transposed": (lambda x: tf.matmul(x, const((5, 6)), transpose_b=True, name="out"),
                          [None, 6]),
    "BiasAdd": (lambda x: tf.nn.bias_add(tf.matmul(x, const((6, 5))), const((5,)),
                                         name="out"), [None, 6]),
    "Relu": (lambda x: tf.nn.relu(tf.matmul(x, const((6, 5))), name="out"), [None, 6]),
    "Relu6": (lambda x: tf.nn.relu6(tf.matmul(x, const((6, 5)), ) * 3.0, name="out"),
              [None, 6]),
    "Conv2D": (lambda x: tf.identity(conv(x), name="out"), [None, 6, 6, 2]),
    "Conv2D_valid_stride2": (lambda x: tf.identity(conv(x, stride=2, padding="VALID"),
                                                   name="out"), [None, 7, 7, 2]),
    "MaxPool": (lambda x: tf.nn.max_pool(conv(x), [1, 2, 2, 1], [1, 2, 2, 1], "VALID",
                                         name="out"), [None, 6, 6, 2]),
    "AvgPool": (lambda x: tf.nn.avg_pool(conv(x), [1, 2, 2, 1], [1, 2, 2, 1], "SAME",
                                         name="out"), [None, 6, 6, 2]),
    "ConcatV2": (lambda x: tf.concat([tf.nn.relu(x), tf.matmul(x, const((6, 3)))], 1,
                                     name="out"), [None, 6]),
    "Reshape": (lambda x: tf.reshape(tf.matmul(x, const((6, 4))), [-1, 2, 2], name="out"),
                [None, 6]),
}
EXPECTED_OP = {"MatMul_transposed": "QuantizedMatMul", "Conv2D_valid_stride2": "QuantizedConv2D"}


@pytest.mark.parametrize("calibrated", [False, True], ids=["run-time", "calibrated"])
@pytest.mark.parametrize("case", sorted(PER_OP))
def test_each_op_tracks_the_float_graph_within_quantization_error(case, calibrated):
    fn, shape = PER_OP[case]
    gd = build(fn, shape)
    x = RNG.uniform(-1, 1, [8] + shape[1:]).astype(np.float32)
    ranges = calibrate(gd, {"x": x}) if calibrated else None
    result = quantize_graph(gd, "eightbit", calibration=ranges, output_names=["out"],
                            fuse=False)
    op = EXPECTED_OP.get(case, "Quantized" + case.split("_")[0].replace("V2", ""))
    assert op in ops(result.graph_def), result.graph_def.to_text()
    want = run(gd, "out:0", {"x:0": x})
    got = run(result.graph_def, "out:0", {"x:0": x})
    assert got.shape == want.shape and got.dtype == np.float32
    span = float(want.max() - min(0.0, want.min()))
    # Each 8-bit step rounds by half a quantum of its range; a few steps compound.
    assert np.max(np.abs(got - want)) <= 6 * span / 255 + 1e-6


def test_digits_mlp_and_cnn_calibrated_lose_at_most_one_point(mlp, cnn, data):
    test = data.test
    for graph_def in (mlp, cnn):
        base = run(graph_def, "probabilities:0", {"images:0": test.images}).argmax(1)
        float_acc = np.mean(base == test.labels)
        for samples in (10, 1000):
            result = quantize(graph_def, "eightbit",
                              calibration_samples={"images": data.train.images[:samples]})
            pred = run(result.graph_def, "probabilities:0", {"images:0": test.images}).argmax(1)
            assert np.mean(pred == test.labels) >= float_acc - 0.01
            assert np.mean(pred == base) >= 0.98


def test_digits_mlp_with_run_time_ranges_agrees_with_float(mlp, data):
    test = data.test
    base = run(mlp, "probabilities:0", {"images:0": test.images}).argmax(1)
    pred = run(quantize_graph(mlp).graph_def, "probabilities:0",
               {"images:0": test.images}).argmax(1)
    assert np.mean(pred == base) >= 0.98


# TensorFlow 2.21 (tf.raw_ops in graph mode) running the eightbit MLP this pass writes (fuse off,
# calibrated on train[:1000]) on the 360 test images: logits/BiasAdd of the first two; over all
# of them TF's and the engine's probabilities agree to 3e-7 (run-time ranges and calibrated).
TF_LOGITS = {
    "run-time": [[-9.39425, -3.3723, -10.11689, -2.89054, -2.1679, 3.3723, -13.00743, 15.17533,
                  -4.33581, -4.09493],
                 [0.24088, -12.76655, -7.22635, 2.89054, -8.9125, 5.29932, -10.11689, -4.81757,
                  0.0, 15.41621]],
    "calibrated": [[-9.21333, -3.22466, -9.44366, -2.764, -1.61233, 3.22467, -12.438, 15.202,
                    -4.37633, -3.91566],
                   [0.691, -12.20766, -6.91, 2.99433, -8.75266, 5.06733, -9.674, -4.37633,
                    0.23034, 14.74133]],
}


@pytest.mark.parametrize("ranges", sorted(TF_LOGITS))
def test_the_eightbit_mlp_gives_tensorflows_numbers(mlp, data, ranges):
    calibration = calibrate(mlp, {"images": data.train.images[:1000]}) \
        if ranges == "calibrated" else None
    gd = quantize_graph(mlp, "eightbit", calibration=calibration, fuse=False).graph_def
    # Run-time ranges are the batch's: feed the whole test split, as TF was fed.
    got = run(gd, "logits/BiasAdd:0", {"images:0": data.test.images})[:2]
    np.testing.assert_allclose(got, TF_LOGITS[ranges], atol=1e-5)


# -- the fused pattern (i9-qfast's QuantizedMatMulWithBias*AndRequantize kernels) ---------------

needs_fused = pytest.mark.skipif(not fused_ops_registered(), reason="the fused MatMul ops are not "
                                                         "registered in this checkout")


def dense_graph(relu: bool) -> GraphDef:
    def f(x):
        y = tf.nn.bias_add(tf.matmul(x, const((6, 5)), name="mm"), const((5,)), name="ba")
        if relu:
            tf.nn.relu(y, name="out")
        else:
            tf.identity(y, name="out")
    return build(f, [None, 6])


def test_without_calibration_or_with_fuse_off_the_one_op_rules_apply(mlp, data):
    ranges = calibrate(mlp, {"images": data.train.images[:20]})
    for result in (quantize_graph(mlp, "eightbit"),
                   quantize_graph(mlp, "eightbit", calibration=ranges, fuse=False)):
        kinds = set(ops(result.graph_def))
        assert {"QuantizedMatMul", "QuantizedBiasAdd", "QuantizedRelu"} <= kinds
        assert not [k for k in kinds if k.startswith("QuantizedMatMulWith")]


@needs_fused
def test_calibrated_mlp_fuses_each_dense_layer(mlp, data):
    ranges = calibrate(mlp, {"images": data.train.images[:200]})
    gd, node_map = quantize_graph(mlp, "eightbit", calibration=ranges)
    by_name = {n.name: n for n in gd.node}
    fused = by_name["dense/MatMul_eightbit_fused_mat_mul"]
    assert fused.op == FUSED_RELU and fused.attr["Toutput"] is tf.quint8
    assert by_name["dense/kernel_qint8_const"].attr["value"].dtype == np.int8
    assert node_map["dense/MatMul_eightbit_fused_mat_mul"] == "dense/Relu"
    # The chain stays 8-bit: the fused ops feed each other, with no float node between.
    assert not {"dense/MatMul", "dense/BiasAdd", "dense/Relu"} & set(by_name)
    last = by_name["logits/MatMul_eightbit_fused_mat_mul"]
    assert last.op == "QuantizedMatMulWithBiasAndRequantize"
    assert last.attr["Toutput"] is tf.qint8
    assert by_name["logits/BiasAdd"].attr["mode"] == "SCALED"
    assert not set(ops(gd)) & {"QuantizedMatMul", "QuantizedBiasAdd", "QuantizedRelu",
                               "RequantizationRange", "Min", "Max", "MatMul"}
    test = data.test
    base = run(mlp, "probabilities:0", {"images:0": test.images}).argmax(1)
    pred = run(gd, "probabilities:0", {"images:0": test.images}).argmax(1)
    assert np.mean(pred == test.labels) >= np.mean(base == test.labels) - 0.01


@needs_fused
def test_fused_weights_use_seven_bits_with_a_range_that_keeps_each_levels_meaning(mlp, data):
    """fbgemm on CPUs without VNNI saturates int16 pair sums of 8-bit weights (the kernel then
    spreads the pairs and loses its speed): the pass stores levels in [-64, 64]."""
    ranges = calibrate(mlp, {"images": data.train.images[:20]})
    gd, _ = quantize_graph(mlp, "eightbit", calibration=ranges)
    by_name = {n.name: n for n in gd.node}
    kernel = np.asarray(next(n for n in mlp.node if n.name == "dense/kernel").attr["value"])
    q = np.asarray(by_name["dense/kernel_qint8_const"].attr["value"]).astype(np.int32)
    top = float(by_name["dense/kernel_max"].attr["value"])
    assert np.abs(q).max() == 64
    assert top == pytest.approx(np.abs(kernel).max() * 127 / 64, rel=1e-6)
    # A level means top / 127 of the float weight, as TF's SCALED qint8 reads it.
    np.testing.assert_allclose(q * top / 127, kernel, atol=np.abs(kernel).max() / 128 + 1e-7)


@needs_fused
@pytest.mark.parametrize("relu", [True, False], ids=["relu", "no-relu"])
def test_a_fused_dense_layer_tracks_the_float_layer(relu):
    gd = dense_graph(relu)
    x = RNG.uniform(-1, 1, [16, 6]).astype(np.float32)
    result = quantize_graph(gd, "eightbit", calibration=calibrate(gd, {"x": x}),
                            output_names=["out"])
    assert (FUSED_RELU if relu else "QuantizedMatMulWithBiasAndRequantize") in \
        ops(result.graph_def)
    want = run(gd, "out:0", {"x:0": x})
    got = run(result.graph_def, "out:0", {"x:0": x})
    span = float(np.max(np.abs(want)))
    assert np.max(np.abs(got - want)) <= 6 * span / 127
