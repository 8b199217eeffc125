"""tf.nn.embedding_lookup over one or several (sharded) parameter tensors."""

from __future__ import annotations

__all__: list[str] = []
