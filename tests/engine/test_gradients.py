"""tf.gradients against torch autograd: every core rule in GRADIENTS on seeded random inputs
(static and dynamic shapes, broadcasting, transposes, reductions), aggregation, stopping,
TF's gradient op names, grad_ys, an MLP, and one GradientDescentOptimizer step."""

from __future__ import annotations

import functools
import itertools
import zlib

import numpy as np
import pytest
import torch
from grad_harness import (
    DYNAMIC,
    FLOAT32,
    GRAD_TESTED,
    TIGHT,
    away_from_zero,
    check_gradients,
    grad_test,
    import_every_test_module,
    placeholder_for,
    rand,
)

import engine as tf
from engine.ops import math_ops
from engine.ops.grads import GRADIENTS

# ---- broadcasting binary ops ----

BINARY = {
    "Add": (tf.add, torch.add),
    "Sub": (tf.subtract, torch.sub),
    "Mul": (tf.multiply, torch.mul),
    "RealDiv": (tf.divide, torch.div),
    "SquaredDifference": (tf.squared_difference, lambda x, y: (x - y) ** 2),
    "Maximum": (tf.maximum, torch.maximum),
    "Minimum": (tf.minimum, torch.minimum),
}
SHAPE_PAIRS = [((4, 3), (4, 3)), ((4, 3), (3,)), ((4, 3), (4, 1)), ((4, 1), (1, 3)),
               ((3,), (4, 3)), ((), (4, 3)), ((2, 1, 3), (4, 1))]


@grad_test(*BINARY)
@DYNAMIC
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("op_type", sorted(BINARY))
def test_binary_broadcast_gradients(op_type, shapes, dynamic):
    rng = np.random.default_rng(zlib.crc32(f"{op_type}{shapes}".encode()))
    x = rand(rng, shapes[0])
    # Continuous random values: no ties for Maximum/Minimum, no zeros for RealDiv.
    y = away_from_zero(rng, shapes[1]) if op_type == "RealDiv" else rand(rng, shapes[1])
    check_gradients(*BINARY[op_type], [x, y], dynamic=dynamic)


def test_dynamic_broadcast_uses_broadcast_gradient_args():
    g, _ = check_gradients(tf.add, torch.add, [np.ones((4, 3)), np.ones((4, 1))],
                           dynamic=True)
    assert "BroadcastGradientArgs" in {op.type for op in g.get_operations()}
    g, _ = check_gradients(tf.add, torch.add, [np.ones((4, 3)), np.ones((4, 1))])
    assert "BroadcastGradientArgs" not in {op.type for op in g.get_operations()}


# ---- MatMul ----

@grad_test("MatMul")
@DYNAMIC
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul_gradients(transpose_a, transpose_b, dynamic):
    rng = np.random.default_rng(1)
    a = rand(rng, (4, 3) if transpose_a else (3, 4))
    b = rand(rng, (5, 4) if transpose_b else (4, 5))

    def torch_fn(a, b):
        return (a.t() if transpose_a else a) @ (b.t() if transpose_b else b)
    check_gradients(functools.partial(tf.matmul, transpose_a=transpose_a,
                                      transpose_b=transpose_b), torch_fn, [a, b],
                    dynamic=dynamic)


# ---- reductions ----

REDUCE = {"Sum": (tf.reduce_sum, torch.sum), "Mean": (tf.reduce_mean, torch.mean)}


@grad_test(*REDUCE)
@DYNAMIC
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, [0, 2], [-3, -2]], ids=str)
@pytest.mark.parametrize("op_type", sorted(REDUCE))
def test_reduction_gradients(op_type, axis, keepdims, dynamic):
    tf_reduce, torch_reduce = REDUCE[op_type]
    x = rand(np.random.default_rng(2), (2, 3, 4))
    dims = tuple(range(3)) if axis is None else tuple(np.atleast_1d(axis).tolist())
    check_gradients(lambda x: tf_reduce(x, axis=axis, keepdims=keepdims),
                    lambda x: torch_reduce(x, dim=dims, keepdim=keepdims), [x],
                    dynamic=dynamic)


