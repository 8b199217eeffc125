"""tf.contrib.layers: the weight regularizers (l1, l2, l1_l2, sum, apply_regularization) and
the contrib initializers (xavier_initializer, variance_scaling_initializer)."""

from __future__ import annotations

import math
import numbers

from engine import dtypes, nn
from engine.graph import get_default_graph
from engine.ops import array_ops, math_ops, random_ops
from engine.ops.core import convert_to_tensor, graph_of
from engine.ops.variables import GraphKeys

__all__ = [
    "apply_regularization",
    "l1_l2_regularizer",
    "l1_regularizer",
    "l2_regularizer",
    "sum_regularizer",
    "variance_scaling_initializer",
    "xavier_initializer",
    "xavier_initializer_conv2d",
]


def _check_scale(scale, what: str = "scale") -> bool:
    """TF's checks; False means a zero scale, which disables the regularizer."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"{what} cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}.")
        if scale == 0.:
            return False
    return True


def _scaled(scope, default_name: str, scale, weights, penalty):
    g = graph_of(weights)
    with g.as_default(), g.name_scope(scope or default_name) as name:
        my_scale = convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
        return math_ops.multiply(my_scale, penalty(weights), name=name)


def _l1_loss(weights):
    return math_ops.reduce_sum(math_ops.abs(weights))


def l1_regularizer(scale, scope=None):
    """weights -> scale * sum(|w|)."""
    if not _check_scale(scale):
        return lambda _: None
    return lambda weights, name=None: _scaled(scope, "l1_regularizer", scale, weights,
                                              _l1_loss)


def l2_regularizer(scale, scope=None):
    """weights -> scale * sum(w ** 2) / 2 (tf.nn.l2_loss, so note the half)."""
    if not _check_scale(scale):
        return lambda _: None
    return lambda weights: _scaled(scope, "l2_regularizer", scale, weights, nn.l2_loss)


def sum_regularizer(regularizer_list, scope=None):
    """The sum of several regularizers' penalties (None entries are skipped)."""
    regularizers = [r for r in regularizer_list if r is not None]
    if not regularizers:
        return None

    def sum_reg(weights):
        g = graph_of(weights)
        with g.as_default(), g.name_scope(scope or "sum_regularizer") as name:
            tensors = [t for t in (r(weights) for r in regularizers) if t is not None]
            return math_ops.add_n(tensors, name=name) if tensors else None
    return sum_reg


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """weights -> scale_l1 * sum(|w|) + scale_l2 * sum(w ** 2) / 2."""
    if isinstance(scale_l1, numbers.Integral):
        raise ValueError(f"scale_l1 cannot be an integer: {scale_l1}")
    if isinstance(scale_l2, numbers.Integral):
        raise ValueError(f"scale_l2 cannot be an integer: {scale_l2}")
    scope = scope or "l1_l2_regularizer"
    if scale_l1 == 0.:
        return l2_regularizer(scale_l2, scope)
    if scale_l2 == 0.:
        return l1_regularizer(scale_l1, scope)
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def apply_regularization(regularizer, weights_list=None):
    """Sums regularizer(w) over weights_list (default: the WEIGHTS collection) and adds the
    sum to REGULARIZATION_LOSSES."""
    if not weights_list:
        weights_list = get_default_graph().get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    g = graph_of(weights_list)
    with g.as_default(), g.name_scope("get_regularization_penalty") as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else array_ops.constant(0.0) for p in penalties]
        for p in penalties:
            if p.shape.ndims != 0:
                raise ValueError(f"regularizer must return a scalar Tensor instead of a Tensor "
                                 f"with rank {p.shape.ndims}.")
        total = math_ops.add_n(penalties, name=scope)
    g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total


def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                                 dtype=dtypes.float32):
    """contrib's form (not tf.variance_scaling_initializer): truncated normal with stddev
    sqrt(1.3 * factor / n), or uniform with limit sqrt(3 * factor / n)."""
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")

    def _initializer(shape, dtype=dtype, partition_info=None):
        dtype = dtypes.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        shape = list(shape)
        fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1]) if shape else 1.0
        fan_out = float(shape[-1]) if shape else 1.0
        for dim in shape[:-2]:
            fan_in *= float(dim)
            fan_out *= float(dim)
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return random_ops.random_uniform(shape, -limit, limit, dtype, seed=seed)
        return random_ops.truncated_normal(shape, 0.0, math.sqrt(1.3 * factor / n), dtype,
                                           seed=seed)
    return _initializer


def xavier_initializer(uniform=True, seed=None, dtype=dtypes.float32):
    """Glorot's initializer in contrib's spelling."""
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform,
                                        seed=seed, dtype=dtype)


xavier_initializer_conv2d = xavier_initializer
