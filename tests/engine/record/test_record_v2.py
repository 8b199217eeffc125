"""Run store schema version 2: images (inline and side files), tensor summaries and alerts
written and read back as schema records; a real version-1 database (built here from the
version-1 DDL) opens read-only with the new tables read as empty, and upgrade_run adds
them."""

from __future__ import annotations

import json
import sqlite3
import time

import numpy as np
import pytest

from engine.record import RunReader, RunWriter, list_runs, upgrade_run
from engine.record.schema import (
    FINISHED,
    NAN,
    SCHEMA_VERSION,
    AlertRecord,
    TensorSummaryRecord,
)
from engine.record.store import BLOB_THRESHOLD

# The version-1 DDL exactly as the first run store wrote it (kept here, not in the product,
# so the product's migrations are tested against the real old layout).
V1_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tags (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, tag TEXT NOT NULL,
    UNIQUE (kind, tag));
CREATE TABLE run_events (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, kind, detail);
CREATE TABLE scalars (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, tag_id, step, value);
CREATE TABLE histograms (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, tag_id, step, min,
    max, sum, count, edges, counts, blob);
CREATE TABLE texts (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, tag_id, step, body, blob);
CREATE TABLE devices (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, name, device_type, idx,
    physical, virtual);
CREATE TABLE graphs (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, version, num_nodes, body,
    blob);
CREATE TABLE placements (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, graph_version, node,
    op, requested, assigned, reason, detail, log_line);
CREATE TABLE plans (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, plan, graph_version,
    fetches, feeds, targets, devices, num_partitions, num_cut_edges);
CREATE TABLE partitions (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, plan_seq, plan,
    device, num_nodes, body, blob);
CREATE TABLE cut_edges (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, plan_seq, plan,
    tensor, src_device, dst_device, send_node, recv_node, key, dtype, shape, consumers, bytes);
CREATE TABLE steps (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, step, plan, wall_start,
    duration_us, num_ops, bytes_moved);
CREATE TABLE op_stats (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, step_seq, step, node,
    op, device, start_us, end_us, output_bytes, thread);
CREATE TABLE transfers (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, step_seq, step, key,
    tensor, src_device, dst_device, bytes);
