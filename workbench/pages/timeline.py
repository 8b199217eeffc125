"""Timeline page (`/timeline?run=NAME&step=N&from=US&to=US`): a traced step's op executions
as bars, one lane per device, transfers as arrows between lanes; a click on a bar opens that
node on the Graph page, and the step downloads as Chrome trace JSON (Perfetto,
chrome://tracing). The run, the step and the zoomed time window (microseconds since the step
began) are kept in the address."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import dash
from dash import Input, Output, State, dcc, html, no_update

from viz.message import message_figure
from viz.timeline import OP, chrome_trace, timeline_figure, timeline_summary
from workbench import data, live
from workbench.inputs import MAX_TEXT, BadInput, finite_number, step_number
from workbench.pages.common import (
    address,
    address_stores,
    address_value,
    answers,
    choose_run,
    keep_zooms,
    labelled,
    live_follow,
    live_ids,
    loading,
    page_header,
    polled,
    register_address,
    register_live,
    run_choices,
    run_notice,
    run_options,
    zoom_of,
)

PATH = "/timeline"
NAME = "Timeline"
GRAPH_PATH = "/graph"

QUERY_STORE = "timeline-query-store"
RUN_DROPDOWN = "timeline-run-dropdown"
STEP_DROPDOWN = "timeline-step-dropdown"
DOWNLOAD_BUTTON = "timeline-download-button"
DOWNLOAD = "timeline-trace-download"
DOWNLOAD_TEXT = "timeline-download-text"
BARS_GRAPH = "timeline-bars-graph"
BARS_LOADING = "timeline-bars-loading"
SUMMARY_TEXT = "timeline-summary-text"
NOTICE_TEXT = "timeline-notice-text"
STEP_NOTICE_TEXT = "timeline-step-notice-text"
NAV_LOCATION = "timeline-nav-location"
NAV_TEXT = "timeline-nav-text"
WINDOW_NOTICE_TEXT = "timeline-window-notice-text"
LIVE = live_ids("timeline")
LIVE_PARTS = ("traced",)
DRAWN_STORE = "timeline-drawn-store"   # the run the drawn figure is of


def layout(run: str | None = None, step: str | None = None, **query) -> html.Div:
    try:
        window, told = time_window(address_value(query.get("from")),
                                   address_value(query.get("to"))), ""
    except BadInput as exc:
        window, told = None, f"{str(exc)[:1].upper()}{str(exc)[1:]}; showing the whole step."
    return html.Div([
        page_header("Timeline", "One traced step: each bar is an op execution on its device's "
                                "lane, red arrows are Send/Recv transfers. Drag to zoom, "
                                "click a bar to open its node in the graph."),
        dcc.Store(id=QUERY_STORE, data={"run": run, "step": step,
                                         "window": None if window is None else list(window)}),
        dcc.Store(id=DRAWN_STORE),
        *address_stores("timeline"),
        dcc.Location(id=NAV_LOCATION, refresh="callback-nav"),
        dcc.Download(id=DOWNLOAD),
        html.Div(className="controls", children=[
            labelled("Run", dcc.Dropdown(id=RUN_DROPDOWN, clearable=False)),
            labelled("Traced step", dcc.Dropdown(id=STEP_DROPDOWN, clearable=False)),
            html.Button("Download Chrome trace", id=DOWNLOAD_BUTTON, className="button"),
            html.Span(id=DOWNLOAD_TEXT, className="muted"),
        ]),
        html.P(id=NOTICE_TEXT, className="message notice"),
        live_follow("timeline"),
        html.P(id=STEP_NOTICE_TEXT, className="message notice"),
        html.P(told, id=WINDOW_NOTICE_TEXT, className="message notice"),
        html.P(id=SUMMARY_TEXT, className="muted"),
        html.P(id=NAV_TEXT, className="message notice"),
        loading(BARS_LOADING, dcc.Graph(
            id=BARS_GRAPH, figure=message_figure("Loading timeline…"),
            config={"scrollZoom": True, "displaylogo": False,
                    "modeBarButtonsToRemove": ["lasso2d", "select2d"]})),
    ])


def time_window(start: Any, end: Any) -> tuple[float, float] | None:
    """The zoomed time window (`from`, `to`: microseconds since the step began), checked:
    both or neither, finite, from 0, the end after the start; None when neither is given."""
    low = finite_number(start, "the window's start (from, in microseconds)", 0)
    high = finite_number(end, "the window's end (to, in microseconds)", 0)
    if low is None and high is None:
        return None
    if low is None or high is None:
        raise BadInput("the time window needs both from and to (microseconds since the step "
                       "began)")
    if high <= low:
        raise BadInput(f"the time window's end (to={high:g}) must be after its start "
                       f"(from={low:g})")
    return low, high


def _query(query: Any) -> dict:
    """The address's run and step (one value each)."""
    query = query if isinstance(query, dict) else {}
    return {key: address_value(query.get(key)) for key in ("run", "step")}


