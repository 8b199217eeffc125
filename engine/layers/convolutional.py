"""tf.layers.conv2d / conv2d_transpose and their classes: HWIO kernels named `kernel`,
`bias` per filter, channels last (NHWC) or first (NCHW)."""

from __future__ import annotations

from engine import nn
from engine.layers import utils
from engine.layers.base import Layer
from engine.layers.utils import ZEROS
from engine.ops import array_ops, math_ops
from engine.ops.core import convert_to_tensor
from engine.shapes import TensorShape


class _Conv2DBase(Layer):
    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer=None,
                 bias_initializer=ZEROS, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.filters = int(filters)
        self.kernel_size = utils.normalize_tuple(kernel_size, 2, "kernel_size")
        self.strides = utils.normalize_tuple(strides, 2, "strides")
        self.padding = utils.normalize_padding(padding)
        self.data_format = utils.normalize_data_format(data_format)
        self.dilation_rate = utils.normalize_tuple(dilation_rate, 2, "dilation_rate")
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.kernel = self.bias = None

    @property
    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def _four(self, pair) -> list[int]:
        """A (height, width) pair as the 4 entries tf.nn wants in this data format."""
        if self.data_format == "channels_first":
            return [1, 1, pair[0], pair[1]]
        return [1, pair[0], pair[1], 1]

    def _kernel_shape(self, input_dim: int) -> list[int]:
        raise NotImplementedError

    def build(self, input_shape) -> None:
        input_shape = TensorShape(input_shape)
        if input_shape.ndims != 4:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim=4, found ndim={input_shape.ndims}. Full shape "
                             f"received: {input_shape}")
        input_dim = input_shape[self._channel_axis]
        if input_dim is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found "
                             "`None`.")
        utils.add_kernel_and_bias(self, self._kernel_shape(input_dim), self.filters)
        self.built = True

    def _finish(self, outputs):
        if self.use_bias:
            outputs = nn.bias_add(outputs, self.bias,
                                  data_format=utils.nn_format(self.data_format))
        if self.activation is not None:
            return self.activation(outputs)
        return outputs


class Conv2D(_Conv2DBase):
    """2-D convolution: kernel [kh, kw, in_channels, filters]."""

    def _kernel_shape(self, input_dim: int) -> list[int]:
        return list(self.kernel_size) + [input_dim, self.filters]

    def call(self, inputs):
        outputs = nn.conv2d(inputs, self.kernel, strides=self._four(self.strides),
                            padding=self.padding.upper(),
                            data_format=utils.nn_format(self.data_format),
                            dilations=self._four(self.dilation_rate))
        return self._finish(outputs)


def deconv_output_length(length, filter_size: int, padding: str, stride: int):
    if length is None:
        return None
    length *= stride
    if padding == "valid":
        length += max(filter_size - stride, 0)
    return length


class Conv2DTranspose(_Conv2DBase):
    """Transposed 2-D convolution (conv2d's gradient as a layer): kernel
    [kh, kw, filters, in_channels]; outputs grow by the stride."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=ZEROS,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, **kwargs)

    def _kernel_shape(self, input_dim: int) -> list[int]:
        return list(self.kernel_size) + [self.filters, input_dim]

    def _growth(self) -> tuple[list[int], list[int]]:
        """output_shape = shape(inputs) * scale + shift, one entry per NHWC/NCHW dim."""
        extra = [deconv_output_length(0, k, self.padding, s)
                 for k, s in zip(self.kernel_size, self.strides)]
        if self.data_format == "channels_first":
            return [1, 0, *self.strides], [0, self.filters, *extra]
        return [1, *self.strides, 0], [0, *extra, self.filters]

    def call(self, inputs):
        inputs = convert_to_tensor(inputs)
        scale, shift = self._growth()
        # Elementwise on shape(inputs), so an unknown batch (or height) still works.
        output_shape = math_ops.add(math_ops.multiply(array_ops.shape(inputs), scale), shift)
        outputs = nn.conv2d_transpose(inputs, self.kernel, output_shape,
                                      strides=self._four(self.strides),
                                      padding=self.padding.upper(),
                                      data_format=utils.nn_format(self.data_format))
        dims = inputs.shape.as_list()
        outputs.set_shape([None if d is None else d * a + b
                           for d, a, b in zip(dims, scale, shift)])
        return self._finish(outputs)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=ZEROS,
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
           kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
           reuse=None):
    """The functional form of Conv2D: variables `<name or conv2d_N>/kernel` and `/bias`."""
    layer = Conv2D(filters, kernel_size, strides=strides, padding=padding,
                   data_format=data_format, dilation_rate=dilation_rate, activation=activation,
                   use_bias=use_bias, kernel_initializer=kernel_initializer,
                   bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                   bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                   kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                   trainable=trainable, name=name, dtype=convert_to_tensor(inputs).dtype,
                   _scope=name, _reuse=reuse)
    return layer.apply(inputs)


def conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=ZEROS,
                     kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                     kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                     reuse=None):
    """The functional form of Conv2DTranspose."""
    layer = Conv2DTranspose(filters, kernel_size, strides=strides, padding=padding,
                            data_format=data_format, activation=activation, use_bias=use_bias,
                            kernel_initializer=kernel_initializer,
                            bias_initializer=bias_initializer,
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer,
                            kernel_constraint=kernel_constraint,
                            bias_constraint=bias_constraint, trainable=trainable, name=name,
                            dtype=convert_to_tensor(inputs).dtype, _scope=name, _reuse=reuse)
    return layer.apply(inputs)
