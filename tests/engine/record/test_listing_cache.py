"""list_runs with a ListingCache: a refresh reads only the run folders whose files changed
(a new scalar, a truncated or deleted side file, a run that appeared or turned unreadable),
and what it lists is what a listing without the cache says."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from engine.record import RunWriter, list_runs
from engine.record.reader import ListingCache
from engine.record.schema import DAMAGED, FINISHED, RUNNING, UNREADABLE
from engine.record.store import BLOB_DIR


def _fields(infos):
    return [(i.name, i.status, i.num_steps, i.tags, i.error) for i in infos]


@pytest.fixture
def logdir(tmp_path) -> Path:
    for k in range(3):
        with RunWriter(tmp_path, f"run-{k}") as writer:
            writer.scalar("loss", float(k), 0)
    with RunWriter(tmp_path, "with-side-file") as writer:
        writer.histogram_from_buckets("weights", np.arange(5001.0), np.ones(5000), 0)
    (tmp_path / "not-a-run").mkdir()
    return tmp_path


def test_an_unchanged_logdir_is_read_once(logdir):
    cache = ListingCache()
    first = list_runs(logdir, cache)
    assert cache.reads == 5
    again = list_runs(logdir, cache)
    assert cache.reads == 5                     # nothing changed: nothing read again
    assert _fields(again) == _fields(first) == _fields(list_runs(logdir))


def test_a_changed_run_is_read_again_and_only_it(logdir):
    """Any write to the database changes its stamp (here a tag added by sqlite directly)."""
    import sqlite3

    cache = ListingCache()
    list_runs(logdir, cache)
    conn = sqlite3.connect(logdir / "run-2" / "run.sqlite")
    with conn:
        conn.execute("INSERT INTO tags (kind, tag) VALUES ('scalar', 'extra')")
    conn.close()
    listed = {info.name: info for info in list_runs(logdir, cache)}
    assert cache.reads == 6 and "extra" in listed["run-2"].tags


def test_a_truncated_or_deleted_side_file_is_seen(logdir):
    cache = ListingCache()
    assert {i.name: i.status for i in list_runs(logdir, cache)}["with-side-file"] == FINISHED
    (blob,) = (logdir / "with-side-file" / BLOB_DIR).iterdir()
    with open(blob, "r+b") as handle:
        handle.truncate(os.path.getsize(blob) - 8)
    info = {i.name: i for i in list_runs(logdir, cache)}["with-side-file"]
    assert info.status == DAMAGED and "truncated" in info.error
    assert cache.reads == 6
    blob.unlink()
    info = {i.name: i for i in list_runs(logdir, cache)}["with-side-file"]
    assert info.status == DAMAGED and "side file missing" in info.error
    assert cache.reads == 7


def test_a_folder_that_becomes_a_run_or_stops_being_one_is_seen(logdir):
    cache = ListingCache()
    list_runs(logdir, cache)
    with RunWriter(logdir.parent / "elsewhere", "moved") as writer:
        writer.scalar("loss", 1.0, 0)
    os.rename(Path(writer.path) / "run.sqlite", logdir / "not-a-run" / "run.sqlite")
    (logdir / "run-0" / "run.sqlite").write_bytes(b"not a database" * 100)
    with RunWriter(logdir, "run-new") as writer:
        writer.scalar("loss", 1.0, 0)
    listed = {info.name: info for info in list_runs(logdir, cache)}
    assert listed["not-a-run"].status == FINISHED and listed["not-a-run"].tags == ("loss",)
    assert listed["run-0"].status == UNREADABLE and "not a database" in listed["run-0"].error
    assert listed["run-new"].status == FINISHED
    assert cache.reads == 5 + 3                  # not-a-run's folder, run-0 and run-new
    assert _fields(list_runs(logdir, cache)) == _fields(list_runs(logdir))
    assert cache.reads == 5 + 3


def test_a_running_run_is_read_every_time(tmp_path):
    """A live run may turn INTERRUPTED with no file changing: it is never kept."""
    writer = RunWriter(tmp_path, "live")
    try:
        writer.scalar("loss", 1.0, 0)
        writer.flush()
        cache = ListingCache()
        assert [i.status for i in list_runs(tmp_path, cache)] == [RUNNING]
        list_runs(tmp_path, cache)
        assert cache.reads == 2
    finally:
        writer.close()
    assert [i.status for i in list_runs(tmp_path, cache)] == [FINISHED]


def test_a_removed_folder_is_forgotten(logdir):
    import shutil

    cache = ListingCache()
    list_runs(logdir, cache)
    shutil.rmtree(logdir / "run-0")
    assert "run-0" not in {i.name for i in list_runs(logdir, cache)}
    assert len(cache._entries) == 4


def test_a_refresh_of_many_keeps_the_order_with_the_changed_runs_read_again(tmp_path):
    """Over _PARALLEL_LISTING folders the unchanged ones are looked up first and the rest
    read in the pool: the listing still comes in name order, equal to an uncached one."""
    import sqlite3

    from engine.record import reader

    count = reader._PARALLEL_LISTING * 2 + 3
    for k in range(count):
        with RunWriter(tmp_path, f"run-{k:02d}") as writer:
            writer.scalar("loss", float(k), 0)
    cache = ListingCache()
    list_runs(tmp_path, cache)
    changed = [f"run-{k:02d}" for k in range(0, count, 2)]    # enough to go to the pool
    for name in changed:
        conn = sqlite3.connect(tmp_path / name / "run.sqlite")
        with conn:
            conn.execute("INSERT INTO tags (kind, tag) VALUES ('scalar', 'extra')")
        conn.close()
    again = list_runs(tmp_path, cache)
    assert cache.reads == count + len(changed)
    assert [info.name for info in again] == [f"run-{k:02d}" for k in range(count)]
    assert _fields(again) == _fields(list_runs(tmp_path))
    assert [info.name for info in again if "extra" in info.tags] == changed
