"""tf.nn.bidirectional_dynamic_rnn: names and numbers as TensorFlow 2.21's tf.compat.v1 gives
them (birnn_programs.py), outputs and final states against torch running each cell forward and
over each row's reversed valid steps, gradients against torch autograd, time-major and
batch-major, TF's errors, and a small model whose loss falls in training."""

from __future__ import annotations

import json

import birnn_programs
import numpy as np
import pytest
import torch
from grad_harness import DYNAMIC, check_gradients, grad_test

import engine as tf

BATCH, STEPS, DEPTH, FW_UNITS, BW_UNITS = 4, 5, 3, 3, 2
LENGTHS = [5, 2, 0, 3]
TIGHT = {"rtol": 1e-10, "atol": 1e-12}
rc = tf.nn.rnn_cell
TF_RECORD = json.loads(birnn_programs.REFERENCE.read_text())

pytestmark = pytest.mark.filterwarnings("ignore:`tf.nn.rnn_cell")

# (engine cell, weight names under the cell's scope, their shapes, torch step, initial state)
CELLS = {
    "lstm": (lambda units: rc.BasicLSTMCell(units),
             lambda units: {"kernel": (DEPTH + units, 4 * units), "bias": (4 * units,)}),
    "gru": (lambda units: rc.GRUCell(units),
            lambda units: {"gates/kernel": (DEPTH + units, 2 * units),
                           "gates/bias": (2 * units,),
                           "candidate/kernel": (DEPTH + units, units),
                           "candidate/bias": (units,)}),
}
SCOPES = {"lstm": "basic_lstm_cell", "gru": "gru_cell"}


def _lstm_step(x, state, w):
    """TF's BasicLSTMCell (gates i, j, f, o; forget_bias 1.0); state (c, h), output h."""
    c, h = state
    i, j, f, o = (torch.cat([x, h], 1) @ w["kernel"] + w["bias"]).chunk(4, dim=1)
    c = c * torch.sigmoid(f + 1.0) + torch.sigmoid(i) * torch.tanh(j)
    h = torch.tanh(c) * torch.sigmoid(o)
    return h, (c, h)


def _gru_step(x, state, w):
    """TF's GRUCell: the reset gate scales h before the candidate matmul."""
    (h,) = state
    r, u = torch.sigmoid(torch.cat([x, h], 1) @ w["gates/kernel"] + w["gates/bias"]).chunk(2, 1)
    c = torch.tanh(torch.cat([x, r * h], 1) @ w["candidate/kernel"] + w["candidate/bias"])
    h = u * h + (1 - u) * c
    return h, (h,)


STEP = {"lstm": (_lstm_step, 2), "gru": (_gru_step, 1)}


def _torch_direction(kind, weights, x_tm, lengths, units, reverse, initial=None):
    """One direction, row by row: its first lengths[b] steps (reversed for the backward
    direction) through the cell, outputs put back at their steps and zero past the end,
    the state the one after the last valid step. Returns (outputs [T, B, units], state)."""
    step, n_state = STEP[kind]
    outputs, states = [], []
    for b in range(x_tm.shape[1]):
        n = x_tm.shape[0] if lengths is None else lengths[b]
        if initial is None:
            state = tuple(torch.zeros(1, units, dtype=x_tm.dtype) for _ in range(n_state))
        else:
            state = tuple(s[b:b + 1] for s in initial)
        steps = list(range(n))
        row = [None] * n
        for t in (reversed(steps) if reverse else steps):
            row[t], state = step(x_tm[t, b:b + 1], state, weights)
        pad = [torch.zeros(1, units, dtype=x_tm.dtype)] * (x_tm.shape[0] - n)
        outputs.append(torch.cat(row + pad, 0))
        states.append(state)
    merged = tuple(torch.cat(parts, 0) for parts in zip(*states))
    return torch.stack(outputs, 1), merged


def _torch_bidirectional(x, fw_weights, bw_weights, lengths, time_major, kinds):
    x_tm = x if time_major else x.transpose(0, 1)
    out_fw, state_fw = _torch_direction(kinds[0], fw_weights, x_tm, lengths, FW_UNITS, False)
    out_bw, state_bw = _torch_direction(kinds[1], bw_weights, x_tm, lengths, BW_UNITS, True)
    if not time_major:
        out_fw, out_bw = out_fw.transpose(0, 1), out_bw.transpose(0, 1)
    return out_fw, out_bw, state_fw, state_bw


def _weights(seed, kinds) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    return tuple({name: rng.uniform(-0.8, 0.8, shape)
                  for name, shape in CELLS[kind][1](units).items()}
                 for kind, units in zip(kinds, (FW_UNITS, BW_UNITS)))


