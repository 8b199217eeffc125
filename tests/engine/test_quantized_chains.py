"""Chains of quantized ops run as one fused step (engine/runtime/chains.py finds them,
engine/kernels/quantized_chain.py runs them): bit for bit what the ops give one by one, on the
digits MLP and random MLPs (MIN_FIRST and SCALED inputs, with and without Relu, qint8 and
quint8 outputs, calibrated and run-time ranges), on the CPU and a virtual GPU; a fetch, a
feed, a second consumer or a control edge cuts the chain there; many threads at once."""

from __future__ import annotations

import importlib.util
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import engine as tf
import engine.runtime.executor as executor
from engine.compression import calibrate
from engine.passes.quantize_graph import one_pass_scaled_max, quantize_graph

RO = tf.raw_ops
SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
MATMUL = "QuantizedMatMulWithBiasAndRequantize"
MATMUL_RELU = "QuantizedMatMulWithBiasAndReluAndRequantize"


# -- building and running -----------------------------------------------------------------

def mlp(rng, sizes, input_mode="SCALED", relu=True, tout="qint8", ranges="calibrated",
        x_shape=()):
    """x -> QuantizeV2 -> one fused matmul per layer (Relu on the hidden ones where `relu`)
    -> Dequantize, in the default graph. Returns (x, output, {name: intermediate tensor})."""
    x = tf.placeholder(tf.float32, [None, sizes[0]] if x_shape == () else x_shape, name="x")
    if isinstance(ranges, tuple):
        lo, hi = ranges
    elif ranges == "calibrated":
        lo, hi = (0.0, one_pass_scaled_max(1.0)) if input_mode == "SCALED" else (-0.4, 1.0)
    else:
        lo, hi = tf.reduce_min(x), tf.reduce_max(x)
    if input_mode == "SCALED":
        q = RO.QuantizeV2(input=x, min_range=lo, max_range=hi, T=tf.quint8, mode="SCALED",
                          round_mode="HALF_TO_EVEN", name="quantize")
    else:
        q = RO.QuantizeV2(input=x, min_range=lo, max_range=hi, T=tf.quint8, mode="MIN_FIRST",
                          name="quantize")
    h, h_lo, h_hi = q.output, q.output_min, q.output_max
    inner = {"quantize": q.output}
    for i, (k, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        last = i == len(sizes) - 2
        w = rng.integers(-64, 65, size=(k, n)).astype(np.int8)
        bias = rng.normal(0, 0.3, size=n).astype(np.float32)
        top = float(np.sqrt(k)) * rng.uniform(0.3, 0.6)
        op = RO.QuantizedMatMulWithBiasAndReluAndRequantize if relu and not last \
            else RO.QuantizedMatMulWithBiasAndRequantize
        out_t = (tf.qint8 if tout == "qint8" else tf.quint8) if last else tf.quint8
        h, h_lo, h_hi = op(a=h, b=tf.constant(w, dtype=tf.qint8), bias=tf.constant(bias),
                           min_a=h_lo, max_a=h_hi, min_b=-0.5, max_b=0.5,
                           min_freezed_output=-top if out_t is tf.qint8 else 0.0,
                           max_freezed_output=top, Toutput=out_t,
                           input_quant_mode=input_mode if i == 0 else "MIN_FIRST",
                           name=f"layer{i}")
        inner[f"layer{i}"] = h
    mode = "SCALED" if tout == "qint8" else "MIN_FIRST"
    return x, tf.dequantize(h, h_lo, h_hi, mode=mode, name="dequantize"), inner


def sessions(graph, config=None):
    """(fused session, unfused session) of one graph: the second plans without chains."""
    fused = tf.Session(graph=graph, config=config)
    unfused = tf.Session(graph=graph, config=config)
    return fused, unfused


def run_unfused(sess, fetches, feeds, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(executor, "find_chains", lambda nodes: [])
        return sess.run(fetches, feeds)


def chains(sess) -> list[tuple[list[str], bool]]:
    """Each fused chain of the session's plans: its members' names, and whether it found its
    fast path."""
    return [([n.name for n in c.nodes], c.has_fast_path)
            for plan in sess._plans.values() for part in plan.partitions
            for c in getattr(part, "chains", ())]


def fused_span(sess) -> tuple[int, int]:
    (span,) = [c.fast_members for plan in sess._plans.values() for part in plan.partitions
               for c in getattr(part, "chains", ())]
    return span


def assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8) if got.dtype == np.float32 else got,
                                  want.view(np.uint8) if want.dtype == np.float32 else want)


