"""Gradient rules, one small function per op type, kept side by side in one table so a
missing rule is easy to see. Each rule emits graph ops: `rule(op, *output_grads)` returns one
gradient (or None) per input of `op`."""

from __future__ import annotations

import numpy as np

from engine.ops import (  # noqa: F401  (their ops get rules below)
    array_grad,
    control_flow_grad,
    control_flow_ops,
    debug_grad,
    fake_quant_grad,
    math_grad,
    nn_grad,
    random_grad,
    state_ops,
    training_grad,
)
from engine.ops import array_ops as A
from engine.ops import math_ops as M
from engine.ops import nn_ops as N
from engine.ops.core import constant_value
from engine.ops.registry import get_op_def


def _static_reduction_axes(x_shape, y_shape):
    """Python version of BroadcastGradientArgs for fully known shapes."""
    a, b = list(x_shape.dims), list(y_shape.dims)
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    ra = [i for i in range(n) if a[i] == 1 and b[i] != 1]
    rb = [i for i in range(n) if b[i] == 1 and a[i] != 1]
    lead_a, lead_b = n - len(x_shape.dims), n - len(y_shape.dims)
    return ra + [i for i in range(lead_a) if i not in ra], \
        rb + [i for i in range(lead_b) if i not in rb]


def _static_shape(shape) -> np.ndarray:
    """A fully known shape as int32 values: a bare [] (a scalar's shape) would become a float32
    constant, which Reshape and BroadcastTo reject."""
    return np.asarray(shape.as_list(), dtype=np.int32)


def _unbroadcast(grad_x, grad_y, x, y):
    """Sums each gradient over the axes its input was broadcast along."""
    xs, ys = x.shape, y.shape
    if xs.is_fully_defined() and ys.is_fully_defined():
        if xs == ys and grad_x.shape == xs:
            return grad_x, grad_y
        rx, ry = _static_reduction_axes(xs, ys)
        gx = A.reshape(M.reduce_sum(grad_x, sorted(rx)), _static_shape(xs)) if rx else \
            _match_static(grad_x, xs)
        gy = A.reshape(M.reduce_sum(grad_y, sorted(ry)), _static_shape(ys)) if ry else \
            _match_static(grad_y, ys)
        return gx, gy
    rx, ry = _known_reduction_axes(xs, ys), _known_reduction_axes(ys, xs)
    if rx is not None and ry is not None:
        return _reduced_to(grad_x, rx, x), _reduced_to(grad_y, ry, y)
    sx, sy = A.shape(x), A.shape(y)
    rx, ry = M.broadcast_gradient_args(sx, sy)
    return A.reshape(M.reduce_sum(grad_x, rx), sx), A.reshape(M.reduce_sum(grad_y, ry), sy)


def _known_reduction_axes(side, other) -> list[int] | None:
    """The output axes `side` was broadcast along, when the static shapes settle them though
    some dims are unknown (x [None, 128] + bias [128]: x none, bias axis 0); None when only
    the run-time shapes can tell (an unknown dim facing an unknown or larger one)."""
    if side.ndims is None or other.ndims is None:
        return None
    n = max(side.ndims, other.ndims)
    mine, theirs = list(side.dims), list(other.dims)
    lead, other_lead = n - len(mine), n - len(theirs)
    axes = list(range(lead))
    for i, d in enumerate(mine):
        axis = lead + i
        o = theirs[axis - other_lead] if axis >= other_lead else 1
        if d == 1:
            if o != 1:
                axes.append(axis)    # summing a length-1 axis is harmless if o is 1 after all
        elif d is None and o != 1:
            return None
    return axes


def _reduced_to(grad, axes: list[int], like):
    if not axes:
        return grad
    summed = M.reduce_sum(grad, axes)
    shape = like.shape
    return A.reshape(summed, _static_shape(shape) if shape.is_fully_defined() else A.shape(like))


def _match_static(grad, shape):
    return grad if grad.shape == shape else A.reshape(grad, _static_shape(shape))


def _add_grad(op, grad):
    return _unbroadcast(grad, grad, *op.inputs)


def _sub_grad(op, grad):
    return _unbroadcast(grad, M.negative(grad), *op.inputs)


