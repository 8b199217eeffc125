"""tf.graph_util: convert_variables_to_constants (freezing a trained graph)."""

from __future__ import annotations

__all__: list[str] = []
