"""Writes layers_tf_reference.npz: a small tf.layers net with fixed weights (conv2d, pooling,
conv2d_transpose, batch_normalization, flatten, dropout, dense), its outputs, gradients and
moving averages as real TensorFlow computes them. test_layers.py rebuilds the net on the
engine and compares. Regenerate with a TensorFlow that still has tf.layers:

    TF_USE_LEGACY_KERAS=1 /work/tfref/bin/python tests/engine/data/make_layers_reference.py
"""

from __future__ import annotations

import pathlib

import numpy as np


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "x": rng.normal(size=(4, 6, 6, 2)).astype(np.float32),
        "k1": (rng.normal(size=(3, 3, 2, 3)) * 0.5).astype(np.float32),
        "b1": (rng.normal(size=(3,)) * 0.1).astype(np.float32),
        "k2": (rng.normal(size=(3, 3, 2, 3)) * 0.5).astype(np.float32),
        "k3": (rng.normal(size=(72, 5)) * 0.2).astype(np.float32),
        "b3": rng.normal(size=(5,)).astype(np.float32),
        "gamma": rng.uniform(0.5, 1.5, size=(2,)).astype(np.float32),
        "h": (rng.normal(size=(8, 3)) * 2 + 1).astype(np.float32),
    }


def build(tf, v: dict):
    """The net, written once for both TensorFlow and the engine. Returns the placeholders
    and the tensors to compare."""
    x = tf.placeholder(tf.float32, [None, 6, 6, 2])
    h = tf.placeholder(tf.float32, [None, 3])
    training = tf.placeholder(tf.bool, [])
    c = tf.layers.conv2d(x, 3, 3, padding="same", activation=tf.nn.relu,
                         kernel_initializer=tf.constant_initializer(v["k1"]),
                         bias_initializer=tf.constant_initializer(v["b1"]))
    p = tf.layers.max_pooling2d(c, 2, 2)
    a = tf.layers.average_pooling2d(c, 3, 1, padding="same")
    t = tf.layers.conv2d_transpose(p, 2, 3, strides=2, padding="same",
                                   kernel_initializer=tf.constant_initializer(v["k2"]))
    bn = tf.layers.batch_normalization(t, training=True, momentum=0.9,
                                       gamma_initializer=tf.constant_initializer(v["gamma"]))
    d = tf.layers.dropout(tf.layers.flatten(bn), 0.5, training=False)
    y = tf.layers.dense(d, 5, kernel_initializer=tf.constant_initializer(v["k3"]),
                        bias_initializer=tf.constant_initializer(v["b3"]))
    bn2 = tf.layers.batch_normalization(h, training=training, momentum=0.8, epsilon=0.01,
                                        center=False)
    loss = tf.reduce_sum(y * y) + tf.reduce_sum(bn2)
    grads = tf.gradients(loss, tf.trainable_variables())
    return (x, h, training), [c, p, a, t, bn, y, bn2], grads


def run(tf, v: dict) -> dict[str, np.ndarray]:
    """Outputs and gradients of one training step, then the moving averages after updates
    with training True, False, True, and the inference output in between."""
    g = tf.Graph()
    with g.as_default():
        (x, h, training), outputs, grads = build(tf, v)
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        feed = {x: v["x"], h: v["h"]}
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            values = s.run(outputs + grads, {**feed, training: True})
            s.run(updates, {**feed, training: True})
            s.run(updates, {**feed, training: False})
            inference = s.run(outputs[-1], {h: v["h"], training: False})
            s.run(updates, {**feed, training: True})
            names = [var.name for var in tf.global_variables()]
            variables = s.run(tf.global_variables())
    result = {f"out{i}": value for i, value in enumerate(values)}
    result["inference"] = inference
    result.update({f"var:{n}": value for n, value in zip(names, variables)})
    return result


if __name__ == "__main__":
    import tensorflow.compat.v1 as tf_v1
    tf_v1.disable_v2_behavior()
    data = inputs()
    data.update(run(tf_v1, data))
    np.savez(pathlib.Path(__file__).with_name("layers_tf_reference.npz"), **data)
