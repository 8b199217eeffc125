"""`workbench quantize ... --record LOGDIR`: the quantized graph, its per-node comparison
and the cost table recorded into a new run that the Quantization page reads."""

from __future__ import annotations

from pathlib import Path

from engine.compression import report
from engine.record import RunReader, list_runs
from workbench import cli, data
from workbench.pages import quantization

MLP = Path(__file__).resolve().parents[2] / "sample_graphs" / "digits_mlp_frozen.json"


def test_record_writes_a_run_the_page_reads(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(report, "DEFAULT_TIMING", report.Timing(repeats=1, warmup=0))
    logdir = tmp_path / "logs"
    rc = cli.main(["quantize", str(MLP), "--mode", "eightbit", "--calibration", "50",
                   "--out", str(tmp_path / "q.json"), "--record", str(logdir)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "recorded the comparison in" in captured.out
    assert "Comparing node by node on 256" in captured.err
    [run] = list_runs(logdir)
    reader = RunReader(run.path)
    comparison = reader.quantization_comparison()
    assert comparison.name == "digits_mlp_frozen eightbit, calibrated on 50"
    assert comparison.nodes and reader.graph_versions() == [1, 2]
    variants = [row.variant for row in reader.quantization_costs("digits_mlp_frozen")]
    assert variants == ["float", "weights", "eightbit, run-time ranges",
                        "eightbit, calibrated on 10", "eightbit, calibrated on 50",
                        "eightbit, calibrated on 1000"]
    data.set_logdir(logdir)
    try:
        assert quantization.run_choice({"run": None})[1] == run.name
    finally:
        data.set_logdir("runs")


def test_weights_mode_records_its_comparison_too(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(report, "DEFAULT_TIMING", report.Timing(repeats=1, warmup=0))
    assert cli.main(["quantize", str(MLP), "--mode", "weights", "--out",
                     str(tmp_path / "w.json"), "--record", str(tmp_path / "logs"),
                     "--data", "digits"]) == 0
    assert "recorded the comparison" in capsys.readouterr().out
    [run] = list_runs(tmp_path / "logs")
    assert RunReader(run.path).quantization_comparison().name == "digits_mlp_frozen weights"
