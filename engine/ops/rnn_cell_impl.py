"""tf.nn.rnn_cell's cells, as TF1 writes them: the RNNCell base (state and output sizes,
zero_state, the scope a cell captures on its first call), BasicRNNCell, GRUCell,
BasicLSTMCell and LSTMCell (peepholes, cell clip, projection). Weight names, gate order
(i, j, f, o; r, u) and arithmetic are TF's, so the same weights give the same numbers."""

from __future__ import annotations

import collections
import logging
import warnings
from typing import Any

from engine import dtypes, nest
from engine.graph import Tensor, get_default_graph
from engine.layers.base import Layer
from engine.ops import array_ops, clip_ops, conv_ops, init_ops, math_ops, nn_ops
from engine.ops import variable_scope as vs
from engine.ops.core import constant_value, convert_to_tensor
from engine.ops.variables import GraphKeys
from engine.shapes import TensorShape, as_shape

_log = logging.getLogger(__name__)
_BIAS_VARIABLE_NAME = "bias"
_WEIGHTS_VARIABLE_NAME = "kernel"

# Activations a cell accepts by name (Keras' activations.get), besides any callable.
_ACTIVATIONS = {
    "tanh": math_ops.tanh, "sigmoid": math_ops.sigmoid, "relu": nn_ops.relu,
    "relu6": nn_ops.relu6, "elu": nn_ops.elu, "selu": nn_ops.selu,
    "softplus": nn_ops.softplus, "softsign": nn_ops.softsign, "linear": lambda x: x,
}

# Initializers a cell accepts by name (Keras' initializers.get), besides any callable.
_INITIALIZERS = {
    "glorot_uniform": init_ops.glorot_uniform_initializer,
    "glorot_normal": init_ops.glorot_normal_initializer,
    "zeros": init_ops.zeros_initializer, "ones": init_ops.ones_initializer,
    "random_normal": init_ops.random_normal_initializer,
    "random_uniform": init_ops.random_uniform_initializer,
    "truncated_normal": init_ops.truncated_normal_initializer,
}


def _activation(activation):
    if not activation:
        return math_ops.tanh
    if callable(activation):
        return activation
    if isinstance(activation, str) and activation in _ACTIVATIONS:
        return _ACTIVATIONS[activation]
    raise ValueError(f"Unknown activation function: '{activation}'. Known by name here: "
                     f"{', '.join(sorted(_ACTIVATIONS))}; or pass a callable.")


def _initializer(initializer):
    if initializer is None or callable(initializer):
        return initializer
    if isinstance(initializer, str) and initializer in _INITIALIZERS:
        return _INITIALIZERS[initializer]()
    raise ValueError(f"Unknown initializer: '{initializer}'. Known by name here: "
                     f"{', '.join(sorted(_INITIALIZERS))}; or pass an initializer object.")


# -- sizes and zero states ----------------------------------------------------------------

def _static_dims(value) -> list | None:
    """The dims of a size (int, TensorShape or int32 tensor) known at build time, None for
    each unknown one; None when even their number is unknown."""
    if not isinstance(value, Tensor):
        shape = as_shape([value] if isinstance(value, int) else value)
        return None if shape.ndims is None else shape.as_list()
    known = constant_value(value)
    if known is not None:
        return [int(d) for d in known.reshape(-1)]
    if value.shape.ndims == 0:
        return [None]
    if value.shape.ndims == 1 and value.shape[0] is not None:
        return [None] * value.shape[0]
    return None


def _dynamic_dims(value) -> Tensor | None:
    if isinstance(value, Tensor):
        if value.shape.ndims == 0:
            return array_ops.expand_dims(value, 0)
        if value.shape.ndims != 1:
            raise ValueError(f"Prefix tensor must be either a scalar or vector, but received "
                             f"tensor: {value}")
        return value
    dims = _static_dims(value)
    if dims is None or any(d is None for d in dims):
        return None
    return convert_to_tensor(dims, dtype=dtypes.int32)


def _concat(prefix, suffix, static: bool = False):
    """prefix ++ suffix, each an int, a TensorShape or an int32 tensor: a Python list (with
    None for unknown dims) when `static`, else an int32 shape tensor (TF's rnn_cell _concat)."""
    if static:
        p, s = _static_dims(prefix), _static_dims(suffix)
        return None if p is None or s is None else p + s
    p, s = _dynamic_dims(prefix), _dynamic_dims(suffix)
    if p is None or s is None:
        raise ValueError(f"Prefix or suffix can't be None. Received prefix = {prefix} and "
                         f"suffix = {suffix}")
    return array_ops.concat((p, s), 0)


