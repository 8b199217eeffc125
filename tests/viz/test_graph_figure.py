"""The graph figure: per-device legend, distinct cut edges, clickable customdata, scopes
as squares, WebGL only for big views."""

from __future__ import annotations

import plotly.graph_objects as go
from viz_records import GPU1, make_node

from engine.record.schema import DeviceRecord, GraphRecord
from viz.graph_figure import CUT_CONTROL_LEGEND, CUT_LEGEND, SVG_NODE_LIMIT, graph_figure
from viz.layout import layered_layout
from viz.scopes import all_scopes, scope_view


def figure_for(view, devices=(), selected=""):
    positions = layered_layout([n.name for n in view.nodes], [(e.src, e.dst) for e in view.edges])
    return graph_figure(view, positions, devices, selected=selected)


def traces_named(figure, name):
    return [trace for trace in figure.data if trace.name == name]


def test_one_legend_entry_per_device_and_a_cut_entry(mlp):
    graph, placements = mlp
    records = [DeviceRecord(GPU1, "GPU", 1, "virtual GPU backed by host memory", True)]
    figure = figure_for(scope_view(graph, placements, all_scopes(graph)), records)
    legend = [t.name for t in figure.data if t.showlegend is not False]
    assert legend == [CUT_LEGEND, CUT_CONTROL_LEGEND, "CPU:0", "GPU:0", "GPU:1 (virtual)"]
    cut = traces_named(figure, CUT_LEGEND)[0]
    assert cut.line.dash == "dash" and cut.line.width > 1
    # Two data edges cross devices, each drawn as x0, x1, None; one control edge does too.
    assert len(cut.x) == 6
    assert len(traces_named(figure, CUT_CONTROL_LEGEND)[0].x) == 3
    plain = traces_named(figure, "edges")[0]
    assert len(plain.x) == 3 * 7
    virtual = traces_named(figure, "GPU:1 (virtual)")[0]
    assert virtual.marker.line.width == 2


def test_nodes_carry_name_and_kind_for_clicks(mlp):
    graph, placements = mlp
    figure = figure_for(scope_view(graph, placements, {"layer1"}))
    cpu = traces_named(figure, "CPU:0")[0]
    custom = {tuple(row) for row in cpu.customdata}
    assert ("layer1/MatMul", "op") in custom
    assert ("layer1/weights", "scope") in custom
    symbols = dict(zip([row[0] for row in cpu.customdata], cpu.marker.symbol, strict=True))
    assert symbols["layer1/weights"] == "square"
    assert symbols["layer1/MatMul"] == "circle"
    hover = dict(zip([row[0] for row in cpu.customdata], cpu.hovertext, strict=True))
    assert "op: MatMul" in hover["layer1/MatMul"] and "CPU:0" in hover["layer1/MatMul"]
    assert isinstance(cpu, go.Scatter)


def test_selected_node_gets_a_ring(mlp):
    graph, placements = mlp
    figure = figure_for(scope_view(graph, placements, all_scopes(graph)), selected="loss/Mean")
    ring = traces_named(figure, "selected")
    assert len(ring) == 1 and ring[0].marker.symbol == "circle-open"


def test_big_views_switch_to_webgl():
    count = SVG_NODE_LIMIT + 1
    nodes = tuple(make_node(f"n{i}", "Add", (f"n{i - 1}",) if i else ()) for i in range(count))
    view = scope_view(GraphRecord(1, nodes), [], ())
    figure = figure_for(view)
    assert all(isinstance(trace, go.Scattergl) for trace in figure.data)
    assert traces_named(figure, "unplaced")[0].mode == "markers"


def test_small_views_are_svg_with_labels(mlp):
    graph, placements = mlp
    figure = figure_for(scope_view(graph, placements, ()))
    gpu0 = traces_named(figure, "GPU:0")[0]
    assert isinstance(gpu0, go.Scatter)
    assert list(gpu0.text) == ["layer2/ (3)"]


def test_control_only_edges_get_their_own_dotted_entry():
    nodes = (make_node("a", "Const"), make_node("b", "NoOp", ("^a",)))
    figure = figure_for(scope_view(GraphRecord(1, nodes), [], ()))
    control = traces_named(figure, "control dependency")
    assert len(control) == 1 and control[0].line.dash == "dot"
    assert traces_named(figure, CUT_LEGEND) == []
