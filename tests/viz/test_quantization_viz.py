"""viz.quantization: SQNR colour bins around the threshold, the painted elements (lowest
SQNR of the members' original nodes, the flagged leaf marked), the cells of the cost table
and the comparison's summary line."""

from __future__ import annotations

import math

import pytest

from engine.record.schema import (
    QuantizationComparisonRecord,
    QuantizationCostRecord,
    QuantizationNodeRecord,
)
from viz import quantization as vq


def node(name, sqnr, quantized=(), flagged=False):
    return QuantizationNodeRecord(name, "MatMul", (quantized or (name,))[-1],
                                  tuple(quantized) or (name,), 0, (2,), 0.1, 0.2, sqnr, 0.9,
                                  (0.0, 1.0), (1.0,), (1.0,), (0.0, 1.0), (1.0,), flagged)


def test_bins_around_the_threshold():
    labels = [b.label for b in vq.sqnr_bins(20.0)]
    assert labels == ["< 20 dB", "20–30 dB", "30–40 dB", "40–50 dB", "≥ 50 dB", "exact",
                      "not compared"]
    assert vq.sqnr_bin(19.99, 20.0).label == "< 20 dB"
    assert vq.sqnr_bin(20.0, 20.0).label == "20–30 dB"
    assert vq.sqnr_bin(35.0, 20.0).label == "30–40 dB"
    assert vq.sqnr_bin(500.0, 20.0).label == "≥ 50 dB"
    assert vq.sqnr_bin(math.inf, 20.0).label == "exact"
    assert vq.sqnr_bin(-math.inf, 20.0).label == "< 20 dB"
    assert vq.sqnr_bin(None, 20.0).label == "not compared"
    assert vq.format_db(math.inf) == "∞ (exact)" and vq.format_db(12.345) == "12.35 dB"


def test_painting_takes_the_lowest_sqnr_and_marks_the_flagged_leaf():
    record = QuantizationComparisonRecord(
        "c", 1, 2, 20.0, "mm", (node("x", math.inf), node("mm", 12.0, ("mm/q", "mm/r"), True),
                                node("relu", 25.0, ("relu/q",))))
    elements = [
        {"data": {"id": "a", "color": "", "text": ""}, "classes": "leaf"},
        {"data": {"id": "b", "color": "", "text": ""}, "classes": "leaf scope"},
        {"data": {"id": "c", "color": "", "text": ""}, "classes": "leaf"},
        {"data": {"id": "box"}, "classes": "box"},
    ]
    members = {"a": ("mm/q",), "b": ("relu/q", "mm/r"), "c": ("other",)}
    painted = vq.painted_by_sqnr(elements, members, record, vq.QUANTIZED)
    a, b, c, box = painted
    assert a["data"]["original"] == "mm" and "flagged" in a["classes"]
    assert b["data"]["original"] == "mm" and b["data"]["color"] == vq.BELOW_COLOR
    assert c["data"]["color"] == vq.UNCOMPARED_COLOR and "flagged" not in c["classes"]
    assert box == elements[3] and elements[0]["data"]["color"] == ""   # copies
    assert vq.owners(record, vq.ORIGINAL) == {"x": "x", "mm": "mm", "relu": "relu"}
    with pytest.raises(ValueError, match="side must be"):
        vq.owners(record, "left")


def test_cost_cells_and_summary():
    cost = QuantizationCostRecord("digits_mlp", "eightbit", 0.9654, 11_264, 0.2587, 1520.0,
                                  812.0, 0.5, 1.25)
    assert vq.cost_rows([cost]) == [("digits_mlp", "eightbit", "96.5%", "11.0 KB", "0.259",
                                     "1.52 ms", "0.50×", "812 µs", "1.25×")]
    record = QuantizationComparisonRecord(
        "c", 1, 2, 20.0, "mm", (node("x", math.inf), node("mm", 12.0)), {"s": "string"})
    assert vq.summary(record) == ("c: 2 nodes compared, 1 exact; lowest SQNR 12.00 dB at mm; "
                                  "first below 20 dB: mm; 1 not compared.")
    rows = dict(vq.metrics_rows(record.nodes[1], 20.0))
    assert rows["SQNR"] == "12.00 dB: below the threshold (20 dB)"
    figure = vq.outputs_figure(record.nodes[1])
    assert [t.name for t in figure.data] == ["original", "quantized"]
    assert list(vq.error_figure(record.nodes[1]).data[0].x) == [0.5]


def test_the_node_figures_built_unchecked_are_ones_plotly_accepts():
    """outputs_figure and error_figure skip plotly.py's per-property checks for speed: the
    checked rebuild of each equals it (every property one plotly knows, each value one it
    accepts), and neither carries plotly.py's template."""
    import json

    import plotly.graph_objects as go
    record = QuantizationNodeRecord(
        "dense/Relu", "Relu", "dense/Relu_eightbit", ("dense/Relu_eightbit",), 3, (4, 2),
        0.1, 0.2, 31.5, 0.99, (0.0, 1.0, 3.0), (5.0, 2.0), (4.0, 3.0), (-0.5, 0.0, 0.5),
        (1.0, 6.0), False)
    outputs, error = vq.outputs_figure(record), vq.error_figure(record)
    for figure in (outputs, error):
        checked = go.Figure(figure.to_plotly_json())
        assert json.loads(checked.to_json()) == json.loads(figure.to_json())
        assert len(figure.layout.template.to_plotly_json().get("layout", {})) == 0
    assert [t.name for t in outputs.data] == ["original", "quantized"]
    assert list(outputs.data[0].x) == [0.5, 2.0] and list(outputs.data[0].width) == [1.0, 2.0]
    assert list(outputs.data[1].y) == [4.0, 3.0] and outputs.layout.barmode == "overlay"
    assert list(error.data[0].y) == [1.0, 6.0] and list(error.data[0].x) == [-0.25, 0.25]
    assert outputs.layout.title.text == "dense/Relu: output values"
    assert error.layout.showlegend is False and error.layout.xaxis.title.text == "error"
