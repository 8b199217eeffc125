"""TF1 training programs run unchanged on real TensorFlow and on this engine: the optimizer,
learning-rate schedule and moving-average cases the tests compare. Each function takes the
`tf` module. Run this file with the reference TensorFlow to refresh the expected numbers:

    /work/tfref/bin/python tests/engine/training_programs.py

which rewrites tests/engine/training_programs_tf.json (TensorFlow's values and names)."""

from __future__ import annotations

import json
import pathlib

import numpy as np

REFERENCE = pathlib.Path(__file__).with_name("training_programs_tf.json")
STEPS = 10

OPTIMIZERS = {
    "gradient_descent": lambda tf: tf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda tf: tf.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda tf: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adam": lambda tf: tf.train.AdamOptimizer(0.05),
    "adam_tuned": lambda tf: tf.train.AdamOptimizer(0.02, beta1=0.8, beta2=0.99,
                                                    epsilon=1e-4),
    "adagrad": lambda tf: tf.train.AdagradOptimizer(0.2, initial_accumulator_value=0.5),
    "rmsprop": lambda tf: tf.train.RMSPropOptimizer(0.01),
    "rmsprop_momentum": lambda tf: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5,
                                                             epsilon=1e-6),
    "rmsprop_centered": lambda tf: tf.train.RMSPropOptimizer(0.01, momentum=0.3,
                                                             centered=True),
    "adadelta": lambda tf: tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
}


def _problem(tf, dtype):
    """A least-squares fit: x @ w + b against fixed targets."""
    rng = np.random.RandomState(7)
    x = rng.uniform(-1, 1, (6, 3)).astype(dtype)
    y = rng.uniform(-1, 1, (6, 2)).astype(dtype)
    w = tf.Variable(rng.uniform(-1, 1, (3, 2)).astype(dtype), name="w")
    b = tf.Variable(np.zeros(2, dtype), name="b")
    loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(x), w) + b - tf.constant(y)))
    return w, b, loss


