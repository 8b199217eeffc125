"""Replay page (`/replay?run=NAME&step=N&t=US&open=SCOPE,SCOPE&speed=N`): scrub or play
through a run's recorded steps. The loss curve grows, the placement log and alerts in force
follow, and on a traced step the graph's nodes light up in execution order while a playhead
moves through the step, Send/Recv transfers highlighted on their edges while in flight.
Scopes open and close on a click as on the Graph page (its expansion handling), and the open
ones stay in the address, as does the speed. Play, speed, keys and the address are handled
in the browser (assets/replay.js); the server answers what a (step, time) shows."""

from __future__ import annotations

from typing import Any

import dash
import dash_cytoscape as cyto
from dash import ClientsideFunction, Input, Output, State, dcc, html, no_update
from plotly.graph_objects import Figure

from viz import replay
from viz.graph_elements import (
    DEFAULT_COLOR_MODE,
    cytoscape_layout,
    format_bytes,
    format_us,
    stylesheet,
)
from viz.hierarchy import OP
from viz.message import message_figure
from workbench import data
from workbench.inputs import (
    MAX_TEXT,
    BadInput,
    clipped,
    finite_number,
    scope_list,
    step_number,
)
from workbench.pages import graph as graph_page
from workbench.pages.common import (
    address_value,
    address_values,
    answers,
    choose_run,
    labelled,
    live_follow,
    live_ids,
    message,
    page_header,
    polled,
    register_live,
    run_choices,
    run_notice,
    run_options,
)

PATH = "/replay"
NAME = "Replay"

QUERY_STORE = "replay-query-store"
BOUNDS_STORE = "replay-bounds-store"
POSITION_STORE = "replay-position-store"
STEP_STORE = "replay-step-store"       # [run, step] the curve and logs show
PLAYING_STORE = "replay-playing-store"
URL_STORE = "replay-url-store"
NEAREST_STORE = "replay-nearest-store"
EXPANDED_STORE = "replay-expanded-store"   # the open scopes and series, sorted
OPEN_STORE = "replay-open-store"           # the address's `open` after the user's change
OPEN_URL_STORE = "replay-open-url-store"
COLLAPSE_BUTTON = "replay-collapse-button"
EXPAND_BUTTON = "replay-expand-button"
EXPAND_TEXT = "replay-expand-text"
RUN_DROPDOWN = "replay-run-dropdown"
LIVE = live_ids("replay")
LIVE_PARTS = ("steps", "traced", "alerts")
SPEED_DROPDOWN = "replay-speed-dropdown"
SPEED_NOTICE_TEXT = "replay-speed-notice-text"
SPEED_URL_STORE = "replay-speed-url-store"
PLAY_INTERVAL = "replay-play-interval"
PLAY_BUTTON = "replay-play-button"
FIRST_BUTTON = "replay-first-button"
PREV_BUTTON = "replay-prev-button"
NEXT_BUTTON = "replay-next-button"
LAST_BUTTON = "replay-last-button"
NEAREST_BUTTON = "replay-nearest-button"
STEP_SLIDER = "replay-step-slider"
TIME_SLIDER = "replay-time-slider"
NOTICE_TEXT = "replay-notice-text"
STEP_NOTICE_TEXT = "replay-step-notice-text"
STEP_TEXT = "replay-step-text"
TRACE_TEXT = "replay-trace-text"
STATUS_TEXT = "replay-status-text"
CYTO = "replay-cytoscape"
GRAPH_MESSAGE = "replay-graph-message"
CURVE_GRAPH = "replay-curve-graph"
PLACEMENT_DIV = "replay-placement-div"
ALERTS_DIV = "replay-alerts-div"
INSPECTOR_DIV = "replay-inspector-div"

SPEEDS = (0.5, 1, 2, 4, 8)     # steps per tick
DEFAULT_SPEED = 1
_SPEEDS_SAID = ", ".join(f"{speed:g}" for speed in SPEEDS)
TICK_MS = 250
TICKS_PER_TRACED_STEP = 20     # at 1x the playhead crosses a traced step in 5 s
SPANS_READ = 200               # up to this many traced steps, the playhead spans the ops only
MARKS_SHOWN = 12               # at most about this many step slider marks
PLACEMENT_LINES = 200
CANVAS_STYLE = {"width": "100%", "height": "calc(100vh - 360px)", "minHeight": "420px"}
INSPECTOR_HINT = "Click a node to see when it ran in this step."
_HIDDEN = {"display": "none"}


