"""The cells built from other cells, as TF1's rnn_cell_impl: MultiRNNCell (layers stacked in
`cell_<i>` scopes), DropoutWrapper (input, state and output dropout, per step or
variational), ResidualWrapper and DeviceWrapper. A wrapper adds no variable scope of its
own, so a wrapped cell's weights keep the names they would have unwrapped."""

from __future__ import annotations

import hashlib
import logging
import numbers

from engine import nest
from engine.graph import get_default_graph
from engine.layers.base import Layer
from engine.ops import array_ops, math_ops, random_ops
from engine.ops import variable_scope as vs
from engine.ops.core import constant_value, convert_to_tensor
from engine.ops.rnn_cell_impl import LSTMStateTuple, RNNCell, assert_like_rnncell
from engine.shapes import TensorShape

_log = logging.getLogger(__name__)


class MultiRNNCell(RNNCell):
    """Cells applied in order, each on the previous one's output; cell i runs in variable
    scope `cell_<i>` and its state is the i-th element of the state tuple."""

    def __init__(self, cells, state_is_tuple=True):
        _log.warning("`tf.nn.rnn_cell.MultiRNNCell` is deprecated. This class is equivalent "
                     "as `tf.keras.layers.StackedRNNCells`, and will be replaced by that in "
                     "Tensorflow 2.0.")
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not nest.is_nested(cells):
            raise TypeError(f"cells must be a list or tuple, but received: {cells}.")
        if len({id(cell) for cell in cells}) < len(cells):
            _log.warning("At least two cells provided to MultiRNNCell are the same object and "
                         "will share weights.")
        self._cells = cells
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(nest.is_nested(c.state_size) for c in cells):
            raise ValueError(f"Some cells return tuples of states, but the flag state_is_tuple "
                             f"is not set. State sizes are: {[c.state_size for c in cells]}")

    @property
    def state_size(self):
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            if self._state_is_tuple:
                return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return super().zero_state(batch_size, dtype)

    @property
    def trainable_weights(self) -> list:
        if not self.trainable:
            return []
        return [w for cell in self._cells if isinstance(cell, Layer)
                for w in cell.trainable_weights]

    @property
    def non_trainable_weights(self) -> list:
        weights = [w for cell in self._cells if isinstance(cell, Layer)
                   for w in cell.non_trainable_weights]
        if not self.trainable:
            return [w for cell in self._cells if isinstance(cell, Layer)
                    for w in cell.trainable_weights] + weights
        return weights

    @property
    def weights(self) -> list:
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    def call(self, inputs, state):
        position = 0
        current = inputs
        new_states = []
        for i, cell in enumerate(self._cells):
            with vs.variable_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    if not nest.is_nested(state):
                        raise ValueError(f"Expected state to be a tuple of length "
                                         f"{len(self.state_size)}, but received: {state}")
                    cell_state = state[i]
                else:
                    cell_state = array_ops.slice(state, [0, position], [-1, cell.state_size])
                    position += cell.state_size
                current, new_state = cell(current, cell_state)
                new_states.append(new_state)
        if self._state_is_tuple:
            return current, tuple(new_states)
        return current, array_ops.concat(new_states, 1)


class _RNNCellWrapperV1(RNNCell):
    """A cell that runs another cell's __call__ (so in the wrapped cell's own scope)."""

    def __init__(self, cell, *args, **kwargs):
        super().__init__(*args, **kwargs)
        assert_like_rnncell("cell", cell)
        self.cell = cell

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        raise NotImplementedError

    def __call__(self, inputs, state, scope=None):
        return self._call_wrapped_cell(inputs, state, cell_call_fn=self.cell.__call__,
                                       scope=scope)

    @property
    def state_size(self):
        return self.cell.state_size

    @property
    def output_size(self):
        return self.cell.output_size

    @property
    def trainable_weights(self) -> list:
        return self.cell.trainable_weights if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        return self.cell.non_trainable_weights

    @property
    def weights(self) -> list:
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    def zero_state(self, batch_size, dtype):
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            return self.cell.zero_state(batch_size, dtype)


