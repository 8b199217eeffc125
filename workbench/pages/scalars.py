"""Scalars page (`/scalars?run=A,B&tag=loss,acc&x=step|relative|wall&log=1&smoothing=W&step=N
&from=X&to=Y`): curves of the chosen tags for several runs together (one figure, a subplot per
tag), raw faint and smoothed bold, with TensorBoard's smoothing slider, its three horizontal
axes and a log scale; a zoom re-reads the zoomed range at full resolution (scalars_zoom);
downloads every point of the view as CSV or JSON; polls for live runs. The view's choices are
kept in the address bar and in a link to this view."""

from __future__ import annotations

import logging

import dash
from dash import ALL, Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate

from engine.record.schema import RUNNING
from viz.scalars import STEP, X_AXES, series_csv, series_json, subplot_points, tags_figure
from workbench import data, inputs, live
from workbench.pages import scalars_zoom
from workbench.pages.common import (
    PROBLEMS,
    address,
    address_stores,
    address_value,
    address_values,
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
    problem_text,
    register_address,
    register_live,
    run_choices,
    run_notice,
    run_options,
    zoom_of,
)

PATH = "/scalars"
NAME = "Scalars"
DEFAULT_SMOOTHING = 0.6
DEFAULT_TAG = "loss"

RUN_DROPDOWN = "scalars-run-dropdown"
QUERY_STORE = "scalars-query-store"
TAG_DROPDOWN = "scalars-tag-dropdown"
SMOOTHING_SLIDER = "scalars-smoothing-slider"
LIVE = live_ids("scalars")
LIVE_PARTS = ("steps", "tags")
CURVE_GRAPH = "scalars-curve-graph"
CURVES_DIV = "scalars-curves-div"
CURVES_LOADING = "scalars-curves-loading"
NOTICE_TEXT = "scalars-notice-text"
TAG_QUERY_STORE = "scalars-tag-query-store"
STEP_QUERY_STORE = "scalars-step-query-store"
X_AXIS_RADIO = "scalars-x-axis-radio"
LOG_SCALE_CHECK = "scalars-log-scale-check"
CSV_BUTTON = "scalars-csv-button"
JSON_BUTTON = "scalars-json-button"
DOWNLOAD = "scalars-download"
VIEW_LINK = "scalars-view-link"
LOG_ON = "log"
X_AXIS_LABELS = {"step": "Step", "relative": "Relative", "wall": "Wall"}
WARM_TAGS = 8
_log = logging.getLogger("workbench")


def warm(limit: int = 3, tags_per_run: int = WARM_TAGS) -> None:
    """Reads and downsamples the curves of the newest `limit` healthy runs (their first
    `tags_per_run` tags, at the default smoothing, as several subplots draw them; then the
    first tags a visit without a query draws, in one subplot, which reads no value again)
    before anyone asks, so a fresh server's first visit only draws them. The server starts
    this in a thread; a page's own reads go ahead of it (data.background). What fails is
    left for the page to tell."""
    names = data.healthy_run_names()[:limit]
    with data.background():
        for name in names:
            try:
                for tag in data.tags(name)[:tags_per_run]:
                    data.curve(name, tag, DEFAULT_SMOOTHING, subplot_points(2))
            except Exception as exc:  # noqa: BLE001 -- the page reports it when it is asked
                _log.info("not warmed: %s: %.200s", name, exc)
        _, first_tags = tag_choice(names, None)
        if len(first_tags) == 1:
            for name in names:
                try:
                    data.curve(name, first_tags[0], DEFAULT_SMOOTHING, subplot_points(1))
                except Exception:  # noqa: BLE001 -- the page tells what fails
                    continue


