"""Argument normalization shared by the layers (TF's layers/utils.py), and `select`, which
stands in for tf.cond where a layer's `training` is a tensor."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.graph import Tensor
from engine.ops import array_ops, init_ops
from engine.ops.core import constant_value, convert_to_tensor

# Default initializers of the layers' arguments (initializers keep no state, and
# tf.get_variable passes each variable's dtype).
ZEROS = init_ops.zeros_initializer()
ONES = init_ops.ones_initializer()


def normalize_tuple(value, n: int, name: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    try:
        values = tuple(value)
    except TypeError:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: "
                         f"{value}") from None
    if len(values) != n or not all(isinstance(v, (int, np.integer)) for v in values):
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: "
                         f"{value}")
    return tuple(int(v) for v in values)


def normalize_padding(value: str) -> str:
    padding = value.lower() if isinstance(value, str) else value
    if padding not in ("valid", "same"):
        raise ValueError('The `padding` argument must be one of "valid", "same" (or "causal", '
                         f"only for `Conv1D). Received: {value}")
    return padding


def normalize_data_format(value: str | None) -> str:
    data_format = (value or "channels_last").lower()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError('The `data_format` argument must be one of "channels_first", '
                         f'"channels_last". Received: {value}')
    return data_format


def nn_format(data_format: str) -> str:
    return "NCHW" if data_format == "channels_first" else "NHWC"


def static_bool(value) -> bool | None:
    """True/False when `training` is a Python bool or a constant tensor, else None (TF's
    tf_utils.constant_value, which smart_cond uses to skip building a tf.cond)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, Tensor):
        known = constant_value(value)
        return None if known is None else bool(known)
    if value is None:
        return None
    return bool(value)


def select(pred, if_true, if_false):
    """pred ? if_true : if_false for a scalar bool tensor `pred` (SelectV2, which broadcasts
    the scalar). Both branches are computed: this engine has no tf.cond yet; unlike an
    arithmetic blend, a non-finite value in the branch not taken does not leak through."""
    if_true = convert_to_tensor(if_true)
    if_false = convert_to_tensor(if_false, dtype=if_true.dtype.base_dtype)
    pred = convert_to_tensor(pred, dtype=dtypes.bool)
    return array_ops.where_v2(pred, if_true, if_false)


def smart_select(pred, true_fn, false_fn):
    """TF's smart_cond without a tf.cond: one branch when `pred` is known, else both and
    `select`."""
    known = static_bool(pred)
    if known is True:
        return true_fn()
    if known is False:
        return false_fn()
    return select(pred, true_fn(), false_fn())


def add_kernel_and_bias(layer, kernel_shape, units: int) -> None:
    """The `kernel` (and, with use_bias, the `[units]` `bias`) weights of Dense and the conv
    layers, from the layer's own initializer, regularizer and constraint attributes."""
    layer.kernel = layer.add_weight("kernel", shape=kernel_shape,
                                    initializer=layer.kernel_initializer,
                                    regularizer=layer.kernel_regularizer,
                                    constraint=layer.kernel_constraint, dtype=layer.dtype)
    if layer.use_bias:
        layer.bias = layer.add_weight("bias", shape=[units], initializer=layer.bias_initializer,
                                      regularizer=layer.bias_regularizer,
                                      constraint=layer.bias_constraint, dtype=layer.dtype)