@answers(lambda problem: ([], None, problem))
def run_choice(query: dict | None) -> tuple[list[dict], str | None, str]:
    """(options, the run to show, a notice when it is not the one asked for)."""
    requested = _query(query).get("run")
    names, healthy = run_choices()
    chosen = choose_run(names, requested, healthy)
    options = run_options(names, frozenset(names) - frozenset(healthy))
    return options, chosen, run_notice(requested, chosen)


@answers(lambda problem: ([], None, problem))
def step_choice(run: str | None, query: dict | None, current: Any = None, shown: Any = None,
                live: Any = None) -> tuple[list[dict], int | None, str]:
    """(traced steps as options, the step to show, a notice): the step in the address when
    the run is the one asked for and traced that step, else the latest traced step. After a
    poll (`live`) new steps join the options and the `current` step stays, unless it was the
    latest of the options `shown`: then the newest traced step is shown."""
    if not run:
        return [], None, ""
    run = data.check_name(run)
    steps = data.traced_steps(run)
    options = [{"label": f"step {step}", "value": step} for step in reversed(steps)]
    if not steps:
        return [], None, f"Run {run} has no traced step (no step recorded per-op stats)."
    if live is not None:
        return _followed(options, steps[-1], current, shown)
    query = _query(query)
    requested = step_number(query.get("step"), "the step in the address")
    if query.get("run") not in (None, "", run) or requested is None:
        return options, steps[-1], ""
    if requested in steps:
        return options, requested, ""
    return options, steps[-1], (f"Step {requested} of {run} was not traced; showing the "
                                f"latest traced step, {steps[-1]}.")


def _followed(options: list[dict], newest: int, current: Any, shown: Any) -> tuple:
    if options == shown:
        return no_update, no_update, no_update
    first = shown[0] if isinstance(shown, list) and shown else None
    latest = first.get("value") if isinstance(first, dict) else None
    follows = current is None or current == latest
    return options, newest if follows else no_update, no_update


def _view_problem(problem: str) -> tuple:
    return message_figure(problem), "", None, None


@answers(_view_problem)
def timeline_view(run: str | None, step: Any, zoom: Any = None, drawn: Any = None,
                  query: Any = None) -> tuple:
    """(the figure, its summary line, the run drawn, the zoom store) for a run's traced step.
    Another step of the run `drawn` (the user's, or a poll following the newest traced step)
    keeps the user's zoom (`zoom`, the page's zoom store): the time axis is the same; another
    run starts unzoomed and forgets it, except on the first drawing (nothing `drawn`), which
    zooms to the address's time window (`query`) when the address names this run or none."""
    found = _timeline(run, step)
    if isinstance(found, str):
        return message_figure(found), "", None, None
    run, figure, summary = found
    if drawn is None:
        window = _address_window(run, query)
        if window is not None:
            zoom = {BARS_GRAPH: {"xaxis": window}}
            return live.kept_zoom(figure, zoom[BARS_GRAPH]), summary, run, zoom
    if drawn != run:
        return figure, summary, run, None
    return live.kept_zoom(figure, zoom_of(zoom, BARS_GRAPH)), summary, run, no_update


def _address_window(run: str, query: Any) -> list[float] | None:
    """The time window the layout read from the address (checked again: a request can carry
    anything), when the address names this run or none."""
    query = query if isinstance(query, dict) else {}
    window = query.get("window")
    if _query(query).get("run") not in (None, run) or not isinstance(window, list) or len(
            window) != 2:
        return None
    try:
        found = time_window(*window)
    except BadInput:
        return None
    return None if found is None else list(found)


def _timeline(run: str | None, step: Any) -> tuple | str:
    """(run, figure, summary), or what to say instead."""
    if not run:
        return "No readable run in the log directory."
    run = data.check_name(run)
    step = step_number(step)
    if step is None:
        return f"Run {run} has no traced step to draw."
    trace = data.step_trace(run, step)
    if not trace.stats:
        return f"Step {step} of {run} recorded no op executions."
    figure = timeline_figure(trace)
    # Same run and step -> same revision: a redraw keeps what a drag changed.
    figure.update_layout(uirevision=f"{run}:{step}")
    return run, figure, timeline_summary(trace)


