"""The standard hooks (TF_BEHAVIOUR 8.4-8.11): when each triggers and what it logs, on a
deterministic clock."""

from __future__ import annotations

import json
import logging
import math
import os

import numpy as np
import pytest

import engine as tf
from engine.train import hooks as hooks_module


@pytest.fixture(autouse=True)
def _close_cached_writers():
    """Hooks open run stores through the process-wide FileWriterCache; close them per test."""
    from engine.summary import FileWriterCache
    yield
    FileWriterCache.clear()


class Clock:
    def __init__(self, start: float = 1000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(hooks_module, "_now", c)
    return c


@pytest.fixture
def messages(caplog):
    caplog.set_level(logging.INFO, logger="engine")
    return lambda: [r.getMessage() for r in caplog.records if r.module in ("hooks", "saving_hooks")]


def _graph():
    g = tf.Graph()
    with g.as_default():
        step = tf.train.get_or_create_global_step()
        value = tf.placeholder(tf.float32, [], name="value")
        loss = tf.identity(value * 2.0, name="loss")
        # As an Estimator does: the hooks' copy of the step is taken before the increment, so
        # each run fetches the stale step TF's hook logic is written for.
        with tf.control_dependencies([hooks_module._global_step_read("the tests")]):
            increment = tf.assign_add(step, 1, name="increment")
    return g, step, value, loss, increment


def _run(g, hooks, runs, feed=None, fetch="increment", clock=None, tick=0.0, creator=None):
    """Runs up to `runs` steps through a MonitoredSession (`feed(i)` gives each run's value)
    and returns how many ran before it asked to stop."""
    with g.as_default():
        with tf.train.MonitoredSession(session_creator=creator, hooks=hooks) as sess:
            for i in range(runs):
                if sess.should_stop():
                    return i
                if clock is not None:
                    clock.now += tick
                sess.run(fetch, feed_dict={"value:0": feed(i) if feed else 1.0})
    return runs


# -- SecondOrStepTimer ------------------------------------------------------------------------

def test_step_timer_fires_first_then_every_n_steps_never_twice_for_a_step():
    timer = tf.train.SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(5)
    assert timer.update_last_triggered_step(5) == (None, None)
    assert not timer.should_trigger_for_step(5)
    assert [s for s in range(5, 12) if timer.should_trigger_for_step(s)] == [8, 9, 10, 11]
    assert timer.last_triggered_step() == 5


def test_seconds_timer_uses_the_clock(clock):
    timer = tf.train.SecondOrStepTimer(every_secs=10)
    timer.update_last_triggered_step(0)
    clock.now += 9.5
    assert not timer.should_trigger_for_step(1)
    clock.now += 0.5
    assert timer.should_trigger_for_step(1)
    assert timer.update_last_triggered_step(4) == (10.0, 4)


def test_timer_arguments():
    with pytest.raises(ValueError, match="Either every_secs or every_steps should be provided"):
        tf.train.SecondOrStepTimer()
    with pytest.raises(ValueError, match="Can not provide both every_secs and every_steps"):
        tf.train.SecondOrStepTimer(every_secs=1, every_steps=1)


# -- LoggingTensorHook ------------------------------------------------------------------------

def test_logging_tensor_hook_every_n_iter_logs_tfs_line(clock, messages):
    g, step, value, loss, increment = _graph()
    with g.as_default():
        hook = tf.train.LoggingTensorHook({"loss": loss, "value": "value:0"}, every_n_iter=2)
    _run(g, [hook], 5, feed=lambda i: i + 0.5, fetch=[increment, loss], clock=clock, tick=0.25)
    assert messages() == ["loss = 1.0, value = 0.5", "loss = 5.0, value = 2.5 (0.500 sec)",
                          "loss = 9.0, value = 4.5 (0.500 sec)"]


def test_logging_tensor_hook_tags_formatter_at_end_and_names(messages):
    g, step, value, loss, increment = _graph()
    with g.as_default():
        by_tensor = tf.train.LoggingTensorHook([loss], every_n_iter=10)
        by_name = tf.train.LoggingTensorHook(["loss"], every_n_iter=10)
        formatted = tf.train.LoggingTensorHook(
            {"l": loss}, every_n_iter=10, formatter=lambda v: f"custom {v['l']:.1f}")
        at_end = tf.train.LoggingTensorHook({"step": step}, at_end=True)
    _run(g, [by_tensor, by_name, formatted, at_end], 3, feed=lambda i: 2.0)
    assert messages() == ['Tensor("loss:0", shape=(), dtype=float32) = 4.0', "loss = 4.0",
                          "custom 4.0", "step = 3"]


def test_logging_tensor_hook_arguments():
    with pytest.raises(ValueError, match="either at_end and/or exactly one of every_n_iter"):
        tf.train.LoggingTensorHook({"a": "a:0"})
    with pytest.raises(ValueError, match="invalid every_n_iter=0"):
        tf.train.LoggingTensorHook({"a": "a:0"}, every_n_iter=0)
    g = tf.Graph()
    with g.as_default():
        hook = tf.train.LoggingTensorHook(["nowhere"], every_n_iter=1)
        with pytest.raises(KeyError, match="nowhere"):
            hook.begin()


# -- StopAtStepHook ---------------------------------------------------------------------------

def _starting_at_4(g, step):
    with g.as_default():
        set_4 = tf.assign(step, 4)
        scaffold = tf.train.Scaffold(init_fn=lambda scaffold, sess: sess.run(set_4))
    return tf.train.ChiefSessionCreator(scaffold=scaffold)


def test_stop_at_step_hook_num_steps_counts_from_session_creation():
    g, step, value, loss, increment = _graph()
    creator = _starting_at_4(g, step)
    assert _run(g, [tf.train.StopAtStepHook(num_steps=3)], 10, creator=creator) == 3


def test_stop_at_step_hook_last_step():
    g, step, value, loss, increment = _graph()
    assert _run(g, [tf.train.StopAtStepHook(last_step=5)], 10) == 5
    g, step, value, loss, increment = _graph()
    creator = _starting_at_4(g, step)
    assert _run(g, [tf.train.StopAtStepHook(last_step=6)], 10, creator=creator) == 2
    with pytest.raises(ValueError, match="One of num_steps or last_step must be specified"):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of num_steps or last_step can be "
                                         "specified"):
        tf.train.StopAtStepHook(num_steps=1, last_step=1)


