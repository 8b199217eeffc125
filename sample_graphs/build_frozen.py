"""Trains the digits MLP and CNN on the engine and writes them frozen (variables folded into
constants, output node named) for inference and for the quantization tools:

  digits_mlp_frozen.json (+ .npz)  pixels [None, 8, 8, 1] -> probabilities [None, 10]
  digits_cnn_frozen.json (+ .npz)  the digits_cnn.py model, same input and output

Each file's graph has an `images` placeholder and a `probabilities` softmax; the held-out
split is sample_graphs/digits.py's `read_data_sets(seed=0).test`.

Usage: python sample_graphs/build_frozen.py [--steps 400]"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import engine as tf

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import digits  # noqa: E402
import digits_cnn  # noqa: E402

INPUT, OUTPUT = "images", "probabilities"


def build_mlp(learning_rate: float = 0.01):
    """64 -> 64 -> 32 -> 10 with the CNN program's interface (images, labels, probabilities)."""
    images = tf.placeholder(tf.float32, [None, 8, 8, 1], name=INPUT)
    labels = tf.placeholder(tf.int64, [None], name="labels")
    flat = tf.layers.flatten(images)
    hidden = tf.layers.dense(flat, 64, activation=tf.nn.relu)
    hidden = tf.layers.dense(hidden, 32, activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, 10, name="logits")
    tf.nn.softmax(logits, name=OUTPUT)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss)
    return {"images": images, "labels": labels, "loss": loss, "accuracy": accuracy,
            "train_op": train_op}


def train_and_freeze(build, steps: int, seed: int = 0):
    """Returns (frozen graph, test accuracy of the trained float model)."""
    data = digits.read_data_sets(seed)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = build()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                x, y = data.train.next_batch(64)
                sess.run(model["train_op"], {model["images"]: x, model["labels"]: y})
            accuracy = sess.run(model["accuracy"], {model["images"]: data.test.images,
                                                    model["labels"]: data.test.labels})
            frozen = tf.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), [OUTPUT])
    inference = tf.Graph()
    with inference.as_default():
        tf.import_graph_def(frozen, name="")
    return inference, float(accuracy)


def build_cnn():
    return digits_cnn.build_model()


FROZEN = {"digits_mlp_frozen.json": build_mlp, "digits_cnn_frozen.json": build_cnn}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args(argv)
    for name, build in FROZEN.items():
        graph, accuracy = train_and_freeze(build, args.steps)
        path = HERE / name
        tf.save_graph(graph, os.fspath(path), strip_prefix=f"{HERE.parent}/")
        print(f"wrote {path} ({len(graph.get_operations())} ops, test accuracy {accuracy:.4f})")


if __name__ == "__main__":
    main()