CREATE INDEX scalars_by_tag ON scalars (tag_id, step, seq, value);
CREATE INDEX histograms_by_tag ON histograms (tag_id, step);
CREATE INDEX texts_by_tag ON texts (tag_id, step);
CREATE INDEX graphs_by_version ON graphs (version);
CREATE INDEX placements_by_node ON placements (node, graph_version);
CREATE INDEX plans_by_plan ON plans (plan);
CREATE INDEX partitions_by_plan ON partitions (plan_seq);
CREATE INDEX cut_edges_by_plan ON cut_edges (plan_seq);
CREATE INDEX steps_by_step ON steps (step);
CREATE INDEX steps_by_plan ON steps (plan);
CREATE INDEX op_stats_by_step ON op_stats (step_seq);
CREATE INDEX transfers_by_step ON transfers (step_seq);
"""


def make_v1_run(run_dir) -> None:
    """A finished version-1 run with one scalar, as the old writer left it."""
    run_dir.mkdir(parents=True)
    conn = sqlite3.connect(run_dir / "run.sqlite")
    conn.executescript(V1_DDL)
    now = time.time()
    meta = {"name": run_dir.name, "started": now, "updated": now, "status": FINISHED,
            "pid": 1, "process": "elsewhere|", "last_step": 3, "exception": None,
            "schema_version": 1, "config": {"kind": "old"}}
    conn.executemany("INSERT INTO meta VALUES (?, ?)",
                     [(k, json.dumps(v)) for k, v in meta.items()])
    conn.execute("INSERT INTO tags VALUES (1, 'scalar', 'loss')")
    conn.execute("INSERT INTO run_events VALUES (1, ?, 'run', 'run started')", (now,))
    conn.execute("INSERT INTO scalars VALUES (2, ?, 1, 3, 0.25)", (now,))
    conn.commit()
    conn.close()


def test_a_version_1_run_opens_read_only_with_the_new_tables_empty(tmp_path):
    run = tmp_path / "logs" / "old"
    make_v1_run(run)
    before = (run / "run.sqlite").read_bytes()
    reader = RunReader(run)
    assert reader.info().status == FINISHED and reader.scalars("loss")[1].tolist() == [0.25]
    assert reader.image_tags() == [] and reader.alerts() == []
    assert reader.tensor_summaries() == [] and reader.tensor_summary_nodes() == []
    with pytest.raises(KeyError, match="no image tag 'x'"):
        reader.images("x")
    assert [e[2] for e in reader.events()] == ["run", "scalar"]
    assert [i.status for i in list_runs(tmp_path / "logs")] == [FINISHED]
    assert (run / "run.sqlite").read_bytes() == before      # reading never wrote


def test_upgrade_run_adds_the_version_2_tables(tmp_path):
    run = tmp_path / "old"
    make_v1_run(run)
    assert upgrade_run(run) == SCHEMA_VERSION
    conn = sqlite3.connect(run / "run.sqlite")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    conn.close()
    assert {"images", "tensor_summaries", "alerts"} <= tables
    assert json.loads(version) == SCHEMA_VERSION
    assert RunReader(run).scalars("loss")[1].tolist() == [0.25]
    assert upgrade_run(run) == SCHEMA_VERSION     # idempotent


def test_a_new_run_has_schema_version_2(tmp_path):
    with RunWriter(tmp_path, "r") as writer:
        pass
    conn = sqlite3.connect(tmp_path / "r" / "run.sqlite")
    version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    conn.close()
    assert json.loads(version) == SCHEMA_VERSION
    assert writer.closed


def test_images_inline_and_in_side_files(tmp_path):
    small = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    side = 256 * 256 * 4
    assert side > BLOB_THRESHOLD
    large = np.random.default_rng(0).integers(0, 256, (256, 256, 4), dtype=np.uint8)
    gray = np.linspace(0.0, 1.0, 6).reshape(2, 3)
    with RunWriter(tmp_path, "r") as writer:
        writer.image("small", small, 0)
        writer.image("small", small[::-1].copy(), 5)
        writer.image("large", large, 1)
        writer.image("gray", gray)
    reader = RunReader(tmp_path / "r")
    assert reader.image_tags() == ["gray", "large", "small"]
    first, second = reader.images("small")
    assert (first.step, first.height, first.width, first.channels) == (0, 2, 3, 3)
    np.testing.assert_array_equal(first.pixels, small)
    np.testing.assert_array_equal(second.pixels, small[::-1])
    np.testing.assert_array_equal(reader.images("large")[0].pixels, large)
    assert len(list((tmp_path / "r" / "blobs").glob("*-image.npy"))) == 1
    assert reader.images("gray")[0].pixels.reshape(-1).tolist() == [0, 51, 102, 153, 204, 255]
    assert any("large at step 1: 256x256 image, 4 channels" in e[3] for e in reader.events())


@pytest.mark.parametrize("image, error, match", [
    (np.zeros((2, 2, 2), np.uint8), ValueError, "expected"),
    (np.zeros((2,), np.uint8), ValueError, "expected"),
    (np.full((2, 2), 3.0), TypeError, "floats in"),
    (np.array([["a"]]), TypeError, "real numbers"),
])
def test_bad_images_are_refused_in_the_callers_thread(tmp_path, image, error, match):
    with RunWriter(tmp_path, "r") as writer, pytest.raises(error, match=match):
        writer.image("img", image)


def test_tensor_summaries_record_statistics(tmp_path):
    values = np.array([[1.0, -2.0, np.nan], [np.inf, -np.inf, 4.0]], np.float32)
    with RunWriter(tmp_path, "r") as writer:
        writer.tensor_summary("Log:0", values, 3)
        writer.tensor_summary("Log:0", np.ones(4, np.float32), 4)
        writer.tensor_summary("count:0", np.array([1, 2, 3], np.int64), 4)
        writer.tensor_summary("empty:0", np.full(2, np.nan), 4)
    reader = RunReader(tmp_path / "r")
    assert reader.tensor_summary_nodes() == ["Log:0", "count:0", "empty:0"]
    first = reader.tensor_summaries("Log:0")[0]
    finite = np.array([1.0, -2.0, 4.0])
    assert (first.step, first.dtype, first.shape, first.count) == (3, "float32", (2, 3), 6)
    assert (first.min, first.max) == (-2.0, 4.0)
    assert first.mean == pytest.approx(finite.mean()) and first.std == pytest.approx(finite.std())
    assert (first.nan_count, first.neg_inf_count, first.pos_inf_count) == (1, 1, 1)
    assert first.inf_count == 2
    counts = reader.tensor_summaries("count:0")[0]
    assert (counts.dtype, counts.mean, counts.nan_count) == ("int64", 2.0, 0)
    empty = reader.tensor_summaries("empty:0")[0]
    assert np.isnan(empty.min) and empty.nan_count == 2
    assert len(reader.tensor_summaries()) == 4
    assert any("Log:0 at step 3: float32 [2,3] in [-2, 4], 1 NaN, 2 Inf" in e[3]
               for e in reader.events())


def test_alerts_round_trip_with_their_input_summaries(tmp_path):
    x = TensorSummaryRecord("mul:0", 2, "float32", (3,), 3, -2.0, 4.0, 1.0, 2.4, 0, 0, 0)
    out = TensorSummaryRecord("Log:0", 2, "float32", (3,), 3, float("nan"), float("nan"),
                              float("nan"), float("nan"), 3, 0, 0)
    alert = AlertRecord(2, "Log", "Log", "/job:localhost/replica:0/task:0/device:CPU:0", NAN,
                        "Log:0 : Tensor had NaN values", (x,), out,
                        ("train.py:3 in <module>", "train.py:9 in build"))
    with RunWriter(tmp_path, "r") as writer:
        writer.alert(alert)
        with pytest.raises(TypeError, match="alert"):
            writer.alert("not an alert")
    got, = RunReader(tmp_path / "r").alerts()
    assert (got.step, got.node, got.op, got.kind, got.message) == \
        (2, "Log", "Log", NAN, "Log:0 : Tensor had NaN values")
    assert got.inputs == (x,) and got.stack == alert.stack and got.seq > 0
    assert got.output.nan_count == 3 and np.isnan(got.output.min)
    events = RunReader(tmp_path / "r").events()
    assert any(e[2] == "alert" and e[3].startswith("nan in Log (Log)") for e in events)


def test_histograms_from_buckets(tmp_path):
    with RunWriter(tmp_path, "r") as writer:
        writer.histogram_from_buckets("h", [0.0, 1.0, 3.0], [2, 1], 4)
        with pytest.raises(ValueError, match="one more edge than counts"):
            writer.histogram_from_buckets("h", [0.0, 1.0], [2, 1])
        with pytest.raises(ValueError, match="must not decrease"):
            writer.histogram_from_buckets("h", [0.0, 2.0, 1.0], [2, 1])
    record, = RunReader(tmp_path / "r").histograms("h")
    assert (record.step, record.edges, record.counts) == (4, (0.0, 1.0, 3.0), (2.0, 1.0))
    assert (record.min, record.max, record.count, record.sum) == (0.0, 3.0, 3, 3.0)


def test_exist_ok_claims_an_existing_folder_once(tmp_path):
    (tmp_path / "run").mkdir()
    with RunWriter(tmp_path, "run", exist_ok=True) as first, \
            RunWriter(tmp_path, "run", exist_ok=True) as second:
        assert (first.name, second.name) == ("run", "run-1")
    with pytest.raises(FileExistsError):
        RunWriter(tmp_path, "run")
