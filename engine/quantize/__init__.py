"""Quantization: the quantize_graph pass (engine/passes/quantize_graph.py), calibration over
real samples, and `quantize`, which does both."""

from __future__ import annotations

import sys
import types

from engine.graph_def import GraphDef
from engine.passes.quantize_graph import QuantizeResult, Ranges, quantize_graph
from engine.quantize.calibration import calibrate
from engine.quantize.compare import Comparison
from engine.quantize.report import record_comparison

# compare() stays in its module (engine.quantize.compare.compare): a function here of the
# module's name would hide the module from `from engine.quantize import compare`.
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


class _CallablePackage(types.ModuleType):
    """Importing this package makes `engine.quantize` (tf.quantize under `import engine as
    tf`) name the package instead of TF's quantize op; calling it still runs the op."""

    def __call__(self, *args, **kwargs):
        from engine.ops.quantized_ops import quantize as quantize_op
        return quantize_op(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
