"""Alerts page (`/alerts?run=NAME`): the NaN/Inf alerts of the chosen runs, the first
occurrence of each node's alert with how often it recurred, each linking to the graph with
that node selected at that step and to the loss curve marked at that step; the tensors'
statistics and the op's creation site open under each."""

from __future__ import annotations

from urllib.parse import urlencode

import dash
from dash import Input, Output, dcc, html

from viz.alerts import KIND_TEXT, FirstAlert, first_occurrences, in_order, tensor_text
from workbench import data, inputs
from workbench.pages.common import (
    PROBLEMS,
    answers,
    labelled,
    live_follow,
    live_ids,
    loading,
    message,
    page_header,
    problem_text,
    register_live,
    run_choices,
    run_options,
)

PATH = "/alerts"
NAME = "Alerts"
LOSS_TAG = "loss"

QUERY_STORE = "alerts-query-store"
RUN_DROPDOWN = "alerts-run-dropdown"
LIVE = live_ids("alerts")
LIVE_PARTS = ("alerts",)
TABLE_DIV = "alerts-table-div"
TABLE_LOADING = "alerts-table-loading"
EMPTY_TEXT = "alerts-empty-text"


def layout(run: str | None = None, **_query) -> html.Div:
    return html.Div([
        page_header("Alerts", "NaN and Inf found while steps ran: the first op that made "
                              "one, per node, with where to look next."),
        dcc.Store(id=QUERY_STORE, data=run),
        html.Div(className="controls", children=[
            labelled("Runs", dcc.Dropdown(id=RUN_DROPDOWN, multi=True)),
        ]),
        live_follow("alerts"),
        loading(TABLE_LOADING, html.Div(id=TABLE_DIV)),
    ])


@answers(lambda problem: ([], []))
def run_choice(requested: str | None) -> tuple[list[dict], list[str]]:
    """Every readable run as an option; the requested one chosen, else every run that has
    alerts (every readable run when none has)."""
    names, healthy = run_choices()
    options = run_options(names, frozenset(names) - frozenset(healthy))
    if isinstance(requested, str) and requested in names:
        return options, [requested]
    alarmed = [name for name in names if _alerts_or_none(name)]
    return options, alarmed or names


def _alerts_or_none(name: str) -> list:
    try:
        return data.alerts(name)
    except PROBLEMS:
        return []


def _link(page: str, label: str, **query) -> dcc.Link:
    return dcc.Link(label, href=f"{page}?{urlencode(query)}", className="alert-link")


def _details(entry: FirstAlert) -> html.Details:
    alert = entry.alert
    lines = [html.Div(tensor_text(summary), className="alert-tensor")
             for summary in alert.inputs]
    if alert.output is not None:
        lines.append(html.Div(["output: ", tensor_text(alert.output)], className="alert-tensor"))
    if alert.stack:
        lines.append(html.Pre("\n".join(alert.stack), className="alert-stack"))
    return html.Details([html.Summary(alert.message or "details"), *lines],
                        className="alert-details")


def _row(entry: FirstAlert) -> html.Tr:
    alert = entry.alert
    recurred = (f"{entry.occurrences} steps, last {entry.last_step}"
                if entry.occurrences > 1 else "once")
    return html.Tr(className=f"alert-row alert-{alert.kind}", children=[
        html.Td(entry.run, className="alert-run"),
        html.Td(str(alert.step), className="alert-step"),
        html.Td(alert.node, className="alert-node"),
        html.Td(alert.op),
        html.Td(alert.device),
        html.Td(KIND_TEXT.get(alert.kind, alert.kind), className="alert-kind"),
        html.Td(recurred),
        html.Td([_link("/graph", "graph", run=entry.run, step=alert.step, node=alert.node),
                 " · ",
                 _link("/scalars", "loss", run=entry.run, tag=LOSS_TAG, step=alert.step)]),
        html.Td(_details(entry)),
    ])


@answers(lambda problem: message(problem))
def alerts_table(runs: list[str] | None, _live=None):
    """The first alerts of the chosen runs, earliest first; a message per run that cannot be
    read (the others still list), and one when there is nothing to list."""
    chosen = [data.check_name(run) for run in inputs.text_list(runs, "the runs")]
    if not chosen:
        return message("Choose at least one run.", EMPTY_TEXT)
    entries, problems = [], []
    for run in chosen:
        try:
            entries.extend(first_occurrences(run, data.alerts(run)))
        except PROBLEMS as exc:
            problems.append(message(f"{run}: {problem_text(exc)}"))
    if not entries:
        return html.Div(problems + [message(
            "No NaN or Inf alerts in the chosen runs. Sessions record them with "
            "ConfigProto(check_numerics=True) or tf.add_check_numerics_ops().", EMPTY_TEXT)])
    header = html.Tr([html.Th(text) for text in ("Run", "Step", "Node", "Op", "Device", "Kind",
                                                 "Occurred", "Open", "Details")])
    table = html.Table(className="alerts-table", children=[
        html.Thead(header), html.Tbody([_row(entry) for entry in in_order(entries)])])
    return html.Div(problems + [table])


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(TABLE_DIV, "children"), Input(RUN_DROPDOWN, "value"),
                 Input(LIVE["store"], "data"))(alerts_table)
    register_live(app, "alerts", (RUN_DROPDOWN,), LIVE_PARTS)
