"""tf.nn.bidirectional_dynamic_rnn programs that run unchanged on real TensorFlow and on this
engine, every weight assigned the fixed values of rnn_programs.weight_value. Each case records
the variables, the output tensors' names, the reverse ops, and the values of the outputs, final
states and the gradients of a weighted sum of them with respect to the input and the weights.
Refresh the expected numbers with

    TF_USE_LEGACY_KERAS=1 /work/tfref/bin/python tests/engine/birnn_programs.py

which rewrites tests/engine/golden/birnn_tf_2_21.json (TensorFlow 2.21's tf.compat.v1)."""

from __future__ import annotations

import pathlib

import numpy as np
import rnn_programs

REFERENCE = pathlib.Path(__file__).with_name("golden") / "birnn_tf_2_21.json"
BATCH, STEPS, DEPTH = 4, 3, 3
SEQUENCE_LENGTH = [3, 1, 0, 2]


def _cells(tf, case: str):
    rc = tf.nn.rnn_cell
    if case == "peephole_projection_fw_concat_bw":
        return (rc.LSTMCell(3, use_peepholes=True, num_proj=2),
                rc.BasicLSTMCell(2, state_is_tuple=False))
    return rc.BasicLSTMCell(3), rc.GRUCell(2)


CASES = {  # name: (cells, time_major, sequence_length, scope)
    "batch_major_sequence_length": ("lstm_fw_gru_bw", False, SEQUENCE_LENGTH, None),
    "time_major_sequence_length": ("lstm_fw_gru_bw", True, SEQUENCE_LENGTH, None),
    "batch_major": ("peephole_projection_fw_concat_bw", False, None, None),
    "time_major_scope": ("lstm_fw_gru_bw", True, None, "enc"),
}


def run_case(tf, name: str) -> dict:
    cells, time_major, lengths, scope = CASES[name]
    graph = tf.Graph()
    with graph.as_default():
        shape = [STEPS, BATCH, DEPTH] if time_major else [BATCH, STEPS, DEPTH]
        x = tf.placeholder(tf.float64, shape, name="x")
        cell_fw, cell_bw = _cells(tf, cells)
        (out_fw, out_bw), (state_fw, state_bw) = tf.nn.bidirectional_dynamic_rnn(
            cell_fw, cell_bw, x, sequence_length=lengths, dtype=tf.float64,
            time_major=time_major, scope=scope)
        variables = sorted(tf.global_variables(), key=lambda v: v.op.name)
        flat = [out_fw, out_bw] + rnn_programs._flatten(state_fw) \
            + rnn_programs._flatten(state_bw)
        rng = np.random.RandomState(1)
        loss = tf.add_n([tf.reduce_sum(t * rng.uniform(-1, 1, t.get_shape().as_list()))
                         for t in flat])
        grads = tf.gradients(loss, [x] + variables)
        x_value = np.random.RandomState(0).uniform(-1, 1, shape)
        with tf.Session() as sess:
            for v in variables:
                value = rnn_programs.weight_value(v.op.name, v.get_shape().as_list())
                sess.run(v.assign(value))
            values = sess.run(flat + grads, {x: x_value})
        return {"variables": [v.name for v in variables],
                "output_names": [t.name for t in flat],
                "reverse_ops": sorted(op.name for op in graph.get_operations()
                                      if op.type in ("ReverseSequence", "ReverseV2")
                                      and not op.name.startswith("gradients")),
                "values": [np.asarray(v).tolist() for v in values]}


if __name__ == "__main__":
    import tensorflow.compat.v1 as tf_v1
    tf_v1.disable_v2_behavior()
    doc = {"cases": {name: run_case(tf_v1, name) for name in CASES}}
    REFERENCE.write_text(rnn_programs.to_json(doc))
    print(f"wrote {REFERENCE}")
