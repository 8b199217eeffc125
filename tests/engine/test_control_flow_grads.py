"""Gradients through tf.cond (the Switch and Merge rules) against torch.autograd on the branch
the predicate picks, both ways, nested, with an input only one branch uses, and through
hand-built Switch/Merge; the backward pass runs only the taken branch's gradient ops."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from grad_harness import DYNAMIC, check_gradients, grad_test, rand

import engine as tf
from engine.ops import control_flow_ops as cfo


@grad_test("Switch", "Merge")
@DYNAMIC
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["true_branch", "false_branch"])
def test_cond_gradient_follows_the_taken_branch(dynamic, sign):
    x_val = sign * np.abs(rand(np.random.default_rng(3), (3, 2))) + sign * 0.1
    y_val = rand(np.random.default_rng(4), (3, 2))

    def tf_fn(x, y):
        return tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * y + tf.exp(x), lambda: tf.tanh(x) - y)

    def torch_fn(x, y):
        return x * y + torch.exp(x) if float(x.detach().sum()) > 0 else torch.tanh(x) - y
    check_gradients(tf_fn, torch_fn, [x_val, y_val], dynamic=dynamic)


@grad_test("Switch", "Merge")
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["uses_y", "ignores_y"])
def test_an_input_of_one_branch_gets_zeros_when_the_other_runs(sign):
    x_val = np.full((2, 2), sign)
    y_val = rand(np.random.default_rng(5), (2, 2))

    def tf_fn(x, y):
        return tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * y, lambda: x * 3.0)

    def torch_fn(x, y):
        return x * y if float(x.detach().sum()) > 0 else x * 3.0 + 0.0 * y
    check_gradients(tf_fn, torch_fn, [x_val, y_val])


@grad_test("Switch", "Merge")
@pytest.mark.parametrize("value", [-3.0, 1.0, 4.0])
def test_nested_cond_gradients(value):
    x_val = np.full((2,), value)

    def tf_fn(x):
        s = tf.reduce_sum(x)
        return tf.cond(s > 0.0, lambda: tf.cond(s > 5.0, lambda: x * x, lambda: x * x * x),
                       lambda: -x)

    def torch_fn(x):
        s = float(x.detach().sum())
        return (x * x if s > 5.0 else x * x * x) if s > 0 else -x
    check_gradients(tf_fn, torch_fn, [x_val])


@grad_test("Switch", "Merge")
@pytest.mark.parametrize("flag", [True, False])
def test_hand_built_switch_and_merge_gradients(flag):
    """Without a cond context the rules switch on the Switch's own predicate and on the
    Merge's value_index."""
    x_val = rand(np.random.default_rng(6), (3,))

    def tf_fn(x):
        out_false, out_true = cfo.switch(x, tf.constant(flag))
        return cfo.merge([tf.sin(out_false), out_true * 2.0]).output

    def torch_fn(x):
        return x * 2.0 if flag else torch.sin(x)
    check_gradients(tf_fn, torch_fn, [x_val])


def test_only_the_taken_branch_gradient_ops_run():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        y = tf.cond(x > 0.0, lambda: tf.exp(x), lambda: tf.sin(x))
        (dx,) = tf.gradients(y, [x])
        with tf.Session() as sess:
            metadata = tf.RunMetadata()
            got = sess.run(dx, {x: 1.0}, options=tf.RunOptions(trace_level=3),
                           run_metadata=metadata)
        ran = {ns.node_name for d in metadata.step_stats.dev_stats for ns in d.node_stats}
    np.testing.assert_allclose(got, np.exp(1.0), rtol=1e-6)
    assert any(name.startswith("gradients/cond/Exp_grad") for name in ran)
    assert not any(name.startswith("gradients/cond/Sin_grad") for name in ran)

