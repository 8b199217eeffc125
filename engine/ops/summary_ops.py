"""Summary ops (ScalarSummary, HistogramSummary, ImageSummary, TensorSummary, MergeSummary):
each outputs a string tensor holding a serialized summary, as TF1's do."""

from __future__ import annotations

__all__: list[str] = []
