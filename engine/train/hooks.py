"""SessionRunHook and the standard hooks (LoggingTensorHook, StepCounterHook, StopAtStepHook,
NanTensorHook, CheckpointSaverHook, ProfilerHook)."""

from __future__ import annotations

__all__: list[str] = []
