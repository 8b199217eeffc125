"""TF1 RNN programs run unchanged on real TensorFlow and on this engine: cells from
tf.nn.rnn_cell unrolled by tf.nn.static_rnn / static_bidirectional_rnn, with every weight
set to fixed values by assignment. Each case records the variables (names, shapes), the
outputs and final state, the gradients of a weighted sum of them with respect to the inputs
and the weights, and the names of a few ops. Refresh the expected numbers with

    TF_USE_LEGACY_KERAS=1 /work/tfref/bin/python tests/engine/rnn_programs.py

which rewrites tests/engine/golden/rnn_tf_2_21.json (TensorFlow 2.21's tf.compat.v1)."""

from __future__ import annotations

import json
import pathlib
import zlib

import numpy as np

REFERENCE = pathlib.Path(__file__).with_name("golden") / "rnn_tf_2_21.json"
STEPS, BATCH, DEPTH = 3, 4, 3
SEQUENCE_LENGTH = [3, 1, 0, 2]


def _cells(tf) -> dict:
    rc = tf.nn.rnn_cell
    return {
        "basic_rnn": lambda: rc.BasicRNNCell(4),
        "basic_rnn_relu": lambda: rc.BasicRNNCell(4, activation=tf.nn.relu),
        "basic_lstm": lambda: rc.BasicLSTMCell(4),
        "basic_lstm_concat": lambda: rc.BasicLSTMCell(4, forget_bias=0.5,
                                                      state_is_tuple=False),
        "lstm": lambda: rc.LSTMCell(4),
        "lstm_peephole_proj": lambda: rc.LSTMCell(5, use_peepholes=True, cell_clip=0.4,
                                                  num_proj=3, proj_clip=0.3, forget_bias=0.7),
        "lstm_proj_concat": lambda: rc.LSTMCell(4, num_proj=2, state_is_tuple=False),
        "gru": lambda: rc.GRUCell(4),
        "multi": lambda: rc.MultiRNNCell([rc.BasicLSTMCell(4), rc.GRUCell(3)]),
        "multi_concat": lambda: rc.MultiRNNCell([rc.BasicRNNCell(3), rc.BasicRNNCell(4)],
                                                state_is_tuple=False),
        "multi_lstm": lambda: rc.MultiRNNCell([rc.BasicLSTMCell(4) for _ in range(2)]),
        "residual_gru": lambda: rc.ResidualWrapper(rc.GRUCell(DEPTH)),
        "dropout_keep_all": lambda: rc.DropoutWrapper(rc.LSTMCell(4), input_keep_prob=1.0,
                                                      output_keep_prob=1.0),
        "device": lambda: rc.DeviceWrapper(rc.GRUCell(4), "/cpu:0"),
    }


CASES = ["basic_rnn", "basic_rnn_relu", "basic_lstm", "basic_lstm_concat", "lstm",
         "lstm_peephole_proj", "lstm_proj_concat", "gru", "multi", "multi_concat", "multi_lstm",
         "residual_gru", "dropout_keep_all", "device"]


def inputs(seed: int = 0) -> np.ndarray:
    return np.random.RandomState(seed).uniform(-1, 1, (STEPS, BATCH, DEPTH))


def weight_value(name: str, shape) -> np.ndarray:
    """A fixed value for the variable `name`, the same on both engines."""
    rng = np.random.RandomState(zlib.crc32(name.encode()) % (2 ** 31))
    return rng.uniform(-0.7, 0.7, shape)


def _flatten(structure) -> list:
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


def _results(tf, sess, xs, outputs, state, x_value) -> dict:
    variables = sorted(tf.global_variables(), key=lambda v: v.op.name)
    for v in variables:
        sess.run(v.assign(weight_value(v.op.name, v.get_shape().as_list())))
    flat = list(outputs) + _flatten(state)
    rng = np.random.RandomState(1)
    loss = tf.add_n([tf.reduce_sum(t * rng.uniform(-1, 1, t.get_shape().as_list()))
                     for t in flat])
    grads = tf.gradients(loss, list(xs) + variables)
    feed = dict(zip(xs, x_value))
    values = sess.run(flat, feed)
    grad_values = sess.run(grads, feed)
    return {
        "variables": [[v.op.name, v.get_shape().as_list()] for v in variables],
        "outputs": [a.tolist() for a in values[:len(outputs)]],
        "state": [a.tolist() for a in values[len(outputs):]],
        "input_grads": [g.tolist() for g in grad_values[:len(xs)]],
        "weight_grads": [g.tolist() for g in grad_values[len(xs):]],
        "output_ops": [t.op.name for t in flat],
    }