def layout(run: str | None = None, tag: str | None = None, x: str | None = None,
           log: str | None = None, step: str | None = None, smoothing: str | None = None,
           **_query) -> html.Div:
    """The query picks the view: runs and tags comma-separated, the x axis, log=1, the
    smoothing weight, and a step to mark (an alert's: the Alerts page links here with it)."""
    x_axis = x if x in X_AXES else STEP
    zoom = address_zoom(x_axis, _query.get("from"), _query.get("to"))
    try:
        marked = inputs.step_number(address_value(step))
    except inputs.BadInput:     # a bad step in the address marks nothing; the page still opens
        marked = None
    weight = address_smoothing(smoothing)
    log_scale = [LOG_ON] if log in ("1", "true", "yes") else []
    first = initial_view(run, tag)
    return html.Div([
        page_header("Scalars", "Values logged per step; raw values faint, smoothed bold."),
        dcc.Store(id=QUERY_STORE, data=run),
        dcc.Store(id=TAG_QUERY_STORE, data=tag),
        dcc.Store(id=STEP_QUERY_STORE, data=marked),
        dcc.Store(id=scalars_zoom.ZOOM_STORE, data=zoom),
        dcc.Store(id=scalars_zoom.ZOOM_ASK_STORE),
        dcc.Download(id=DOWNLOAD), *address_stores("scalars", link=True),
        html.Div(className="controls", children=[
            labelled("Runs", dcc.Dropdown(id=RUN_DROPDOWN, multi=True,
                                          options=first["runs"], value=first["run"])),
            labelled("Tags", dcc.Dropdown(id=TAG_DROPDOWN, multi=True,
                                          options=first["tags"], value=first["tag"])),
            labelled("Smoothing", dcc.Slider(
                id=SMOOTHING_SLIDER, min=0, max=0.99, step=0.01, value=weight,
                marks={0: "0", 0.6: "0.6", 0.99: "0.99"},
                tooltip={"placement": "bottom", "always_visible": False})),
            labelled("Horizontal axis", dcc.RadioItems(
                id=X_AXIS_RADIO, value=x_axis, inline=True,
                options=[{"label": X_AXIS_LABELS[a], "value": a} for a in X_AXES])),
            labelled("Values", dcc.Checklist(
                id=LOG_SCALE_CHECK, options=[{"label": "log scale", "value": LOG_ON}],
                value=log_scale, inline=True)),
            html.Div(className="control", children=[
                html.Button("Download CSV", id=CSV_BUTTON, className="button"),
                html.Button("Download JSON", id=JSON_BUTTON, className="button"),
                html.A("Link to this view", id=VIEW_LINK, href=PATH, className="view-link"),
            ]),
        ]),
        html.P(first["notice"], id=NOTICE_TEXT, className="message notice"),
        live_follow("scalars"),
        # The first curves come with the page: no callback round trip before plotly draws.
        loading(CURVES_LOADING, html.Div(id=CURVES_DIV, children=curves(
            first["run"], first["tag"], weight, None, x_axis, log_scale, marked, zoom))),
    ])


def address_zoom(x_axis: str, low, high) -> dict | None:
    """The zoom the address asks for (`from`, `to` on the x axis shown); none for a bad
    one (the page still opens, unzoomed)."""
    low, high = address_value(low), address_value(high)
    if low is None or high is None:
        return None
    ends = scalars_zoom.zoom_or_none({"axis": x_axis, "from": low, "to": high}, x_axis)
    return None if ends is None else {"axis": x_axis, "from": ends[0], "to": ends[1]}


def address_smoothing(value) -> float:
    """The smoothing weight the address asks for (the default for none or a bad one)."""
    try:
        return inputs.smoothing(float(address_value(value) or "nan"), DEFAULT_SMOOTHING)
    except (ValueError, inputs.BadInput):
        return DEFAULT_SMOOTHING


def initial_view(run, tag) -> dict:
    """The runs and tags the page first shows for its address, chosen while the layout is
    built, so the curves are asked for at once (one round trip) instead of after the run and
    tag callbacks answer one after the other; those then fire only on what the user
    changes. Each part answers a problem with a message, as its callback does."""
    run_options_, runs, notice = run_choice(run)
    tag_options, tags = tag_choice(runs, None, tag)
    return {"runs": run_options_, "run": runs, "notice": notice, "tags": tag_options,
            "tag": tags}


def _requested_names(requested, names: list[str]) -> list[str] | None:
    """The runs a query asked for: one name, or names separated by commas (a run whose own
    name has a comma is matched whole first). None when nothing was asked."""
    return address_values(requested, names) or None


