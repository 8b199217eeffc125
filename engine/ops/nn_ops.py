"""Neural-network ops: Relu, Softmax, LogSoftmax, SoftmaxCrossEntropyWithLogits and the
gradient helper ReluGrad; the tf.nn builders."""

from __future__ import annotations

from engine import dtypes
from engine.ops.core import (
    check_dtype_allowed,
    convert_to_tensor,
    graph_of,
    op_scope,
    same_dtype_inputs,
    shape_error,
)
from engine.ops.registry import register_op
from engine.shapes import TensorShape

# The names tf.nn exports from this module (engine/nn.py star-imports it).
__all__ = [
    "log_softmax",
    "relu",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
]


def _float_same_shape(op):
    check_dtype_allowed(op, op.inputs[0].dtype, dtypes.FLOATS)
    return [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape)]


def _softmax_infer(op):
    x = op.inputs[0]
    if x.shape.ndims is not None and x.shape.ndims < 1:
        raise shape_error(op, "Shape must be at least rank 1 but is rank 0")
    return _float_same_shape(op)


def _relu_grad_infer(op):
    dtype = same_dtype_inputs(op, ("gradients", "features"))
    return [(dtype, op.inputs[0].shape.merge_with(op.inputs[1].shape))]


def _xent_infer(op):
    dtype = same_dtype_inputs(op, ("features", "labels"))
    check_dtype_allowed(op, dtype, dtypes.FLOATS)
    logits, labels = op.inputs[0].shape, op.inputs[1].shape
    for s in (logits, labels):
        if s.ndims is not None and s.ndims != 2:
            raise shape_error(op, f"Shape must be rank 2 but is rank {s.ndims}")
    if not logits.is_compatible_with(labels):
        raise shape_error(op, "logits and labels must be broadcastable: logits_size="
                              f"{logits.bracket_str()} labels_size={labels.bracket_str()}")
    merged = logits.merge_with(labels)
    batch = merged[0] if merged.ndims else None
    return [(dtype, TensorShape([batch])), (dtype, merged)]


register_op("Relu", _float_same_shape)
register_op("ReluGrad", _relu_grad_infer)
register_op("Softmax", _softmax_infer)
register_op("LogSoftmax", _softmax_infer)
register_op("SoftmaxCrossEntropyWithLogits", _xent_infer)


def _unary(op_type, x, name):
    x = convert_to_tensor(x)
    return graph_of(x).create_op(op_type, [x], {"T": x.dtype.base_dtype},
                                 name=name or op_type).outputs[0]


def relu(features, name=None):
    return _unary("Relu", features, name)


def _check_last_axis(x, axis, fn):
    if axis not in (None, -1) and x.shape.ndims is not None and axis != x.shape.ndims - 1:
        raise NotImplementedError(f"{fn} supports only the last axis here; got axis={axis} for "
                                  f"{x.name}. Transpose the input first.")


def softmax(logits, axis=None, name=None, dim=None):
    x = convert_to_tensor(logits)
    _check_last_axis(x, axis if axis is not None else dim, "softmax")
    return _unary("Softmax", x, name)


def log_softmax(logits, axis=None, name=None, dim=None):
    x = convert_to_tensor(logits)
    _check_last_axis(x, axis if axis is not None else dim, "log_softmax")
    return _unary("LogSoftmax", x, name)


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None, dim=-1,
                                         name=None, axis=None):
    """Per-example cross entropy between `labels` (a distribution per row) and
    softmax(`logits`); gradients flow into both, as in TF's v2 op."""
    if _sentinel is not None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits_v2` with named "
                         "arguments (labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    logits_t = convert_to_tensor(logits)
    _check_last_axis(logits_t, axis if axis is not None else dim,
                     "softmax_cross_entropy_with_logits_v2")
    g = graph_of(logits_t, labels)
    with op_scope(g, name, "softmax_cross_entropy_with_logits") as scope:
        labels_t = convert_to_tensor(labels, dtype=logits_t.dtype.base_dtype, name="labels")
        op = g.create_op("SoftmaxCrossEntropyWithLogits", [logits_t, labels_t],
                         {"T": logits_t.dtype.base_dtype}, name=scope)
    return op.outputs[0]


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None):
    """TF1's deprecated form: no gradient into labels."""
    from engine.ops.array_ops import stop_gradient
    if _sentinel is not None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits` with named arguments")
    return softmax_cross_entropy_with_logits_v2(labels=stop_gradient(labels), logits=logits,
                                                dim=dim, name=name)