def layout(run: str | None = None, step: str | None = None, t: str | None = None,
           open: str | None = None, speed: str | None = None,  # noqa: A002 -- its address name
           **_query) -> html.Div:
    speed_value, speed_told = speed_choice(speed)
    return html.Div([
        page_header("Replay", "Scrub or play through the run's steps. On a traced step the "
                              "graph lights up in execution order: grey not yet, yellow "
                              "running, device colour done; magenta edges are transfers "
                              "in flight. Keys: space play/pause, ←/→ step, Home/End."),
        dcc.Store(id=QUERY_STORE, data={"run": run, "step": step, "t": t, "open": open}),
        dcc.Store(id=BOUNDS_STORE), dcc.Store(id=POSITION_STORE), dcc.Store(id=STEP_STORE),
        dcc.Store(id=PLAYING_STORE, data=False), dcc.Store(id=URL_STORE),
        dcc.Store(id=NEAREST_STORE), dcc.Store(id=EXPANDED_STORE), dcc.Store(id=OPEN_STORE),
        dcc.Store(id=OPEN_URL_STORE), dcc.Store(id=SPEED_URL_STORE),
        dcc.Interval(id=PLAY_INTERVAL, interval=TICK_MS, disabled=True),
        html.Div(className="controls replay-controls", children=[
            labelled("Run", dcc.Dropdown(id=RUN_DROPDOWN, clearable=False)),
            html.Div(className="replay-buttons", children=[
                html.Button("|◀", id=FIRST_BUTTON, className="button", title="first (Home)"),
                html.Button("◀", id=PREV_BUTTON, className="button", title="previous (←)"),
                html.Button("Play", id=PLAY_BUTTON, className="button replay-play",
                            title="play / pause (space)"),
                html.Button("▶", id=NEXT_BUTTON, className="button", title="next (→)"),
                html.Button("▶|", id=LAST_BUTTON, className="button", title="last (End)")]),
            html.Button("Collapse all", id=COLLAPSE_BUTTON, className="button"),
            html.Button("Expand a level", id=EXPAND_BUTTON, className="button"),
            labelled("Speed", dcc.Dropdown(
                id=SPEED_DROPDOWN, clearable=False, value=speed_value, searchable=False,
                options=[{"label": f"{speed:g}x", "value": speed} for speed in SPEEDS])),
        ]),
        html.P(id=NOTICE_TEXT, className="message notice"),
        html.P(speed_told, id=SPEED_NOTICE_TEXT, className="message notice"),
        live_follow("replay"),
        html.P(id=STEP_NOTICE_TEXT, className="message notice"),
        html.Div(className="replay-sliders", children=[
            labelled("Step", dcc.Slider(id=STEP_SLIDER, min=0, max=1, step=1, value=0,
                                        updatemode="drag")),
            labelled("Time in step", dcc.Slider(id=TIME_SLIDER, min=0, max=1, value=1,
                                                disabled=True, marks=None,
                                                allow_direct_input=False,
                                                updatemode="drag")),
        ]),
        html.Div(className="replay-status", children=[
            html.Span(id=STEP_TEXT, className="replay-step-text"), " ",
            html.Span(id=TRACE_TEXT, className="notice-inline"), " ",
            html.Button(id=NEAREST_BUTTON, className="button", style=_HIDDEN), " ",
            html.Span(id=STATUS_TEXT, className="muted"), " ",
            html.Span(id=EXPAND_TEXT, className="muted")]),
        html.Div(className="replay-layout", children=[
            html.Div(className="graph-canvas replay-canvas", children=[
                html.P("Loading graph…", id=GRAPH_MESSAGE, className="message graph-message"),
                cyto.Cytoscape(id=CYTO, elements=[], stylesheet=stylesheet(),
                               layout=cytoscape_layout(), style=CANVAS_STYLE, minZoom=0.05,
                               maxZoom=4, boxSelectionEnabled=False, autounselectify=True,
                               autoRefreshLayout=False, responsive=True)]),
            html.Div(className="replay-side", children=[
                dcc.Graph(id=CURVE_GRAPH, figure=message_figure("Loading curve…", 240),
                          config={"displaylogo": False, "displayModeBar": False}),
                html.Div(id=ALERTS_DIV, className="replay-alerts"),
                html.Div(id=INSPECTOR_DIV, className="replay-inspector",
                         children=INSPECTOR_HINT),
                html.Div(id=PLACEMENT_DIV, className="replay-placement"),
            ]),
        ]),
    ])