@answers(lambda problem: (no_update, problem))
def download_trace(_clicks: int | None, run: str | None, step: Any) -> tuple[Any, str]:
    """The chosen step as Chrome trace JSON, for dcc.Download."""
    if not run:
        return no_update, "No run to export."
    run = data.check_name(run)
    step = step_number(step)
    if step is None:
        return no_update, f"Run {run} has no traced step to export."
    trace = data.step_trace(run, step)
    content = json.dumps(chrome_trace(trace), separators=(",", ":"))
    filename = f"{run}-step{step}.trace.json"
    return ({"content": content, "filename": filename, "type": "application/json"},
            f"Saved {filename}: open it in Perfetto (ui.perfetto.dev) or chrome://tracing.")


def clicked_node(click: Any) -> str | None:
    """The graph node of a clicked bar (a Send/Recv's producer); None for a click on a
    transfer arrow or anything that is not a plotly click on a bar."""
    if not isinstance(click, dict):
        return None
    points = click.get("points")
    if not isinstance(points, list) or not points or not isinstance(points[0], dict):
        return None
    custom = points[0].get("customdata")
    if not isinstance(custom, list) or len(custom) != 8 or custom[0] != OP:
        return None
    node = custom[7]
    return node if isinstance(node, str) and 0 < len(node) <= MAX_TEXT else None


def graph_href(run: str, step: int | None, node: str) -> str:
    query = {"run": run, **({} if step is None else {"step": step}), "node": node}
    return f"{GRAPH_PATH}?{urlencode(query)}"


@answers(lambda problem: (no_update, problem))
def open_in_graph(click: Any, run: str | None, step: Any) -> tuple[Any, str]:
    """(the Graph page's address with the clicked node selected, "") for a click on a bar."""
    node = clicked_node(click)
    if node is None or not run:
        return no_update, no_update
    return graph_href(data.check_name(run), step_number(step), node), ""


@answers(lambda _problem: no_update)
def view_address(run: Any, step: Any, zoom: Any = None) -> str:
    """The address of the shown run, traced step and zoomed time window (the page's zoom
    store), as the layout, run_choice and step_choice read it. A window dragged to before
    the step began starts at 0; a zoom that is not a window of the time axis is left out."""
    window = live.zoomed_axes(zoom_of(zoom, BARS_GRAPH)).get("xaxis")
    try:
        window = time_window(max(float(window[0]), 0.0), window[1]) if window else None
    except (BadInput, TypeError, ValueError):
        window = None
    low, high = (None, None) if window is None else (_us(window[0]), _us(window[1]))
    return address(PATH, {"run": data.check_name(run) if run else None,
                          "step": step_number(step), "from": low, "to": high})


def _us(value: float) -> str:
    """Microseconds as the address writes them: to a tenth, without an exponent."""
    return f"{value:.1f}".removesuffix(".0")


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(STEP_DROPDOWN, "options"), Output(STEP_DROPDOWN, "value"),
                 Output(STEP_NOTICE_TEXT, "children"), Input(RUN_DROPDOWN, "value"),
                 State(QUERY_STORE, "data"), State(STEP_DROPDOWN, "value"),
                 State(STEP_DROPDOWN, "options"), Input(LIVE["store"], "data"))(
        polled(step_choice, LIVE["store"]))
    app.callback(Output(BARS_GRAPH, "figure"), Output(SUMMARY_TEXT, "children"),
                 Output(DRAWN_STORE, "data"), Output(LIVE["zoom"], "data", allow_duplicate=True),
                 Input(RUN_DROPDOWN, "value"), Input(STEP_DROPDOWN, "value"),
                 State(LIVE["zoom"], "data"), State(DRAWN_STORE, "data"),
                 State(QUERY_STORE, "data"),
                 prevent_initial_call="initial_duplicate")(timeline_view)
    keep_zooms(app, "timeline", BARS_GRAPH)
    app.callback(Output(DOWNLOAD, "data"), Output(DOWNLOAD_TEXT, "children"),
                 Input(DOWNLOAD_BUTTON, "n_clicks"), State(RUN_DROPDOWN, "value"),
                 State(STEP_DROPDOWN, "value"), prevent_initial_call=True)(download_trace)
    app.callback(Output(NAV_LOCATION, "href"), Output(NAV_TEXT, "children"),
                 Input(BARS_GRAPH, "clickData"), State(RUN_DROPDOWN, "value"),
                 State(STEP_DROPDOWN, "value"), prevent_initial_call=True)(open_in_graph)
    register_address(app, "timeline", PATH, view_address, Input(RUN_DROPDOWN, "value"),
                     Input(STEP_DROPDOWN, "value"), Input(LIVE["zoom"], "data"))
    register_live(app, "timeline", (RUN_DROPDOWN,), LIVE_PARTS)
