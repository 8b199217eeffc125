"""tf.train.MonitoredSession, MonitoredTrainingSession and the session creators."""

from __future__ import annotations

__all__: list[str] = []
