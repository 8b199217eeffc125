"""tf.contrib: the few contrib pieces TF1 programs commonly use (tf.contrib.layers'
regularizers and initializers)."""

from engine.contrib import layers  # noqa: F401
