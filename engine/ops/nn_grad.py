"""Gradient rules of the neural-network ops (convolutions, pooling, bias_add, batch
normalization, activations, cross entropies), side by side in one table."""

from __future__ import annotations

GRADIENTS: dict = {}
NOT_DIFFERENTIABLE: tuple = ()
