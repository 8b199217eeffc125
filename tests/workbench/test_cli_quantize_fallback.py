"""`workbench quantize --fallback-min LO --fallback-max HI`: TF's --quantized_fallback_min/max,
in the graph (no RequantizationRange) and the report; one bound alone, a bad range, weights
mode with a range, or --record with one are one line on stderr with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import engine as tf
from workbench import cli

MLP = Path(__file__).resolve().parents[2] / "sample_graphs" / "digits_mlp_frozen.json"


def test_fallback_range_goes_into_the_graph_and_the_report(tmp_path, capsys):
    out, report = tmp_path / "fb.json", tmp_path / "fb_report.json"
    rc = cli.main(["quantize", str(MLP), "--mode", "eightbit", "--fallback-min", "-20",
                   "--fallback-max", "20", "--out", str(out), "--report", str(report)])
    assert rc == 0, capsys.readouterr().err
    body = json.loads(report.read_text())
    assert body["fallback_range"] == [-20.0, 20.0]
    assert body["quantized_accuracy"] > 0.5
    graph = tf.load_graph_def(out)
    ops = [n.op for n in graph.node]
    assert "RequantizationRange" not in ops and "Requantize" in ops
    assert "fallback_quantization_min_value" in graph


@pytest.mark.parametrize("args,message", [
    (["--mode", "eightbit", "--fallback-min", "-1"],
     "--fallback-min and --fallback-max go together: give both"),
    (["--mode", "eightbit", "--fallback-min", "2", "--fallback-max", "1"],
     "Invalid fallback_quantization_range: [2.0,1.0]"),
    (["--mode", "weights", "--fallback-min", "-1", "--fallback-max", "1"],
     "fallback_quantization_range can only be specified in eightbit mode"),
    (["--mode", "eightbit", "--fallback-min", "-1", "--fallback-max", "1", "--record", "runs"],
     "--record does not take --fallback-min/--fallback-max")])
def test_bad_fallback_options_are_one_line(tmp_path, capsys, args, message):
    rc = cli.main(["quantize", str(MLP), *args, "--out", str(tmp_path / "o.json")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("workbench: error: ") and message in err
    assert err.count("\n") == 1


def test_help_describes_the_fallback_range(capsys):
    with pytest.raises(SystemExit):
        cli.main(["quantize", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--fallback-min LO" in text and "quantized_fallback_min/max" in text
