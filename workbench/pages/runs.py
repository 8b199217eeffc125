"""Runs page (`/?page=N`): every folder in the log directory with its status, steps, tags and
start time, unreadable and damaged folders included with the reason; PAGE_ROWS to a page, with
previous and next buttons (the page shown is kept in the address, counted from 1); polls so
new runs appear while they are written."""

from __future__ import annotations

import time
from urllib.parse import urlencode

import dash
from dash import Input, Output, State, dcc, html

from engine.record.schema import UNREADABLE, RunInfo
from workbench import data, inputs
from workbench.pages.common import (
    address,
    address_stores,
    address_value,
    answers,
    loading,
    message,
    page_header,
    register_address,
)

PATH = "/"
NAME = "Runs"
REFRESH_MS = 5000

TABLE_DIV = "runs-table-div"
TABLE_LOADING = "runs-table-loading"
REFRESH_INTERVAL = "runs-refresh-interval"
EMPTY_TEXT = "runs-empty-text"
PAGE_STORE = "runs-page-store"
PREVIOUS_BUTTON = "runs-previous-button"
NEXT_BUTTON = "runs-next-button"
PAGE_TEXT = "runs-page-text"
PAGER_DIV = "runs-pager-div"
HIDDEN, SHOWN = {"display": "none"}, {}
TAG_LIMIT = 6
# Rows drawn at once. Dash's renderer spends more than linearly in the components it mounts
# (each is a store subscriber checked on every update): a fresh browser drew 50 rows of 15
# components in 4.5-7.8 s at load 9, 20 in 0.8 s (bench/bench_scalars.py).
PAGE_ROWS = 20
LINKED_PAGES = ("graph", "placement", "scalars", "alerts", "histograms", "images", "replay")


def layout(page: str | None = None, **_query) -> html.Div:
    """The page with its first table and pager in it: a fresh page draws its rows with the
    layout instead of after one more callback round trip; the callbacks redraw them on each
    refresh and page turn."""
    shown = address_page(page)
    table, (shows, pager_style) = first_view(shown)
    return html.Div([
        page_header("Runs", "Every run in the log directory; refreshed every few seconds."),
        dcc.Interval(id=REFRESH_INTERVAL, interval=REFRESH_MS),
        dcc.Store(id=PAGE_STORE, data=shown), *address_stores("runs"),
        html.Div(id=PAGER_DIV, className="controls", style=pager_style, children=[
            html.Button("Previous", id=PREVIOUS_BUTTON, className="button"),
            html.Span(shows, id=PAGE_TEXT, className="page-text"),
            html.Button("Next", id=NEXT_BUTTON, className="button"),
        ]),
        loading(TABLE_LOADING, html.Div(table, id=TABLE_DIV)),
    ])


def address_page(value) -> int:
    """The page (from 0) the address asks for as `page=N` (from 1); 0 for none or a bad one.
    A page past the last shows the last (runs_table)."""
    try:
        number = inputs.step_number(address_value(value), "the page")
    except inputs.BadInput:
        return 0
    return max(0, number - 1) if number else 0


@answers(lambda _problem: dash.no_update)
def view_address(page) -> str:
    """The address of the page of runs shown (`/` for the first), as the layout reads it."""
    count = len(data.runs())
    page = min(_page(page), _last_page(count))
    return address(PATH, {"page": page + 1 if page else None})


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
        links = [part for page in LINKED_PAGES
                 for part in (" · ", _page_link(f"/{page}", info.name, page))][1:]
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
        html.Td(links),         # no wrapper: each component costs the renderer (PAGE_ROWS)
    ])


def _last_page(count: int) -> int:
    return max(0, (count - 1) // PAGE_ROWS)


def _page(value) -> int:
    """A page number kept by the browser (0 when none)."""
    return inputs.step_number(value, "the page") or 0


@answers(lambda problem: (message(problem), ("", HIDDEN)))
def first_view(page: int) -> tuple:
    """(the table, the pager's text and style) of `page` from one listing, for the layout."""
    infos = data.runs()
    return _table(infos, page), _pager(infos, page)


@answers(message)
def runs_table(_n_intervals: int | None, page: int | None = 0) -> html.Table | html.P:
    """The table of one page of the folders in the log directory, by name (the last page
    when `page` is past it); a message when empty."""
    return _table(data.runs(), page)


def _table(infos: list[RunInfo], page) -> html.Table | html.P:
    if not infos:
        return message("No runs in the log directory yet. Record one with RunWriter or "
                       "`workbench demo`.", EMPTY_TEXT)
    page = min(_page(page), _last_page(len(infos)))
    header = html.Tr([html.Th(text) for text in
                      ("Run", "Status", "Steps", "Scalar tags", "Started", "Open")])
    return html.Table(className="runs-table", children=[
        html.Thead(header),
        html.Tbody([_row(info) for info in infos[page * PAGE_ROWS:(page + 1) * PAGE_ROWS]])])


@answers(lambda _problem: ("", HIDDEN))
def pager(_n_intervals: int | None, page: int | None = 0) -> tuple[str, dict]:
    """Which rows the table shows, and the pager's style: hidden while one page holds every
    run (the listing is cached: asking it twice reads no run again)."""
    return _pager(data.runs(), page)


def _pager(infos: list[RunInfo], page) -> tuple[str, dict]:
    count = len(infos)
    page = min(_page(page), _last_page(count))
    first = page * PAGE_ROWS + 1
    shows = f"Runs {first}–{min(count, first + PAGE_ROWS - 1)} of {count}"
    return (shows, SHOWN) if count > PAGE_ROWS else ("", HIDDEN)


@answers(lambda _problem: 0)
def turned_page(pressed: str | None, page: int | None) -> int:
    """The page after pressing PREVIOUS_BUTTON or NEXT_BUTTON: never before the first or
    past the last (the listing is cached, so counting the runs again is cheap)."""
    page = _page(page)
    if pressed == PREVIOUS_BUTTON:
        return max(0, page - 1)
    if pressed == NEXT_BUTTON:
        return min(page + 1, _last_page(len(data.runs())))
    return page


def _turn_page(_previous: int | None, _next: int | None, page: int | None) -> int:
    # One callback for both buttons (which was pressed is Dash's triggered id).
    return turned_page(dash.ctx.triggered_id, page)


def register_callbacks(app: dash.Dash) -> None:
    once = {"prevent_initial_call": True}       # the layout drew the first table and pager
    app.callback(Output(TABLE_DIV, "children"), Input(REFRESH_INTERVAL, "n_intervals"),
                 Input(PAGE_STORE, "data"), **once)(runs_table)
    app.callback(Output(PAGE_TEXT, "children"), Output(PAGER_DIV, "style"),
                 Input(REFRESH_INTERVAL, "n_intervals"), Input(PAGE_STORE, "data"), **once)(pager)
    app.callback(Output(PAGE_STORE, "data"), Input(PREVIOUS_BUTTON, "n_clicks"),
                 Input(NEXT_BUTTON, "n_clicks"), State(PAGE_STORE, "data"),
                 prevent_initial_call=True)(_turn_page)
    register_address(app, "runs", PATH, view_address, Input(PAGE_STORE, "data"))
