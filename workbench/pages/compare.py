"""Compare page (`/compare?a=A&b=B&node=NODE`): two runs side by side: the scalar tags they share
drawn overlaid, the structural diff of their graphs (nodes added, removed, changed) as a
summary and a table, and both graphs drawn by the Graph page's builder, painted by diff
status, with one selection: a node picked in either is revealed and inspected in both. The
two runs and the selected node are kept in the address."""

from __future__ import annotations

import dash
import dash_cytoscape as cyto
from dash import ALL, Input, Output, State, dcc, html, no_update
from dash.exceptions import PreventUpdate

from viz.graph_diff import (
    ADDED,
    CHANGED,
    REMOVED,
    STATUS_COLORS,
    UNCHANGED,
    graph_diff,
    painted,
    rows,
    side_statuses,
    summary,
)
from viz.graph_elements import cytoscape_layout, stylesheet
from viz.hierarchy import OP, reveal
from viz.scalars import curves_figure
from workbench import data, live
from workbench.inputs import BadInput, clipped, scope_list, text
from workbench.pages import graph as graph_page
from workbench.pages.common import (
    address,
    address_stores,
    address_value,
    answers,
    keep_zooms,
    labelled,
    live_changed,
    live_follow,
    live_ids,
    loading,
    message,
    page_header,
    polled,
    register_address,
    register_live,
    run_choices,
    run_notice,
    run_options,
    zoom_of,
)
from workbench.pages.graph_inspector import INSPECTOR_HINT

PATH = "/compare"
NAME = "Compare"
SIDES = ("a", "b")
SMOOTHING = 0.6
TABLE_ROWS = 200               # the diff table shows this many; the summary counts them all

QUERY_STORE = "compare-query-store"
A_DROPDOWN = "compare-a-dropdown"
B_DROPDOWN = "compare-b-dropdown"
NOTICE_TEXT = "compare-notice-text"
CURVES_DIV = "compare-curves-div"
CURVE_GRAPH = "compare-curve-graph"
CURVES_LOADING = "compare-curves-loading"
DIFF_SUMMARY = "compare-diff-summary"
DIFF_TABLE_DIV = "compare-diff-table-div"
SELECTED_STORE = "compare-selected-store"
SELECTED_TEXT = "compare-selected-text"
LIVE = live_ids("compare")
LIVE_PARTS = ("steps", "tags", "graph")
CANVAS_STYLE = {"width": "100%", "height": "calc(100vh - 310px)", "minHeight": "360px"}
# The dropdowns' code loads after the page: their place is kept from the start, so the
# canvases below do not move once drawn (cytoscape keeps where its canvas was).
CHOOSER_STYLE = {"height": "38px", "minWidth": "220px"}
DIFF_STYLE = [{"selector": f"node.leaf.diff-{status}",
               "style": {"border-width": 2, "border-color": STATUS_COLORS[status]}}
              for status in (ADDED, REMOVED, CHANGED)]
LEGEND = ((ADDED, "added (in B only)"), (REMOVED, "removed (in A only)"),
          (CHANGED, "changed"), (UNCHANGED, "unchanged"))


def ids(side: str) -> dict[str, str]:
    """The element ids of one side's graph panel."""
    return {part: f"compare-{side}-{part}" for part in (
        "view-store", "cytoscape", "message", "summary", "inspector")}


def _panel(side: str) -> html.Div:
    own = ids(side)
    return html.Div(className="compare-side", style={"flex": "1 1 0", "minWidth": 0}, children=[
        dcc.Store(id=own["view-store"]),
        html.Div(className="graph-status", children=[
            html.B(f"Run {side.upper()} "), html.Span(id=own["summary"], className="muted")]),
        html.Div(className="graph-canvas", children=[
            html.P("Loading graph…", id=own["message"], className="message graph-message"),
            cyto.Cytoscape(id=own["cytoscape"], elements=[],
                           stylesheet=stylesheet() + DIFF_STYLE, layout=cytoscape_layout(),
                           style=CANVAS_STYLE, minZoom=0.05, maxZoom=4,
                           boxSelectionEnabled=False, autounselectify=True,
                           autoRefreshLayout=False, responsive=True,
                           className="graph-cytoscape compare-cytoscape")]),
        html.Div(id=own["inspector"], className="graph-inspector compare-inspector",
                 style={"maxHeight": "360px", "marginTop": "8px"}, children=INSPECTOR_HINT),
    ])


