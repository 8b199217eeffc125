"""Inspector details for ops and scopes; placement rows, log text and filtering."""

from __future__ import annotations

import pytest
from viz_records import CPU0, GPU0

from engine.record.schema import SOFT_FALLBACK
from viz.inspector import format_shape, node_details
from viz.placement import filter_placement_rows, placement_log_text, placement_rows


def test_op_details(mlp):
    graph, placements = mlp
    details = node_details(graph, placements, "layer1/MatMul")
    assert details["kind"] == "op"
    assert details["op"] == "MatMul"
    assert details["assigned"] == CPU0
    assert details["reason"] == "default"
    assert details["inputs"] == [
        {"name": "x", "control": False, "dtype": "float32", "shape": "[?, 4]"},
        {"name": "layer1/weights/read", "control": False, "dtype": "float32", "shape": "[4, 4]"},
    ]
    assert details["outputs"] == [{"index": 0, "dtype": "float32", "shape": "[?, 4]"}]
    assert details["stack"] == ["model.py:1 in build_MatMul"]


def test_soft_fallback_details(mlp):
    graph, placements = mlp
    details = node_details(graph, placements, "layer2/weights")
    assert details["requested"] == "/device:GPU:3"
    assert details["assigned"] == GPU0
    assert details["reason"] == SOFT_FALLBACK
    assert "GPU:3" in details["detail"]


def test_control_inputs_have_no_tensor(mlp):
    graph, placements = mlp
    inputs = node_details(graph, placements, "layer2/Relu")["inputs"]
    assert inputs[1] == {"name": "^layer1/Relu", "control": True, "dtype": "",
                         "shape": "<unknown>"}


def test_scope_details_summarise_members(mlp):
    graph, placements = mlp
    details = node_details(graph, placements, "layer1")
    assert details["kind"] == "scope"
    assert details["members"] == 4
    assert details["devices"] == [(CPU0, 4)]
    assert details["ops"][0] == ("Identity", 1)
    as_scope = node_details(graph, placements, "layer1/weights", as_scope=True)
    assert as_scope["member_names"] == ["layer1/weights", "layer1/weights/read"]
    assert node_details(graph, placements, "layer1/weights")["kind"] == "op"


def test_unknown_name_is_a_key_error(mlp):
    graph, placements = mlp
    with pytest.raises(KeyError, match="nope"):
        node_details(graph, placements, "nope")


def test_shapes():
    assert format_shape(None) == "<unknown>"
    assert format_shape(()) == "[]"
    assert format_shape((None, 3)) == "[?, 3]"


def test_placement_rows_and_log(mlp):
    _, placements = mlp
    rows = placement_rows(placements)
    assert len(rows) == 10
    flagged = [row["node"] for row in rows if row["soft_fallback"]]
    assert flagged == ["layer2/weights"]
    text = placement_log_text(placements)
    assert text.splitlines()[3] == f"layer1/MatMul: (MatMul): {CPU0}"


def test_placement_filtering(mlp):
    _, placements = mlp
    rows = placement_rows(placements)
    assert [r["node"] for r in filter_placement_rows(rows, "matmul")] == [
        "layer1/MatMul", "layer2/MatMul"]
    assert len(filter_placement_rows(rows, devices=[GPU0])) == 3
    assert [r["node"] for r in filter_placement_rows(rows, reasons=[SOFT_FALLBACK])] == [
        "layer2/weights"]
    assert filter_placement_rows(rows, "matmul", devices=[GPU0])[0]["node"] == "layer2/MatMul"
    assert filter_placement_rows(rows) == rows


def test_step_details_sum_the_steps_runs_and_keep_each_watched_outputs_latest_summary():
    """The inspector's step part: this step's executions, time and output bytes of the node,
    and for each watched output "name:i" its latest statistics at or before the step (other
    nodes' tensors, and names that only start the same, are not its own)."""
    from engine.record.schema import OpStatRecord, TensorSummaryRecord
    from viz.inspector import step_details

    def summary(node, step, mean):
        return TensorSummaryRecord(node, step, "float32", (2,), 2, 0.0, 1.0, mean, 0.5)
    stats = [OpStatRecord(3, "loss/Log", "Log", CPU0, 10.0, 14.0, 8),
             OpStatRecord(3, "loss/Log", "Log", CPU0, 20.0, 21.5, 8),
             OpStatRecord(3, "loss/Mean", "Mean", CPU0, 0.0, 99.0, 4)]
    watched = [summary("loss/Log:0", 1, 0.1), summary("loss/Log:0", 3, 0.3),
               summary("loss/Log:0", 5, 0.5), summary("loss/Log:1", 2, 0.2),
               summary("loss/Logits:0", 3, 9.0), summary("loss/Log", 3, 9.0)]
    details = step_details("loss/Log", 3, stats, watched)
    assert (details["step"], details["executions"], details["time_us"], details["bytes"]) == (
        3, 2, 5.5, 16)
    assert [(s.node, s.step, s.mean) for s in details["summaries"]] == [
        ("loss/Log:0", 3, 0.3), ("loss/Log:1", 2, 0.2)]
    latest = step_details("loss/Log", None, [], watched)
    assert latest["executions"] == 0 and [s.step for s in latest["summaries"]] == [5, 2]
