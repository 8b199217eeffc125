"""Gradient rules of the neural-network ops (convolutions, pooling, bias_add, batch
normalization, activations, cross entropies), side by side in one table; where TF defines a
gradient for a gradient op (second order), its rule is here too."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.ops import array_ops as A
from engine.ops import conv_ops as C


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


GRADIENTS = {
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
