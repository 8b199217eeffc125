"""Scalars page (`/scalars`): curves of the chosen tags for several runs together, raw
faint and smoothed bold, with TensorBoard's smoothing slider; polls for live runs."""

from __future__ import annotations

import dash
from dash import Input, Output, State, dcc, html

from viz.scalars import curves_figure
from workbench import data, inputs
from workbench.pages.common import (
    PROBLEMS,
    answers,
    labelled,
    loading,
    message,
    page_header,
    problem_text,
    run_choices,
    run_notice,
    run_options,
)

PATH = "/scalars"
NAME = "Scalars"
DEFAULT_SMOOTHING = 0.6
DEFAULT_TAG = "loss"
REFRESH_MS = 10_000

RUN_DROPDOWN = "scalars-run-dropdown"
QUERY_STORE = "scalars-query-store"
TAG_DROPDOWN = "scalars-tag-dropdown"
SMOOTHING_SLIDER = "scalars-smoothing-slider"
REFRESH_INTERVAL = "scalars-refresh-interval"
CURVES_DIV = "scalars-curves-div"
CURVES_LOADING = "scalars-curves-loading"
NOTICE_TEXT = "scalars-notice-text"


def layout(run: str | None = None, **_query) -> html.Div:
    return html.Div([
        page_header("Scalars", "Values logged per step; raw values faint, smoothed bold."),
        dcc.Store(id=QUERY_STORE, data=run),
        dcc.Interval(id=REFRESH_INTERVAL, interval=REFRESH_MS),
        html.Div(className="controls", children=[
            labelled("Runs", dcc.Dropdown(id=RUN_DROPDOWN, multi=True)),
            labelled("Tags", dcc.Dropdown(id=TAG_DROPDOWN, multi=True)),
            labelled("Smoothing", dcc.Slider(
                id=SMOOTHING_SLIDER, min=0, max=0.99, step=0.01, value=DEFAULT_SMOOTHING,
                marks={0: "0", 0.6: "0.6", 0.99: "0.99"},
                tooltip={"placement": "bottom", "always_visible": False})),
        ]),
        html.P(id=NOTICE_TEXT, className="message notice"),
        loading(CURVES_LOADING, html.Div(id=CURVES_DIV)),
    ])


@answers(lambda problem: ([], [], problem))
def run_choice(requested: str | None) -> tuple[list[dict], list[str], str]:
    """Every readable run as an option; the requested one chosen, else every healthy one
    (every readable one when none is healthy), and a notice when the request was not met."""
    names, healthy = run_choices()
    if isinstance(requested, str) and requested in names:
        chosen = [requested]
    else:
        chosen = healthy or names
    options = run_options(names, frozenset(names) - frozenset(healthy))
    return options, chosen, run_notice(requested, requested if chosen == [requested] else None)


@answers(lambda _problem: ([], []))
def tag_choice(runs: list[str] | None, current: list[str] | None) -> tuple[list[str], list[str]]:
    """Tags of the chosen runs; keeps the current choice where it still exists, else
    "loss" when there is one, else the first tag. A run that cannot be read adds none (the
    curves say why)."""
    current = inputs.text_list(current, "the tags")
    tags = set()
    for run in inputs.text_list(runs, "the runs"):
        try:
            tags.update(data.tags(data.check_name(run)))
        except PROBLEMS:
            continue
    tags = sorted(tags)
    kept = [tag for tag in current if tag in tags]
    if kept:
        return tags, kept
    return tags, [DEFAULT_TAG] if DEFAULT_TAG in tags else tags[:1]


@answers(lambda problem: [message(problem)])
def curves(runs: list[str] | None, tags: list[str] | None, smoothing: float | None,
           _n_intervals: int | None = None) -> list:
    """One graph per tag, one colour per run; a message for each run that cannot be read
    (the others still draw)."""
    runs = [data.check_name(run) for run in inputs.text_list(runs, "the runs")]
    tags = inputs.text_list(tags, "the tags")
    if not runs or not tags:
        return [message("Choose at least one run and one tag.")]
    weight = inputs.smoothing(smoothing, DEFAULT_SMOOTHING)
    problems: dict[str, str] = {}
    graphs = []
    for tag in tags:
        drawn = {}
        for run in runs:
            if run in problems:
                continue
            try:
                if tag in data.tags(run):
                    drawn[run] = data.curve(run, tag, weight)
            except PROBLEMS as exc:
                problems[run] = problem_text(exc)
        if not drawn:
            continue
        figure = curves_figure(drawn, tag)
        # A constant revision per tag keeps the user's zoom across the periodic refresh.
        figure.update_layout(uirevision=tag)
        graphs.append(dcc.Graph(id={"type": "scalars-curve-graph", "tag": tag}, figure=figure,
                                config={"displaylogo": False}))
    notes = [message(f"{run}: {text}") for run, text in problems.items()]
    if not graphs and not notes:
        notes = [message("None of the chosen runs has the chosen tags.")]
    return notes + graphs


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(TAG_DROPDOWN, "options"), Output(TAG_DROPDOWN, "value"),
                 Input(RUN_DROPDOWN, "value"), State(TAG_DROPDOWN, "value"))(tag_choice)
    app.callback(Output(CURVES_DIV, "children"),
                 Input(RUN_DROPDOWN, "value"), Input(TAG_DROPDOWN, "value"),
                 Input(SMOOTHING_SLIDER, "value"), Input(REFRESH_INTERVAL, "n_intervals"))(
        curves)
