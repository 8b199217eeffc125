"""Numerics checks: CheckNumerics (tf.check_numerics) and tf.add_check_numerics_ops."""

from __future__ import annotations

__all__: list[str] = []
