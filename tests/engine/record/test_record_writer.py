"""RunWriter's contract with its caller: input checks in the caller's thread, closed-writer
errors, background errors surfacing on the next call, run naming, and commits at step
boundaries without flush()."""

from __future__ import annotations

import gc
import re
import threading
import time

import numpy as np
import pytest

from engine.record import RunReader, RunWriteError, RunWriter
from engine.record.schema import FINISHED, DeviceRecord

NAME = re.compile(r"run-\d{8}-\d{6}(-\d+)?")


def wait_until(condition, timeout=10.0):
    """Polls a condition the background thread will make true; fails after timeout."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout} s")
        time.sleep(0.01)


@pytest.mark.parametrize("tag, error", [(None, TypeError), (3, TypeError), ("", ValueError),
                                        (b"loss", TypeError)])
def test_bad_tags_are_rejected_in_the_callers_thread(logdir, tag, error):
    with RunWriter(logdir, "r") as writer:
        with pytest.raises(error, match="tag"):
            writer.scalar(tag, 1.0)
        with pytest.raises(error, match="tag"):
            writer.histogram(tag, [1.0])
        with pytest.raises(error, match="tag"):
            writer.text(tag, "x")


@pytest.mark.parametrize("value, error", [
    ("1.0", TypeError), (None, TypeError), (1 + 2j, TypeError), ([1.0], TypeError),
    (np.ones(3), ValueError), (np.array(["a"]), ValueError), (np.complex64(1), TypeError),
])
def test_bad_scalar_values_name_the_tag(logdir, value, error):
    with RunWriter(logdir, "r") as writer:
        with pytest.raises(error, match="'loss'"):
            writer.scalar("loss", value)
        writer.scalar("loss", 2.0)
    assert RunReader(writer.path).scalars("loss")[1].tolist() == [2.0]


def test_real_number_kinds_are_accepted(logdir):
    with RunWriter(logdir, "r") as writer:
        for value in (1, True, np.int8(3), np.float16(0.5), np.array(4.0), np.array([5.0])):
            writer.scalar("x", value)
    assert RunReader(writer.path).scalars("x")[1].tolist() == [1.0, 1.0, 3.0, 0.5, 4.0, 5.0]


def test_bad_steps_bins_texts_and_histogram_values(logdir):
    with RunWriter(logdir, "r") as writer:
        with pytest.raises(TypeError, match="'a'.*step must be an int"):
            writer.scalar("a", 1.0, step=1.5)
        with pytest.raises(TypeError, match="step must be an int, got bool"):
            writer.scalar("a", 1.0, step=True)
        with pytest.raises(TypeError, match="step"):
            writer.text("t", "x", step="3")
        with pytest.raises(ValueError, match="'h'.*bins"):
            writer.histogram("h", [1.0], bins=0)
        with pytest.raises(TypeError, match="'h'.*bins"):
            writer.histogram("h", [1.0], bins=2.5)
        with pytest.raises(TypeError, match="'h'.*real numbers"):
            writer.histogram("h", ["a", "b"])
        with pytest.raises(TypeError, match="'h'"):
            writer.histogram("h", [1 + 1j])
        with pytest.raises(TypeError, match="'t'.*str"):
            writer.text("t", 3)
        with pytest.raises(TypeError, match="step"):
            writer.step("not a step record", [], [])
        with pytest.raises(TypeError, match="GraphRecord"):
            writer.graph({"version": 1})
        with pytest.raises(TypeError, match="config key 'fn'"):
            writer.set_config({"ok": 1, "fn": print})
        writer.scalar("a", 1.0, step=np.int64(4))
    assert RunReader(writer.path).scalars("a")[0].tolist() == [4]


def test_config_must_be_json_safe_at_construction(logdir):
    with pytest.raises(TypeError, match="config key 'opt'"):
        RunWriter(logdir, "r", config={"opt": object()})


def test_a_bad_record_in_a_list_surfaces_on_the_next_call_and_the_run_goes_on(logdir, samples):
    writer = RunWriter(logdir, "r")
    writer.devices([samples.devices()[0], "not a device"])
    with pytest.raises(RunWriteError, match=re.escape(writer.path)) as caught:
        writer.flush()
    assert "DeviceRecord" in str(caught.value) and isinstance(caught.value.__cause__, TypeError)
    writer.devices([DeviceRecord("/cpu:0", "CPU", 0, "host", False)])
    writer.scalar("after", 1.0)
    writer.close()
    reader = RunReader(writer.path)
    assert [d.name for d in reader.devices()] == ["/cpu:0"]
    assert reader.tags() == ["after"] and reader.info().status == FINISHED


def test_a_failed_commit_is_reported_and_later_batches_still_commit(logdir):
    writer = RunWriter(logdir, "r", flush_secs=3600)
    writer.scalar("a", 1.0, step=0)
    writer.flush()
    writer._committer.conn.execute("PRAGMA query_only = ON")   # every commit now fails
    writer.scalar("a", 2.0, step=0)
    with pytest.raises(RunWriteError, match="background write failed.*readonly"):
        writer.flush()
    writer._committer.conn.execute("PRAGMA query_only = OFF")
    writer.scalar("a", 3.0, step=0)
    writer.close()
    assert RunReader(writer.path).scalars("a")[1].tolist() == [1.0, 3.0]


def test_closed_writer_refuses_writes_and_close_is_idempotent(logdir, samples):
    writer = RunWriter(logdir, "r")
    writer.close()
    writer.close()
    writer.flush()
    calls = [lambda: writer.scalar("a", 1.0), lambda: writer.histogram("h", [1.0]),
             lambda: writer.text("t", "x"), lambda: writer.set_config({"a": 1}),
             lambda: writer.devices(samples.devices()), lambda: writer.graph(samples.graph()),
             lambda: writer.step(*samples.step())]
    for call in calls:
        with pytest.raises(ValueError, match=rf"RunWriter .*{re.escape(writer.path)} is closed"):
            call()


def test_generated_names_are_unique_and_sortable(logdir):
    writers = [RunWriter(logdir) for _ in range(2)]
    for writer in writers:
        writer.close()
    assert all(NAME.fullmatch(writer.name) for writer in writers)
    assert writers[0].name < writers[1].name
    assert writers[0].logdir == str(logdir)
    assert writers[0].path == str(logdir / writers[0].name)


def test_generated_names_in_the_same_second_get_a_suffix(logdir, monkeypatch):
    monkeypatch.setattr("time.strftime", lambda fmt: "run-20261130-190501")
    (logdir / "run-20261130-190501").mkdir(parents=True)
    names = []
    for _ in range(2):
        with RunWriter(logdir) as writer:
            names.append(writer.name)
    assert names == ["run-20261130-190501-1", "run-20261130-190501-2"]
    assert not (logdir / "run-20261130-190501" / "run.sqlite").exists()


def test_an_existing_run_folder_is_never_clobbered(logdir):
    with RunWriter(logdir, "exp") as writer:
        writer.scalar("a", 1.0)
    with pytest.raises(FileExistsError, match=re.escape(str(logdir / "exp"))):
        RunWriter(logdir, "exp")
    (logdir / "plain").mkdir()
    (logdir / "plain" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="plain"):
        RunWriter(logdir, "plain")
    assert (logdir / "plain" / "keep.txt").read_text() == "mine"
    assert RunReader(writer.path).scalars("a")[1].tolist() == [1.0]


@pytest.mark.parametrize("name", ["", "..", "a/b"])
def test_a_run_name_must_be_one_folder_name(logdir, name):
    with pytest.raises(ValueError, match="run name"):
        RunWriter(logdir, name)


def test_step_records_commit_at_the_step_boundary_without_flush(logdir, samples):
    writer = RunWriter(logdir, "r", flush_secs=3600)
    reader = RunReader(writer.path)
    writer.step(*samples.step(0))
    wait_until(lambda: [s.step for s in reader.steps()] == [0])
    assert len(reader.step_stats(0)) == 3
    writer.close()


def test_a_new_summary_step_commits_the_previous_one_without_flush(logdir):
    writer = RunWriter(logdir, "r", flush_secs=3600)
    reader = RunReader(writer.path)
    writer.scalar("loss", 0.5, step=0)
    writer.scalar("acc", 0.1, step=0)
    writer.scalar("loss", 0.4, step=1)
    wait_until(lambda: set(reader.tags()) == {"loss", "acc"}
               and 0 in reader.scalars("acc")[0])
    writer.close()


def test_info_counts_the_steps_committed_before_the_heartbeat_says_so(logdir, samples):
    writer = RunWriter(logdir, "r", flush_secs=3600)
    reader = RunReader(writer.path)
    for step in range(5):
        writer.step(*samples.step(step))
    wait_until(lambda: len(reader.steps()) == 5)
    assert reader.info().num_steps == 5
    writer.close()
    assert reader.info().num_steps == 5


def test_flush_makes_everything_queued_visible(logdir):
    writer = RunWriter(logdir, "r", flush_secs=3600)
    reader = RunReader(writer.path)
    for step in range(1000):
        writer.scalar("x", float(step), step=5)   # one step: no boundary
    writer.flush()
    assert len(reader.scalars("x")[0]) == 1000
    writer.close()


def test_the_timer_commits_within_flush_secs(logdir):
    writer = RunWriter(logdir, "r", flush_secs=0.05)
    reader = RunReader(writer.path)
    writer.scalar("x", 1.0, step=0)
    wait_until(lambda: reader.tags() == ["x"])
    writer.close()


def test_a_dropped_writer_is_closed_by_its_finalizer(logdir):
    def write_and_forget():
        writer = RunWriter(logdir, "r")
        writer.scalar("x", 1.0)
        return writer.path

    path = write_and_forget()
    gc.collect()
    reader = RunReader(path)
    wait_until(lambda: reader.info().status == FINISHED)
    assert reader.scalars("x")[1].tolist() == [1.0]


def test_many_threads_logging_across_step_boundaries_keep_every_record(logdir, samples):
    """8 threads log scalars at rising steps (each first record of a step is a boundary that
    waits, and may commit the rows itself) while one records session steps: every record is
    stored once, seqs are unique, and no thread is left waiting."""
    writer = RunWriter(logdir, "r")
    errors: list[BaseException] = []

    def scalars(thread: int) -> None:
        try:
            for step in range(300):
                writer.scalar(f"t{thread}", float(step), step=step)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def session_steps() -> None:
        try:
            for step in range(300):
                writer.step(*samples.step(step))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=scalars, args=(i,)) for i in range(8)]
    threads.append(threading.Thread(target=session_steps))
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads) and errors == []
    writer.close()
    reader = RunReader(writer.path)
    for thread in range(8):
        steps, values = reader.scalars(f"t{thread}")
        assert steps.tolist() == list(range(300))
        assert values.tolist() == [float(step) for step in range(300)]
    assert [s.step for s in reader.steps()] == list(range(300))
    seqs = [event[0] for event in reader.events(limit=100_000)]
    assert len(seqs) == len(set(seqs))
