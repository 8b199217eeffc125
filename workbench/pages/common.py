"""Pieces every page shares: the run chooser rule, loading wrappers, headers, messages."""

from __future__ import annotations

from dash import dcc, html

LOADING_DELAY_MS = 250  # quick refreshes (the runs poll) do not flash a spinner


def choose_run(names: list[str], requested: str | None) -> str | None:
    """The requested run when it exists, else the most recent one (names come newest first)."""
    if requested in names:
        return requested
    return names[0] if names else None


def run_options(names: list[str]) -> list[dict]:
    return [{"label": name, "value": name} for name in names]


def loading(component_id: str, children) -> dcc.Loading:
    return dcc.Loading(id=component_id, type="circle", delay_show=LOADING_DELAY_MS,
                       children=children)


def page_header(title: str, subtitle: str) -> html.Div:
    return html.Div(className="page-header", children=[
        html.H2(title), html.P(subtitle, className="page-subtitle")])


def message(text: str, component_id: str | None = None) -> html.P:
    props = {"id": component_id} if component_id else {}
    return html.P(text, className="message", **props)


def labelled(label: str, control) -> html.Div:
    return html.Div(className="control", children=[html.Label(label), control])