def _mul_grad(op, grad):
    x, y = op.inputs
    return _unbroadcast(M.multiply(grad, y), M.multiply(x, grad), x, y)


def _real_div_grad(op, grad):
    x, y = op.inputs
    gx = M.divide(grad, y)
    gy = M.multiply(grad, M.divide(M.divide(M.negative(x), y), y))
    return _unbroadcast(gx, gy, x, y)


def _squared_difference_grad(op, grad):
    x, y = op.inputs
    g = M.multiply(M.multiply(grad, A.constant(2.0, dtype=grad.dtype)), M.subtract(x, y))
    return _unbroadcast(g, M.negative(g), x, y)


def _maximum_grad(op, grad, pick=M.greater_equal):
    """As TF: a tie sends the gradient to x (x >= y for Maximum, x <= y for Minimum)."""
    x, y = op.inputs
    mask = A.cast(pick(x, y), grad.dtype)
    return _unbroadcast(M.multiply(grad, mask),
                        M.multiply(grad, M.subtract(A.ones_like(mask), mask)), x, y)


def _minimum_grad(op, grad):
    return _maximum_grad(op, grad, pick=M.less_equal)


def _pow_grad(op, grad):
    """d(x^y)/dx = y x^(y-1); d(x^y)/dy = x^y log(x), taken as 0 where x <= 0 (as TF)."""
    x, y = op.inputs
    z = op.outputs[0]
    one = A.constant(1, dtype=x.dtype.base_dtype)
    gx = M.multiply(grad, M.multiply(y, M.pow(x, M.subtract(y, one))))
    positive = A.cast(M.greater(x, A.zeros_like(x)), x.dtype.base_dtype)
    tiny = A.constant(np.finfo(x.dtype.base_dtype.numpy_dtype).tiny, dtype=x.dtype.base_dtype)
    log_x = M.multiply(M.log(M.maximum(x, tiny)), positive)
    gy = M.multiply(grad, M.multiply(z, log_x))
    return _unbroadcast(gx, gy, x, y)


def _matmul_grad(op, grad):
    a, b = op.inputs
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    if not ta and not tb:
        return M.matmul(grad, b, transpose_b=True), M.matmul(a, grad, transpose_a=True)
    if not ta and tb:
        return M.matmul(grad, b), M.matmul(grad, a, transpose_a=True)
    if ta and not tb:
        return M.matmul(b, grad, transpose_b=True), M.matmul(a, grad)
    return (M.matmul(b, grad, transpose_a=True, transpose_b=True),
            M.matmul(grad, a, transpose_a=True, transpose_b=True))


def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


def _identity_grad(op, grad):
    return [grad]


def _neg_grad(op, grad):
    return [M.negative(grad)]


def _square_grad(op, grad):
    x = op.inputs[0]
    return [M.multiply(grad, M.multiply(A.constant(2.0, dtype=x.dtype.base_dtype), x))]


def _abs_grad(op, grad):
    x = op.inputs[0]
    sign = M.subtract(A.cast(M.greater(x, A.zeros_like(x)), x.dtype.base_dtype),
                      A.cast(M.less(x, A.zeros_like(x)), x.dtype.base_dtype))
    return [M.multiply(grad, sign)]


def _exp_grad(op, grad):
    return [M.multiply(grad, op.outputs[0])]


def _log_grad(op, grad):
    return [M.multiply(grad, M.reciprocal(op.inputs[0]))]


def _sqrt_grad(op, grad):
    y = op.outputs[0]
    return [M.divide(M.multiply(grad, A.constant(0.5, dtype=y.dtype.base_dtype)), y)]


def _reciprocal_grad(op, grad):
    y = op.outputs[0]
    return [M.negative(M.multiply(grad, M.multiply(y, y)))]


def _fused(op_type: str, first, second):
    """The fused gradient kernels TF uses (SigmoidGrad, TanhGrad, ReluGrad)."""
    return first.graph.create_op(op_type, [first, second], {"T": first.dtype.base_dtype},
                                 name=op_type).outputs[0]


def _sigmoid_grad(op, grad):
    return [_fused("SigmoidGrad", op.outputs[0], grad)]


