"""tf.nn functions TF builds from other ops (its nn_impl.py): batch_normalization, moments,
l2_normalize, the sigmoid and weighted cross entropies, xw_plus_b and relu_layer, with TF's
formulas, so their values and gradients (including at the kinks) are TF's."""

from __future__ import annotations

from engine import dtypes
from engine.ops import array_ops as A
from engine.ops import conv_ops as C
from engine.ops import math_ops as M
from engine.ops import nn_ops as N
from engine.ops.core import convert_to_tensor, graph_of, op_scope

# The names tf.nn exports from this module (engine/nn.py star-imports it).
__all__ = [
    "batch_normalization",
    "l2_normalize",
    "moments",
    "relu_layer",
    "sigmoid_cross_entropy_with_logits",
    "weighted_cross_entropy_with_logits",
    "xw_plus_b",
]


def _rsqrt(x):
    return M.reciprocal(M.sqrt(x))


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset, in TF's op order:
    x * inv + (offset - mean * inv) with inv = scale * rsqrt(variance + epsilon)."""
    g = graph_of(x, mean, variance, offset, scale)
    with op_scope(g, name, "batchnorm"):
        x = convert_to_tensor(x)
        inv = _rsqrt(M.add(variance, variance_epsilon))
        if scale is not None:
            inv = M.multiply(inv, scale)
        shift = M.negative(M.multiply(mean, inv)) if offset is None else \
            M.subtract(offset, M.multiply(mean, inv))
        return M.add(M.multiply(x, A.cast(inv, x.dtype.base_dtype)),
                     A.cast(shift, x.dtype.base_dtype))


def _squeeze_axes(t, axes):
    """Drops the size-1 axes a keepdims reduction left (a Sum over them changes nothing)."""
    return M.reduce_sum(t, axes)


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of x over `axes`; the variance is the population (biased) one, and
    no gradient flows through the mean it subtracts, as in TF."""
    keep = keepdims if keepdims is not None else bool(keep_dims)
    g = graph_of(x)
    with op_scope(g, name, "moments"):
        x = convert_to_tensor(x)
        y = A.cast(x, dtypes.float32) if x.dtype.base_dtype is dtypes.float16 else x
        mean = M.reduce_mean(y, axes, keepdims=True, name="mean")
        variance = M.reduce_mean(M.squared_difference(y, A.stop_gradient(mean)), axes,
                                 keepdims=True, name="variance")
        if not keep:
            mean, variance = _squeeze_axes(mean, axes), _squeeze_axes(variance, axes)
        if x.dtype.base_dtype is dtypes.float16:
            return A.cast(mean, dtypes.float16), A.cast(variance, dtypes.float16)
        return mean, variance


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x ** 2, axis), epsilon))."""
    axis = dim if axis is None else axis
    g = graph_of(x)
    with op_scope(g, name, "l2_normalize") as scope:
        x = convert_to_tensor(x, name="x")
        square_sum = M.reduce_sum(M.square(x), axis, keepdims=True)
        inv_norm = _rsqrt(M.maximum(square_sum, epsilon))
        return M.multiply(x, inv_norm, name=scope)


def _same_shape(labels, logits) -> None:
    if not labels.shape.is_compatible_with(logits.shape):
        raise ValueError("`logits` and `labels` must have the same shape, received "
                         f"({logits.shape} vs {labels.shape}).")


def _at_least_zero(x):
    """1.0 where x >= 0, else 0.0 (TF's `logits >= 0` select mask, as a factor)."""
    one = A.ones_like(x)
    return M.subtract(one, A.cast(M.less(x, A.zeros_like(x)), x.dtype.base_dtype))


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """max(x, 0) - x * z + log(1 + exp(-abs(x))) for logits x and labels z, with TF's
    gradient at x = 0 (sigmoid(0) - z)."""
    if _sentinel is not None:
        raise ValueError("Only call `sigmoid_cross_entropy_with_logits` with named arguments "
                         "(labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    g = graph_of(labels, logits)
    with op_scope(g, name, "logistic_loss") as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, dtype=logits.dtype.base_dtype, name="labels")
        _same_shape(labels, logits)
        cond = _at_least_zero(logits)
        relu_logits = M.multiply(logits, cond)
        neg_abs_logits = M.multiply(logits, M.subtract(A.ones_like(cond), M.add(cond, cond)))
        return M.add(M.subtract(relu_logits, M.multiply(logits, labels)),
                     N.softplus(neg_abs_logits), name=scope)


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None,
                                       targets=None):
    """sigmoid_cross_entropy_with_logits with the positive term weighted by pos_weight:
    (1 - z) * x + (1 + (q - 1) * z) * (log(1 + exp(-abs(x))) + max(-x, 0))."""
    labels = targets if labels is None else labels
    g = graph_of(labels, logits, pos_weight)
    with op_scope(g, name, "logistic_loss") as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, dtype=logits.dtype.base_dtype, name="labels")
        _same_shape(labels, logits)
        pos_weight = convert_to_tensor(pos_weight, dtype=logits.dtype.base_dtype,
                                       name="pos_weight")
        one = A.ones_like(labels)
        log_weight = M.add(one, M.multiply(M.subtract(pos_weight, 1.0), labels))
        softplus_part = M.add(N.softplus(M.negative(M.abs(logits))),
                              N.relu(M.negative(logits)))
        return M.add(M.multiply(M.subtract(one, labels), logits),
                     M.multiply(log_weight, softplus_part), name=scope)


def xw_plus_b(x, weights, biases, name=None):
    """matmul(x, weights) + biases, the bias added by a BiasAdd named after the scope."""
    g = graph_of(x, weights, biases)
    with op_scope(g, name, "xw_plus_b") as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, name="weights")
        biases = convert_to_tensor(biases, name="biases")
        return C.bias_add(M.matmul(x, weights), biases, name=scope)


def relu_layer(x, weights, biases, name=None):
    """relu(matmul(x, weights) + biases)."""
    g = graph_of(x, weights, biases)
    with op_scope(g, name, "relu_layer") as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, name="weights")
        biases = convert_to_tensor(biases, name="biases")
        return N.relu(C.bias_add(M.matmul(x, weights), biases), name=scope)
