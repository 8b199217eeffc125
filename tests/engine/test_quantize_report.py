"""engine.compression.report: the cost table's measurements (accuracy against a NumPy forward
pass of the digits MLP, graph file bytes, ratios to the float row) and record_comparison,
read back from a real run store."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from test_quantize_compare import X, original_graph, quantized_graph

from engine.compression import report
from engine.graph_io import load_graph_def, save_graph
from engine.record import RunReader, RunWriter

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
MLP = SAMPLES / "digits_mlp_frozen.json"
FAST = report.Timing(repeats=2, warmup=1)


@pytest.fixture(scope="module")
def digits():
    sys.path.insert(0, str(SAMPLES))
    try:
        import digits as module
    finally:
        sys.path.remove(str(SAMPLES))
    return module.read_data_sets(0)


def numpy_mlp(graph_def, images):
    value = {n.name: n.attr["value"] for n in graph_def.node if n.op == "Const"}
    h = images.reshape(len(images), -1)
    for layer in ("dense", "dense_1"):
        h = np.maximum(h @ value[f"{layer}/kernel"] + value[f"{layer}/bias"], 0)
    return h @ value["logits/kernel"] + value["logits/bias"]


def test_accuracy_matches_a_numpy_forward_pass(digits):
    graph_def = load_graph_def(MLP)
    images, labels = digits.test.images, digits.test.labels
    want = np.mean(np.argmax(numpy_mlp(graph_def, images), axis=1) == labels)
    assert report.accuracy(graph_def, images, labels) == pytest.approx(want)
    assert want > 0.9


def test_graph_file_bytes_is_the_compact_file_save_graph_writes(tmp_path):
    graph_def = load_graph_def(MLP)
    path = tmp_path / "mlp.graphz"
    save_graph(graph_def, path, stacks=False)
    assert report.graph_file_bytes(graph_def) == path.stat().st_size
    assert report.graph_file_bytes(graph_def) < os.path.getsize(MLP) + os.path.getsize(f"{MLP}.npz")


def test_cost_rows_take_ratios_against_the_first_variant(digits):
    graph_def = load_graph_def(MLP)
    rows = report.cost_rows("digits_mlp", {"float": graph_def, "again": graph_def},
                            digits.test.images[:64], digits.test.labels[:64], timing=FAST)
    assert [r.variant for r in rows] == ["float", "again"]
    base, again = rows
    assert base.bytes_ratio == 1.0 and base.batch1_speedup == base.batch256_speedup == 1.0
    assert again.file_bytes == base.file_bytes and again.accuracy == base.accuracy
    assert again.batch1_speedup == pytest.approx(base.batch1_us / again.batch1_us)
    assert again.batch256_speedup == pytest.approx(base.batch256_us / again.batch256_us)
    assert min(base.batch1_us, base.batch256_us) > 0
    with pytest.raises(ValueError, match="'digits_mlp': no graphs given"):
        report.cost_rows("digits_mlp", {}, digits.test.images, digits.test.labels)


def test_record_comparison_records_both_graphs_and_every_node(tmp_path):
    original, quantized = original_graph(), quantized_graph()
    with RunWriter(tmp_path, "q") as writer:
        result = report.record_comparison(writer, original, quantized, {"x": X},
                                          name="hand", graph_versions=(3, 4))
    reader = RunReader(tmp_path / "q")
    recorded = reader.quantization_comparison("hand")
    assert recorded.nodes == result.nodes and recorded.flagged is None
    assert (recorded.original_graph_version, recorded.quantized_graph_version) == (3, 4)
    assert [n.name for n in reader.graph(3).nodes] == [n.name for n in original.node]
    assert {"mm/q", "mm/dequantize"} <= {n.name for n in reader.graph(4).nodes}
    assert recorded.nodes[0].sqnr_db == math.inf
    with pytest.raises(ValueError, match="two graph versions"):
        report.record_comparison(writer, original, quantized, {"x": X}, graph_versions=(1, 1))