def _x(time_major: bool, seed: int = 7) -> np.ndarray:
    shape = (STEPS, BATCH, DEPTH) if time_major else (BATCH, STEPS, DEPTH)
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def _build(x, kinds, lengths, time_major, **kwargs):
    return tf.nn.bidirectional_dynamic_rnn(
        CELLS[kinds[0]][0](FW_UNITS), CELLS[kinds[1]][0](BW_UNITS), x, sequence_length=lengths,
        dtype=tf.float64, time_major=time_major, **kwargs)


KINDS = pytest.mark.parametrize("kinds", [("lstm", "gru"), ("gru", "lstm")],
                                ids=["lstm_fw_gru_bw", "gru_fw_lstm_bw"])
MAJOR = pytest.mark.parametrize("time_major", [True, False], ids=["time_major", "batch_major"])
LENGTH = pytest.mark.parametrize("lengths", [None, LENGTHS], ids=["full", "sequence_length"])


def test_names_are_tensorflows():
    """TF 2.21 (tf.compat.v1, TF_USE_LEGACY_KERAS=1) gives these names for this program."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [BATCH, 3, DEPTH], name="x")
        (out_fw, out_bw), (state_fw, state_bw) = tf.nn.bidirectional_dynamic_rnn(
            rc.BasicLSTMCell(3), rc.GRUCell(2), x, sequence_length=[3, 1, 0, 2],
            dtype=tf.float64)
        variables = sorted(v.name for v in tf.global_variables())
        reverses = sorted(op.name for op in graph.get_operations()
                          if op.type == "ReverseSequence")
    assert variables == [
        "bidirectional_rnn/bw/gru_cell/candidate/bias:0",
        "bidirectional_rnn/bw/gru_cell/candidate/kernel:0",
        "bidirectional_rnn/bw/gru_cell/gates/bias:0",
        "bidirectional_rnn/bw/gru_cell/gates/kernel:0",
        "bidirectional_rnn/fw/basic_lstm_cell/bias:0",
        "bidirectional_rnn/fw/basic_lstm_cell/kernel:0"]
    assert [out_fw.name, out_bw.name, state_fw.c.name, state_fw.h.name, state_bw.name] == [
        "bidirectional_rnn/fw/fw/transpose_1:0", "ReverseSequence:0",
        "bidirectional_rnn/fw/fw/while/Exit_3:0", "bidirectional_rnn/fw/fw/while/Exit_4:0",
        "bidirectional_rnn/bw/bw/while/Exit_3:0"]
    assert reverses == ["ReverseSequence", "bidirectional_rnn/bw/ReverseSequence"]


@pytest.mark.parametrize("name", sorted(birnn_programs.CASES))
def test_tensorflows_names_and_numbers_on_the_same_weights(name):
    """birnn_programs.py's cases against TF 2.21's record (golden/birnn_tf_2_21.json):
    a peephole-projection LSTM forward and a concat-state LSTM backward, a scope, and
    ReverseV2 (no lengths) or ReverseSequence in and out."""
    got, want = birnn_programs.run_case(tf, name), TF_RECORD["cases"][name]
    for key in ("variables", "output_names", "reverse_ops"):
        assert got[key] == want[key], key
    assert len(got["values"]) == len(want["values"])
    for i, (a, b) in enumerate(zip(got["values"], want["values"])):
        np.testing.assert_allclose(a, b, **TIGHT, err_msg=f"value {i}")


def _assign(sess, weights_by_direction, kinds) -> None:
    for direction, kind, weights in zip(("fw", "bw"), kinds, weights_by_direction):
        prefix = f"bidirectional_rnn/{direction}/{SCOPES[kind]}/"
        for v in tf.global_variables():
            if v.op.name.startswith(prefix):
                sess.run(v.assign(weights[v.op.name[len(prefix):]]))


@KINDS
@MAJOR
@LENGTH
def test_outputs_and_final_states_against_torch(kinds, time_major, lengths):
    x_value = _x(time_major)
    weights = _weights(0, kinds)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, x_value.shape)
        (out_fw, out_bw), (state_fw, state_bw) = _build(x, kinds, lengths, time_major)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _assign(sess, weights, kinds)
            got = sess.run([out_fw, out_bw] + tf.nest.flatten(state_fw)
                           + tf.nest.flatten(state_bw), {x: x_value})
    torch_weights = [{k: torch.from_numpy(v) for k, v in w.items()} for w in weights]
    o_fw, o_bw, s_fw, s_bw = _torch_bidirectional(torch.from_numpy(x_value), *torch_weights,
                                                  lengths, time_major, kinds)
    # an LSTM's state is (c, h); a GRU's is h, whose flat list is one tensor
    want = [o_fw, o_bw] + list(s_fw) + list(s_bw)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b.numpy(), **TIGHT, err_msg=f"value {i}")
    if lengths is not None:
        batch_axis = 1 if time_major else 0
        empty = np.take(got[1], LENGTHS.index(0), axis=batch_axis)
        assert not empty.any()


def _weight_names(kinds) -> list[tuple[str, str]]:
    """(direction, weight name under the cell's scope) of both cells, fw first."""
    return [(d, n) for d, kind, units in zip(("fw", "bw"), kinds, (FW_UNITS, BW_UNITS))
            for n in CELLS[kind][1](units)]


def _tf_fn(kinds, lengths, time_major):
    """tf_fn(x, *fw weights, *bw weights) -> the outputs and states, flattened and joined,
    with the cells' weights fed through a custom getter."""
    scopes = dict(zip(("fw", "bw"), (SCOPES[k] for k in kinds)))
    keys = [f"{d}/{scopes[d]}/{n}" for d, n in _weight_names(kinds)]

    def tf_fn(x, *weights):
        by_name = dict(zip(keys, weights))

        def getter(getter, name, *args, **kwargs):
            # grad_check/bidirectional_rnn/<fw|bw>/<cell scope>/<weight>
            return by_name[name.split("/", 2)[-1]]
        with tf.variable_scope("grad_check", custom_getter=getter):
            (out_fw, out_bw), states = _build(x, kinds, lengths, time_major)
        flat = [out_fw, out_bw] + tf.nest.flatten(states)
        return tf.concat([tf.reshape(t, [-1]) for t in flat], 0)
    return tf_fn


@grad_test("ReverseSequence", "ReverseV2")
@KINDS
@MAJOR
@pytest.mark.parametrize("op_type", ["ReverseV2", "ReverseSequence"],
                         ids=["full", "sequence_length"])
@DYNAMIC
def test_gradients_against_torch_autograd(kinds, time_major, op_type, dynamic):
    """Without lengths the backward direction reverses with ReverseV2, with them with
    ReverseSequence; either way the gradient flows through both reverses and both loops."""
    lengths = LENGTHS if op_type == "ReverseSequence" else None
    names = _weight_names(kinds)
    weights = _weights(1, kinds)
    values = [weights[0 if d == "fw" else 1][n] for d, n in names]

    def torch_fn(x, *flat):
        fw = {n: w for (d, n), w in zip(names, flat) if d == "fw"}
        bw = {n: w for (d, n), w in zip(names, flat) if d == "bw"}
        o_fw, o_bw, s_fw, s_bw = _torch_bidirectional(x, fw, bw, lengths, time_major, kinds)
        return torch.cat([t.reshape(-1) for t in [o_fw, o_bw, *s_fw, *s_bw]])

    check_gradients(_tf_fn(kinds, lengths, time_major), torch_fn,
                    [_x(time_major)] + values, dynamic=dynamic)


def test_tuple_states_and_given_initial_states():
    """An LSTMStateTuple state and a MultiRNNCell's tuple of them come back in the cells'
    structures; initial_state_fw/bw replace the zero states (then no dtype is needed)."""
    x_value = _x(False)
    rng = np.random.default_rng(3)
    c0, h0 = rng.uniform(-1, 1, (2, BATCH, FW_UNITS))
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, x_value.shape)
        fw = rc.BasicLSTMCell(FW_UNITS)
        bw = rc.MultiRNNCell([rc.GRUCell(BW_UNITS), rc.BasicLSTMCell(BW_UNITS)])
        initial_fw = rc.LSTMStateTuple(tf.constant(c0), tf.constant(h0))
        (out_fw, out_bw), (state_fw, state_bw) = tf.nn.bidirectional_dynamic_rnn(
            fw, bw, x, sequence_length=LENGTHS, initial_state_fw=initial_fw,
            initial_state_bw=bw.zero_state(BATCH, tf.float64))
        assert isinstance(state_fw, rc.LSTMStateTuple)
        assert isinstance(state_bw, tuple) and isinstance(state_bw[1], rc.LSTMStateTuple)
        assert state_bw[0].shape.as_list() == [BATCH, BW_UNITS]
        assert out_bw.shape.as_list() == [BATCH, STEPS, BW_UNITS]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            weights = {v.op.name.split("/")[-1]: sess.run(v) for v in fw.trainable_weights}
            got = sess.run([out_fw, state_fw.c, state_fw.h, out_bw, state_bw[1].h],
                           {x: x_value})
    w = {k: torch.from_numpy(v) for k, v in weights.items()}
    initial = (torch.from_numpy(c0), torch.from_numpy(h0))
    o_fw, (c, h) = _torch_direction("lstm", w, torch.from_numpy(x_value).transpose(0, 1),
                                    LENGTHS, FW_UNITS, False, initial=initial)
    for a, b in zip(got[:3], [o_fw.transpose(0, 1), c, h]):
        np.testing.assert_allclose(a, b.numpy(), **TIGHT)
    # the empty row keeps its initial state and has no outputs
    np.testing.assert_allclose(got[1][2], c0[2], **TIGHT)
    assert not got[3][2].any() and not got[4][2].any()
    # the backward output of a row's last valid step is the first the bw cell made
    assert got[3][1, 1].any() and not got[3][1, 2:].any()


