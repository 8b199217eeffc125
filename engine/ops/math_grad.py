"""Gradient rules of the math ops added beyond the core set (unary functions, floor division
and remainders, clipping, Min/Prod, scans, batch matmul, the fused RsqrtGrad and its own
second-order rule), side by side in one table, as TF's math_grad.py defines them."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.ops import array_ops as A
from engine.ops import math_ops as M
from engine.ops.core import constant_value
from engine.ops.reduction_ops import is_all_axes, reduced_shape


def _static_broadcast_axes(out_dims: list, in_dims: list) -> list[int]:
    """The axes of a broadcast result that an input of shape `in_dims` was stretched along."""
    lead = len(out_dims) - len(in_dims)
    return list(range(lead)) + [lead + i for i, d in enumerate(in_dims)
                                if d == 1 and out_dims[lead + i] != 1]


def sum_to(grad, x):
    """`grad` (shaped like a broadcast result) summed back to the shape of input `x`."""
    if grad.shape.is_fully_defined() and x.shape.is_fully_defined():
        if grad.shape == x.shape:
            return grad
        axes = _static_broadcast_axes(grad.shape.as_list(), x.shape.as_list())
        total = M.reduce_sum(grad, axes) if axes else grad
        return A.reshape(total, np.asarray(x.shape.as_list(), dtype=np.int32))
    sx = A.shape(x)
    _, rx = M.broadcast_gradient_args(A.shape(grad), sx)
    return A.reshape(M.reduce_sum(grad, rx), sx)


def _const(value, like):
    return A.constant(value, dtype=like.dtype.base_dtype)


# -- unary functions -------------------------------------------------------------------------

def _sin_grad(op, grad):
    return [M.multiply(grad, M.cos(op.inputs[0]))]


def _cos_grad(op, grad):
    return [M.negative(M.multiply(grad, M.sin(op.inputs[0])))]


def _log1p_grad(op, grad):
    x = op.inputs[0]
    return [M.multiply(grad, M.reciprocal(M.add(_const(1, x), x)))]


def _expm1_grad(op, grad):
    return [M.multiply(grad, M.exp(op.inputs[0]))]


def _erf_grad(op, grad):
    x = op.inputs[0]
    two_over_root_pi = _const(2 / np.sqrt(np.pi), x)
    return [M.multiply(M.multiply(grad, two_over_root_pi), M.exp(M.negative(M.square(x))))]


def _fused(op_type: str, first, second):
    return first.graph.create_op(op_type, [first, second], {"T": first.dtype.base_dtype},
                                 name=op_type).outputs[0]


def _rsqrt_grad(op, grad):
    return [_fused("RsqrtGrad", op.outputs[0], grad)]


def _rsqrt_grad_grad(op, grad):
    """RsqrtGrad(y, dy) = -dy y^3 / 2: d/dy = -3/2 dy y^2, d/d(dy) = RsqrtGrad(y, .)."""
    y, dy = op.inputs
    grad_y = M.multiply(M.multiply(M.multiply(_const(-1.5, y), grad), dy), M.square(y))
    return grad_y, _fused("RsqrtGrad", y, grad)


def _no_gradient(op, *grads):
    """Piecewise-constant functions (Floor, Ceil, Round, Rint, FloorDiv, TruncateDiv): TF
    registers a rule that sends nothing back, so a path through them contributes None."""
    return [None] * len(op.inputs)


def _sign_grad(op, grad):
    return [A.zeros_like(op.inputs[0])]


# -- binary ops ------------------------------------------------------------------------------

def _floor_mod_grad(op, grad):
    """x - floor(x / y) y: d/dx = 1, d/dy = -floor(x / y)."""
    x, y = op.inputs
    return sum_to(grad, x), sum_to(M.multiply(grad, M.negative(M.floor_div(x, y))), y)


def _mul_no_nan_grad(op, grad):
    x, y = op.inputs
    return sum_to(M.multiply_no_nan(grad, y), x), sum_to(M.multiply_no_nan(x, grad), y)


def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    gy = M.multiply(grad, M.div_no_nan(M.div_no_nan(M.negative(x), y), y))
    return sum_to(M.div_no_nan(grad, y), x), sum_to(gy, y)


def _clip_by_value_grad(op, grad):
    """As TF's composite maximum(minimum(t, hi), lo) with its tie rules: `t` gets the
    gradient inside [lo, hi] (ends included), `lo` where minimum(t, hi) < lo, `hi` where
    t > hi (unless lo > hi, where lo wins)."""
    t, lo, hi = op.inputs
    dtype = grad.dtype.base_dtype
    inside = A.cast(M.logical_and(M.less_equal(t, hi), M.greater_equal(t, lo)), dtype)
    below = A.cast(M.less(M.minimum(t, hi), lo), dtype)
    above = A.cast(M.logical_and(M.greater(t, hi), M.greater_equal(hi, lo)), dtype)
    return (sum_to(M.multiply(grad, inside), t), sum_to(M.multiply(grad, below), lo),
            sum_to(M.multiply(grad, above), hi))


def _batch_matmul_grad(op, grad):
    """TF's BatchMatMulV2 rule; each gradient is then summed over the batch dims its input
    was broadcast along."""
    x, y = op.inputs
    adj_x, adj_y = op.attrs["adj_x"], op.attrs["adj_y"]
    mm = M.matmul
    if not adj_x and not adj_y:
        gx, gy = mm(grad, y, adjoint_b=True), mm(x, grad, adjoint_a=True)
    elif not adj_x:
        gx, gy = mm(grad, y), mm(grad, x, adjoint_a=True)
    elif not adj_y:
        gx, gy = mm(y, grad, adjoint_b=True), mm(x, grad)
    else:
        gx = mm(y, grad, adjoint_a=True, adjoint_b=True)
        gy = mm(grad, x, adjoint_a=True, adjoint_b=True)
    return sum_to(gx, x), sum_to(gy, y)


# -- reductions and scans --------------------------------------------------------------------

def keep_dims_shape(x, axes_t):
    """Shape(x) with the reduced axes set to 1, built in the graph (TF's reduced_shape), for
    reductions whose axes or rank are known only at run time."""
    rank = M.rank(x)
    axes = M.floormod(A.reshape(A.cast(axes_t, dtypes.int32), [-1]), M.maximum(rank, 1))
    hit = M.reduce_any(M.equal(A.expand_dims(M.range(rank), 1), A.expand_dims(axes, 0)), 1)
    kept = A.cast(M.logical_not(hit), dtypes.int32)
    return M.add(M.multiply(A.shape(x), kept), M.subtract(1, kept))


def _static_axes(op) -> list[int] | None:
    x, axes_t = op.inputs
    axes = constant_value(axes_t)
    if axes is None or x.shape.ndims is None:
        return None
    rank = max(x.shape.ndims, 1)
    return sorted({int(a) % rank for a in np.asarray(axes).reshape(-1)})


def _with_kept_dims(op, t):
    """A reduction's output (or its gradient) with the reduced axes put back as size 1."""
    if op.attrs["keep_dims"]:
        return t
    x, axes_t = op.inputs
    axes = _static_axes(op)
    if axes is None:
        return A.reshape(t, keep_dims_shape(x, axes_t))
    kept = reduced_shape(x.shape, axes, True)
    if kept.is_fully_defined():
        return A.reshape(t, np.asarray(kept.as_list(), dtype=np.int32))
    for axis in axes:
        t = A.expand_dims(t, axis)
    return t


def _min_grad(op, grad):
    """The gradient goes to the inputs equal to the minimum, split evenly among ties."""
    x = op.inputs[0]
    y, grad = _with_kept_dims(op, op.outputs[0]), _with_kept_dims(op, grad)
    chosen = A.cast(M.equal(x, y), grad.dtype.base_dtype)
    count = M.reduce_sum(chosen, op.inputs[1], keepdims=True)
    return M.divide(M.multiply(chosen, grad), count), None


def _others_product(x, axis: int):
    """The product of the other entries along `axis`, without dividing (zeros are fine)."""
    left = M.cumprod(x, axis, exclusive=True)
    right = M.cumprod(x, axis, exclusive=True, reverse=True)
    return M.multiply(left, right)


def _prod_grad(op, grad):
    """d prod / dx_i = the product of all other entries of x_i's reduced block. For several
    axes that product is built axis by axis from the last: the entries that differ from x_i
    first in axis k contribute the exclusive product along k of the block already reduced
    over the later axes."""
    x, axes_t = op.inputs
    grad = _with_kept_dims(op, grad)
    if is_all_axes(axes_t, x):
        others = _others_product(A.reshape(x, [-1]), 0)
        return M.multiply(grad, A.reshape(others, A.shape(x))), None
    axes = _static_axes(op)
    if axes is None:
        raise NotImplementedError(f"Gradient of Prod '{op.name}' needs constant reduction axes "
                                  "and an input of known rank (or a product over all axes).")
    factor, partial = None, x
    for axis in reversed(axes):
        others = _others_product(partial, axis)
        factor = others if factor is None else M.multiply(factor, others)
        partial = M.reduce_prod(partial, axis, keepdims=True)
    return (M.multiply(grad, factor) if factor is not None else grad), None


def _cumsum_grad(op, grad):
    return M.cumsum(grad, op.inputs[1], exclusive=op.attrs["exclusive"],
                    reverse=not op.attrs["reverse"]), None


def _cumprod_grad(op, grad):
    """TF's rule, which divides by x (div_no_nan: where x is 0 it gives 0, as TF does)."""
    x, axis = op.inputs
    exclusive, reverse = op.attrs["exclusive"], op.attrs["reverse"]
    prod = M.cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = M.cumsum(M.multiply(prod, grad), axis, exclusive=exclusive, reverse=not reverse)
    return M.div_no_nan(out, x), None


GRADIENTS: dict = {
    "Sin": _sin_grad, "Cos": _cos_grad,
    "Log1p": _log1p_grad, "Expm1": _expm1_grad, "Erf": _erf_grad, "Rsqrt": _rsqrt_grad,
    "RsqrtGrad": _rsqrt_grad_grad, "Sign": _sign_grad,
    "Floor": _no_gradient, "Ceil": _no_gradient, "Round": _no_gradient, "Rint": _no_gradient,
    "FloorDiv": _no_gradient, "TruncateDiv": _no_gradient, "FloorMod": _floor_mod_grad,
    "MulNoNan": _mul_no_nan_grad, "DivNoNan": _div_no_nan_grad,
    "ClipByValue": _clip_by_value_grad, "BatchMatMulV2": _batch_matmul_grad,
    "Min": _min_grad, "Prod": _prod_grad, "Cumsum": _cumsum_grad, "Cumprod": _cumprod_grad,
}

# TruncateMod has no rule at all, as in TF: a gradient through it is a LookupError.
NOT_DIFFERENTIABLE: tuple = (
    "NotEqual", "LessEqual", "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalNot",
    "IsFinite", "IsNan", "IsInf", "ArgMin", "Any", "All", "Range", "LinSpace", "Rank",
)
