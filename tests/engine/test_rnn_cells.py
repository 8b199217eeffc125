"""tf.nn.rnn_cell and tf.nn.static_rnn against real TensorFlow: the same TF1 programs
(rnn_programs.py) give the same variable names and shapes, outputs, final states, gradients
and op names as TF 2.21's tf.compat.v1 (golden/rnn_tf_2_21.json), for every cell, stacked,
wrapped, bidirectional and with sequence_length; plus the cell API (sizes, zero states,
weights, errors with TF's wording), dropout, devices and tf.contrib.rnn."""

from __future__ import annotations

import json

import numpy as np
import pytest
import rnn_programs as programs

import engine as tf

TF = json.loads(programs.REFERENCE.read_text())
SEQUENCE_CASES = {
    "basic_lstm_sequence_length": ("basic_lstm", programs.SEQUENCE_LENGTH),
    "multi_sequence_length": ("multi", programs.SEQUENCE_LENGTH),
}
TIGHT = {"rtol": 1e-10, "atol": 1e-12}
rc = tf.nn.rnn_cell

pytestmark = pytest.mark.filterwarnings("ignore:`tf.nn.rnn_cell")


def _run(case: str) -> dict:
    if case in SEQUENCE_CASES:
        return programs.run_case(tf, *SEQUENCE_CASES[case])
    if case.startswith("bidirectional"):
        return programs.run_bidirectional(
            tf, programs.SEQUENCE_LENGTH if case.endswith("sequence_length") else None)
    return programs.run_case(tf, case)


@pytest.mark.parametrize("case", sorted(TF["cases"]))
def test_same_weights_give_tensorflows_numbers(case):
    got, want = _run(case), TF["cases"][case]
    assert got["variables"] == want["variables"]
    for key in ("outputs", "state", "input_grads", "weight_grads"):
        assert len(got[key]) == len(want[key]), key
        for i, (a, b) in enumerate(zip(got[key], want[key])):
            np.testing.assert_allclose(a, b, **TIGHT, err_msg=f"{key}[{i}]")
    if "sequence_length" in case:
        # TF picks these through tf.conds (cond/Merge); here one Select per tensor.
        assert all("Select" in name or name.startswith("concat") for name in got["output_ops"])
    else:
        assert got["output_ops"] == want["output_ops"]


def test_cell_scopes_and_weights_are_named_as_tensorflow_names_them():
    assert programs.run_scopes(tf) == TF["scopes"]["scopes"]


def test_sequence_length_zeroes_outputs_and_carries_the_state():
    got = _run("basic_lstm_sequence_length")
    outputs, (c, h) = np.array(got["outputs"]), got["state"]
    for b, n in enumerate(programs.SEQUENCE_LENGTH):
        assert not outputs[n:, b].any(), f"row {b} past its length {n}"
        if n:
            np.testing.assert_array_equal(h[b], outputs[n - 1, b])
    assert not np.any(c[2]) and not np.any(h[2]), "a zero-length row keeps the zero state"


# -- the cell API ----------------------------------------------------------------------------

@pytest.mark.parametrize("make,state_size,output_size", [
    (lambda: rc.BasicRNNCell(4), 4, 4),
    (lambda: rc.GRUCell(3), 3, 3),
    (lambda: rc.BasicLSTMCell(4), rc.LSTMStateTuple(4, 4), 4),
    (lambda: rc.BasicLSTMCell(4, state_is_tuple=False), 8, 4),
    (lambda: rc.LSTMCell(5, num_proj=2), rc.LSTMStateTuple(5, 2), 2),
    (lambda: rc.LSTMCell(5, num_proj=2, state_is_tuple=False), 7, 2),
    (lambda: rc.MultiRNNCell([rc.BasicLSTMCell(2), rc.GRUCell(3)]),
     (rc.LSTMStateTuple(2, 2), 3), 3),
    (lambda: rc.MultiRNNCell([rc.GRUCell(2), rc.GRUCell(3)], state_is_tuple=False), 5, 3),
    (lambda: rc.DropoutWrapper(rc.GRUCell(3)), 3, 3),
    (lambda: rc.DeviceWrapper(rc.LSTMCell(2), "/cpu:0"), rc.LSTMStateTuple(2, 2), 2),
])
def test_state_and_output_sizes(make, state_size, output_size):
    with tf.Graph().as_default():
        cell = make()
        assert cell.state_size == state_size
        assert type(cell.state_size) is type(state_size)
        assert cell.output_size == output_size


