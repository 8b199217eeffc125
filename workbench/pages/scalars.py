"""Scalars page (`/scalars`): curves of the chosen tags for several runs together, raw
faint and smoothed bold, with TensorBoard's smoothing slider; polls for live runs."""

from __future__ import annotations

import dash
from dash import Input, Output, State, dcc, html

from viz.scalars import scalars_figure
from workbench import data
from workbench.pages.common import labelled, loading, message, page_header, run_options

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
        loading(CURVES_LOADING, html.Div(id=CURVES_DIV)),
    ])


def run_choice(requested: str | None) -> tuple[list[dict], list[str]]:
    """Every readable run as an option; the requested one chosen, else all of them."""
    names = data.readable_run_names()
    chosen = [requested] if requested in names else names
    return run_options(names), chosen


def tag_choice(runs: list[str] | None, current: list[str] | None) -> tuple[list[str], list[str]]:
    """Tags of the chosen runs; keeps the current choice where it still exists, else
    "loss" when there is one, else the first tag."""
    tags = sorted({tag for run in runs or () for tag in data.tags(run)})
    kept = [tag for tag in current or () if tag in tags]
    if kept:
        return tags, kept
    return tags, [DEFAULT_TAG] if DEFAULT_TAG in tags else tags[:1]


def curves(runs: list[str] | None, tags: list[str] | None, smoothing: float | None,
           _n_intervals: int | None = None) -> list:
    """One graph per tag, one colour per run."""
    if not runs or not tags:
        return [message("Choose at least one run and one tag.")]
    weight = DEFAULT_SMOOTHING if smoothing is None else float(smoothing)
    graphs = []
    for tag in tags:
        series = {run: data.scalars(run, tag) for run in runs if tag in data.tags(run)}
        figure = scalars_figure(series, tag, weight)
        # A constant revision per tag keeps the user's zoom across the periodic refresh.
        figure.update_layout(uirevision=tag)
        graphs.append(dcc.Graph(id={"type": "scalars-curve-graph", "tag": tag}, figure=figure,
                                config={"displaylogo": False}))
    return graphs


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(TAG_DROPDOWN, "options"), Output(TAG_DROPDOWN, "value"),
                 Input(RUN_DROPDOWN, "value"), State(TAG_DROPDOWN, "value"))(tag_choice)
    app.callback(Output(CURVES_DIV, "children"),
                 Input(RUN_DROPDOWN, "value"), Input(TAG_DROPDOWN, "value"),
                 Input(SMOOTHING_SLIDER, "value"), Input(REFRESH_INTERVAL, "n_intervals"))(
        curves)
