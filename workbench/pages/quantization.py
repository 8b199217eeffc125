"""Quantization page (`/quantization?run=NAME&node=N`): the cost table (accuracy, file size,
speed of each quantized form against float), then the original and quantized graphs side by
side, painted by each node's SQNR with the flagged node marked, one selection for both; the
selected node's two output histograms, its error histogram and its metrics below."""

from __future__ import annotations

import json

import dash
import dash_cytoscape as cyto
from dash import Input, Output, State, dcc, html, no_update

from viz.graph_elements import cytoscape_layout, graph_elements, stylesheet
from viz.quantization import (
    COST_COLUMNS,
    ORIGINAL,
    QUANTIZED,
    SIDES,
    cost_rows,
    error_figure,
    flagged_style,
    metrics_rows,
    outputs_figure,
    painted_by_sqnr,
    sqnr_bins,
    summary,
)
from workbench import data
from workbench.inputs import BadInput, clipped, optional_text, text
from workbench.pages import graph as graph_page
from workbench.pages.common import (
    PROBLEMS,
    answers,
    labelled,
    message,
    page_header,
    run_choices,
    run_notice,
    run_options,
)

PATH = "/quantization"
NAME = "Quantization"

QUERY_STORE = "quantization-query-store"
RUN_DROPDOWN = "quantization-run-dropdown"
COMPARISON_DROPDOWN = "quantization-comparison-dropdown"
NOTICE_TEXT = "quantization-notice-text"
COSTS_DIV = "quantization-costs-div"
SUMMARY_TEXT = "quantization-summary-text"
LEGEND_DIV = "quantization-legend-div"
SELECTED_STORE = "quantization-selected-store"
DETAILS_DIV = "quantization-details-div"
CANVAS_STYLE = {"width": "100%", "height": "480px"}
CHOOSER_STYLE = {"height": "38px", "minWidth": "260px"}
SELECTED_STYLE = {"border-width": 4, "border-color": "#111111", "border-style": "solid",
                  "border-opacity": 1}
TITLES = {ORIGINAL: "Original graph", QUANTIZED: "Quantized graph"}


def ids(side: str) -> dict[str, str]:
    """The element ids of one side's graph panel."""
    return {part: f"quantization-{side}-{part}" for part in ("cytoscape", "message", "summary")}


def _panel(side: str) -> html.Div:
    own = ids(side)
    return html.Div(className="quantization-side", style={"flex": "1 1 0", "minWidth": 0},
                    children=[
        html.Div(className="graph-status", children=[
            html.B(TITLES[side] + " "), html.Span(id=own["summary"], className="muted")]),
        html.Div(className="graph-canvas", children=[
            html.P("Loading graph…", id=own["message"], className="message graph-message"),
            cyto.Cytoscape(id=own["cytoscape"], elements=[],
                           stylesheet=stylesheet() + flagged_style(),
                           layout=cytoscape_layout(), style=CANVAS_STYLE, minZoom=0.05,
                           maxZoom=4, boxSelectionEnabled=False, autounselectify=True,
                           autoRefreshLayout=False, responsive=True,
                           className="graph-cytoscape quantization-cytoscape")]),
    ])


def layout(run: str | None = None, node: str | None = None, **_query) -> html.Div:
    """The graphs keep a fixed place (cytoscape keeps where its canvas was): the cost table
    above them has a bounded height, the details load below."""
    return html.Div([
        page_header("Quantization", "What quantizing cost and gained, and node by node where "
                                    "the quantized graph departs from the original (SQNR: "
                                    "signal over noise power). Click a node in either graph."),
        dcc.Store(id=QUERY_STORE, data={"run": run, "node": node}),
        dcc.Store(id=SELECTED_STORE, data=""),
        html.Div(className="controls", children=[
            labelled("Run", html.Div(dcc.Dropdown(id=RUN_DROPDOWN, clearable=False),
                                     style=CHOOSER_STYLE)),
            labelled("Comparison", html.Div(dcc.Dropdown(id=COMPARISON_DROPDOWN,
                                                         clearable=False),
                                            style=CHOOSER_STYLE)),
        ]),
        html.Span(id=NOTICE_TEXT, className="notice-inline"),
        html.Div(id=COSTS_DIV, style={"maxHeight": "220px", "overflowY": "auto"}),
        html.Div(className="graph-status", children=[html.Span(id=SUMMARY_TEXT)]),
        html.Div(id=LEGEND_DIV, style={"display": "flex", "flexWrap": "wrap", "gap": "10px",
                                       "fontSize": "12px", "margin": "0 0 4px",
                                       "minHeight": "18px"}),
        html.Div(className="quantization-graphs", style={"display": "flex", "gap": "12px"},
                 children=[_panel(side) for side in SIDES]),
        html.Div(id=DETAILS_DIV, className="quantization-details"),
    ])