def _zeros(batch_size, size, dtype) -> Tensor:
    static = _concat(batch_size, size, static=True)
    if static is not None and all(d is not None for d in static):
        return array_ops.zeros(static, dtype=dtype)
    out = array_ops.zeros(_concat(batch_size, size), dtype=dtype)
    if static is not None:
        out.set_shape(static)
    return out


def _zero_state_tensors(state_size, batch_size, dtype):
    return nest.map_structure(lambda s: _zeros(batch_size, s, dtype), state_size)


def _check_supported_dtypes(dtype) -> None:
    if dtype is None:
        return
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_complex):
        raise ValueError(f"RNN cell only supports floating point inputs, but received dtype: "
                         f"{dtype}")


def _check_rnn_cell_input_dtypes(values) -> None:
    for t in nest.flatten(values):
        _check_supported_dtypes(t.dtype)


def _known_depth(input_shape) -> int:
    shape = TensorShape(input_shape)
    depth = None if shape.ndims is None else shape[-1]
    if depth is None:
        raise ValueError(f"Expected inputs.shape[-1] to be known, received shape: {shape}")
    return depth


# -- the base classes -----------------------------------------------------------------------

def _hasattr(obj, name: str) -> bool:
    try:
        getattr(obj, name)
    except AttributeError:
        return False
    return True


def assert_like_rnncell(cell_name: str, cell) -> None:
    """TypeError unless `cell` has output_size, state_size, zero_state and is callable."""
    conditions = [_hasattr(cell, "output_size"), _hasattr(cell, "state_size"),
                  _hasattr(cell, "get_initial_state") or _hasattr(cell, "zero_state"),
                  callable(cell)]
    problems = ["'output_size' property is missing", "'state_size' property is missing",
                "either 'zero_state' or 'get_initial_state' method is required",
                "is not callable"]
    if not all(conditions):
        missing = [p for p, ok in zip(problems, conditions) if not ok]
        raise TypeError(f"The argument {cell_name!r} ({cell}) is not an RNNCell: "
                        f"{', '.join(missing)}.")


def _unique(variables: list) -> list:
    seen: set[int] = set()
    out = []
    for v in variables:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


class RNNCell(Layer):
    """An RNN cell: `(output, new_state) = cell(inputs, state)`. The first call captures the
    variable scope it runs in (so `rnn/basic_lstm_cell/kernel`) and every later call reuses
    it; `scope=` names the cell's scope instead."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        super().__init__(trainable=trainable, name=name, dtype=dtype, **kwargs)
        self._is_tf_rnn_cell = True

    def __call__(self, inputs, state, scope=None) -> tuple[Any, Any]:
        if scope is not None:
            with vs.variable_scope(scope, custom_getter=self._rnn_get_variable) as captured:
                return super().__call__(inputs, state, scope=captured)
        cell_scope = getattr(self, "rnncell_scope", None)
        if cell_scope is None:
            cell_scope = vs.variable_scope(vs.get_variable_scope(),
                                           custom_getter=self._rnn_get_variable)
            self.rnncell_scope = cell_scope
        with cell_scope:
            return super().__call__(inputs, state)

    def _rnn_get_variable(self, getter, *args, **kwargs):
        """Tracks the variables a cell's call() makes with tf.get_variable as its weights."""
        variable = getter(*args, **kwargs)
        trainable = any(variable is v for v in
                        get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES))
        target = self._trainable_weights if trainable else self._non_trainable_weights
        if all(variable is not v for v in target):
            target.append(variable)
        return variable

    def add_weight(self, *args, **kwargs):
        variable = super().add_weight(*args, **kwargs)
        # the custom getter has tracked it already
        self._trainable_weights = _unique(self._trainable_weights)
        self._non_trainable_weights = _unique(self._non_trainable_weights)
        return variable

    add_variable = add_weight

    @property
    def state_size(self):
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self):
        raise NotImplementedError("Abstract method")

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None) -> Any:
        if inputs is not None:
            inputs = convert_to_tensor(inputs, name="inputs")
            if batch_size is not None:
                static = batch_size if not isinstance(batch_size, Tensor) else \
                    _static_dims(batch_size)[0]
                if inputs.shape[0] != static:
                    raise ValueError(f"batch size from input tensor is different from the "
                                     f"input param. Input tensor batch: {inputs.shape[0]}, "
                                     f"batch_size: {batch_size}")
            if dtype is not None and inputs.dtype.base_dtype is not dtypes.as_dtype(dtype):
                raise ValueError(f"dtype from input tensor is different from the input "
                                 f"param. Input tensor dtype: {inputs.dtype}, dtype: {dtype}")
            batch_size = inputs.shape[0] or array_ops.shape(inputs)[0]
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError(f"batch_size and dtype cannot be None while constructing initial "
                             f"state: batch_size={batch_size}, dtype={dtype}")
        return self.zero_state(batch_size, dtype)

    def zero_state(self, batch_size, dtype) -> Any:
        """Zeros of shape [batch_size, s] for each s in state_size (same nesting)."""
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            return _zero_state_tensors(self.state_size, batch_size, dtype)


