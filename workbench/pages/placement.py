"""Placement page (`/placement?run=NAME&search=TEXT&reason=R,R&device=D,D`): where each node
ran and why, as TensorFlow's log_device_placement lines and as a filterable, sortable table;
soft fallbacks stand out. The run, search text and reason and device filters are kept in the
address."""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, dash_table, dcc, html, no_update

from engine.record.schema import PLACEMENT_REASONS, SOFT_FALLBACK
from viz.colors import device_label
from viz.placement import COLUMNS, filter_placement_rows, placement_log_text, placement_rows
from workbench import data
from workbench.inputs import text, text_list
from workbench.pages.common import (
    address,
    address_stores,
    address_value,
    address_values,
    answers,
    choose_run,
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
)

PATH = "/placement"
NAME = "Placement"

RUN_DROPDOWN = "placement-run-dropdown"
QUERY_STORE = "placement-query-store"
DEVICE_QUERY_STORE = "placement-device-query-store"     # the address's devices
SEARCH_INPUT = "placement-search-input"
REASON_DROPDOWN = "placement-reason-dropdown"
DEVICE_DROPDOWN = "placement-device-dropdown"
COUNT_TEXT = "placement-count-text"
LOG_PRE = "placement-log-pre"
TABLE = "placement-nodes-table"
TABLE_LOADING = "placement-table-loading"
LOG_LOADING = "placement-log-loading"
NOTICE_TEXT = "placement-notice-text"
LIVE = live_ids("placement")
LIVE_PARTS = ("graph", "placements")

SOFT_FALLBACK_STYLE = {"if": {"filter_query": f'{{reason}} = "{SOFT_FALLBACK}"'},
                       "backgroundColor": "#fff1cc", "fontWeight": "600"}


def _table() -> dash_table.DataTable:
    return dash_table.DataTable(
        id=TABLE, columns=[{"name": column, "id": column} for column in COLUMNS],
        data=[], sort_action="native", filter_action="native", page_size=25,
        style_table={"overflowX": "auto"},
        style_cell={"fontFamily": "var(--mono)", "fontSize": "12px", "textAlign": "left",
                    "maxWidth": "420px", "whiteSpace": "normal"},
        style_header={"fontWeight": "700", "backgroundColor": "#f3f4f6"},
        style_data_conditional=[SOFT_FALLBACK_STYLE])


def layout(run: str | None = None, search: str | None = None, reason: str | None = None,
           device: str | None = None, **_query) -> html.Div:
    return html.Div([
        page_header("Placement", "Each node's requested and assigned device and the rule that "
                                 "decided; soft-placement fallbacks are highlighted."),
        dcc.Store(id=QUERY_STORE, data=address_value(run)),
        dcc.Store(id=DEVICE_QUERY_STORE, data=device), *address_stores("placement"),
        html.Div(className="controls", children=[
            labelled("Run", dcc.Dropdown(id=RUN_DROPDOWN, clearable=False)),
            labelled("Search", dcc.Input(id=SEARCH_INPUT, type="text", debounce=True,
                                         value=address_value(search) or "",
                                         placeholder="node, op or detail")),
            labelled("Reason", dcc.Dropdown(id=REASON_DROPDOWN, multi=True,
                                            options=list(PLACEMENT_REASONS),
                                            value=_address_reasons(reason))),
            labelled("Assigned device", dcc.Dropdown(id=DEVICE_DROPDOWN, multi=True)),
            html.Span(id=COUNT_TEXT, className="muted"),
        ]),
        html.P(id=NOTICE_TEXT, className="message notice"),
        live_follow("placement"),
        loading(TABLE_LOADING, _table()),
        html.H4("log_device_placement"),
        loading(LOG_LOADING, html.Pre(id=LOG_PRE, className="placement-log")),
    ])


@answers(lambda problem: ([], None, problem))
def run_choice(requested: str | None) -> tuple[list[dict], str | None, str]:
    """(options, the run to show, a notice when it is not the one asked for)."""
    names, healthy = run_choices()
    chosen = choose_run(names, requested, healthy)
    options = run_options(names, frozenset(names) - frozenset(healthy))
    return options, chosen, run_notice(requested, chosen)


@answers(lambda _problem: [])
def device_options(run: str | None, _live=None) -> list[dict]:
    if not run:
        return []
    assigned = sorted({record.assigned for record in data.placements(data.check_name(run))})
    return [{"label": device_label(name), "value": name} for name in assigned]


def _address_reasons(value) -> list[str] | None:
    """The placement reasons the address filters by (those that are reasons)."""
    return [reason for reason in address_values(value) if reason in PLACEMENT_REASONS] or None


@answers(lambda _problem: ([], no_update))
def device_choice(run: str | None, query=None, live=None) -> tuple[list[dict], Any]:
    """(device options, the devices chosen): the address's devices the run assigned when the
    run is shown first; after a poll (`live`) the user's choice stays."""
    options = device_options(run)
    if live is not None:
        return options, no_update
    assigned = [option["value"] for option in options]
    chosen = [name for name in address_values(query, assigned) if name in assigned]
    return options, chosen or None


@answers(lambda _problem: no_update)
def view_address(run, search, reasons, devices) -> str:
    """The address of the run and filters shown, as the page reads it back."""
    return address(PATH, {"run": data.check_name(run) if run else None,
                          "search": text(search, "the search text") or None,
                          "reason": text_list(reasons, "the reasons"),
                          "device": text_list(devices, "the devices")})


@answers(lambda problem: ([], "", problem))
def placement_content(run: str | None, search: str | None, reasons: list[str] | None,
                      devices: list[str] | None, _live=None) -> tuple[list[dict], str, str]:
    """(table rows, log text, count line) for the chosen run and filters."""
    if not run:
        return [], "", "No readable run in the log directory."
    run = data.check_name(run)
    search = text(search, "the search text")
    reasons = text_list(reasons, "the reasons")
    devices = text_list(devices, "the devices")
    records = data.placements(run)
    rows = filter_placement_rows(placement_rows(records), search, reasons, devices)
    shown = {row["node"] for row in rows}
    log = placement_log_text(record for record in records if record.node in shown)
    fallbacks = sum(1 for row in rows if row["soft_fallback"])
    plural = "" if fallbacks == 1 else "s"
    count = f"{len(rows)} of {len(records)} nodes, {fallbacks} soft fallback{plural}"
    return rows, log or "(no placements match)", count


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(DEVICE_DROPDOWN, "options"), Output(DEVICE_DROPDOWN, "value"),
                 Input(RUN_DROPDOWN, "value"), State(DEVICE_QUERY_STORE, "data"),
                 Input(LIVE["store"], "data"))(polled(device_choice, LIVE["store"]))
    app.callback(Output(TABLE, "data"), Output(LOG_PRE, "children"), Output(COUNT_TEXT, "children"),
                 Input(RUN_DROPDOWN, "value"), Input(SEARCH_INPUT, "value"),
                 Input(REASON_DROPDOWN, "value"), Input(DEVICE_DROPDOWN, "value"),
                 Input(LIVE["store"], "data"))(placement_content)
    register_address(app, "placement", PATH, view_address, Input(RUN_DROPDOWN, "value"),
                     Input(SEARCH_INPUT, "value"), Input(REASON_DROPDOWN, "value"),
                     Input(DEVICE_DROPDOWN, "value"))
    register_live(app, "placement", (RUN_DROPDOWN,), LIVE_PARTS)
