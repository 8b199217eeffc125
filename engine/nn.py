"""tf.nn: the neural-network functions, as TF1 spells them."""

from engine.ops.math_ops import sigmoid, tanh  # noqa: F401
from engine.ops.nn_ops import (  # noqa: F401
                               log_softmax,
                               relu,
                               softmax,
                               softmax_cross_entropy_with_logits,
                               softmax_cross_entropy_with_logits_v2,
)