def _query(query: Any) -> dict:
    """The address's run (one value), step, time and open scopes."""
    query = query if isinstance(query, dict) else {}
    return {**query, "run": address_value(query.get("run"))}


def _playhead(value: Any, what: str = "the time in the step") -> float | None:
    """A playhead time in microseconds (None: the end of the step)."""
    try:
        return finite_number(value, what, 0)
    except BadInput:
        raise BadInput(f"{what} must be microseconds from 0, got {clipped(value)}") from None


def speed_choice(value: Any) -> tuple[float, str]:
    """(the speed to play at, a notice): the address's `speed` when it is one of SPEEDS,
    else 1x, and the notice says why."""
    try:
        speed = finite_number(address_value(value) if isinstance(value, list) else value,
                              "the speed in the address", 0)
    except BadInput as exc:
        told = str(exc)
    else:
        if speed is None:
            return DEFAULT_SPEED, ""
        if speed in SPEEDS:
            return speed, ""
        told = f"the speed in the address must be one of {_SPEEDS_SAID}, got {clipped(value)}"
    return DEFAULT_SPEED, f"{told[:1].upper()}{told[1:]}; playing at {DEFAULT_SPEED:g}x."


def _position(position: Any) -> tuple[int | None, float | None]:
    position = position if isinstance(position, dict) else {}
    return step_number(position.get("step")), _playhead(position.get("t"))


# -- the run and its steps ------------------------------------------------------------------


@answers(lambda problem: ([], None, problem))
def run_choice(query: Any) -> tuple[list[dict], str | None, str]:
    """(options, the run to show, a notice when it is not the one asked for)."""
    requested = _query(query).get("run")
    names, healthy = run_choices()
    chosen = choose_run(names, requested, healthy)
    options = run_options(names, frozenset(names) - frozenset(healthy))
    return options, chosen, run_notice(requested, chosen)


def _marks(numbers: list[int], traced: list[int], alert: int | None) -> dict:
    """Slider marks at the first alert, the ends and the traced steps, in that order of
    precedence, leaving out those that would crowd one already placed."""
    gap = (numbers[-1] - numbers[0]) / MARKS_SHOWN
    chosen: list[int] = []
    for n in [*(() if alert is None else (alert,)), numbers[0], numbers[-1], *traced]:
        if n not in chosen and all(abs(n - m) >= gap for m in chosen):
            chosen.append(n)
    marks: dict = {str(n): {"label": str(n)} for n in sorted(chosen)}
    if alert is not None:
        marks[str(alert)] = {"label": f"NaN {alert}", "style": {"color": replay.ALERT_COLOR}}
    return marks


def _no_steps(problem: str) -> tuple:
    return None, None, problem, 0, 1, {}


@answers(_no_steps)
def step_bounds(run: str | None, query: Any, live: Any = None) -> tuple:
    """(bounds, the first position, a notice, step slider min, max, marks). The bounds the
    browser plays within: the run, first and last step, the step numbers when they are not
    consecutive, the traced steps with their durations, the first alert's step. The address's
    step and time count when the run is the one asked for; a step not recorded is snapped
    to the nearest one, and said so. After a poll (`live`: the run being written recorded
    more steps) the bounds and slider grow and the position stays where the user has it."""
    if not run:
        return _no_steps("No readable run in the log directory.")
    run = data.check_name(run)
    records = data.steps(run)
    numbers = replay.step_numbers(records)
    if not numbers:
        return _no_steps(f"Run {run} recorded no step (no Session.run) to replay.")
    traced = replay.traced_spans(records, data.traced_steps(run))
    if len(traced) <= SPANS_READ:       # the ops' own span, without the step's overhead
        traced = {step: replay.stats_span(data.step_stats(run, step)) or span
                  for step, span in traced.items()}
    alert = replay.first_alert_step(data.alerts(run))
    bounds = {"run": run, "first": numbers[0], "last": numbers[-1],
              "numbers": None if numbers[-1] - numbers[0] + 1 == len(numbers) else numbers,
              "traced": {str(step): span for step, span in traced.items()},
              "ticks": TICKS_PER_TRACED_STEP, "alert": alert}
    query = _query(query)
    notice, step, at = "", numbers[0], None
    if query.get("run") in (None, "", run):
        try:
            wanted = step_number(query.get("step"), "the step in the address")
            at = _playhead(query.get("t"), "the time in the address")
        except BadInput as exc:
            wanted, notice = None, f"{str(exc)[:1].upper()}{str(exc)[1:]}; showing step " \
                                   f"{numbers[0]}."
        step = replay.snapped_step(numbers, wanted)
        if wanted is not None and step != wanted:
            notice = (f"Run {run} recorded no step {wanted} (steps {numbers[0]}–"
                      f"{numbers[-1]}); showing step {step}.")
    if step not in traced:
        at = None
    marks = _marks(numbers, sorted(traced), alert)
    if live is not None:
        return bounds, no_update, no_update, numbers[0], numbers[-1], marks
    return bounds, {"step": step, "t": at}, notice, numbers[0], numbers[-1], marks


