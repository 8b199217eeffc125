"""tf.layers.max_pooling2d / average_pooling2d and their classes (no weights)."""

from __future__ import annotations

from engine import nn
from engine.layers import utils
from engine.layers.base import Layer


class _Pooling2D(Layer):
    _nn_function = ""     # the tf.nn pooling function this layer applies

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = utils.normalize_tuple(pool_size, 2, "pool_size")
        self.strides = utils.normalize_tuple(strides, 2, "strides")
        self.padding = utils.normalize_padding(padding)
        self.data_format = utils.normalize_data_format(data_format)

    def _four(self, pair) -> list[int]:
        if self.data_format == "channels_first":
            return [1, 1, pair[0], pair[1]]
        return [1, pair[0], pair[1], 1]

    def call(self, inputs):
        pool = getattr(nn, self._nn_function)
        return pool(inputs, ksize=self._four(self.pool_size), strides=self._four(self.strides),
                    padding=self.padding.upper(), data_format=utils.nn_format(self.data_format))


class MaxPooling2D(_Pooling2D):
    """The maximum of each pool_size window, moved by strides."""
    _nn_function = "max_pool"


class AveragePooling2D(_Pooling2D):
    """The mean of each pool_size window (SAME padding is left out of the count)."""
    _nn_function = "avg_pool"


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    return MaxPooling2D(pool_size, strides, padding=padding, data_format=data_format,
                        name=name).apply(inputs)


def average_pooling2d(inputs, pool_size, strides, padding="valid",
                      data_format="channels_last", name=None):
    return AveragePooling2D(pool_size, strides, padding=padding, data_format=data_format,
                            name=name).apply(inputs)
