"""`workbench quantize`: the digits MLP sample quantized in both modes, its JSON report,
progress on stderr, and bad input as one line on stderr with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import engine as tf
from workbench import cli

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
MLP = SAMPLES / "digits_mlp_frozen.json"


def test_eightbit_calibrated_writes_the_graph_and_the_report(tmp_path, capsys):
    out, report = tmp_path / "mlp8.json", tmp_path / "report.json"
    rc = cli.main(["quantize", str(MLP), "--mode", "eightbit", "--calibration", "50",
                   "--out", str(out), "--report", str(report)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    body = json.loads(report.read_text())
    assert body["mode"] == "eightbit" and body["calibration_samples"] == 50
    assert body["data"] == "digits" and body["test_examples"] == 360
    assert body["float_accuracy"] > 0.95
    assert body["quantized_accuracy"] >= body["float_accuracy"] - 0.01
    assert body["float_bytes"] == MLP.stat().st_size + \
        (SAMPLES / (MLP.name + ".npz")).stat().st_size
    assert body["quantized_bytes"] == out.stat().st_size + \
        (tmp_path / "mlp8.json.npz").stat().st_size
    assert body["quantized_constant_bytes"] < 0.27 * body["float_constant_bytes"]
    assert body["file_format"] == "json" and set(body["bytes_by_format"]) == {"json", "compact"}
    assert body["kept_float"] == {
        "probabilities": "Softmax has no quantized form in quantize_graph's eightbit mode"}
    ops = {n.op for n in tf.load_graph_def(out).node}
    # QuantizedMatMul, or the fused MatMul ops where the registry has them.
    assert any(op.startswith("QuantizedMatMul") for op in ops)
    assert "RequantizationRange" not in ops and "MatMul" not in ops
    assert "calibrate [" in captured.err and "evaluate quantized [" in captured.err
    assert "Kept in float (no quantized form): probabilities (Softmax)\n" in captured.err
    assert captured.out.startswith("eightbit: accuracy ") and captured.out.count("\n") == 1


def test_weights_mode_without_a_report(tmp_path, capsys):
    out = tmp_path / "w.json"
    assert cli.main(["quantize", str(MLP), "--mode", "weights", "--out", str(out)]) == 0
    assert "weights: accuracy" in capsys.readouterr().out
    ops = [n.op for n in tf.load_graph_def(out).node]
    # Three kernels and two biases; logits/bias (10 values) is too small to be worth it.
    assert ops.count("Dequantize") == 5 and "QuantizedMatMul" not in ops


@pytest.mark.parametrize("args,message", [
    (["missing.json", "--mode", "eightbit"], "no such graph file"),
    ([str(MLP), "--mode", "weights", "--calibration", "10"],
     "--calibration N takes N >= 1 samples and applies to --mode eightbit only"),
    ([str(MLP), "--mode", "eightbit", "--calibration", "0"], "--calibration N takes N >= 1"),
    ([str(SAMPLES / "classic_add.json"), "--mode", "eightbit"],
     "no node 'images': --data digits feeds 'images' and reads 'probabilities'"),
])
def test_bad_input_is_one_line_with_status_2(tmp_path, capsys, args, message):
    rc = cli.main(["quantize", *args, "--out", str(tmp_path / "o.json")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("workbench: error: ") and message in err
    assert err.count("\n") == 1


def test_help_names_the_default_dataset(capsys):
    with pytest.raises(SystemExit):
        cli.main(["quantize", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default: digits" in text and "--calibration N" in text


def test_a_graphz_out_file_is_compact_and_compared_in_the_same_form(tmp_path, capsys):
    out, report = tmp_path / "mlp8.graphz", tmp_path / "report.json"
    assert cli.main(["quantize", str(MLP), "--mode", "weights", "--out", str(out),
                     "--report", str(report)]) == 0
    body = json.loads(report.read_text())
    assert out.read_bytes()[:4] == b"PK\x03\x04" and not (tmp_path / "mlp8.graphz.npz").exists()
    assert body["file_format"] == "compact" and body["quantized_bytes"] == out.stat().st_size
    # The float graph is counted as a compact file too, not as the shipped JSON one.
    assert body["bytes_by_format"]["compact"]["float_bytes"] == body["float_bytes"]
    assert body["float_bytes"] < MLP.stat().st_size + (SAMPLES / (MLP.name + ".npz")).stat().st_size
    json_sizes = body["bytes_by_format"]["json"]
    assert json_sizes["size_ratio"] > body["size_ratio"]
    # The report says which form both graphs were counted in.
    assert body["file_form"]["document_version"] == 3 and body["file_form"]["compression"] == \
        "lzma" and "same form" in body["file_form"]["compared"]
    assert (json_sizes["document_version"], json_sizes["compression"]) == (2, "none")
    assert body["bytes_by_format"]["compact"]["compression"] == "lzma"
    assert [n.name for n in tf.load_graph_def(out).node] == \
        [n.name for n in tf.load_graph_def(tmp_path / "mlp8.graphz").node]
