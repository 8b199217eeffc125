"""Pieces every page shares: the run chooser rule, loading wrappers, headers, messages, and
`answers`, which makes every callback answer with a message instead of failing."""

from __future__ import annotations

import functools
import logging
import sqlite3
from collections.abc import Callable
from typing import Any

from dash import dcc, html
from dash.exceptions import PreventUpdate

from engine.record import RunStoreError
from workbench import data
from workbench.cache import FillTimeout
from workbench.inputs import BadInput, clipped

LOADING_DELAY_MS = 250  # quick refreshes (the runs poll) do not flash a spinner
_log = logging.getLogger("workbench")
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6


def choose_run(names: list[str], requested: Any, preferred: list[str] | None = None
               ) -> str | None:
    """The requested run when it exists, else the most recent of `preferred` (the healthy
    runs), else the most recent one (names come newest first)."""
    if isinstance(requested, str) and requested in names:
        return requested
    for name in preferred or ():
        if name in names:
            return name
    return names[0] if names else None


def run_notice(requested: Any, chosen: str | None) -> str:
    """Why the page shows another run than the one in the address, or ""."""
    if requested in (None, "") or requested == chosen:
        return ""
    instead = f"; showing {chosen}" if chosen else ""
    return f"No readable run named {clipped(requested)} in the log directory{instead}."


def run_options(names: list[str], damaged: frozenset[str] = frozenset()) -> list[dict]:
    return [{"label": f"{name} (damaged)" if name in damaged else name, "value": name}
            for name in names]


def run_choices() -> tuple[list[str], list[str]]:
    """(every readable run, the healthy ones), newest first."""
    return data.readable_run_names(), data.healthy_run_names()


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


# What a callback expects to meet (a bad value, an unknown, damaged or busy run, a slow
# fill): each is told to the user; anything else is a bug, and logged as one.
PROBLEMS = (BadInput, data.UnknownRunError, RunStoreError, FillTimeout)


def problem_text(exc: Exception) -> str:
    """What to tell the user about a failed callback, in words, with no server paths."""
    if isinstance(exc, (BadInput, data.UnknownRunError)):
        return _sentence(str(exc))
    if isinstance(exc, RunStoreError):
        if _sqlite_code(exc) in (_SQLITE_BUSY, _SQLITE_LOCKED):
            return "The run is busy being written; this page will try again shortly."
        return f"Cannot show this: the run is damaged ({data.shown(str(exc))})."
    if isinstance(exc, FillTimeout):
        return f"Still loading ({exc})."
    _log.error("callback failed", exc_info=exc)
    return (f"Could not show this ({type(exc).__name__}); the server log has the details.")


def _sentence(text: str) -> str:
    text = data.shown(text)
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "…")) else ".")


def _sqlite_code(exc: BaseException | None) -> int | None:
    while exc is not None:
        if isinstance(exc, sqlite3.Error):
            return getattr(exc, "sqlite_errorcode", 0) & 0xFF
        exc = exc.__cause__
    return None


def answers(fallback: Callable[[str], Any]):
    """Decorates a callback so it always answers: a bad input, an unknown, damaged or busy
    run, or an unforeseen error (logged) becomes fallback(message), the callback's outputs
    showing that message. So the page never gets an HTTP 500 or a spinner that never ends."""
    def wrap(function):
        @functools.wraps(function)
        def answered(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except PreventUpdate:
                raise
            except Exception as exc:  # noqa: BLE001 -- turned into the page's message
                return fallback(problem_text(exc))
        return answered
    return wrap