def _asked(query) -> tuple:
    if not isinstance(query, dict):
        raise BadInput(f"the page address must be a mapping, got {clipped(query)}")
    return query.get("run"), query.get("node")


def _compared_or_none(name: str) -> list:
    try:
        return data.quantization_comparisons(name)
    except PROBLEMS:
        return []


@answers(lambda problem: ([], None, problem))
def run_choice(query) -> tuple[list[dict], str | None, str]:
    """(options, run, notice): the address's run where it exists, else the newest run that
    recorded a comparison (the newest healthy run when none did)."""
    asked, _node = _asked(query)
    names, healthy = run_choices()
    options = run_options(names, frozenset(names) - frozenset(healthy))
    if isinstance(asked, str) and asked in names:
        return options, asked, ""
    chosen = next((name for name in healthy if _compared_or_none(name)), None)
    chosen = chosen or (healthy or names or [None])[0]
    return options, chosen, run_notice(asked, chosen)


@answers(lambda problem: ([], None))
def comparison_choice(run) -> tuple[list[dict], str | None]:
    """The run's comparisons by name (each name once), the latest chosen."""
    if not run:
        return [], None
    names = list(dict.fromkeys(c.name for c in data.quantization_comparisons(
        data.check_name(run))))
    return [{"label": name, "value": name} for name in names], (names[-1] if names else None)


def _comparison(run, comparison):
    """(run, the comparison record) or a reason there is none."""
    if not run:
        return None, "No readable run in the log directory."
    run = data.check_name(run)
    name = optional_text(comparison, "the comparison")
    if not data.quantization_comparisons(run):
        return None, (f"Run {run} recorded no quantization comparison. Record one with "
                      "engine.compression.record_comparison(writer, graph, quantized, feeds).")
    return (run, data.quantization_comparison(run, name)), ""


@answers(lambda problem: message(problem))
def costs(run):
    """The cost table of the run (every model it measured)."""
    if not run:
        return message("No readable run in the log directory.")
    found = data.quantization_costs(data.check_name(run))
    if not found:
        return message("This run recorded no cost table (engine.compression.report.cost_table "
                       "measures one; RunWriter.quantization_costs records it).")
    header = html.Tr([html.Th(label) for label in COST_COLUMNS])
    body = [html.Tr([html.Td(cell) for cell in row], className="quantization-cost-row")
            for row in cost_rows(found)]
    return html.Table(className="runs-table quantization-costs-table",
                      children=[html.Thead(header), html.Tbody(body)])


@answers(lambda problem: (problem, []))
def overview(run, comparison) -> tuple[str, list]:
    """(the comparison's one-line summary, the SQNR legend)."""
    found, problem = _comparison(run, comparison)
    if found is None:
        return problem, []
    record = found[1]
    items = [html.Span(className="legend-item", children=[
        html.Span(className="legend-swatch", style={"backgroundColor": shown.color}),
        shown.label]) for shown in sqnr_bins(record.threshold_db)]
    items.append(html.Span(className="legend-item", children=[
        html.Span(className="legend-swatch legend-flagged",
                  style={"border": "3px double #111111"}), "flagged: first below"]))
    return summary(record), items


def _drawn(problem: str) -> tuple:
    return [], cytoscape_layout(), problem, {"display": "block"}, ""


@answers(lambda problem: _drawn(problem))
def draw_side(side: str, run, comparison) -> tuple:
    """(elements, layout, message, message style, summary): the side's graph with every
    scope open, drawn by the Graph page's builder, leaves painted by SQNR."""
    if side not in SIDES:
        raise BadInput(f"the side must be one of {', '.join(SIDES)}, got {clipped(side)}")
    found, problem = _comparison(run, comparison)
    if found is None:
        return _drawn(problem)
    run, record = found
    version = (record.original_graph_version if side == ORIGINAL
               else record.quantized_graph_version)
    opened = data.open_view(run, version)
    if opened is None:
        return _drawn(f"Run {run} has no graph version {version} (the {side} graph).")
    graph, view = opened
    elements, _legend = graph_elements(view, graph, ())
    members = {node.id: node.members for node in view.nodes if not node.expanded}
    shown = painted_by_sqnr(elements, members, record, side)
    return (shown, graph_page.drawn_layout(shown), "", {"display": "none"},
            f"graph version {version}: {len(graph.nodes)} nodes")


def _compared(record, name) -> str | None:
    name = optional_text(name, "the node")
    return name if name and any(n.original == name for n in record.nodes) else None


