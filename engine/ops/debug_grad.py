"""Gradient rules of the summary and numerics-check ops."""

from __future__ import annotations

from engine.ops import debug_ops, summary_ops  # noqa: F401  (their ops are registered first)

GRADIENT_MESSAGE = "Not a number (NaN) or infinity (Inf) values detected in gradient. "


def _check_numerics_grad(op, grad):
    """TF's rule: the gradient passes through, checked itself."""
    return [debug_ops.check_numerics(grad, GRADIENT_MESSAGE + op.attrs["message"])]


GRADIENTS: dict = {"CheckNumerics": _check_numerics_grad}
NOT_DIFFERENTIABLE: tuple = ("ScalarSummary", "HistogramSummary", "ImageSummary",
                             "TensorSummaryV2", "MergeSummary")
