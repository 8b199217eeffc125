"""tf.variable_scope and tf.get_variable: scoped variable names, reuse (True / AUTO_REUSE),
initializers and regularizers (into REGULARIZATION_LOSSES)."""

from __future__ import annotations

__all__: list[str] = []
