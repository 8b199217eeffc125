"""tf.summary.FileWriter, FileWriterCache and SummarySaverHook writing into the run store: the
run folder is logdir itself (a taken one gets a logged sibling), every summary kind lands in
its table, a FileWriter given the session's graph makes that session record its placements,
plans and steps into the same run, and the hook saves on trigger steps with the global
step as TF 8.7 says."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import numpy as np
import pytest

import engine as tf
from engine.record import RunReader


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def test_run_folder_is_logdir_and_a_taken_logdir_gets_a_sibling(tmp_path, caplog):
    logdir = tmp_path / "train"
    logdir.mkdir()
    (logdir / "model.ckpt-0.index.json").write_text("{}")   # a checkpoint already there
    with tf.summary.FileWriter(str(logdir)) as first:
        assert first.get_logdir() == str(logdir)
        first.add_summary(tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=1.0)]), 0)
    with caplog.at_level(logging.WARNING, logger="engine.record"):
        second = tf.summary.FileWriter(str(logdir))
    second.close()
    assert second.get_logdir() == str(tmp_path / "train-1")
    assert f"run folder {logdir} already holds a run; recording into {logdir}-1" in caplog.text
    assert RunReader(logdir).scalars("a")[1].tolist() == [1.0]
    assert RunReader(tmp_path / "train-1").info().config["kind"] == "tf.summary.FileWriter"


def test_summary_op_results_land_in_their_tables(graph, tmp_path):
    x = tf.placeholder(tf.float32, [None], name="x")
    tf.summary.scalar("loss", tf.reduce_mean(x))
    tf.summary.histogram("values", x)
    tf.summary.text("note", tf.constant("hello"))
    merged = tf.summary.merge_all()
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path / "run")) as writer:
        for step in range(3):
            writer.add_summary(sess.run(merged, {x: np.arange(4.0) + step}), step)
    reader = RunReader(tmp_path / "run")
    steps, values = reader.scalars("loss")
    assert steps.tolist() == [0, 1, 2] and values.tolist() == [1.5, 2.5, 3.5]
    last = reader.histograms("values")[-1]
    assert (last.step, last.count, last.min, last.max, last.sum) == (2, 4, 2.0, 5.0, 14.0)
    assert last.edges[0] == 2.0 and last.edges[-1] == 5.0 and sum(last.counts) == 4
    assert [t.text for t in reader.texts("note")] == ["hello"] * 3


def test_hand_built_summaries_with_value_add(tmp_path):
    summary = tf.Summary()
    summary.value.add(tag="accuracy", simple_value=0.5)
    summary.value.add(tag="lines", tensor=np.array([b"a", b"b"], dtype=object))
    with tf.summary.FileWriter(str(tmp_path / "run")) as writer:
        writer.add_summary(summary, global_step=7)
        writer.add_summary(summary.SerializeToString(), global_step=8)
        with pytest.raises(TypeError, match="add_summary expects a Summary"):
            writer.add_summary(3.0)
    reader = RunReader(tmp_path / "run")
    assert reader.scalars("accuracy")[0].tolist() == [7, 8]
    assert reader.texts("lines")[0].text == "a\nb"


def test_filewriter_given_the_graph_makes_the_session_record_into_its_run(graph, tmp_path):
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.reduce_sum(x * 2.0, name="y")
    sess = tf.Session()
    sess.run(y, {x: [1.0, 2.0]})          # before the writer: not recorded
    writer = tf.summary.FileWriter(str(tmp_path / "run"), sess.graph)
    assert sess.run(y, {x: [1.0, 2.0]}) == 6.0
    sess.run(y, {x: [3.0, 4.0]})
    writer.flush()
    reader = RunReader(tmp_path / "run")
    assert len(reader.steps()) == 2
    assert {p.node for p in reader.placements()} >= {"x", "y"}
    assert {s.plan for s in reader.steps()} <= {p.plan for p in reader.plans()}
    assert reader.graph() is not None and reader.devices()
    sess.close()                           # the session does not close the writer's run
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="after", simple_value=1)]), 1)
    writer.close()
    assert RunReader(tmp_path / "run").tags() == ["after"]


def test_a_session_stops_recording_when_the_filewriter_closes(graph, tmp_path):
    y = tf.constant(1.0) + 1.0
    with tf.Session() as sess:
        writer = tf.summary.FileWriter(str(tmp_path / "run"), graph)
        sess.run(y)
        writer.close()
        assert sess.run(y) == 2.0
    assert len(RunReader(tmp_path / "run").steps()) == 1


def test_a_session_with_its_own_logdir_keeps_its_run(graph, tmp_path):
    y = tf.constant(1.0) + 1.0
    with tf.summary.FileWriter(str(tmp_path / "summaries"), graph) as writer:
        with tf.Session(logdir=str(tmp_path / "own"), run_name="r") as sess:
            sess.run(y)
        writer.flush()
        assert RunReader(tmp_path / "summaries").steps() == []
    assert len(RunReader(tmp_path / "own" / "r").steps()) == 1


def test_session_log_run_metadata_and_closed_writer(graph, tmp_path, caplog):
    y = tf.constant([1.0, 2.0]) * 3.0
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=metadata)
    writer = tf.summary.FileWriter(str(tmp_path / "run"))
    writer.add_session_log(tf.SessionLog(status=tf.SessionLog.START), 3)
    writer.add_run_metadata(metadata, "step_3", 3)
    writer.close()
    with caplog.at_level(logging.WARNING, logger="engine"):
        writer.add_summary(tf.Summary(), 4)
    assert "Attempting to use a closed FileWriter" in caplog.text
    reader = RunReader(tmp_path / "run")
    assert any("session log START at step 3" in e[3] for e in reader.events())
    trace = reader.texts("run_metadata/step_3")[0]
    assert trace.step == 3 and '"op":"Mul"' in trace.text.replace(" ", "")
    writer.reopen()
    assert writer.get_logdir() == str(tmp_path / "run-1")
    writer.close()


def test_filewriter_cache_shares_one_writer_per_logdir(graph, tmp_path):
    try:
        first = tf.summary.FileWriterCache.get(str(tmp_path / "run"))
        assert tf.summary.FileWriterCache.get(str(tmp_path / "run")) is first
        first.flush()
        assert RunReader(tmp_path / "run").graph() is not None   # the default graph
    finally:
        tf.summary.FileWriterCache.clear()
    assert first.run_writer.closed


def _drive(hook, sess, train_op, runs: int) -> None:
    """What MonitoredSession does around each run (TF 8.2), without it."""
    hook.begin()
    hook.after_create_session(sess, None)
    for _ in range(runs):
        context = SimpleNamespace(session=sess)
        args = hook.before_run(context)
        results = sess.run({"caller": train_op, "hook": args.fetches})
        hook.after_run(context, SimpleNamespace(results=results["hook"]))
    hook.end(sess)


def test_summary_saver_hook_saves_on_trigger_steps_with_the_global_step(graph, tmp_path):
    step = tf.train.get_or_create_global_step()
    train_op = tf.assign_add(step, 1)
    tf.summary.scalar("seen", tf.cast(step, tf.float32))
    hook = tf.train.SummarySaverHook(save_steps=2, output_dir=str(tmp_path / "run"),
                                     summary_op=tf.summary.merge_all())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        try:
            _drive(hook, sess, train_op, runs=6)
        finally:
            tf.summary.FileWriterCache.clear()
    reader = RunReader(tmp_path / "run")
    steps, _ = reader.scalars("seen")
    assert steps.tolist() == [1, 3, 5]
    assert any("session log START at step 1" in e[3] for e in reader.events())


def test_summary_saver_hook_arguments(graph, tmp_path):
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        tf.train.SummarySaverHook(save_steps=1, output_dir=str(tmp_path))
    with pytest.raises(ValueError, match="Either every_secs or every_steps"):
        tf.train.SummarySaverHook(summary_op=tf.summary.scalar("a", 1.0))
    hook = tf.train.SummarySaverHook(save_steps=1, summary_writer=object(),
                                     scaffold=SimpleNamespace(summary_op=None))
    with pytest.raises(RuntimeError, match="Global step should be created"):
        hook.begin()


def test_image_and_tensor_summaries_land_in_the_version_2_tables(graph, tmp_path):
    pixels = np.random.default_rng(1).integers(0, 256, (2, 4, 5, 3), dtype=np.uint8)
    tf.summary.image("inputs", tf.constant(pixels), max_outputs=2)
    tf.summary.tensor_summary("weights", tf.constant([[1.0, -1.0], [3.0, np.nan]]))
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path / "run")) as writer:
        writer.add_summary(sess.run(tf.summary.merge_all()), 5)
    reader = RunReader(tmp_path / "run")
    assert reader.image_tags() == ["inputs/image/0", "inputs/image/1"]
    second = reader.images("inputs/image/1")[0]
    assert (second.step, second.height, second.width, second.channels) == (5, 4, 5, 3)
    np.testing.assert_array_equal(second.pixels, pixels[1])
    stats, = reader.tensor_summaries("weights")
    assert (stats.step, stats.shape, stats.min, stats.max, stats.nan_count) == \
        (5, (2, 2), -1.0, 3.0, 1)


def test_monitored_training_session_saves_summaries_into_its_checkpoint_dir(graph, tmp_path):
    step = tf.train.get_or_create_global_step()
    loss = tf.square(tf.cast(step, tf.float32) - 3.0, name="squared_error")
    tf.summary.scalar("loss", loss)
    train_op = tf.assign_add(step, 1)
    try:
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / "train"),
                                               save_summaries_steps=2,
                                               save_checkpoint_secs=None) as sess:
            for _ in range(5):
                sess.run(train_op)
    finally:
        tf.summary.FileWriterCache.clear()
    reader = RunReader(tmp_path / "train")
    steps, values = reader.scalars("loss")
    assert steps.tolist() == [1, 3, 5]     # TF 8.7: tagged with the post-run global step
    # The loss read the step before or after that run's increment (TF leaves it unordered).
    assert all(v in ((s - 4.0) ** 2, (s - 3.0) ** 2) for s, v in zip(steps, values))
    assert reader.steps()                  # the session recorded into the same run