def run_optimizer(tf, case: str, dtype=np.float32, schedule: bool = False) -> dict:
    """STEPS training steps; returns the variables after the first and the last step, the
    slots, and the names the optimizer created."""
    graph = tf.Graph()
    with graph.as_default():
        w, b, loss = _problem(tf, dtype)
        step = tf.train.get_or_create_global_step()
        opt = OPTIMIZERS[case](tf)
        if schedule:
            lr = tf.train.exponential_decay(0.1, step, 3, 0.5, staircase=True)
            opt = tf.train.MomentumOptimizer(lr, 0.9)
        train = opt.minimize(loss, global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            first = sess.run([w, b])
            for _ in range(STEPS - 1):
                sess.run(train)
            slots = {f"{name}:{v.op.name}": sess.run(opt.get_slot(v, name)).tolist()
                     for name in opt.get_slot_names() for v in (w, b)}
            return {
                "first": [a.tolist() for a in first],
                "last": [a.tolist() for a in sess.run([w, b])],
                "loss": float(sess.run(loss)),
                "step": int(sess.run(step)),
                "slots": slots,
                "slot_names": opt.get_slot_names(),
                "variables": [v.name for v in opt.variables()],
                "update_ops": sorted(op.name for op in graph.get_operations()
                                     if op.name.startswith(opt.get_name() + "/")),
            }


SCHEDULE_STEPS = [0, 1, 2, 3, 5, 9, 10, 11, 33, 99, 100, 101, 250]

SCHEDULES = {
    "exponential": lambda tf, s: tf.train.exponential_decay(0.1, s, 10, 0.5),
    "exponential_staircase": lambda tf, s: tf.train.exponential_decay(0.1, s, 10, 0.5,
                                                                      staircase=True),
    "piecewise": lambda tf, s: tf.train.piecewise_constant(s, [10, 100], [1.0, 0.5, 0.1]),
    "piecewise_int": lambda tf, s: tf.train.piecewise_constant(s, [3, 11], [7, 5, 2]),
    "polynomial": lambda tf, s: tf.train.polynomial_decay(0.1, s, 100, 0.01),
    "polynomial_power": lambda tf, s: tf.train.polynomial_decay(0.1, s, 100, 0.01, power=2.0),
    "polynomial_cycle": lambda tf, s: tf.train.polynomial_decay(0.1, s, 10, 0.01, power=0.5,
                                                                cycle=True),
    "inverse_time": lambda tf, s: tf.train.inverse_time_decay(0.1, s, 10, 0.5),
    "inverse_time_staircase": lambda tf, s: tf.train.inverse_time_decay(0.1, s, 10, 0.5,
                                                                        staircase=True),
    "natural_exp": lambda tf, s: tf.train.natural_exp_decay(0.1, s, 10, 0.5),
    "natural_exp_staircase": lambda tf, s: tf.train.natural_exp_decay(0.1, s, 10, 0.5,
                                                                      staircase=True),
    "cosine": lambda tf, s: tf.train.cosine_decay(0.1, s, 100),
    "cosine_alpha": lambda tf, s: tf.train.cosine_decay(0.1, s, 100, alpha=0.2),
}


def run_schedule(tf, case: str) -> list:
    """The schedule's value at each of SCHEDULE_STEPS, with the step fed as an int64."""
    graph = tf.Graph()
    with graph.as_default():
        step = tf.placeholder(tf.int64, [], name="step")
        lr = SCHEDULES[case](tf, step)
        with tf.Session() as sess:
            return [sess.run(lr, {step: s}).item() for s in SCHEDULE_STEPS]


def run_moving_average(tf, num_updates: bool) -> dict:
    """Five rounds of: move the variables, apply the moving average."""
    graph = tf.Graph()
    with graph.as_default():
        w = tf.Variable(np.array([1.0, -2.0], np.float32), name="w")
        v = tf.Variable(np.float32(3.0), name="v")
        step = tf.Variable(0, trainable=False, name="step")
        ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step if num_updates else None)
        apply = ema.apply([w, v])
        move = [tf.assign_add(w, [0.5, 1.5]), tf.assign(v, v * 2.0), tf.assign_add(step, 3)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            rounds = []
            for _ in range(5):
                sess.run(move)
                sess.run(apply)
                rounds.append([sess.run(ema.average(w)).tolist(),
                               float(sess.run(ema.average(v)))])
            return {
                "rounds": rounds,
                "names": [ema.average_name(w), ema.average(w).name, ema.average(v).name],
                "restore": sorted(ema.variables_to_restore()),
            }


def reference(tf) -> dict:
    out = {"optimizers": {c: run_optimizer(tf, c) for c in OPTIMIZERS}}
    out["optimizers"]["adam_float64"] = run_optimizer(tf, "adam", np.float64)
    out["optimizers"]["momentum_schedule"] = run_optimizer(tf, "momentum", schedule=True)
    out["schedules"] = {c: run_schedule(tf, c) for c in SCHEDULES}
    out["moving_average"] = {"plain": run_moving_average(tf, False),
                             "num_updates": run_moving_average(tf, True)}
    return out


def assign_copies_its_value() -> bool:
    """Whether two variables initialized from one tensor stay independent when one is updated
    in place on this engine (the core family makes Assign copy; before that, both share the
    initial value's tensor, so in-place updates leak between them)."""
    import engine as tf
    from engine.ops import training_ops
    g = tf.Graph()
    with g.as_default():
        c = tf.constant([1.0])
        a, b = tf.Variable(c, name="a"), tf.Variable(c, name="b")
        accum = tf.Variable([0.0], name="accum")
        step = training_ops.apply_momentum(a, accum, tf.constant(1.0), tf.constant([1.0]),
                                           tf.constant(0.0))
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step.op)
            return sess.run(b).tolist() == [1.0]


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
