"""tf.losses: each loss's value under every reduction and weight shape (against numpy, and at
the default reduction against numbers tensorflow 2.21 gives for the same inputs), the LOSSES
and regularization collections, TF's op names, gradients against torch, and TF's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from grad_harness import check_gradients

import engine as tf

LABELS = np.array([[0., 1.], [1., 0.], [1., 1.]], np.float32)
PREDS = np.array([[0.2, 0.7], [0.9, 0.1], [0.4, 0.6]], np.float32)
LOGITS = np.array([[1.5, -0.5], [0.0, 2.0], [-1.0, 0.3]], np.float32)
W32 = np.array([[1., 0.], [2., 0.], [0., 3.]], np.float32)
W31 = np.array([[1.], [0.], [2.]], np.float32)
SPARSE = np.array([1, 0, 1], np.int32)
R = tf.losses.Reduction


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default() as g:
        yield g


def _run(t):
    with tf.Session() as s:
        return s.run(t)


def _np_sigmoid_xent(z, x):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def _np_log_softmax(x):
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


SOFT = LABELS / LABELS.sum(1, keepdims=True)
# name: (build(weights, reduction), per-element numpy losses, TF 2.21's value with W32 or
# its first column, default reduction)
LOSSES = {
    "absolute_difference": (
        lambda w, r: tf.losses.absolute_difference(LABELS, PREDS, w, reduction=r),
        np.abs(PREDS - LABELS), 0.5333333015441895),
    "mean_squared_error": (
        lambda w, r: tf.losses.mean_squared_error(LABELS, PREDS, w, reduction=r),
        (PREDS - LABELS) ** 2, 0.17999999225139618),
    "huber_loss": (
        lambda w, r: tf.losses.huber_loss(LABELS, PREDS * 3, w, delta=1.0, reduction=r),
        np.where(np.abs(PREDS * 3 - LABELS) <= 1, 0.5 * (PREDS * 3 - LABELS) ** 2,
                 np.abs(PREDS * 3 - LABELS) - 0.5), 1.1799999475479126),
    "log_loss": (
        lambda w, r: tf.losses.log_loss(LABELS, PREDS, w, reduction=r),
        -LABELS * np.log(PREDS + 1e-7) - (1 - LABELS) * np.log(1 - PREDS + 1e-7),
        0.6554468274116516),
    "hinge_loss": (
        lambda w, r: tf.losses.hinge_loss(LABELS, LOGITS, w, reduction=r),
        np.maximum(0, 1 - (2 * LABELS - 1) * LOGITS), 2.200000047683716),
    "sigmoid_cross_entropy": (
        lambda w, r: tf.losses.sigmoid_cross_entropy(LABELS, LOGITS, w, label_smoothing=0.1,
                                                     reduction=r),
        _np_sigmoid_xent(LABELS * 0.9 + 0.05, LOGITS), 1.5735912322998047),
    "softmax_cross_entropy": (
        lambda w, r: tf.losses.softmax_cross_entropy(SOFT, LOGITS, _column(w),
                                                     label_smoothing=0.2, reduction=r),
        -((SOFT * 0.8 + 0.1) * _np_log_softmax(LOGITS)).sum(1), 2.890392303466797),
    "sparse_softmax_cross_entropy": (
        lambda w, r: tf.losses.sparse_softmax_cross_entropy(SPARSE, LOGITS, _column(w),
                                                            reduction=r),
        -_np_log_softmax(LOGITS)[np.arange(3), SPARSE], 3.190392017364502),
}


def _column(w):
    return w if isinstance(w, float) else w[:, 0]


def _np_reduce(losses, weights, reduction):
    w = np.broadcast_to(weights if np.ndim(losses) == np.ndim(weights) or
                        np.isscalar(weights) else weights[:, 0], losses.shape)
    total = (losses * w).sum()
    if reduction == R.SUM:
        return total
    if reduction == R.MEAN:
        return total / w.sum()
    if reduction == R.SUM_OVER_BATCH_SIZE:
        return total / losses.size
    return total / np.count_nonzero(w)


@pytest.mark.parametrize("reduction", [R.SUM_BY_NONZERO_WEIGHTS, R.SUM, R.MEAN,
                                       R.SUM_OVER_BATCH_SIZE])
@pytest.mark.parametrize("weights", ["1.0", "W31", "W32"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_values_and_reductions(name, weights, reduction):
    build, per_element, _ = LOSSES[name]
    w = {"1.0": 1.0, "W31": W31, "W32": W32}[weights]
    loss = build(w, reduction)
    assert loss.shape.as_list() == [] and loss.dtype == tf.float32
    want = _np_reduce(per_element.astype(np.float64), _column(w) if per_element.ndim == 1
                      else w, reduction)
    np.testing.assert_allclose(_run(loss), want, rtol=2e-6)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_default_reduction_matches_tensorflow(name):
    build, _, tf_value = LOSSES[name]
    loss = build(W32, R.SUM_BY_NONZERO_WEIGHTS)
    scope = name if name in ("absolute_difference", "mean_squared_error", "huber_loss",
                             "log_loss", "hinge_loss") else f"{name}_loss"
    assert loss.name == f"{scope}/value:0"
    np.testing.assert_allclose(_run(loss), tf_value, rtol=5e-7)
    assert tf.losses.get_losses() == [loss]


def test_reduction_none_keeps_the_weighted_elements():
    loss = tf.losses.mean_squared_error(LABELS, PREDS, W32, reduction=R.NONE)
    assert loss.shape.as_list() == [3, 2]
    np.testing.assert_allclose(_run(loss), (PREDS - LABELS) ** 2 * W32, rtol=1e-6)


def test_all_zero_weights_give_zero_loss_and_zero_gradient():
    predictions = tf.constant(PREDS)
    loss = tf.losses.mean_squared_error(LABELS, predictions, tf.zeros([3, 2]))
    grad = tf.gradients(loss, predictions)[0]
    got_loss, got_grad = _run([loss, grad])
    assert got_loss == 0.0
    np.testing.assert_array_equal(got_grad, np.zeros((3, 2)))


def test_sparse_labels_with_a_trailing_unit_axis_are_squeezed():
    loss = tf.losses.sparse_softmax_cross_entropy(SPARSE[:, None], LOGITS, W31)
    np.testing.assert_allclose(_run(loss), 1.3044724, rtol=1e-6)      # TF 2.21's value


def test_float64_losses_are_computed_in_float32_and_cast_back():
    loss = tf.losses.absolute_difference(LABELS.astype(np.float64), PREDS.astype(np.float64))
    assert loss.dtype == tf.float32    # predictions and labels are cast to float32 first
    xent = tf.losses.softmax_cross_entropy(SOFT.astype(np.float64), LOGITS.astype(np.float64))
    assert xent.dtype == tf.float64


def test_loss_gradients_match_torch():
    def tf_fn(logits, preds):
        return tf.losses.sparse_softmax_cross_entropy(SPARSE, logits, W31[:, 0]) + \
            tf.losses.mean_squared_error(LABELS, preds, W32)

    def torch_fn(logits, preds):
        xent = torch.nn.functional.cross_entropy(logits, torch.tensor(SPARSE).long(),
                                                 reduction="none")
        w, mse_w = torch.tensor(W31[:, 0]), torch.tensor(W32)
        mse = ((preds - torch.tensor(LABELS)) ** 2 * mse_w).sum()
        return (xent * w).sum() / 2 + mse / 3
    check_gradients(tf_fn, torch_fn, [LOGITS.astype(np.float32), PREDS.astype(np.float32)],
                    tol={"rtol": 2e-5, "atol": 2e-6})


# ---- collections ----

def test_collections_and_totals(_graph):
    first = tf.losses.mean_squared_error(LABELS, PREDS)
    second = tf.losses.absolute_difference(LABELS, PREDS, loss_collection=None)
    custom = tf.constant(2.0)
    tf.losses.add_loss(custom)
    assert tf.losses.get_losses() == [first, custom]
    assert second not in tf.losses.get_losses()
    assert tf.losses.get_regularization_losses() == []
    no_penalty = tf.losses.get_regularization_loss()
    assert no_penalty.op.type == "Const" and _run(no_penalty) == 0.0
    penalty = tf.constant(0.5, name="penalty")
    _graph.add_to_collection("regularization_losses", penalty)
    reg = tf.losses.get_regularization_loss()
    assert reg.name == "total_regularization_loss:0"
    total = tf.losses.get_total_loss()
    without = tf.losses.get_total_loss(add_regularization_losses=False, name="data_loss")
    assert total.name == "total_loss:0" and without.name == "data_loss:0"
    got = _run([first, total, without, reg])
    np.testing.assert_allclose(got[1], got[0] + 2.5, rtol=1e-6)
    np.testing.assert_allclose(got[2], got[0] + 2.0, rtol=1e-6)
    assert got[3] == 0.5


def test_get_losses_by_scope():
    with tf.name_scope("tower_0"):
        a = tf.losses.mean_squared_error(LABELS, PREDS)
    with tf.name_scope("tower_1"):
        b = tf.losses.mean_squared_error(LABELS, PREDS)
    assert tf.losses.get_losses(scope="tower_0") == [a]
    assert tf.losses.get_losses(scope="tower_1") == [b]


# ---- errors ----

ERRORS = [
    (lambda: tf.losses.mean_squared_error(LABELS, PREDS, np.ones([3], np.float32)),
     r"^weights can not be broadcast to values\. values\.rank=2\. weights\.rank=1\. "
     r"values\.shape=\(3, 2\)\. weights\.shape=\(3,\)\."),
    (lambda: tf.losses.mean_squared_error(LABELS, PREDS, np.ones([3, 3], np.float32)),
     r"^weights can not be broadcast to values\. Mismatch at dim 1\. values\.shape=\[3 2\], "
     r"weights\.shape=\[3 3\]\."),
    (lambda: tf.losses.mean_squared_error(LABELS, PREDS[:, :1].repeat(3, 1)),
     r"^Shapes \(3, 3\) and \(3, 2\) are incompatible$"),
    (lambda: tf.losses.mean_squared_error(LABELS, PREDS, reduction="bad"),
     r"^Invalid Reduction Key bad\. Key should be one of \('none', 'weighted_sum', "),
    (lambda: tf.losses.mean_squared_error(None, PREDS),
     r"^Argument `labels` must not be None\.$"),
    (lambda: tf.losses.softmax_cross_entropy(LABELS, None),
     r"^Argument `logits` must not be None\.$"),
]


@pytest.mark.parametrize(("build", "message"), ERRORS, ids=[m[1:30] for _, m in ERRORS])
def test_loss_errors_match_tensorflow(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_reduction_names_are_tf_strings():
    assert R.all() == ("none", "weighted_sum", "weighted_mean",
                       "weighted_sum_over_batch_size", "weighted_sum_by_nonzero_weights",
                       "weighted_sum_by_nonzero_weights")
    assert R.SUM_OVER_NONZERO_WEIGHTS == R.SUM_BY_NONZERO_WEIGHTS