# -- the graph --------------------------------------------------------------------------


def _drawn(problem: str) -> tuple:
    return no_update, [], problem, {"display": "block"}, cytoscape_layout(), no_update, ""


def expansion(run: str, expanded: Any) -> frozenset[str]:
    """The open groups the page keeps, those of the run's graph only (None before the first
    drawing: the Graph page's first view)."""
    if expanded is None:
        return data.graph_first_view(run)
    return frozenset(frozenset(scope_list(expanded) or ()) & data.hierarchy(run).groups.keys())


def _address_open(run: str, query: Any) -> frozenset[str] | None:
    """The groups the address opens (`open=a,b`) when it names this run (or none); None when
    it says nothing."""
    query = _query(query)
    opened = query.get("open")
    if query.get("run") not in (None, run) or opened is None:
        return None
    if not isinstance(opened, (str, list)):
        raise BadInput(f"the open scopes in the address must be text, got {clipped(opened)}")
    groups = data.hierarchy(run).groups
    return frozenset(address_values(opened, groups)) & groups.keys()


# What the Graph page's expansion handling (graph_page.next_state) takes each control for.
_AS_GRAPH = {CYTO: graph_page.CYTO, COLLAPSE_BUTTON: graph_page.COLLAPSE_BUTTON,
             EXPAND_BUTTON: graph_page.EXPAND_BUTTON}


@answers(_drawn)
def draw(run: str | None, trigger: str | None = None, tap: Any = None, current: Any = None,
         query: Any = None) -> tuple:
    """(open groups, elements, message, message style, layout, the address's `open` (the
    open groups; None: drop it), what the expansion says): a new run opens the address's
    groups (else the Graph page's first view); a tap on a closed scope or series opens it
    and on an open one closes it, and the buttons collapse all or open a level, as on the
    Graph page, whose handling and drawing (device colours) this reuses. Ticks only restyle
    the drawing."""
    if not run:
        return _drawn("No readable run in the log directory.")
    run = data.check_name(run)
    if data.graph(run) is None:
        return _drawn(f"Run {run} recorded no graph.")
    told = ""
    if trigger in _AS_GRAPH:
        opened, _selected, told = graph_page.next_state(
            _AS_GRAPH[trigger], run, tap, None, sorted(expansion(run, current)), "", {})
        if opened is no_update:
            return (no_update,) * 7
        address = opened
    else:
        asked = _address_open(run, query)
        opened = sorted(data.graph_first_view(run) if asked is None else asked)
        # Another run than the address's: its `open` named the other run's scopes.
        address = no_update if _query(query).get("run") in (None, run) else None
    elements, _legend, shown, shown_style, _summary, drawn = graph_page.draw(
        run, opened, DEFAULT_COLOR_MODE, None, [], "")
    return opened, elements, shown, shown_style, drawn, address, told


def state_at(run: str, step: int, at_us: float | None) -> replay.StepState:
    """The replay state of a step at a playhead time (untraced steps have none)."""
    if step not in set(data.traced_steps(run)):
        return replay.step_state(step, None, None)
    return replay.step_state(step, data.step_trace(run, step), at_us)


