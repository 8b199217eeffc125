"""Runs page (`/`): every folder in the log directory with its status, steps, tags and start
time, unreadable and damaged folders included with the reason; polls so new runs appear
while they are written."""

from __future__ import annotations

import time
from urllib.parse import urlencode

import dash
from dash import Input, Output, dcc, html

from engine.record.schema import UNREADABLE, RunInfo
from workbench import data
from workbench.pages.common import answers, loading, message, page_header

PATH = "/"
NAME = "Runs"
REFRESH_MS = 5000

TABLE_DIV = "runs-table-div"
TABLE_LOADING = "runs-table-loading"
REFRESH_INTERVAL = "runs-refresh-interval"
EMPTY_TEXT = "runs-empty-text"
TAG_LIMIT = 6


def layout(**_query) -> html.Div:
    return html.Div([
        page_header("Runs", "Every run in the log directory; refreshed every few seconds."),
        dcc.Interval(id=REFRESH_INTERVAL, interval=REFRESH_MS),
        loading(TABLE_LOADING, html.Div(id=TABLE_DIV)),
    ])


def format_time(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)) if stamp else ""


def _page_link(page: str, run: str, label: str) -> dcc.Link:
    return dcc.Link(label, href=f"{page}?{urlencode({'run': run})}", className="run-link")


def _row(info: RunInfo) -> html.Tr:
    unreadable = info.status == UNREADABLE
    if unreadable:
        links = html.Span(info.error or "not a run store", className="run-error")
    else:
        # A damaged run still opens: what is whole shows, and each page says what is not.
        links = html.Span([_page_link("/graph", info.name, "graph"), " · ",
                           _page_link("/placement", info.name, "placement"), " · ",
                           _page_link("/scalars", info.name, "scalars"), " · ",
                           _page_link("/alerts", info.name, "alerts"), " · ",
                           _page_link("/histograms", info.name, "histograms"), " · ",
                           _page_link("/images", info.name, "images"), " · ",
                           _page_link("/replay", info.name, "replay")])
    tags = ", ".join(info.tags[:TAG_LIMIT]) + (" …" if len(info.tags) > TAG_LIMIT else "")
    status = [html.Span(info.status, className=f"status status-{info.status}")]
    if info.error and not unreadable:
        status.append(html.Div(info.error, className="run-error run-damage"))
    if info.exception:
        status.append(html.Div(info.exception, className="run-error"))
    return html.Tr(className=f"run-row run-{info.status}", children=[
        html.Td(info.name, className="run-name"),
        html.Td(status),
        html.Td("" if unreadable else str(info.num_steps)),
        html.Td(tags),
        html.Td(format_time(info.started)),
        html.Td(links),
    ])


@answers(message)
def runs_table(_n_intervals: int | None) -> html.Table | html.P:
    """The table of every folder in the log directory, by name; a message when empty."""
    infos = data.runs()
    if not infos:
        return message("No runs in the log directory yet. Record one with RunWriter or "
                       "`workbench demo`.", EMPTY_TEXT)
    header = html.Tr([html.Th(text) for text in
                      ("Run", "Status", "Steps", "Scalar tags", "Started", "Open")])
    return html.Table(className="runs-table", children=[
        html.Thead(header), html.Tbody([_row(info) for info in infos])])


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(TABLE_DIV, "children"), Input(REFRESH_INTERVAL, "n_intervals"))(
        runs_table)
