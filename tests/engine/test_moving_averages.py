"""tf.train.ExponentialMovingAverage: five rounds of moving variables and applying the average
give real TensorFlow's shadows (with and without num_updates); shadow names, placement,
variables_to_restore, tensors with zero debiasing, and TF's errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import training_programs as programs

import engine as tf

TF = json.loads(programs.REFERENCE.read_text())["moving_average"]


@pytest.mark.parametrize("case", ["plain", "num_updates"])
def test_moving_average_matches_tensorflow(case):
    got = programs.run_moving_average(tf, case == "num_updates")
    want = TF[case]
    for (gw, gv), (ww, wv) in zip(got["rounds"], want["rounds"]):
        np.testing.assert_allclose(gw, ww, rtol=1e-6)
        assert gv == pytest.approx(wv, rel=1e-6)
    assert got["names"] == want["names"]
    assert got["restore"] == want["restore"]


def test_shadow_is_a_colocated_non_trainable_variable_starting_at_the_initial_value():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/gpu:0"):
            w = tf.Variable(np.array([2.0, 4.0], np.float32), name="w")
        ema = tf.train.ExponentialMovingAverage(0.5)
        with tf.device("/cpu:0"):
            update = ema.apply([w])
        shadow = ema.average(w)
        assert shadow.op.name == "w/ExponentialMovingAverage" == ema.average_name(w)
        assert shadow.op.get_attr("_class") == ["loc:@w"] and not shadow.trainable
        assert shadow in tf.global_variables() and shadow not in tf.trainable_variables()
        assert update.name == "ExponentialMovingAverage" and update.type == "NoOp"
        assert tf.get_collection("moving_average_variables") == [w]
        with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=1)) as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(shadow), [2.0, 4.0])
            sess.run(tf.assign(w, [4.0, 0.0]))
            sess.run(update)
            np.testing.assert_array_equal(sess.run(shadow), [3.0, 2.0])
            placed = sess.placement.as_dict()
    assert placed["w/ExponentialMovingAverage"].endswith("GPU:0")
    assert placed["ExponentialMovingAverage/AssignMovingAvg"].endswith("GPU:0")


def test_average_name_before_apply_and_variables_to_restore():
    with tf.Graph().as_default():
        w = tf.Variable(1.0, name="w")
        b = tf.Variable(2.0, name="b")
        frozen = tf.Variable(3.0, trainable=False, name="frozen")
        ema = tf.train.ExponentialMovingAverage(0.9, name="EMA")
        assert ema.name == "EMA" and ema.average_name(w) == "w/EMA"
        assert ema.average(w) is None
        ema.apply([w])
        restore = ema.variables_to_restore()
        assert restore == {"w/EMA": w, "b/EMA": b, "frozen": frozen}
        assert ema.variables_to_restore([w]) == {"w/EMA": w, "b": b, "frozen": frozen}


def test_tensor_average_without_and_with_zero_debias():
    values = [4.0, 8.0, 2.0]
    for zero_debias in (False, True):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [], name="x")
            loss = tf.identity(x, name="loss")
            ema = tf.train.ExponentialMovingAverage(0.5, zero_debias=zero_debias)
            update = ema.apply([loss])
            shadow = ema.average(loss)
            assert shadow.op.name == "loss/ExponentialMovingAverage"
            assert "_class" not in shadow.op.attrs
            with tf.Session(graph=g) as sess:
                sess.run(tf.global_variables_initializer())
                got = []
                for v in values:
                    sess.run(update, {x: v})
                    got.append(float(sess.run(shadow)))
        biased, want = 0.0, []
        for t, v in enumerate(values, start=1):
            biased = 0.5 * biased + 0.5 * v
            want.append(biased / (1 - 0.5 ** t) if zero_debias else biased)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_moving_average_rejects_integer_variables():
    with tf.Graph().as_default():
        counter = tf.Variable(1, name="counter")
        with pytest.raises(TypeError, match="The variables must be half, float, or double: "
                                            "counter"):
            tf.train.ExponentialMovingAverage(0.9).apply([counter])


@pytest.mark.skipif(not programs.assign_copies_its_value(),
                    reason="needs Assign to copy its value (the core family's variable semantics)")
def test_average_applied_after_the_train_op_sees_the_updated_variable():
    """The TF1 idiom: `with control_dependencies([train]): train = ema.apply(...)`. The
    shadows are built outside the control dependencies; the update reads the trained value."""
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(np.float32(1.0), name="w")
        train = tf.train.MomentumOptimizer(0.5, 0.0).minimize(w * 2.0)
        ema = tf.train.ExponentialMovingAverage(0.75)
        with tf.control_dependencies([train]):
            train_and_average = ema.apply([w])
        assert ema.average(w).initializer.control_inputs == []
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_and_average)
            # w: 1 -> 1 - 0.5 * 2 = 0; the shadow moves from 1 a quarter of the way to 0.
            assert sess.run(w) == 0.0
            assert sess.run(ema.average(w)) == pytest.approx(0.75)
