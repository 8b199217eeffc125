"""The run store's scalar blocks: RunWriter commits a summary of every 64 consecutive points of
a tag with the block's last point, equal to store.scalar_blocks of the rows; RunReader's
scalar_blocks gives whole blocks in a step range plus the raw points around them, or None
where blocks cannot stand for the rows (a store without blocks, steps that go back, rows no
block accounts for, a store killed mid-write), and refuses a damaged block."""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from engine.record import RunReader, RunStoreError, RunWriter, store
from engine.record.schema import BLOCK, SCALAR_BLOCK_POINTS, SCHEMA_VERSION
from engine.record.writer import upgrade_run

T0 = 1_790_000_000.0
REPO = Path(__file__).resolve().parents[3]


def spiky(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.normal(size=n).cumsum()
    values[rng.integers(0, n, max(n // 500, 3))] += rng.choice([-80.0, 80.0])
    values[[3, n // 2]] = [math.nan, math.inf]
    return values


def write(logdir: Path, name: str, steps, values, walls=None, tag: str = "loss") -> Path:
    walls = T0 + np.arange(len(values)) * 0.25 if walls is None else walls
    with RunWriter(logdir, name) as writer:
        for step, value, wall in zip(steps, values, walls):
            writer.scalar(tag, float(value), int(step), wall_time=float(wall))
            writer.scalar("other", 1.0, wall_time=float(wall))   # interleaved, its own steps
    return logdir / name


def rows_in_seq_order(run: Path, tag: str = "loss") -> tuple[np.ndarray, ...]:
    conn = sqlite3.connect(run / "run.sqlite")
    rows = conn.execute("SELECT s.seq, s.step, s.value, s.wall_time FROM scalars s JOIN tags t "
                        "ON t.id = s.tag_id WHERE t.tag = ? ORDER BY s.seq", (tag,)).fetchall()
    conn.close()
    if not rows:
        return tuple(np.array([]) for _ in range(4))
    seq, step, value, wall = zip(*rows)
    return (np.array(seq), np.array(step),
            np.array([math.nan if v is None else v for v in value]), np.array(wall))


def block_rows(run: Path, tag: str = "loss") -> list[tuple]:
    conn = sqlite3.connect(run / "run.sqlite")
    rows = conn.execute("SELECT b.first_seq, b.last_seq, b.body FROM scalar_blocks b JOIN tags t "
                        "ON t.id = b.tag_id WHERE t.tag = ? ORDER BY b.last_seq",
                        (tag,)).fetchall()
    conn.close()
    return rows


def test_the_writer_commits_one_block_per_64_points_equal_to_the_rows_summary(tmp_path):
    n = 64 * 20 + 17
    values = spiky(n, 1)
    run = write(tmp_path, "r", np.arange(n) * 2, values)
    seq, steps, got_values, walls = rows_in_seq_order(run)
    written = block_rows(run)
    assert len(written) == n // SCALAR_BLOCK_POINTS
    expected = store.scalar_blocks(steps, got_values, walls)
    bodies = np.frombuffer(b"".join(body for *_, body in written), "<f8").reshape(
        expected.shape)
    np.testing.assert_array_equal(bodies, expected)
    assert [(a, b) for a, b, _ in written] == [
        (seq[k * 64], seq[k * 64 + 63]) for k in range(len(written))]
    # The summary's fields are what they say (block 0 holds the NaN at index 3).
    first = expected[0]
    finite = got_values[:64][np.isfinite(got_values[:64])]
    assert first[BLOCK["finite"]] == finite.size == 63 and first[BLOCK["min"]] == finite.min()
    assert steps[int(first[BLOCK["max_offset"]])] == first[BLOCK["max_step"]]


def test_whole_range_is_the_blocks_and_the_tail_in_step_order(tmp_path):
    n = 64 * 30 + 5
    values = spiky(n, 2)
    run = write(tmp_path, "r", np.arange(n), values)
    found = RunReader(run).scalar_blocks("loss")
    assert found is not None and found.count == n
    assert len(found.head[0]) == 0 and len(found.blocks) == 30 and len(found.tail[0]) == 5
    np.testing.assert_array_equal(found.tail[1], values[-5:])
    np.testing.assert_array_equal(found.tail[0], np.arange(n - 5, n))


@pytest.mark.parametrize("low, high", [(100, 1000), (0, 63), (64, 127), (5, 70), (1900, None),
                                       (None, 10), (3000, 4000), (500, 400)])
def test_a_step_range_is_whole_blocks_inside_and_raw_points_around(tmp_path, low, high):
    n = 64 * 30 + 5
    values = spiky(n, 3)
    steps = np.arange(n)
    run = write(tmp_path, "r", steps, values)
    found = RunReader(run).scalar_blocks("loss", low, high)
    lo = -math.inf if low is None else low
    hi = math.inf if high is None else high
    inside = (steps >= lo) & (steps <= hi)
    if not inside.any():
        assert found is None or found.count == 0
        return
    assert found.count == inside.sum()
    blocks = found.blocks
    if len(blocks):
        assert blocks[0, BLOCK["first_step"]] >= lo and blocks[-1, BLOCK["last_step"]] <= hi
    parts = [found.head[0], *(np.arange(b[BLOCK["first_step"]], b[BLOCK["last_step"]] + 1)
                              for b in blocks), found.tail[0]]
    np.testing.assert_array_equal(np.concatenate(parts), steps[inside])


def test_repeated_steps_keep_the_order_written(tmp_path):
    """Steps may repeat (the writer allows it): ties are in the order written, so the blocks
    still stand for the rows, a block may start on the step the one before ended on."""
    n = 64 * 12
    steps = np.arange(n) // 3            # each step three times
    run = write(tmp_path, "r", steps, spiky(n, 4))
    found = RunReader(run).scalar_blocks("loss")
    assert found is not None and found.count == n and len(found.blocks) == 12
    ends = found.blocks[:, [BLOCK["first_step"], BLOCK["last_step"]]]
    assert (ends[1:, 0] == ends[:-1, 1]).any()


@pytest.mark.parametrize("where", ["inside a block", "across blocks", "in the tail"])
def test_steps_that_go_back_read_as_no_blocks(tmp_path, where):
    n = 64 * 10 + 20
    steps = np.arange(n)
    if where == "inside a block":
        steps[100], steps[101] = steps[101], steps[100]
    elif where == "across blocks":
        steps[64 * 5:] -= 70
    else:
        steps[-3] = 10
    run = write(tmp_path, "r", steps, spiky(n, 5))
    reader = RunReader(run)
    assert reader.scalar_blocks("loss") is None
    assert reader.scalar_blocks("other") is not None      # another tag is unaffected


def test_a_store_without_blocks_reads_as_none_and_after_an_upgrade_too(tmp_path):
    """A run written before blocks (schema 4: no scalar_blocks table) reads as None, as does
    one upgraded to 5 (an empty table: its rows have no blocks), and a tag too short for a
    block."""
    n = 64 * 8
    run = write(tmp_path, "r", np.arange(n), spiky(n, 6))
    conn = sqlite3.connect(run / "run.sqlite")
    with conn:
        conn.execute("DROP TABLE scalar_blocks")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.close()
    reader = RunReader(run)
    assert reader.scalar_blocks("loss") is None
    assert reader.scalars("loss")[0].size == n
    assert upgrade_run(run) == SCHEMA_VERSION == 5
    assert RunReader(run).scalar_blocks("loss") is None
    short = write(tmp_path, "short", np.arange(63), spiky(63, 6))
    assert RunReader(short).scalar_blocks("loss") is None


def test_rows_no_block_accounts_for_read_as_none(tmp_path):
    """Rows written by another program (or lost blocks): the count disagrees."""
    n = 64 * 8
    run = write(tmp_path, "r", np.arange(n), spiky(n, 7))
    conn = sqlite3.connect(run / "run.sqlite")
    with conn:
        conn.execute("INSERT INTO scalars (wall_time, tag_id, step, value) SELECT wall_time, "
                     "tag_id, 100, 5.0 FROM scalars WHERE step = 100")
    conn.close()
    reader = RunReader(run)
    assert reader.scalar_blocks("loss") is None and reader.scalar_blocks("other") is None


def test_a_damaged_block_is_a_store_error(tmp_path):
    n = 64 * 4
    run = write(tmp_path, "r", np.arange(n), spiky(n, 8))
    conn = sqlite3.connect(run / "run.sqlite")
    with conn:
        conn.execute("UPDATE scalar_blocks SET body = x'00' WHERE seq = "
                     "(SELECT MIN(seq) FROM scalar_blocks)")
    conn.close()
    with pytest.raises(RunStoreError, match="scalar block"):
        RunReader(run).scalar_blocks("loss")
    with pytest.raises(KeyError, match="no scalar tag"):
        RunReader(run).scalar_blocks("missing")


VICTIM = textwrap.dedent("""
    import sys
    from engine.record import RunWriter
    writer = RunWriter(sys.argv[1], sys.argv[2])
    step = 0
    while True:
        for tag in ("a", "b", "c"):
            writer.scalar(tag, float((step * 7919) % 1000) - 500.0, step)
        if step % 50 == 0:
            print(step, flush=True)
        step += 1
""")


@pytest.mark.parametrize("kill_after", [0, 700, 2500, 5100])
def test_a_store_killed_mid_write_has_no_block_without_its_rows(tmp_path, kill_after):
    """SIGKILL at a moment of heavy logging: every committed block describes rows that are
    there (recomputed from them), and the reader's blocks and tail add up to the rows."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    victim = subprocess.Popen([sys.executable, "-c", VICTIM, str(tmp_path), "victim"],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        for line in victim.stdout:
            if int(line) >= kill_after:
                break
        victim.send_signal(signal.SIGKILL)
    finally:
        victim.wait(60)
    run = tmp_path / "victim"
    for tag in ("a", "b", "c"):
        seq, steps, values, walls = rows_in_seq_order(run, tag)
        if seq.size == 0:        # killed before the first commit
            continue
        by_seq = {s: k for k, s in enumerate(seq.tolist())}
        for first_seq, last_seq, body in block_rows(run, tag):
            k = by_seq[first_seq]
            assert seq[k + SCALAR_BLOCK_POINTS - 1] == last_seq
            expected = store.scalar_blocks(steps[k:k + 64], values[k:k + 64], walls[k:k + 64])
            np.testing.assert_array_equal(np.frombuffer(body, "<f8"), expected[0])
        found = RunReader(run).scalar_blocks(tag)
        if seq.size < SCALAR_BLOCK_POINTS:
            assert found is None      # no block yet: the rows are read as they are
            continue
        assert found is not None and found.count == seq.size
        assert len(found.blocks) == seq.size // SCALAR_BLOCK_POINTS
