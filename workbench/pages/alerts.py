"""Alerts page (`/alerts?run=NAME,NAME`): the NaN/Inf alerts of the chosen runs in a sortable,
filterable, paged table, the first occurrence of each node's alert with how often it
recurred, each linking to the graph with that node selected at that step and to the loss
curve marked at that step; the selected alert's tensor statistics and creation site below.
A live refresh replaces the rows only: sort, filter, page and selection stay. The runs chosen
are kept in the address."""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlencode

import dash
from dash import Input, Output, State, dash_table, dcc, html, no_update

from viz.alerts import KIND_TEXT, FirstAlert, first_occurrences, in_order, tensor_text
from workbench import data, inputs
from workbench.pages.common import (
    PROBLEMS,
    address,
    address_stores,
    address_values,
    answers,
    labelled,
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
)

PATH = "/alerts"
NAME = "Alerts"
LOSS_TAG = "loss"

QUERY_STORE = "alerts-query-store"
RUN_DROPDOWN = "alerts-run-dropdown"
NOTICE_TEXT = "alerts-notice-text"
LIVE = live_ids("alerts")
LIVE_PARTS = ("alerts",)
TABLE = "alerts-table"
TABLE_DIV = "alerts-table-div"
TABLE_LOADING = "alerts-table-loading"
MESSAGES_DIV = "alerts-messages-div"
DETAILS_DIV = "alerts-details-div"
EMPTY_TEXT = "alerts-empty-text"
PAGE_SIZE = 20
DETAILS_HINT = "Select an alert to see its tensors' statistics and where the op was created."
COLUMNS = (("run", "Run", "text"), ("step", "Step", "numeric"), ("node", "Node", "text"),
           ("op", "Op", "text"), ("device", "Device", "text"), ("kind", "Kind", "text"),
           ("occurred", "Occurred", "text"), ("open", "Open", "text"))
_SHOWN = {"display": "block"}
_HIDDEN = {"display": "none"}


def _table() -> dash_table.DataTable:
    """Sorting, filtering, paging and selection happen in the browser; the rows come from
    the server (a live refresh sends `data` only, so they stay)."""
    return dash_table.DataTable(
        id=TABLE, data=[], selected_rows=[], row_selectable="single",
        columns=[{"name": name, "id": ident, "type": kind,
                  **({"presentation": "markdown"} if ident == "open" else {})}
                 for ident, name, kind in COLUMNS],
        markdown_options={"html": True, "link_target": "_self"},
        sort_action="native", filter_action="native", page_action="native",
        page_size=PAGE_SIZE, style_table={"overflowX": "auto"},
        style_cell={"fontFamily": "var(--mono)", "fontSize": "12px", "textAlign": "left",
                    "maxWidth": "360px", "whiteSpace": "normal"},
        style_header={"fontWeight": "700", "backgroundColor": "#f3f4f6"})


def layout(run: str | None = None, **_query) -> html.Div:
    return html.Div([
        page_header("Alerts", "NaN and Inf found while steps ran: the first op that made "
                              "one, per node, with where to look next."),
        dcc.Store(id=QUERY_STORE, data=run), *address_stores("alerts"),
        html.Div(className="controls", children=[
            labelled("Runs", dcc.Dropdown(id=RUN_DROPDOWN, multi=True)),
        ]),
        html.P(id=NOTICE_TEXT, className="message notice"),
        live_follow("alerts"),
        loading(TABLE_LOADING, html.Div(id=MESSAGES_DIV)),
        html.Div(id=TABLE_DIV, className="alerts-table", style=_HIDDEN, children=_table()),
        html.Div(id=DETAILS_DIV, className="alerts-details", children=DETAILS_HINT),
    ])


@answers(lambda problem: ([], [], problem))
def run_choice(requested: Any) -> tuple[list[dict], list[str], str]:
    """Every readable run as an option; the requested ones (comma-separated) chosen, else
    every run that has alerts (every readable run when none has), with a notice naming a
    requested run that is not there (as every page does)."""
    names, healthy = run_choices()
    options = run_options(names, frozenset(names) - frozenset(healthy))
    asked = address_values(requested, names)
    found = [name for name in asked if name in names]
    missing = next((name for name in asked if name not in names), None)
    if found:
        return options, found, run_notice(missing, ", ".join(found)) if missing else ""
    chosen = [name for name in names if _alerts_or_none(name)] or names
    shown = ", ".join(chosen[:3]) + (f" and {len(chosen) - 3} more" if len(chosen) > 3 else "")
    return options, chosen, run_notice(missing or requested, shown or None)


def _alerts_or_none(name: str) -> list:
    try:
        return data.alerts(name)
    except PROBLEMS:
        return []


def _link(page: str, label: str, **query) -> str:
    """A link in the table's markdown cell (html: the links keep the page's class)."""
    href = escape(f"{page}?{urlencode(query)}", quote=True)
    return f'<a class="alert-link" href="{href}">{escape(label)}</a>'


def row_id(run: str, node: str, kind: str) -> str:
    """A row's id: one row per run, node and kind (first_occurrences' grouping)."""
    return f"{run}|{node}|{kind}"


