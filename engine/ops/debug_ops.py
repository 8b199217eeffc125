"""Numerics checks: CheckNumerics (tf.check_numerics) and tf.add_check_numerics_ops."""

from __future__ import annotations

from engine import dtypes
from engine.graph import get_default_graph
from engine.ops.core import check_dtype_allowed, convert_to_tensor, graph_of
from engine.ops.registry import register_op

__all__ = ["add_check_numerics_ops", "check_numerics"]

CHECKED_TYPES = (dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64)


def _check_numerics_infer(op):
    x = op.inputs[0]
    check_dtype_allowed(op, x.dtype, CHECKED_TYPES, arg="T")
    return [(x.dtype.base_dtype, x.shape)]


register_op("CheckNumerics", _check_numerics_infer)


def check_numerics(tensor, message: str, name: str | None = None):
    """The tensor itself, or InvalidArgumentError `<message> : Tensor had NaN values` (or
    `Inf values`, `Inf and NaN values`) when it holds any."""
    tensor = convert_to_tensor(tensor)
    op = graph_of(tensor).create_op("CheckNumerics", [tensor],
                                    {"T": tensor.dtype.base_dtype, "message": str(message)},
                                    name=name or "CheckNumerics")
    return op.outputs[0]


def add_check_numerics_ops():
    """A CheckNumerics on every float16/32/64 output of the default graph (message
    `<op>:<index>`), chained by control dependencies in graph order, as TF does; returns the
    group of the last one to run them all."""
    from engine.ops.control_flow_ops import group
    graph = get_default_graph()
    checks: list = []
    for op in graph.get_operations():
        for output in op.outputs:
            if output.dtype in (dtypes.float16, dtypes.float32, dtypes.float64):
                with graph.control_dependencies(checks):
                    checks = [check_numerics(output, message=f"{op.name}:{output.value_index}")]
    return group(*checks)
