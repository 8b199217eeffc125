"""Gradients through tf.nn.static_rnn against torch autograd on the same math: torch's own
nn.LSTMCell and nn.RNNCell (weights rearranged from TF's [x, h] @ kernel layout and i, j, f, o
gate order), and plain torch code for the cells torch has no twin of (GRUCell's reset before
the matmul, peepholes, projection, sequence_length). The cells' weights are placeholders fed
through a variable-scope custom getter, so tf.gradients reaches inputs and weights alike."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from grad_harness import DYNAMIC, check_gradients, grad_test

import engine as tf

BATCH, STEPS, DEPTH, UNITS = 3, 4, 2, 5
rc = tf.nn.rnn_cell

pytestmark = pytest.mark.filterwarnings("ignore:`tf.nn.rnn_cell")


def _unrolled(make_cell, names, fold=None, sequence_length=None):
    """tf_fn(x, *weights): static_rnn over x [batch, steps, depth] with the weights fed for
    the variables whose names end in `names`; returns [outputs..., final state...] stacked
    along a new first axis (each [batch, units])."""
    def tf_fn(x, *weights):
        by_name = dict(zip(names, weights))

        def getter(getter, name, *args, **kwargs):
            return by_name[name.split("/", 3)[-1]]
        with tf.variable_scope("grad_check", custom_getter=getter):
            outputs, state = tf.nn.static_rnn(make_cell(), tf.unstack(x, axis=1),
                                              dtype=x.dtype, sequence_length=sequence_length)
        parts = list(outputs) + tf.nest.flatten(state)
        return tf.stack(parts if fold is None else fold(parts))
    return tf_fn


def _torch_gates(kernel, units):
    """TF's kernel columns i, j, f, o as torch's weight rows i, f, g(=j), o."""
    i, j, f, o = kernel.split(units, dim=-1)
    return torch.cat([i, f, j, o], dim=-1)


def _data(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, s) for s in shapes]


@grad_test("MatMul", "BiasAdd", "Split", "ConcatV2", "Sigmoid", "Tanh", "Unpack", "Pack")
@DYNAMIC
def test_basic_lstm_gradient_against_torch_lstm_cell(dynamic):
    forget_bias = 0.7
    x, kernel, bias = _data(0, (BATCH, STEPS, DEPTH), (DEPTH + UNITS, 4 * UNITS), (4 * UNITS,))

    def torch_fn(x, kernel, bias):
        cell = torch.nn.LSTMCell(DEPTH, UNITS).double()
        shift = torch.zeros(4 * UNITS, dtype=x.dtype)
        shift[UNITS:2 * UNITS] = forget_bias       # torch's f block
        params = {"weight_ih": _torch_gates(kernel[:DEPTH], UNITS).T,
                  "weight_hh": _torch_gates(kernel[DEPTH:], UNITS).T,
                  "bias_ih": _torch_gates(bias, UNITS) + shift,
                  "bias_hh": torch.zeros(4 * UNITS, dtype=x.dtype)}
        h = c = torch.zeros(BATCH, UNITS, dtype=x.dtype)
        outputs = []
        for t in range(STEPS):
            h, c = torch.func.functional_call(cell, params, (x[:, t], (h, c)))
            outputs.append(h)
        return torch.stack(outputs + [c, h])

    check_gradients(_unrolled(lambda: rc.BasicLSTMCell(UNITS, forget_bias=forget_bias),
                              ["kernel", "bias"]), torch_fn, [x, kernel, bias], dynamic=dynamic)


@grad_test("MatMul", "Tanh")
def test_basic_rnn_gradient_against_torch_rnn_cell():
    x, kernel, bias = _data(1, (BATCH, STEPS, DEPTH), (DEPTH + UNITS, UNITS), (UNITS,))

    def torch_fn(x, kernel, bias):
        cell = torch.nn.RNNCell(DEPTH, UNITS).double()
        params = {"weight_ih": kernel[:DEPTH].T, "weight_hh": kernel[DEPTH:].T,
                  "bias_ih": bias, "bias_hh": torch.zeros(UNITS, dtype=x.dtype)}
        h = torch.zeros(BATCH, UNITS, dtype=x.dtype)
        outputs = []
        for t in range(STEPS):
            h = torch.func.functional_call(cell, params, (x[:, t], h))
            outputs.append(h)
        return torch.stack(outputs + [h])

    check_gradients(_unrolled(lambda: rc.BasicRNNCell(UNITS), ["kernel", "bias"]), torch_fn,
                    [x, kernel, bias])


def _gru_step(x, h, gk, gb, ck, cb):
    """TF's GRUCell: the reset gate scales h before the candidate matmul."""
    r, u = torch.sigmoid(torch.cat([x, h], 1) @ gk + gb).chunk(2, dim=1)
    c = torch.tanh(torch.cat([x, r * h], 1) @ ck + cb)
    return u * h + (1 - u) * c