def _tanh_grad(op, grad):
    return [_fused("TanhGrad", op.outputs[0], grad)]


def _relu_grad(op, grad):
    return [_fused("ReluGrad", grad, op.outputs[0])]


def _sigmoid_grad_grad(op, grad):
    """TF's _SigmoidGradGrad: SigmoidGrad(y, dy) = dy * y * (1 - y)."""
    with op.graph.control_dependencies([grad]):
        y, dy = op.inputs
        gb = M.multiply(grad, dy)
        two = A.constant(2.0, dtype=y.dtype.base_dtype)
        return M.subtract(gb, M.multiply(M.multiply(two, gb), y)), _fused("SigmoidGrad", y, grad)


def _tanh_grad_grad(op, grad):
    """TF's _TanhGradGrad: TanhGrad(y, dy) = dy * (1 - y^2)."""
    with op.graph.control_dependencies([grad]):
        y, dy = op.inputs
        minus_two = A.constant(-2.0, dtype=y.dtype.base_dtype)
        return M.multiply(M.multiply(M.multiply(grad, minus_two), dy), y), \
            _fused("TanhGrad", y, grad)


def _relu_grad_grad(op, grad):
    """TF's _ReluGradGrad: ReluGrad(dy, y) passes dy where y > 0; nothing flows to y."""
    y = op.inputs[1]
    return _fused("ReluGrad", grad, y), A.zeros_like(y)


def _softmax_grad(op, grad):
    y = op.outputs[0]
    inner = M.reduce_sum(M.multiply(grad, y), -1, keepdims=True)
    return [M.multiply(M.subtract(grad, inner), y)]


def _log_softmax_grad(op, grad):
    y = op.outputs[0]
    return [M.subtract(grad, M.multiply(M.reduce_sum(grad, -1, keepdims=True), M.exp(y)))]


def _xent_grad(op, grad_loss, grad_backprop):
    logits = op.inputs[0]
    scale = A.expand_dims(grad_loss, -1)
    grad_logits = M.multiply(scale, op.outputs[1])
    if grad_backprop.op.type != "ZerosLike":
        # The backprop output (softmax - labels) reached the loss too: add its softmax-Jacobian
        # term, as TF does; like TF, labels get no gradient through that output.
        softmax = N.softmax(logits)
        inner = M.reduce_sum(M.multiply(grad_backprop, softmax), -1, keepdims=True)
        grad_logits = M.add(grad_logits, M.multiply(M.subtract(grad_backprop, inner), softmax))
    grad_labels = M.multiply(scale, M.negative(N.log_softmax(logits)))
    return grad_logits, grad_labels


def _reshape_grad(op, grad):
    return A.reshape(grad, A.shape(op.inputs[0])), None


def _expand_dims_grad(op, grad):
    return A.reshape(grad, A.shape(op.inputs[0])), None


def _cast_grad(op, grad):
    src = op.attrs["SrcT"]
    if src.is_floating and op.attrs["DstT"].is_floating:
        return [A.cast(grad, src)]
    return [None]


def _reduction_axes(op):
    x = op.inputs[0]
    axes = constant_value(op.inputs[1])
    if axes is None or x.shape.ndims is None:
        raise NotImplementedError(f"Gradient of {op.type} '{op.name}' needs constant axes and an "
                                  "input of known rank.")
    rank = x.shape.ndims
    return sorted({int(a) % rank for a in np.asarray(axes).reshape(-1)}) if rank else []


def _sum_grad(op, grad):
    """Re-inserts the reduced axes (size 1), then broadcasts back to the input's shape."""
    x = op.inputs[0]
    if not op.attrs["keep_dims"]:
        for axis in _reduction_axes(op):
            grad = A.expand_dims(grad, axis)
    target = _static_shape(x.shape) if x.shape.is_fully_defined() else A.shape(x)
    return A.broadcast_to(grad, target), None


