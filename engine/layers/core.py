"""tf.layers.dense / flatten / dropout and their classes (Dense, Flatten, Dropout)."""

from __future__ import annotations

import numpy as np

from engine import nn
from engine.layers import utils
from engine.layers.base import Layer
from engine.layers.utils import ZEROS
from engine.ops import array_ops, math_ops
from engine.ops.core import convert_to_tensor
from engine.shapes import TensorShape


class Dense(Layer):
    """outputs = activation(inputs @ kernel + bias); kernel [in, units], bias [units]. Inputs
    of rank > 2 are multiplied along their last axis."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=ZEROS, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.kernel = self.bias = None

    def build(self, input_shape) -> None:
        input_shape = TensorShape(input_shape)
        if input_shape.ndims is None or input_shape[-1] is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. "
                             "Found `None`.")
        utils.add_kernel_and_bias(self, [input_shape[-1], self.units], self.units)
        self.built = True

    def call(self, inputs):
        inputs = convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if rank is not None and rank > 2:
            outputs = _tensordot_last_axis(inputs, self.kernel, self.units)
        else:
            outputs = math_ops.matmul(inputs, self.kernel)
        if self.use_bias:
            outputs = nn.bias_add(outputs, self.bias)
        if self.activation is not None:
            return self.activation(outputs)
        return outputs


def _tensordot_last_axis(inputs, kernel, units: int):
    """inputs [..., in] times kernel [in, units]: flattened to a matrix product. The dims
    between the batch and the last must be known (no dynamic shape slicing yet)."""
    dims = inputs.shape.as_list()
    if any(d is None for d in dims[1:]):
        raise NotImplementedError(f"Dense on {inputs.name} of shape {inputs.shape}: only the "
                                  "first dimension of a rank > 2 input may be unknown.")
    g = inputs.graph
    with g.name_scope("Tensordot"):
        flat = array_ops.reshape(inputs, [-1, dims[-1]])
        product = math_ops.matmul(flat, kernel)
        outputs = array_ops.reshape(product, [-1] + dims[1:-1] + [units])
    outputs.set_shape(dims[:-1] + [units])
    return outputs


class Flatten(Layer):
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]."""

    def __init__(self, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = utils.normalize_data_format(data_format)

    def call(self, inputs):
        inputs = convert_to_tensor(inputs)
        shape = inputs.shape
        if self.data_format == "channels_first" and (shape.ndims is None or shape.ndims > 2):
            raise NotImplementedError("Flatten with data_format='channels_first' needs a "
                                      "Transpose op, which this engine does not have yet.")
        if shape.ndims is None or any(d is None for d in shape.as_list()[1:]):
            raise NotImplementedError(f"Flatten of {inputs.name} with shape {shape}: only the "
                                      "batch dimension may be unknown.")
        size = int(np.prod(shape.as_list()[1:])) if shape.ndims > 1 else 1
        outputs = array_ops.reshape(inputs, [-1, size])
        outputs.set_shape([shape[0] if shape.ndims else None, size])
        return outputs


class Dropout(Layer):
    """tf.nn.dropout(inputs, rate) when training, the inputs unchanged otherwise. A tensor
    `training` computes both and picks one with a select (no tf.cond here)."""

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs, training=False):
        def dropped():
            return nn.dropout(inputs, rate=self.rate, noise_shape=self.noise_shape,
                              seed=self.seed)

        return utils.smart_select(training, dropped, lambda: array_ops.identity(inputs))


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=ZEROS, kernel_regularizer=None,
          bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None):
    """The functional form of Dense: variables `<name or dense_N>/kernel` and `/bias`."""
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                  trainable=trainable, name=name, dtype=convert_to_tensor(inputs).dtype,
                  _scope=name, _reuse=reuse)
    return layer.apply(inputs)


def flatten(inputs, name=None, data_format="channels_last"):
    return Flatten(name=name, data_format=data_format).apply(inputs)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Dropout only when `training` (a bool or a bool tensor) is true."""
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name).apply(
        inputs, training=training)
