"""tf.train.Saver: checkpoints as safetensors files plus a small JSON index (no pickle);
tf.train.latest_checkpoint."""

from __future__ import annotations

__all__: list[str] = []
