"""Gradient rules of the math ops added beyond the core set (extra reductions, unary
functions, batch matmul, clipping, ...), side by side in one table."""

from __future__ import annotations

GRADIENTS: dict = {}
NOT_DIFFERENTIABLE: tuple = ()