# ---- unary ops ----

UNARY = {
    "Identity": (tf.identity, lambda x: x * 1, None),
    "Neg": (tf.negative, torch.neg, None),
    "Square": (tf.square, torch.square, None),
    "Abs": (tf.abs, torch.abs, "nonzero"),
    "Exp": (tf.exp, torch.exp, None),
    "Log": (tf.log, torch.log, "positive"),
    "Sqrt": (tf.sqrt, torch.sqrt, "positive"),
    "Reciprocal": (math_ops.reciprocal, torch.reciprocal, "nonzero"),
    "Sigmoid": (tf.sigmoid, torch.sigmoid, None),
    "Tanh": (tf.tanh, torch.tanh, None),
    "Relu": (tf.nn.relu, torch.relu, "nonzero"),
    "Softmax": (tf.nn.softmax, lambda x: torch.softmax(x, -1), None),
    "LogSoftmax": (tf.nn.log_softmax, lambda x: torch.log_softmax(x, -1), None),
}


@grad_test(*UNARY)
@DYNAMIC
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("op_type", sorted(UNARY))
def test_unary_gradients(op_type, shape, dynamic):
    tf_fn, torch_fn, domain = UNARY[op_type]
    rng = np.random.default_rng(3)
    if domain == "positive":
        x = rand(rng, shape, 0.2, 3.0)
    elif domain == "nonzero":
        x = away_from_zero(rng, shape, 0.1, 2.0)
    else:
        x = rand(rng, shape)
    check_gradients(tf_fn, torch_fn, [x], dynamic=dynamic)


@pytest.mark.parametrize("op_type", ["Square", "Exp", "Sigmoid", "Tanh", "Relu", "Softmax",
                                     "LogSoftmax", "Sqrt", "Reciprocal"])
def test_unary_gradients_float32(op_type):
    tf_fn, torch_fn, domain = UNARY[op_type]
    x = rand(np.random.default_rng(4), (6, 5), 0.2 if domain else -2.0, 2.0, np.float32)
    _, grads = check_gradients(tf_fn, torch_fn, [x], tol=FLOAT32)
    assert grads[0].dtype == tf.float32


# ---- softmax cross entropy ----

def _torch_xent(logits, labels):
    return -(labels * torch.log_softmax(logits, -1)).sum(-1)


def _labels(rng, shape):
    e = np.exp(rand(rng, shape))
    return e / e.sum(axis=-1, keepdims=True)


@grad_test("SoftmaxCrossEntropyWithLogits")
@DYNAMIC
def test_softmax_cross_entropy_gradients_into_logits_and_labels(dynamic):
    rng = np.random.default_rng(5)
    logits, labels = rand(rng, (6, 5), -3, 3), _labels(rng, (6, 5))

    def tf_fn(logits, labels):
        return tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    _, grads = check_gradients(tf_fn, _torch_xent, [logits, labels], dynamic=dynamic)
    assert grads[1] is not None


@grad_test("SoftmaxCrossEntropyWithLogits")
def test_softmax_cross_entropy_unused_backprop_output_gets_zeros():
    """The second output reaches the loss only through stop_gradient: its gradient is a
    ZerosLike, and the logits/labels gradients are those of the loss alone."""
    rng = np.random.default_rng(6)
    logits, labels = rand(rng, (3, 4)), _labels(rng, (3, 4))

    def tf_fn(logits, labels):
        xent = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
        return tf.expand_dims(xent, -1) + tf.stop_gradient(xent.op.outputs[1])
    g, _ = check_gradients(tf_fn, lambda lo, la: _torch_xent(lo, la).unsqueeze(-1)
                           + (torch.softmax(lo, -1) - la).detach(), [logits, labels])
    assert "ZerosLike" in {op.type for op in g.get_operations()}


