"""Histograms page (`/histograms?run=A,B&tag=TAG&mode=offset|overlay`): for each chosen run
and histogram tag, TensorBoard's histogram view (offset ridges or overlaid steps) beside its
distributions view (percentile bands over steps). The runs, tags and mode chosen are kept
in the address (and in a link to this view), so a reload or a shared link shows the same."""

from __future__ import annotations

import dash
from dash import ALL, Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate

from viz.histograms import MODES, OFFSET, distribution_figure, histogram_figure
from workbench import data, inputs, live
from workbench.pages.common import (
    PROBLEMS,
    address,
    address_ids,
    address_values,
    answers,
    choose_runs,
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
    zoom_of,
)

PATH = "/histograms"
NAME = "Histograms"
FIGURE_HEIGHT = 360

QUERY_STORE = "histograms-query-store"
RUN_DROPDOWN = "histograms-run-dropdown"
TAG_DROPDOWN = "histograms-tag-dropdown"
MODE_RADIO = "histograms-mode-radio"
NOTICE_TEXT = "histograms-notice-text"
VIEW_LINK = "histograms-view-link"
ADDRESS_STORE = address_ids("histograms")["set"]     # what the address bar was last set to
FIGURES_DIV = "histograms-figures-div"
FIGURES_LOADING = "histograms-figures-loading"
# One pattern for both kinds of plot, so one zoom store follows them all (keep_zooms); the
# histogram's mode is in its id, so a zoom taken in one mode is never stated on the other.
GRAPH = "histograms-graph"
ANY_MODE = "any"                # the distribution view is the same in both modes
LIVE = live_ids("histograms")
LIVE_PARTS = ("steps", "histogram_tags")
MODE_LABELS = {"offset": "Offset", "overlay": "Overlay"}


def layout(run: str | None = None, tag: str | None = None, mode: str | None = None,
           **_query) -> html.Div:
    return html.Div([
        page_header("Histograms", "Recorded tensors over steps: each step's histogram "
                                  "(offset: newest in front; overlay: colour by step) and "
                                  "its distribution (percentile bands, median line)."),
        dcc.Store(id=QUERY_STORE, data={"run": run, "tag": tag, "mode": mode}),
        dcc.Store(id=ADDRESS_STORE),
        html.Div(className="controls", children=[
            labelled("Runs", dcc.Dropdown(id=RUN_DROPDOWN, multi=True)),
            labelled("Tags", dcc.Dropdown(id=TAG_DROPDOWN, multi=True)),
            labelled("Histogram mode", dcc.RadioItems(
                id=MODE_RADIO, value=mode if mode in MODES else OFFSET, inline=True,
                options=[{"label": MODE_LABELS[m], "value": m} for m in MODES])),
            html.Div(className="control", children=[
                html.A("Link to this view", id=VIEW_LINK, href=PATH, className="view-link")]),
        ]),
        html.P(id=NOTICE_TEXT, className="message notice"),
        live_follow("histograms"),
        loading(FIGURES_LOADING, html.Div(id=FIGURES_DIV)),
    ])


def _query(query) -> dict:
    return query if isinstance(query, dict) else {}


@answers(lambda problem: ([], [], problem))
def run_choice(query: dict | None) -> tuple[list[dict], list[str], str]:
    """Every readable run as an option; the runs the address names (comma-separated), else
    the newest healthy run that recorded histograms, else the newest healthy run."""
    options, chosen, told = choose_runs(_query(query).get("run"), data.histogram_tags)
    return options, chosen, " ".join(part for part in (told, _mode_notice(query)) if part)


def _mode_notice(query) -> str:
    """What the page says of a mode in the address it cannot show ("" for none or a good
    one): the layout shows offset instead."""
    asked = _query(query).get("mode")
    if asked in (None, "") or asked in MODES:
        return ""
    return (f"The address's histogram mode {inputs.clipped(asked)} is not one of "
            f"{', '.join(MODES)}; showing {OFFSET}.")


@answers(lambda _problem: ([], []))
def tag_choice(runs: list[str] | None, current: list[str] | None,
               query: dict | None = None, live=None) -> tuple[list[str], list[str]]:
    """Histogram tags of the chosen runs; keeps the current choice where it still exists,
    else the tags the address asked for, else the first tag. After a poll (`live`) a choice
    that stays is not sent again (the figures would be rebuilt, losing the user's zoom)."""
    before = inputs.text_list(current, "the tags")
    tags = set()
    for run in inputs.text_list(runs, "the runs"):
        try:
            tags.update(data.histogram_tags(data.check_name(run)))
        except PROBLEMS:
            continue
    tags = sorted(tags)
    current = before or address_values(_query(query).get("tag"), tags)
    kept = [tag for tag in current if tag in tags]
    if live is not None and kept and kept == before:
        return tags, dash.no_update
    return tags, kept or tags[:1]


def _mode(value) -> str:
    if value is None:
        return OFFSET
    if value not in MODES:
        raise inputs.BadInput(f"The histogram mode must be one of {', '.join(MODES)}, got "
                              f"{inputs.clipped(value)}")
    return value


def graph_id(kind: str, run: str, tag: str, mode: str) -> dict[str, str]:
    """The id of one drawn plot: its kind, run, tag and (a histogram's) mode."""
    return {"type": GRAPH, "kind": kind, "run": run, "tag": tag,
            "mode": mode if kind == "histogram" else ANY_MODE}


