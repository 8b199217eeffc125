"""A recorded quantization run for the Quantization page's tests: the sample digits MLP,
eightbit calibrated on 100 training images, compared on 64 test images (threshold 45 dB, so
a node is flagged), a cost table of fixed numbers, and a run beside it with no comparison."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from engine.compression import quantize
from engine.compression.report import record_comparison
from engine.graph_io import load_graph_def
from engine.record import RunWriter
from engine.record.schema import QuantizationCostRecord

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
COMPARISON = "digits_mlp eightbit, calibrated on 100"
THRESHOLD_DB = 45.0
COSTS = (
    QuantizationCostRecord("digits_mlp", "float", 0.9889, 43_538, 1.0, 190.0, 300.0, 1.0, 1.0),
    QuantizationCostRecord("digits_mlp", "weights", 0.9889, 22_307, 0.512, 990.0, 1180.0,
                           0.19, 0.25),
    QuantizationCostRecord("digits_mlp", "eightbit, calibrated on 100", 0.9889, 25_371,
                           0.583, 340.0, 280.0, 0.56, 1.07),
)


@dataclass(frozen=True)
class QuantizedRuns:
    logdir: Path
    run: str               # the run with the comparison and the costs
    plain: str             # a run with neither
    flagged: str           # the original node the comparison flagged


def digits_data():
    sys.path.insert(0, str(SAMPLES))
    try:
        import digits
    finally:
        sys.path.remove(str(SAMPLES))
    return digits.read_data_sets(0)


def record_quantized_runs(logdir: Path) -> QuantizedRuns:
    data = digits_data()
    graph_def = load_graph_def(SAMPLES / "digits_mlp_frozen.json")
    quantized = quantize(graph_def, "eightbit",
                         calibration_samples={"images": data.train.images[:100]})
    with RunWriter(logdir, "plain") as writer:
        writer.scalar("loss", 1.0, 0)
    with RunWriter(logdir, "quantized") as writer:
        result = record_comparison(writer, graph_def, quantized,
                                   {"images": data.test.images[:64]}, name=COMPARISON,
                                   threshold_db=THRESHOLD_DB)
        writer.quantization_costs(COSTS)
    if result.flagged is None:
        raise AssertionError(f"nothing fell below {THRESHOLD_DB} dB: the page tests need a "
                             "flagged node")
    return QuantizedRuns(Path(logdir), "quantized", "plain", result.flagged)