def _status(state: replay.StepState) -> str:
    done = sum(1 for node in state.nodes.values() if node.state == replay.DONE)
    running = [node.node for node in state.nodes.values() if node.state == replay.RUNNING]
    at = "end of step" if state.at_us is None else f"{format_us(state.at_us)}"
    parts = [f"{at} of {format_us(state.span_us)}: {done} of {len(state.nodes)} nodes done"]
    if running:
        parts.append(f"running {', '.join(sorted(running)[:3])}"
                     + (f" +{len(running) - 3}" if len(running) > 3 else ""))
    for flight in state.in_flight[:2]:
        fed = replay.fed_node(flight.producer)
        tensor = flight.tensor if fed == flight.producer else f"fed {fed}"
        parts.append(f"moving {tensor} to {_short(flight.dst_device)} "
                     f"({format_bytes(flight.bytes)})")
    if len(state.in_flight) > 2:
        parts.append(f"{len(state.in_flight) - 2} more transfers")
    return "; ".join(parts) + "."


def _short(device: str) -> str:
    return device.rpartition("device:")[2] or device


def _painted(problem: str) -> tuple:
    return stylesheet(), "", problem, _HIDDEN, "", None


@answers(_painted)
def paint(run: str | None, position: Any, bounds: Any, expanded: Any = None) -> tuple:
    """(stylesheet, step text, trace text, nearest-button style, status, nearest step) for
    the position: a traced step's nodes and transfers at the playhead on the drawing of the
    `expanded` groups (a node in an open scope lit itself, a closed scope or series while
    any member runs); an untraced step says so and offers the nearest traced one."""
    step, at = _position(position)
    if not run or step is None:
        return stylesheet(), "", "", _HIDDEN, "", None
    run = data.check_name(run)
    last = bounds.get("last") if isinstance(bounds, dict) else None
    step_text = f"Step {step}" + (f" of {last}" if isinstance(last, int) else "")
    traced = data.traced_steps(run)
    if step not in traced:
        near = replay.nearest_traced(traced, step)
        style = _HIDDEN if near is None else {}
        return (stylesheet(), step_text, replay.untraced_text(step, traced), style, "",
                near)
    state = state_at(run, step, at)
    record = data.graph(run)
    if record is None:
        return stylesheet(), step_text, "", _HIDDEN, _status(state), None
    view = data.view(run, expansion(run, expanded))
    leaves = replay.leaf_states(state, view.rep)
    edge_ids = [f"{edge.src}->{edge.dst}" for edge in view.edges]
    flying = replay.flight_edge_ids(state, view.rep, edge_ids)
    rules = stylesheet() + replay.replay_rules(leaves, flying)
    return rules, f"{step_text} (traced)", "", _HIDDEN, _status(state), None


def nearest_label(near: Any) -> str:
    return f"Go to traced step {near}" if isinstance(near, int) else ""


# -- curve, placement, alerts -------------------------------------------------------------


@answers(lambda problem: message_figure(problem, 240))
def curve(run: str | None, step: Any) -> Figure | dict:
    """The run's loss curve (its first tag naming loss, else its first tag) as logged when the
    step ended: points are cut by wall time, since a script's own step counter (a training
    step) and Session steps (which also count initializer and evaluation runs) differ."""
    step = step_number(step)
    if not run or step is None:
        return message_figure("No step to show.", 240)
    run = data.check_name(run)
    tag = replay.curve_tag(data.tags(run))
    if tag is None:
        return message_figure(f"Run {run} recorded no scalars.", 240)
    steps, values, walls = data.scalar_series(run, tag)
    records = data.steps(run)
    numbers = replay.step_numbers(records)
    alert = replay.first_alert_step(data.alerts(run))
    cut = _curve_cut(records, step, alert)
    return replay.replay_curve_figure(tag, steps, values, step, alert,
                                      numbers[-1] if numbers else None,
                                      walls if cut is not None else None, cut)


def _curve_cut(records: list, step: int, alert: int | None) -> replay.CurveCut | None:
    """Where the step (and the first alert's step) ended; None when the step was not
    recorded (the curve is then cut by step number)."""
    record = replay.step_record(records, step)
    if record is None:
        return None
    alerted = None if alert is None else replay.step_record(records, alert)
    return replay.CurveCut(replay.step_end_wall(record),
                           None if alerted is None else replay.step_end_wall(alerted))


def _placement_table(run: str, step: int) -> html.Div:
    record = replay.step_record(data.steps(run), step)
    version = replay.graph_version_at(record, data.plans(run))
    placements = data.placements(run, version)
    if not placements:
        return html.Div(message(f"No placement recorded up to step {step}."))
    lines = [placement.log_line for placement in placements][:PLACEMENT_LINES]
    more = len(placements) - len(lines)
    title = "Placement in force" + ("" if version is None else f" (graph version {version})")
    return html.Div([html.H4(title), html.Pre("\n".join(lines) + (
        f"\n… {more} more" if more > 0 else ""), className="placement-log replay-log")])