@grad_test("Mul", "Sub", "Sigmoid", "Split")
def test_gru_gradient_against_torch():
    x, gk, gb, ck, cb = _data(2, (BATCH, STEPS, DEPTH), (DEPTH + UNITS, 2 * UNITS),
                              (2 * UNITS,), (DEPTH + UNITS, UNITS), (UNITS,))

    def torch_fn(x, gk, gb, ck, cb):
        h = torch.zeros(BATCH, UNITS, dtype=x.dtype)
        outputs = []
        for t in range(STEPS):
            h = _gru_step(x[:, t], h, gk, gb, ck, cb)
            outputs.append(h)
        return torch.stack(outputs + [h])

    check_gradients(_unrolled(lambda: rc.GRUCell(UNITS),
                              ["gates/kernel", "gates/bias", "candidate/kernel",
                               "candidate/bias"]), torch_fn, [x, gk, gb, ck, cb])


@grad_test("ClipByValue", "MatMul")
def test_lstm_peepholes_clip_projection_gradient_against_torch():
    proj, clip, proj_clip, forget_bias = 3, 0.5, 0.4, 1.0
    x, kernel, bias, wf, wi, wo, pk = _data(
        3, (BATCH, STEPS, DEPTH), (DEPTH + proj, 4 * UNITS), (4 * UNITS,), (UNITS,), (UNITS,),
        (UNITS,), (UNITS, proj))
    kernel, bias = kernel * 2, bias * 2     # so some values cross the clips

    def torch_fn(x, kernel, bias, wf, wi, wo, pk):
        c = torch.zeros(BATCH, UNITS, dtype=x.dtype)
        m = torch.zeros(BATCH, proj, dtype=x.dtype)
        outputs = []
        for t in range(STEPS):
            i, j, f, o = (torch.cat([x[:, t], m], 1) @ kernel + bias).chunk(4, dim=1)
            c = torch.sigmoid(f + forget_bias + wf * c) * c + \
                torch.sigmoid(i + wi * c) * torch.tanh(j)
            c = c.clamp(-clip, clip)
            m = (torch.sigmoid(o + wo * c) * torch.tanh(c)) @ pk
            m = m.clamp(-proj_clip, proj_clip)
            outputs.append(m)
        return torch.cat(outputs + [c, m], dim=1)

    def make():
        return rc.LSTMCell(UNITS, use_peepholes=True, cell_clip=clip, num_proj=proj,
                           proj_clip=proj_clip, forget_bias=forget_bias)

    def fold(parts):
        return [tf.concat(parts, 1)]

    tf_fn = _unrolled(make, ["kernel", "bias", "w_f_diag", "w_i_diag", "w_o_diag",
                             "projection/kernel"], fold=fold)
    check_gradients(lambda *a: tf.squeeze(tf_fn(*a), 0), torch_fn,
                    [x, kernel, bias, wf, wi, wo, pk])


@grad_test("Select", "Tanh")
@DYNAMIC
def test_sequence_length_gradient_against_masked_torch(dynamic):
    lengths = np.array([4, 1, 0])
    x, kernel, bias = _data(4, (BATCH, STEPS, DEPTH), (DEPTH + UNITS, UNITS), (UNITS,))

    def torch_fn(x, kernel, bias):
        h = torch.zeros(BATCH, UNITS, dtype=x.dtype)
        outputs = []
        for t in range(STEPS):
            new = torch.tanh(torch.cat([x[:, t], h], 1) @ kernel + bias)
            done = torch.from_numpy(t >= lengths)[:, None]
            outputs.append(torch.where(done, torch.zeros_like(new), new))
            h = torch.where(done, h, new)
        return torch.stack(outputs + [h])

    check_gradients(_unrolled(lambda: rc.BasicRNNCell(UNITS), ["kernel", "bias"],
                              sequence_length=lengths), torch_fn, [x, kernel, bias],
                    dynamic=dynamic)


def test_training_gradients_reach_every_weight_of_a_stack():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        cell = rc.MultiRNNCell([rc.LSTMCell(4, use_peepholes=True, num_proj=2),
                                rc.GRUCell(3)])
        outputs, _ = tf.nn.static_rnn(cell, [x, x, x], dtype=tf.float32)
        loss = tf.reduce_sum(outputs[-1])
        grads = tf.gradients(loss, tf.trainable_variables())
        assert len(grads) == 10 and all(g is not None for g in grads)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(grads, {x: np.ones((2, 3), np.float32)})
        assert all(np.isfinite(v).all() and v.any() for v in values)


def test_colocated_gradients_are_summed_on_the_ops_device():
    """A layer's output read by the next layer and by its own next step gets two gradient
    terms; with colocate_gradients_with_ops their sum sits where the layer runs (as TF's
    gradients do), so model parallelism sends one gradient per step back, not two."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        with tf.device("/gpu:1"):
            h = tf.tanh(x, name="h")
            loss = tf.reduce_sum(h * 2.0) + tf.reduce_sum(h * 3.0)
        for colocate, want in ((True, "/device:GPU:1"), (False, "")):
            (grad,) = tf.gradients(loss, [h], colocate_gradients_with_ops=colocate)
            assert grad.op.type == "AddN" and grad.op.device == want
            dx = tf.gradients(loss, [x], colocate_gradients_with_ops=colocate)[0]
            with tf.Session(config=tf.ConfigProto(virtual_gpus=2)) as sess:
                value = np.ones((2, 3), np.float32)
                np.testing.assert_allclose(sess.run(dx, {x: value}),
                                           5 * (1 - np.tanh(value) ** 2), rtol=1e-6)