@grad_test("SoftmaxCrossEntropyWithLogits")
@DYNAMIC
def test_softmax_cross_entropy_backprop_output_in_the_loss(dynamic):
    """Differentiating through the op's second output (softmax - labels) adds TF's
    second-order term to the logits gradient."""
    rng = np.random.default_rng(7)
    logits, labels = rand(rng, (3, 4)), _labels(rng, (3, 4))

    def tf_fn(logits):
        xent = tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.constant(labels),
                                                          logits=logits)
        return tf.expand_dims(xent, -1) + tf.square(xent.op.outputs[1])

    def torch_fn(lo):
        la = torch.from_numpy(labels)
        return _torch_xent(lo, la).unsqueeze(-1) + torch.square(torch.softmax(lo, -1) - la)
    check_gradients(tf_fn, torch_fn, [logits], dynamic=dynamic)


def test_v1_softmax_cross_entropy_gives_no_gradient_to_labels():
    with tf.Graph().as_default():
        logits = tf.placeholder(tf.float64, [None, 3])
        labels = tf.placeholder(tf.float64, [None, 3])
        loss = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        g_logits, g_labels = tf.gradients(loss, [logits, labels])
    assert g_logits is not None and g_labels is None


# ---- array ops ----

@grad_test("Reshape")
@DYNAMIC
@pytest.mark.parametrize("target", [[6, -1], [-1], [4, 3, 2], [2, 12]], ids=str)
def test_reshape_gradients(target, dynamic):
    x = rand(np.random.default_rng(7), (2, 3, 4))
    check_gradients(lambda x: tf.reshape(x, target), lambda x: x.reshape(target), [x],
                    dynamic=dynamic)


@grad_test("ExpandDims")
@DYNAMIC
@pytest.mark.parametrize("axis", [0, 1, -1, -3])
def test_expand_dims_gradients(axis, dynamic):
    x = rand(np.random.default_rng(8), (4, 3))
    check_gradients(lambda x: tf.expand_dims(x, axis), lambda x: x.unsqueeze(axis), [x],
                    dynamic=dynamic)


@grad_test("Cast")
@pytest.mark.parametrize("src, dst", [(np.float32, np.float64), (np.float64, np.float32)])
def test_cast_float_gradients(src, dst):
    x = rand(np.random.default_rng(9), (3, 4), dtype=src)
    torch_dst = torch.float64 if dst == np.float64 else torch.float32
    _, grads = check_gradients(lambda x: tf.cast(x, tf.as_dtype(np.dtype(dst))) * 1.5,
                               lambda x: x.to(torch_dst) * 1.5, [x], tol=FLOAT32)
    assert grads[0].dtype == tf.as_dtype(np.dtype(src))


def test_cast_from_integer_gives_no_gradient():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [3])
        y = tf.reduce_sum(tf.cast(x, tf.float32) * 2.0)
        assert tf.gradients(y, [x]) == [None]


@grad_test("BroadcastTo")
@DYNAMIC
@pytest.mark.parametrize("src, target", [((3,), (4, 3)), ((4, 1), (2, 4, 3)),
                                         ((1, 3), (5, 3)), ((), (2, 2)), ((2, 3), (2, 3))],
                         ids=str)
def test_broadcast_to_gradients(src, target, dynamic):
    x = rand(np.random.default_rng(10), src)
    check_gradients(lambda x: tf.broadcast_to(x, list(target)), lambda x: x.expand(target),
                    [x], dynamic=dynamic)


@grad_test("Fill")
def test_fill_gradient_flows_into_the_value():
    value = np.array(1.75)
    check_gradients(lambda v: tf.fill([2, 3], v), lambda v: v.expand(2, 3), [value])


@grad_test("AddN")
@DYNAMIC
def test_add_n_gradients(dynamic):
    rng = np.random.default_rng(11)
    vals = [rand(rng, (3, 4)) for _ in range(3)]
    check_gradients(lambda a, b, c: tf.add_n([a, b * b, c]), lambda a, b, c: a + b * b + c,
                    vals, dynamic=dynamic)


