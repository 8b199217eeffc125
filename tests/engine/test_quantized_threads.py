"""Calibrated eightbit graphs run from many threads at once: the fused ops' per-node memo
(scales, prepacked weights, output ranges), the fused conv's prepack cache and Dequantize's
kept constant are shared by every Session.run of a graph, so each thread must get exactly
what the same batch gives when run alone."""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine.compression import calibrate
from engine.passes.quantize_graph import quantize_graph

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
THREADS, RUNS = 8, 6


@pytest.fixture(scope="module")
def images():
    spec = importlib.util.spec_from_file_location("digits_data", SAMPLES / "digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = module.read_data_sets(0)
    return data.train.images[:200], data.test.images


@pytest.mark.parametrize("sample,mode", [("digits_mlp_frozen.json", "eightbit"),
                                         ("digits_cnn_frozen.json", "eightbit"),
                                         ("digits_mlp_frozen.json", "weights")])
def test_concurrent_runs_give_each_batch_its_own_result(images, sample, mode):
    train, test = images
    float_gd = tf.load_graph_def(SAMPLES / sample)
    ranges = calibrate(float_gd, {"images": train}) if mode == "eightbit" else None
    gd = quantize_graph(float_gd, mode, calibration=ranges).graph_def
    batches = [test[k * 16:(k + 1) * 16 + k] for k in range(THREADS)]   # sizes differ too
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(gd, name="")
    with tf.Session(graph=g) as sess:
        alone = [sess.run("probabilities:0", {"images:0": b}) for b in batches]

        def runs(k: int) -> list[np.ndarray]:
            return [sess.run("probabilities:0", {"images:0": batches[k]}) for _ in range(RUNS)]
        with ThreadPoolExecutor(THREADS) as pool:
            together = list(pool.map(runs, range(THREADS)))
    for k, results in enumerate(together):
        for result in results:
            np.testing.assert_array_equal(result, alone[k], err_msg=f"thread {k}")
    assert len({a.shape[0] for a in alone}) == THREADS