def _figure(kind: str, run: str, tag: str, mode: str, records):
    """The plot's figure with a revision fixed per plot and mode: plotly keeps what the user
    changed (zoom, hidden traces) while the revision stays."""
    title = f"{run} · {tag}"
    figure = (histogram_figure(records, title, mode, FIGURE_HEIGHT) if kind == "histogram"
              else distribution_figure(records, f"{title} (distribution)", FIGURE_HEIGHT))
    figure.update_layout(uirevision=":".join(graph_id(kind, run, tag, mode).values()))
    return figure


def _graph(kind: str, run: str, tag: str, mode: str, records) -> dcc.Graph:
    return dcc.Graph(id=graph_id(kind, run, tag, mode),
                     figure=_figure(kind, run, tag, mode, records),
                     className="histograms-figure", config={"displaylogo": False})


@answers(lambda problem: [message(problem)])
def figures(runs: list[str] | None, tags: list[str] | None, mode: str | None) -> list:
    """For each chosen (run, tag) the run recorded: its histogram figure in `mode` beside its
    distribution figure; a message for each run or tag that cannot be shown."""
    runs = [data.check_name(run) for run in inputs.text_list(runs, "the runs")]
    tags = inputs.text_list(tags, "the tags")
    mode = _mode(mode)
    if not runs or not tags:
        return [message("Choose at least one run and one histogram tag.")]
    rows, notes = [], []
    for run in runs:
        try:
            present = set(data.histogram_tags(run))
            for tag in tags:
                if tag not in present:
                    continue
                records = data.histograms(run, tag)
                rows.append(html.Div(className="histograms-row", style=_ROW, children=[
                    _graph(kind, run, tag, mode, records)
                    for kind in ("histogram", "distribution")]))
        except PROBLEMS as exc:
            notes.append(message(f"{run}: {problem_text(exc)}"))
    if not rows and not notes:
        notes = [message("None of the chosen runs recorded the chosen histogram tags.")]
    return notes + rows


@answers(lambda _problem: PATH)
def view_link(runs, tags, mode) -> str:
    """The address of the current view (runs, tags, and the mode unless it is the default
    offset), to share or bookmark; the page also sets it in the address bar."""
    return address(PATH, {"run": inputs.text_list(runs, "the runs"),
                          "tag": inputs.text_list(tags, "the tags"),
                          "mode": None if _mode(mode) == OFFSET else mode})


def _unchanged(_problem: str = ""):
    """A wildcard output takes a list or nothing: no update is PreventUpdate there."""
    raise PreventUpdate


@answers(_unchanged)
def refresh_figures(graph_ids, mode, live_state=None, zooms=None) -> list:
    """After a poll (`live_state`) that saw new steps or tags: each drawn plot's figure
    rebuilt with the new steps and set on its graph in place, in the mode it was drawn in,
    with the user's zoom (`zooms`, the page's zoom store) stated on it. Not a poll, or
    nothing it shows changed: nothing is sent (the full redraw, if any, does it)."""
    if (live_state is None or not isinstance(graph_ids, list) or not graph_ids
            or not live_changed(live_state) & {"steps", "histogram_tags"}):
        _unchanged()
    mode = _mode(mode)
    return [_refreshed(ident, mode, zooms) for ident in graph_ids]


def _refreshed(ident, mode: str, zooms):
    """One plot's new figure, or no_update where its id is not one this page drew or its
    mode is not the chosen one (the mode's own redraw replaces it)."""
    if not isinstance(ident, dict) or ident.get("kind") not in ("histogram", "distribution"):
        return dash.no_update
    kind, run, tag = ident["kind"], ident.get("run"), ident.get("tag")
    if ident != graph_id(kind, run, tag, mode):
        return dash.no_update
    try:
        if not isinstance(tag, str) or tag not in data.histogram_tags(data.check_name(run)):
            return dash.no_update
        records = data.histograms(run, tag)
    except PROBLEMS:
        return dash.no_update       # the next full redraw tells what is wrong
    return live.kept_zoom(_figure(kind, run, tag, mode, records), zoom_of(zooms, ident))


def _refresh_with_zooms(graph_ids, mode, live_state, zooms):
    """polled() passes the live store's state when it is the last argument."""
    return polled(lambda *got: refresh_figures(*got, zooms), LIVE["store"])(
        graph_ids, mode, live_state)


# Two figures side by side, each at least 420 px wide (one above the other when narrower).
_ROW = {"display": "grid", "gridTemplateColumns": "repeat(auto-fit, minmax(420px, 1fr))",
        "gap": "8px"}


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(TAG_DROPDOWN, "options"), Output(TAG_DROPDOWN, "value"),
                 Input(RUN_DROPDOWN, "value"), State(TAG_DROPDOWN, "value"),
                 State(QUERY_STORE, "data"), Input(LIVE["store"], "data"))(
        polled(tag_choice, LIVE["store"]))
    app.callback(Output(FIGURES_DIV, "children"), Input(RUN_DROPDOWN, "value"),
                 Input(TAG_DROPDOWN, "value"), Input(MODE_RADIO, "value"))(figures)
    register_address(app, "histograms", PATH, view_link, Input(RUN_DROPDOWN, "value"),
                     Input(TAG_DROPDOWN, "value"), Input(MODE_RADIO, "value"), link=VIEW_LINK)
    every = {"type": GRAPH, "kind": ALL, "run": ALL, "tag": ALL, "mode": ALL}
    app.callback(Output(every, "figure"), State(every, "id"), State(MODE_RADIO, "value"),
                 Input(LIVE["store"], "data"), State(LIVE["zoom"], "data"))(
        _refresh_with_zooms)
    keep_zooms(app, "histograms", every)
    register_live(app, "histograms", (RUN_DROPDOWN,), LIVE_PARTS)