def batches(rng, width, scale=1.2):
    return [rng.uniform(-0.3, scale, size=(m, width)).astype(np.float32) for m in (1, 5, 33)]


# -- fused == unfused ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def digits():
    spec = importlib.util.spec_from_file_location("digits_data", SAMPLES / "digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = module.read_data_sets(0)
    float_gd = tf.load_graph_def(SAMPLES / "digits_mlp_frozen.json")
    ranges = calibrate(float_gd, {"images": data.train.images[:200]})
    return quantize_graph(float_gd, "eightbit", calibration=ranges).graph_def, data.test.images


def test_digits_mlp_runs_its_chain_fused_and_gives_the_same_bits(digits, monkeypatch):
    gd, images = digits
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(gd, name="")
    fused, unfused = sessions(g)
    for batch in (images[:1], images[:16], images[:300], images[5:6] * 3.0):
        got = [fused.run("probabilities:0", {"images:0": batch}) for _ in range(3)]
        want = run_unfused(unfused, "probabilities:0", {"images:0": batch}, monkeypatch)
        for value in got:
            assert_same(value, want)
    found = chains(fused)
    assert len(found) == 1 and found[0][1], found
    ops = [g.get_operation_by_name(name).type for name in found[0][0]]
    assert ops[0] == "QuantizeV2" and ops[-1] == "Dequantize" and ops.count(MATMUL_RELU) == 2
    assert chains(unfused) == []


@pytest.mark.parametrize("ranges", ["calibrated", "run-time"])
@pytest.mark.parametrize("tout", ["qint8", "quint8"])
@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("input_mode", ["SCALED", "MIN_FIRST"])
def test_random_mlps_give_the_same_bits_fused(input_mode, relu, tout, ranges, monkeypatch):
    rng = np.random.default_rng(hash((input_mode, relu, tout, ranges)) % 1000)
    sizes = [int(s) for s in rng.integers(3, 70, size=4)]
    g = tf.Graph()
    with g.as_default():
        x, out, _ = mlp(rng, sizes, input_mode, relu, tout, ranges)
    fused, unfused = sessions(g)
    cases = batches(rng, sizes[0])
    if ranges == "calibrated":      # (a NaN in run-time ranges is an error, fused or not)
        cases.append(np.where(rng.random((4, sizes[0])) < 0.2, np.nan, cases[1][0])
                     .astype(np.float32))
    for x_val in cases:
        want = run_unfused(unfused, out, {x: x_val}, monkeypatch)
        for _ in range(2):
            assert_same(fused.run(out, {x: x_val}), want)
    (names, fast), = chains(fused)
    assert names == ["quantize", "layer0", "layer1", "layer2", "dequantize"]
    # Where the ranges stay the same tensors the whole chain takes the fast path (these few
    # rows: the float32 route, from either QuantizeV2 through either Dequantize); run-time
    # ones never do, and their chain runs op by op.
    assert fast == (ranges == "calibrated")
    if fast:
        assert fused_span(fused) == (0, 5)


def test_a_chain_fed_a_quint8_tensor_starts_at_its_matmul(monkeypatch):
    rng = np.random.default_rng(3)
    g = tf.Graph()
    with g.as_default():
        x, out, inner = mlp(rng, [12, 9, 7, 5])
        q = inner["quantize"]
    fused, unfused = sessions(g)
    for m in (1, 6):
        feed = {q: rng.integers(0, 256, size=(m, 12)).astype(np.uint8),
                x: np.ones((2, 12), np.float32)}     # QuantizeV2 still makes the ranges
        want = run_unfused(unfused, out, feed, monkeypatch)
        assert_same(fused.run(out, feed), want)
        assert_same(fused.run(out, feed), want)
    # Its ranges come from QuantizeV2, the same tensors each step: fast from layer0 on.
    assert chains(fused) == [(["layer0", "layer1", "layer2", "dequantize"], True)]
    assert fused_span(fused) == (0, 4)


# -- where a chain breaks -----------------------------------------------------------------

def test_fetching_an_intermediate_ends_the_chain_there(monkeypatch):
    rng = np.random.default_rng(4)
    g = tf.Graph()
    with g.as_default():
        x, out, inner = mlp(rng, [10, 8, 6, 4])
    fused, unfused = sessions(g)
    x_val = batches(rng, 10)[1]
    fetches = [out, inner["layer1"]]
    want = run_unfused(unfused, fetches, {x: x_val}, monkeypatch)
    for got, expected in zip(fused.run(fetches, {x: x_val}), want):
        assert_same(got, expected)
    assert [names for names, _ in chains(fused)] == [["quantize", "layer0", "layer1"],
                                                     ["layer2", "dequantize"]]


def test_a_second_consumer_or_a_control_edge_ends_the_chain(monkeypatch):
    rng = np.random.default_rng(5)
    g = tf.Graph()
    with g.as_default():
        x, out, inner = mlp(rng, [10, 8, 6, 4])
        also = tf.identity(inner["layer0"], name="also")
        with tf.control_dependencies([inner["layer1"].op]):
            marker = tf.identity(x, name="marker")
    fused, unfused = sessions(g)
    x_val = batches(rng, 10)[2]
    fetches = [out, also, marker]
    want = run_unfused(unfused, fetches, {x: x_val}, monkeypatch)
    for got, expected in zip(fused.run(fetches, {x: x_val}), want):
        assert_same(got, expected)
    # layer0 feeds `also` too; layer1 is the source of marker's control edge.
    assert [names for names, _ in chains(fused)] == [["quantize", "layer0"],
                                                     ["layer2", "dequantize"]]


def test_a_member_waiting_on_a_control_edge_starts_a_new_chain(monkeypatch):
    rng = np.random.default_rng(6)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        gate = tf.identity(x, name="gate")
        q = RO.QuantizeV2(input=x, min_range=0.0, max_range=one_pass_scaled_max(1.0),
                          T=tf.quint8, mode="SCALED", round_mode="HALF_TO_EVEN", name="quantize")
        with tf.control_dependencies([gate.op]):
            h, h_lo, h_hi = RO.QuantizedMatMulWithBiasAndRequantize(
                a=q.output, b=tf.constant(rng.integers(-64, 65, (6, 4)).astype(np.int8),
                                          dtype=tf.qint8),
                bias=tf.constant(np.zeros(4, np.float32)), min_a=q.output_min,
                max_a=q.output_max, min_b=-0.5, max_b=0.5, min_freezed_output=-2.0,
                max_freezed_output=2.0, Toutput=tf.qint8, input_quant_mode="SCALED",
                name="layer0")
        out = tf.dequantize(h, h_lo, h_hi, mode="SCALED", name="dequantize")
    fused, unfused = sessions(g)
    x_val = batches(rng, 6)[1]
    want = run_unfused(unfused, [out, gate], {x: x_val}, monkeypatch)
    for got, expected in zip(fused.run([out, gate], {x: x_val}), want):
        assert_same(got, expected)
    assert [names for names, _ in chains(fused)] == [["layer0", "dequantize"]]


def test_feeding_an_intermediate_cuts_the_chain_at_the_feed(monkeypatch):
    rng = np.random.default_rng(7)
    g = tf.Graph()
    with g.as_default():
        x, out, inner = mlp(rng, [10, 8, 6, 4])
    fused, unfused = sessions(g)
    feed = {x: batches(rng, 10)[1], inner["layer1"]: rng.integers(0, 256, (5, 6)).astype(np.uint8)}
    want = run_unfused(unfused, out, feed, monkeypatch)
    assert_same(fused.run(out, feed), want)
    # layer2 takes the fed tensor (and layer1's range outputs): it starts its own chain.
    assert [names for names, _ in chains(fused)] == [["quantize", "layer0", "layer1"],
                                                     ["layer2", "dequantize"]]


# -- traces, errors, devices, threads -----------------------------------------------------

def test_a_traced_step_runs_and_records_every_op():
    rng = np.random.default_rng(8)
    g = tf.Graph()
    with g.as_default():
        x, out, _ = mlp(rng, [10, 8, 6, 4])
    with tf.Session(graph=g) as sess:
        x_val = batches(rng, 10)[1]
        plain = sess.run(out, {x: x_val})
        metadata = tf.RunMetadata()
        traced = sess.run(out, {x: x_val}, run_metadata=metadata,
                          options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
        assert_same(traced, plain)
        names = [n.node_name for d in metadata.step_stats.dev_stats for n in d.node_stats]
        assert [n for n in names if n in ("quantize", "layer0", "layer1", "layer2",
                                          "dequantize")] == \
            ["quantize", "layer0", "layer1", "layer2", "dequantize"]


def test_a_failing_member_is_named(monkeypatch):
    rng = np.random.default_rng(9)
    g = tf.Graph()
    with g.as_default():
        x, out, _ = mlp(rng, [10, 8, 6, 4], x_shape=None)
    fused, unfused = sessions(g)
    bad = {x: np.ones((3, 11), np.float32)}
    with pytest.raises(tf.errors.InvalidArgumentError) as want:
        run_unfused(unfused, out, bad, monkeypatch)
    with pytest.raises(tf.errors.InvalidArgumentError) as got:
        fused.run(out, bad)
    assert "layer0" in str(got.value) and "Matrix size-incompatible" in str(got.value)
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]


@pytest.mark.parametrize("tout", ["qint8", "quint8"])
def test_virtual_gpu_chain_gives_the_same_bits(tout, monkeypatch):
    rng = np.random.default_rng(10)
    g = tf.Graph()
    with g.as_default(), tf.device("/gpu:0"):
        x, out, _ = mlp(rng, [20, 16, 9, 5], tout=tout)
    fused, unfused = sessions(g, tf.ConfigProto(virtual_gpus=1))
    for x_val in batches(rng, 20):
        want = run_unfused(unfused, out, {x: x_val}, monkeypatch)
        assert_same(fused.run(out, {x: x_val}), want)
        assert_same(fused.run(out, {x: x_val}), want)
    (names, fast), = chains(fused)
    assert names == ["quantize", "layer0", "layer1", "layer2", "dequantize"]
    assert fast          # the one-pass QuantizeV2 runs fast there; the integer matmuls do not


def test_many_threads_share_one_fused_graph(monkeypatch):
    rng = np.random.default_rng(11)
    g = tf.Graph()
    with g.as_default():
        x, out, _ = mlp(rng, [64, 48, 32, 10])
    fused, unfused = sessions(g)
    inputs = [rng.uniform(0, 1, size=(1 + 7 * k, 64)).astype(np.float32) for k in range(8)]
    alone = [run_unfused(unfused, out, {x: v}, monkeypatch) for v in inputs]
    start = threading.Barrier(8)

    def runs(k: int) -> list:
        start.wait()      # the first round's first steps race, fast path not yet made
        return [fused.run(out, {x: inputs[k]}) for _ in range(40)]
    for _ in range(2):    # the second round races on the made fast path from its first step
        with ThreadPoolExecutor(8) as pool:
            together = list(pool.map(runs, range(8)))
        for k, results in enumerate(together):
            for result in results:
                assert_same(result, alone[k])
        assert chains(fused)[0][1]


def test_the_fast_path_follows_ranges_that_change(monkeypatch):
    # QuantizeV2's range from variables: its output range (layer0's min_a, max_a) is the same
    # tensors until an assign, then new ones, which the fast path must not take for the old.
    rng = np.random.default_rng(12)
    g = tf.Graph()
    with g.as_default():
        lo, hi = tf.Variable(-0.4, name="lo"), tf.Variable(1.0, name="hi")
        x, out, _ = mlp(rng, [10, 8, 6, 4], input_mode="MIN_FIRST", ranges=(lo, hi))
        widen = hi.assign(2.5)
        init = tf.global_variables_initializer()
    fused, unfused = sessions(g)
    x_val = batches(rng, 10, scale=2.4)[2]
    for sess in (fused, unfused):
        sess.run(init)
    before = run_unfused(unfused, out, {x: x_val}, monkeypatch)
    for _ in range(3):
        assert_same(fused.run(out, {x: x_val}), before)
    assert fused_span(fused) == (0, 5)     # MIN_FIRST QuantizeV2 included
    for sess in (fused, unfused):
        sess.run(widen)
    after = run_unfused(unfused, out, {x: x_val}, monkeypatch)
    assert not np.array_equal(after, before)
    for _ in range(2):
        assert_same(fused.run(out, {x: x_val}), after)
