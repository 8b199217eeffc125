"""tf.losses as TF1 spells it: the standard losses with `weights`, TF's default reduction
SUM_BY_NONZERO_WEIGHTS and its float32 arithmetic, each added to the LOSSES collection; and
the collection helpers (add_loss, get_losses, get_regularization_loss(es), get_total_loss)."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.graph import get_default_graph
from engine.ops import array_ops as A
from engine.ops import math_ops as M
from engine.ops import nn_impl
from engine.ops import nn_ops as N
from engine.ops.core import convert_to_tensor, graph_of, op_scope

__all__ = [
    "Reduction",
    "absolute_difference",
    "add_loss",
    "compute_weighted_loss",
    "get_losses",
    "get_regularization_loss",
    "get_regularization_losses",
    "get_total_loss",
    "hinge_loss",
    "huber_loss",
    "log_loss",
    "mean_squared_error",
    "sigmoid_cross_entropy",
    "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
]

LOSSES = "losses"                                  # tf.GraphKeys.LOSSES
REGULARIZATION_LOSSES = "regularization_losses"    # tf.GraphKeys.REGULARIZATION_LOSSES
_BROADCAST_ERROR = "weights can not be broadcast to values."


class Reduction:
    """How a loss reduces its weighted per-element values (TF's strings)."""
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of "
                             f"{cls.all()}.")


# -- collections -------------------------------------------------------------------------

def add_loss(loss, loss_collection=LOSSES) -> None:
    if loss_collection:
        graph_of(loss).add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=LOSSES) -> list:
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None) -> list:
    return get_default_graph().get_collection(REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    losses = get_regularization_losses(scope)
    if losses:
        return M.add_n(losses, name=name)
    return A.constant(0.0)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of the LOSSES collection (plus the regularization losses)."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope=scope)
    return M.add_n(losses, name=name)


# -- weighting and reduction -------------------------------------------------------------

def _check_broadcastable(weights, values) -> None:
    """TF's static check: weights are a scalar, or have the values' rank with each
    dimension 1 or equal to the values'."""
    w, v = weights.shape, values.shape
    if w.ndims is None or v.ndims is None or w.ndims == 0:
        return
    if w.ndims != v.ndims:
        raise ValueError(f"{_BROADCAST_ERROR} values.rank={v.ndims}. weights.rank={w.ndims}. "
                         f"values.shape={v}. weights.shape={w}. Received weights={weights}, "
                         f"values={values}")
    for i, (wd, vd) in enumerate(zip(w.dims, v.dims)):
        if wd is not None and vd is not None and wd not in (1, vd):
            raise ValueError(f"{_BROADCAST_ERROR} Mismatch at dim {i}. values.shape="
                             f"{np.asarray(v.as_list())}, weights.shape="
                             f"{np.asarray(w.as_list())}. Received weights={weights}, "
                             f"values={values}")


def _div_no_nan(total, count, name: str):
    """total / count, and 0 where count is 0 (TF's div_no_nan, from plain ops)."""
    is_zero = A.cast(M.equal(count, A.zeros_like(count)), count.dtype.base_dtype)
    return M.multiply(M.divide(total, M.add(count, is_zero)),
                      M.subtract(A.ones_like(is_zero), is_zero), name=name)


def _num_elements(losses):
    with op_scope(losses.graph, None, "num_elements") as scope:
        return A.cast(A.size(losses), losses.dtype.base_dtype, name=scope)


def _num_present(losses, weights, python_weights):
    """How many elements of `losses` have a nonzero weight (weights broadcast first)."""
    if isinstance(python_weights, float) and python_weights != 0.0:
        return _num_elements(losses)
    with op_scope(losses.graph, None, "num_present") as scope:
        present = M.subtract(A.ones_like(weights),
                             A.cast(M.equal(weights, A.zeros_like(weights)), dtypes.float32))
        if not (present.shape.is_fully_defined() and present.shape == losses.shape):
            present = M.multiply(present, A.ones_like(losses))
        return M.reduce_sum(present, name=scope)


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """losses * weights, reduced as `reduction` says (in float32, cast back to the losses'
    dtype), and added to `loss_collection`."""
    Reduction.validate(reduction)
    g = graph_of(losses, weights)
    with op_scope(g, scope, "weighted_loss"):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype.base_dtype
        losses = A.cast(losses, dtypes.float32)
        weights_t = A.cast(convert_to_tensor(weights, preferred_dtype=dtypes.float32),
                           dtypes.float32)
        _check_broadcastable(weights_t, losses)
        weighted = M.multiply(losses, weights_t)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = M.reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _div_no_nan(loss, M.reduce_sum(M.multiply(A.ones_like(losses),
                                                                 weights_t)), "value")
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _div_no_nan(loss, _num_present(losses, weights_t, weights), "value")
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _div_no_nan(loss, _num_elements(losses), "value")
        loss = A.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


# -- the losses --------------------------------------------------------------------------

def _require(**args) -> None:
    for name, value in args.items():
        if value is None:
            raise ValueError(f"Argument `{name}` must not be None.")


def _assert_compatible(a, b) -> None:
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"Shapes {a.shape} and {b.shape} are incompatible")