class LayerRNNCell(RNNCell):
    """A cell that creates its weights in build() (as a tf.layers layer does) and checks
    that its inputs are matrices."""

    def __call__(self, inputs, state, scope=None, *args, **kwargs):
        inputs = convert_to_tensor(inputs)
        ndims = inputs.shape.ndims
        if ndims is not None and ndims != 2:
            raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the layer: '
                             f"expected ndim=2, found ndim={ndims}. Full shape received: "
                             f"{inputs.shape}")
        return Layer.__call__(self, inputs, state, *args, scope=scope, **kwargs)


def _deprecated(name: str, keras: str) -> None:
    warnings.warn(f"`tf.nn.rnn_cell.{name}` is deprecated and will be removed in a future "
                  f"version. This class is equivalent as `tf.keras.layers.{keras}`, and will "
                  "be replaced by that in Tensorflow 2.0.", stacklevel=3)


def _matmul_bias(inputs, state, kernel, bias):
    gate_inputs = math_ops.matmul(array_ops.concat([inputs, state], 1), kernel)
    return conv_ops.bias_add(gate_inputs, bias)


# -- the cells --------------------------------------------------------------------------------

class BasicRNNCell(LayerRNNCell):
    """output = new_state = activation([inputs, state] @ kernel + bias)."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None,
                 **kwargs):
        _deprecated("BasicRNNCell", "SimpleRNNCell")
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self.dtype)
        self._num_units = num_units
        self._activation = _activation(activation)

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, input_shape) -> None:
        depth = _known_depth(input_shape)
        _check_supported_dtypes(self.dtype)
        self._kernel = self.add_weight(_WEIGHTS_VARIABLE_NAME,
                                       shape=[depth + self._num_units, self._num_units])
        self._bias = self.add_weight(_BIAS_VARIABLE_NAME, shape=[self._num_units],
                                     initializer=init_ops.zeros_initializer(dtype=self.dtype))
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        output = self._activation(_matmul_bias(inputs, state, self._kernel, self._bias))
        return output, output


class GRUCell(LayerRNNCell):
    """Gated recurrent unit: r, u = sigmoid([x, h] @ gates/kernel + gates/bias);
    c = activation([x, r * h] @ candidate/kernel + candidate/bias); h' = u * h + (1 - u) * c.
    The gate bias starts at 1 unless bias_initializer says otherwise."""

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None, **kwargs):
        _deprecated("GRUCell", "GRUCell")
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self.dtype)
        self._num_units = num_units
        self._activation = _activation(activation)
        self._kernel_initializer = _initializer(kernel_initializer)
        self._bias_initializer = _initializer(bias_initializer)

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, input_shape) -> None:
        depth = _known_depth(input_shape)
        _check_supported_dtypes(self.dtype)
        n = self._num_units
        bias_init = self._bias_initializer
        self._gate_kernel = self.add_weight(f"gates/{_WEIGHTS_VARIABLE_NAME}",
                                            shape=[depth + n, 2 * n],
                                            initializer=self._kernel_initializer)
        self._gate_bias = self.add_weight(
            f"gates/{_BIAS_VARIABLE_NAME}", shape=[2 * n],
            initializer=bias_init if bias_init is not None else
            init_ops.constant_initializer(1.0, dtype=self.dtype))
        self._candidate_kernel = self.add_weight(f"candidate/{_WEIGHTS_VARIABLE_NAME}",
                                                 shape=[depth + n, n],
                                                 initializer=self._kernel_initializer)
        self._candidate_bias = self.add_weight(
            f"candidate/{_BIAS_VARIABLE_NAME}", shape=[n],
            initializer=bias_init if bias_init is not None else
            init_ops.zeros_initializer(dtype=self.dtype))
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        value = math_ops.sigmoid(_matmul_bias(inputs, state, self._gate_kernel,
                                              self._gate_bias))
        r, u = array_ops.split(value=value, num_or_size_splits=2, axis=1)
        r_state = r * state
        c = self._activation(_matmul_bias(inputs, r_state, self._candidate_kernel,
                                          self._candidate_bias))
        new_h = u * state + (1 - u) * c
        return new_h, new_h


_LSTMStateTuple = collections.namedtuple("LSTMStateTuple", ("c", "h"))


class LSTMStateTuple(_LSTMStateTuple):
    """(c, h): an LSTM's cell state and its output, in that order."""

    __slots__ = ()

    @property
    def dtype(self):
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent dtypes for internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


def _lstm_state(state_is_tuple: bool, c_size: int, h_size: int):
    return LSTMStateTuple(c_size, h_size) if state_is_tuple else c_size + h_size


