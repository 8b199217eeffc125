"""Gradient rules of the array ops (concat, split, slice, strided slice, gather, transpose,
pad, tile, ...), one small function per op type, side by side in one table."""

from __future__ import annotations

GRADIENTS: dict = {}
NOT_DIFFERENTIABLE: tuple = ()
