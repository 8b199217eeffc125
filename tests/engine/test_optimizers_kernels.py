"""The optimizers' update kernels (ApplyMomentum, ApplyAdam, ApplyAdagrad, ApplyRMSProp,
ApplyCenteredRMSProp, ApplyAdadelta) on CPU and on a virtual GPU: two steps each against a
numpy transcription of TF's training_ops.cc, slots updated in place; and their build-time
checks (ref inputs, scalar hyper-parameters, matching shapes and dtypes)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_harness import FLOATS, covers, tf_dtype

import engine as tf
from engine.ops import training_ops

TOL = {np.float32: {"rtol": 1e-5, "atol": 1e-6}, np.float64: {"rtol": 1e-12, "atol": 1e-12}}


def _momentum(s, g, h, nesterov):
    s["accum"] = s["accum"] * h["momentum"] + g
    if nesterov:
        s["var"] = s["var"] - (g * h["lr"] + s["accum"] * h["momentum"] * h["lr"])
    else:
        s["var"] = s["var"] - h["lr"] * s["accum"]


def _adam(s, g, h, nesterov):
    alpha = h["lr"] * np.sqrt(1 - h["beta2_power"]) / (1 - h["beta1_power"])
    s["m"] = s["m"] + (g - s["m"]) * (1 - h["beta1"])
    s["v"] = s["v"] + (g * g - s["v"]) * (1 - h["beta2"])
    if nesterov:
        s["var"] = s["var"] - (g * (1 - h["beta1"]) + s["m"] * h["beta1"]) * alpha / \
            (np.sqrt(s["v"]) + h["epsilon"])
    else:
        s["var"] = s["var"] - s["m"] * alpha / (np.sqrt(s["v"]) + h["epsilon"])


def _adagrad(s, g, h, update_slots):
    if update_slots:
        s["accum"] = s["accum"] + g * g
    s["var"] = s["var"] - g * h["lr"] / np.sqrt(s["accum"])


def _rms_prop(s, g, h, _):
    s["ms"] = s["ms"] + (g * g - s["ms"]) * (1 - h["rho"])
    s["mom"] = s["mom"] * h["momentum"] + g * h["lr"] / np.sqrt(s["ms"] + h["epsilon"])
    s["var"] = s["var"] - s["mom"]


def _centered_rms_prop(s, g, h, _):
    s["ms"] = s["ms"] + (g * g - s["ms"]) * (1 - h["rho"])
    s["mg"] = s["mg"] + (g - s["mg"]) * (1 - h["rho"])
    s["mom"] = s["mom"] * h["momentum"] + g * h["lr"] / np.sqrt(s["ms"] - s["mg"] ** 2 +
                                                                 h["epsilon"])
    s["var"] = s["var"] - s["mom"]


def _adadelta(s, g, h, _):
    s["accum"] = s["accum"] * h["rho"] + g * g * (1 - h["rho"])
    update = np.sqrt(s["accum_update"] + h["epsilon"]) / np.sqrt(s["accum"] + h["epsilon"]) * g
    s["var"] = s["var"] - update * h["lr"]
    s["accum_update"] = s["accum_update"] * h["rho"] + update * update * (1 - h["rho"])


# op type -> (builder, numpy step, hyper-parameters, flag attr or None)
CASES = {
    "ApplyMomentum": (training_ops.apply_momentum, _momentum,
                      {"lr": 0.1, "momentum": 0.9}, "use_nesterov"),
    "ApplyAdam": (training_ops.apply_adam, _adam,
                  {"beta1_power": 0.9, "beta2_power": 0.999, "lr": 0.01, "beta1": 0.9,
                   "beta2": 0.999, "epsilon": 1e-7}, "use_nesterov"),
    "ApplyAdagrad": (training_ops.apply_adagrad, _adagrad, {"lr": 0.3}, "update_slots"),
    "ApplyRMSProp": (training_ops.apply_rms_prop, _rms_prop,
                     {"lr": 0.01, "rho": 0.9, "momentum": 0.5, "epsilon": 1e-6}, None),
    "ApplyCenteredRMSProp": (training_ops.apply_centered_rms_prop, _centered_rms_prop,
                             {"lr": 0.01, "rho": 0.9, "momentum": 0.5, "epsilon": 1e-6}, None),
    "ApplyAdadelta": (training_ops.apply_adadelta, _adadelta,
                      {"lr": 1.0, "rho": 0.95, "epsilon": 1e-6}, None),
}
FLAG_CASES = [(op, flag) for op, case in CASES.items()
              for flag in ((False, True) if case[3] else (False,))]


@covers(*CASES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op_type, flag", FLAG_CASES)
def test_apply_kernel_updates_variable_and_slots_in_place(runner, op_type, flag, dtype):
    build, step, hyper, flag_attr = CASES[op_type]
    sig = training_ops.SIGNATURES[op_type]
    rng = np.random.default_rng(sorted(CASES).index(op_type))
    # mg stays small beside ms so the centered variance ms - mg^2 is positive.
    state = {name: rng.uniform(*((-0.2, 0.2) if name == "mg" else (0.5, 1.5)), (3, 2))
             .astype(dtype) for name in sig.refs}
    grads = [rng.uniform(-1, 1, (3, 2)).astype(dtype) for _ in range(2)]
    with runner.scope():
        refs = {name: tf.Variable(value, name=name) for name, value in state.items()}
        grad = tf.placeholder(tf_dtype(dtype), [3, 2], name="grad")
        args = {**refs, "grad": grad,
                **{k: tf.constant(v, dtype=tf_dtype(dtype), name=k) for k, v in hyper.items()}}
        flags = {flag_attr: flag} if flag_attr else {}
        update = build(*[args[name] for name in sig.inputs], **flags)
        reads = {name: v.value() for name, v in refs.items()}
    assert update.op.type == op_type and update.dtype.is_ref
    runner.run(tf.group(*[v.initializer for v in refs.values()]))
    want = dict(state)
    for g in grads:
        step(want, g, hyper, flag)
        assert all(np.isfinite(v).all() for v in want.values())
        runner.run(update.op, {grad: g})
        got = runner.run(list(reads.values()))
        for name, value in zip(reads, got):
            np.testing.assert_allclose(value, want[name], **TOL[dtype], err_msg=name)


def _ref_args(op_type, shapes=None, dtype=tf.float32):
    sig = training_ops.SIGNATURES[op_type]
    shapes = shapes or {}
    args = []
    for name in sig.inputs:
        shape = shapes.get(name, [] if name in sig.scalars else [2, 3])
        if name in sig.refs:
            args.append(tf.Variable(np.zeros(shape, dtype.numpy_dtype), name=name))
        else:
            args.append(tf.placeholder(dtype, shape, name=name))
    return args


@pytest.mark.parametrize("op_type", sorted(CASES))
def test_apply_op_static_shape_and_ref_output(op_type):
    with tf.Graph().as_default():
        out = CASES[op_type][0](*_ref_args(op_type))
    assert out.dtype == tf.float32._as_ref and out.shape.as_list() == [2, 3]


def test_apply_op_unknown_shapes_are_accepted():
    with tf.Graph().as_default():
        args = _ref_args("ApplyMomentum")
        args[2] = tf.placeholder(tf.float32, None, name="lr_any")
        args[3] = tf.placeholder(tf.float32, [None, 3], name="grad_partial")
        out = training_ops.apply_momentum(*args)
    assert out.shape.as_list() == [2, 3]


def test_apply_op_rejects_a_non_scalar_hyper_parameter():
    with tf.Graph().as_default():
        args = _ref_args("ApplyAdam", {"beta1": [2]})
        with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1 \\(argument "
                                             "'beta1'\\) for 'ApplyAdam' \\(op: 'ApplyAdam'\\)"):
            training_ops.apply_adam(*args)


def test_apply_op_rejects_a_gradient_of_another_shape():
    with tf.Graph().as_default():
        args = _ref_args("ApplyAdagrad", {"grad": [3, 2]})
        with pytest.raises(ValueError, match="Shapes of 'var' \\[2,3\\] and 'grad' \\[3,2\\] "
                                             "must be equal"):
            training_ops.apply_adagrad(*args)


def test_apply_op_rejects_mixed_dtypes():
    with tf.Graph().as_default():
        args = _ref_args("ApplyRMSProp")
        args[3] = tf.placeholder(tf.float64, [], name="lr64")
        with pytest.raises(TypeError, match="Input 'lr' of 'ApplyRMSProp' Op has type float64 "
                                            "that does not match type float32 of argument "
                                            "'var'"):
            training_ops.apply_rms_prop(*args)


def test_apply_op_needs_a_variable_for_each_ref():
    with tf.Graph().as_default():
        args = _ref_args("ApplyMomentum")
        args[1] = tf.zeros([2, 3], name="not_a_ref")
        with pytest.raises(TypeError, match="requires l-value input 'accum'"):
            training_ops.apply_momentum(*args)


def test_apply_ops_take_no_gradient():
    from engine.ops.registry import get_op_def
    assert all(get_op_def(op).not_differentiable for op in CASES)
