"""A TF1-style convolutional classifier for the 8x8 digits, written as TF1 tutorials wrote
them (tf.layers, sparse softmax cross entropy, Adam, argmax/equal accuracy, summaries, a
Saver through MonitoredTrainingSession). Only the import differs from a TensorFlow 1.x script.

Usage: python sample_graphs/digits_cnn.py [--steps 400] [--logdir /tmp/digits_cnn]"""

from __future__ import annotations

import argparse
import os
import sys

import engine as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits  # noqa: E402


def build_model(learning_rate: float = 0.01):
    """Returns the tensors a training loop needs, in a dict keyed by role."""
    images = tf.placeholder(tf.float32, [None, 8, 8, 1], name="images")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    training = tf.placeholder_with_default(False, [], name="training")
    tf.summary.image("inputs", images, max_outputs=4)
    conv1 = tf.layers.conv2d(images, 16, 3, padding="same", activation=tf.nn.relu)
    pool1 = tf.layers.max_pooling2d(conv1, 2, 2)
    conv2 = tf.layers.conv2d(pool1, 32, 3, padding="same", activation=tf.nn.relu)
    pool2 = tf.layers.max_pooling2d(conv2, 2, 2)
    flat = tf.layers.flatten(pool2)
    hidden = tf.layers.dense(flat, 64, activation=tf.nn.relu)
    hidden = tf.layers.dropout(hidden, rate=0.2, training=training)
    logits = tf.layers.dense(hidden, 10, name="logits")
    probabilities = tf.nn.softmax(logits, name="probabilities")
    with tf.name_scope("loss"):
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        loss = tf.reduce_mean(xent, name="mean")
    with tf.name_scope("accuracy"):
        correct = tf.equal(tf.argmax(logits, 1), labels)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32), name="mean")
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    tf.summary.scalar("cross_entropy", loss)
    tf.summary.scalar("train_accuracy", accuracy)
    tf.summary.histogram("logits", logits)
    return {"images": images, "labels": labels, "training": training, "loss": loss,
            "accuracy": accuracy, "train_op": train_op, "global_step": global_step,
            "probabilities": probabilities}


def train(logdir: str, steps: int = 400, batch_size: int = 64, seed: int = 0) -> dict:
    """Trains for `steps` steps, checkpointing and summarising into `logdir`, then restores
    the last checkpoint in a fresh session and returns the test accuracy and loss."""
    data = digits.read_data_sets(seed)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = build_model()
        hooks = [tf.train.StopAtStepHook(last_step=steps),
                 tf.train.NanTensorHook(model["loss"]),
                 tf.train.LoggingTensorHook({"step": model["global_step"],
                                             "loss": model["loss"]}, every_n_iter=100)]
        with tf.train.MonitoredTrainingSession(checkpoint_dir=logdir, hooks=hooks,
                                               save_summaries_steps=50,
                                               save_checkpoint_steps=200) as sess:
            while not sess.should_stop():
                x, y = data.train.next_batch(batch_size)
                sess.run(model["train_op"], feed_dict={model["images"]: x, model["labels"]: y,
                                                       model["training"]: True})
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, tf.train.latest_checkpoint(logdir))
            accuracy, loss, step = sess.run(
                [model["accuracy"], model["loss"], model["global_step"]],
                {model["images"]: data.test.images, model["labels"]: data.test.labels})
    return {"accuracy": float(accuracy), "loss": float(loss), "global_step": int(step)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--logdir", default="/tmp/digits_cnn")
    args = parser.parse_args(argv)
    result = train(args.logdir, args.steps)
    print(f"test accuracy {result['accuracy']:.4f}, test loss {result['loss']:.4f}")


if __name__ == "__main__":
    main()
