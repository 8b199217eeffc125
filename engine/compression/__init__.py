"""Model compression (DESIGN.md's `quantize/` package, named so it does not take the name of
TF's `tf.quantize` op on `engine`): the quantize_graph pass (engine/passes/quantize_graph.py),
calibration over real samples, `quantize` (both), per-node comparison, the cost table, pruning."""

from __future__ import annotations

from engine.compression.calibration import calibrate
from engine.compression.compare import Comparison
from engine.compression.report import record_comparison
from engine.graph_def import GraphDef
from engine.passes.quantize_graph import QuantizeResult, Ranges, quantize_graph

# compare() stays in its module (engine.compression.compare.compare): a function here of the
# module's name would hide the module from `from engine.compression import compare`.
__all__ = ["Comparison", "QuantizeResult", "Ranges", "calibrate", "quantize", "quantize_graph",
           "record_comparison"]


def quantize(graph_def: GraphDef, mode: str = "eightbit", calibration_samples: dict | None = None,
             output_names: list[str] | None = None, batch_size: int = 256) -> QuantizeResult:
    """Calibrates on `calibration_samples` (placeholder name -> array; eightbit mode only),
    then rewrites; without samples the eightbit ranges are found at run time."""
    ranges = None
    if calibration_samples is not None and mode == "eightbit":
        ranges = calibrate(graph_def, calibration_samples, batch_size=batch_size)
    return quantize_graph(graph_def, mode, calibration=ranges, output_names=output_names)
