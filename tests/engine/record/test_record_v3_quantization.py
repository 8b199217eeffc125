"""Run store schema version 3, quantization: comparisons (one row per node, with its metrics
and three histograms, inline or in a side file) and cost-table rows written by RunWriter and
read back as schema records; a version-2 database opens with them empty and upgrades."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest
from test_record_v2 import make_v1_run

from engine.record import RunReader, RunWriter, store
from engine.record.schema import (
    FINISHED,
    SCHEMA_VERSION,
    QuantizationComparisonRecord,
    QuantizationCostRecord,
    QuantizationNodeRecord,
)
from engine.record.writer import upgrade_run


def node(name, position, sqnr, bins=4, flagged=False):
    edges = tuple(float(i) for i in range(bins + 1))
    return QuantizationNodeRecord(
        original=name, op="MatMul", compared=f"{name}/dequantize",
        quantized=(f"{name}/q", f"{name}/dequantize"), position=position, shape=(2, 3),
        mse=0.25, max_abs_error=0.5, sqnr_db=sqnr, cosine=0.99, edges=edges,
        original_counts=(1.0,) * bins, quantized_counts=(2.0,) * bins,
        error_edges=tuple(e / 10 for e in edges), error_counts=(3.0,) * bins, flagged=flagged)


def comparison(nodes, name="mlp eightbit"):
    flagged = next((n.original for n in nodes if n.flagged), None)
    return QuantizationComparisonRecord(name, 1, 2, 20.0, flagged, tuple(nodes),
                                        {"shape": "its output is string, not a number"})


COSTS = (QuantizationCostRecord("digits_mlp", "float", 0.97, 40_000, 1.0, 90.0, 900.0,
                                1.0, 1.0),
         QuantizationCostRecord("digits_mlp", "eightbit", 0.965, 11_000, 0.275, 120.0, 700.0,
                                0.75, 1.29))


def test_comparisons_and_costs_round_trip(tmp_path):
    nodes = [node("x", 0, math.inf), node("mm", 1, 12.5, flagged=True),
             node("big", 2, -math.inf, bins=3000)]          # 3000 buckets: a side file
    with RunWriter(tmp_path, "q") as writer:
        writer.quantization_comparison(comparison(nodes))
        writer.quantization_costs(COSTS)
        writer.quantization_comparison(comparison(nodes[:1], name="other"))
    reader = RunReader(tmp_path / "q")
    assert reader.info().status == FINISHED
    listed = reader.quantization_comparisons()
    assert [c.name for c in listed] == ["mlp eightbit", "other"] and listed[0].nodes == ()
    got = reader.quantization_comparison("mlp eightbit")
    assert got.nodes == tuple(nodes)                        # inf and -inf survive
    assert got.flagged == "mm" and got.threshold_db == 20.0
    assert (got.original_graph_version, got.quantized_graph_version) == (1, 2)
    assert got.skipped == {"shape": "its output is string, not a number"}
    assert reader.quantization_comparison().name == "other"     # the latest
    assert [(c.variant, c.file_bytes) for c in reader.quantization_costs("digits_mlp")] == [
        ("float", 40_000), ("eightbit", 11_000)]
    assert reader.quantization_costs()[1].batch256_speedup == pytest.approx(1.29)
    assert list((tmp_path / "q" / "blobs").glob("*-quantization.npy"))
    assert reader.damage() is None
    kinds = [e[2] for e in reader.events()]
    assert kinds.count("quantization") == 2
    assert any("first below 20 dB: mm" in e[3] for e in reader.events())


def test_an_unknown_comparison_names_the_recorded_ones(tmp_path):
    with RunWriter(tmp_path, "q") as writer:
        writer.quantization_comparison(comparison([node("x", 0, 30.0)]))
    with pytest.raises(KeyError, match="no quantization comparison 'nope'; recorded: "
                       "'mlp eightbit'"):
        RunReader(tmp_path / "q").quantization_comparison("nope")


def test_bad_records_are_refused_in_the_callers_thread(tmp_path):
    with RunWriter(tmp_path, "q") as writer:
        with pytest.raises(TypeError, match="QuantizationComparisonRecord"):
            writer.quantization_comparison({"name": "x"})
        broken = node("x", 0, 1.0)
        broken = QuantizationNodeRecord(**{**broken.__dict__, "edges": (0.0, 1.0)})
        with pytest.raises(ValueError, match="'x': histograms need 5 edges for 4 counts"):
            writer.quantization_comparison(comparison([broken]))
        with pytest.raises(TypeError, match="QuantizationCostRecord"):
            writer.quantization_costs([("digits_mlp", "float")])


def make_v2_run(run_dir) -> None:
    """A finished version-2 run (the version-1 tables plus version 2's, schema_version 2)."""
    make_v1_run(run_dir)
    conn = sqlite3.connect(run_dir / "run.sqlite")
    for statement in store.version_statements(2):
        conn.execute(statement)
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def test_a_version_2_run_reads_no_quantization_and_upgrades(tmp_path):
    run = tmp_path / "logs" / "old"
    make_v2_run(run)
    before = (run / "run.sqlite").read_bytes()
    reader = RunReader(run)
    assert reader.quantization_comparisons() == [] and reader.quantization_costs() == []
    with pytest.raises(KeyError, match="no quantization comparison"):
        reader.quantization_comparison()
    assert [e[2] for e in reader.events()] == ["run", "scalar"]
    assert (run / "run.sqlite").read_bytes() == before
    assert upgrade_run(run) == SCHEMA_VERSION
    conn = sqlite3.connect(run / "run.sqlite")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    conn.close()
    assert {"quantization_comparisons", "quantization_nodes", "quantization_costs"} <= tables
    assert json.loads(version) == SCHEMA_VERSION
    assert RunReader(run).quantization_costs() == []
    assert RunReader(run).scalars("loss")[1].tolist() == [0.25]


def test_a_new_store_holds_every_version_s_tables(tmp_path):
    RunWriter(tmp_path, "new").close()
    conn = sqlite3.connect(tmp_path / "new" / "run.sqlite")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert set(store.TABLES) <= tables
