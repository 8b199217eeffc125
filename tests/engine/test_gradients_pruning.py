"""Gradients of inputs that lead back to no x are dropped before gate_gradients groups an op's
input gradients, so the backprop ops nothing reads (a first convolution's
Conv2DBackpropInput) do not run every step."""

from __future__ import annotations

import numpy as np

import engine as tf


def _ancestors(tensors) -> set:
    """Every op the tensors depend on, through data and control edges."""
    seen, stack = set(), [t.op for t in tensors]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return seen


def _first_conv_model():
    images = tf.placeholder(tf.float32, [None, 4, 4, 1], name="images")
    w = tf.Variable(np.ones((3, 3, 1, 2), np.float32), name="w")
    y = tf.nn.conv2d(images, w, [1, 1, 1, 1], "SAME")
    return images, w, tf.reduce_sum(y * y)


def test_gated_filter_gradient_does_not_wait_for_the_images_gradient():
    with tf.Graph().as_default() as g:
        _, w, loss = _first_conv_model()
        (dw,) = tf.gradients(loss, [w], gate_gradients=True)
        types = {op.type for op in _ancestors([dw])}
        assert "Conv2DBackpropFilter" in types
        assert "Conv2DBackpropInput" not in types
        # The rule still made the op (TF's graph has it too); only nothing waits for it.
        assert any(op.type == "Conv2DBackpropInput" for op in g.get_operations())


def test_gated_gradients_with_respect_to_both_inputs_keep_both():
    with tf.Graph().as_default():
        images, w, loss = _first_conv_model()
        grads = tf.gradients(loss, [images, w], gate_gradients=True)
        types = {op.type for op in _ancestors(grads)}
        assert {"Conv2DBackpropInput", "Conv2DBackpropFilter"} <= types
        assert grads[0].op.type == "Identity" and grads[1].op.type == "Identity"


def test_pruned_step_gives_the_same_gradient_values():
    x = np.arange(32, dtype=np.float32).reshape(2, 4, 4, 1) / 10
    values = []
    for gate in (False, True):
        with tf.Graph().as_default():
            images, w, loss = _first_conv_model()
            (dw,) = tf.gradients(loss, [w], gate_gradients=gate)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                values.append(sess.run(dw, {images: x}))
    np.testing.assert_allclose(values[1], values[0], rtol=1e-6)
    assert np.abs(values[0]).sum() > 0