def _legend() -> html.Div:
    return html.Div(className="compare-legend", style={
        "display": "flex", "gap": "12px", "fontSize": "12px", "margin": "0 0 4px"}, children=[
        html.Span(className="legend-item", children=[
            html.Span(className="legend-swatch",
                      style={"backgroundColor": STATUS_COLORS[status]}), label])
        for status, label in LEGEND])


def layout(a: str | None = None, b: str | None = None, node: str | None = None,
           **_query) -> html.Div:
    """The graphs come first and everything above them has a fixed height: cytoscape keeps
    where its canvas is on the page, so nothing above it may move once it is drawn (clicks
    would miss their nodes); the diff table and the curves load below them."""
    return html.Div([
        page_header("Compare", "Two runs side by side: the graphs' differences painted and "
                               "listed, shared curves overlaid; a node clicked in one graph "
                               "is selected in both."),
        dcc.Store(id=QUERY_STORE, data={"a": a, "b": b, "node": node}),
        dcc.Store(id=SELECTED_STORE, data=""), *address_stores("compare"),
        html.Div(className="controls", children=[
            labelled("Run A", html.Div(dcc.Dropdown(id=A_DROPDOWN, clearable=False),
                                       style=CHOOSER_STYLE)),
            labelled("Run B", html.Div(dcc.Dropdown(id=B_DROPDOWN, clearable=False),
                                       style=CHOOSER_STYLE)),
        ]),
        live_follow("compare", fixed=True),
        html.Div(className="graph-status", children=[
            html.Span(id=NOTICE_TEXT, className="notice-inline"),
            html.Span(id=DIFF_SUMMARY), " ",
            html.Span(id=SELECTED_TEXT, className="muted")]),
        _legend(),
        html.Div(className="compare-graphs", style={"display": "flex", "gap": "12px"},
                 children=[_panel(side) for side in SIDES]),
        html.H3("Graph differences"),
        html.Div(id=DIFF_TABLE_DIV, style={"maxHeight": "320px", "overflowY": "auto"}),
        html.H3("Shared scalars"),
        loading(CURVES_LOADING, html.Div(id=CURVES_DIV)),
    ])


def _asked(query) -> tuple:
    """The address's runs A and B (one value each)."""
    if not isinstance(query, dict):
        raise BadInput(f"the page address must be a mapping, got {clipped(query)}")
    return address_value(query.get("a")), address_value(query.get("b"))


@answers(lambda problem: ([], None, [], None, problem))
def run_choice(query) -> tuple[list[dict], str | None, list[dict], str | None, str]:
    """(options, A, options, B, notice): the address's runs where they exist, else the two
    newest healthy runs (readable ones when fewer than two are healthy)."""
    asked_a, asked_b = _asked(query)
    names, healthy = run_choices()
    preferred = healthy + [name for name in names if name not in healthy]
    a = asked_a if isinstance(asked_a, str) and asked_a in names else None
    b = asked_b if isinstance(asked_b, str) and asked_b in names else None
    a = a or next((name for name in preferred if name != b), None)
    b = b or next((name for name in preferred if name != a), a)
    options = run_options(names, frozenset(names) - frozenset(healthy))
    notes = [run_notice(asked, chosen) for asked, chosen in ((asked_a, a), (asked_b, b))]
    notes = [note for note in notes if note]
    if a is not None and a == b:
        notes.append(f"Both sides show {a}: choose another run for B.")
    return options, a, options, b, " ".join(notes)


def _runs(a, b) -> tuple[str, str] | None:
    if not a or not b:
        return None
    return data.check_name(a), data.check_name(b)


