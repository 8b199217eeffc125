"""Quantization page (`/quantization?run=NAME&comparison=C&node=N&open=SCOPE,SCOPE`): the cost
table (accuracy,
file size, speed of each quantized form against float), then the original and quantized graphs
side by side, drawn as the Graph page draws graphs (a collapsed scope or series is one node
with its size; a click opens or closes it in both graphs), painted by SQNR (a collapsed scope
by its worst member's) with the flagged node (or the scope holding it) marked, one selection
for both; the selected node's two output histograms, its error histogram and its metrics
below. While the run is being written the page follows it (the shared live poll). The run,
the comparison, the selected node and the open scopes are kept in the address."""

from __future__ import annotations

import json

import dash
import dash_cytoscape as cyto
from dash import Input, Output, State, dcc, html, no_update

from viz.graph_elements import cytoscape_layout, graph_elements, stylesheet
from viz.hierarchy import OP
from viz.quantization import (
    COST_COLUMNS,
    ORIGINAL,
    QUANTIZED,
    SIDES,
    cost_rows,
    error_figure,
    flagged_style,
    holding_leaves,
    metrics_rows,
    outputs_figure,
    painted_by_sqnr,
    sqnr_bins,
    summary,
)
from workbench import data
from workbench.inputs import BadInput, clipped, optional_text, scope_list, text
from workbench.pages import graph as graph_page
from workbench.pages.common import (
    PROBLEMS,
    address,
    address_stores,
    address_value,
    address_values,
    answers,
    labelled,
    live_changed,
    live_follow,
    live_ids,
    message,
    page_header,
    polled,
    register_address,
    register_live,
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
EXPANDED_STORE = "quantization-expanded-store"     # the open groups, one list for both sides
LIVE = live_ids("quantization")
LIVE_PARTS = ("quantization",)
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


def layout(run: str | None = None, comparison: str | None = None, node: str | None = None,
           open: str | None = None, **_query) -> html.Div:  # noqa: A002 -- the address's name
    """The graphs keep a fixed place (cytoscape keeps where its canvas was): the cost table
    above them has a bounded height, the details load below."""
    return html.Div([
        page_header("Quantization", "What quantizing cost and gained, and node by node where "
                                    "the quantized graph departs from the original (SQNR: "
                                    "signal over noise power). Click a node in either graph."),
        dcc.Store(id=QUERY_STORE, data={"run": run, "comparison": comparison, "node": node,
                                         "open": open}),
        dcc.Store(id=SELECTED_STORE, data=""), *address_stores("quantization"),
        dcc.Store(id=EXPANDED_STORE),
        html.Div(className="controls", children=[
            labelled("Run", html.Div(dcc.Dropdown(id=RUN_DROPDOWN, clearable=False),
                                     style=CHOOSER_STYLE)),
            labelled("Comparison", html.Div(dcc.Dropdown(id=COMPARISON_DROPDOWN,
                                                         clearable=False),
                                            style=CHOOSER_STYLE)),
        ]),
        html.Span(id=NOTICE_TEXT, className="notice-inline"),
        live_follow("quantization", fixed=True),
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
    """The address's run and node (one value each)."""
    if not isinstance(query, dict):
        raise BadInput(f"the page address must be a mapping, got {clipped(query)}")
    return address_value(query.get("run")), address_value(query.get("node"))


def _asked_comparison(run: str, query) -> str | None:
    """The comparison the address names when it names this run (or none)."""
    if not isinstance(query, dict):
        return None
    asked, _node = _asked(query)
    return address_value(query.get("comparison")) if asked in (None, run) else None


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


def _polled_quietly(live_state) -> bool:
    """A poll that saw nothing this page shows change (its comparisons, costs, graphs)."""
    return live_state is not None and not live_changed(live_state) & {
        "quantization", "status", "runs"}


@answers(lambda problem: ([], None))
def comparison_choice(run, current=None, shown=None, live_state=None, query=None
                      ) -> tuple[list[dict], str | None]:
    """The run's comparisons by name (each name once), the address's (`query`) when it
    names one of this run's, else the latest. After a poll
    (`live_state`) a newer comparison is chosen when the latest was (or none), else the
    user's stays; what did not change is not sent again (it would redraw both graphs)."""
    if not run:
        return [], None
    if _polled_quietly(live_state):
        return no_update, no_update
    names = list(dict.fromkeys(c.name for c in data.quantization_comparisons(
        data.check_name(run))))
    options = [{"label": name, "value": name} for name in names]
    newest = names[-1] if names else None
    if live_state is None:
        asked = _asked_comparison(data.check_name(run), query)
        return options, asked if asked in names else newest
    known = [o.get("value") for o in shown if isinstance(o, dict)] if isinstance(
        shown, list) else []
    follows = current is None or not known or current == known[-1] or current not in names
    chosen = newest if follows else current
    return (no_update if known == names else options,
            no_update if chosen == current else chosen)


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
def costs(run, live_state=None):
    """The cost table of the run (every model it measured); a quiet poll sends nothing."""
    if not run:
        return message("No readable run in the log directory.")
    if _polled_quietly(live_state):
        return no_update
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


def _version(record, side: str) -> int:
    return (record.original_graph_version if side == ORIGINAL
            else record.quantized_graph_version)


def _opened(run: str, record, expanded) -> frozenset[str]:
    """The open groups the store holds (None: both graphs' first views, joined)."""
    if expanded is None:
        return frozenset().union(*(data.version_first_view(run, _version(record, side))
                                   for side in SIDES))
    return frozenset(scope_list(expanded) or ())


@answers(lambda problem: _drawn(problem))
def draw_side(side: str, run, comparison, expanded=None) -> tuple:
    """(elements, layout, message, message style, summary): the side's graph as the Graph
    page draws it for the open groups `expanded` (None: its first view), by the Graph page's
    builder; each leaf (an op, or a collapsed scope or series) painted by the lowest SQNR of
    the original nodes it stands for, the one holding the flagged node marked. The layout
    is kept per (graph version, expansion) and the painted drawing per (comparison,
    side, expansion), so an expansion seen before, or another comparison of the same
    graphs, is not laid out again."""
    if side not in SIDES:
        raise BadInput(f"the side must be one of {', '.join(SIDES)}, got {clipped(side)}")
    found, problem = _comparison(run, comparison)
    if found is None:
        return _drawn(problem)
    run, record = found
    drawing = _drawing(run, record, side, expanded)
    if drawing is None:
        version = _version(record, side)
        return _drawn(f"Run {run} has no graph version {version} (the {side} graph).")
    shown, line = drawing
    return shown, graph_page.drawn_layout(shown), "", {"display": "none"}, line


def _drawing(run: str, record, side: str, expanded) -> tuple[list[dict], str] | None:
    """(painted elements, summary line) of one side, or None when the run lacks its graph
    version; only the version's own groups reach the keys."""
    version = _version(record, side)
    opened = data.version_view(run, version, _opened(run, record, expanded))
    if opened is None:
        return None
    graph, view = opened

    def painted() -> tuple[list[dict], str]:
        elements = data.version_elements(run, version, view.expanded,
                                         lambda: graph_elements(view, graph, ())[0])
        members = {node.id: node.members for node in view.nodes if not node.expanded}
        return (painted_by_sqnr(elements, members, record, side),
                f"graph version {version}: {len(members)} drawn for {len(graph.nodes)} nodes")
    return data.quantization_drawing(run, record.seq, side, view.expanded, painted)


def _groups(run: str, record) -> frozenset[str]:
    """The scopes and series of both graphs."""
    trees = [data.version_hierarchy(run, _version(record, side)) for side in SIDES]
    return frozenset().union(*(tree.groups.keys() for tree in trees if tree))


def _address_open(run: str, query, known: frozenset[str]) -> frozenset[str] | None:
    """The groups of `known` the address opens (`open=a,b`; `open=`: none) when it names this
    run (or none); None when it says nothing."""
    if not isinstance(query, dict) or query.get("open") is None:
        return None
    asked, _node = _asked(query)
    opened = query["open"]
    if asked not in (None, run):
        return None
    if not isinstance(opened, (str, list)):
        raise BadInput(f"the open scopes in the address must be text, got {clipped(opened)}")
    return frozenset(address_values(opened, known)) & known


@answers(lambda _problem: no_update)
def expansion(trigger, tap_original, tap_quantized, run, comparison, current, query=None
              ) -> list[str]:
    """The open groups of both graphs (a scope or series open in one is open in the other
    where it has it): a new run or comparison opens the address's groups (`query`'s `open`)
    when it names this run, else both graphs' first views; a tap on a collapsed scope or
    series opens it, on an open one's box closes it; a tap on an op changes nothing here."""
    found, _problem = _comparison(run, comparison)
    if found is None:
        return []
    run, record = found
    trees = {side: data.version_hierarchy(run, _version(record, side)) for side in SIDES}
    taps = {ids(ORIGINAL)["cytoscape"]: (ORIGINAL, tap_original),
            ids(QUANTIZED)["cytoscape"]: (QUANTIZED, tap_quantized)}
    known = _groups(run, record)
    if not (isinstance(trigger, str) and trigger in taps):
        asked = _address_open(run, query, known)
        return sorted(_opened(run, record, None) if asked is None else asked)
    side, tap = taps[trigger]
    target, tree = graph_page.tapped(tap), trees[side]
    if target is None or tree is None or target[0] not in tree.groups or (
            tree.groups[target[0]].kind == OP):
        return no_update
    current = frozenset(scope_list(current) or ()) & known
    return sorted(current ^ {target[0]})


def update_expansion(tap_original, tap_quantized, run, comparison, current, query):
    return expansion(dash.ctx.triggered_id, tap_original, tap_quantized, run, comparison,
                     current, query)


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


def side_style(selected, side: str | None = None, run=None, comparison=None,
               expanded=None) -> list[dict]:
    """The stylesheet with the selected node outlined: every leaf standing for it and, on
    `side` (for the open groups `expanded`), the collapsed scope or series holding it."""
    base = stylesheet() + flagged_style()
    name = text(selected, "the selected node") if isinstance(selected, str) else ""
    if not name:
        return base
    outlined = [f"node[original = {json.dumps(name)}]"]
    found = _comparison(run, comparison)[0] if side in SIDES and run else None
    if found is not None:
        run, record = found
        opened = data.version_view(run, _version(record, side), _opened(run, record, expanded))
        if opened is not None:
            outlined += [f"node[id = {json.dumps(leaf)}]"
                         for leaf in holding_leaves(record, side, opened[1].rep, name)]
    return base + [{"selector": selector, "style": SELECTED_STYLE} for selector in outlined]


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


def _comparison_input(run, current, shown, query, live_state):
    return comparison_choice(run, current, shown, live_state, query)


@answers(lambda _problem: no_update)
def view_address(run, comparison, selected, expanded=None) -> str:
    """The address of the run, comparison, selected node and open groups shown, as the page
    reads it: the open groups only when they are not both graphs' first views (`open=`
    with nothing after it: all closed)."""
    run = data.check_name(run) if run else None
    query = {"run": run, "comparison": optional_text(comparison, "the comparison"),
             "node": optional_text(selected, "the selected node"), "open": None}
    found = _comparison(run, query["comparison"])[0] if run and expanded is not None else None
    if found is not None:
        record = found[1]
        opened = sorted(frozenset(scope_list(expanded) or ()) & _groups(run, record))
        if opened != sorted(_opened(run, record, None)):
            query["open"] = opened or ""
    return address(PATH, query)


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(COMPARISON_DROPDOWN, "options"), Output(COMPARISON_DROPDOWN, "value"),
                 Input(RUN_DROPDOWN, "value"), State(COMPARISON_DROPDOWN, "value"),
                 State(COMPARISON_DROPDOWN, "options"), State(QUERY_STORE, "data"),
                 Input(LIVE["store"], "data"))(polled(_comparison_input, LIVE["store"]))
    app.callback(Output(COSTS_DIV, "children"), Input(RUN_DROPDOWN, "value"),
                 Input(LIVE["store"], "data"))(polled(costs, LIVE["store"]))
    app.callback(Output(SUMMARY_TEXT, "children"), Output(LEGEND_DIV, "children"),
                 Input(RUN_DROPDOWN, "value"), Input(COMPARISON_DROPDOWN, "value"))(overview)
    app.callback(Output(SELECTED_STORE, "data"),
                 Input(ids(ORIGINAL)["cytoscape"], "tapNodeData"),
                 Input(ids(QUANTIZED)["cytoscape"], "tapNodeData"),
                 Input(RUN_DROPDOWN, "value"), Input(COMPARISON_DROPDOWN, "value"),
                 State(QUERY_STORE, "data"))(update_selection)
    app.callback(Output(EXPANDED_STORE, "data"),
                 Input(ids(ORIGINAL)["cytoscape"], "tapNodeData"),
                 Input(ids(QUANTIZED)["cytoscape"], "tapNodeData"),
                 Input(RUN_DROPDOWN, "value"), Input(COMPARISON_DROPDOWN, "value"),
                 State(EXPANDED_STORE, "data"), State(QUERY_STORE, "data"))(update_expansion)
    app.callback(Output(DETAILS_DIV, "children"), Input(RUN_DROPDOWN, "value"),
                 Input(COMPARISON_DROPDOWN, "value"), Input(SELECTED_STORE, "data"))(details)
    for side in SIDES:
        own = ids(side)
        app.callback(Output(own["cytoscape"], "elements"), Output(own["cytoscape"], "layout"),
                     Output(own["message"], "children"), Output(own["message"], "style"),
                     Output(own["summary"], "children"), Input(EXPANDED_STORE, "data"),
                     State(RUN_DROPDOWN, "value"), State(COMPARISON_DROPDOWN, "value"))(
            lambda expanded, run, comparison, side=side: draw_side(side, run, comparison,
                                                                   expanded))
        app.callback(Output(own["cytoscape"], "stylesheet"), Input(SELECTED_STORE, "data"),
                     Input(EXPANDED_STORE, "data"), State(RUN_DROPDOWN, "value"),
                     State(COMPARISON_DROPDOWN, "value"))(
            lambda selected, expanded, run, comparison, side=side: _guarded_style(
                selected, side, run, comparison, expanded))
    register_address(app, "quantization", PATH, view_address, Input(RUN_DROPDOWN, "value"),
                     Input(COMPARISON_DROPDOWN, "value"), Input(SELECTED_STORE, "data"),
                     Input(EXPANDED_STORE, "data"))
    register_live(app, "quantization", (RUN_DROPDOWN,), LIVE_PARTS)


@answers(lambda _problem: stylesheet() + flagged_style())
def _guarded_style(selected, side=None, run=None, comparison=None, expanded=None
                   ) -> list[dict]:
    return side_style(selected, side, run, comparison, expanded)