@answers(lambda problem: ([], [], problem))
def run_choice(requested: str | None) -> tuple[list[dict], list[str], str]:
    """Every readable run as an option; the requested ones chosen, else every healthy one
    (every readable one when none is healthy), and a notice naming a requested run that is
    not there."""
    names, healthy = run_choices()
    asked = _requested_names(requested, names)
    found = [name for name in asked or () if name in names]
    chosen = found or healthy or names
    options = run_options(names, frozenset(names) - frozenset(healthy))
    missing = [name for name in asked or () if name not in names]
    if asked is None:       # nothing asked, or not text at all
        return options, chosen, run_notice(requested, None)
    if len(asked) == 1:
        return options, chosen, run_notice(requested, asked[0] if found else None)
    notice = run_notice(missing[0], None) if missing else ""
    return options, chosen, notice


@answers(lambda _problem: ([], []))
def tag_choice(runs: list[str] | None, current: list[str] | None,
               requested: str | None = None, live=None) -> tuple[list[str], list[str]]:
    """Tags of the chosen runs; keeps the current choice where it still exists, else the
    tags the query asked for, else "loss" when there is one, else the first tag. A run that
    cannot be read adds none (the curves say why). After a poll (`live`) a choice that stays
    is not sent again (the curves would be rebuilt, losing the user's zoom)."""
    current = inputs.text_list(current, "the tags")
    before = list(current)
    tags = set()
    for run in inputs.text_list(runs, "the runs"):
        try:
            tags.update(data.tags(data.check_name(run)))
        except PROBLEMS:
            continue
    tags = sorted(tags)
    current = current or address_values(requested, tags)
    kept = [tag for tag in current if tag in tags]
    if kept and live is not None and kept == before:
        return tags, dash.no_update
    if kept:
        return tags, kept
    return tags, [DEFAULT_TAG] if DEFAULT_TAG in tags else tags[:1]


def _x_axis(value) -> str:
    if value is None:
        return STEP
    if value not in X_AXES:
        raise inputs.BadInput(f"The horizontal axis must be one of {', '.join(X_AXES)}, got "
                              f"{inputs.clipped(value)}")
    return value


@answers(lambda problem: [message(problem)])
def curves(runs: list[str] | None, tags: list[str] | None, smoothing: float | None,
           _unused=None, x_axis: str | None = None,
           log_scale: list[str] | None = None, marked_step: int | None = None,
           zoom=None) -> list:
    """One graph with a subplot per tag that some chosen run has, one colour per run,
    `marked_step` (if any) marked on each, zoomed to `zoom` (the zoom store's, when made
    on this x axis); a message for each run that cannot be read (the others still draw). A
    poll redraws the figure in place instead (refresh_curves)."""
    runs = [data.check_name(run) for run in inputs.text_list(runs, "the runs")]
    tags = inputs.text_list(tags, "the tags")
    if not runs or not tags:
        return [message("Choose at least one run and one tag.")]
    problems: dict[str, str] = {}
    view = _view_options(smoothing, x_axis, log_scale, marked_step)
    figure = _figure(tags, runs, view, problems, scalars_zoom.checked_zoom(zoom, view[1]))
    notes = [message(f"{run}: {text}") for run, text in problems.items()]
    if figure is None:
        return notes or [message("None of the chosen runs has the chosen tags.")]
    return notes + [dcc.Graph(id=_graph_id(tags), figure=figure, config={"displaylogo": False})]


def _graph_id(tags: list[str]) -> dict:
    """The curves' graph id: its tags, so the refresh redraws only the view it was made for
    and the zoom store keeps one zoom per view."""
    return {"type": CURVE_GRAPH, "tag": ",".join(tags)}


def _view_options(smoothing, x_axis, log_scale, marked_step) -> tuple:
    """(smoothing weight, x axis, log values, marked step) from the controls, checked."""
    return (inputs.smoothing(smoothing, DEFAULT_SMOOTHING), _x_axis(x_axis),
            LOG_ON in inputs.text_list(log_scale, "the value scale"),
            inputs.step_number(marked_step, "the marked step"))


