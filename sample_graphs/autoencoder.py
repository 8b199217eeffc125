"""A TF1-style dense autoencoder on the 8x8 digits (64 -> 32 -> 8 -> 32 -> 64), in the plain
Session style of the TF1 tutorials: a feed loop, merged summaries into a FileWriter, a Saver.
Only the import differs from a TensorFlow 1.x script.

Usage: python sample_graphs/autoencoder.py [--steps 600] [--logdir /tmp/autoencoder]"""

from __future__ import annotations

import argparse
import os
import sys

import engine as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits  # noqa: E402


def build_model(learning_rate: float = 0.01, code_size: int = 8):
    pixels = tf.placeholder(tf.float32, [None, 64], name="pixels")
    with tf.variable_scope("encoder"):
        hidden = tf.layers.dense(pixels, 32, activation=tf.nn.relu)
        code = tf.layers.dense(hidden, code_size, activation=tf.nn.relu, name="code")
    with tf.variable_scope("decoder"):
        hidden = tf.layers.dense(code, 32, activation=tf.nn.relu)
        logits = tf.layers.dense(hidden, 64)
        reconstruction = tf.sigmoid(logits, name="reconstruction")
    loss = tf.reduce_mean(tf.square(reconstruction - pixels), name="loss")
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    tf.summary.scalar("reconstruction_loss", loss)
    tf.summary.histogram("code", code)
    tf.summary.image("reconstruction", tf.reshape(reconstruction, [-1, 8, 8, 1]),
                     max_outputs=3)
    return {"pixels": pixels, "loss": loss, "train_op": train_op, "code": code,
            "reconstruction": reconstruction, "global_step": global_step}


def train(logdir: str, steps: int = 600, batch_size: int = 64, seed: int = 0) -> dict:
    """Trains, logs summaries every 50 steps, saves a checkpoint, and returns the test
    reconstruction loss before and after training."""
    data = digits.read_data_sets(seed)
    test_pixels = data.test.images.reshape(-1, 64)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = build_model()
        summaries = tf.summary.merge_all()
        saver = tf.train.Saver(max_to_keep=2)
        init = tf.global_variables_initializer()
        with tf.Session() as sess:
            writer = tf.summary.FileWriter(logdir, sess.graph)
            sess.run(init)
            before = sess.run(model["loss"], {model["pixels"]: test_pixels})
            for step in range(1, steps + 1):
                batch, _ = data.train.next_batch(batch_size)
                feed = {model["pixels"]: batch.reshape(-1, 64)}
                if step % 50 == 0:
                    _, summary = sess.run([model["train_op"], summaries], feed)
                    writer.add_summary(summary, step)
                else:
                    sess.run(model["train_op"], feed)
            after = sess.run(model["loss"], {model["pixels"]: test_pixels})
            path = saver.save(sess, os.path.join(logdir, "model.ckpt"),
                              global_step=model["global_step"])
            writer.close()
    return {"loss_before": float(before), "loss_after": float(after), "checkpoint": path}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--logdir", default="/tmp/autoencoder")
    args = parser.parse_args(argv)
    result = train(args.logdir, args.steps)
    print(f"test reconstruction loss {result['loss_before']:.4f} -> {result['loss_after']:.4f}; "
          f"saved {result['checkpoint']}")


if __name__ == "__main__":
    main()
