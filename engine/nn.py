"""tf.nn: the neural-network functions, as TF1 spells them."""

from engine.ops import rnn_cell  # noqa: F401
from engine.ops.conv_ops import *  # noqa: F401,F403
from engine.ops.embedding_ops import *  # noqa: F401,F403
from engine.ops.math_ops import sigmoid, tanh  # noqa: F401
from engine.ops.nn_impl import *  # noqa: F401,F403
from engine.ops.nn_ops import *  # noqa: F401,F403
from engine.ops.random_ops import dropout  # noqa: F401
from engine.ops.rnn import *  # noqa: F401,F403
