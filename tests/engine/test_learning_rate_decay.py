"""Learning-rate schedules as graph ops of the global step: each gives real TensorFlow's values
at a range of steps (training_programs_tf.json), names its result after its scope, drives an
optimizer from the global step, and rejects what TF rejects."""

from __future__ import annotations

import json

import numpy as np
import pytest
import training_programs as programs

import engine as tf

TF = json.loads(programs.REFERENCE.read_text())["schedules"]


@pytest.mark.parametrize("case", sorted(programs.SCHEDULES))
def test_schedule_matches_tensorflow(case):
    got = programs.run_schedule(tf, case)
    np.testing.assert_allclose(got, TF[case], rtol=1e-6, atol=1e-9)
    if case == "piecewise_int":
        assert all(isinstance(v, int) for v in got)


@pytest.mark.parametrize("build, scope", [
    (lambda s: tf.train.exponential_decay(0.1, s, 10, 0.5), "ExponentialDecay"),
    (lambda s: tf.train.piecewise_constant(s, [5], [1.0, 0.5]), "PiecewiseConstant"),
    (lambda s: tf.train.polynomial_decay(0.1, s, 10), "PolynomialDecay"),
    (lambda s: tf.train.inverse_time_decay(0.1, s, 10, 0.5), "InverseTimeDecay"),
    (lambda s: tf.train.natural_exp_decay(0.1, s, 10, 0.5), "NaturalExpDecay"),
])
def test_schedule_result_is_named_after_its_scope(build, scope):
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        first, second = build(step), build(step)
    assert first.op.name == scope and second.op.name == f"{scope}_1"
    assert first.dtype == tf.float32 and first.shape.ndims == 0


def test_exponential_decay_drives_an_optimizer_through_the_global_step():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(np.float32(0.0), name="w")
        step = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(1.0, step, 2, 0.5, staircase=True, name="lr")
        train = tf.train.GradientDescentOptimizer(lr).minimize(-1.0 * w, global_step=step)
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            rates = []
            for _ in range(5):
                rates.append(float(sess.run(lr)))
                sess.run(train)
            # Each step moves w by the rate in force at that step.
            assert rates == [1.0, 1.0, 0.5, 0.5, 0.25]
            assert sess.run(w) == pytest.approx(sum(rates))


def test_schedules_need_a_global_step():
    for build, name in ((tf.train.exponential_decay, "exponential_decay"),
                        (tf.train.natural_exp_decay, "natural_exp_decay"),
                        (tf.train.inverse_time_decay, "inverse_time_decay")):
        with pytest.raises(ValueError, match=f"global_step is required for {name}."):
            build(0.1, None, 10, 0.5)
    with pytest.raises(ValueError, match="global_step is required for polynomial_decay."):
        tf.train.polynomial_decay(0.1, None, 10)


def test_piecewise_constant_checks_lengths_and_dtypes():
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [])
        with pytest.raises(ValueError, match="The length of boundaries should be 1 less than "
                                             "the length of values"):
            tf.train.piecewise_constant(step, [1, 2], [1.0, 2.0])
        with pytest.raises(ValueError, match="Boundaries \\(float32\\) must have the same "
                                             "dtype as x \\(int64\\)."):
            tf.train.piecewise_constant(step, [1.5], [1.0, 2.0])
        with pytest.raises(ValueError, match="Values must have elements all with the same "
                                             "dtype \\(float32 vs int32\\)."):
            tf.train.piecewise_constant(step, [1], [1.0, 2])