def _figure(tags: list[str], runs: list[str], view: tuple, problems: dict[str, str],
            zoomed: tuple | None = None):
    """The tags' figure over the runs that have them (None when no run has any); a run that
    cannot be read goes into `problems` and is skipped from then on. Each curve keeps the
    points its subplot's width can show (subplot_points of the tags drawn); with `zoomed`
    (an x range, checked_zoom's) the points of that range, every subplot shown over it."""
    weight, axis, log_y, marked = view
    present: dict[str, set[str]] = {}
    for run in runs:
        try:
            present[run] = set(data.tags(run))
        except PROBLEMS as exc:
            problems[run] = problem_text(exc)
    drawn_tags = [tag for tag in tags if any(tag in found for found in present.values())]
    points = subplot_points(len(drawn_tags))
    drawn: dict[str, dict] = {}
    for tag in drawn_tags:
        by_run = {}
        for run, found in present.items():
            if run in problems or tag not in found:
                continue
            try:
                by_run[run] = data.curve(run, tag, weight, points)
            except PROBLEMS as exc:
                problems[run] = problem_text(exc)
        if by_run and zoomed is not None:
            by_run = scalars_zoom.zoomed_tag(by_run, tag, weight, points, axis, zoomed)
        if by_run:
            drawn[tag] = by_run
    if not drawn:
        return None
    figure = tags_figure(drawn, x_axis=axis, log_y=log_y, marked_step=marked)
    # A constant revision per view keeps the user's zoom across live refreshes and zooms.
    figure.update_layout(uirevision=",".join(tags))
    if zoomed is not None:
        scalars_zoom.state_range(figure, zoomed)
    return figure


def _unchanged(_problem: str = ""):
    """A wildcard output takes a list or nothing: no update is PreventUpdate there."""
    raise PreventUpdate


@answers(_unchanged)
def refresh_curves(graph_ids, runs, tags, smoothing, x_axis, log_scale, marked_step,
                   live_state=None, zooms=None, zoom=None) -> list:
    """After a poll (`live_state`): the drawn figure rebuilt with the new points, set on the
    graph in place (a new graph would be a new plot), with the user's zoom of each subplot
    (`zooms`, the page's zoom store) stated on it. A graph drawn for other tags than the
    chosen ones is left (the curves callback is drawing the new view). The first fingerprint
    of finished runs (the page just opened, or other runs were chosen) redraws nothing: the
    layout or the curves callback drew them already. A zoom fetched (`zoom`, the zoom
    store) is fetched again with the new points."""
    if (live_state is None or not isinstance(graph_ids, list) or not graph_ids
            or _first_of_done(live_state)):
        _unchanged()
    runs = [data.check_name(run) for run in inputs.text_list(runs, "the runs")]
    tags = inputs.text_list(tags, "the tags")
    view = _view_options(smoothing, x_axis, log_scale, marked_step)
    zoomed = scalars_zoom.checked_zoom(zoom, view[1])
    figures = []
    for ident in graph_ids:
        figure = _figure(tags, runs, view, {}, zoomed) if (
            tags and runs and ident == _graph_id(tags)) else None
        figures.append(dash.no_update if figure is None
                       else live.kept_zoom(figure, zoom_of(zooms, ident)))
    return figures


def _first_of_done(live_state) -> bool:
    """Whether a live state is the first one for its runs (not a poll's) and none of them
    runs: there is nothing newer than what the page drew from the same store."""
    found = live_state.get("runs") if isinstance(live_state, dict) else None
    if "runs" not in live_changed(live_state) or not isinstance(found, dict):
        return False
    return not any(isinstance(run, dict) and run.get("status") == RUNNING
                   for run in found.values())


def _refresh_with_zooms(*args):
    """polled() passes the live store's state when it is the last argument."""
    *rest, live_state, zooms, zoom = args
    return polled(lambda *got: refresh_curves(*got, zooms, zoom), LIVE["store"])(
        *rest, live_state)


def _no_zoom_update(_problem: str = ""):
    raise PreventUpdate