def test_zero_state_static_and_dynamic_batch():
    with tf.Graph().as_default():
        cell = rc.MultiRNNCell([rc.BasicLSTMCell(2), rc.GRUCell(3)])
        (c, h), g = cell.zero_state(5, tf.float64)
        assert isinstance(cell.zero_state(5, tf.float64)[0], rc.LSTMStateTuple)
        assert [c.shape.as_list(), h.shape.as_list(), g.shape.as_list()] == \
            [[5, 2], [5, 2], [5, 3]]
        assert c.dtype is tf.float64
        assert c.op.name.startswith("MultiRNNCellZeroState/BasicLSTMCellZeroState/")
        x = tf.placeholder(tf.float32, [None, 4])
        state = rc.BasicLSTMCell(2).get_initial_state(inputs=x)
        assert state.c.shape.as_list() == [None, 2]
        with tf.Session() as sess:
            got = sess.run(state, {x: np.ones((7, 4), np.float32)})
        assert got.c.shape == (7, 2) and not got.h.any()


def test_lstm_state_tuple():
    state = rc.LSTMStateTuple(c=1, h=2)
    assert state == (1, 2) and state.c == 1 and state.h == 2
    with tf.Graph().as_default():
        assert rc.LSTMStateTuple(tf.zeros([1]), tf.zeros([1])).dtype is tf.float32
        with pytest.raises(TypeError, match="Inconsistent dtypes for internal state"):
            _ = rc.LSTMStateTuple(tf.zeros([1]), tf.zeros([1], tf.float64)).dtype


def test_weights_of_cells_wrappers_and_stacks():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        lstm = rc.LSTMCell(4, use_peepholes=True)
        stack = rc.MultiRNNCell([rc.DropoutWrapper(lstm), rc.ResidualWrapper(rc.GRUCell(4))])
        tf.nn.static_rnn(stack, [x, x], dtype=tf.float32)
        names = [v.op.name for v in stack.trainable_weights]
        assert names == [
            "rnn/multi_rnn_cell/cell_0/lstm_cell/kernel",
            "rnn/multi_rnn_cell/cell_0/lstm_cell/bias",
            "rnn/multi_rnn_cell/cell_0/lstm_cell/w_f_diag",
            "rnn/multi_rnn_cell/cell_0/lstm_cell/w_i_diag",
            "rnn/multi_rnn_cell/cell_0/lstm_cell/w_o_diag",
            "rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel",
            "rnn/multi_rnn_cell/cell_1/gru_cell/gates/bias",
            "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/kernel",
            "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/bias"]
        assert [v.op.name for v in tf.trainable_variables()] == names
        assert stack.weights == stack.trainable_weights and not stack.non_trainable_weights


def test_a_cell_called_again_shares_its_weights():
    with tf.Graph().as_default():
        cell = rc.GRUCell(3)
        a, b = tf.placeholder(tf.float32, [1, 2]), tf.placeholder(tf.float32, [1, 2])
        out_a, _ = tf.nn.static_rnn(cell, [a], dtype=tf.float32, scope="shared")
        with tf.variable_scope("elsewhere"):
            out_b, _ = cell(b, cell.zero_state(1, tf.float32))
        assert len(tf.global_variables()) == 4
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            value = np.ones((1, 2), np.float32)
            ya, yb = sess.run([out_a[0], out_b], {a: value, b: value})
        np.testing.assert_array_equal(ya, yb)