def run_case(tf, case: str, sequence_length=None) -> dict:
    """static_rnn of the case's cell over STEPS float64 inputs [BATCH, DEPTH]."""
    graph = tf.Graph()
    with graph.as_default():
        xs = [tf.placeholder(tf.float64, [BATCH, DEPTH], name=f"x{t}") for t in range(STEPS)]
        cell = _cells(tf)[case]()
        outputs, state = tf.nn.static_rnn(cell, xs, dtype=tf.float64,
                                          sequence_length=sequence_length)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return _results(tf, sess, xs, outputs, state, inputs())


def run_bidirectional(tf, sequence_length=None) -> dict:
    graph = tf.Graph()
    with graph.as_default():
        xs = [tf.placeholder(tf.float64, [BATCH, DEPTH], name=f"x{t}") for t in range(STEPS)]
        rc = tf.nn.rnn_cell
        outputs, fw, bw = tf.nn.static_bidirectional_rnn(
            rc.BasicLSTMCell(3), rc.GRUCell(2), xs, dtype=tf.float64,
            sequence_length=sequence_length)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return _results(tf, sess, xs, outputs, (fw, bw), inputs())


def run_scopes(tf) -> dict:
    """Where the variables of cells called in several ways land."""
    graph = tf.Graph()
    with graph.as_default():
        rc = tf.nn.rnn_cell
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        named = rc.GRUCell(2)
        named(x, named.zero_state(2, tf.float32), scope="my_gru")
        twice = rc.BasicLSTMCell(2)
        state = twice.zero_state(2, tf.float32)
        _, state = twice(x, state)
        out, _ = twice(x, state)
        with tf.variable_scope("outer"):
            tf.nn.static_rnn(rc.BasicRNNCell(2), [x], dtype=tf.float32, scope="encoder")
            tf.nn.static_rnn(rc.BasicRNNCell(2), [x], dtype=tf.float32)
        tf.nn.static_rnn(rc.LSTMCell(2, num_proj=1), [x, x], dtype=tf.float32)
        stacked = rc.MultiRNNCell([rc.LSTMCell(3, num_proj=2), rc.BasicLSTMCell(2)])
        tf.nn.static_rnn(stacked, [x], dtype=tf.float32, scope="deep")
        return {"variables": [[v.op.name, v.get_shape().as_list()]
                              for v in tf.global_variables()],
                "second_call_output": out.op.name,
                "named_weights": [v.op.name for v in named.trainable_weights],
                "stacked_weights": [v.op.name for v in stacked.trainable_weights]}


def reference(tf) -> dict:
    cases = {case: run_case(tf, case) for case in CASES}
    cases["basic_lstm_sequence_length"] = run_case(tf, "basic_lstm", SEQUENCE_LENGTH)
    cases["multi_sequence_length"] = run_case(tf, "multi", SEQUENCE_LENGTH)
    cases["bidirectional"] = run_bidirectional(tf)
    cases["bidirectional_sequence_length"] = run_bidirectional(tf, SEQUENCE_LENGTH)
    return {"cases": cases, "scopes": {"scopes": run_scopes(tf)}}


def to_json(doc: dict) -> str:
    """One case a line, so a refresh diffs case by case."""
    sections = []
    for section, cases in doc.items():
        lines = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in cases.items()]
        sections.append(f" {json.dumps(section)}: {{\n" + ",\n".join(lines) + "\n }")
    return "{\n" + ",\n".join(sections) + "\n}\n"


if __name__ == "__main__":
    import tensorflow.compat.v1 as tf_v1
    tf_v1.disable_v2_behavior()
    REFERENCE.write_text(to_json(reference(tf_v1)))
    print(f"wrote {REFERENCE}")