def _default_dropout_state_filter_visitor(substate):
    """Dropout on every state except an LSTM's memory c."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _enumerated_map_structure_up_to(shallow, map_fn, *args):
    index = [0]

    def numbered(*inner):
        out = map_fn(index[0], *inner)
        index[0] += 1
        return out
    return nest.map_structure_up_to(shallow, numbered, *args)


def _should_dropout(p) -> bool:
    return not isinstance(p, float) or p < 1


class DropoutWrapper(_RNNCellWrapperV1):
    """Dropout on the cell's inputs, outputs and new state (never on an LSTM's c unless
    dropout_state_filter_visitor says so). Keep probabilities may be tensors. With
    variational_recurrent=True one mask (drawn once per session step) serves every time
    step; input_size and dtype are then required."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None, **kwargs):
        super().__init__(cell, dtype=dtype, **kwargs)
        if dropout_state_filter_visitor is not None and \
                not callable(dropout_state_filter_visitor):
            raise TypeError(f"dropout_state_filter_visitor must be callable. Received: "
                            f"{dropout_state_filter_visitor}")
        self._dropout_state_filter = (dropout_state_filter_visitor
                                      or _default_dropout_state_filter_visitor)
        with get_default_graph().name_scope("DropoutWrapperInit"):
            for prob, attr in ((input_keep_prob, "input_keep_prob"),
                               (state_keep_prob, "state_keep_prob"),
                               (output_keep_prob, "output_keep_prob")):
                setattr(self, f"_{attr}", _keep_prob(prob, attr))
        self._variational_recurrent = variational_recurrent
        self._input_size = input_size
        self._seed = seed
        self._recurrent_input_noise = None
        self._recurrent_state_noise = None
        self._recurrent_output_noise = None
        if variational_recurrent:
            self._make_recurrent_noise(cell, input_size, dtype)

    def _make_recurrent_noise(self, cell, input_size, dtype) -> None:
        if dtype is None:
            raise ValueError("When variational_recurrent=True, dtype must be provided")

        def batch_noise(size, inner_seed):
            shape = [1] + TensorShape([size] if isinstance(size, int) else size).as_list()
            return random_ops.random_uniform(shape, seed=inner_seed, dtype=dtype)

        keep = self._input_keep_prob
        if not isinstance(keep, numbers.Real) or keep < 1.0:
            if input_size is None:
                raise ValueError("When variational_recurrent=True and input_keep_prob < 1.0 or "
                                 "is unknown, input_size must be provided")
            self._recurrent_input_noise = _enumerated_map_structure_up_to(
                input_size, lambda i, s: batch_noise(s, self._gen_seed("input", i)), input_size)
        self._recurrent_state_noise = _enumerated_map_structure_up_to(
            cell.state_size, lambda i, s: batch_noise(s, self._gen_seed("state", i)),
            cell.state_size)
        self._recurrent_output_noise = _enumerated_map_structure_up_to(
            cell.output_size, lambda i, s: batch_noise(s, self._gen_seed("output", i)),
            cell.output_size)

    def _gen_seed(self, salt_prefix: str, index: int) -> int | None:
        """TF's per-tensor seed: md5 of the wrapper's seed and a salt, so masks differ."""
        if self._seed is None:
            return None
        text = (str(self._seed) + f"{salt_prefix}_{index}").encode("utf-8")
        return int(hashlib.md5(text).hexdigest()[:8], 16) & 0x7FFFFFFF

    @property
    def wrapped_cell(self):
        return self.cell

    def build(self, input_shape) -> None:
        self.cell.build(input_shape)
        self.built = True

    def _dropout(self, values, salt_prefix, recurrent_noise, keep_prob, shallow=None):
        shallow = values if shallow is None else shallow
        if not self._variational_recurrent:
            def per_step(i, do_dropout, v):
                if not isinstance(do_dropout, bool) or do_dropout:
                    return random_ops.dropout(v, rate=1.0 - keep_prob,
                                              seed=self._gen_seed(salt_prefix, i))
                return v
            return _enumerated_map_structure_up_to(shallow, per_step, shallow, values)

        def variational(i, do_dropout, v, noise):
            if not isinstance(do_dropout, bool) or do_dropout:
                binary = math_ops.floor(keep_prob + noise)
                out = math_ops.divide(v, keep_prob) * binary
                out.set_shape(v.shape)
                return out
            return v
        return _enumerated_map_structure_up_to(shallow, variational, shallow, values,
                                               recurrent_noise)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        if _should_dropout(self._input_keep_prob):
            inputs = self._dropout(inputs, "input", self._recurrent_input_noise,
                                   self._input_keep_prob)
        output, new_state = cell_call_fn(inputs, state, **kwargs)
        if _should_dropout(self._state_keep_prob):
            shallow = nest.get_traverse_shallow_structure(self._dropout_state_filter, new_state)
            new_state = self._dropout(new_state, "state", self._recurrent_state_noise,
                                      self._state_keep_prob, shallow)
        if _should_dropout(self._output_keep_prob):
            output = self._dropout(output, "output", self._recurrent_output_noise,
                                   self._output_keep_prob)
        return output, new_state


def _keep_prob(prob, attr: str):
    """A keep probability known at build time as a float (checked to lie in [0, 1]), else
    the tensor."""
    tensor = convert_to_tensor(prob)
    known = constant_value(tensor)
    if known is None:
        return tensor
    if known < 0 or known > 1:
        raise ValueError(f"Parameter {attr} must be between 0 and 1. Received {known}")
    return float(known)


class ResidualWrapper(_RNNCellWrapperV1):
    """output = inputs + cell output (or residual_fn(inputs, output)); the state is the
    cell's."""

    def __init__(self, cell, residual_fn=None, **kwargs):
        super().__init__(cell, **kwargs)
        self._residual_fn = residual_fn

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        outputs, new_state = cell_call_fn(inputs, state, **kwargs)

        def default_residual_fn(inputs, outputs):
            nest.assert_same_structure(inputs, outputs)
            for inp, out in zip(nest.flatten(inputs), nest.flatten(outputs)):
                if not convert_to_tensor(inp).shape.is_compatible_with(out.shape):
                    raise ValueError(f"Shapes {inp.shape} and {out.shape} are incompatible "
                                     "(ResidualWrapper adds the cell's input to its output).")
            return nest.map_structure(lambda inp, out: inp + out, inputs, outputs)
        return (self._residual_fn or default_residual_fn)(inputs, outputs), new_state


class DeviceWrapper(_RNNCellWrapperV1):
    """Runs the wrapped cell (its weights, its ops, its zero state) under tf.device(device)."""

    def __init__(self, cell, device, **kwargs):
        super().__init__(cell, **kwargs)
        self._device = device

    def zero_state(self, batch_size, dtype):
        g = get_default_graph()
        with g.name_scope(type(self).__name__ + "ZeroState"), g.device(self._device):
            return self.cell.zero_state(batch_size, dtype)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        with get_default_graph().device(self._device):
            return cell_call_fn(inputs, state, **kwargs)