@answers(_no_zoom_update)
def zoom_curves(zoom_ask, graph_ids, runs, tags, smoothing, x_axis, log_scale, marked_step,
                current=None) -> tuple[list, dict | None]:
    """A zoom of any subplot (the relayout in `zoom_ask`, the zoom-ask store: its x range):
    every subplot redrawn over that range from its points there (data.zoomed_curve), and the
    zoom kept in the zoom store (so in the address); a double click's autorange: the whole
    view again, the zoom dropped. Anything else (a y-only zoom, a zoom already drawn)
    changes nothing; a bad range is ignored. The browser writes the store from the plots'
    relayout events that ask of the x axes (assets/scalars.js), not a resize's."""
    relayout = scalars_zoom.asked_relayout(zoom_ask)
    asked = scalars_zoom.relayout_zoom(relayout)
    if asked is None or not isinstance(graph_ids, list):
        raise PreventUpdate
    runs = [data.check_name(run) for run in inputs.text_list(runs, "the runs")]
    tags = inputs.text_list(tags, "the tags")
    view = _view_options(smoothing, x_axis, log_scale, marked_step)
    before = scalars_zoom.zoom_or_none(current, view[1])
    if asked == scalars_zoom.RESET:
        zoom, ends = None, None
        if before is None:
            raise PreventUpdate
    else:
        ends = scalars_zoom.checked_zoom({"axis": view[1], "from": asked[0], "to": asked[1]},
                                         view[1])
        zoom = {"axis": view[1], "from": ends[0], "to": ends[1]}
        if ends == before:
            raise PreventUpdate
    figures = []
    for ident in graph_ids:
        figure = _figure(tags, runs, view, {}, ends) if (
            tags and runs and ident == _graph_id(tags)) else None
        if figure is not None and ends is None:
            scalars_zoom.state_range(figure, None)
        elif figure is not None:
            live.kept_zoom(figure, scalars_zoom.relayout_values(relayout))
        figures.append(dash.no_update if figure is None else figure)
    return figures, zoom


def _chosen_series(runs, tags) -> list[tuple]:
    """Every point of each chosen (run, tag) that exists: (run, tag, steps, walls, values)."""
    runs = [data.check_name(run) for run in inputs.text_list(runs, "the runs")]
    series = []
    for run in runs:
        present = set(data.tags(run))
        for tag in inputs.text_list(tags, "the tags"):
            if tag in present:
                steps, values, walls = data.scalar_series(run, tag)
                series.append((run, tag, steps, walls, values))
    return series


@answers(lambda _problem: dash.no_update)
def download_csv(clicks, runs, tags) -> dict:
    """The chosen runs' and tags' points at full resolution (not the drawn subsample) as
    CSV: run,tag,step,wall_time,value."""
    if not clicks:
        return dash.no_update
    return {"content": series_csv(_chosen_series(runs, tags)), "filename": "scalars.csv",
            "type": "text/csv"}


@answers(lambda _problem: dash.no_update)
def download_json(clicks, runs, tags) -> dict:
    """The same points as TensorBoard's JSON download: [[wall_time, step, value], ...] per
    run and tag."""
    if not clicks:
        return dash.no_update
    return {"content": series_json(_chosen_series(runs, tags)), "filename": "scalars.json",
            "type": "application/json"}


@answers(lambda _problem: PATH)
def view_link(runs, tags, x_axis, log_scale, smoothing=None, marked=None, zoom=None) -> str:
    """The address of the current view (runs, tags, axis, scale, a smoothing other than the
    default, the step the address marked, the zoomed x range), to share or bookmark; the
    page also sets it in the address bar."""
    weight = inputs.smoothing(smoothing, DEFAULT_SMOOTHING)
    ends = scalars_zoom.zoom_or_none(zoom, _x_axis(x_axis)) or (None, None)
    return address(PATH, {
        "run": inputs.text_list(runs, "the runs"), "tag": inputs.text_list(tags, "the tags"),
        "x": None if _x_axis(x_axis) == STEP else x_axis,
        "log": "1" if LOG_ON in inputs.text_list(log_scale, "the value scale") else None,
        "smoothing": None if weight == DEFAULT_SMOOTHING else f"{weight:g}",
        "step": inputs.step_number(marked, "the marked step"),
        "from": _end_text(ends[0]), "to": _end_text(ends[1])})