@answers(lambda _problem: no_update)
def select(trigger, tap_original, tap_quantized, run, comparison, query):
    """The selected original node: a tap in either graph picks the node the tapped leaf
    stands for; a new run or comparison takes the address's node, else the flagged one,
    else the one with the lowest SQNR."""
    found, _problem = _comparison(run, comparison)
    if found is None:
        return ""
    record = found[1]
    taps = {ids(ORIGINAL)["cytoscape"]: tap_original, ids(QUANTIZED)["cytoscape"]: tap_quantized}
    if isinstance(trigger, str) and trigger in taps:
        tap = taps[trigger]
        if graph_page.tapped(tap) is None:
            return no_update
        picked = _compared(record, tap.get("original"))
        return no_update if picked is None else picked
    _run, asked = _asked(query)
    return _compared(record, asked) or record.flagged or _worst(record)


def _worst(record) -> str:
    """The compared node with the lowest SQNR short of exact ("" when all are exact)."""
    inexact = [n for n in record.nodes if n.sqnr_db != float("inf")]
    return min(inexact, key=lambda n: n.sqnr_db).original if inexact else ""


def update_selection(tap_original, tap_quantized, run, comparison, query):
    return select(dash.ctx.triggered_id, tap_original, tap_quantized, run, comparison, query)


def side_style(selected) -> list[dict]:
    """The stylesheet with every leaf standing for the selected node outlined."""
    base = stylesheet() + flagged_style()
    name = text(selected, "the selected node") if isinstance(selected, str) else ""
    if not name:
        return base
    return base + [{"selector": f"node[original = {json.dumps(name)}]", "style": SELECTED_STYLE}]


@answers(lambda problem: message(problem))
def details(run, comparison, selected):
    """The selected node's metrics, its two outputs' histograms and its error histogram."""
    found, problem = _comparison(run, comparison)
    if found is None:
        return message(problem)
    record = found[1]
    name = text(selected, "the selected node") if selected else ""
    if not name:
        return message("Click a node in either graph to see its outputs and error.")
    node = next((n for n in record.nodes if n.original == name), None)
    if node is None:
        why = record.skipped.get(name, "it was not compared")
        return message(f"{clipped(name, 200)}: not compared ({why}).")
    table = html.Table(className="quantization-metrics", children=[html.Tbody([
        html.Tr([html.Th(label), html.Td(value)])
        for label, value in metrics_rows(node, record.threshold_db)])])
    graphs = html.Div(style={"display": "flex", "gap": "12px"}, children=[
        html.Div(dcc.Graph(id="quantization-outputs-graph", figure=outputs_figure(node),
                           config={"displaylogo": False}), style={"flex": "1 1 0"}),
        html.Div(dcc.Graph(id="quantization-error-graph", figure=error_figure(node),
                           config={"displaylogo": False}), style={"flex": "1 1 0"})])
    return html.Div([html.H3(f"Selected: {node.original}"), table, graphs])


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(COMPARISON_DROPDOWN, "options"), Output(COMPARISON_DROPDOWN, "value"),
                 Input(RUN_DROPDOWN, "value"))(comparison_choice)
    app.callback(Output(COSTS_DIV, "children"), Input(RUN_DROPDOWN, "value"))(costs)
    app.callback(Output(SUMMARY_TEXT, "children"), Output(LEGEND_DIV, "children"),
                 Input(RUN_DROPDOWN, "value"), Input(COMPARISON_DROPDOWN, "value"))(overview)
    app.callback(Output(SELECTED_STORE, "data"),
                 Input(ids(ORIGINAL)["cytoscape"], "tapNodeData"),
                 Input(ids(QUANTIZED)["cytoscape"], "tapNodeData"),
                 Input(RUN_DROPDOWN, "value"), Input(COMPARISON_DROPDOWN, "value"),
                 State(QUERY_STORE, "data"))(update_selection)
    app.callback(Output(DETAILS_DIV, "children"), Input(RUN_DROPDOWN, "value"),
                 Input(COMPARISON_DROPDOWN, "value"), Input(SELECTED_STORE, "data"))(details)
    for side in SIDES:
        own = ids(side)
        app.callback(Output(own["cytoscape"], "elements"), Output(own["cytoscape"], "layout"),
                     Output(own["message"], "children"), Output(own["message"], "style"),
                     Output(own["summary"], "children"), Input(RUN_DROPDOWN, "value"),
                     Input(COMPARISON_DROPDOWN, "value"))(
            lambda run, comparison, side=side: draw_side(side, run, comparison))
        app.callback(Output(own["cytoscape"], "stylesheet"), Input(SELECTED_STORE, "data"))(
            _guarded_style)


@answers(lambda _problem: stylesheet() + flagged_style())
def _guarded_style(selected) -> list[dict]:
    return side_style(selected)