def _float_pair(labels, predictions):
    predictions = A.cast(convert_to_tensor(predictions), dtypes.float32)
    labels = A.cast(convert_to_tensor(labels), dtypes.float32)
    _assert_compatible(predictions, labels)
    return labels, predictions


def _regression(default_scope, per_element):
    """A loss on (labels, predictions) pairs, computed in float32 as TF does."""
    def loss(labels, predictions, weights=1.0, scope=None, loss_collection=LOSSES,
             reduction=Reduction.SUM_BY_NONZERO_WEIGHTS, **options):
        _require(labels=labels, predictions=predictions)
        g = graph_of(labels, predictions, weights)
        with op_scope(g, scope, default_scope) as name:
            labels_t, predictions_t = _float_pair(labels, predictions)
            losses = per_element(labels_t, predictions_t, **options)
            return compute_weighted_loss(losses, weights, name, loss_collection,
                                         reduction=reduction)
    loss.__name__ = default_scope
    return loss


def _absolute(labels, predictions):
    return M.abs(M.subtract(predictions, labels))


def _squared(labels, predictions):
    return M.squared_difference(predictions, labels)


def _huber(labels, predictions, delta=1.0):
    abs_error = M.abs(M.subtract(predictions, labels))
    quadratic = M.minimum(abs_error, delta)
    linear = M.subtract(abs_error, quadratic)
    return M.add(M.multiply(A.constant(0.5, dtype=dtypes.float32),
                            M.multiply(quadratic, quadratic)), M.multiply(delta, linear))


def _log(labels, predictions, epsilon=1e-7):
    one = A.ones_like(labels)
    return M.subtract(M.negative(M.multiply(labels, M.log(M.add(predictions, epsilon)))),
                      M.multiply(M.subtract(one, labels),
                                 M.log(M.add(M.subtract(one, predictions), epsilon))))


def _hinge(labels, logits):
    one = A.ones_like(labels)
    signs = M.subtract(M.multiply(labels, 2.0), one)
    return N.relu(M.subtract(one, M.multiply(signs, logits)))


_absolute_difference = _regression("absolute_difference", _absolute)
_mean_squared_error = _regression("mean_squared_error", _squared)
_huber_loss = _regression("huber_loss", _huber)
_log_loss = _regression("log_loss", _log)
_hinge_loss = _regression("hinge_loss", _hinge)


