"""Graph page (`/graph?run=NAME&step=N&node=NODE&color=MODE&partition=1&open=SCOPE,SCOPE
&search=REGEX&zoom=Z&pan=X,Y`): the recorded graph drawn with
dash-cytoscape as TensorBoard draws it (expanded scopes and series as boxes, collapsed ones
as counted nodes, edges routed around boxes, all laid out on the server and sent with the
page), coloured by device, op type or a step's time or bytes, a partition view by device
with labelled Send/Recv cuts, regex search, an inspector for the selected node, and SVG/PNG
export. The run, step, selected node, colour, partition view, open scopes, the search last
run and the pan and zoom (graph_viewport) are kept in the address as they change, so a reload
or a copied address shows the same view."""

from __future__ import annotations

import json
import re

import dash
import dash_cytoscape as cyto
from dash import Input, Output, State, dcc, html, no_update

from viz.graph_elements import (
    COLOR_MODES,
    DEFAULT_COLOR_MODE,
    DEVICE_BOX,
    TASK_BOX,
    cytoscape_layout,
    graph_elements,
    step_facts,
    stylesheet,
)
from viz.graph_svg import graph_svg
from viz.hierarchy import OP, expand_level_within, reveal, search
from viz.inspector import group_details, node_stats, op_details, step_details
from viz.search_pattern import UnsafePattern
from workbench import data
from workbench.inputs import MAX_TEXT, BadInput, clipped, optional_text, scope_list, text
from workbench.pages.common import (
    address,
    address_stores,
    address_value,
    address_values,
    answers,
    choose_run,
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
from workbench.pages.graph_inspector import INSPECTOR_HINT, inspector_panel
from workbench.pages.graph_viewport import KEPT, MAX_ZOOM, MIN_ZOOM, address_viewport, restored

PATH = "/graph"
NAME = "Graph"

RUN_DROPDOWN = "graph-run-dropdown"
STEP_DROPDOWN = "graph-step-dropdown"
COLOR_DROPDOWN = "graph-color-dropdown"
PARTITION_CHECK = "graph-partition-checklist"
SEARCH_INPUT = "graph-search-input"
SEARCH_BUTTON = "graph-search-button"
SEARCH_TEXT = "graph-search-text"
SEARCH_STORE = "graph-search-store"    # the search last run, for the address
EXPORT_TEXT = "graph-export-text"
QUERY_STORE = "graph-query-store"
EXPANDED_STORE = "graph-expanded-store"
SELECTED_STORE = "graph-selected-store"
COLLAPSE_BUTTON = "graph-collapse-button"
EXPAND_BUTTON = "graph-expand-button"
SVG_BUTTON = "graph-svg-button"
PNG_BUTTON = "graph-png-button"
SVG_DOWNLOAD = "graph-svg-download"
DAG_GRAPH = "graph-dag-graph"          # the canvas's frame: the message or the drawing
DAG_MESSAGE = "graph-dag-message"
CYTO = "graph-cytoscape"
LEGEND_DIV = "graph-legend-div"
SUMMARY_TEXT = "graph-summary-text"
NOTICE_TEXT = "graph-notice-text"
INSPECTOR_DIV = "graph-inspector-div"
LIVE = live_ids("graph")
LIVE_PARTS = ("graph", "traced", "steps")
PARTITION = "partition"
STEPS_SHOWN = 500              # the step chooser lists the latest this many steps
MAX_STEP = 10**18              # SQLite's integers are 64-bit
EXPAND_LIMIT = 300             # "Expand a level" stops opening scopes past this many nodes
# The drawing fills the window below the controls and the run-status banner (cytoscape's own
# default is 600 px).
CANVAS_STYLE = {"width": "100%", "height": "calc(100vh - 300px)", "minHeight": "320px"}



def initial_view(query: dict) -> dict:
    """What the page first shows for its address, computed while the layout is built: the
    drawing comes with the page instead of after a chain of callbacks (one request, not
    five), which then fire only on what the user changes. Every part answers a problem
    with a message, as its callback does."""
    run_options_, run, notice = run_choice(query)
    step_options, step = step_choice(run, query)
    mode, partition, asked = view_choice(query)
    expanded, selected, told = next_state(None, run, None, None, None, "", query,
                                          partition=partition)
    elements, legend, shown, shown_style, summary, drawn = draw(
        run, expanded, mode, step, partition, selected)
    viewport, unread = address_viewport(query)
    if not shown and _query(query)["run"] in (None, run):
        drawn = restored(drawn, viewport)
    return {"runs": run_options_, "run": run, "notice": " ".join(
                part for part in (notice, asked, unread) if part),
            "steps": step_options, "step": step, "expanded": expanded, "selected": selected,
            "search": told, "pattern": address_search(query), "color": mode,
            "partition": partition, "elements": elements,
            "legend": legend, "message": shown, "message_style": shown_style,
            "summary": summary, "layout": drawn, "inspector": inspect(run, selected, step)}


def view_choice(query) -> tuple[str, list[str], str]:
    """(colour mode, partition checklist value, a notice) the address asks for: its `color`
    when it is a mode (else the default, and the notice says so), the partition view when
    `partition=1`."""
    asked = address_value(query.get("color")) if isinstance(query, dict) else None
    split = [PARTITION] if isinstance(query, dict) and address_value(
        query.get("partition")) == "1" else []
    if asked is None or asked in COLOR_MODES:
        return asked or DEFAULT_COLOR_MODE, split, ""
    return DEFAULT_COLOR_MODE, split, (
        f"The address's colour {clipped(asked)} is not one of {', '.join(COLOR_MODES)}; "
        f"colouring by {DEFAULT_COLOR_MODE}.")


def warm(limit: int = 3) -> None:
    """Builds the first view of the newest `limit` healthy runs (graph, grouping, layout,
    edge routes, elements) before anyone asks, so a fresh server's first visit only sends
    it; the server starts this in a thread. What fails is left for the page to tell."""
    data.warm_graphs(limit)
    for name in data.healthy_run_names()[:limit]:
        initial_view({"run": name, "step": None, "node": None})


def address_search(query) -> str:
    """The address's search (`search=REGEX`) as the search box takes it ("" when none or
    not text)."""
    value = address_value(query.get("search")) if isinstance(query, dict) else None
    return value if value is not None and len(value) <= MAX_TEXT else ""


def layout(run: str | None = None, step: str | None = None, node: str | None = None,
           color: str | None = None, partition: str | None = None,
           open: str | None = None, search: str | None = None,  # noqa: A002 -- its address name
           zoom: str | None = None, pan: str | None = None, **_query) -> html.Div:
    query = {"run": run, "step": step, "node": node, "color": color, "partition": partition,
             "open": open, "search": search, "zoom": zoom, "pan": pan}
    first = initial_view(query)
    return html.Div([
        page_header("Graph", "Data flows down. Boxes are open scopes and series; a node "
                             "with a count is a closed one (click it). Dashed orange edges "
                             "cross devices."),
        dcc.Store(id=QUERY_STORE, data=query),
        dcc.Store(id=EXPANDED_STORE, data=first["expanded"]),
        dcc.Store(id=SELECTED_STORE, data=first["selected"]),
        dcc.Store(id=SEARCH_STORE, data=first["pattern"]),
        *address_stores("graph"),
        dcc.Download(id=SVG_DOWNLOAD),
        html.Div(className="controls graph-controls", children=[
            labelled("Run", dcc.Dropdown(id=RUN_DROPDOWN, clearable=False,
                                         options=first["runs"], value=first["run"])),
            labelled("Step", dcc.Dropdown(id=STEP_DROPDOWN, clearable=True,
                                          options=first["steps"], value=first["step"],
                                          placeholder="latest traced")),
            labelled("Colour", dcc.Dropdown(
                id=COLOR_DROPDOWN, clearable=False, value=first["color"],
                options=[{"label": label, "value": mode}
                         for mode, label in COLOR_MODES.items()])),
            dcc.Checklist(id=PARTITION_CHECK, className="toggle", value=first["partition"],
                          options=[{"label": " Partition view", "value": PARTITION}]),
            html.Div(className="search", children=[
                dcc.Input(id=SEARCH_INPUT, type="text", placeholder="search nodes (regex)",
                          value=first["pattern"], debounce=True, maxLength=MAX_TEXT,
                          className="search-input"),
                html.Button("Find", id=SEARCH_BUTTON, className="button")]),
            html.Button("Collapse all", id=COLLAPSE_BUTTON, className="button"),
            html.Button("Expand a level", id=EXPAND_BUTTON, className="button"),
            html.Button("SVG", id=SVG_BUTTON, className="button", title="export this view"),
            html.Button("PNG", id=PNG_BUTTON, className="button", title="export this view"),
        ]),
        # Lines of fixed height: cytoscape keeps where its canvas is on the page, so
        # nothing above it may move once it is drawn (clicks would miss their nodes).
        live_follow("graph", fixed=True),
        html.Div(className="graph-status", children=[
            html.Span(first["notice"], id=NOTICE_TEXT, className="notice-inline"),
            html.Span(first["summary"], id=SUMMARY_TEXT, className="muted"), " ",
            html.Span(first["search"], id=SEARCH_TEXT, className="search-text"), " ",
            html.Span(id=EXPORT_TEXT, className="muted")]),
        html.Div(className="graph-layout", children=[
            html.Div(id=DAG_GRAPH, className="graph-canvas", children=[
                html.P(first["message"], id=DAG_MESSAGE, className="message graph-message",
                       style=first["message_style"]),
                html.Div(first["legend"], id=LEGEND_DIV, className="graph-legend"),
                cyto.Cytoscape(id=CYTO, elements=first["elements"], stylesheet=stylesheet(),
                               layout=first["layout"], className="graph-cytoscape",
                               style=CANVAS_STYLE,
                               minZoom=MIN_ZOOM, maxZoom=MAX_ZOOM,
                               boxSelectionEnabled=False, autounselectify=True,
                               # the server placed every node and routed every edge
                               autoungrabify=True,
                               autoRefreshLayout=False, responsive=True),
            ]),
            html.Div(className="graph-inspector",
                     children=html.Div(id=INSPECTOR_DIV, children=first["inspector"])),
        ]),
    ])


def _query(query) -> dict:
    """The address's run, step, node, open scopes and search (a plain run name counts as
    {run})."""
    if isinstance(query, str) or query is None:
        return {"run": query, "step": None, "node": None, "open": None, "search": None}
    if not isinstance(query, dict):
        raise BadInput(f"the page address must be a mapping, got {clipped(query)}")
    found = {key: address_value(query.get(key)) for key in ("run", "step", "node", "search")}
    return {**found, "open": query.get("open")}


@answers(lambda problem: ([], None, problem))
def run_choice(query) -> tuple[list[dict], str | None, str]:
    """(options, the run to show, a notice when it is not the one asked for): the
    requested run, else the newest healthy one, else the newest readable one."""
    requested = _query(query)["run"]
    names, healthy = run_choices()
    chosen = choose_run(names, requested, healthy)
    options = run_options(names, frozenset(names) - frozenset(healthy))
    return options, chosen, run_notice(requested, chosen)


def requested_step(value) -> int | None:
    """A step number from the address or the chooser (None when absent)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise BadInput(f"a step must be a whole number, got {clipped(value)}")
    if isinstance(value, int) and abs(value) < MAX_STEP:
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,18}", value.strip()):
        return int(value)
    raise BadInput(f"a step must be a whole number, got {clipped(value)}")


@answers(lambda _problem: ([], None))
def step_choice(run: str | None, query, current=None, shown=None, live=None
                ) -> tuple[list[dict], int | None]:
    """(options, chosen step): the address's step when recorded, else the latest traced.
    After a poll (`live`) new steps join the options and the `current` step stays, unless
    it was the latest traced of the options `shown`: then the newest traced is chosen."""
    if not run:
        return [], None
    run = data.check_name(run)
    numbers = sorted({record.step for record in data.steps(run)})[-STEPS_SHOWN:]
    asked = _query(query)
    wanted = requested_step(asked["step"]) if asked["run"] in (None, run) else None
    traced = data.last_traced_step(run)
    options = [{"label": f"step {n}" + (" (traced)" if n == traced else ""), "value": n}
               for n in reversed(numbers)]
    if live is not None:
        return _followed_step(options, traced, current, shown)
    if wanted in numbers:
        return options, wanted
    return options, traced


def _followed_step(options: list[dict], traced: int | None, current, shown) -> tuple:
    if options == shown:
        return no_update, no_update
    was = [option.get("value") for option in (shown if isinstance(shown, list) else ())
           if isinstance(option, dict) and str(option.get("label", "")).endswith("(traced)")]
    follows = current is not None and current in was
    return options, traced if follows else no_update


def tapped(value) -> tuple[str, str] | None:
    """(id, kind) of a tapped node from cytoscape's tapNodeData; None for anything else."""
    if not isinstance(value, dict):
        return None
    ident, kind = value.get("id"), value.get("kind")
    if not (isinstance(ident, str) and isinstance(kind, str)) or not 0 < len(ident) <= 2000:
        return None
    if ident.startswith((DEVICE_BOX, TASK_BOX)):
        return None
    if "|" in ident:                   # a partition view's "DEVICE|ID"
        ident = ident.partition("|")[2]
    return ident, kind


def _name_of(run: str, ident: str) -> str | None:
    """The node name an op id stands for (TF's "w" drawn as "w/(w)")."""
    tree = data.hierarchy(run)
    group = tree.groups.get(ident)
    if group is None or group.kind != OP:
        return None
    return next(name for name, oid in tree.op_ids.items() if oid == ident)


def _found(run: str, expanded: frozenset[str], pattern: str) -> tuple[list[str], str, str]:
    """(expanded, selected, message) after searching `pattern`."""
    try:
        names = search(data.hierarchy(run), pattern)
    except re.error as exc:
        return sorted(expanded), no_update, f"Not a regular expression: {exc}."
    except UnsafePattern as exc:
        return sorted(expanded), no_update, f"Not searched: {exc}."
    if not names:
        return sorted(expanded), no_update, f"No node matches {clipped(pattern)}."
    tree = data.hierarchy(run)
    more = "50 or more" if len(names) >= 50 else str(len(names))
    note = f"{more} match{'es' if len(names) != 1 else ''}; showing {names[0]}."
    return sorted(reveal(tree, expanded, names[0])), tree.op_ids[names[0]], note


@answers(lambda problem: ([], "", problem))
def next_state(trigger: str | None, run: str | None, tap, pattern, current, selected,
               query, live=None, partition=None) -> tuple[list[str], str, str]:
    """(expanded groups, selected id, search message) after `trigger`: a new run opens its
    default view (revealing the address's node), the buttons collapse all or open a level,
    a tap on a closed scope or series opens it and on an open one closes it, a search
    reveals and selects the first match. Only the graph's own groups are kept."""
    if not run:
        return [], "", ""
    run = data.check_name(run)
    if data.graph(run) is None:
        return [], "", ""
    tree = data.hierarchy(run)
    current = frozenset(frozenset(scope_list(current) or ()) & tree.groups.keys())
    if trigger == LIVE["store"]:       # a poll: only a new graph version redraws
        if not _new_graph(live):
            return no_update, no_update, no_update
        return sorted(current), no_update, no_update
    if trigger == COLLAPSE_BUTTON:
        return [], no_update, ""
    if trigger == EXPAND_BUTTON:
        deeper, opened, closed = expand_level_within(tree, current, EXPAND_LIMIT)
        told = "" if opened == closed else (
            f"Opened {opened} of {closed} scopes: all would draw more than {EXPAND_LIMIT} "
            f"nodes; click the others to open them.")
        return sorted(deeper), no_update, told
    if trigger == CYTO:
        target = tapped(tap)
        if target is None or target[0] not in tree.groups:
            return no_update, no_update, no_update
        ident = target[0]
        if tree.groups[ident].kind == OP:
            return no_update, ident, ""
        opened = current - {ident} if ident in current else current | {ident}
        return sorted(opened), ident, ""
    if trigger in (SEARCH_BUTTON, SEARCH_INPUT):
        pattern = text(pattern, "the search")
        if not pattern:
            return no_update, no_update, ""
        return _found(run, current, pattern)
    return _first_view(run, query, _partition(partition))


def _first_view(run: str, query, split: bool = False) -> tuple[list[str], str, str]:
    """The address's view of the run: its open scopes (`open`; absent: the first view, of
    the partition view when `split`) with its node revealed and selected, else its
    search's first match (`search`, as the search box finds it); another run's address
    opens the first view."""
    tree = data.hierarchy(run)
    expanded = data.graph_first_view(run, split)
    asked = _query(query)
    node = asked["node"]
    if asked["run"] not in (None, run):
        return sorted(expanded), "", ""
    if asked["open"] is not None:
        expanded = frozenset(address_values(asked["open"], tree.groups)) & tree.groups.keys()
    if not node and asked["search"]:
        pattern = text(asked["search"], "the search in the address")
        opened, chosen, told = _found(run, expanded, pattern)
        return opened, "" if chosen is no_update else chosen, told
    if not node:
        return sorted(expanded), "", ""
    node = text(node, "the node in the address")
    if node in tree.op_ids:
        return sorted(reveal(tree, expanded, node)), tree.op_ids[node], ""
    if node in tree.groups:
        return sorted(reveal(tree, expanded, node)), node, ""
    return sorted(expanded), "", f"No node named {clipped(node)} in this graph."


# The inputs that redraw the current state without moving it.
REDRAWS = frozenset({COLOR_DROPDOWN, STEP_DROPDOWN, PARTITION_CHECK})


def update_state(run, _collapse, _expand, tap, _search, _submit, mode, step, partition,
                 pattern, current, selected, query, live=None):
    """The new state and its drawing in one answer (a tap is one request, not two): the
    colour mode, step and partition view redraw the current state; anything else moves
    it (next_state). The run first: Dash calls this once when a new run changes the step.
    A poll (the live store) moves it only when the graph changed; the user's trigger, woken
    with it, comes first. Last, the search store: the search just run, "" for another run
    (the address's search was of the run before)."""
    woken = [prop.rpartition(".")[0] for prop in dash.ctx.triggered_prop_ids]
    movers = [ident for ident in woken if ident not in REDRAWS]
    trigger = RUN_DROPDOWN if RUN_DROPDOWN in movers else next(
        (ident for ident in movers if ident != LIVE["store"]), movers[0] if movers else None)
    state = _moved(trigger, woken, run, tap, mode, step, partition, pattern, current, selected,
                   query, live)
    if trigger in (SEARCH_BUTTON, SEARCH_INPUT):
        searched = pattern if isinstance(pattern, str) and len(pattern) <= MAX_TEXT else ""
    else:
        searched = "" if trigger == RUN_DROPDOWN else no_update
    return (*state, searched)


def _new_graph(live) -> bool:
    """Whether a poll saw a new graph version of the run shown. A poll of other runs than the
    last (the page's first, or after the run chooser moved) saw the run the page has just
    drawn: redrawing it would only fit the view again, losing the address's pan and zoom."""
    changed = live_changed(live)
    return "graph" in changed and "runs" not in changed


def _moved(trigger, woken, run, tap, mode, step, partition, pattern, current, selected, query,
           live) -> tuple:
    if trigger is None or (trigger == LIVE["store"] and not _new_graph(live)):
        return _redrawn(run, current, mode, step, partition, selected,
                        frozenset(woken) & REDRAWS)
    expanded, chosen, told = next_state(trigger, run, tap, pattern, current, selected, query,
                                        live, partition)
    if expanded is no_update and chosen is no_update:
        return (expanded, chosen, told) + (no_update,) * 6
    drawn = draw(run, current if expanded is no_update else expanded, mode, step, partition,
                 selected if chosen is no_update else chosen)
    if trigger == CYTO and expanded is no_update:
        # A click that only selects (a leaf): the same drawing with the outline moved, in
        # the user's pan and zoom; a new layout (the last part) would fit the whole graph.
        drawn = drawn[:5] + (no_update,)
    return (expanded, chosen, told) + drawn


def _redrawn(run, current, mode, step, partition, selected, redraws: frozenset) -> tuple:
    """The current state drawn again for a new colour mode, step or partition choice."""
    if not redraws:
        return (no_update,) * 9
    if redraws == {STEP_DROPDOWN}:
        # Another step (the user's, or a poll following the latest): the drawing changes
        # only where the step is drawn, and then in place, keeping the user's zoom and pan.
        if mode not in ("time", "bytes") and not _partition(partition):
            return (no_update,) * 9
        drawn = draw(run, current, mode, step, partition, selected)
        return (no_update,) * 3 + drawn[:5] + (no_update,)
    return (no_update,) * 3 + draw(run, current, mode, step, partition, selected)


def _partition(value) -> bool:
    chosen = value if isinstance(value, list) else []
    return PARTITION in chosen


def _facts(run: str, step: int | None):
    if step is None:
        return step_facts(None, ())
    return step_facts(step, data.step_stats(run, step), data.transfers(run, step))


def _swatch(item) -> html.Span:
    if item.kind == "edge":
        return html.Span(className="legend-line", style={"borderTopColor": item.color})
    return html.Span(className="legend-swatch", style={
        "backgroundColor": item.color,
        "outline": f"2px solid {item.outline}" if item.outline else "none"})


def _legend(items) -> list:
    return [html.Span(className="legend-item", children=[_swatch(item), item.label])
            for item in items]


def _shown(problem: str) -> tuple:
    return [], [], problem, {"display": "block"}, "", cytoscape_layout()


def drawn_layout(elements: list[dict]) -> dict:
    """A preset layout that only fits the view (its own refresh after an update waits
    100 ms, so it is off): the leaves' positions travel in their elements, so cytoscape
    moves only the nodes that moved. Positions here would set every node again, which
    makes cytoscape measure every node and every edge anew on each redraw. An empty
    mapping places none (the layout skips a node it has no position for), and a new one
    each time makes dash-cytoscape run the layout on each drawing."""
    del elements
    return {**cytoscape_layout(), "positions": {}}


@answers(lambda problem: _shown(problem))
def draw(run: str | None, expanded, mode, step, partition, selected="") -> tuple:
    """(elements, legend, message, message style, summary, layout) for the chosen view;
    elements are cached per (graph, expansion, colour mode, step, partition view), and the
    selected node is outlined in a copy."""
    if not run:
        return _shown("No readable run in the log directory.")
    run = data.check_name(run)
    record = data.graph(run)
    if record is None:
        return _shown(f"Run {run} recorded no graph.")
    mode = text(mode, "the colour mode") or DEFAULT_COLOR_MODE
    if mode not in COLOR_MODES:
        raise BadInput(f"the colour mode must be one of {', '.join(COLOR_MODES)}, got "
                       f"{clipped(mode)}")
    step = requested_step(step)
    split = _partition(partition)
    tree = data.hierarchy(run)
    groups = frozenset(frozenset(scope_list(expanded) or ()) & tree.groups.keys())
    view = data.view(run, groups)

    def build():
        facts = _facts(run, step) if mode in ("time", "bytes") or split else step_facts(
            step, ())
        return graph_elements(view, record, data.placements(run, record.version), mode,
                              facts, split, data.cut_edges(run) if split else (),
                              data.devices(run))
    # The step changes the picture only where it is drawn: time, bytes, cut labels.
    key_step = step if mode in ("time", "bytes") or split else None
    elements, legend = data.graph_elements_for(run, view.expanded, mode, key_step, split, build)
    leaves = sum(1 for element in elements if "leaf" in element.get("classes", ""))
    cuts = sum(1 for element in elements if " cut" in element.get("classes", ""))
    summary = (f"graph version {record.version}: {leaves} nodes drawn for "
               f"{len(record.nodes)}, {cuts} cross-device edges")
    return (with_selection(elements, selected), _legend(legend), "", {"display": "none"},
            summary, drawn_layout(elements))


def with_selection(elements: list[dict], selected) -> list[dict]:
    """The elements with the selected node (in both views: "ID", "DEVICE|ID") outlined by
    its class: a class change is one element's update, where a new stylesheet would make
    cytoscape restyle every element."""
    if not isinstance(selected, str) or not 0 < len(selected) <= MAX_TEXT:
        return elements
    tail = "|" + selected
    return [{**element, "classes": element["classes"] + " selected"}
            if "source" not in element["data"] and (
                element["data"]["id"] == selected or element["data"]["id"].endswith(tail))
            else element for element in elements]


def selection_style(selected) -> list[dict]:
    """The stylesheet with the selected node outlined (in both views: "ID", "DEVICE|ID"),
    for the Compare page, whose two canvases share one selection."""
    if not isinstance(selected, str) or not 0 < len(selected) <= MAX_TEXT:
        return stylesheet()
    quoted = json.dumps(selected)
    tail = json.dumps("|" + selected)
    return stylesheet() + [{"selector": f"node[id = {quoted}], node[id $= {tail}]",
                            "style": {"border-width": 4, "border-color": "#111111",
                                      "border-style": "solid", "border-opacity": 1}}]


@answers(lambda problem: message(problem))
def inspect(run: str | None, selected, step):
    """The inspector for the selected op, scope or series."""
    selected = text(selected, "the selected node") if isinstance(selected, str) else ""
    if not run or not selected:
        return INSPECTOR_HINT
    run = data.check_name(run)
    record = data.graph(run)
    if record is None:
        return INSPECTOR_HINT
    placements = data.placements(run, record.version)
    tree = data.hierarchy(run)
    group = tree.groups.get(selected)
    if group is None:
        return message(f"No node or scope {clipped(selected)} in this graph.")
    if group.kind != OP:
        return inspector_panel(group_details(tree, placements, selected))
    name = _name_of(run, selected)
    details = op_details(record, placements, name)
    details["stats"] = node_stats(data.last_traced_stats(run), name)
    step = requested_step(step)
    details["step"] = step_details(name, step, data.step_stats(run, step) if step is not None
                                   else (), data.tensor_summaries(run))
    return inspector_panel(details)


@answers(lambda _problem: no_update)
def view_address(run, step, selected, mode, partition, expanded, searched=None) -> str:
    """The address of the current view, as the layout reads it back: the run, the step when
    one is chosen, the selected node (by name), a colour other than the default, the
    partition view, the open scopes when they are not the first view of what is shown
    (the partition view has its own), and the search last run."""
    if not run:
        return PATH
    run = data.check_name(run)
    step = requested_step(step)
    mode = text(mode, "the colour mode") or DEFAULT_COLOR_MODE
    query = {"run": run, "step": step, "node": None,
             "color": None if mode == DEFAULT_COLOR_MODE else mode,
             "partition": "1" if _partition(partition) else None, "open": None,
             "search": optional_text(searched, "the search")}
    if data.graph(run) is None:
        return address(PATH, query)
    tree = data.hierarchy(run)
    opened = sorted(frozenset(scope_list(expanded) or ()) & tree.groups.keys())
    if opened != sorted(data.graph_first_view(run, _partition(partition))):
        query["open"] = opened if opened else ""
    selected = text(selected, "the selected node") if isinstance(selected, str) else ""
    if selected in tree.groups:
        query["node"] = (_name_of(run, selected) if tree.groups[selected].kind == OP
                         else selected)
    return address(PATH, query)


def export(trigger: str | None, run: str | None, expanded=None, mode=DEFAULT_COLOR_MODE,
           step=None, partition=None) -> tuple[dict, dict, str]:
    """(cytoscape's generateImage request, a download, what the page says) for the button
    pressed, of the whole graph (not only what the window shows): the PNG is drawn by the
    browser; the SVG is written here from the view's elements (viz.graph_svg), which spares
    every visit the browser-side SVG renderer's megabyte of script."""
    if trigger not in (SVG_BUTTON, PNG_BUTTON):
        return no_update, no_update, no_update
    name = run if isinstance(run, str) and re.fullmatch(r"[\w.-]{1,100}", run) else "graph"
    if trigger == SVG_BUTTON:
        elements = draw(run, expanded or [], mode, step, partition)[0]
        return (no_update, dcc.send_string(graph_svg(elements), f"graph-{name}.svg",
                                           type="image/svg+xml"),
                f"Saved the view as graph-{name}.svg.")
    request = {"type": "png", "action": "download", "filename": f"graph-{name}",
               "options": {"full": True, "bg": "#ffffff", "scale": 2}}
    return request, no_update, f"Saved the view as graph-{name}.png."


def update_export(_svg, _png, run, expanded, mode, step, partition):
    return export(dash.ctx.triggered_id, run, expanded, mode, step, partition)


def register_callbacks(app: dash.Dash) -> None:
    """None fires when the page loads (initial_view drew it): only on what changes."""
    once = {"prevent_initial_call": True}
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"),
                 **once)(run_choice)
    app.callback(Output(STEP_DROPDOWN, "options"), Output(STEP_DROPDOWN, "value"),
                 Input(RUN_DROPDOWN, "value"), State(QUERY_STORE, "data"),
                 State(STEP_DROPDOWN, "value"), State(STEP_DROPDOWN, "options"),
                 Input(LIVE["store"], "data"), **once)(polled(step_choice, LIVE["store"]))
    app.callback(Output(EXPANDED_STORE, "data"), Output(SELECTED_STORE, "data"),
                 Output(SEARCH_TEXT, "children"), Output(CYTO, "elements"),
                 Output(LEGEND_DIV, "children"), Output(DAG_MESSAGE, "children"),
                 Output(DAG_MESSAGE, "style"), Output(SUMMARY_TEXT, "children"),
                 Output(CYTO, "layout"), Output(SEARCH_STORE, "data"),
                 Input(RUN_DROPDOWN, "value"), Input(COLLAPSE_BUTTON, "n_clicks"),
                 Input(EXPAND_BUTTON, "n_clicks"), Input(CYTO, "tapNodeData"),
                 Input(SEARCH_BUTTON, "n_clicks"), Input(SEARCH_INPUT, "n_submit"),
                 Input(COLOR_DROPDOWN, "value"), Input(STEP_DROPDOWN, "value"),
                 Input(PARTITION_CHECK, "value"),
                 State(SEARCH_INPUT, "value"), State(EXPANDED_STORE, "data"),
                 State(SELECTED_STORE, "data"), State(QUERY_STORE, "data"),
                 Input(LIVE["store"], "data"), **once)(update_state)
    app.callback(Output(INSPECTOR_DIV, "children"), Input(RUN_DROPDOWN, "value"),
                 Input(SELECTED_STORE, "data"), Input(STEP_DROPDOWN, "value"),
                 **once)(inspect)
    app.callback(Output(CYTO, "generateImage"), Output(SVG_DOWNLOAD, "data"),
                 Output(EXPORT_TEXT, "children"),
                 Input(SVG_BUTTON, "n_clicks"), Input(PNG_BUTTON, "n_clicks"),
                 State(RUN_DROPDOWN, "value"), State(EXPANDED_STORE, "data"),
                 State(COLOR_DROPDOWN, "value"), State(STEP_DROPDOWN, "value"),
                 State(PARTITION_CHECK, "value"), **once)(update_export)
    register_address(app, "graph", PATH, view_address, Input(RUN_DROPDOWN, "value"),
                     Input(STEP_DROPDOWN, "value"), Input(SELECTED_STORE, "data"),
                     Input(COLOR_DROPDOWN, "value"), Input(PARTITION_CHECK, "value"),
                     Input(EXPANDED_STORE, "data"), Input(SEARCH_STORE, "data"), keep=KEPT)
    register_live(app, "graph", (RUN_DROPDOWN,), LIVE_PARTS)
