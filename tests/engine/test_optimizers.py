"""The optimizers as TF1 programs use them: ten steps of each on a small least-squares problem
give real TensorFlow's numbers (training_programs_tf.json, from the same program run on TF) and
torch.optim's where the two algorithms agree; slots are named, created and placed as TF does;
the Optimizer API (get_slot, variables, compute/apply_gradients, schedules) and its errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import training_programs as programs

import engine as tf
from engine.graph import Tensor

TF = json.loads(programs.REFERENCE.read_text())["optimizers"]
F32 = {"rtol": 2e-5, "atol": 2e-6}

CASES = {name: {} for name in programs.OPTIMIZERS}
CASES["adam_float64"] = {"case": "adam", "dtype": np.float64}
CASES["momentum_schedule"] = {"case": "momentum", "schedule": True}


@pytest.mark.parametrize("name", sorted(CASES))
def test_steps_match_tensorflow(name):
    kwargs = dict(CASES[name])
    got = programs.run_optimizer(tf, kwargs.pop("case", name), **kwargs)
    want = TF[name]
    tol = {"rtol": 1e-12, "atol": 1e-12} if name.endswith("float64") else F32
    for key in ("first", "last"):
        for g, w in zip(got[key], want[key]):
            np.testing.assert_allclose(g, w, **tol, err_msg=f"{name} {key}")
    assert sorted(got["slots"]) == sorted(want["slots"])
    for slot, value in want["slots"].items():
        np.testing.assert_allclose(got["slots"][slot], value, **tol, err_msg=slot)
    np.testing.assert_allclose(got["loss"], want["loss"], **tol)
    assert got["step"] == want["step"] == programs.STEPS


@pytest.mark.parametrize("name", sorted(CASES))
def test_slot_and_op_names_match_tensorflow(name):
    kwargs = dict(CASES[name])
    got = programs.run_optimizer(tf, kwargs.pop("case", name), **kwargs)
    want = TF[name]
    assert got["slot_names"] == want["slot_names"]
    assert got["variables"] == want["variables"]
    assert got["update_ops"] == want["update_ops"]


# ---- against torch.optim, where the algorithms agree ----

def _torch_fit(make_optimizer, steps=programs.STEPS):
    rng = np.random.RandomState(7)
    x = torch.tensor(rng.uniform(-1, 1, (6, 3)).astype(np.float32))
    y = torch.tensor(rng.uniform(-1, 1, (6, 2)).astype(np.float32))
    w = torch.tensor(rng.uniform(-1, 1, (3, 2)).astype(np.float32), requires_grad=True)
    b = torch.zeros(2, requires_grad=True)
    opt = make_optimizer([w, b])
    for _ in range(steps):
        opt.zero_grad()
        torch.mean(torch.square(x @ w + b - y)).backward()
        opt.step()
    return [w.detach().numpy(), b.detach().numpy()]


TORCH = {
    "gradient_descent": (lambda p: torch.optim.SGD(p, lr=0.1), F32),
    "momentum": (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), F32),
    "nesterov": (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True), F32),
    "adagrad": (lambda p: torch.optim.Adagrad(p, lr=0.2, initial_accumulator_value=0.5,
                                              eps=0.0), F32),
    "adadelta": (lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.9, eps=1e-6), F32),
    # torch adds epsilon after the bias correction, TF before ("epsilon hat"): close, not equal.
    "adam": (lambda p: torch.optim.Adam(p, lr=0.05), {"rtol": 1e-4, "atol": 1e-5}),
}


@pytest.mark.parametrize("name", sorted(TORCH))
def test_steps_match_torch_optim(name):
    make, tol = TORCH[name]
    got = programs.run_optimizer(tf, name)["last"]
    for g, w in zip(got, _torch_fit(make)):
        np.testing.assert_allclose(g, w, **tol)


# ---- slots: names, initial values, placement ----

def _two_variables():
    with tf.device("/gpu:0"):
        w = tf.Variable(np.ones((2, 2), np.float32), name="w")
    with tf.device("/cpu:0"):
        b = tf.Variable(np.ones(2, np.float32), name="b")
    loss = tf.reduce_sum(tf.matmul(tf.ones([1, 2]), w) + b)
    return w, b, loss


def test_slots_are_colocated_with_their_variable_on_a_virtual_gpu():
    g = tf.Graph()
    with g.as_default():
        w, b, loss = _two_variables()
        opt = tf.train.AdamOptimizer(0.1)
        with tf.device("/cpu:0"), tf.control_dependencies([tf.no_op(name="outer")]):
            train = opt.minimize(loss)
    m, v = opt.get_slot(w, "m"), opt.get_slot(w, "v")
    assert (m.op.name, v.op.name) == ("w/Adam", "w/Adam_1")
    assert m.op.get_attr("_class") == ["loc:@w"] and m.device == "/device:GPU:0"
    assert m.initializer.control_inputs == []
    beta1 = opt._get_beta_accumulators(g)[0]
    assert beta1.op.name == "beta1_power" and beta1.op.get_attr("_class") == ["loc:@b"]
    update_w = g.get_operation_by_name("Adam/update_w/ApplyAdam")
    assert update_w.get_attr("_class") == ["loc:@w"]
    with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=1)) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        placed = sess.placement.as_dict()
    for name in ("w", "w/Adam", "w/Adam_1", "Adam/update_w/ApplyAdam"):
        assert placed[name].endswith("/device:GPU:0"), name
    for name in ("b", "b/Adam", "beta1_power", "beta2_power", "Adam/update_b/ApplyAdam",
                 "Adam/Assign"):
        assert placed[name].endswith("/device:CPU:0"), name


@pytest.mark.parametrize("make, slots", [
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9), {"momentum": ("w/Momentum", 0.0)}),
    (lambda: tf.train.AdagradOptimizer(0.1, 0.25), {"accumulator": ("w/Adagrad", 0.25)}),
    (lambda: tf.train.RMSPropOptimizer(0.1), {"rms": ("w/RMSProp", 1.0),
                                              "momentum": ("w/RMSProp_1", 0.0)}),
    (lambda: tf.train.RMSPropOptimizer(0.1, centered=True),
     {"rms": ("w/RMSProp", 1.0), "mg": ("w/RMSProp_1", 0.0), "momentum": ("w/RMSProp_2", 0.0)}),
    (lambda: tf.train.AdadeltaOptimizer(), {"accum": ("w/Adadelta", 0.0),
                                            "accum_update": ("w/Adadelta_1", 0.0)}),
])
def test_slot_names_and_initial_values(make, slots):
    g = tf.Graph()
    with g.as_default():
        w, _, loss = _two_variables()
        opt = make()
        opt.minimize(loss, var_list=[w])
        assert opt.get_slot_names() == sorted(slots)
        with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=1)) as sess:
            sess.run(tf.global_variables_initializer())
            for slot_name, (var_name, value) in slots.items():
                slot = opt.get_slot(w, slot_name)
                assert slot.op.name == var_name and not slot.trainable
                np.testing.assert_array_equal(sess.run(slot), np.full((2, 2), value))
        assert opt.get_slot(w, "nope") is None
        assert [v.name for v in opt.variables()] == sorted(n + ":0" for n, _ in slots.values())


def test_slots_ignore_the_name_scope_and_a_second_optimizer_gets_fresh_ones():
    with tf.Graph().as_default():
        w, _, loss = _two_variables()
        with tf.name_scope("train"):
            first = tf.train.AdamOptimizer()
            first.minimize(loss, var_list=[w])
        second = tf.train.AdamOptimizer()
        second.minimize(loss, var_list=[w])
        assert [v.op.name for v in first.variables()] == \
            ["train/beta1_power", "train/beta2_power", "w/Adam", "w/Adam_1"]
        assert [v.op.name for v in second.variables()] == \
            ["beta1_power", "beta2_power", "w/Adam_2", "w/Adam_3"]
        assert tf.get_default_graph().get_operation_by_name("train/Adam/update_w/ApplyAdam")
        assert {v.op.name for v in tf.trainable_variables()} == {"w", "b"}


def test_variables_lists_only_the_current_graph():
    opt = tf.train.MomentumOptimizer(0.1, 0.5)
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        opt.minimize(_two_variables()[2])
    with g2.as_default():
        assert opt.variables() == []
    with g1.as_default():
        assert [v.name for v in opt.variables()] == ["b/Momentum:0", "w/Momentum:0"]


@pytest.mark.skipif(not programs.assign_copies_its_value(),
                    reason="needs Assign to copy its value (the core family's variable semantics)")
def test_rerunning_the_initializer_resets_variables_and_slots():
    g = tf.Graph()
    with g.as_default():
        w, b, loss = _two_variables()
        opt = tf.train.AdamOptimizer(0.1)
        train = opt.minimize(loss)
        init = tf.global_variables_initializer()
        with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=1)) as sess:
            for _ in range(2):
                sess.run(init)
                np.testing.assert_array_equal(sess.run(w), np.ones((2, 2)))
                np.testing.assert_array_equal(sess.run(opt.get_slot(w, "m")), np.zeros((2, 2)))
                assert sess.run(opt._get_beta_accumulators(g)[0]) == pytest.approx(0.9)
                for _ in range(3):
                    sess.run(train)
                assert (sess.run(w) < 1).all()


# ---- the API ----

def _session_values(graph, fetches, steps, train):
    with tf.Session(graph=graph) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train)
        return sess.run(fetches)


def test_compute_and_apply_gradients_with_a_processed_gradient():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(np.array([1.0, 2.0], np.float32), name="w")
        loss = tf.reduce_sum(w * w)
        opt = tf.train.GradientDescentOptimizer(0.1)
        pairs = opt.compute_gradients(loss)
        assert [v for _, v in pairs] == [w] and isinstance(pairs[0][0], Tensor)
        step = tf.train.get_or_create_global_step()
        train = opt.apply_gradients([(grad * 0.5, var) for grad, var in pairs],
                                    global_step=step, name="apply")
        assert train.name == "apply" and train.type == "AssignAdd"
        assert tf.get_collection(tf.GraphKeys.TRAIN_OP) == [train]
        got_w, got_step = _session_values(g, [w, step], 2, train)
    np.testing.assert_allclose(got_w, np.array([1.0, 2.0]) * 0.9 ** 2, rtol=1e-6)
    assert got_step == 2


def test_learning_rate_as_tensor_and_callable():
    for make_lr in (lambda: tf.constant(0.5), lambda: (lambda: tf.constant(0.5)), lambda: 0.5):
        g = tf.Graph()
        with g.as_default():
            w = tf.Variable(np.float32(4.0), name="w")
            train = tf.train.MomentumOptimizer(make_lr(), 0.0).minimize(w * 1.0)
            assert _session_values(g, w, 2, train) == pytest.approx(3.0)


def test_minimize_only_touches_var_list():
    g = tf.Graph()
    with g.as_default():
        w, b, loss = _two_variables()
        opt = tf.train.AdagradOptimizer(0.1)
        train = opt.minimize(loss, var_list=[b])
        assert opt.get_slot(w, "accumulator") is None
        config = tf.ConfigProto(virtual_gpus=1)
        with tf.Session(graph=g, config=config) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            np.testing.assert_array_equal(sess.run(w), np.ones((2, 2)))
            assert (sess.run(b) < 1).all()


def test_gradient_descent_keeps_its_graph():
    with tf.Graph().as_default() as g:
        w = tf.Variable(np.float32(1.0), name="w")
        tf.train.GradientDescentOptimizer(0.1).minimize(w * 2.0)
        ops = {op.name: op.type for op in g.get_operations() if op.name.startswith("Grad")}
    assert ops == {"GradientDescent/learning_rate": "Const",
                   "GradientDescent/update_w/ApplyGradientDescent": "ApplyGradientDescent",
                   "GradientDescent": "NoOp"}


def test_optimizer_errors_use_tensorflow_wording():
    with tf.Graph().as_default():
        w = tf.Variable(np.float32(1.0), name="w")
        other = tf.Variable(np.float32(1.0), name="other")
        opt = tf.train.GradientDescentOptimizer(0.1)
        with pytest.raises(ValueError, match="No variables provided."):
            opt.apply_gradients([])
        with pytest.raises(ValueError, match="No gradients provided for any variable"):
            opt.apply_gradients([(None, w)])
        with pytest.raises(ValueError, match="No gradients provided for any variable, check "
                                             "your graph for ops that do not support gradients"):
            opt.minimize(w * 2.0, var_list=[other])
        counter = tf.Variable(3, name="counter")
        with pytest.raises(ValueError, match="Invalid type tf.int32 for counter/read:0, "
                                             "expected: "
                                             "\\[tf.float32, tf.float64, tf.float16, "
                                             "tf.bfloat16\\]."):
            opt.minimize(counter.value())
        # An integer variable without a gradient (a counter) is left alone, as in TF.
        assert opt.minimize(w * 2.0).type == "NoOp"
        with pytest.raises(TypeError, match="Argument is not a tf.Variable"):
            opt.minimize(w * 2.0, var_list=[w.value()])
        with pytest.raises(ValueError, match="gate_gradients must be one of"):
            opt.compute_gradients(w * 2.0, gate_gradients=7)
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        tf.train.MomentumOptimizer(0.1, 0.9, name="")


def test_global_step_helpers():
    with tf.Graph().as_default() as g:
        assert tf.train.get_global_step() is None
        step = tf.train.get_or_create_global_step()
        assert tf.train.get_or_create_global_step() is step
        assert step.op.name == "global_step" and step.dtype.base_dtype == tf.int64
        assert g.get_operation_by_name("global_step/Initializer/zeros").type == "Const"
        with pytest.raises(ValueError, match='"global_step" already exists.'):
            tf.train.create_global_step()
    with tf.Graph().as_default() as g:
        by_name = tf.Variable(np.int64(0), trainable=False, name="global_step")
        assert tf.train.get_global_step().name == by_name.name
