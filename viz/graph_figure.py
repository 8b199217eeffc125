"""The graph picture: a plotly figure of a GraphView at given positions. Edges are one trace
per style (same-device, control, Send/Recv cut), nodes one trace per device for the legend."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import plotly.graph_objects as go

from engine.record.schema import DeviceRecord
from viz.colors import VIRTUAL_OUTLINE, legend_entries
from viz.scopes import SCOPE, GraphView, VisibleEdge, VisibleNode

SVG_NODE_LIMIT = 3000          # above this, WebGL; below, points stay clickable DOM elements
LABEL_NODE_LIMIT = 160         # above this, names only on hover
EDGE_COLOR = "#a7b0bc"
CUT_COLOR = "#d62728"
CUT_LEGEND = "Send/Recv cut"
CONTROL_LEGEND = "control dependency"
CUT_CONTROL_LEGEND = "control across devices"
SELECTED_COLOR = "#111111"

Position = tuple[float, float]


def _segments(
    edges: Iterable[VisibleEdge], positions: Mapping[str, Position]
) -> tuple[list, list]:
    xs: list = []
    ys: list = []
    for edge in edges:
        (x0, y0), (x1, y1) = positions[edge.src], positions[edge.dst]
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    return xs, ys


def _edge_trace(scatter: type, edges: list[VisibleEdge], positions: Mapping[str, Position],
                name: str, line: dict, showlegend: bool) -> go.Scatter:
    xs, ys = _segments(edges, positions)
    return scatter(x=xs, y=ys, mode="lines", line=line, name=name, hoverinfo="skip",
                   showlegend=showlegend)


def edge_style(edge: VisibleEdge) -> str:
    """Which edge trace draws this edge: crossings are red, control-only edges dotted."""
    if edge.data_cut:
        return CUT_LEGEND
    if edge.cut:
        return CUT_CONTROL_LEGEND
    return CONTROL_LEGEND if edge.control else "edges"


EDGE_LINES = {
    "edges": {"color": EDGE_COLOR, "width": 1},
    CONTROL_LEGEND: {"color": EDGE_COLOR, "width": 1, "dash": "dot"},
    CUT_LEGEND: {"color": CUT_COLOR, "width": 2.2, "dash": "dash"},
    CUT_CONTROL_LEGEND: {"color": CUT_COLOR, "width": 1, "dash": "dot"},
}


def edge_traces(view: GraphView, positions: Mapping[str, Position], webgl: bool = False) -> list:
    """Same-device data edges (one faint trace, always present), then one trace per other
    style that occurs: control dependencies, Send/Recv cuts, control edges across devices."""
    scatter = go.Scattergl if webgl else go.Scatter
    by_style: dict[str, list[VisibleEdge]] = {style: [] for style in EDGE_LINES}
    for edge in view.edges:
        by_style[edge_style(edge)].append(edge)
    return [
        _edge_trace(scatter, edges, positions, style, EDGE_LINES[style], style != "edges")
        for style, edges in by_style.items() if edges or style == "edges"
    ]


def short_name(node: VisibleNode) -> str:
    """The last two name components, because the last alone repeats ("weights" in every
    layer); a scope adds "/" and its size."""
    tail = "/".join(node.name.split("/")[-2:])
    return f"{tail}/ ({node.members})" if node.kind == SCOPE else tail


def label_positions(group: Sequence[VisibleNode], positions: Mapping[str, Position]) -> list:
    """Labels alternate below and above their node along a row, so neighbours in a crowded
    row do not print over each other."""
    return ["bottom center" if math.floor(positions[node.name][0]) % 2 == 0 else "top center"
            for node in group]


def figure_height(positions: Mapping[str, Position]) -> int:
    """Room for every row (48 px each) within [360, 1800] px; taller graphs scroll-zoom."""
    rows = len({y for _, y in positions.values()})
    return max(360, min(1800, 120 + 48 * rows))


def hover_text(node: VisibleNode, label_of: Mapping[str, str]) -> str:
    if node.kind == SCOPE:
        spread = ", ".join(f"{label_of.get(dev, dev)} x{count}" for dev, count in node.devices)
        return f"<b>{node.name}/</b><br>scope, {node.members} nodes<br>devices: {spread}"
    return f"<b>{node.name}</b><br>op: {node.op}<br>device: {label_of.get(node.device, '')}"


def _marker_size(node: VisibleNode) -> float:
    return 18 + 3 * math.log2(node.members) if node.kind == SCOPE else 11


def node_traces(view: GraphView, positions: Mapping[str, Position],
                devices: Sequence[DeviceRecord] = (), webgl: bool = False) -> list:
    """One trace per device; customdata = [name, kind] so a click can tell scope from op."""
    scatter = go.Scattergl if webgl else go.Scatter
    entries = legend_entries((node.device for node in view.nodes), devices)
    label_of = {entry.device: entry.label for entry in entries}
    with_text = len(view.nodes) <= LABEL_NODE_LIMIT
    traces = []
    for entry in entries:
        # Ops before scopes: the legend draws its swatch like the trace's first point.
        group = sorted((node for node in view.nodes if node.device == entry.device),
                       key=lambda node: node.kind == SCOPE)
        outline = {"color": VIRTUAL_OUTLINE if entry.virtual else "white",
                   "width": 2 if entry.virtual else 1}
        traces.append(scatter(
            x=[positions[node.name][0] for node in group],
            y=[positions[node.name][1] for node in group],
            mode="markers+text" if with_text else "markers",
            text=[short_name(node) for node in group] if with_text else None,
            textposition=label_positions(group, positions) if with_text else None,
            textfont={"size": 10, "color": "#444"},
            marker={"color": entry.color, "line": outline,
                    "size": [_marker_size(node) for node in group],
                    "symbol": ["square" if node.kind == SCOPE else "circle" for node in group]},
            customdata=[[node.name, node.kind] for node in group],
            hovertext=[hover_text(node, label_of) for node in group],
            hoverinfo="text",
            name=entry.label,
            legendgroup=entry.device,
        ))
    return traces


def _selected_trace(node: VisibleNode, positions: Mapping[str, Position]) -> go.Scatter:
    x, y = positions[node.name]
    return go.Scatter(
        x=[x], y=[y], mode="markers", hoverinfo="skip", showlegend=False, name="selected",
        marker={"size": _marker_size(node) + 10, "color": "rgba(0,0,0,0)",
                "symbol": "square-open" if node.kind == SCOPE else "circle-open",
                "line": {"color": SELECTED_COLOR, "width": 2}},
    )


def graph_figure(view: GraphView, positions: Mapping[str, Position],
                 devices: Sequence[DeviceRecord] = (), selected: str = "",
                 height: int | None = None) -> go.Figure:
    """The DAG: inputs at the top, one row per layer; a collapsed scope is a square."""
    webgl = len(view.nodes) > SVG_NODE_LIMIT
    traces = edge_traces(view, positions, webgl) + node_traces(view, positions, devices, webgl)
    chosen = [node for node in view.nodes if node.name == selected]
    if chosen and not webgl:
        traces.append(_selected_trace(chosen[0], positions))
    figure = go.Figure(data=traces)
    hidden_axis = {"visible": False, "showgrid": False, "zeroline": False}
    figure.update_layout(
        height=height or figure_height(positions), margin={"l": 10, "r": 10, "t": 40, "b": 10},
        plot_bgcolor="white", paper_bgcolor="white", hovermode="closest", dragmode="pan",
        xaxis=hidden_axis, yaxis=hidden_axis, clickmode="event",
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0,
                "itemsizing": "constant"},
    )
    return figure
