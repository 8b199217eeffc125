"""list_runs over a log directory with good and broken folders, and RunReader's refusals:
not a run store, a corrupt database, a newer schema version, a missing side file."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from engine.record import RunReader, RunStoreError, RunWriter, list_runs
from engine.record.schema import FINISHED, RUNNING, SCHEMA_VERSION, UNREADABLE
from engine.record.store import BLOB_DIR


def make_run(logdir: Path, name: str, close: bool = True) -> RunWriter:
    writer = RunWriter(logdir, name, config={"name": name})
    writer.scalar("loss", 1.0, 0)
    writer.flush()
    if close:
        writer.close()
    return writer


def set_schema_version(run_dir: Path, version: int) -> None:
    conn = sqlite3.connect(run_dir / "run.sqlite")
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    conn.close()


def test_list_runs_reports_bad_folders_without_raising(logdir):
    make_run(logdir, "b-good")
    live = make_run(logdir, "e-live", close=False)
    (logdir / "a-garbage").mkdir()
    (logdir / "a-garbage" / "notes.txt").write_text("not a run")
    (logdir / "c-corrupt").mkdir()
    (logdir / "c-corrupt" / "run.sqlite").write_bytes(b"\x00garbage" * 1000)
    (logdir / "d-empty-db").mkdir()
    sqlite3.connect(logdir / "d-empty-db" / "run.sqlite").close()
    (logdir / "z-file.txt").write_text("files are not runs")
    newer = make_run(logdir, "f-newer")
    set_schema_version(Path(newer.path), SCHEMA_VERSION + 1)

    runs = list_runs(logdir)
    live.close()
    assert [run.name for run in runs] == [
        "a-garbage", "b-good", "c-corrupt", "d-empty-db", "e-live", "f-newer"]
    by_name = {run.name: run for run in runs}
    assert by_name["b-good"].status == FINISHED and by_name["b-good"].tags == ("loss",)
    assert by_name["b-good"].config == {"name": "b-good"} and by_name["b-good"].error is None
    assert by_name["e-live"].status == RUNNING
    for name, reason in (("a-garbage", "no run.sqlite"), ("c-corrupt", "not a database"),
                         ("d-empty-db", "no such table: meta"), ("f-newer", "newer")):
        run = by_name[name]
        assert run.status == UNREADABLE, name
        assert reason in run.error and name in run.error, run.error
        assert run.path == str(logdir / name)


def test_list_runs_of_a_missing_logdir_names_it(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match="nowhere"):
        list_runs(missing)


def test_list_runs_of_an_empty_logdir(tmp_path):
    assert list_runs(tmp_path) == []


def test_reader_refuses_what_is_not_a_run_store(tmp_path):
    with pytest.raises(RunStoreError, match="no such folder"):
        RunReader(tmp_path / "missing")
    with pytest.raises(RunStoreError, match="no run.sqlite"):
        RunReader(tmp_path)
    (tmp_path / "run.sqlite").write_text("hello")
    with pytest.raises(RunStoreError, match=r"run\.sqlite.*not a database"):
        RunReader(tmp_path)
    assert issubclass(RunStoreError, ValueError)


def test_reader_refuses_a_newer_schema_version(logdir):
    writer = make_run(logdir, "r")
    set_schema_version(Path(writer.path), SCHEMA_VERSION + 1)
    with pytest.raises(RunStoreError, match=rf"version {SCHEMA_VERSION + 1}, newer .*"
                                            rf"\({SCHEMA_VERSION}\)"):
        RunReader(writer.path)


def test_a_missing_side_file_is_a_run_store_error_naming_it(logdir):
    with RunWriter(logdir, "r") as writer:
        writer.text("big", "y" * 100_000)
    (blob,) = (Path(writer.path) / BLOB_DIR).iterdir()
    blob.unlink()
    with pytest.raises(RunStoreError, match=blob.name):
        RunReader(writer.path).texts("big")


def open_paths() -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass   # closed between listdir and readlink
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_reader_holds_no_file_open_between_queries(logdir):
    writer = make_run(logdir, "r")
    reader = RunReader(writer.path)
    assert reader.scalars("loss")[1].tolist() == [1.0] and reader.info().status == FINISHED
    assert not [path for path in open_paths() if path.startswith(writer.path)]


def test_closed_reader_refuses_queries(logdir):
    writer = make_run(logdir, "r")
    with RunReader(writer.path) as reader:
        assert reader.tags() == ["loss"]
    with pytest.raises(ValueError, match="closed"):
        reader.tags()
