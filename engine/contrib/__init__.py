"""tf.contrib: the few contrib pieces TF1 programs commonly use (tf.contrib.layers'
regularizers and initializers, tf.contrib.rnn's cells and unrolled RNNs)."""

from engine.contrib import layers, rnn  # noqa: F401
