"""The optimizers' update ops (ApplyMomentum, ApplyAdam, ApplyAdagrad, ApplyRMSProp,
ApplyAdadelta, ...): a ref first input (so they colocate with the variable) updated in place."""

from __future__ import annotations

__all__: list[str] = []
