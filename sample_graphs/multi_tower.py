"""Data-parallel training across GPU towers in the manner of TF1's multi-GPU CIFAR-10
example: the variables live on the CPU, each tower (/gpu:0, /gpu:1, ...) computes the loss
and gradients of its slice of the batch with the shared variables (variable_scope reuse), and
the CPU averages the towers' gradients and applies them. Only the import differs from a
TensorFlow 1.x script; on this engine, `--virtual-gpus 2` gives a CPU-only machine two GPUs.

Usage: python sample_graphs/multi_tower.py [--steps 300] [--towers 2] [--virtual-gpus 2]"""

from __future__ import annotations

import argparse
import os
import sys

import engine as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits  # noqa: E402


def variable_on_cpu(name, shape, initializer):
    with tf.device("/cpu:0"):
        return tf.get_variable(name, shape, initializer=initializer, dtype=tf.float32)


def tower_loss(images, labels):
    """The model of one tower: 64 -> 64 (relu) -> 10, softmax cross entropy."""
    flat = tf.reshape(images, [-1, 64])
    with tf.variable_scope("hidden"):
        w = variable_on_cpu("weights", [64, 64], tf.glorot_uniform_initializer())
        b = variable_on_cpu("biases", [64], tf.zeros_initializer())
        hidden = tf.nn.relu(tf.matmul(flat, w) + b)
    with tf.variable_scope("softmax_linear"):
        w = variable_on_cpu("weights", [64, 10], tf.glorot_uniform_initializer())
        b = variable_on_cpu("biases", [10], tf.zeros_initializer())
        logits = tf.add(tf.matmul(hidden, w), b, name="logits")
    xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return tf.reduce_mean(xent, name="loss"), logits


def average_gradients(tower_grads):
    """The CIFAR-10 example's averaging: stack each variable's tower gradients and take the
    mean (on the CPU, where this function is called)."""
    averaged = []
    for grads_and_vars in zip(*tower_grads):
        grads = [tf.expand_dims(g, 0) for g, _ in grads_and_vars]
        grad = tf.reduce_mean(tf.concat(grads, axis=0), 0)
        averaged.append((grad, grads_and_vars[0][1]))
    return averaged


def build_model(towers: int, learning_rate: float = 0.1):
    images = tf.placeholder(tf.float32, [None, 8, 8, 1], name="images")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    with tf.device("/cpu:0"):
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.MomentumOptimizer(learning_rate, momentum=0.9)
        image_splits = tf.split(images, towers)
        label_splits = tf.split(labels, towers)
        tower_grads, tower_logits = [], []
        with tf.variable_scope(tf.get_variable_scope()):
            for i in range(towers):
                with tf.device(f"/gpu:{i}"), tf.name_scope(f"tower_{i}"):
                    loss, logits = tower_loss(image_splits[i], label_splits[i])
                    tf.get_variable_scope().reuse_variables()
                    tower_grads.append(opt.compute_gradients(loss))
                    tower_logits.append(logits)
        train_op = opt.apply_gradients(average_gradients(tower_grads), global_step=global_step)
        logits = tf.concat(tower_logits, axis=0)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32),
                                  name="accuracy")
    return {"images": images, "labels": labels, "loss": loss, "train_op": train_op,
            "accuracy": accuracy, "global_step": global_step}


def train(steps: int = 300, towers: int = 2, batch_size: int = 64, seed: int = 0,
          config=None) -> dict:
    """Trains and returns the test accuracy (the test set cut to a multiple of `towers`)."""
    data = digits.read_data_sets(seed)
    keep = len(data.test.images) // towers * towers
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = build_model(towers)
        config = config or tf.ConfigProto(allow_soft_placement=True)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                x, y = data.train.next_batch(batch_size)
                sess.run(model["train_op"], {model["images"]: x, model["labels"]: y})
            accuracy = sess.run(model["accuracy"], {model["images"]: data.test.images[:keep],
                                                    model["labels"]: data.test.labels[:keep]})
    return {"accuracy": float(accuracy), "graph": graph}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--towers", type=int, default=2)
    parser.add_argument("--virtual-gpus", type=int, default=0,
                        help="this engine only: give the session N (virtual) GPUs")
    args = parser.parse_args(argv)
    config = tf.ConfigProto(allow_soft_placement=True)
    if args.virtual_gpus:
        config = tf.ConfigProto(allow_soft_placement=True, virtual_gpus=args.virtual_gpus)
    result = train(args.steps, args.towers, config=config)
    print(f"test accuracy {result['accuracy']:.4f} with {args.towers} towers")


if __name__ == "__main__":
    main()
