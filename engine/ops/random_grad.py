"""Random ops take no gradient; their entries live here beside the other family tables."""

from __future__ import annotations

from engine.ops import random_ops  # noqa: F401  (registers the op types named below)

GRADIENTS: dict = {}
# As TF's random_ops.py: samples are not functions of their shape or logits.
NOT_DIFFERENTIABLE: tuple = (
    "RandomStandardNormal", "RandomUniform", "RandomUniformInt", "TruncatedNormal",
    "RandomShuffle", "Multinomial",
)