def _alert_list(run: str, step: int) -> list:
    alerts = data.alerts(run)
    shown = replay.alerts_until(alerts, step)
    if not alerts:
        return []
    if not shown:
        return [html.P(f"No alert up to step {step}.", className="muted")]
    first = replay.first_alert_step(alerts)
    items = [html.Li(f"step {alert.step}: {alert.node} ({alert.op}) — {alert.message}",
                     className="replay-alert-first" if alert.step == first else "")
             for alert in shown[:20]]
    reached = "replay-alert-banner replay-alert-now" if step == first else "replay-alert-banner"
    return [html.P(f"NaN/Inf first at step {first}", className=reached), html.Ul(items)]


@answers(lambda problem: (message(problem), []))
def logs(run: str | None, step: Any) -> tuple:
    """(the placement log in force at the step, the alerts recorded up to it)."""
    step = step_number(step)
    if not run or step is None:
        return "", []
    run = data.check_name(run)
    return _placement_table(run, step), _alert_list(run, step)


# -- the inspector --------------------------------------------------------------------------


def _tapped(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    ident = value.get("id")
    return ident if isinstance(ident, str) and 0 < len(ident) <= MAX_TEXT else None


@answers(message)
def inspect(tap: Any, run: str | None, position: Any, expanded: Any = None):
    """When the tapped node (or the nodes a collapsed one stands for) ran in this step."""
    ident = _tapped(tap)
    step, at = _position(position)
    if ident is None or not run or step is None:
        return INSPECTOR_HINT
    run = data.check_name(run)
    if data.graph(run) is None:
        return INSPECTOR_HINT
    view = data.view(run, expansion(run, expanded))
    names = sorted(name for name, leaf in view.rep.items() if leaf == ident) or sorted(
        name for name in view.rep if name.startswith(ident + "/"))    # an open scope's box
    if not names:
        return message(f"No node {clipped(ident)} in this drawing.")
    state = state_at(run, step, at)
    group = data.hierarchy(run).groups.get(ident)
    title = names[0] if group is not None and group.kind == OP else ident
    if not state.traced:
        return html.Div([html.H4(title, className="inspector-title"),
                         html.P(f"Step {step} was not traced: no timing.", className="muted")])
    rows = []
    for name in names[:30]:
        node = state.nodes.get(name)
        if node is None:
            rows.append(html.Tr([html.Td(name), html.Td("did not run", colSpan=3)]))
            continue
        runs = f" ×{node.runs} ({node.done} done)" if node.runs > 1 else ""
        rows.append(html.Tr([html.Td(name), html.Td(node.state + runs),
                             html.Td(f"start {format_us(node.first_start_us)}"),
                             html.Td(f"{format_us(node.busy_us)} on "
                                     f"{_short(node.device)}")]))
    return html.Div([html.H4(title, className="inspector-title"),
                     html.Table(html.Tbody(rows), className="inspector-table")])


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(BOUNDS_STORE, "data"), Output(POSITION_STORE, "data"),
                 Output(STEP_NOTICE_TEXT, "children"),
                 Output(STEP_SLIDER, "min"), Output(STEP_SLIDER, "max"),
                 Output(STEP_SLIDER, "marks"), Input(RUN_DROPDOWN, "value"),
                 State(QUERY_STORE, "data"), Input(LIVE["store"], "data"),
                 prevent_initial_call=True)(polled(step_bounds, LIVE["store"]))
    app.callback(Output(EXPANDED_STORE, "data"), Output(CYTO, "elements"),
                 Output(GRAPH_MESSAGE, "children"), Output(GRAPH_MESSAGE, "style"),
                 Output(CYTO, "layout"), Output(OPEN_STORE, "data"),
                 Output(EXPAND_TEXT, "children"), Input(RUN_DROPDOWN, "value"),
                 Input(CYTO, "tapNodeData"), Input(COLLAPSE_BUTTON, "n_clicks"),
                 Input(EXPAND_BUTTON, "n_clicks"), State(EXPANDED_STORE, "data"),
                 State(QUERY_STORE, "data"))(_draw_input)
    app.callback(Output(CYTO, "stylesheet"), Output(STEP_TEXT, "children"),
                 Output(TRACE_TEXT, "children"), Output(NEAREST_BUTTON, "style"),
                 Output(STATUS_TEXT, "children"), Output(NEAREST_STORE, "data"),
                 Input(POSITION_STORE, "data"), Input(EXPANDED_STORE, "data"),
                 State(RUN_DROPDOWN, "value"), State(BOUNDS_STORE, "data"))(
        _paint_input_first)
    app.callback(Output(NEAREST_BUTTON, "children"), Input(NEAREST_STORE, "data"))(
        nearest_label)
    app.callback(Output(CURVE_GRAPH, "figure"), Input(STEP_STORE, "data"),
                 State(RUN_DROPDOWN, "value"))(_curve_input_first)
    app.callback(Output(PLACEMENT_DIV, "children"), Output(ALERTS_DIV, "children"),
                 Input(STEP_STORE, "data"), State(RUN_DROPDOWN, "value"))(_logs_input_first)
    app.callback(Output(INSPECTOR_DIV, "children"), Input(CYTO, "tapNodeData"),
                 Input(POSITION_STORE, "data"), State(RUN_DROPDOWN, "value"),
                 State(EXPANDED_STORE, "data"))(inspect)
    register_live(app, "replay", (RUN_DROPDOWN,), LIVE_PARTS)
    _register_browser_side(app)


