"""The TF1 tutorial `mnist_with_summaries.py`, shape for shape, on sklearn's digits with only
the import changed: summaries inside name scopes, merge_all, a train and a test FileWriter,
add_run_metadata on a FULL_TRACE step. Everything lands in the run store."""

from __future__ import annotations

import json

import numpy as np
from sklearn.datasets import load_digits

import engine as tf
from engine.record import RunReader


def variable_summaries(var):
    with tf.name_scope("summaries"):
        mean = tf.reduce_mean(var)
        tf.summary.scalar("mean", mean)
        with tf.name_scope("stddev"):
            stddev = tf.sqrt(tf.reduce_mean(tf.square(var - mean)))
        tf.summary.scalar("stddev", stddev)
        tf.summary.scalar("max", tf.reduce_max(var))
        tf.summary.histogram("histogram", var)


def nn_layer(input_tensor, input_dim, output_dim, layer_name, act=tf.nn.relu):
    with tf.name_scope(layer_name):
        with tf.name_scope("weights"):
            weights = tf.Variable(tf.truncated_normal([input_dim, output_dim], stddev=0.1,
                                                      seed=1))
            variable_summaries(weights)
        with tf.name_scope("biases"):
            biases = tf.Variable(tf.constant(0.1, shape=[output_dim]))
            variable_summaries(biases)
        with tf.name_scope("Wx_plus_b"):
            preactivate = tf.matmul(input_tensor, weights) + biases
            tf.summary.histogram("pre_activations", preactivate)
        activations = act(preactivate, name="activation")
        tf.summary.histogram("activations", activations)
        return activations


def test_mnist_with_summaries_on_digits(tmp_path):
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[digits.target]
    log_dir = str(tmp_path / "mnist_with_summaries")
    with tf.Graph().as_default():
        with tf.name_scope("input"):
            x = tf.placeholder(tf.float32, [None, 64], name="x-input")
            y_ = tf.placeholder(tf.float32, [None, 10], name="y-input")
        with tf.name_scope("input_reshape"):
            tf.summary.image("input", tf.reshape(x, [-1, 8, 8, 1]), 3)
        hidden1 = nn_layer(x, 64, 32, "layer1")
        y = nn_layer(hidden1, 32, 10, "layer2", act=tf.identity)
        with tf.name_scope("cross_entropy"):
            cross_entropy = tf.reduce_mean(
                tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
        tf.summary.scalar("cross_entropy", cross_entropy)
        with tf.name_scope("train"):
            train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
        with tf.name_scope("accuracy"):
            correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
            accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        tf.summary.scalar("accuracy", accuracy)
        merged = tf.summary.merge_all()

        sess = tf.InteractiveSession()
        train_writer = tf.summary.FileWriter(log_dir + "/train", sess.graph)
        test_writer = tf.summary.FileWriter(log_dir + "/test")
        tf.global_variables_initializer().run()
        train = {x: images[:1500], y_: labels[:1500]}
        test = {x: images[1500:], y_: labels[1500:]}
        for i in range(60):
            if i % 10 == 0:
                summary, acc = sess.run([merged, accuracy], feed_dict=test)
                test_writer.add_summary(summary, i)
            elif i % 25 == 24:
                run_options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
                run_metadata = tf.RunMetadata()
                summary, _ = sess.run([merged, train_step], feed_dict=train,
                                      options=run_options, run_metadata=run_metadata)
                train_writer.add_run_metadata(run_metadata, f"step{i:03d}")
                train_writer.add_summary(summary, i)
            else:
                summary, _ = sess.run([merged, train_step], feed_dict=train)
                train_writer.add_summary(summary, i)
        train_writer.close()
        test_writer.close()
        sess.close()

    test_run = RunReader(tmp_path / "mnist_with_summaries" / "test")
    steps, accuracies = test_run.scalars("accuracy_1")
    assert steps.tolist() == [0, 10, 20, 30, 40, 50]
    assert accuracies[-1] > 0.8 and accuracies[-1] > accuracies[0]
    train_run = RunReader(tmp_path / "mnist_with_summaries" / "train")
    # As in TF (checked with 2.21): names are unique case-insensitively, so the scalar
    # `mean` beside the op `Mean` is tagged `mean_1`, and `accuracy` beside its scope
    # `accuracy_1`, which is what TensorBoard showed for this tutorial.
    assert "layer1/weights/summaries/mean_1" in train_run.tags()
    assert "layer2/Wx_plus_b/pre_activations" in train_run.histogram_tags()
    assert train_run.image_tags() == [f"input_reshape/input/image/{i}" for i in range(3)]
    assert train_run.images("input_reshape/input/image/0")[0].pixels.shape == (8, 8, 1)
    trace = json.loads(train_run.texts("run_metadata/step024")[0].text)
    assert "MatMul" in {n["op"] for d in trace["step_stats"] for n in d["node_stats"]}
    assert len(train_run.steps()) == 61      # the initializer and 60 steps, in the train run
    assert train_run.graph() is not None and train_run.placements()