def test_every_gradient_rule_has_a_test():
    import_every_test_module()
    assert set(GRADIENTS) - GRAD_TESTED == set(), "gradient rules without a torch check"
    assert GRAD_TESTED - set(GRADIENTS) == set(), "tests claim rules that do not exist"


# ---- tf.gradients mechanics ----

def test_two_consumers_aggregate_with_add_n():
    x_val = rand(np.random.default_rng(12), (3, 2))
    _, grads = check_gradients(lambda x: tf.exp(x) + tf.square(x),
                               lambda x: torch.exp(x) + torch.square(x), [x_val])
    assert grads[0].op.type == "AddN"
    assert grads[0].op.name == "gradients/AddN"
    assert len(grads[0].op.inputs) == 2


def test_three_uses_of_one_tensor_sum_into_one_add_n():
    x_val = rand(np.random.default_rng(13), (4,))
    _, grads = check_gradients(lambda x: x * x * x, lambda x: x * x * x, [x_val])
    add_ns = [op for op in grads[0].graph.get_operations() if op.type == "AddN"]
    assert grads[0].op in add_ns


def test_unreachable_x_gets_none():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        z = tf.placeholder(tf.float32, [2])
        y = tf.reduce_sum(x * 3.0)
        gx, gz = tf.gradients(y, [x, z])
        assert gz is None and gx is not None
        assert tf.gradients(y, z) == [None]


def test_stop_gradient_blocks_its_input():
    x_val = rand(np.random.default_rng(14), (5,))
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float64, [5])
        y = tf.reduce_sum(x * tf.stop_gradient(x))
        gx, = tf.gradients(y, x)
        assert tf.gradients(tf.reduce_sum(tf.stop_gradient(x) * 2.0), x) == [None]
        with tf.Session(graph=g) as s:
            got = s.run(gx, {x: x_val})
    np.testing.assert_allclose(got, x_val, **TIGHT)   # not 2x: one factor is a constant


def test_stop_gradients_argument_treats_tensor_as_constant():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float64, [3])
        h = x * 2.0
        y = tf.reduce_sum(h + x)
        through, stopped = tf.gradients(y, x)[0], tf.gradients(y, x, stop_gradients=[h])[0]
        with tf.Session(graph=g) as s:
            got = s.run([through, stopped], {x: np.ones(3)})
    np.testing.assert_allclose(got[0], [3.0, 3.0, 3.0])
    np.testing.assert_allclose(got[1], [1.0, 1.0, 1.0])


def test_gradient_op_names_follow_tensorflow():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [2, 3], name="a")
        b = tf.placeholder(tf.float32, [3, 4], name="b")
        c = tf.matmul(a, b)
        assert c.op.name == "MatMul"
        ga, gb = tf.gradients(c, [a, b])
        assert ga.op.name == "gradients/MatMul_grad/MatMul"
        assert gb.op.name == "gradients/MatMul_grad/MatMul_1"
        assert ga.op.inputs[0].op.name == "gradients/Fill"
        assert ga.op.inputs[0].op.inputs[1].op.name == "gradients/grad_ys_0"
        again, _ = tf.gradients(c, [a, b])
        assert again.op.name == "gradients_1/MatMul_grad/MatMul"
        named, _ = tf.gradients(c, [a, b], name="backprop")
        assert named.op.name == "backprop/MatMul_grad/MatMul"


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_grad_ys_are_the_upstream_gradient(dynamic):
    rng = np.random.default_rng(15)
    x_val, w_val, gy_val = rand(rng, (4, 3)), rand(rng, (3, 2)), rand(rng, (4, 2))
    with tf.Graph().as_default() as g:
        x = placeholder_for(x_val, dynamic)
        w = tf.constant(w_val)
        y = tf.tanh(tf.matmul(x, w))
        gy = placeholder_for(gy_val, dynamic)
        gx, = tf.gradients(y, x, grad_ys=gy)
        with tf.Session(graph=g) as s:
            got = s.run(gx, {x: x_val, gy: gy_val})
    xt = torch.from_numpy(x_val).requires_grad_()
    yt = torch.tanh(xt @ torch.from_numpy(w_val))
    want, = torch.autograd.grad(yt, xt, grad_outputs=torch.from_numpy(gy_val))
    np.testing.assert_allclose(got, want.numpy(), **TIGHT)