def _draw_input(run, tap, _collapse, _expand, current, query):
    """The run first: Dash calls this once when a new run is chosen, whatever else woke."""
    woken = [prop.rpartition(".")[0] for prop in dash.ctx.triggered_prop_ids]
    trigger = RUN_DROPDOWN if RUN_DROPDOWN in woken or not woken else woken[0]
    return draw(run, trigger, tap, current, query)


def _paint_input_first(position, expanded, run, bounds):
    return paint(run, position, bounds, expanded)


def shown_step(shown: Any, run: Any) -> tuple[Any, Any]:
    """(run, step) from the browser's [run, step] pair (the dropdown's run otherwise)."""
    if isinstance(shown, list) and len(shown) == 2:
        return shown[0], shown[1]
    return run, None


def _curve_input_first(shown, run):
    return curve(*shown_step(shown, run))


def _logs_input_first(shown, run):
    return logs(*shown_step(shown, run))


def _register_browser_side(app: dash.Dash) -> None:
    """Play, pause, speed, the buttons (which the keys press) and the address: in the
    browser (assets/replay.js), so a tick costs the server only what the step shows."""
    app.clientside_callback(
        ClientsideFunction("replay", "navigate"),
        Output(POSITION_STORE, "data", allow_duplicate=True),
        Input(PLAY_INTERVAL, "n_intervals"), Input(FIRST_BUTTON, "n_clicks"),
        Input(PREV_BUTTON, "n_clicks"), Input(NEXT_BUTTON, "n_clicks"),
        Input(LAST_BUTTON, "n_clicks"), Input(NEAREST_BUTTON, "n_clicks"),
        Input(STEP_SLIDER, "value"), Input(TIME_SLIDER, "value"),
        State(BOUNDS_STORE, "data"), State(POSITION_STORE, "data"),
        State(SPEED_DROPDOWN, "value"), State(NEAREST_STORE, "data"),
        prevent_initial_call=True)
    app.clientside_callback(
        ClientsideFunction("replay", "show"),
        Output(STEP_SLIDER, "value"), Output(TIME_SLIDER, "value"),
        Output(TIME_SLIDER, "max"), Output(TIME_SLIDER, "disabled"),
        Output(STEP_STORE, "data"), Output(URL_STORE, "data"),
        Input(POSITION_STORE, "data"), State(BOUNDS_STORE, "data"),
        State(STEP_STORE, "data"), prevent_initial_call=True)
    app.clientside_callback(
        ClientsideFunction("replay", "opened"), Output(OPEN_URL_STORE, "data"),
        Input(OPEN_STORE, "data"), prevent_initial_call=True)
    app.clientside_callback(
        ClientsideFunction("replay", "speed"), Output(SPEED_URL_STORE, "data"),
        Input(SPEED_DROPDOWN, "value"))
    app.clientside_callback(
        ClientsideFunction("replay", "play"),
        Output(PLAYING_STORE, "data"), Output(PLAY_INTERVAL, "disabled"),
        Output(PLAY_BUTTON, "children"),
        Input(PLAY_BUTTON, "n_clicks"), Input(POSITION_STORE, "data"),
        State(BOUNDS_STORE, "data"), State(PLAYING_STORE, "data"),
        prevent_initial_call=True)
