"""Readers beside a live writer (same process and another process), a writer killed with
SIGKILL (every step it announced is in the store, which still opens), and run status from the
heartbeat."""

from __future__ import annotations

import os
import queue
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from engine.record import RunReader, RunWriter
from engine.record.schema import FINISHED, INTERRUPTED, RUNNING

REPO = Path(__file__).resolve().parents[3]
LINE_TIMEOUT = 60.0   # generous: the child imports numpy (and whatever engine/ imports)

LIVE_CHILD = textwrap.dedent("""
    import sys
    from engine.record import RunWriter
    writer = RunWriter(sys.argv[1], "live", config={"who": "child"})
    for step in range(10):
        writer.scalar("loss", 1.0 / (step + 1), step)
    writer.flush()
    print("flushed", flush=True)
    sys.stdin.readline()
    writer.scalar("loss", 0.0, 10)
    writer.close()
    print("closed", flush=True)
""")

# Announces a step only after step() returned and flush() committed it; keeps writing after
# the announcement so the kill lands in the middle of later steps.
VICTIM_CHILD = textwrap.dedent("""
    import sys, time
    from engine.record import RunWriter
    from engine.record.schema import OpStatRecord, StepRecord, TransferRecord
    writer = RunWriter(sys.argv[1], "victim", flush_secs=3600)
    key = "/cpu:0;1;/gpu:0;edge_1_x;0:0"
    step = 0
    while True:
        ops = [OpStatRecord(step, f"op{i}", "MatMul", "/gpu:0", i, i + 1, 64)
               for i in range(200)]
        writer.scalar("loss", 1.0 / (step + 1), step)
        writer.step(StepRecord(step, 0, time.time(), 50.0, 200, 64), ops,
                    [TransferRecord(step, key, "x:0", "/cpu:0", "/gpu:0", 64)])
        writer.flush()
        print(step, flush=True)
        step += 1
""")


def start_child(code: str, logdir: Path) -> tuple[subprocess.Popen, queue.Queue]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen([sys.executable, "-c", code, str(logdir)], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in child.stdout:
            lines.put(line.strip())
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return child, lines


def next_line(child: subprocess.Popen, lines: queue.Queue) -> str:
    try:
        line = lines.get(timeout=LINE_TIMEOUT)
    except queue.Empty:
        child.kill()
        pytest.fail(f"child printed nothing for {LINE_TIMEOUT} s")
    if line is None:
        child.wait(timeout=10)
        pytest.fail(f"child exited early: {child.stderr.read()}")
    return line


def test_reader_sees_a_live_writer_in_the_same_process(logdir):
    writer = RunWriter(logdir, "r")
    reader = RunReader(writer.path)
    assert reader.info().status == RUNNING
    assert reader.tags() == []
    writer.scalar("loss", 1.0, 0)
    writer.flush()
    assert reader.scalars("loss")[1].tolist() == [1.0]
    writer.scalar("loss", 0.5, 1)
    writer.flush()
    assert reader.scalars("loss")[1].tolist() == [1.0, 0.5]
    assert reader.info().num_steps == 2
    writer.close()
    assert reader.info().status == FINISHED


def test_reader_follows_a_writer_in_another_process(logdir):
    child, lines = start_child(LIVE_CHILD, logdir)
    try:
        assert next_line(child, lines) == "flushed"
        reader = RunReader(logdir / "live")
        info = reader.info()
        assert info.status == RUNNING and info.config == {"who": "child"}
        steps, values = reader.scalars("loss")
        assert steps.tolist() == list(range(10)) and values[3] == 0.25
        child.stdin.write("go\n")
        child.stdin.flush()
        assert next_line(child, lines) == "closed"
        assert child.wait(timeout=30) == 0
        assert reader.info().status == FINISHED
        assert reader.scalars("loss")[0].tolist() == list(range(11))
    finally:
        child.kill()


def test_sigkill_loses_nothing_that_was_announced(logdir):
    child, lines = start_child(VICTIM_CHILD, logdir)
    announced = []
    try:
        while len(announced) < 25:
            announced.append(int(next_line(child, lines)))
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    while (line := lines.get(timeout=LINE_TIMEOUT)) is not None:   # printed before the kill
        announced.append(int(line))
    assert announced == list(range(len(announced)))

    reader = RunReader(logdir / "victim")
    recorded = [s.step for s in reader.steps()]
    assert recorded[:len(announced)] == announced
    assert set(reader.scalars("loss")[0].tolist()) >= set(announced)
    last = announced[-1]
    assert len(reader.step_stats(last)) == 200
    assert [t.bytes for t in reader.transfers(last)] == [64]
    assert reader.info().status == INTERRUPTED   # this host can tell the writer is gone
    seqs = [event[0] for event in reader.events(limit=100_000)]
    assert seqs == sorted(set(seqs))


def test_silent_unclosed_run_is_interrupted_after_30_seconds(logdir):
    with RunWriter(logdir, "r") as writer:
        writer.scalar("x", 1.0)
    db = Path(writer.path) / "run.sqlite"

    def set_meta(updated: float) -> None:
        conn = sqlite3.connect(db)
        with conn:
            conn.executemany("UPDATE meta SET value = ? WHERE key = ?", [
                ('"running"', "status"), (str(updated), "updated"),
                ('"another-host|"', "process")])
        conn.close()

    set_meta(time.time() - 5)
    assert RunReader(writer.path).info().status == RUNNING
    set_meta(time.time() - 31)
    assert RunReader(writer.path).info().status == INTERRUPTED