def test_grad_ys_for_several_ys_sum_their_contributions():
    rng = np.random.default_rng(16)
    x_val, g1, g2 = rand(rng, (3,)), rand(rng, (3,)), rand(rng, (3,))
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float64, [3])
        y1, y2 = tf.square(x), tf.exp(x)
        gx, = tf.gradients([y1, y2], x, grad_ys=[tf.constant(g1), tf.constant(g2)])
        with tf.Session(graph=g) as s:
            got = s.run(gx, {x: x_val})
    np.testing.assert_allclose(got, g1 * 2 * x_val + g2 * np.exp(x_val), **TIGHT)


# ---- whole models ----

def _mlp_values(rng):
    x = rng.normal(size=(8, 5)).astype(np.float32)
    labels = np.eye(4, dtype=np.float32)[rng.integers(0, 4, size=8)]
    params = {"w1": rng.normal(0, 0.5, (5, 16)), "b1": rng.normal(0, 0.1, (16,)),
              "w2": rng.normal(0, 0.5, (16, 4)), "b2": rng.normal(0, 0.1, (4,))}
    return x, labels, {k: v.astype(np.float32) for k, v in params.items()}


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_mlp_gradients_match_torch(device):
    x_val, labels_val, params = _mlp_values(np.random.default_rng(17))
    g = tf.Graph()
    with g.as_default(), tf.device(f"/{device}:0"):
        x = tf.placeholder(tf.float32, [None, 5])
        labels = tf.placeholder(tf.float32, [None, 4])
        v = {k: tf.Variable(val, name=k) for k, val in params.items()}
        hidden = tf.nn.relu(tf.matmul(x, v["w1"]) + v["b1"])
        logits = tf.matmul(hidden, v["w2"]) + v["b2"]
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels,
                                                                         logits=logits))
        grads = tf.gradients(loss, [v[k] for k in params])
    config = tf.ConfigProto(virtual_gpus=1 if device == "gpu" else 0)
    with tf.Session(graph=g, config=config) as s:
        s.run(tf.global_variables_initializer())
        got_loss, *got = s.run([loss] + grads, {x: x_val, labels: labels_val})
        assert s.placement.device_of(grads[0].op.name).endswith(f"{device.upper()}:0")
    t = {k: torch.from_numpy(val).requires_grad_() for k, val in params.items()}
    h = torch.relu(torch.from_numpy(x_val) @ t["w1"] + t["b1"])
    logits_t = h @ t["w2"] + t["b2"]
    loss_t = _torch_xent(logits_t, torch.from_numpy(labels_val)).mean()
    want = torch.autograd.grad(loss_t, list(t.values()))
    np.testing.assert_allclose(got_loss, loss_t.item(), **FLOAT32)
    for name, gv, wv in zip(params, got, want):
        assert gv.shape == params[name].shape
        np.testing.assert_allclose(gv, wv.numpy(), **FLOAT32, err_msg=name)