def test_custom_rnncell_subclass_with_get_variable():
    class Scaled(rc.RNNCell):
        """A TF1-style user cell: weights from tf.get_variable inside call()."""
        @property
        def state_size(self):
            return 2

        @property
        def output_size(self):
            return 2

        def call(self, inputs, state):
            w = tf.get_variable("w", [2], initializer=tf.constant_initializer(0.5))
            new = tf.tanh(inputs * w + state)
            return new, new

    with tf.Graph().as_default():
        cell = Scaled()
        xs = [tf.constant([[1.0, -1.0]])] * 3
        outputs, state = tf.nn.static_rnn(cell, xs, dtype=tf.float32)
        assert [v.op.name for v in tf.global_variables()] == ["rnn/scaled/w"]
        assert [v.op.name for v in cell.trainable_weights] == ["rnn/scaled/w"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(state)
    want = np.zeros(2)
    for _ in range(3):
        want = np.tanh(np.array([1.0, -1.0]) * 0.5 + want)
    np.testing.assert_allclose(got[0], want, rtol=1e-6)


@pytest.mark.parametrize("activation", ["relu", "sigmoid", "tanh"])
def test_activation_by_name(activation):
    with tf.Graph().as_default():
        x = tf.constant([[1.0, -2.0]])
        out, _ = rc.BasicRNNCell(2, activation=activation)(x, tf.zeros([1, 2]))
        assert out.op.type == activation.capitalize()


def test_gru_kernel_and_bias_initializers_and_lstm_initializer():
    with tf.Graph().as_default():
        x = tf.constant(np.ones((1, 2), np.float32))
        gru = rc.GRUCell(2, kernel_initializer=tf.zeros_initializer(),
                         bias_initializer=tf.constant_initializer(0.25))
        gru(x, gru.zero_state(1, tf.float32))
        lstm = rc.LSTMCell(2, initializer=tf.constant_initializer(0.5), use_peepholes=True,
                           num_proj=1)
        lstm(x, lstm.zero_state(1, tf.float32))
        default = rc.GRUCell(2, name="default_bias")
        default(x, default.zero_state(1, tf.float32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = {v.op.name: sess.run(v) for v in tf.global_variables()}
    assert not values["gru_cell/gates/kernel"].any()
    assert (values["gru_cell/gates/bias"] == 0.25).all()
    assert (values["gru_cell/candidate/bias"] == 0.25).all()
    for name in ("kernel", "w_f_diag", "projection/kernel"):
        assert (values[f"lstm_cell/{name}"] == 0.5).all(), name
    assert not values["lstm_cell/bias"].any()
    assert (values["default_bias/gates/bias"] == 1.0).all()
    assert not values["default_bias/candidate/bias"].any()


# -- errors, in TF 2.21's words --------------------------------------------------------------

def _error(fn):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        try:
            fn(x)
        except (TypeError, ValueError, NotImplementedError) as e:
            return type(e), str(e)
    raise AssertionError("no error")


@pytest.mark.parametrize("fn,kind,message", [
    (lambda x: tf.nn.static_rnn(rc.BasicRNNCell(4), x, dtype=tf.float32), TypeError,
     "Argument `inputs` must be a sequence. Received: "),
    (lambda x: tf.nn.static_rnn(rc.BasicRNNCell(4), [], dtype=tf.float32), ValueError,
     "Argument `inputs` must not be empty."),
    (lambda x: tf.nn.static_rnn(rc.BasicRNNCell(4), [x]), ValueError,
     "If no initial_state is provided, argument `dtype` must be specified"),
    (lambda x: tf.nn.static_rnn(object(), [x], dtype=tf.float32), TypeError,
     "is not an RNNCell: 'output_size' property is missing, 'state_size' property is "
     "missing, either 'zero_state' or 'get_initial_state' method is required, is not "
     "callable."),
    (lambda x: tf.nn.static_rnn(rc.BasicRNNCell(4), [tf.placeholder(tf.float32, [2, None])],
                                dtype=tf.float32), ValueError,
     "Input size (dimension 0 of input "),
    (lambda x: tf.nn.static_rnn(rc.BasicRNNCell(4), [x], dtype=tf.float32,
                                sequence_length=[[1, 2]]), ValueError,
     "Argument `sequence_length` must be a vector of length 2. Received sequence_length="),
    (lambda x: rc.MultiRNNCell([]), ValueError,
     "Must specify at least one cell for MultiRNNCell."),
    (lambda x: rc.MultiRNNCell([rc.BasicLSTMCell(3)], state_is_tuple=False), ValueError,
     "Some cells return tuples of states, but the flag state_is_tuple is not set. State "
     "sizes are: [LSTMStateTuple(c=3, h=3)]"),
    (lambda x: rc.DropoutWrapper(rc.BasicLSTMCell(3), input_keep_prob=1.5), ValueError,
     "Parameter input_keep_prob must be between 0 and 1. Received 1.5"),
    (lambda x: rc.DropoutWrapper(rc.BasicLSTMCell(3), variational_recurrent=True),
     ValueError, "When variational_recurrent=True, dtype must be provided"),
    (lambda x: rc.BasicRNNCell(4)(tf.placeholder(tf.int32, [2, 3]),
                                  tf.zeros([2, 4], tf.int32)), ValueError,
     "RNN cell only supports floating point inputs, but received dtype: <dtype: 'int32'>"),
    (lambda x: rc.BasicRNNCell(4, dtype=tf.int32), ValueError,
     "RNN cell only supports floating point inputs, but received dtype: <dtype: 'int32'>"),
    (lambda x: rc.LSTMCell(4, num_unit_shards=2), NotImplementedError,
     "partitioned variables are not supported"),
    (lambda x: rc.ResidualWrapper(rc.GRUCell(4))(x, tf.zeros([2, 4])), ValueError,
     "are incompatible"),
])
def test_errors_say_what_tensorflow_says(fn, kind, message):
    got_kind, got = _error(fn)
    assert got_kind is kind and message in got, got


def test_rank_3_inputs_and_reused_scopes_are_refused():
    with tf.Graph().as_default():
        cell = rc.BasicLSTMCell(4, name="basic_lstm_cell_1")
        with pytest.raises(ValueError, match='Input 0 of layer "basic_lstm_cell_1" is '
                                             "incompatible with the layer: expected ndim=2, "
                                             r"found ndim=3. Full shape received: \(2, 3, 4\)"):
            cell(tf.placeholder(tf.float32, [2, 3, 4]), cell.zero_state(2, tf.float32))
        x = tf.placeholder(tf.float32, [2, 3])
        tf.nn.static_rnn(rc.BasicRNNCell(4), [x], dtype=tf.float32, scope="s")
        with pytest.raises(ValueError, match="Variable s/basic_rnn_cell/kernel already exists, "
                                             "disallowed."):
            tf.nn.static_rnn(rc.BasicRNNCell(4), [x], dtype=tf.float32, scope="s")


# -- DropoutWrapper --------------------------------------------------------------------------

def _dropout_run(**wrapper_kwargs):
    """Output and new state of one DropoutWrapper(BasicLSTMCell) step on ones."""
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        cell = rc.DropoutWrapper(
            rc.BasicLSTMCell(400, forget_bias=0.0), seed=5, **wrapper_kwargs)
        x = tf.ones([50, 10])
        out, state = cell(x, cell.zero_state(50, tf.float32))
        inner_out, inner_state = cell.cell(x, cell.zero_state(50, tf.float32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run([out, state, inner_out, inner_state])


def test_dropout_wrapper_drops_outputs_and_h_but_not_c():
    out, state, clean_out, clean_state = _dropout_run(output_keep_prob=0.6,
                                                      state_keep_prob=0.6)
    kept = out != 0
    assert abs(kept.mean() - 0.6) < 0.02
    np.testing.assert_allclose(out[kept], clean_out[kept] / 0.6, rtol=1e-5)
    np.testing.assert_array_equal(state.c, clean_state.c)       # c is never dropped
    assert abs((state.h != 0).mean() - 0.6) < 0.02
    assert (state.h != 0).tolist() != kept.tolist(), "each tensor draws its own mask"


def test_dropout_wrapper_input_dropout_and_tensor_keep_prob():
    with tf.Graph().as_default():
        tf.set_random_seed(2)
        keep = tf.placeholder(tf.float32, [])
        cell = rc.DropoutWrapper(rc.GRUCell(200), input_keep_prob=keep, output_keep_prob=keep)
        x = tf.constant(np.random.RandomState(0).uniform(-1, 1, (50, 8)).astype(np.float32))
        out, _ = cell(x, cell.zero_state(50, tf.float32))
        clean, _ = cell.cell(x, cell.zero_state(50, tf.float32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            a, b = sess.run([out, clean], {keep: 1.0})
            np.testing.assert_allclose(a, b, rtol=1e-6)
            half, b = sess.run([out, clean], {keep: 0.5})
    kept = half != 0
    assert abs(kept.mean() - 0.5) < 0.03
    assert not np.allclose(half[kept], b[kept] / 0.5), "the inputs were dropped too"


def test_dropout_state_filter_visitor_picks_the_states_to_drop():
    def drop_c_only(substate):
        if isinstance(substate, rc.LSTMStateTuple):
            return rc.LSTMStateTuple(c=True, h=False)
        return True

    _, state, _, clean_state = _dropout_run(state_keep_prob=0.5,
                                            dropout_state_filter_visitor=drop_c_only)
    np.testing.assert_array_equal(state.h, clean_state.h)
    assert abs((state.c != 0).mean() - 0.5) < 0.03
    with tf.Graph().as_default(), pytest.raises(
            TypeError, match="dropout_state_filter_visitor must be callable"):
        rc.DropoutWrapper(rc.GRUCell(2), dropout_state_filter_visitor=3)


def test_variational_dropout_keeps_one_mask_across_steps():
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        cell = rc.DropoutWrapper(rc.BasicRNNCell(300), output_keep_prob=0.5,
                                 input_keep_prob=0.5, variational_recurrent=True,
                                 input_size=4, dtype=tf.float32, seed=2)
        xs = [tf.ones([3, 4])] * 3
        outputs, _ = tf.nn.static_rnn(cell, xs, dtype=tf.float32)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(outputs)
            second = sess.run(outputs)
    masks = [o != 0 for o in first]
    assert abs(masks[0].mean() - 0.5) < 0.05
    assert all((m == masks[0]).all() for m in masks), "one mask for every step"
    assert (masks[0] == masks[0][:1]).all(), "the mask is shared across the batch"
    assert ((second[0] != 0) != masks[0]).any(), "a new mask each session step"


# -- devices, contrib, state saving ----------------------------------------------------------

def test_device_wrapper_places_the_cell_and_its_zero_state():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        cell = rc.MultiRNNCell([rc.DeviceWrapper(rc.BasicLSTMCell(4), "/gpu:0"),
                                rc.DeviceWrapper(rc.BasicLSTMCell(4), "/gpu:1")])
        outputs, state = tf.nn.static_rnn(cell, [x, x], dtype=tf.float32)
        ops = {op.name: op for op in tf.get_default_graph().get_operations()}
        for layer, gpu in ((0, 0), (1, 1)):
            prefix = f"rnn/multi_rnn_cell/cell_{layer}/basic_lstm_cell/"
            assert ops[prefix + "kernel"].device == f"/device:GPU:{gpu}"
            assert ops[prefix + "kernel/read"].device == f"/device:GPU:{gpu}"
        assert outputs[1].op.device == "/device:GPU:1"
        assert state[0].c.op.device == "/device:GPU:0"
        zero = [op for name, op in ops.items() if "DeviceWrapperZeroState" in name]
        assert zero and {op.device for op in zero} == {"/device:GPU:0", "/device:GPU:1"}
        config = tf.ConfigProto(virtual_gpus=2)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(outputs[1], {x: np.ones((2, 3), np.float32)})
            placement = sess.placement.as_dict()
        assert got.shape == (2, 4)
        assert placement["rnn/rnn/multi_rnn_cell/cell_1/basic_lstm_cell/MatMul"].endswith(
            "GPU:1")


def test_residual_wrapper_with_its_own_residual_fn():
    with tf.Graph().as_default():
        x = tf.constant(np.full((2, 3), 0.5, np.float32))
        cell = rc.ResidualWrapper(rc.GRUCell(4), residual_fn=lambda i, o: o - tf.reduce_sum(i))
        out, state = cell(x, cell.zero_state(2, tf.float32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got_out, got_state = sess.run([out, state])
    np.testing.assert_allclose(got_out, got_state - 3.0, rtol=1e-6)


def test_get_initial_state_checks_its_arguments():
    with tf.Graph().as_default():
        cell = rc.GRUCell(2)
        x = tf.placeholder(tf.float32, [4, 3])
        assert cell.get_initial_state(batch_size=5, dtype=tf.float64).shape.as_list() == [5, 2]
        with pytest.raises(ValueError, match="batch size from input tensor is different from "
                                             "the input param. Input tensor batch: 4, "
                                             "batch_size: 5"):
            cell.get_initial_state(inputs=x, batch_size=5)
        with pytest.raises(ValueError, match="dtype from input tensor is different"):
            cell.get_initial_state(inputs=x, dtype=tf.float64)
        with pytest.raises(ValueError, match="batch_size and dtype cannot be None"):
            cell.get_initial_state()


def test_contrib_rnn_holds_the_cells_and_static_rnns_only():
    assert sorted(tf.contrib.rnn.__all__) == [
        "BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
        "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper",
        "static_bidirectional_rnn", "static_rnn", "static_state_saving_rnn"]
    assert tf.contrib.rnn.LSTMCell is tf.nn.rnn_cell.LSTMCell
    assert tf.contrib.rnn.static_rnn is tf.nn.static_rnn
    import engine.compat.v1 as v1
    assert v1.nn.rnn_cell.BasicLSTMCell is rc.BasicLSTMCell


class _Saver:
    """A minimal state saver (the interface tf.contrib.training's state savers have)."""

    def __init__(self, tf_module, batch: int):
        self._vars = {}
        self._tf = tf_module
        self._batch = batch

    def state(self, name):
        if name not in self._vars:
            self._vars[name] = self._tf.Variable(np.zeros((self._batch, 2), np.float32),
                                                 name=f"saved_{name}", trainable=False)
        return self._vars[name].value()

    def save_state(self, name, value):
        return self._tf.assign(self._vars[name], value).op


def test_static_state_saving_rnn_carries_state_between_session_steps():
    with tf.Graph().as_default():
        saver = _Saver(tf, 1)
        x = tf.constant([[1.0]])
        cell = rc.BasicLSTMCell(2)
        outputs, state = tf.nn.static_state_saving_rnn(cell, [x, x], saver, ("c", "h"))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(outputs[-1])
            second = sess.run(outputs[-1])
            np.testing.assert_allclose(sess.run(saver._vars["h"]), second)
        assert not np.allclose(first, second), "the second step starts from the saved state"
        with pytest.raises(ValueError, match="should be the same type as `cell.state_size`"):
            tf.nn.static_state_saving_rnn(cell, [x], saver, "c")
