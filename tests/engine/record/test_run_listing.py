"""list_runs for runs whose side files or database are damaged: each is listed DAMAGED with
the file (relative to the log directory) and what is wrong, found from stats and .npy
headers without reading the side files; a file that was never a database stays UNREADABLE."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from engine.record import RunReader, RunStoreError, RunWriter, list_runs
from engine.record import store as store_module
from engine.record.schema import DAMAGED, FINISHED, RUNNING, UNREADABLE, GraphRecord
from engine.record.store import BLOB_DIR, BLOB_THRESHOLD, blob_path


def write_run(logdir: Path, name: str, samples, close: bool = True) -> RunWriter:
    """A run with one side file of each kind: graph, histogram, text and image."""
    writer = RunWriter(logdir, name)
    writer.graph(samples.graph())
    writer.histogram_from_buckets("weights", np.arange(5001.0), np.ones(5000), 0)
    writer.text("notes", "n" * (BLOB_THRESHOLD + 1), 0)
    writer.image("picture", np.zeros((160, 160, 3), np.uint8), 0)
    writer.scalar("loss", 1.0, 0)
    writer.flush()
    if close:
        writer.close()
    return writer


def side_file(run_dir: Path, kind: str) -> Path:
    (found,) = (p for p in (run_dir / BLOB_DIR).iterdir() if p.stem.endswith(f"-{kind}"))
    return found


def listed(logdir: Path, name: str):
    (info,) = [info for info in list_runs(logdir) if info.name == name]
    return info


@pytest.fixture
def run_dir(logdir, samples) -> Path:
    return Path(write_run(logdir, "r", samples).path)


def test_a_whole_run_with_side_files_is_finished(logdir, run_dir):
    info = listed(logdir, "r")
    assert info.status == FINISHED and info.error is None
    assert len(list((run_dir / BLOB_DIR).iterdir())) == 3   # histogram, text, image


def test_a_missing_side_file_makes_the_run_damaged_not_finished(logdir, run_dir):
    blob = side_file(run_dir, "image")
    blob.unlink()
    info = listed(logdir, "r")
    assert info.status == DAMAGED
    assert info.error.startswith(f"r/{BLOB_DIR}/{blob.name}: side file missing")
    assert "images row" in info.error
    assert str(logdir) not in info.error          # relative to the log directory
    assert info.tags == ("loss",)                 # what the run still says about itself


def test_a_truncated_side_file_is_found_from_its_header(logdir, run_dir):
    blob = side_file(run_dir, "histogram")
    whole = blob.stat().st_size
    os.truncate(blob, whole - 8)
    info = listed(logdir, "r")
    assert info.status == DAMAGED
    assert f"{blob.name}: truncated: {whole - 8} bytes, its header promises {whole}" in info.error


def test_side_files_that_are_not_npy_or_hold_objects_are_damage(logdir, run_dir):
    side_file(run_dir, "text").write_bytes(b"this is not numpy")
    np.save(side_file(run_dir, "image"), np.array([{"a": 1}], dtype=object), allow_pickle=True)
    error = listed(logdir, "r").error
    text = side_file(run_dir, "text").name
    assert error.startswith(f"r/{BLOB_DIR}/{text}: not a .npy file")
    assert error.endswith("; 2 of 3 side files damaged")


def test_a_side_file_holding_objects_is_damage(logdir, run_dir):
    np.save(side_file(run_dir, "image"), np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with RunReader(run_dir) as reader:
        assert "holds Python objects (it cannot be read without pickle)" in reader.damage()
        with pytest.raises(RunStoreError, match="side file"):
            reader.images("picture")


def test_a_row_naming_a_path_outside_the_run_is_damage_never_read(logdir, run_dir, tmp_path):
    outside = tmp_path / "secret.npy"
    np.save(outside, np.frombuffer(b"secret", dtype=np.uint8))
    conn = sqlite3.connect(run_dir / "run.sqlite")
    with conn:
        conn.execute("UPDATE texts SET blob = ?", (os.path.relpath(outside.with_suffix(""),
                                                                   run_dir / BLOB_DIR),))
    conn.close()
    info = listed(logdir, "r")
    assert info.status == DAMAGED and "not a side-file name" in info.error
    with RunReader(run_dir) as reader, pytest.raises(RunStoreError, match="side-file name"):
        reader.texts("notes")


def test_checking_reads_headers_only(logdir, run_dir, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the check must not load side files")
    monkeypatch.setattr(np, "load", refuse)
    monkeypatch.setattr(store_module, "read_blob", refuse)
    assert RunReader(run_dir).damage() is None
    assert listed(logdir, "r").status == FINISHED


def test_a_truncated_database_is_damaged_a_garbage_one_unreadable(logdir, samples):
    writer = write_run(logdir, "truncated", samples, close=False)
    for step in range(1, 5000):                   # enough pages that the cut hits data
        writer.scalar("loss", 1.0 / step, step)
    writer.close()
    truncated = Path(writer.path) / "run.sqlite"
    os.truncate(truncated, truncated.stat().st_size // 2)
    garbage = logdir / "garbage"
    garbage.mkdir()
    (garbage / "run.sqlite").write_bytes(os.urandom(8192))
    by_name = {info.name: info for info in list_runs(logdir)}
    assert by_name["truncated"].status == DAMAGED
    assert by_name["truncated"].error == "truncated/run.sqlite: database disk image is malformed"
    assert by_name["garbage"].status == UNREADABLE
    assert "not a database" in by_name["garbage"].error
    assert str(logdir) not in by_name["garbage"].error


def test_a_run_being_written_is_running_with_every_side_file_whole(logdir, samples):
    writer = write_run(logdir, "live", samples, close=False)
    try:
        writer.image("picture", np.ones((160, 160, 3), np.uint8), 1)
        writer.flush()
        info = listed(logdir, "live")
        assert info.status == RUNNING and info.error is None
    finally:
        writer.close()


def test_a_missing_graph_side_file_is_named_by_its_row(logdir, samples):
    with RunWriter(logdir, "big-graph") as writer:
        nodes = tuple(dataclasses.replace(node, name=f"scope{i % 9}/node{i}")
                      for i, node in enumerate(samples.graph().nodes * 400))
        writer.graph(GraphRecord(1, nodes))
    run_dir = Path(writer.path)
    blob = side_file(run_dir, "graph")
    blob.unlink()
    info = listed(logdir, "big-graph")
    assert info.status == DAMAGED and "graphs row" in info.error
    assert blob_path(run_dir, blob.stem).name in info.error
    with RunReader(run_dir) as reader, pytest.raises(RunStoreError, match=blob.name):
        reader.graph()


def test_a_large_logdir_lists_in_name_order_with_every_status(tmp_path):
    """From 16 runs on, folders are read on a few threads: the listing is the serial one,
    in name order, an unreadable folder and a damaged run among them."""
    from engine.record import RunWriter, list_runs
    from engine.record import reader as reader_module
    from engine.record.schema import DAMAGED, FINISHED, UNREADABLE

    for k in range(24):
        with RunWriter(tmp_path, f"run-{k:02d}") as writer:
            writer.scalar("loss", float(k), 0)
    (tmp_path / "run-07b").mkdir()                        # not a run store
    (tmp_path / "run-11" / "run.sqlite").write_bytes(b"\\0" * 4096)   # overwritten
    listed = list_runs(tmp_path)
    assert [info.name for info in listed] == sorted(info.name for info in listed)
    statuses = {info.name: info.status for info in listed}
    assert statuses["run-07b"] == UNREADABLE
    assert statuses["run-11"] in (DAMAGED, UNREADABLE)
    assert sum(status == FINISHED for status in statuses.values()) == 23
    serial = [reader_module._listed(child, tmp_path)
              for child in sorted(p for p in tmp_path.iterdir() if p.is_dir())]
    assert [(i.name, i.status, i.error) for i in listed] == \
        [(i.name, i.status, i.error) for i in serial]