def test_hooks_that_need_a_global_step_say_so():
    g = tf.Graph()
    with g.as_default():
        tf.Variable(1.0)
        for hook in (tf.train.StopAtStepHook(num_steps=1), tf.train.StepCounterHook(),
                     tf.train.ProfilerHook(save_steps=1)):
            with pytest.raises(RuntimeError, match=f"Global step should be created to use "
                                                   f"{type(hook).__name__}"):
                hook.begin()


# -- NanTensorHook ----------------------------------------------------------------------------

def test_nan_tensor_hook_fails_with_tfs_error(messages):
    g, step, value, loss, increment = _graph()
    with g.as_default():
        hook = tf.train.NanTensorHook(loss)
    with pytest.raises(tf.train.NanLossDuringTrainingError) as info:
        _run(g, [hook], 5, feed=lambda i: math.nan if i == 2 else 1.0)
    assert str(info.value) == "NaN loss during training."
    assert messages()[-1] == "Model diverged with loss = NaN."


def test_nan_tensor_hook_can_just_stop(caplog):
    g, step, value, loss, increment = _graph()
    with g.as_default():
        hook = tf.train.NanTensorHook(loss, fail_on_nan_loss=False)
    assert _run(g, [hook], 5, feed=lambda i: math.nan if i == 1 else 1.0) == 2
    assert [r.levelname for r in caplog.records if "diverged" in r.getMessage()] == ["WARNING"]


# -- StepCounterHook --------------------------------------------------------------------------

def test_step_counter_hook_logs_global_steps_per_second(clock, messages):
    g, step, value, loss, increment = _graph()
    with g.as_default():
        hook = tf.train.StepCounterHook(every_n_steps=2)
    _run(g, [hook], 6, clock=clock, tick=0.5)
    # Triggers at global steps 1 (no rate yet), 3 and 5: 2 steps per 1.0 s each time.
    assert messages() == ["global_step/sec: 2", "global_step/sec: 2"]


def test_step_counter_hook_writes_its_rate_as_a_summary(tmp_path, clock):
    from engine.record import RunReader
    from engine.summary import FileWriterCache
    g, step, value, loss, increment = _graph()
    with g.as_default():
        hook = tf.train.StepCounterHook(every_n_steps=1, output_dir=str(tmp_path))
    _run(g, [hook], 3, clock=clock, tick=0.25)
    FileWriterCache.clear()
    steps, rates = RunReader(str(tmp_path)).scalars("global_step/sec")
    assert steps.tolist() == [2, 3] and rates.tolist() == [4.0, 4.0]


