"""Learning-rate schedules: exponential, piecewise constant, polynomial decay."""

from __future__ import annotations

__all__: list[str] = []