def test_gradient_descent_minimize_on_linear_regression():
    rng = np.random.default_rng(18)
    x_val = rng.normal(size=(32, 3)).astype(np.float32)
    y_val = (x_val @ np.array([[1.5], [-2.0], [0.5]]) + 0.3).astype(np.float32)
    w0 = rng.normal(size=(3, 1)).astype(np.float32)
    b0 = np.zeros(1, np.float32)
    lr = 0.1
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.placeholder(tf.float32, [None, 1])
        w, b = tf.Variable(w0, name="w"), tf.Variable(b0, name="b")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        train = tf.train.GradientDescentOptimizer(lr).minimize(loss)
        assert {op.type for op in g.get_operations()} >= {"ApplyGradientDescent"}
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            feed = {x: x_val, y: y_val}
            first_loss = s.run(loss, feed)
            s.run(train, feed)
            w1, b1 = s.run([w, b])
            losses = [s.run([train, loss], feed)[1] for _ in range(30)]
    wt, bt = torch.from_numpy(w0).requires_grad_(), torch.from_numpy(b0).requires_grad_()
    loss_t = ((torch.from_numpy(x_val) @ wt + bt - torch.from_numpy(y_val)) ** 2).mean()
    gw, gb = torch.autograd.grad(loss_t, [wt, bt])
    np.testing.assert_allclose(first_loss, loss_t.item(), **FLOAT32)
    np.testing.assert_allclose(w1, w0 - lr * gw.numpy(), **FLOAT32)
    np.testing.assert_allclose(b1, b0 - lr * gb.numpy(), **FLOAT32)
    assert losses[-1] < 0.05 * first_loss
    assert all(later <= earlier for earlier, later in itertools.pairwise(losses))


# ---- Pow and Max ----

@grad_test("Pow")
@DYNAMIC
@pytest.mark.parametrize("shapes", [((4, 3), (4, 3)), ((4, 3), (3,)), ((4, 3), ())], ids=str)
def test_pow_gradients(shapes, dynamic):
    rng = np.random.default_rng(11)
    x = rand(rng, shapes[0], 0.3, 2.0)
    y = rand(rng, shapes[1], -1.5, 2.5)
    check_gradients(tf.pow, torch.pow, [x, y], dynamic=dynamic)


def test_pow_gradient_with_respect_to_exponent_is_zero_for_nonpositive_base():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([-2.0, 0.0, 3.0], dtype=tf.float64)
        y = tf.constant([2.0, 2.0, 2.0], dtype=tf.float64)
        _, gy = tf.gradients(tf.reduce_sum(tf.pow(x, y)), [x, y])
        with tf.Session(graph=g) as s:
            got = s.run(gy)
    np.testing.assert_allclose(got, [0.0, 0.0, 9.0 * np.log(3.0)])


@grad_test("Max")
@DYNAMIC
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, 1, [0, 2]], ids=str)
def test_reduce_max_gradients(axis, keepdims, dynamic):
    x = rand(np.random.default_rng(12), (2, 3, 4))
    dims = tuple(range(3)) if axis is None else tuple(np.atleast_1d(axis).tolist())
    check_gradients(lambda x: tf.reduce_max(x, axis=axis, keepdims=keepdims),
                    lambda x: torch.amax(x, dim=dims, keepdim=keepdims), [x], dynamic=dynamic)


def test_reduce_max_gradient_splits_ties_evenly():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]])
        (gx,) = tf.gradients(tf.reduce_max(x, axis=1), [x])
        with tf.Session(graph=g) as s:
            got = s.run(gx)
    np.testing.assert_allclose(got, [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])


def test_maximum_and_minimum_ties_send_the_gradient_to_x():
    """TF 2.21 tf.compat.v1: max(x, 2) at x=[1,2,3] gives dx [0,1,1], dy [1,0,0]; min gives
    dx [1,1,0], dy [0,0,1]."""
    g = tf.Graph()
    with g.as_default():
        x, y = tf.constant([1.0, 2.0, 3.0]), tf.constant([2.0, 2.0, 2.0])
        grads = tf.gradients(tf.reduce_sum(tf.maximum(x, y)), [x, y]) + \
            tf.gradients(tf.reduce_sum(tf.minimum(x, y)), [x, y])
        with tf.Session(graph=g) as s:
            got = s.run(grads)
    for value, want in zip(got, ([0, 1, 1], [1, 0, 0], [1, 1, 0], [0, 0, 1])):
        np.testing.assert_array_equal(value, want)


@grad_test("PlaceholderWithDefault")
def test_placeholder_with_default_passes_the_gradient_to_its_default():
    value = rand(np.random.default_rng(21), (3, 2))
    check_gradients(lambda x: tf.placeholder_with_default(x, [None, 2]) * 3.0,
                    lambda x: x * 3.0, [value])
