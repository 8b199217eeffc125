"""tf.nn.rnn_cell (also tf.compat.v1.nn.rnn_cell): the cell classes and LSTMStateTuple."""

from engine.ops.rnn_cell_impl import (  # noqa: F401
    BasicLSTMCell,
    BasicRNNCell,
    GRUCell,
    LSTMCell,
    LSTMStateTuple,
    RNNCell,
)
from engine.ops.rnn_cell_wrappers import (  # noqa: F401
    DeviceWrapper,
    DropoutWrapper,
    MultiRNNCell,
    ResidualWrapper,
)

__all__ = [
    "BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell", "LSTMCell",
    "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper",
]
