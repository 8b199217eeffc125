"""Random ops (RandomStandardNormal, RandomUniform, TruncatedNormal, RandomShuffle,
Multinomial, ...) with TF's graph- and op-level seeds; the tf.random_* builders."""

from __future__ import annotations

__all__: list[str] = []
