"""Initializers as TF1 spells them (zeros, ones, constant, random_normal, truncated_normal,
glorot_uniform/normal, variance_scaling): callables (shape, dtype, partition_info) -> Tensor."""

from __future__ import annotations

__all__: list[str] = []
