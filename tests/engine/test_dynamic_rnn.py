"""tf.nn.dynamic_rnn (a tf.while_loop over TensorArrays) gives TensorFlow 2.21's numbers for
the static_rnn programs of rnn_programs.py (golden/rnn_tf_2_21.json): outputs, final state
and the gradients with respect to the inputs and the weights, time-major and batch-major,
with sequence_length and an explicit initial_state; weights named as TF names them and the
loop's ops in scope `rnn/while`."""

from __future__ import annotations

import json

import numpy as np
import pytest
import rnn_programs as programs

import engine as tf

TF = json.loads(programs.REFERENCE.read_text())
TIGHT = {"rtol": 1e-10, "atol": 1e-12}

pytestmark = pytest.mark.filterwarnings("ignore:`tf.nn.rnn_cell")

CASES = {
    "basic_lstm": ("basic_lstm", None),
    "gru": ("gru", None),
    "lstm_peephole_proj": ("lstm_peephole_proj", None),
    "multi_lstm": ("multi_lstm", None),
    "basic_lstm_sequence_length": ("basic_lstm", programs.SEQUENCE_LENGTH),
    "multi_sequence_length": ("multi", programs.SEQUENCE_LENGTH),
}


def _run_dynamic(case: str, sequence_length, time_major: bool, explicit_state: bool = False):
    graph = tf.Graph()
    with graph.as_default():
        xs = [tf.placeholder(tf.float64, [programs.BATCH, programs.DEPTH], name=f"x{t}")
              for t in range(programs.STEPS)]
        cell = programs._cells(tf)[case]()
        inputs = tf.stack(xs, axis=0 if time_major else 1)
        state = cell.zero_state(programs.BATCH, tf.float64) if explicit_state else None
        out, final = tf.nn.dynamic_rnn(cell, inputs, sequence_length=sequence_length,
                                       initial_state=state, dtype=tf.float64,
                                       time_major=time_major)
        outputs = tf.unstack(out, axis=0 if time_major else 1)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = programs._results(tf, sess, xs, outputs, final, programs.inputs())
        got["loop_ops"] = sorted({op.name for op in graph.get_operations()
                                  if op.type == "TensorArrayWriteV3"
                                  and not op.name.startswith("gradients")})
        return got


def _assert_tf_numbers(got: dict, want: dict) -> None:
    assert got["variables"] == want["variables"]
    for key in ("outputs", "state", "input_grads", "weight_grads"):
        assert len(got[key]) == len(want[key]), key
        for i, (a, b) in enumerate(zip(got[key], want[key])):
            np.testing.assert_allclose(a, b, **TIGHT, err_msg=f"{key}[{i}]")


@pytest.mark.parametrize("time_major", [True, False], ids=["time_major", "batch_major"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamic_rnn_gives_tensorflows_static_rnn_numbers(name, time_major):
    case, lengths = CASES[name]
    _assert_tf_numbers(_run_dynamic(case, lengths, time_major), TF["cases"][name])


def test_an_explicit_initial_state_and_the_loop_scope():
    got = _run_dynamic("basic_lstm", None, time_major=False, explicit_state=True)
    _assert_tf_numbers(got, TF["cases"]["basic_lstm"])
    assert got["variables"][1][0] == "rnn/basic_lstm_cell/kernel"
    assert got["loop_ops"] and all(n.startswith("rnn/while/") for n in got["loop_ops"])


def test_dynamic_batch_and_time_run_any_length():
    """Unknown batch and time dims: the loop runs as many steps as the input has."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, None, 2])
        cell = tf.nn.rnn_cell.BasicRNNCell(3)
        out, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        (dx,) = tf.gradients(tf.reduce_sum(state), [x])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for steps in (1, 4):
                value = np.ones((2, steps, 2), np.float32)
                o, s, g = sess.run([out, state, dx], {x: value})
                assert o.shape == (2, steps, 3)
                np.testing.assert_allclose(o[:, -1], s, rtol=1e-6)
                assert g.shape == value.shape


def test_dynamic_rnn_needs_a_dtype_or_a_state():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3, 2])
        with pytest.raises(ValueError, match="you must give a dtype"):
            tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(3), x)
