"""Graph page (`/graph`): the recorded graph as a layered DAG coloured by assigned device,
Send/Recv cut edges marked, name scopes collapsible, and an inspector for the clicked node."""

from __future__ import annotations

import zlib

import dash
from dash import Input, Output, State, dcc, html, no_update
from plotly.graph_objects import Figure

from viz.graph_figure import graph_figure
from viz.inspector import node_details, node_stats
from viz.message import message_figure
from viz.scopes import OP, SCOPE, expand_level
from workbench import data
from workbench.inputs import click_target, scope_list, text
from workbench.pages.common import (
    answers,
    choose_run,
    labelled,
    loading,
    message,
    page_header,
    run_choices,
    run_notice,
    run_options,
)
from workbench.pages.graph_inspector import INSPECTOR_HINT, inspector_panel

PATH = "/graph"
NAME = "Graph"

RUN_DROPDOWN = "graph-run-dropdown"
QUERY_STORE = "graph-query-store"
NODE_QUERY_STORE = "graph-node-query-store"
EXPANDED_STORE = "graph-expanded-store"
SELECTED_STORE = "graph-selected-store"
COLLAPSE_BUTTON = "graph-collapse-button"
EXPAND_BUTTON = "graph-expand-button"
DAG_GRAPH = "graph-dag-graph"
DAG_LOADING = "graph-dag-loading"
SUMMARY_TEXT = "graph-summary-text"
NOTICE_TEXT = "graph-notice-text"
INSPECTOR_DIV = "graph-inspector-div"
INSPECTOR_LOADING = "graph-inspector-loading"


def layout(run: str | None = None, node: str | None = None, step: str | None = None,
           **_query) -> html.Div:
    return html.Div([
        page_header("Graph", "Data flows from the top down. Nodes are coloured by the device "
                             "they ran on; dashed red edges cross devices (a Send/Recv pair)."),
        dcc.Store(id=QUERY_STORE, data=run),
        dcc.Store(id=NODE_QUERY_STORE, data={"run": run, "node": node, "step": step}),
        dcc.Store(id=EXPANDED_STORE),
        dcc.Store(id=SELECTED_STORE, data=""),
        html.Div(className="controls", children=[
            labelled("Run", dcc.Dropdown(id=RUN_DROPDOWN, clearable=False)),
            html.Button("Collapse all", id=COLLAPSE_BUTTON, className="button"),
            html.Button("Expand a level", id=EXPAND_BUTTON, className="button"),
            html.Span(id=SUMMARY_TEXT, className="muted"),
        ]),
        html.P(id=NOTICE_TEXT, className="message notice"),
        html.Div(className="graph-layout", children=[
            html.Div(className="graph-canvas", children=loading(DAG_LOADING, dcc.Graph(
                id=DAG_GRAPH, figure=message_figure("Loading graph…"),
                config={"scrollZoom": True, "displaylogo": False,
                        "modeBarButtonsToRemove": ["lasso2d", "select2d", "autoScale2d"]}))),
            html.Div(className="graph-inspector", children=loading(
                INSPECTOR_LOADING, html.Div(id=INSPECTOR_DIV, children=INSPECTOR_HINT))),
        ]),
    ])


@answers(lambda problem: ([], None, problem))
def run_choice(requested: str | None) -> tuple[list[dict], str | None, str]:
    """(options, the run to show, a notice when it is not the one asked for): the
    requested run, else the newest healthy one, else the newest readable one."""
    names, healthy = run_choices()
    chosen = choose_run(names, requested, healthy)
    options = run_options(names, frozenset(names) - frozenset(healthy))
    return options, chosen, run_notice(requested, chosen)


def clicked(click: dict | None) -> tuple[str, str] | None:
    """(name, kind) of the clicked node; None when the click was not on a node."""
    return click_target(click)


def requested_node(query: dict | None, run: str) -> tuple[str, str | None] | None:
    """(node, step text) from `/graph?run=R&node=N&step=S` when R is the run shown and N one
    of its graph's nodes (an address from the Timeline page); None otherwise."""
    if not isinstance(query, dict) or query.get("run") not in (None, "", run):
        return None
    node = text(query.get("node"), "the node in the address")
    graph = data.graph(run)
    if not node or graph is None or all(record.name != node for record in graph.nodes):
        return None
    step = query.get("step")
    digits = isinstance(step, str) and step.isascii() and step.isdigit() and len(step) < 20
    return node, step if digits else None


def _enclosing_scopes(node: str) -> set[str]:
    parts = node.split("/")
    return {"/".join(parts[:k]) for k in range(1, len(parts))}


