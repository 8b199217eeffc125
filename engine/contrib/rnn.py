"""tf.contrib.rnn as TF1 tutorials import it: the cells, LSTMStateTuple and the unrolled
RNNs (static_rnn, static_bidirectional_rnn, static_state_saving_rnn); nothing else of
contrib.rnn."""

from engine.ops.rnn import (  # noqa: F401
    static_bidirectional_rnn,
    static_rnn,
    static_state_saving_rnn,
)
from engine.ops.rnn_cell import *  # noqa: F401,F403
from engine.ops.rnn_cell import __all__ as _cells

__all__ = sorted(_cells + ["static_bidirectional_rnn", "static_rnn", "static_state_saving_rnn"])