@answers(lambda problem: [message(problem)])
def curves(a, b, live_state=None) -> list:
    """One figure per scalar tag both runs logged, the two runs overlaid. After a poll
    (`live_state`) the plots stay (refresh_curves sets their new points in place, keeping the
    user's zoom) unless the runs' tags changed."""
    if live_state is not None and "tags" not in live_changed(live_state):
        return no_update
    chosen = _runs(a, b)
    if chosen is None:
        return [message("Choose two runs.")]
    a, b = chosen
    shared = sorted(set(data.tags(a)) & set(data.tags(b)))
    if not shared:
        return [message(f"{a} and {b} share no scalar tag.")]
    return [dcc.Graph(id={"type": CURVE_GRAPH, "tag": tag}, figure=_curve_figure(a, b, tag),
                      config={"displaylogo": False}) for tag in shared]


def _curve_figure(a: str, b: str, tag: str):
    figure = curves_figure({run: data.curve(run, tag, SMOOTHING) for run in (a, b)}, tag,
                           height=320)
    figure.update_layout(uirevision=tag)      # a drag's zoom stays across refreshes
    return figure


def _unchanged(_problem: str = ""):
    """A wildcard output takes a list or nothing: no update is PreventUpdate there."""
    raise PreventUpdate


@answers(_unchanged)
def refresh_curves(graph_ids, a, b, live_state=None, zooms=None) -> list:
    """After a poll (`live_state`) that saw new steps: each drawn curve's figure with the new
    points, set on its plot in place, with the user's zoom (`zooms`, the page's zoom store)
    stated on it. New tags rebuild the plots instead (curves)."""
    changed = live_changed(live_state)
    if live_state is None or "tags" in changed or not isinstance(graph_ids, list) or (
            not graph_ids):
        _unchanged()
    chosen = _runs(a, b)
    if chosen is None:
        _unchanged()
    shared = set(data.tags(chosen[0])) & set(data.tags(chosen[1]))
    figures = []
    for ident in graph_ids:
        tag = ident.get("tag") if isinstance(ident, dict) else None
        figures.append(live.kept_zoom(_curve_figure(*chosen, tag), zoom_of(zooms, ident))
                       if tag in shared
                       else no_update)
    return figures


def _refresh_input_last(graph_ids, a, b, live_state, zooms):
    return polled(lambda *got: refresh_curves(*got, zooms), LIVE["store"])(
        graph_ids, a, b, live_state)


def _diff(a: str, b: str):
    return graph_diff(data.graph(a), data.graph(b))


def _table(diff_rows: list[dict]) -> html.Table:
    header = html.Tr([html.Th(label) for label in ("Node", "Status", "What differs")])
    body = [html.Tr(className=f"diff-row diff-{row['status']}", children=[
        html.Td(row["name"]),
        html.Td(row["status"], style={"color": STATUS_COLORS[row["status"]]}),
        html.Td(row["detail"])]) for row in diff_rows[:TABLE_ROWS]]
    return html.Table(className="runs-table compare-diff-table",
                      children=[html.Thead(header), html.Tbody(body)])


@answers(lambda problem: (problem, []))
def diff_view(a, b, live=None) -> tuple[str, list]:
    """(summary, the table of added, removed and changed nodes); after a poll (`live`) only
    when a graph changed."""
    if live is not None and "graph" not in live_changed(live):
        return no_update, no_update
    chosen = _runs(a, b)
    if chosen is None:
        return "Choose two runs.", []
    a, b = chosen
    record_a, record_b = data.graph(a), data.graph(b)
    missing = [run for run, record in ((a, record_a), (b, record_b)) if record is None]
    if missing:
        return f"Run {' and '.join(missing)} recorded no graph: nothing to compare.", []
    diff = graph_diff(record_a, record_b)
    found = rows(diff)
    if not found:
        return summary(diff), []
    more = [html.P(f"… and {len(found) - TABLE_ROWS} more.", className="muted")] if len(
        found) > TABLE_ROWS else []
    return summary(diff), [_table(found), *more]


def _name_of(run: str, ident: str) -> str | None:
    """The node name (or scope path) a drawn id stands for in `run`'s graph."""
    tree = data.hierarchy(run)
    group = tree.groups.get(ident)
    if group is None:
        return None
    if group.kind != OP:
        return ident
    return graph_page._name_of(run, ident)


