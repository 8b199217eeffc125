"""Cross entropies: SparseSoftmaxCrossEntropyWithLogits (int32/int64 labels, TF's CPU error
for a label out of range, NaN rows on GPU, rank > 2 through reshapes), the sigmoid and
weighted composites with TF's values and its gradient at logits == 0, and softmax cross
entropy along a non-last axis; gradients against torch autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from grad_harness import DYNAMIC, check_gradients, grad_test
from kernel_harness import covers, mark_executed, tf_dtype

import engine as tf
from engine import errors


def _np_sparse_xent(logits, labels):
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    loss = -np.take_along_axis(log_probs, labels[:, None].astype(np.int64), 1)[:, 0]
    backprop = np.exp(log_probs)
    backprop[np.arange(len(labels)), labels] -= 1
    return loss, backprop


@covers("SparseSoftmaxCrossEntropyWithLogits")
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_xent_kernel(runner, dtype, label_dtype):
    rng = np.random.default_rng(1)
    logits_val = rng.uniform(-5, 5, (6, 4)).astype(dtype)
    labels_val = rng.integers(0, 4, 6).astype(label_dtype)
    with runner.scope():
        logits = tf.placeholder(tf_dtype(dtype), [None, 4])
        labels = tf.placeholder(tf_dtype(label_dtype), [None])
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    op = loss.op
    assert op.type == "SparseSoftmaxCrossEntropyWithLogits"
    assert op.name == "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits"
    assert op.outputs[1].shape.as_list() == [None, 4]
    got_loss, got_backprop = runner.run(list(op.outputs), {logits: logits_val,
                                                           labels: labels_val})
    want_loss, want_backprop = _np_sparse_xent(logits_val.astype(np.float64), labels_val)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12}
    np.testing.assert_allclose(got_loss, want_loss, **tol)
    np.testing.assert_allclose(got_backprop, want_backprop, **tol)


@covers("SparseSoftmaxCrossEntropyWithLogits")
@pytest.mark.parametrize("bad", [4, -1])
def test_sparse_xent_label_out_of_range(runner, bad):
    """On CPU TF raises; on GPU it returns NaN for that row and carries on."""
    with runner.scope():
        logits = tf.placeholder(tf.float32, [3, 4])
        labels = tf.placeholder(tf.int32, [3])
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    feeds = {logits: np.zeros((3, 4), np.float32), labels: np.array([1, bad, 2], np.int32)}
    if runner.device == "cpu":
        mark_executed("SparseSoftmaxCrossEntropyWithLogits")
        message = (rf"^Received a label value of {bad} which is outside the valid range of "
                   rf"\[0, 4\)\.  Label values: 1 {bad} 2")
        with pytest.raises(errors.InvalidArgumentError, match=message) as info:
            runner.run(loss, feeds)
        assert loss.op.name in str(info.value)
        return
    got = runner.run(loss, feeds)
    assert np.isnan(got[1]) and np.allclose(got[[0, 2]], np.log(4.0))


def test_sparse_xent_higher_rank_logits_reshape_like_tf():
    rng = np.random.default_rng(2)
    logits_val = rng.uniform(-3, 3, (2, 3, 5))
    labels_val = rng.integers(0, 5, (2, 3))
    with tf.Graph().as_default():
        labels = tf.placeholder(tf.int64, [None, 3])
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=tf.constant(logits_val))
        with tf.Session() as s:
            got = s.run(loss, {labels: labels_val})
    want, _ = _np_sparse_xent(logits_val.reshape(-1, 5), labels_val.reshape(-1))
    np.testing.assert_allclose(got, want.reshape(2, 3), rtol=1e-12)


def test_sparse_xent_float16_logits_compute_in_float32():
    with tf.Graph().as_default():
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=[0, 1], logits=tf.constant([[1.0, 2.0], [3.0, 1.0]], tf.float16))
        assert loss.dtype == tf.float16
        assert loss.op.inputs[0].op.inputs[0].dtype == tf.float32
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(loss), [1.3133, 2.1269], rtol=1e-3)


SPARSE_ERRORS = [
    (lambda: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.placeholder(tf.int32, [None]), logits=tf.placeholder(tf.float32, [None, 3, 4])),
     ValueError, r"^`labels\.shape\.rank` must equal `logits\.shape\.rank - 1`\. Received: "
                 r"labels\.shape=\(\?,\) of rank 1 and logits\.shape=\(\?, 3, 4\) of rank 3$"),
    (lambda: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.placeholder(tf.int32, [5]), logits=tf.placeholder(tf.float32, [4, 4])),
     ValueError, r"^`labels\.shape` must equal `logits\.shape` except for the last dimension\. "
                 r"Received: labels\.shape=\(5,\) and logits\.shape=\(4, 4\)$"),
    (lambda: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.placeholder(tf.float32, [5]), logits=tf.placeholder(tf.float32, [5, 4])),
     TypeError, r"^Value passed to parameter 'labels' has DataType float32 not in list of "
                r"allowed values: int32, int64$"),
    (lambda: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.placeholder(tf.int32, [5]), logits=tf.placeholder(tf.float32, [])),
     ValueError, r"^`logits` cannot be a scalar"),
    (lambda: tf.nn.sparse_softmax_cross_entropy_with_logits(
        [1], [[1.0, 2.0]]),
     ValueError, r"^Only call `sparse_softmax_cross_entropy_with_logits` with named "
                 r"arguments"),
    (lambda: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.zeros([2, 3]), logits=tf.zeros([2, 4])),
     ValueError, r"^`logits` and `labels` must have the same shape, received \(\(2, 4\) vs "
                 r"\(2, 3\)\)\.$"),
]


@pytest.mark.parametrize(("build", "error", "message"), SPARSE_ERRORS,
                         ids=[m[1:30] for _, _, m in SPARSE_ERRORS])
def test_cross_entropy_build_errors(build, error, message):
    with tf.Graph().as_default(), pytest.raises(error, match=message):
        build()


def _torch_sparse(logits, labels):
    return F.cross_entropy(logits, labels, reduction="none")


@grad_test("SparseSoftmaxCrossEntropyWithLogits")
@DYNAMIC
def test_sparse_xent_gradients(dynamic):
    rng = np.random.default_rng(3)
    logits = rng.uniform(-3, 3, (5, 4))
    labels = rng.integers(0, 4, 5).astype(np.int64)
    check_gradients(lambda lg, lb: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=lb, logits=lg), lambda lg, lb: _torch_sparse(lg, lb), [logits, labels],
        dynamic=dynamic)


@grad_test("SparseSoftmaxCrossEntropyWithLogits")
def test_sparse_xent_second_order_through_the_backprop_output():
    """d/dlogits of the loss's own gradient (softmax - onehot) needs the rule's
    softmax-Jacobian term, as TF adds it."""
    rng = np.random.default_rng(4)
    logits = rng.uniform(-3, 3, (5, 4))
    labels = rng.integers(0, 4, 5).astype(np.int64)
    weights = rng.uniform(-1, 1, (5, 4))

    def tf_fn(lg, lb):
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lb, logits=lg)
        return tf.gradients(tf.reduce_sum(loss), lg)[0] * tf.constant(weights)

    def torch_fn(lg, lb):
        grad = torch.autograd.grad(_torch_sparse(lg, lb).sum(), lg, create_graph=True)[0]
        return grad * torch.tensor(weights)
    check_gradients(tf_fn, torch_fn, [logits, labels])


# ---- sigmoid and weighted cross entropy ----

def test_sigmoid_xent_values_from_tf_docs():
    logits = [1., -1., 0., 1., -1., 0., 0.]
    labels = [0., 0., 0., 1., 1., 1., 0.5]
    with tf.Graph().as_default():
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        assert loss.op.name == "logistic_loss"
        with tf.Session() as s:
            got = s.run(loss)
    np.testing.assert_allclose(got, [1.3132617, 0.3132617, 0.6931472, 0.3132617, 1.3132617,
                                     0.6931472, 0.6931472], rtol=1e-6)


def test_sigmoid_xent_stays_finite_for_large_logits():
    with tf.Graph().as_default():
        loss = tf.nn.sigmoid_cross_entropy_with_logits(
            labels=[1.0, 0.0, 1.0, 0.0], logits=[100.0, -100.0, -100.0, 100.0])
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(loss), [0.0, 0.0, 100.0, 100.0], atol=1e-6)


def _torch_sigmoid_xent(logits, labels):
    return F.binary_cross_entropy_with_logits(logits, labels, reduction="none")


@DYNAMIC
def test_sigmoid_xent_gradients(dynamic):
    rng = np.random.default_rng(5)
    logits = rng.uniform(0.1, 4, (4, 3)) * rng.choice([-1.0, 1.0], (4, 3))
    labels = rng.uniform(0, 1, (4, 3))
    check_gradients(lambda x, z: tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
                    _torch_sigmoid_xent, [logits, labels], dynamic=dynamic)


def test_sigmoid_xent_gradient_at_zero_logits_is_sigmoid_minus_label():
    """A zero-initialised output layer gives logits of exactly 0: TF's select-based
    formula gives sigmoid(0) - z there, not the one-sided -z a plain relu/abs would."""
    with tf.Graph().as_default():
        x = tf.zeros([3])
        z = tf.constant([0.0, 1.0, 0.25])
        grad = tf.gradients(tf.reduce_sum(
            tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)), x)[0]
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(grad), [0.5, -0.5, 0.25], rtol=1e-6)


@DYNAMIC
@pytest.mark.parametrize("pos_weight", [1.0, 3.0, 0.5])
def test_weighted_cross_entropy(pos_weight, dynamic):
    rng = np.random.default_rng(6)
    logits = rng.uniform(0.1, 4, (4, 3)) * rng.choice([-1.0, 1.0], (4, 3))
    labels = rng.uniform(0, 1, (4, 3))

    def torch_fn(x, z):
        return F.binary_cross_entropy_with_logits(
            x, z, pos_weight=torch.tensor(pos_weight, dtype=torch.float64), reduction="none")
    check_gradients(lambda x, z: tf.nn.weighted_cross_entropy_with_logits(
        labels=z, logits=x, pos_weight=pos_weight), torch_fn, [logits, labels],
        dynamic=dynamic)
    with tf.Graph().as_default():
        loss = tf.nn.weighted_cross_entropy_with_logits(targets=labels, logits=logits,
                                                        pos_weight=pos_weight)
        with tf.Session() as s:
            got = s.run(loss)
    want = torch_fn(torch.tensor(logits), torch.tensor(labels)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)


# ---- softmax cross entropy along a non-last axis ----

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_cross_entropy_along_an_axis(axis):
    rng = np.random.default_rng(7)
    logits = rng.uniform(-3, 3, (3, 4))
    labels = rng.dirichlet(np.ones(logits.shape[axis]), logits.shape[1 - axis % 2])
    labels = labels if axis % 2 else labels.T

    def torch_fn(x, z):
        return -(z * torch.log_softmax(x, axis)).sum(axis)
    check_gradients(lambda x, z: tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=z, logits=x, axis=axis), torch_fn, [logits, labels])
