"""Schema version 3's pruning records: sensitivity curves, prune-retrain stages with their
layers' sparsity, compression figures; written, read back, absent from older runs."""

from __future__ import annotations

import json
import sqlite3

import pytest

from engine.record import RunReader, RunWriter
from engine.record.schema import (
    SCHEMA_VERSION,
    CompressionRecord,
    LayerSparsityRecord,
    PruneStageRecord,
    SensitivityPoint,
)
from engine.record.store import TABLES_BY_VERSION
from engine.record.writer import upgrade_run


def _stage(stage: int, sparsity: float) -> PruneStageRecord:
    return PruneStageRecord(stage, 100 * stage, 0.9 - stage / 100, 0.95 - stage / 200, (
        LayerSparsityRecord("dense/kernel", sparsity, sparsity),
        LayerSparsityRecord("logits/kernel", sparsity / 2, sparsity / 2)))


def test_pruning_records_round_trip(tmp_path):
    with RunWriter(tmp_path, "pruned") as writer:
        writer.sensitivity([SensitivityPoint("b", 0.5, 0.8), SensitivityPoint("a", 0.9, 0.5),
                            SensitivityPoint("a", 0.0, 0.97)])
        writer.prune_stage(_stage(0, 0.0))
        writer.prune_stage(_stage(1, 0.6))
        writer.compression(CompressionRecord(100, 10, 400, 120, 0.97, 0.965,
                                             {"a": (80, 6), "b": (20, 4)}))
    reader = RunReader(tmp_path / "pruned")
    curves = reader.sensitivity_curves()
    assert list(curves) == ["b", "a"]
    assert [(p.sparsity, p.accuracy) for p in curves["a"]] == [(0.0, 0.97), (0.9, 0.5)]
    stages = reader.prune_stages()
    assert [s.stage for s in stages] == [0, 1] and stages[1].step == 100
    assert stages[1].layers == _stage(1, 0.6).layers
    assert stages[1].accuracy == pytest.approx(0.945)
    figures = reader.compression()
    assert figures.ratio == 10 and figures.bytes_ratio == pytest.approx(400 / 120)
    assert figures.per_layer == {"a": (80, 6), "b": (20, 4)}


def test_a_run_without_pruning_reads_empty(tmp_path):
    with RunWriter(tmp_path, "plain") as writer:
        writer.scalar("loss", 1.0, 0)
    reader = RunReader(tmp_path / "plain")
    assert reader.sensitivity_curves() == {} and reader.prune_stages() == []
    assert reader.compression() is None


def test_a_version_2_run_reads_empty_and_upgrades(tmp_path):
    with RunWriter(tmp_path, "old") as writer:
        writer.scalar("loss", 1.0, 0)
    db = tmp_path / "old" / "run.sqlite"
    conn = sqlite3.connect(db)
    for version in range(3, SCHEMA_VERSION + 1):     # every table added after version 2
        for table in TABLES_BY_VERSION.get(version, {}):
            conn.execute(f"DROP TABLE {table}")
    conn.execute("ALTER TABLE texts DROP COLUMN shape")     # and the column version 4 added
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    assert RunReader(tmp_path / "old").prune_stages() == []
    assert upgrade_run(tmp_path / "old") == SCHEMA_VERSION
    conn = sqlite3.connect(db)
    version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert json.loads(version) == SCHEMA_VERSION and "prune_layers" in tables
    assert RunReader(tmp_path / "old").compression() is None


def test_writer_refuses_wrong_record_types(tmp_path):
    with RunWriter(tmp_path, "bad") as writer:
        with pytest.raises(TypeError, match="sensitivity.. expects SensitivityPoint"):
            writer.sensitivity([("a", 0.5, 0.9)])
        with pytest.raises(TypeError, match="prune_stage.. expects PruneStageRecord"):
            writer.prune_stage({"stage": 0})
        with pytest.raises(TypeError, match="compression.. expects CompressionRecord"):
            writer.compression(None)