@answers(lambda _problem: no_update)
def select(trigger, tap_a, tap_b, a, b, query=None):
    """The selected node name: a tap in either graph picks its node; a new run clears it,
    but the address's node is chosen while the runs are the address's."""
    if trigger not in (ids("a")["cytoscape"], ids("b")["cytoscape"]):
        asked = query if isinstance(query, dict) else {}
        node = address_value(asked.get("node"))
        same = (a, b) == _asked(asked) and node is not None
        return text(node, "the node in the address") if same else ""
    side_run, tap = (a, tap_a) if trigger == ids("a")["cytoscape"] else (b, tap_b)
    target = graph_page.tapped(tap)
    if not side_run or target is None:
        return no_update
    run = data.check_name(side_run)
    if data.graph(run) is None:
        return no_update
    name = _name_of(run, target[0])
    return no_update if name is None else name


def update_selection(tap_a, tap_b, a, b, query):
    return select(dash.ctx.triggered_id, tap_a, tap_b, a, b, query)


@answers(lambda _problem: no_update)
def view_address(a, b, selected) -> str:
    """The address of the two runs shown and the selected node, as the page reads it."""
    return address(PATH, {"a": data.check_name(a) if a else None,
                          "b": data.check_name(b) if b else None,
                          "node": text(selected, "the selected node") or None})


def _target(run: str, name: str) -> tuple[str, bool] | None:
    """(id in this run's drawing, whether it is a group) for a node name or scope path."""
    tree = data.hierarchy(run)
    if name in tree.op_ids:
        return tree.op_ids[name], False
    group = tree.groups.get(name)
    if group is not None and group.kind != OP:
        return name, True
    return None


def _styles(selected_id: str) -> list[dict]:
    """The Graph page's stylesheet, the diff outlines, then its selection outline (last, so
    it shows over them)."""
    base = stylesheet()
    return base + DIFF_STYLE + graph_page.selection_style(selected_id)[len(base):]


@answers(lambda _problem: (no_update, stylesheet() + DIFF_STYLE))
def side_state(side: str, a, b, selected, current, live=None) -> tuple:
    """(the side's view: runs, graph version and expanded groups, its stylesheet): the
    Graph page's first view (data.graph_first_view), opened down to the selected node (and
    a selected scope itself); the view stays as it is (no redraw) when only the outline
    moves, or a poll (`live`) saw no graph change."""
    if live is not None and "graph" not in live_changed(live):
        return no_update, no_update
    chosen = _runs(a, b)
    if chosen is None:
        return {"a": None, "b": None, "expanded": []}, stylesheet() + DIFF_STYLE
    run = chosen[SIDES.index(side)]
    if data.graph(run) is None:
        view = {"a": chosen[0], "b": chosen[1], "expanded": []}
        return (no_update if view == current else view), stylesheet() + DIFF_STYLE
    name = text(selected, "the selected node") if selected else ""
    expanded = data.graph_first_view(run)
    found = _target(run, name) if name else None
    selected_id = ""
    if found is not None:
        selected_id, is_group = found
        expanded = reveal(data.hierarchy(run), expanded, name) | (
            {selected_id} if is_group else set())
    view = {"a": chosen[0], "b": chosen[1], "expanded": sorted(expanded),
            "version": data.graph(run).version}
    return (no_update if view == current else view), _styles(selected_id)


def _drawn(problem: str) -> tuple:
    return [], cytoscape_layout(), problem, {"display": "block"}, ""


@answers(lambda problem: _drawn(problem))
def draw_side(side: str, view) -> tuple:
    """(elements, layout, message, message style, summary): the Graph page's drawing of
    this side's run at this expansion, leaves painted by their diff status."""
    if not isinstance(view, dict):
        raise BadInput(f"the view must be a mapping, got {clipped(view)}")
    chosen = _runs(view.get("a"), view.get("b"))
    if chosen is None:
        return _drawn("Choose two runs.")
    run = chosen[SIDES.index(side)]
    expanded = scope_list(view.get("expanded")) or []
    elements, _legend_items, problem, _style, drawn_summary, _layout = graph_page.draw(
        run, expanded, graph_page.DEFAULT_COLOR_MODE, None, [])
    if problem:
        return _drawn(problem)
    tree_view = data.view(run, frozenset(expanded))
    members = {node.id: node.members for node in tree_view.nodes if not node.expanded}
    statuses = side_statuses(_diff(*chosen), side)
    shown = painted(elements, members, statuses)
    return (shown, graph_page.drawn_layout(shown), "", {"display": "none"},
            f"{run}: {drawn_summary}")


