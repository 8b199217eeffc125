"""NaN/Inf checks: tf.check_numerics (TF's error text, the checked gradient),
tf.add_check_numerics_ops, and ConfigProto(check_numerics=True), which names the first op in
execution order whose output holds a NaN or Inf (by end time across partitions), records an
alert with its inputs' statistics and creation site, and loses nothing from the run store."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest
from grad_harness import check_gradients, grad_test
from kernel_harness import covers, mark_executed

import engine as tf
from engine.debug import numerics
from engine.record import RunReader
from engine.record.schema import INF, NAN, NAN_AND_INF

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"


@covers("CheckNumerics")
def test_check_numerics_passes_finite_tensors_through(runner):
    values = np.array([[1.5, -2.0], [3e38, 3e38]], np.float32)    # their sum overflows
    with runner.scope():
        checked = tf.check_numerics(tf.constant(values), "fine")
    np.testing.assert_array_equal(runner.run(checked), values)
    assert checked.op.type == "CheckNumerics" and checked.op.get_attr("message") == "fine"


@pytest.mark.parametrize("values, found", [([1.0, np.nan], "NaN"), ([np.inf, 1.0], "Inf"),
                                           ([-np.inf, np.nan], "Inf and NaN")])
@covers("CheckNumerics")
def test_check_numerics_error_text_is_tfs(runner, values, found):
    """TF 2.21 (compat.v1) prints `my msg : Tensor had NaN values`, `... Inf values`, and for
    both `... Inf and NaN values`."""
    with runner.scope():
        checked = tf.check_numerics(tf.constant(values), "my msg")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=f"^my msg : Tensor had {found} values\n"):
        runner.run(checked)
    mark_executed("CheckNumerics")


def test_check_numerics_refuses_non_float_tensors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="parameter 'T' of op 'CheckNumerics'"):
            tf.check_numerics(tf.constant([1, 2]), "ints")


@grad_test("CheckNumerics")
def test_check_numerics_gradient_passes_through():
    x = np.random.default_rng(0).uniform(-2, 2, (3, 4))
    g, _ = check_gradients(lambda t: tf.check_numerics(t * t, "chk"), lambda t: t * t, [x])
    messages = [op.get_attr("message") for op in g.get_operations()
                if op.type == "CheckNumerics" and op.name.startswith("gradients/")]
    assert messages == ["Not a number (NaN) or infinity (Inf) values detected in gradient. chk"]


def test_a_nan_gradient_is_caught_by_the_checked_gradient():
    with tf.Graph().as_default():
        x = tf.constant([0.0, 1.0])
        y = tf.reduce_sum(tf.sqrt(tf.check_numerics(x, "x")))     # d sqrt / dx = inf at 0
        grad, = tf.gradients(y, [x])
        with tf.Session() as sess, pytest.raises(
                tf.errors.InvalidArgumentError,
                match="detected in gradient. x : Tensor had Inf values"):
            sess.run(grad)


def test_add_check_numerics_ops_checks_every_float_output_in_graph_order():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [2], name="x")
        doubled = tf.multiply(x, 2.0, name="doubled")
        logged = tf.log(doubled, name="logged")
        tf.reduce_sum(logged, name="total")
        tf.shape(x, name="shape")                      # int32: not checked
        check = tf.add_check_numerics_ops()
        checks = [op for op in g.get_operations() if op.type == "CheckNumerics"]
        assert [op.get_attr("message") for op in checks] == \
            ["x:0", "doubled/y:0", "doubled:0", "logged:0", "total:0"]
        assert all(checks[i] in checks[i + 1].control_inputs for i in range(len(checks) - 1))
        with tf.Session() as sess:
            sess.run(check, {x: [1.0, 2.0]})
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="^logged:0 : Tensor had NaN values"):
                sess.run(check, {x: [1.0, -2.0]})


def _log_of_twice(x_values):
    x = tf.placeholder(tf.float32, [len(x_values)], name="x")
    twice = tf.multiply(2.0, x, name="twice")
    log = tf.log(twice, name="log")
    loss = tf.reduce_sum(log, name="loss")
    return x, loss


def test_check_numerics_config_names_the_log_not_the_loss(tmp_path):
    with tf.Graph().as_default():
        x, loss = _log_of_twice([1.0, -2.0, 3.0])
        config = tf.ConfigProto(check_numerics=True)
        with tf.Session(config=config, logdir=str(tmp_path), run_name="r") as sess:
            assert sess.run(loss, {x: [1.0, 2.0, 3.0]}) == pytest.approx(np.log(48.0))
            with pytest.raises(tf.errors.InvalidArgumentError) as caught:
                sess.run(loss, {x: [1.0, -2.0, 3.0]})
            reader = RunReader(tmp_path / "r")
            alert, = reader.alerts()                     # there before the session closes
    text = str(caught.value)
    assert text.startswith("log:0 : Tensor had NaN values (found by "
                           "ConfigProto(check_numerics=True) in the output of op 'log' (Log)")
    assert "[[node log (defined at " in text and "Caused by op 'log'" in text
    assert (alert.step, alert.node, alert.op, alert.device, alert.kind) == \
        (2, "log", "Log", CPU0, NAN)
    assert alert.message == text.split("\n", 1)[0]
    assert alert.stack and alert.stack[-1].endswith("in _log_of_twice")
    twice, = alert.inputs
    assert (twice.node, twice.step, twice.shape, twice.min, twice.max) == \
        ("twice:0", 2, (3,), -4.0, 6.0)
    assert twice.nan_count == 0 and alert.output.nan_count == 1
    assert alert.output.node == "log:0"
    stats = {s.node for s in reader.step_stats(2)}
    assert {"twice", "log"} <= stats and "loss" not in stats
    assert [s.step for s in reader.steps()] == [1, 2]


def test_inf_and_inf_with_nan_alerts(tmp_path):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        inv = tf.divide(1.0, x, name="inv")
        log = tf.log(x, name="log")
        config = tf.ConfigProto(check_numerics=True)
        with tf.Session(config=config, logdir=str(tmp_path), run_name="r") as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="^inv:0 : Tensor had Inf values"):
                sess.run(inv, {x: [1.0, 0.0]})
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="^log:0 : Tensor had Inf and NaN values"):
                sess.run(log, {x: [0.0, -1.0]})
    alerts = RunReader(tmp_path / "r").alerts()
    assert [(a.node, a.kind) for a in alerts] == [("inv", INF), ("log", NAN_AND_INF)]
    assert alerts[1].output.neg_inf_count == 1 and alerts[1].output.nan_count == 1


def test_check_numerics_across_partitions_names_the_device(tmp_path):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device("/gpu:1"):
            log = tf.log(x, name="log")
        with tf.device("/cpu:0"):
            out = tf.add(log, 1.0, name="out")
        config = tf.ConfigProto(check_numerics=True, virtual_gpus=2)
        with tf.Session(config=config, logdir=str(tmp_path), run_name="r") as sess:
            assert sess.run(out, {x: [1.0, 1.0]}).tolist() == [1.0, 1.0]
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=f"^log:0 : Tensor had NaN values .* on {GPU1}"):
                sess.run(out, {x: [1.0, -1.0]})
            assert sess.run(out, {x: [1.0, 1.0]}).tolist() == [1.0, 1.0]   # the session lives on
        reader = RunReader(tmp_path / "r")
        alert, = reader.alerts()
        assert (alert.node, alert.device, alert.step) == ("log", GPU1, 2)
        assert alert.inputs[0].node == "x:0" and alert.inputs[0].min == -1.0
        assert {s.device for s in reader.step_stats(2)} >= {GPU1}
        assert len(reader.steps()) == 3


@pytest.mark.parametrize("earlier", ["cpu", "gpu"])
def test_first_across_partitions_is_by_execution_time(monkeypatch, earlier):
    """Two independent NaNs on two devices: both partitions find theirs; the alert and the
    error name the one that finished first. The clock is faked per thread (the client CPU
    partition runs on the calling thread), so the order is fixed, not raced."""
    caller = threading.get_ident()

    def fake_clock():
        on_cpu = threading.get_ident() == caller
        return 100 if on_cpu == (earlier == "gpu") else 50
    monkeypatch.setattr(numerics, "time", SimpleNamespace(perf_counter_ns=fake_clock))
    with tf.Graph().as_default():
        with tf.device("/cpu:0"):
            on_cpu = tf.log(tf.constant([-1.0]), name="cpu_log")
        with tf.device("/gpu:1"):
            on_gpu = tf.sqrt(tf.constant([-1.0]), name="gpu_sqrt")
        config = tf.ConfigProto(check_numerics=True, virtual_gpus=2)
        with tf.Session(config=config) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as caught:
                sess.run([on_cpu, on_gpu])
    want = "cpu_log" if earlier == "cpu" else "gpu_sqrt"
    assert str(caught.value).startswith(f"{want}:0 : Tensor had NaN values")


def test_check_numerics_config_field():
    assert tf.ConfigProto(check_numerics=True).as_dict()["check_numerics"] is True
    assert tf.ConfigProto().check_numerics is False