def _warn_concatenated(cell, state_is_tuple: bool) -> None:
    if not state_is_tuple:
        _log.warning("%s: Using a concatenated state is slower and will soon be deprecated.  "
                     "Use state_is_tuple=True.", cell)


class BasicLSTMCell(LayerRNNCell):
    """The baseline LSTM: i, j, f, o = split([x, h] @ kernel + bias);
    c' = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j); h' = tanh(c') * sigmoid(o)."""

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, **kwargs):
        _deprecated("BasicLSTMCell", "LSTMCell")
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self.dtype)
        _warn_concatenated(self, state_is_tuple)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self):
        return _lstm_state(self._state_is_tuple, self._num_units, self._num_units)

    @property
    def output_size(self):
        return self._num_units

    def build(self, input_shape) -> None:
        depth = _known_depth(input_shape)
        _check_supported_dtypes(self.dtype)
        n = self._num_units
        self._kernel = self.add_weight(_WEIGHTS_VARIABLE_NAME, shape=[depth + n, 4 * n])
        self._bias = self.add_weight(_BIAS_VARIABLE_NAME, shape=[4 * n],
                                     initializer=init_ops.zeros_initializer(dtype=self.dtype))
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        sigmoid = math_ops.sigmoid
        one = array_ops.constant(1, dtype=dtypes.int32)
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = array_ops.split(value=state, num_or_size_splits=2, axis=one)
        gate_inputs = _matmul_bias(inputs, h, self._kernel, self._bias)
        i, j, f, o = array_ops.split(value=gate_inputs, num_or_size_splits=4, axis=one)
        forget_bias_tensor = array_ops.constant(self._forget_bias, dtype=f.dtype)
        new_c = math_ops.add(math_ops.multiply(c, sigmoid(math_ops.add(f, forget_bias_tensor))),
                             math_ops.multiply(sigmoid(i), self._activation(j)))
        new_h = math_ops.multiply(self._activation(new_c), sigmoid(o))
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple else \
            array_ops.concat([new_c, new_h], 1)
        return new_h, new_state


class LSTMCell(LayerRNNCell):
    """The full LSTM: optional peepholes (w_f_diag, w_i_diag, w_o_diag), cell clipping, and a
    projection of the output (projection/kernel, [num_units, num_proj]) with its own clip."""

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None, **kwargs):
        _deprecated("LSTMCell", "LSTMCell")
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self.dtype)
        _warn_concatenated(self, state_is_tuple)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise NotImplementedError(f"{self}: num_unit_shards / num_proj_shards partition "
                                      "the weights, and partitioned variables are not "
                                      "supported here; leave them unset.")
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = _initializer(initializer)
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)
        h_size = num_proj if num_proj else num_units
        self._state_size = _lstm_state(state_is_tuple, num_units, h_size)
        self._output_size = h_size

    @property
    def state_size(self):
        return self._state_size

    @property
    def output_size(self):
        return self._output_size

    def build(self, input_shape) -> None:
        depth = _known_depth(input_shape)
        _check_supported_dtypes(self.dtype)
        n = self._num_units
        h_depth = n if self._num_proj is None else self._num_proj
        self._kernel = self.add_weight(_WEIGHTS_VARIABLE_NAME, shape=[depth + h_depth, 4 * n],
                                       initializer=self._initializer)
        self._bias = self.add_weight(_BIAS_VARIABLE_NAME, shape=[4 * n],
                                     initializer=init_ops.zeros_initializer(dtype=self.dtype))
        if self._use_peepholes:
            self._w_f_diag, self._w_i_diag, self._w_o_diag = (
                self.add_weight(name, shape=[n], initializer=self._initializer)
                for name in ("w_f_diag", "w_i_diag", "w_o_diag"))
        if self._num_proj is not None:
            self._proj_kernel = self.add_weight(f"projection/{_WEIGHTS_VARIABLE_NAME}",
                                                shape=[n, self._num_proj],
                                                initializer=self._initializer)
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        num_proj = self._num_units if self._num_proj is None else self._num_proj
        sigmoid = math_ops.sigmoid
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = array_ops.slice(state, [0, 0], [-1, self._num_units])
            m_prev = array_ops.slice(state, [0, self._num_units], [-1, num_proj])
        if inputs.shape[1] is None:
            raise ValueError(f"Could not infer input size from inputs.get_shape()[-1]."
                             f"Received input shape: {inputs.shape}")
        lstm_matrix = _matmul_bias(inputs, m_prev, self._kernel, self._bias)
        i, j, f, o = array_ops.split(value=lstm_matrix, num_or_size_splits=4, axis=1)
        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev
                 + sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = clip_ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else \
            array_ops.concat([c, m], 1)
        return m, new_state
