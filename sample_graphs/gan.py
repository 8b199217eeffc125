"""A small TF1-style GAN on the 8x8 digits: a dense generator from 16-d normal noise and a
dense discriminator, built with tf.variable_scope (the discriminator reused for fake inputs),
sigmoid cross entropy losses and one Adam optimizer per network over its own
tf.trainable_variables(scope). Only the import differs from a TensorFlow 1.x script.

Usage: python sample_graphs/gan.py [--steps 1500]"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import engine as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits  # noqa: E402

NOISE = 16


def generator(z):
    with tf.variable_scope("generator"):
        hidden = tf.layers.dense(z, 64, activation=tf.nn.leaky_relu)
        return tf.layers.dense(hidden, 64, activation=tf.sigmoid, name="pixels")


def discriminator(pixels, reuse=False):
    with tf.variable_scope("discriminator", reuse=reuse):
        hidden = tf.layers.dense(pixels, 64, activation=tf.nn.leaky_relu)
        return tf.layers.dense(hidden, 1, name="logit")


def build_model(batch_size: int, learning_rate: float = 0.002):
    real = tf.placeholder(tf.float32, [None, 64], name="real")
    z = tf.random_normal([batch_size, NOISE], name="noise")
    fake = generator(z)
    real_logit = discriminator(real)
    fake_logit = discriminator(fake, reuse=True)
    xent = tf.nn.sigmoid_cross_entropy_with_logits
    with tf.name_scope("d_loss"):
        d_loss = tf.reduce_mean(xent(labels=tf.ones_like(real_logit), logits=real_logit)) + \
            tf.reduce_mean(xent(labels=tf.zeros_like(fake_logit), logits=fake_logit))
    with tf.name_scope("g_loss"):
        g_loss = tf.reduce_mean(xent(labels=tf.ones_like(fake_logit), logits=fake_logit))
    d_vars = tf.trainable_variables("discriminator")
    g_vars = tf.trainable_variables("generator")
    d_train = tf.train.AdamOptimizer(learning_rate, beta1=0.5).minimize(
        d_loss, var_list=d_vars, name="d_adam")
    g_train = tf.train.AdamOptimizer(learning_rate, beta1=0.5).minimize(
        g_loss, var_list=g_vars, name="g_adam")
    return {"real": real, "fake": fake, "d_loss": d_loss, "g_loss": g_loss,
            "d_train": d_train, "g_train": g_train, "d_vars": d_vars, "g_vars": g_vars}


def train(steps: int = 1500, batch_size: int = 64, seed: int = 0) -> dict:
    """Alternates one discriminator and one generator step; returns the final losses and how
    closely the mean generated image matches the mean real image (Pearson correlation)."""
    data = digits.read_data_sets(seed)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = build_model(batch_size)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                batch, _ = data.train.next_batch(batch_size)
                feed = {model["real"]: batch.reshape(-1, 64)}
                d_loss, _ = sess.run([model["d_loss"], model["d_train"]], feed)
                g_loss, _ = sess.run([model["g_loss"], model["g_train"]], feed)
            samples = np.concatenate([sess.run(model["fake"]) for _ in range(8)])
    real_mean = data.train.images.reshape(-1, 64).mean(axis=0)
    correlation = float(np.corrcoef(samples.mean(axis=0), real_mean)[0, 1])
    return {"d_loss": float(d_loss), "g_loss": float(g_loss),
            "mean_image_correlation": correlation,
            "d_vars": [v.op.name for v in model["d_vars"]],
            "g_vars": [v.op.name for v in model["g_vars"]]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args(argv)
    result = train(args.steps)
    print(f"d_loss {result['d_loss']:.4f}, g_loss {result['g_loss']:.4f}, mean-image "
          f"correlation {result['mean_image_correlation']:.3f}")
    print("discriminator variables:", ", ".join(result["d_vars"]))
    print("generator variables:", ", ".join(result["g_vars"]))


if __name__ == "__main__":
    main()