def _mean_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    sum_grad, _ = _sum_grad(op, grad)
    if x.shape.is_fully_defined() and y.shape.is_fully_defined():
        factor = max(x.shape.num_elements() // max(y.shape.num_elements(), 1), 1)
        factor_t = A.constant(factor, dtype=sum_grad.dtype.base_dtype)
    else:
        factor_t = M.divide(A.cast(A.size(x), sum_grad.dtype.base_dtype),
                            A.cast(A.size(y), sum_grad.dtype.base_dtype))
    return M.divide(sum_grad, factor_t), None


def _max_grad(op, grad):
    """The gradient goes to the inputs equal to the maximum, split evenly among ties."""
    x, y = op.inputs[0], op.outputs[0]
    if not op.attrs["keep_dims"]:
        for axis in _reduction_axes(op):
            y = A.expand_dims(y, axis)
            grad = A.expand_dims(grad, axis)
    chosen = A.cast(M.equal(x, y), grad.dtype.base_dtype)
    count = M.reduce_sum(chosen, _reduction_axes(op), keepdims=True)
    return M.divide(M.multiply(chosen, grad), count), None


def _broadcast_to_grad(op, grad):
    x = op.inputs[0]
    rx, _ = M.broadcast_gradient_args(A.shape(x), op.inputs[1])
    return A.reshape(M.reduce_sum(grad, rx), A.shape(x)), None


def _fill_grad(op, grad):
    return None, M.reduce_sum(grad)


GRADIENTS = {
    "Add": _add_grad, "Sub": _sub_grad, "Mul": _mul_grad, "RealDiv": _real_div_grad,
    "SquaredDifference": _squared_difference_grad, "Maximum": _maximum_grad,
    "Minimum": _minimum_grad, "Pow": _pow_grad, "MatMul": _matmul_grad, "AddN": _add_n_grad,
    "Identity": _identity_grad, "PlaceholderWithDefault": _identity_grad, "Neg": _neg_grad,
    "Square": _square_grad, "Abs": _abs_grad,
    "Exp": _exp_grad, "Log": _log_grad, "Sqrt": _sqrt_grad, "Reciprocal": _reciprocal_grad,
    "Sigmoid": _sigmoid_grad, "Tanh": _tanh_grad, "Relu": _relu_grad, "Softmax": _softmax_grad,
    "SigmoidGrad": _sigmoid_grad_grad, "TanhGrad": _tanh_grad_grad, "ReluGrad": _relu_grad_grad,
    "LogSoftmax": _log_softmax_grad, "SoftmaxCrossEntropyWithLogits": _xent_grad,
    "Reshape": _reshape_grad, "ExpandDims": _expand_dims_grad, "Cast": _cast_grad,
    "Sum": _sum_grad, "Mean": _mean_grad, "Max": _max_grad, "BroadcastTo": _broadcast_to_grad,
    "Fill": _fill_grad,
}

NOT_DIFFERENTIABLE = (
    "Const", "Placeholder", "Shape", "Size", "BroadcastGradientArgs", "ZerosLike", "OnesLike",
    "StopGradient", "Equal", "Less", "Greater", "ArgMax", "NoOp", "VariableV2", "Assign",
    "AssignAdd", "AssignSub", "ApplyGradientDescent",
)


# Each op family keeps its own table beside its ops; the registry sees them all as one.
FAMILY_TABLES = (array_grad, control_flow_grad, debug_grad, fake_quant_grad, math_grad, nn_grad,
                 random_grad, training_grad)


def _merge_family_tables() -> None:
    global NOT_DIFFERENTIABLE
    for family in FAMILY_TABLES:
        clash = (set(family.GRADIENTS) | set(family.NOT_DIFFERENTIABLE)) & \
            (set(GRADIENTS) | set(NOT_DIFFERENTIABLE))
        if clash:
            raise KeyError(f"{family.__name__} redefines gradient entries {sorted(clash)}")
        GRADIENTS.update(family.GRADIENTS)
    NOT_DIFFERENTIABLE = NOT_DIFFERENTIABLE + tuple(
        op for family in FAMILY_TABLES for op in family.NOT_DIFFERENTIABLE)


def _install() -> None:
    _merge_family_tables()
    for op_type, rule in GRADIENTS.items():
        get_op_def(op_type).gradient = rule
    for op_type in NOT_DIFFERENTIABLE:
        get_op_def(op_type).not_differentiable = True


_install()