def absolute_difference(labels, predictions, weights=1.0, scope=None, loss_collection=LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """|predictions - labels|, weighted and reduced."""
    return _absolute_difference(labels, predictions, weights, scope, loss_collection,
                                reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """(predictions - labels) ** 2, weighted and reduced."""
    return _mean_squared_error(labels, predictions, weights, scope, loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None, loss_collection=LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """0.5 * e ** 2 where |e| <= delta, else delta * (|e| - 0.5 * delta); e the error."""
    return _huber_loss(labels, predictions, weights, scope, loss_collection, reduction,
                       delta=delta)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """-labels * log(p + eps) - (1 - labels) * log(1 - p + eps) for probabilities p."""
    return _log_loss(labels, predictions, weights, scope, loss_collection, reduction,
                     epsilon=epsilon)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """max(0, 1 - (2 * labels - 1) * logits) for 0/1 labels."""
    _require(labels=labels, logits=logits)
    return _hinge_loss(labels, logits, weights, scope, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """tf.nn.sigmoid_cross_entropy_with_logits per element, labels smoothed towards 1/2."""
    _require(multi_class_labels=multi_class_labels, logits=logits)
    g = graph_of(multi_class_labels, logits, weights)
    with op_scope(g, scope, "sigmoid_cross_entropy_loss") as name:
        logits = convert_to_tensor(logits)
        labels = A.cast(convert_to_tensor(multi_class_labels), logits.dtype.base_dtype)
        _assert_compatible(logits, labels)
        if label_smoothing > 0:
            labels = M.add(M.multiply(labels, 1 - label_smoothing), 0.5 * label_smoothing)
        losses = nn_impl.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                           name="xentropy")
        return compute_weighted_loss(losses, weights, name, loss_collection,
                                     reduction=reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross entropy per example (no gradient into the labels), labels smoothed
    towards uniform over the classes."""
    _require(onehot_labels=onehot_labels, logits=logits)
    g = graph_of(onehot_labels, logits, weights)
    with op_scope(g, scope, "softmax_cross_entropy_loss") as name:
        logits = convert_to_tensor(logits)
        labels = A.cast(convert_to_tensor(onehot_labels), logits.dtype.base_dtype)
        _assert_compatible(logits, labels)
        if label_smoothing > 0:
            classes = M.reduce_sum(A.ones_like(labels), -1, keepdims=True)
            labels = M.add(M.multiply(labels, 1.0 - label_smoothing),
                           M.divide(A.constant(label_smoothing, logits.dtype.base_dtype),
                                    classes))
        labels = A.stop_gradient(labels, name="labels_stop_gradient")
        losses = N.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                        name="xentropy")
        return compute_weighted_loss(losses, weights, name, loss_collection,
                                     reduction=reduction)


def _drop_last_axis(t):
    """Squeezes a size-1 last axis (a Sum over it changes nothing, for any dtype)."""
    return M.reduce_sum(t, -1)


def _squeezed(labels, logits, weights):
    """TF's _remove_squeezable_dimensions for sparse labels: labels [N, 1] against logits
    [N, C] lose their last axis, and so do weights one rank above the labels."""
    lab, log_ = labels.shape, logits.shape
    if lab.ndims is not None and log_.ndims is not None and lab.ndims == log_.ndims \
            and lab[-1] in (1, None):
        labels = _drop_last_axis(labels)
    if weights is not None and hasattr(weights, "shape"):
        weights = convert_to_tensor(weights)
        if weights.shape.ndims is not None and labels.shape.ndims is not None and \
                weights.shape.ndims - labels.shape.ndims == 1:
            weights = _drop_last_axis(weights)
    return labels, weights


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Sparse softmax cross entropy per example, for integer class labels."""
    _require(labels=labels, logits=logits)
    g = graph_of(labels, logits, weights)
    with op_scope(g, scope, "sparse_softmax_cross_entropy_loss") as name:
        labels_t, logits_t = convert_to_tensor(labels), convert_to_tensor(logits)
        labels_t, weights = _squeezed(labels_t, logits_t, weights)
        losses = N.sparse_softmax_cross_entropy_with_logits(labels=labels_t, logits=logits_t,
                                                            name="xentropy")
        return compute_weighted_loss(losses, weights, name, loss_collection,
                                     reduction=reduction)
