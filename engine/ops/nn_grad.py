"""Gradient rules of the neural-network ops (convolutions, pooling, bias_add, batch
normalization, activations, cross entropies), side by side in one table; where TF defines a
gradient for a gradient op (second order), its rule is here too."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.ops import array_ops as A
from engine.ops import conv_ops as C
from engine.ops import math_ops as M
from engine.ops import nn_ops as N


def _shape(t):
    """A tensor's shape as an int32 input: a constant when it is known at build time."""
    if t.shape.is_fully_defined():
        return A.constant(np.asarray(t.shape.as_list(), dtype=np.int32), dtype=dtypes.int32)
    return A.shape(t)


# -- convolutions ------------------------------------------------------------------------

_BACKPROPS = {
    "Conv2D": ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"),
    "DepthwiseConv2dNative": ("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                              "DepthwiseConv2dNativeBackpropFilter"),
}
_FAMILY = {op: family for family, ops in _BACKPROPS.items() for op in ops}


def _conv_grad(op, grad):
    forward, backprop_input, backprop_filter = _BACKPROPS[_FAMILY[op.type]]
    x, w = op.inputs
    attrs = C.window_attrs(op)
    return (C.create(backprop_input, [_shape(x), w, grad], attrs),
            C.create(backprop_filter, [x, _shape(w), grad], attrs))


def _conv_backprop_input_grad(op, grad):
    """Backprop-input is linear in (filter, dy): its gradients are the filter backprop and the
    forward convolution of the incoming gradient."""
    forward, _, backprop_filter = _BACKPROPS[_FAMILY[op.type]]
    _, w, dy = op.inputs
    attrs = C.window_attrs(op)
    return (None, C.create(backprop_filter, [grad, _shape(w), dy], attrs),
            C.create(forward, [grad, w], attrs))


def _conv_backprop_filter_grad(op, grad):
    forward, backprop_input, _ = _BACKPROPS[_FAMILY[op.type]]
    x, _, dy = op.inputs
    attrs = C.window_attrs(op)
    return (C.create(backprop_input, [_shape(x), grad, dy], attrs), None,
            C.create(forward, [x, grad], attrs))


# -- pooling -----------------------------------------------------------------------------

def _max_pool_grad(op, grad):
    return [C.create("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], C.window_attrs(op))]


def _max_pool_grad_grad(op, grad):
    """MaxPoolGrad is linear in its incoming gradient and piecewise constant in the rest."""
    x, y, _ = op.inputs
    other = "MaxPoolGradGrad" if op.type == "MaxPoolGrad" else "MaxPoolGrad"
    return A.zeros_like(x), A.zeros_like(y), C.create(other, [x, y, grad], C.window_attrs(op))


def _avg_pool_grad(op, grad):
    return [C.create("AvgPoolGrad", [_shape(op.inputs[0]), grad], C.window_attrs(op))]


def _avg_pool_grad_grad(op, grad):
    return None, C.create("AvgPool", [grad], C.window_attrs(op))


# -- bias --------------------------------------------------------------------------------

def _bias_add_grad(op, grad):
    fmt = op.attrs.get("data_format", "NHWC")
    bias_grad = grad.graph.create_op("BiasAddGrad", [grad], {"T": grad.dtype.base_dtype,
                                                             "data_format": fmt},
                                     name="BiasAddGrad").outputs[0]
    return grad, bias_grad


def _bias_add_grad_grad(op, grad):
    """Broadcasts the bias-shaped incoming gradient back over BiasAddGrad's input."""
    dy = op.inputs[0]
    rank = dy.shape.ndims
    if rank is None:
        raise NotImplementedError(f"Gradient of BiasAddGrad '{op.name}' needs an input of "
                                  "known rank.")
    if op.attrs.get("data_format", "NHWC") == "NCHW":
        target = [1, -1] + [1] * (rank - 2)
    else:
        target = [1] * (rank - 1) + [-1]
    return [A.broadcast_to(A.reshape(grad, target), _shape(dy))]


# -- activations -------------------------------------------------------------------------

def _act_grad_op(op_type: str, grad, second, alpha=None):
    attrs = {"T": grad.dtype.base_dtype}
    if alpha is not None:
        attrs["alpha"] = alpha
    return grad.graph.create_op(op_type, [grad, second], attrs, name=op_type).outputs[0]


def _on_output(grad_type):
    """Rules whose Grad op takes the forward op's output (Relu6, Elu, Selu)."""
    def rule(op, grad):
        return [_act_grad_op(grad_type, grad, op.outputs[0])]
    return rule


def _on_input(grad_type):
    def rule(op, grad):
        return [_act_grad_op(grad_type, grad, op.inputs[0], op.attrs.get("alpha"))]
    return rule


def _piecewise_linear_grad_grad(op, grad):
    """Relu6Grad / LeakyReluGrad are linear in the gradient and piecewise constant in x."""
    x = op.inputs[1]
    return _act_grad_op(op.type, grad, x, op.attrs.get("alpha")), A.zeros_like(x)


def _negative_mask(y):
    return A.cast(M.less(y, A.zeros_like(y)), y.dtype.base_dtype)


def _exp_linear_grad_grad(op, grad):
    """EluGrad / SeluGrad(dy, y): dy * (y + c) where y < 0, so d/dy is dy there."""
    dy, y = op.inputs
    return (_act_grad_op(op.type, grad, y),
            M.multiply(M.multiply(grad, dy), _negative_mask(y)))


def _softplus_grad_grad(op, grad):
    """SoftplusGrad(dy, x) = dy * sigmoid(x): d/dx = dy / (exp(-x) + 2 + exp(x))."""
    dy, x = op.inputs
    ddy = _act_grad_op("SoftplusGrad", grad, x)
    denominator = M.add(M.add(M.exp(M.negative(x)), 2.0), M.exp(x))
    return ddy, M.divide(M.multiply(grad, dy), denominator)


def _l2_loss_grad(op, grad):
    return [M.multiply(op.inputs[0], grad)]


# -- cross entropy -----------------------------------------------------------------------

def _sparse_xent_grad(op, grad_loss, grad_backprop):
    """The loss's gradient is its backprop output; when that output (softmax - onehot)
    reached the loss too, its softmax-Jacobian term is added, as TF does."""
    logits = op.inputs[0]
    grad = M.multiply(A.expand_dims(grad_loss, -1), op.outputs[1])
    if grad_backprop.op.type != "ZerosLike":
        softmax = N.softmax(logits)
        inner = M.reduce_sum(M.multiply(grad_backprop, softmax), -1, keepdims=True)
        grad = M.add(grad, M.multiply(M.subtract(grad_backprop, inner), softmax))
    return grad, None


# -- fused batch normalization -----------------------------------------------------------

def _batch_norm_attrs(op) -> dict:
    attrs = {k: op.attrs[k] for k in ("T", "U", "epsilon", "data_format", "is_training")
             if k in op.attrs}
    return attrs


def _fused_batch_norm_grad(op, grad_y, *unused):
    """Only y's gradient flows back (TF ignores the gradients of the statistics). In
    training the reserve spaces hold the batch statistics; in inference TF passes the
    population mean and variance in their place."""
    x, scale, _, mean, variance = op.inputs
    reserve = [op.outputs[3], op.outputs[4]] if op.attrs["is_training"] else [mean, variance]
    if op.type == "FusedBatchNormV3":
        reserve.append(op.outputs[5])
    grad_type = op.type.replace("Norm", "NormGrad")
    out = x.graph.create_op(grad_type, [grad_y, x, scale, *reserve], _batch_norm_attrs(op),
                            name=grad_type)
    return out.outputs[0], out.outputs[1], out.outputs[2], None, None


def _rsqrt(x):
    return M.reciprocal(M.sqrt(x))


def batch_norm_grad_composite(dy, x, scale, mean, variance, epsilon: float, nchw: bool,
                              training: bool):
    """(dx, dscale, doffset) of a fused batch norm written with plain ops (TF's
    _BatchNormGrad): differentiating it gives the gradient of FusedBatchNormGrad. In
    training the batch statistics are recomputed from x, so their dependence on x counts."""
    x_dtype = x.dtype.base_dtype
    if x_dtype in (dtypes.float16, dtypes.bfloat16):
        x, dy = A.cast(x, dtypes.float32), A.cast(dy, dtypes.float32)
    axes = [0, 2, 3] if nchw else [0, 1, 2]
    view = [1, -1, 1, 1] if nchw else [-1]
    scale_v = A.reshape(scale, view)
    if training:
        mean_dy = M.reduce_mean(dy, axes, keepdims=True)
        mean_x = M.reduce_mean(x, axes, keepdims=True)
        var_x = M.reduce_mean(M.squared_difference(x, A.stop_gradient(mean_x)), axes,
                              keepdims=True)
        x_offset = M.subtract(x, mean_x)
        mean_term = M.reduce_mean(M.multiply(dy, x_offset), axes, keepdims=True)
        var_eps = M.add(var_x, epsilon)
        dx = M.multiply(M.multiply(scale_v, _rsqrt(var_eps)), M.subtract(
            M.subtract(dy, mean_dy), M.multiply(M.multiply(M.reciprocal(var_eps), mean_term),
                                                x_offset)))
        dscale = A.reshape(M.multiply(_rsqrt(var_eps), M.reduce_sum(
            M.multiply(dy, x_offset), axes, keepdims=True)), [-1])
    else:
        var_rsqrt = _rsqrt(M.add(A.reshape(variance, view), epsilon))
        dscale = M.reduce_sum(M.multiply(M.multiply(dy, M.subtract(x, A.reshape(mean, view))),
                                         var_rsqrt), axes)
        dx = M.multiply(M.multiply(dy, scale_v), var_rsqrt)
    return A.cast(dx, x_dtype), dscale, M.reduce_sum(dy, axes)


def _fused_batch_norm_grad_grad(op, *grads):
    from engine.passes.gradients import gradients
    dy, x, scale, mean, variance = op.inputs[:5]
    outs = batch_norm_grad_composite(dy, x, scale, mean, variance, op.attrs["epsilon"],
                                     op.attrs.get("data_format") == "NCHW",
                                     op.attrs["is_training"])
    ddy, dx, dscale = gradients(list(outs), [dy, x, scale], grad_ys=list(grads[:3]))
    return [ddy, dx, dscale] + [None] * (len(op.inputs) - 3)


GRADIENTS = {
    "Relu6": _on_output("Relu6Grad"),
    "Relu6Grad": _piecewise_linear_grad_grad,
    "LeakyRelu": _on_input("LeakyReluGrad"),
    "LeakyReluGrad": _piecewise_linear_grad_grad,
    "Elu": _on_output("EluGrad"),
    "EluGrad": _exp_linear_grad_grad,
    "Selu": _on_output("SeluGrad"),
    "SeluGrad": _exp_linear_grad_grad,
    "Softplus": _on_input("SoftplusGrad"),
    "SoftplusGrad": _softplus_grad_grad,
    "Softsign": _on_input("SoftsignGrad"),
    "L2Loss": _l2_loss_grad,
    "SparseSoftmaxCrossEntropyWithLogits": _sparse_xent_grad,
    "FusedBatchNorm": _fused_batch_norm_grad,
    "FusedBatchNormV2": _fused_batch_norm_grad,
    "FusedBatchNormV3": _fused_batch_norm_grad,
    "FusedBatchNormGrad": _fused_batch_norm_grad_grad,
    "FusedBatchNormGradV2": _fused_batch_norm_grad_grad,
    "FusedBatchNormGradV3": _fused_batch_norm_grad_grad,
    "Conv2D": _conv_grad,
    "Conv2DBackpropInput": _conv_backprop_input_grad,
    "Conv2DBackpropFilter": _conv_backprop_filter_grad,
    "DepthwiseConv2dNative": _conv_grad,
    "DepthwiseConv2dNativeBackpropInput": _conv_backprop_input_grad,
    "DepthwiseConv2dNativeBackpropFilter": _conv_backprop_filter_grad,
    "MaxPool": _max_pool_grad,
    "MaxPoolGrad": _max_pool_grad_grad,
    "MaxPoolGradGrad": _max_pool_grad_grad,
    "AvgPool": _avg_pool_grad,
    "AvgPoolGrad": _avg_pool_grad_grad,
    "BiasAdd": _bias_add_grad,
    "BiasAddGrad": _bias_add_grad_grad,
}
NOT_DIFFERENTIABLE: tuple = ()