def _row(entry: FirstAlert) -> dict:
    alert = entry.alert
    recurred = (f"{entry.occurrences} steps, last {entry.last_step}"
                if entry.occurrences > 1 else "once")
    return {"id": row_id(entry.run, alert.node, alert.kind), "run": entry.run,
            "step": alert.step, "node": alert.node, "op": alert.op, "device": alert.device,
            "kind": KIND_TEXT.get(alert.kind, alert.kind), "occurred": recurred,
            "open": _link("/graph", "graph", run=entry.run, step=alert.step, node=alert.node)
            + " · " + _link("/scalars", "loss", run=entry.run, tag=LOSS_TAG, step=alert.step)}


def _entries(runs: Any) -> tuple[list[FirstAlert], list]:
    """(the chosen runs' first alerts, earliest first; a message per run that cannot be
    read: the others still list)."""
    chosen = [data.check_name(run) for run in inputs.text_list(runs, "the runs")]
    entries, problems = [], []
    for run in chosen:
        try:
            entries.extend(first_occurrences(run, data.alerts(run)))
        except PROBLEMS as exc:
            problems.append(message(f"{run}: {problem_text(exc)}"))
    return in_order(entries), problems


def _listed(problem: str) -> tuple:
    return [], message(problem), _HIDDEN, []


@answers(_listed)
def alerts_table(runs: list[str] | None, live_state: Any = None, selected_ids: Any = None,
                 selected_rows: Any = None) -> tuple:
    """(table rows, messages, the table's style, selected rows) for the chosen runs: a
    message when there is nothing to list. A new choice of runs starts unselected; after a
    poll (`live_state`) the rows are replaced and the selection follows its row (by id) to
    where it now is; sort, filter and page are the table's own and stay."""
    if not inputs.text_list(runs, "the runs"):
        return [], message("Choose at least one run.", EMPTY_TEXT), _HIDDEN, []
    entries, problems = _entries(runs)
    if not entries:
        return [], html.Div(problems + [message(
            "No NaN or Inf alerts in the chosen runs. Sessions record them with "
            "ConfigProto(check_numerics=True) or tf.add_check_numerics_ops().", EMPTY_TEXT)]), \
            _HIDDEN, []
    rows = [_row(entry) for entry in entries]
    if live_state is None:
        return rows, problems, _SHOWN, []
    return rows, problems, _SHOWN, _followed(rows, selected_ids, selected_rows)


def _followed(rows: list[dict], selected_ids: Any, selected_rows: Any) -> Any:
    """The selected rows' new indices (no update when they did not move)."""
    wanted = [ident for ident in (selected_ids if isinstance(selected_ids, list) else ())
              if isinstance(ident, str)]
    moved = [index for index, row in enumerate(rows) if row["id"] in wanted]
    return no_update if moved == selected_rows else moved


@answers(message)
def details(selected_ids: Any, runs: Any):
    """The selected alert's message, its inputs' and output's statistics and the op's
    creation site."""
    wanted = next((ident for ident in (selected_ids if isinstance(selected_ids, list) else ())
                   if isinstance(ident, str)), None)
    if wanted is None:
        return DETAILS_HINT
    entries, _ = _entries(runs)
    entry = next((entry for entry in entries
                  if row_id(entry.run, entry.alert.node, entry.alert.kind) == wanted), None)
    if entry is None:
        return DETAILS_HINT
    alert = entry.alert
    lines = [html.Div(tensor_text(summary), className="alert-tensor")
             for summary in alert.inputs]
    if alert.output is not None:
        lines.append(html.Div(["output: ", tensor_text(alert.output)], className="alert-tensor"))
    if alert.stack:
        lines.append(html.Pre("\n".join(alert.stack), className="alert-stack"))
    title = f"{entry.run} · {alert.node} ({alert.op}) at step {alert.step}"
    return html.Div([html.H4(title), html.P(alert.message or "no message"), *lines],
                    className="alert-details")


@answers(lambda _problem: no_update)
def view_address(runs: Any) -> str:
    """The address of the runs chosen, as run_choice reads it back."""
    return address(PATH, {"run": [data.check_name(run)
                                  for run in inputs.text_list(runs, "the runs")]})


def _table_input_first(runs, live_state, selected_ids, selected_rows):
    return polled(lambda *got: alerts_table(*got, selected_ids, selected_rows),
                  LIVE["store"])(runs, live_state)


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(TABLE, "data"), Output(MESSAGES_DIV, "children"),
                 Output(TABLE_DIV, "style"), Output(TABLE, "selected_rows"),
                 Input(RUN_DROPDOWN, "value"), Input(LIVE["store"], "data"),
                 State(TABLE, "selected_row_ids"), State(TABLE, "selected_rows"))(
        _table_input_first)
    app.callback(Output(DETAILS_DIV, "children"), Input(TABLE, "selected_row_ids"),
                 State(RUN_DROPDOWN, "value"))(details)
    register_address(app, "alerts", PATH, view_address, Input(RUN_DROPDOWN, "value"))
    register_live(app, "alerts", (RUN_DROPDOWN,), LIVE_PARTS)