def test_step_counter_hook_warns_when_the_global_step_is_stuck(caplog):
    g, step, value, loss, increment = _graph()
    with g.as_default():
        hook = tf.train.StepCounterHook(every_n_steps=1000)
    _run(g, [hook], 42, fetch=loss)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 2        # after 20 and 40 unchanged readings
    assert warnings[0].startswith("It seems that global step (tf.train.get_global_step) has "
                                  "not been increased. Current value (could be stable): 0 vs "
                                  "previous value: 0.")


# -- CheckpointSaverHook ----------------------------------------------------------------------

class Listener(tf.train.CheckpointSaverListener):
    def __init__(self, stop_at=None):
        self.calls, self._stop_at = [], stop_at

    def begin(self):
        self.calls.append("begin")

    def before_save(self, session, global_step_value):
        self.calls.append(("before", global_step_value))

    def after_save(self, session, global_step_value):
        self.calls.append(("after", global_step_value))
        return self._stop_at is not None and global_step_value >= self._stop_at

    def end(self, session, global_step_value):
        self.calls.append(("end", global_step_value))


def test_checkpoint_saver_hook_saves_at_start_every_n_steps_and_at_end(tmp_path, messages):
    g, step, value, loss, increment = _graph()
    listener = Listener()
    with g.as_default():
        hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=3, listeners=[listener])
    _run(g, [hook], 7)
    assert listener.calls == ["begin", ("before", 0), ("after", 0), ("before", 3), ("after", 3),
                              ("before", 6), ("after", 6), ("before", 7), ("after", 7),
                              ("end", 7)]
    saves = [m for m in messages() if m.startswith("Saving checkpoints")]
    assert saves == [f"Saving checkpoints for {n} into {tmp_path}/model.ckpt." for n in
                     (0, 3, 6, 7)]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-7")
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [
        str(tmp_path / f"model.ckpt-{n}") for n in (0, 3, 6, 7)]


def test_a_listener_can_stop_training(tmp_path):
    g, step, value, loss, increment = _graph()
    with g.as_default():
        hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=2,
                                            listeners=[Listener(stop_at=4)])
    assert _run(g, [hook], 10) == 4


def test_checkpoint_saver_hook_arguments_and_missing_saver(tmp_path):
    with pytest.raises(ValueError, match="You cannot provide both saver and scaffold"):
        tf.train.CheckpointSaverHook(str(tmp_path), save_steps=1, saver=object(),
                                     scaffold=object())
    g, step, *_ = _graph()
    with g.as_default():
        hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=1)
        with pytest.raises(RuntimeError, match="No items in collection savers"):
            hook._get_saver()


# -- ProfilerHook -----------------------------------------------------------------------------

def test_profiler_hook_traces_trigger_steps_but_never_the_first_run(tmp_path, messages):
    g, step, value, loss, increment = _graph()
    with g.as_default():
        hook = tf.train.ProfilerHook(save_steps=2, output_dir=str(tmp_path))
    _run(g, [hook], 6)
    written = sorted(f for f in os.listdir(tmp_path) if f.startswith("timeline-"))
    # The first run only notes the step; then every second global step is traced.
    assert written == ["timeline-2.json", "timeline-4.json", "timeline-6.json"]
    assert messages() == [f"Saving timeline for {n} into '{tmp_path}/timeline-{n}.json'."
                          for n in (2, 4, 6)]
    trace = json.loads((tmp_path / "timeline-4.json").read_text())
    ops = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert "increment" in ops


# -- feeds and final ops ----------------------------------------------------------------------

def test_feed_fn_hook_and_final_ops_hook():
    g, step, value, loss, increment = _graph()
    with g.as_default():
        feeds = iter(range(10))
        feeder = tf.train.FeedFnHook(lambda: {value: float(next(feeds))})
        final = tf.train.FinalOpsHook({"s": step, "l": loss}, {value: 21.0})
        log = tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=1)
        with tf.train.MonitoredSession(hooks=[feeder, final, log]) as sess:
            got = [sess.run(loss) for _ in range(3)]
            sess.run(increment)
    assert got == [0.0, 2.0, 4.0]
    assert final.final_ops_values == {"s": 1, "l": np.float32(42.0)}