def test_errors_are_tensorflows():
    """TF 2.21 raises the same TypeError for a cell that is not an RNNCell; the other two
    messages are dynamic_rnn's, in TF 1.x's wording."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3, 4])
        with pytest.raises(TypeError, match=r"^The argument 'cell_fw' \(cell\) is not an "
                           r"RNNCell: 'output_size' property is missing, 'state_size' property"
                           r" is missing, either 'zero_state' or 'get_initial_state' method is "
                           r"required, is not callable\.$"):
            tf.nn.bidirectional_dynamic_rnn("cell", rc.GRUCell(2), x, dtype=tf.float32)
        with pytest.raises(TypeError, match=r"^The argument 'cell_bw' \(3\) is not an RNNCell"):
            tf.nn.bidirectional_dynamic_rnn(rc.GRUCell(2), 3, x, dtype=tf.float32)
        with pytest.raises(ValueError, match="you must give a dtype"):
            tf.nn.bidirectional_dynamic_rnn(rc.GRUCell(2), rc.GRUCell(2), x,
                                            initial_state_fw=tf.zeros([2, 2]))
        with pytest.raises(ValueError, match="sequence_length must be a vector"):
            tf.nn.bidirectional_dynamic_rnn(rc.GRUCell(2), rc.GRUCell(2), x,
                                            sequence_length=[[1, 2]], dtype=tf.float32)


def test_exported_in_tf_nn_and_compat_v1_not_in_contrib():
    import engine.compat.v1 as v1
    assert v1.nn.bidirectional_dynamic_rnn is tf.nn.bidirectional_dynamic_rnn
    # TF1's contrib.rnn has stack_bidirectional_dynamic_rnn, not this one
    assert not hasattr(tf.contrib.rnn, "bidirectional_dynamic_rnn")


def _next_value_batch(rng, batch: int = 32, steps: int = 8):
    """Noisy sine waves of random phase and length (zero past each row's end); the target
    at step t is the input at t + 1, which the backward direction has already read."""
    lengths = rng.integers(3, steps + 1, batch)
    phase = rng.uniform(0, 2 * np.pi, (batch, 1))
    wave = np.sin(phase + 0.6 * np.arange(steps + 1)) + rng.normal(0, 0.05, (batch, steps + 1))
    inside = np.arange(steps)[None] < lengths[:, None]
    has_next = np.arange(steps)[None] < lengths[:, None] - 1
    x = np.where(inside, wave[:, :steps], 0)[..., None].astype(np.float32)
    target = np.where(has_next, wave[:, 1:], 0).astype(np.float32)
    return x, target, has_next.astype(np.float32), lengths


def test_a_bidirectional_model_learns_the_next_value():
    rng = np.random.default_rng(0)
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [None, 8, 1])
        target = tf.placeholder(tf.float32, [None, 8])
        mask = tf.placeholder(tf.float32, [None, 8])
        lengths = tf.placeholder(tf.int32, [None])
        (out_fw, out_bw), _ = tf.nn.bidirectional_dynamic_rnn(
            rc.GRUCell(8), rc.GRUCell(8), x, sequence_length=lengths, dtype=tf.float32)
        prediction = tf.squeeze(tf.layers.dense(tf.concat([out_fw, out_bw], 2), 1), 2)
        loss = tf.reduce_sum(mask * (prediction - target) ** 2) / tf.reduce_sum(mask)
        train_op = tf.train.AdamOptimizer(0.03).minimize(loss)
        test_x, test_y, test_mask, test_lengths = _next_value_batch(np.random.default_rng(1))
        test = {x: test_x, target: test_y, mask: test_mask, lengths: test_lengths}
        with tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1)) as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(loss, test)
            for _ in range(60):
                bx, by, bm, bl = _next_value_batch(rng)
                sess.run(train_op, {x: bx, target: by, mask: bm, lengths: bl})
            after = sess.run(loss, test)
    # 0.721 -> 0.0116 on this seed; predicting each value by the current one scores about
    # 0.17 (the waves move 0.6 rad a step)
    assert before > 0.3
    assert after < 0.03
