"""Optimizer update ops take no gradient; their entries live here beside the other tables."""

from __future__ import annotations

from engine.ops.training_ops import SIGNATURES

GRADIENTS: dict = {}
NOT_DIFFERENTIABLE: tuple = tuple(SIGNATURES)
