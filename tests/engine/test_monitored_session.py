"""MonitoredSession and MonitoredTrainingSession (TF_BEHAVIOUR 8.1-8.3): the hook call order,
merged fetches / feeds / options, stop latching, clean and unclean exits, run_step_fn, and a
TF1 training loop that is stopped and resumed from its latest checkpoint."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

import engine as tf
from engine import errors


@pytest.fixture(autouse=True)
def _close_cached_writers():
    """Hooks open run stores through the process-wide FileWriterCache; close them per test."""
    from engine.summary import FileWriterCache
    yield
    FileWriterCache.clear()


class RecordingHook(tf.train.SessionRunHook):
    """Records every call; optionally fetches, feeds, asks for options or stops."""

    def __init__(self, log, name="hook", fetches=None, feeds=None, options=None,
                 stop_after=None):
        self.log, self.name = log, name
        self._fetches, self._feeds, self._options = fetches, feeds, options
        self._stop_after = stop_after
        self.results, self.runs = [], 0

    def begin(self):
        self.log.append((self.name, "begin", tf.get_default_graph().finalized))

    def after_create_session(self, session, coord):
        self.log.append((self.name, "after_create_session", isinstance(coord,
                                                                       tf.train.Coordinator)))

    def before_run(self, run_context):
        self.log.append((self.name, "before_run"))
        if self._fetches is None and self._feeds is None and self._options is None:
            return None
        return tf.train.SessionRunArgs(self._fetches, self._feeds, self._options)

    def after_run(self, run_context, run_values):
        self.runs += 1
        self.results.append(run_values.results)
        self.log.append((self.name, "after_run"))
        if self._stop_after is not None and self.runs >= self._stop_after:
            run_context.request_stop()

    def end(self, session):
        self.log.append((self.name, "end"))


def _counter_graph():
    g = tf.Graph()
    with g.as_default():
        step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [], name="x")
        doubled = tf.multiply(x, 2.0, name="doubled")
        increment = tf.assign_add(step, 1, name="increment")
    return g, step, x, doubled, increment


def test_hook_methods_run_in_tfs_order_and_end_only_at_a_clean_close():
    g, step, x, doubled, increment = _counter_graph()
    log = []
    with g.as_default():
        hooks = [RecordingHook(log, "a"), RecordingHook(log, "b")]
        with tf.train.MonitoredSession(hooks=hooks) as sess:
            assert g.finalized
            sess.run(increment)
        assert not g.finalized     # unfinalized again at close, as TF does
    assert log == [("a", "begin", False), ("b", "begin", False),
                   ("a", "after_create_session", True), ("b", "after_create_session", True),
                   ("a", "before_run"), ("b", "before_run"), ("a", "after_run"),
                   ("b", "after_run"), ("a", "end"), ("b", "end")]
    log.clear()
    with g.as_default():
        with pytest.raises(ValueError, match="boom"):
            with tf.train.MonitoredSession(hooks=[RecordingHook(log, "a")]):
                raise ValueError("boom")
    assert ("a", "end") not in log


def test_begin_may_add_ops_and_the_graph_is_then_finalized():
    g, step, *_ = _counter_graph()

    class AddsOps(tf.train.SessionRunHook):
        def begin(self):
            self.extra = tf.add(step, 100, name="extra")

        def after_create_session(self, session, coord):
            with pytest.raises(RuntimeError, match="Graph is finalized"):
                tf.constant(1.0)
            self.value = session.run(self.extra)

    hook = AddsOps()
    with g.as_default():
        with tf.train.MonitoredSession(hooks=[hook]):
            pass
    assert hook.value == 100


def test_hook_fetches_and_feeds_are_merged_into_the_run():
    g, step, x, doubled, increment = _counter_graph()
    log = []
    with g.as_default():
        fetcher = RecordingHook(log, "fetcher", fetches={"d": doubled, "s": step})
        feeder = RecordingHook(log, "feeder", feeds={x: 4.0})
        with tf.train.MonitoredSession(hooks=[fetcher, feeder]) as sess:
            # The caller sees only its own fetches.
            assert sess.run(doubled) == 8.0
            assert sess.run([doubled, increment])[0] == 8.0
    assert fetcher.results[0] == {"d": 8.0, "s": 0}
    assert feeder.results == [None, None]


def test_clashing_feeds_are_tfs_errors():
    g, step, x, doubled, increment = _counter_graph()
    with g.as_default():
        hooks = [RecordingHook([], "a", feeds={x: 1.0}), RecordingHook([], "b", feeds={x: 2.0})]
        with tf.train.MonitoredSession(hooks=hooks) as sess:
            with pytest.raises(RuntimeError, match=r"Same tensor is fed by two hooks\. "
                                                   r"Conflict\(s\): "):
                sess.run(doubled)
        with tf.train.MonitoredSession(hooks=[RecordingHook([], "a", feeds={x: 1.0})]) as sess:
            with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and "
                                                   "user."):
                sess.run(doubled, feed_dict={x: 3.0})


def test_hook_options_are_merged_and_the_run_metadata_reaches_after_run():
    g, step, x, doubled, increment = _counter_graph()
    seen = []

    class Tracer(tf.train.SessionRunHook):
        def before_run(self, run_context):
            return tf.train.SessionRunArgs(
                None, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))

        def after_run(self, run_context, run_values):
            seen.append((run_values.options.trace_level, run_values.run_metadata))

    with g.as_default():
        with tf.train.MonitoredSession(hooks=[Tracer()]) as sess:
            sess.run(increment)
    level, metadata = seen[0]
    assert level == tf.RunOptions.FULL_TRACE
    nodes = [n.node_name for d in metadata.step_stats.dev_stats for n in d.node_stats]
    assert "increment" in nodes


def test_should_stop_latches_and_a_later_run_is_refused():
    g, step, x, doubled, increment = _counter_graph()
    log = []
    with g.as_default():
        hook = RecordingHook(log, "stopper", stop_after=2)
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            sess.run(increment)
            assert not sess.should_stop()
            sess.run(increment)
            assert sess.should_stop() and sess.should_stop()
            with pytest.raises(RuntimeError, match="Run called even after should_stop "
                                                   "requested."):
                sess.run(increment)


def test_out_of_range_ends_the_with_block_cleanly():
    g, step, x, doubled, increment = _counter_graph()
    log = []
    with g.as_default():
        with tf.train.MonitoredSession(hooks=[RecordingHook(log, "a")]) as sess:
            sess.run(increment)
            raise errors.OutOfRangeError(None, None, "End of sequence")
    assert log[-1] == ("a", "end")


def test_run_step_fn_runs_with_and_without_hooks():
    g, step, x, doubled, increment = _counter_graph()
    log = []
    with g.as_default():
        hook = RecordingHook(log, "a")
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            def step_fn(step_context):
                step_context.session.run(increment)          # raw: no hooks
                return step_context.run_with_hooks(increment, feed_dict=None)
            sess.run_step_fn(step_fn)
            assert hook.runs == 1
            assert sess.run(step) == 2

            def stopping(step_context):
                step_context.request_stop()
            with pytest.raises(StopIteration):
                sess.run_step_fn(stopping)
            with pytest.raises(ValueError, match="`step_fn` may either have one "
                                                 "`step_context` argument"):
                sess.run_step_fn(lambda ctx: None)


def test_singular_monitored_session_exposes_the_raw_session():
    g, step, *_ = _counter_graph()
    with g.as_default():
        with tf.train.SingularMonitoredSession() as sess:
            assert isinstance(sess.raw_session(), tf.Session)
            assert sess.raw_session().run(step) == 0


def test_coordinator_errors_are_reraised_by_the_monitored_session():
    g, step, x, doubled, increment = _counter_graph()

    class Reporter(tf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            self.coord = coord

    reporter = Reporter()
    with g.as_default():
        sess = tf.train.MonitoredSession(hooks=[reporter])
        reporter.coord.request_stop(ValueError("from a thread"))
        # As in TF (checked against 2.21): should_stop says stop, close raises the error.
        assert sess.should_stop()
        with pytest.raises(ValueError, match="from a thread"):
            sess.close()


def test_scaffold_defaults_and_init_fn():
    g, step, *_ = _counter_graph()
    with g.as_default():
        v = tf.Variable(1.0, name="v")
        called = []
        scaffold = tf.train.Scaffold(init_fn=lambda scaffold, sess: called.append(
            sess.run(tf.get_default_graph().get_tensor_by_name("v/read:0"))))
        with tf.train.MonitoredSession(tf.train.ChiefSessionCreator(scaffold=scaffold)):
            pass
        assert called == [1.0]
        assert scaffold.saver is tf.get_collection("savers")[0]
        assert scaffold.init_op is tf.get_collection("init_op")[0]
        with pytest.raises(RuntimeError, match='More than one item in the collection "init_op"'):
            tf.add_to_collection("init_op", tf.no_op())
            tf.train.Scaffold().finalize()
    assert v is not None


# -- MonitoredTrainingSession -----------------------------------------------------------------

def _regression_graph():
    """A linear model y = x w trained by gradient descent (numbers exact run to run)."""
    g = tf.Graph()
    rng = np.random.RandomState(0)
    with g.as_default():
        x = tf.constant(rng.rand(16, 3).astype(np.float32), name="x")
        y = tf.constant(rng.rand(16, 1).astype(np.float32), name="y")
        w = tf.Variable(tf.zeros([3, 1]), name="w")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y), name="loss")
        step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)
    return g, w, loss, step, train_op


class SavedValues(tf.train.CheckpointSaverListener):
    def __init__(self, w):
        self.w, self.saved = w, {}

    def after_save(self, session, global_step_value):
        self.saved[global_step_value] = session.run(self.w)


class ValuesAtStart(tf.train.SessionRunHook):
    def __init__(self, w, step):
        self.w, self.step = w, step

    def after_create_session(self, session, coord):
        self.values = session.run([self.w, self.step])


def test_training_is_killed_and_resumes_from_the_latest_checkpoint(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="engine")
    directory = str(tmp_path / "train")
    g, w, loss, step, train_op = _regression_graph()
    with g.as_default():
        listener = SavedValues(w)
        saver_hook = tf.train.CheckpointSaverHook(directory, save_steps=5, listeners=[listener])
        hooks = [tf.train.StopAtStepHook(last_step=100),
                 tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=4)]
        with pytest.raises(KeyboardInterrupt):
            with tf.train.MonitoredTrainingSession(checkpoint_dir=directory, hooks=hooks,
                                                   chief_only_hooks=[saver_hook],
                                                   save_checkpoint_secs=None) as sess:
                for _ in range(12):
                    sess.run(train_op)
                raise KeyboardInterrupt     # killed: no end(), no final checkpoint
    assert sorted(listener.saved) == [0, 5, 10]
    assert tf.train.latest_checkpoint(directory) == os.path.join(directory, "model.ckpt-10")
    messages = [r.getMessage() for r in caplog.records]
    assert f"Saving checkpoints for 10 into {directory}/model.ckpt." in messages
    assert sum(m.startswith("loss = ") for m in messages) == 3      # local iters 0, 4, 8

    g, w, loss, step, train_op = _regression_graph()
    with g.as_default():
        start = ValuesAtStart(w, step)
        with tf.train.MonitoredTrainingSession(
                checkpoint_dir=directory, save_checkpoint_steps=5,
                hooks=[tf.train.StopAtStepHook(num_steps=7), start]) as sess:
            runs = 0
            while not sess.should_stop():
                sess.run(train_op)
                runs += 1
    assert start.values[1] == 10
    assert start.values[0].tobytes() == listener.saved[10].tobytes()
    assert runs == 7
    assert tf.train.latest_checkpoint(directory) == os.path.join(directory, "model.ckpt-17")
    assert tf.train.load_variable(directory, "global_step") == 17
    # The resumed Saver took over the earlier checkpoints, so max_to_keep counts them too.
    assert tf.train.get_checkpoint_state(directory).all_model_checkpoint_paths == [
        os.path.join(directory, f"model.ckpt-{n}") for n in (0, 5, 10, 15, 17)]


def test_resumed_training_gives_the_numbers_of_an_uninterrupted_run(tmp_path):
    def train(directory, last_step):
        g, w, loss, step, train_op = _regression_graph()
        with g.as_default():
            with tf.train.MonitoredTrainingSession(
                    checkpoint_dir=directory, save_checkpoint_steps=3, log_step_count_steps=0,
                    save_summaries_steps=None,
                    hooks=[tf.train.StopAtStepHook(last_step=last_step)]) as sess:
                while not sess.should_stop():
                    sess.run(train_op)
        return tf.train.load_variable(directory, "w")

    straight = train(str(tmp_path / "a"), 9)
    train(str(tmp_path / "b"), 4)
    resumed = train(str(tmp_path / "b"), 9)
    assert resumed.tobytes() == straight.tobytes()


def test_monitored_training_session_default_hooks(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="engine")
    g, w, loss, step, train_op = _regression_graph()
    with g.as_default():
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               log_step_count_steps=2) as sess:
            for _ in range(5):
                sess.run(train_op)
    messages = [r.getMessage() for r in caplog.records]
    rates = [m for m in messages if m.startswith("global_step/sec: ")]
    assert len(rates) == 2                       # at global steps 3 and 5 (after 1)
    # The first save is at session creation, the last at the clean end.
    assert f"Saving checkpoints for 0 into {tmp_path}/model.ckpt." in messages
    assert f"Saving checkpoints for 5 into {tmp_path}/model.ckpt." in messages
    assert (tmp_path / "graph.json").exists()


def test_monitored_training_session_records_into_the_run_store(tmp_path):
    from engine.record import RunReader
    from engine.summary import FileWriterCache
    g, w, loss, step, train_op = _regression_graph()
    with g.as_default():
        tf.summary.scalar("train_loss", loss)
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               save_summaries_steps=1) as sess:
            for _ in range(3):
                sess.run(train_op)
    FileWriterCache.clear()
    reader = RunReader(str(tmp_path))
    assert len(reader.steps()) >= 3
    steps, values = reader.scalars("train_loss")
    assert steps.tolist() == [1, 2, 3]


def test_non_chief_workers_get_only_the_user_hooks(tmp_path):
    g, w, loss, step, train_op = _regression_graph()
    log = []
    with g.as_default():
        with tf.train.MonitoredTrainingSession(is_chief=False, checkpoint_dir=str(tmp_path),
                                               hooks=[RecordingHook(log)]) as sess:
            assert sess.run("x:0").shape == (16, 3)
    assert [entry[1] for entry in log] == ["begin", "after_create_session", "before_run",
                                           "after_run", "end"]
    assert not os.listdir(tmp_path)     # no checkpoint, summary or step-counter hooks


def test_a_checkpoint_that_does_not_match_fails_the_start_by_name(tmp_path):
    g, w, loss, step, train_op = _regression_graph()
    with g.as_default():
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as sess:
            sess.run(train_op)
    g = tf.Graph()
    with g.as_default():
        tf.Variable(tf.zeros([4, 1]), name="w")
        tf.train.get_or_create_global_step()
        with pytest.raises(errors.InvalidArgumentError, match=r"variable 'w' has shape "
                                                              r"\[4,1\] in the graph and "
                                                              r"\[3,1\] in checkpoint"):
            tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path))
        assert not g.finalized



def test_adam_slots_are_checkpointed_under_tfs_names_and_resume_exactly(tmp_path):
    def train(directory, last_step):
        g = tf.Graph()
        rng = np.random.RandomState(0)
        with g.as_default():
            x = tf.constant(rng.rand(16, 3).astype(np.float32))
            y = tf.constant(rng.rand(16, 1).astype(np.float32))
            with tf.variable_scope("dense"):
                w = tf.get_variable("kernel", [3, 1], initializer=tf.zeros_initializer())
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
            step = tf.train.get_or_create_global_step()
            train_op = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
            with tf.train.MonitoredTrainingSession(
                    checkpoint_dir=directory, save_checkpoint_steps=3, log_step_count_steps=0,
                    hooks=[tf.train.StopAtStepHook(last_step=last_step)]) as sess:
                while not sess.should_stop():
                    sess.run(train_op)
        return tf.train.load_variable(directory, "dense/kernel")

    straight = train(str(tmp_path / "a"), 9)
    train(str(tmp_path / "b"), 4)
    resumed = train(str(tmp_path / "b"), 9)
    assert [name for name, _ in tf.train.list_variables(str(tmp_path / "b"))] == [
        "beta1_power", "beta2_power", "dense/kernel", "dense/kernel/Adam", "dense/kernel/Adam_1",
        "global_step"]
    assert resumed.tobytes() == straight.tobytes()
