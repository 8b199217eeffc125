"""Random ops take no gradient; their entries live here beside the other family tables."""

from __future__ import annotations

GRADIENTS: dict = {}
NOT_DIFFERENTIABLE: tuple = ()