def _end_text(end) -> str | None:
    """A zoom's end as the address writes it: a number in its shortest exact form."""
    if end is None or isinstance(end, str):
        return end
    return repr(float(end)) if not float(end).is_integer() else str(int(end))


def register_callbacks(app: dash.Dash) -> None:
    once = {"prevent_initial_call": True}       # initial_view chose the first runs and tags
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"), **once)(
        run_choice)
    app.callback(Output(TAG_DROPDOWN, "options"), Output(TAG_DROPDOWN, "value"),
                 Input(RUN_DROPDOWN, "value"), State(TAG_DROPDOWN, "value"),
                 State(TAG_QUERY_STORE, "data"), Input(LIVE["store"], "data"), **once)(
        polled(tag_choice, LIVE["store"]))
    app.callback(Output(CURVES_DIV, "children"),
                 Input(RUN_DROPDOWN, "value"), Input(TAG_DROPDOWN, "value"),
                 Input(SMOOTHING_SLIDER, "value"), Input(X_AXIS_RADIO, "value"),
                 Input(LOG_SCALE_CHECK, "value"), State(STEP_QUERY_STORE, "data"),
                 State(scalars_zoom.ZOOM_STORE, "data"),
                 **once)(      # the layout drew the first curves
        lambda runs, tags, smoothing, x_axis, log_scale, marked, zoom: curves(
            runs, tags, smoothing, None, x_axis, log_scale, marked, zoom))
    app.callback(Output({"type": CURVE_GRAPH, "tag": ALL}, "figure"),
                 State({"type": CURVE_GRAPH, "tag": ALL}, "id"), State(RUN_DROPDOWN, "value"),
                 State(TAG_DROPDOWN, "value"), State(SMOOTHING_SLIDER, "value"),
                 State(X_AXIS_RADIO, "value"), State(LOG_SCALE_CHECK, "value"),
                 State(STEP_QUERY_STORE, "data"), Input(LIVE["store"], "data"),
                 State(LIVE["zoom"], "data"), State(scalars_zoom.ZOOM_STORE, "data"))(
        _refresh_with_zooms)
    app.callback(Output({"type": CURVE_GRAPH, "tag": ALL}, "figure", allow_duplicate=True),
                 Output(scalars_zoom.ZOOM_STORE, "data"),
                 Input(scalars_zoom.ZOOM_ASK_STORE, "data"),
                 State({"type": CURVE_GRAPH, "tag": ALL}, "id"), State(RUN_DROPDOWN, "value"),
                 State(TAG_DROPDOWN, "value"), State(SMOOTHING_SLIDER, "value"),
                 State(X_AXIS_RADIO, "value"), State(LOG_SCALE_CHECK, "value"),
                 State(STEP_QUERY_STORE, "data"), State(scalars_zoom.ZOOM_STORE, "data"),
                 prevent_initial_call=True)(zoom_curves)
    keep_zooms(app, "scalars", {"type": CURVE_GRAPH, "tag": ALL})
    app.callback(Output(DOWNLOAD, "data"), Input(CSV_BUTTON, "n_clicks"),
                 State(RUN_DROPDOWN, "value"), State(TAG_DROPDOWN, "value"),
                 prevent_initial_call=True)(download_csv)
    app.callback(Output(DOWNLOAD, "data", allow_duplicate=True), Input(JSON_BUTTON, "n_clicks"),
                 State(RUN_DROPDOWN, "value"), State(TAG_DROPDOWN, "value"),
                 prevent_initial_call=True)(download_json)
    register_address(app, "scalars", PATH, view_link, Input(RUN_DROPDOWN, "value"),
                     Input(TAG_DROPDOWN, "value"), Input(X_AXIS_RADIO, "value"),
                     Input(LOG_SCALE_CHECK, "value"), Input(SMOOTHING_SLIDER, "value"),
                     State(STEP_QUERY_STORE, "data"), Input(scalars_zoom.ZOOM_STORE, "data"),
                     link=VIEW_LINK)
    register_live(app, "scalars", (RUN_DROPDOWN,), LIVE_PARTS)
