"""The fused chains' float32 route (engine/kernels/quantized_chain_float.py): fbgemm's
requantize reproduced bit for bit (the bias added in one rounding where this CPU's fbgemm
fuses it, as the probe finds), MIN_FIRST QuantizeV2 inputs with ties, NaN, inf and ranges
from and below 0, batches on both sides of the route's row limit in one session, and many
threads at once, each against the op-by-op kernels."""

from __future__ import annotations

import importlib.util
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

import engine as tf
import engine.runtime.executor as executor
from engine.compression import calibrate
from engine.kernels import quantized_chain_float as qfloat
from engine.kernels import quantized_fbgemm as fbgemm
from engine.passes.quantize_graph import quantize_graph

RO = tf.raw_ops
F32 = np.float32
SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"

pytestmark = pytest.mark.skipif(not fbgemm.usable(), reason="the route stands in for fbgemm")


def run_unfused(sess, fetches, feeds, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(executor, "find_chains", lambda nodes: [])
        return sess.run(fetches, feeds)


def assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def the_chain(sess):
    (chain,) = [c for plan in sess._plans.values() for part in plan.partitions
                for c in getattr(part, "chains", ())]
    return chain


# -- fbgemm's requantize --------------------------------------------------------------------

def fbgemm_layer(a, w_kn, bias, scale_a, scale_b, scale_out):
    packed = torch.ops.quantized.linear_prepack(
        fbgemm._quantized(torch.from_numpy(np.ascontiguousarray(w_kn.T)), float(scale_b), 0),
        torch.from_numpy(bias))
    q = fbgemm._quantized(torch.from_numpy(a), float(scale_a), 0)
    return fbgemm.linear_op(False)(q, packed, float(scale_out), 0).int_repr().numpy()


def route_layer(a, w_kn, bias, scale_a, scale_b, scale_out, fused, single=False):
    """The route's arithmetic for one quint8 layer (zero points 0, no Relu): with `single`,
    the float32 terms it prefers where they give every level where the exact ones do."""
    acc_scale = F32(F32(scale_a) * F32(scale_b))
    multiplier = F32(acc_scale / F32(scale_out))
    terms = qfloat.bias_terms(bias, F32(1.0 / float(acc_scale)), fused, a.shape[1] * 255 * 128)
    if single and terms.dtype == np.float64:
        terms = qfloat.float32_terms(terms, qfloat.acc_range(torch.from_numpy(w_kn), 0),
                                     multiplier, (0.0, 255.0))
        if terms is None:
            return None
    acc = a.astype(np.float32) @ w_kn.astype(np.float32)         # exact: integers < 2^24
    x = (acc.astype(np.float64) + terms).astype(np.float32) if terms.dtype == np.float64 \
        else (acc + terms).astype(np.float32)
    y = (x * multiplier).astype(np.float32)
    return np.clip(np.rint(y), 0, 255).astype(np.uint8)


def test_the_bias_probe_reads_this_cpus_fbgemm():
    p = fbgemm._BIAS_PROBE
    a = np.asarray([p["a"]], np.uint8)
    w = np.asarray([p["w"]], np.int8).T
    got = fbgemm_layer(a, w, np.asarray([p["bias"]], np.float32), F32(p["scale_a"]),
                       F32(p["scale_b"]), F32(p["scale_out"]))[0, 0]
    assert fbgemm.bias_fused() is {p["fused"]: True, p["separate"]: False}.get(int(got))
    # the probe tells the two ways apart
    assert {int(route_layer(a, w, np.asarray([p["bias"]], np.float32), F32(p["scale_a"]),
                            F32(p["scale_b"]), F32(p["scale_out"]), fused)[0, 0])
            for fused in (True, False)} == {p["fused"], p["separate"]}


def test_the_route_gives_fbgemms_requantize_on_a_million_outputs():
    # Outputs where the bias's rounding decides the level are about one in a million (the
    # probe above is one); the route must match fbgemm on every output.
    fused = fbgemm.bias_fused()
    assert fused is not None
    rng = np.random.default_rng(0)
    misses = {True: 0, False: 0, "single": 0}
    singles = 0
    for _ in range(40):
        k, n, m = int(rng.integers(8, 65)), 48, 512
        # 7-bit weights: no int16 pair of fbgemm's AVX2 products saturates (the kernel
        # spreads such pairs; this calls fbgemm bare)
        w = rng.integers(-64, 65, (k, n)).astype(np.int8)
        a = rng.integers(0, 256, (m, k)).astype(np.uint8)
        scale_a, scale_b = F32(rng.uniform(1e-3, 1e-2)), F32(rng.uniform(1e-3, 2e-2))
        scale_out = F32(rng.uniform(0.02, 0.2))
        bias = (rng.normal(0, 1, n) * rng.uniform(0.01, 10)).astype(np.float32)
        want = fbgemm_layer(a, w, bias, scale_a, scale_b, scale_out)
        for how in (True, False):
            misses[how] += int((route_layer(a, w, bias, scale_a, scale_b, scale_out, how)
                                != want).sum())
        single = route_layer(a, w, bias, scale_a, scale_b, scale_out, fused, single=True)
        if single is not None:
            singles += 1
            misses["single"] += int((single != want).sum())
    assert misses[fused] == 0 and misses["single"] == 0
    assert singles >= 10        # the float32 terms serve many layers (18 of these 40)


def test_bias_terms_refuse_sums_that_double_cannot_hold():
    assert qfloat.bias_terms(np.asarray([1e9], np.float32), F32(1.0), True, 1000) is None
    assert qfloat.bias_terms(np.asarray([np.inf], np.float32), F32(1.0), False, 1000) is None
    terms = qfloat.bias_terms(np.asarray([0.3, -2.7, 0.0], np.float32), F32(3.0), True, 1000)
    assert terms.dtype == np.float64 and terms[2] == 0.0
    assert np.all(np.abs(terms - np.asarray([0.3, -2.7, 0.0], np.float32).astype(np.float64) * 3.0)
                  <= 2 ** -27)


# -- MIN_FIRST inputs -------------------------------------------------------------------------

def ties(scale: float, count: int) -> np.ndarray:
    """float32 x whose float32 x * scale is exactly n + 0.5 (QuantizeV2's MIN_FIRST rounds
    those away from zero, fbgemm's Quantize would round them to even)."""
    out = []
    for n in range(count):
        x = F32((n + 0.5) / scale)
        for _ in range(8):
            if F32(x * F32(scale)) == F32(n + 0.5):
                out.append(x)
                break
            x = np.nextafter(x, F32(np.inf) if F32(x * F32(scale)) < n + 0.5 else F32(0))
    return np.asarray(out, np.float32)


def min_first_mlp(rng, sizes, lo, hi):
    x = tf.placeholder(tf.float32, [None, sizes[0]], name="x")
    q = RO.QuantizeV2(input=x, min_range=lo, max_range=hi, T=tf.quint8, mode="MIN_FIRST",
                      name="quantize")
    h, h_lo, h_hi = q.output, q.output_min, q.output_max
    for i, (k, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        last = i == len(sizes) - 2
        op = RO.QuantizedMatMulWithBiasAndRequantize if last else \
            RO.QuantizedMatMulWithBiasAndReluAndRequantize
        top = float(np.sqrt(k)) * 0.5
        h, h_lo, h_hi = op(a=h, b=tf.constant(rng.integers(-127, 128, (k, n)).astype(np.int8),
                                              dtype=tf.qint8),
                           bias=tf.constant(rng.normal(0, 0.3, n).astype(np.float32)),
                           min_a=h_lo, max_a=h_hi, min_b=-0.5, max_b=0.5,
                           min_freezed_output=-top if last else 0.0, max_freezed_output=top,
                           Toutput=tf.qint8 if last else tf.quint8, name=f"layer{i}")
    return x, tf.dequantize(h, h_lo, h_hi, mode="SCALED", name="dequantize")


@pytest.mark.parametrize("lo,hi", [(0.0, 1.0), (0.0, 3.7), (-0.4, 1.0), (-2.0, 0.5)])
def test_min_first_inputs_take_the_route_bit_for_bit(lo, hi, monkeypatch):
    rng = np.random.default_rng(int(hi * 10))
    g = tf.Graph()
    with g.as_default():
        x, out = min_first_mlp(rng, [24, 20, 12, 6], lo, hi)
    fused, unfused = tf.Session(graph=g), tf.Session(graph=g)
    scale = 255.0 / (hi - min(lo, 0.0))
    tied = ties(scale, 255)
    special = np.asarray([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e30, hi, lo,
                          np.nextafter(F32(hi), F32(9)), 3e-39], np.float32)
    cases = [rng.uniform(lo - 0.3, hi + 0.3, (m, 24)).astype(np.float32) for m in (1, 7, 64)]
    cases.append(np.resize(np.concatenate([tied, -tied, tied + lo, special]), (40, 24)))
    for x_val in cases:
        want = run_unfused(unfused, out, {x: x_val}, monkeypatch)
        for _ in range(2):
            assert_same(fused.run(out, {x: x_val}), want)
    chain = the_chain(fused)
    assert chain.fast_members == (0, 5)        # from the MIN_FIRST QuantizeV2 on


# -- the digits MLP: both routes, many threads --------------------------------------------------

@pytest.fixture(scope="module")
def digits_graph():
    spec = importlib.util.spec_from_file_location("digits_data", SAMPLES / "digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = module.read_data_sets(0)
    float_gd = tf.load_graph_def(SAMPLES / "digits_mlp_frozen.json")
    ranges = calibrate(float_gd, {"images": data.train.images[:200]})
    gd = quantize_graph(float_gd, "eightbit", calibration=ranges).graph_def
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(gd, name="")
    return g, data.test.images


def test_digits_batches_on_both_sides_of_the_row_limit(digits_graph, monkeypatch):
    g, images = digits_graph
    monkeypatch.setattr(qfloat, "SMALL_WORK", 64 * 64 * 8)      # 8 rows take the route
    fused, unfused = tf.Session(graph=g), tf.Session(graph=g)
    batches = [images[:1], images[:8], images[:9], images[:300], images[3:4], images[:8]]
    wants = [run_unfused(unfused, "probabilities:0", {"images:0": b}, monkeypatch)
             for b in batches]
    for _ in range(2):
        for batch, want in zip(batches, wants):
            assert_same(fused.run("probabilities:0", {"images:0": batch}), want)
    chain = the_chain(fused)
    assert chain.fast_members == (0, 6)        # the whole chain, Dequantize included
    types = [g.get_operation_by_name(n.name).type for n in chain.nodes]
    assert types[:2] == ["QuantizeV2", "QuantizedReshape"]
    assert g.get_operation_by_name(chain.nodes[0].name).get_attr("mode") == "MIN_FIRST"


def test_digits_from_many_threads_at_once(digits_graph, monkeypatch):
    g, images = digits_graph
    monkeypatch.setattr(qfloat, "SMALL_WORK", 64 * 64 * 40)     # 40 rows take the route
    fused, unfused = tf.Session(graph=g), tf.Session(graph=g)
    batches = [images[k:k + size] for k, size in enumerate((1, 3, 16, 39, 40, 41, 120, 1))]
    alone = [run_unfused(unfused, "probabilities:0", {"images:0": b}, monkeypatch)
             for b in batches]
    start = threading.Barrier(len(batches))

    def runs(k: int) -> list:
        start.wait()     # the first round races while the fast path is being made
        return [fused.run("probabilities:0", {"images:0": batches[k]}) for _ in range(25)]
    for _ in range(2):
        with ThreadPoolExecutor(len(batches)) as pool:
            together = list(pool.map(runs, range(len(batches))))
        for k, results in enumerate(together):
            for result in results:
                assert_same(result, alone[k])
    assert the_chain(fused).has_fast_path