@answers(lambda _problem: [])
def next_expanded(trigger: str | None, run: str | None, click: dict | None,
                  current: list[str] | None, query: dict | None = None) -> list[str]:
    """The expanded scopes after `trigger`: a new run gets its default, the buttons collapse
    all or open one more level, a click on a collapsed scope opens that scope. Only the
    graph's own scopes are kept, whatever the page sent back."""
    if not run:
        return []
    run = data.check_name(run)
    current = scope_list(current)
    if trigger == COLLAPSE_BUTTON:
        return []
    if trigger == EXPAND_BUTTON and current is not None:
        graph = data.graph(run)
        if graph is None:
            return []
        return sorted(expand_level(graph, set(current) & data.scopes(run)))
    if trigger == DAG_GRAPH and current is not None:
        target = clicked(click)
        if target is None or target[1] != SCOPE:
            return no_update
        return sorted((set(current) | {target[0]}) & data.scopes(run))
    reveal = requested_node(query, run)
    opened = _enclosing_scopes(reveal[0]) & data.scopes(run) if reveal else set()
    return sorted(data.default_expanded(run) | opened)


def update_expanded(run, _collapse, _expand, click, current, query=None):
    return next_expanded(dash.ctx.triggered_id, run, click, current, query)


@answers(lambda problem: (message_figure(problem), ""))
def dag_figure(run: str | None, expanded: list[str] | None, selected: str) -> tuple[Figure, str]:
    if not run:
        return message_figure("No readable run in the log directory."), ""
    run = data.check_name(run)
    expanded = scope_list(expanded) or ()
    selected = text(selected, "the selected node")
    graph = data.graph(run)
    if graph is None:
        return message_figure(f"Run {run} recorded no graph."), ""
    view, positions = data.graph_view(run, frozenset(expanded))
    figure = graph_figure(view, positions, data.devices(run), selected=selected)
    # Same run and scopes -> same revision, so selecting a node keeps the user's zoom.
    figure.update_layout(uirevision=f"{run}:{zlib.crc32(' '.join(sorted(view.expanded)).encode())}")
    cuts = sum(edge.cut for edge in view.edges)
    summary = (f"graph version {graph.version}: {len(view.nodes)} of {len(graph.nodes)} nodes "
               f"shown, {cuts} cross-device edges")
    return figure, summary


def _stats_of(run: str, step: str | None) -> list:
    """Op stats of the step asked for when it was traced, else of the latest traced step."""
    if step is not None and int(step) in data.traced_steps(run):
        return data.step_trace(run, int(step)).stats
    return data.last_traced_stats(run)


@answers(lambda problem: (message(problem), ""))
def inspect(trigger: str | None, click: dict | None, run: str | None,
            query: dict | None = None):
    """(inspector children, selected node) for a click; a new run clears both, except that
    the node in the address (`node=`) is selected when its run is shown."""
    target = clicked(click) if trigger == DAG_GRAPH else None
    step = None
    if run and target is None and trigger != DAG_GRAPH:
        asked = requested_node(query, data.check_name(run))
        if asked is not None:
            target, step = (asked[0], OP), asked[1]
    if not run or target is None:
        return INSPECTOR_HINT, ""
    run = data.check_name(run)
    name, kind = target
    graph = data.graph(run)
    if graph is None:
        return INSPECTOR_HINT, ""
    try:
        details = node_details(graph, data.placements(run, graph.version), name,
                               as_scope=kind == SCOPE)
    except KeyError as exc:
        return message(exc.args[0] if exc.args else str(exc)), ""
    if kind != SCOPE:
        details["stats"] = node_stats(_stats_of(run, step), name)
    return inspector_panel(details), name if kind != SCOPE else ""


def update_inspector(click, run, query=None):
    return inspect(dash.ctx.triggered_id, click, run, query)


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(EXPANDED_STORE, "data"),
                 Input(RUN_DROPDOWN, "value"), Input(COLLAPSE_BUTTON, "n_clicks"),
                 Input(EXPAND_BUTTON, "n_clicks"), Input(DAG_GRAPH, "clickData"),
                 State(EXPANDED_STORE, "data"), State(NODE_QUERY_STORE, "data"))(
        update_expanded)
    app.callback(Output(INSPECTOR_DIV, "children"), Output(SELECTED_STORE, "data"),
                 Input(DAG_GRAPH, "clickData"), Input(RUN_DROPDOWN, "value"),
                 State(NODE_QUERY_STORE, "data"), prevent_initial_call=True)(update_inspector)
    app.callback(Output(DAG_GRAPH, "figure"), Output(SUMMARY_TEXT, "children"),
                 Input(RUN_DROPDOWN, "value"), Input(EXPANDED_STORE, "data"),
                 Input(SELECTED_STORE, "data"))(dag_figure)
