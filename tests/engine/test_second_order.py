"""Second-order gradients: the rules of SigmoidGrad, TanhGrad and ReluGrad (TF's math_grad.py
_SigmoidGradGrad, _TanhGradGrad and nn_grad.py _ReluGradGrad) against torch autograd with
create_graph=True, a Hessian-vector product through a small MLP, and TF's LookupError for an
op on the path that has no gradient."""

import numpy as np
import pytest
import torch
from grad_harness import away_from_zero, check_gradients, grad_test, rand

import engine as tf
from engine.ops.registry import get_op_def


def _first_order(tf_act, x, dy):
    return tf.gradients(tf_act(x), x, grad_ys=dy)[0]


def _torch_first_order(torch_act, x, dy):
    return torch.autograd.grad(torch_act(x), x, grad_outputs=dy, create_graph=True)[0]


# dy depends on x as well, so the second-order rule's gradients to both inputs of the
# fused op (the activation's output and the incoming gradient) are exercised.
@pytest.mark.parametrize("op_type, tf_act, torch_act", [
    ("SigmoidGrad", tf.sigmoid, torch.sigmoid),
    ("TanhGrad", tf.tanh, torch.tanh),
    ("ReluGrad", tf.nn.relu, torch.relu),
], ids=["sigmoid", "tanh", "relu"])
@grad_test("SigmoidGrad", "TanhGrad", "ReluGrad")
def test_second_derivative_matches_torch(op_type, tf_act, torch_act):
    x_val = away_from_zero(np.random.default_rng(3), (3, 4))
    check_gradients(lambda x: _first_order(tf_act, x, tf.square(x)),
                    lambda x: _torch_first_order(torch_act, x, torch.square(x)), [x_val])


@pytest.mark.parametrize("tf_act, torch_act", [
    (tf.sigmoid, torch.sigmoid), (tf.tanh, torch.tanh)], ids=["sigmoid", "tanh"])
def test_d2y_dx2_is_the_analytic_second_derivative(tf_act, torch_act):
    x_val = rand(np.random.default_rng(4), (5,))
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [5])
        dy_dx = tf.gradients(tf_act(x), x)[0]
        d2y_dx2 = tf.gradients(dy_dx, x)[0]
        with tf.Session() as sess:
            got = sess.run(d2y_dx2, {x: x_val})
    s = torch_act(torch.from_numpy(x_val)).numpy()
    want = s * (1 - s) * (1 - 2 * s) if tf_act is tf.sigmoid else -2 * s * (1 - s * s)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _mlp(tf_or_torch, x, params):
    """tanh -> sigmoid -> relu layers and a squared error, written once for both sides."""
    w1, b1, w2, b2, w3, b3 = params
    if tf_or_torch is torch:
        h = torch.tanh(x @ w1 + b1)
        h = torch.sigmoid(h @ w2 + b2)
        h = torch.relu(h @ w3 + b3)
        return torch.sum(torch.square(h - 0.5))
    h = tf.tanh(tf.matmul(x, w1) + b1)
    h = tf.sigmoid(tf.matmul(h, w2) + b2)
    h = tf.nn.relu(tf.matmul(h, w3) + b3)
    return tf.reduce_sum(tf.square(h - 0.5))


def test_hessian_vector_product_through_an_mlp():
    rng = np.random.default_rng(5)
    shapes = [(4, 6), (6,), (6, 5), (5,), (5, 3), (3,)]
    values = [rand(rng, s, -1.0, 1.0) for s in shapes]
    vectors = [rand(rng, s, -1.0, 1.0) for s in shapes]
    x_val = rand(rng, (8, 4))
    # d/dp (grad(loss) . v) for every parameter p, with torch's double backward.
    ts = [torch.from_numpy(v.copy()).requires_grad_() for v in values]
    grads_t = torch.autograd.grad(_mlp(torch, torch.from_numpy(x_val), ts), ts,
                                  create_graph=True)
    dot_t = sum((g * torch.from_numpy(v)).sum() for g, v in zip(grads_t, vectors))
    want = [h.numpy() for h in torch.autograd.grad(dot_t, ts)]
    with tf.Graph().as_default():
        params = [tf.placeholder(tf.float64, s) for s in shapes]
        x = tf.constant(x_val)
        grads = tf.gradients(_mlp(tf, x, params), params)
        dot = tf.add_n([tf.reduce_sum(g * tf.constant(v)) for g, v in zip(grads, vectors)])
        hvp = tf.gradients(dot, params)
        assert all(h is not None for h in hvp)
        assert {"SigmoidGrad", "TanhGrad", "ReluGrad"} <= {
            op.type for op in tf.get_default_graph().get_operations()
            if op.name.startswith("gradients_1/")}
        with tf.Session() as sess:
            got = sess.run(hvp, dict(zip(params, values)))
    assert max(np.abs(w).max() for w in want) > 1e-3   # the product is not trivially zero
    for i, (gv, wv) in enumerate(zip(got, want)):
        np.testing.assert_allclose(gv, wv, rtol=1e-10, atol=1e-12, err_msg=f"param {i}")


def test_op_without_gradient_on_the_path_raises_tfs_lookup_error(monkeypatch):
    monkeypatch.setattr(get_op_def("Exp"), "gradient", None)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        y = tf.exp(x, name="growth") * 2.0
        with pytest.raises(LookupError) as info:
            tf.gradients(y, x)
        assert str(info.value) == "No gradient defined for operation 'growth' (op type: Exp)"
        # Off the path (nothing flows back into it), a gradient-less op is not an error.
        z = tf.square(x) + tf.stop_gradient(tf.exp(x))
        assert tf.gradients(z, x)[0] is not None


def test_gradient_of_a_gradient_is_no_longer_none():
    # Before the second-order rules, SigmoidGrad counted as not differentiable and this
    # returned [None] without a word.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        first = tf.gradients(tf.sigmoid(x), x)[0]
        assert tf.gradients(first, x)[0] is not None
