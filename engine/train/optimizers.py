"""The slot-keeping optimizers: Momentum (Nesterov), Adam, Adagrad, RMSProp, Adadelta."""

from __future__ import annotations

__all__: list[str] = []
