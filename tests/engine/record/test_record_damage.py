"""A damaged run never makes RunReader raise anything but RunStoreError naming the file and
what is wrong: rows with bad JSON, a wrong type or bad UTF-8, side files that are gone or not
text; and a tag or step the run does not have is a RunStoreKeyError (a KeyError too)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.record import RunReader, RunStoreError, RunStoreKeyError, RunWriter
from engine.record.store import BLOB_THRESHOLD, blob_path


@pytest.fixture
def run_dir(logdir, samples):
    with RunWriter(logdir, name="r") as w:
        w.graph(samples.graph())
        w.plan(*samples.plan())
        w.step(*samples.step())
        w.scalar("loss", 1.0, 0)
        w.text("big", "x" * (BLOB_THRESHOLD + 10), 0)
        return Path(w.path)


def _damage(run_dir, sql: str) -> None:
    conn = sqlite3.connect(f"{run_dir}/run.sqlite")
    conn.execute(sql)
    conn.commit()
    conn.close()


@pytest.mark.parametrize("sql, read", [
    ("UPDATE graphs SET body = '{not json'", lambda r: r.graph()),
    ("UPDATE graphs SET body = '[{\"name\": 3}]'", lambda r: r.graph()),
    ("UPDATE plans SET fetches = 'nope'", lambda r: r.plans()),
    ("UPDATE cut_edges SET consumers = '[1,'", lambda r: r.cut_edges()),
    ("UPDATE partitions SET body = 'x'", lambda r: r.partitions()),
])
def test_damaged_rows_raise_run_store_errors_naming_the_database(run_dir, sql, read):
    _damage(run_dir, sql)
    with RunReader(run_dir) as reader, pytest.raises(RunStoreError, match="run.sqlite"):
        read(reader)


def test_a_side_file_that_is_not_utf8_or_missing_is_named(run_dir):
    with RunReader(run_dir) as reader:
        (blob,) = [p for p in (blob_path(run_dir, "x").parent).iterdir()]
        blob_id = blob.stem
        blob.write_bytes(blob.read_bytes()[:-4] + b"\xff\xfe\xfd\xfc")
        with pytest.raises(RunStoreError, match=blob_id):
            reader.texts("big")
        blob.unlink()
        with pytest.raises(RunStoreError, match=blob_id):
            reader.texts("big")


def test_unknown_tags_and_steps_are_key_errors_of_the_store(run_dir):
    with RunReader(run_dir) as reader:
        for call in (lambda: reader.scalars("nope"), lambda: reader.step_stats(99)):
            with pytest.raises(RunStoreKeyError) as caught:
                call()
            assert isinstance(caught.value, KeyError)
            assert isinstance(caught.value, RunStoreError)
            assert not str(caught.value).startswith("'")


def test_every_public_query_is_guarded():
    """A new RunReader query must join reader._QUERIES, or its damage would escape."""
    public = {name for name, value in vars(RunReader).items()
              if callable(value) and not name.startswith("_") and name != "close"}
    unguarded = {name for name in public if not hasattr(getattr(RunReader, name), "__wrapped__")}
    assert unguarded == set()