@answers(lambda problem: message(problem))
def inspect_side(side: str, a, b, selected):
    """The inspector of the selected node in this side's run, or why it has none."""
    chosen = _runs(a, b)
    name = text(selected, "the selected node") if selected else ""
    if chosen is None or not name:
        return INSPECTOR_HINT
    run = chosen[SIDES.index(side)]
    if data.graph(run) is None:
        return message(f"Run {run} recorded no graph.")
    found = _target(run, name)
    if found is None:
        return message(f"{clipped(name)} is not in {run}'s graph.")
    return graph_page.inspect(run, found[0], None)


def selected_text(selected) -> str:
    if not isinstance(selected, str) or not selected:
        return "Click a node in either graph to select it in both."
    return f"Selected: {clipped(selected, 200)}"


def _side_callbacks(app: dash.Dash, side: str) -> None:
    own = ids(side)
    app.callback(Output(own["view-store"], "data"), Output(own["cytoscape"], "stylesheet"),
                 Input(A_DROPDOWN, "value"), Input(B_DROPDOWN, "value"),
                 Input(SELECTED_STORE, "data"), State(own["view-store"], "data"),
                 Input(LIVE["store"], "data"))(polled(
        lambda a, b, selected, current, live: side_state(side, a, b, selected, current, live),
        LIVE["store"]))
    app.callback(Output(own["cytoscape"], "elements"), Output(own["cytoscape"], "layout"),
                 Output(own["message"], "children"), Output(own["message"], "style"),
                 Output(own["summary"], "children"), Input(own["view-store"], "data"))(
        lambda view: draw_side(side, view))
    app.callback(Output(own["inspector"], "children"), Input(A_DROPDOWN, "value"),
                 Input(B_DROPDOWN, "value"), Input(SELECTED_STORE, "data"))(
        lambda a, b, selected: inspect_side(side, a, b, selected))


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(A_DROPDOWN, "options"), Output(A_DROPDOWN, "value"),
                 Output(B_DROPDOWN, "options"), Output(B_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(CURVES_DIV, "children"), Input(A_DROPDOWN, "value"),
                 Input(B_DROPDOWN, "value"), Input(LIVE["store"], "data"))(
        polled(curves, LIVE["store"]))
    app.callback(Output({"type": CURVE_GRAPH, "tag": ALL}, "figure"),
                 State({"type": CURVE_GRAPH, "tag": ALL}, "id"), State(A_DROPDOWN, "value"),
                 State(B_DROPDOWN, "value"), Input(LIVE["store"], "data"),
                 State(LIVE["zoom"], "data"), prevent_initial_call=True)(_refresh_input_last)
    keep_zooms(app, "compare", {"type": CURVE_GRAPH, "tag": ALL})
    app.callback(Output(DIFF_SUMMARY, "children"), Output(DIFF_TABLE_DIV, "children"),
                 Input(A_DROPDOWN, "value"), Input(B_DROPDOWN, "value"),
                 Input(LIVE["store"], "data"))(polled(diff_view, LIVE["store"]))
    app.callback(Output(SELECTED_STORE, "data"), Input(ids("a")["cytoscape"], "tapNodeData"),
                 Input(ids("b")["cytoscape"], "tapNodeData"), Input(A_DROPDOWN, "value"),
                 Input(B_DROPDOWN, "value"), State(QUERY_STORE, "data"))(update_selection)
    app.callback(Output(SELECTED_TEXT, "children"), Input(SELECTED_STORE, "data"))(
        selected_text)
    for side in SIDES:
        _side_callbacks(app, side)
    register_address(app, "compare", PATH, view_address, Input(A_DROPDOWN, "value"),
                     Input(B_DROPDOWN, "value"), Input(SELECTED_STORE, "data"))
    register_live(app, "compare", (A_DROPDOWN, B_DROPDOWN), LIVE_PARTS)
