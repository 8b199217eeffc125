"""Pieces every page shares: the run chooser rule, loading wrappers, headers, messages,
`answers`, which makes every callback answer with a message instead of failing, and live
follow (the run-status banner, its poll and the fingerprint store that wakes the page)."""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import dash
from dash import ClientsideFunction, Input, Output, State, dcc, html
from dash.exceptions import MissingCallbackContextException, PreventUpdate

from engine.record import RunStoreError
from workbench import data, live
from workbench.cache import FillTimeout
from workbench.inputs import BadInput, clipped, text_list

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


def choose_runs(requested: Any, has_data: Callable[[str], Any]
                ) -> tuple[list[dict], list[str], str]:
    """(every readable run as an option, the runs chosen, a notice) for a page showing several
    runs: the runs the address names (address_values), else the newest healthy run for which
    `has_data` is true (asked run by run, newest first, so a logdir of hundreds of runs is not
    read whole to open the page; a run it cannot read is passed over), else the newest
    healthy run; the notice names a run the address asked for that is not there."""
    names, healthy = run_choices()
    options = run_options(names, frozenset(names) - frozenset(healthy))
    asked = address_values(requested, names)
    found = [name for name in asked if name in names]
    missing = [name for name in asked if name not in names]
    chosen = found or _first_with(healthy, has_data) or healthy[:1] or names[:1]
    told = run_notice(missing[0], None if found or not chosen else chosen[0]) if missing else ""
    return options, chosen, told


def comma_parts(requested: Any) -> list[str]:
    """The non-empty parts of a comma-separated address value ([] for anything else)."""
    return [part for part in requested.split(",") if part] if isinstance(requested, str) else []


def _first_with(names: list[str], has_data: Callable[[str], Any]) -> list[str]:
    for name in names:
        try:
            if has_data(name):
                return [name]
        except PROBLEMS:
            continue
    return []


def run_options(names: list[str], damaged: frozenset[str] = frozenset()) -> list[dict]:
    return [{"label": f"{name} (damaged)" if name in damaged else name, "value": name}
            for name in names]


def run_choices() -> tuple[list[str], list[str]]:
    """(every readable run, the healthy ones), newest first."""
    return data.readable_run_names(), data.healthy_run_names()


# -- addresses: every page writes the choices it can read back into the address bar --

ADDRESS_SAFE = "/,:@!$'()*;~"     # left as they are: readable, and not a query's own syntax


def address(path: str, query: dict[str, Any]) -> str:
    """The address of a view: `path` and its choices, in order, percent-escaped (a space is
    %20, a + is %2B). None and empty lists are left out; "" is written empty (`open=`: a
    choice of nothing). A list is written comma-separated (`run=A,B`) unless an item has a
    comma: then once per item (`run=A,B&run=C`; a lone item with an empty one after it), so
    that address_values reads back the same items."""
    pairs: list[tuple[str, str]] = []
    for key, value in query.items():
        if isinstance(value, (list, tuple)):
            items = [str(item) for item in value if item not in (None, "")]
            if any("," in item for item in items):
                pairs += [(key, item) for item in items] + [(key, "")] * (len(items) == 1)
            elif items:
                pairs.append((key, ",".join(items)))
        elif value is not None:
            pairs.append((key, str(value)))
    encoded = urllib.parse.urlencode(pairs, safe=ADDRESS_SAFE, quote_via=urllib.parse.quote)
    return f"{path}?{encoded}" if encoded else path


def address_values(value: Any, known: Any = None) -> list[str]:
    """The items an address value names, in order, without repeats: a repeated parameter's
    items whole (Dash passes a list), else a comma-separated value's parts; but a value
    that is itself one of `known` (the names it may name) while its parts are not all known
    is one item (a name with a comma, typed by hand)."""
    if isinstance(value, list):
        items = [item for item in value if isinstance(item, str) and item]
    elif isinstance(value, str):
        items = comma_parts(value)
        names = frozenset(known or ())
        if value in names and not all(item in names for item in items):
            items = [value]
    else:
        items = []
    return list(dict.fromkeys(items))


def address_value(value: Any) -> str | None:
    """A one-choice address value: the text, or a repeated parameter's first item."""
    if isinstance(value, list):
        value = next((item for item in value if isinstance(item, str) and item), None)
    return value if isinstance(value, str) and value else None


def address_ids(page: str) -> dict[str, str]:
    """The ids of a page's address stores: the view's address (`href`, written by the
    server) and what the address bar was last set to (`set`, by the browser)."""
    return {"href": f"{page}-address-href-store", "set": f"{page}-address-store"}


def address_stores(page: str, link: bool = False) -> list[dcc.Store]:
    """The page's address stores for its layout (`link`: the view's address is a link's
    href instead of a store)."""
    own = address_ids(page)
    return [dcc.Store(id=own["set"])] + ([] if link else [dcc.Store(id=own["href"])])


def register_address(app: dash.Dash, page: str, path: str, address_of: Callable,
                     *inputs: Input, link: str | None = None,
                     keep: tuple[str, ...] = ()) -> None:
    """The address bar follows the page's choices: `address_of(*values of inputs)` (a server
    callback, run when the page loads and on each change) says the view's address, into
    the `link`'s href or the page's href store, and the browser sets it (address_setter:
    replaceState, so no history entry per change and no reload). `keep`: parameters the
    browser writes itself (the Graph page's pan and zoom), carried over from the address
    bar."""
    own = address_ids(page)
    target = (link, "href") if link else (own["href"], "data")
    app.callback(Output(*target), *inputs)(address_of)
    app.clientside_callback(address_setter(path, keep), Output(own["set"], "data"),
                            Input(*target), prevent_initial_call=True)


def address_setter(path: str, keep: tuple[str, ...] = ()) -> str:
    """A clientside callback body that puts the view's address (its input, an href) into the
    address bar without navigating, as the Replay page does; only while the page at `path` is
    shown, since a link followed away may fire it once more. The parameters named in `keep`
    that the address bar has and the href lacks are carried over as they are written."""
    return """
function (href) {
    if (typeof href !== "string" || !window.location.pathname.endsWith(PAGE_PATH)) {
        return window.dash_clientside.no_update;
    }
    const address = new URL(href, window.location.href);
    const named = (part) => {
        const name = part.split("=")[0];
        try {
            return decodeURIComponent(name);
        } catch (error) {       // a stray % typed into the address
            return name;
        }
    };
    const have = new Set(address.search.slice(1).split("&").filter(Boolean).map(named));
    const kept = window.location.search.slice(1).split("&").filter(
        (part) => part && KEPT.includes(named(part)) && !have.has(named(part)));
    const search = [address.search.slice(1), ...kept].filter(Boolean).join("&");
    const wanted = address.pathname + (search ? "?" + search : "");
    if (wanted !== window.location.pathname + window.location.search) {
        window.history.replaceState(window.history.state, "", wanted);
    }
    return href;
}
""".replace("PAGE_PATH", json.dumps(path)).replace("KEPT", json.dumps(list(keep)))


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


# -- live follow: every page that shows a run's data polls while that run is running --


def live_ids(page: str) -> dict[str, str]:
    """The ids of a page's banner, poll, fingerprint store and zoom store (keep_zooms)."""
    return {"banner": f"{page}-live-banner-div", "interval": f"{page}-live-interval",
            "store": f"{page}-live-store", "zoom": f"{page}-live-zoom-store"}


def live_follow(page: str, fixed: bool = False) -> html.Div:
    """The page's run-status banner (one line a run; `fixed`: one line of fixed height, for
    pages where nothing above a drawing may move), its poll (off until a run it shows is
    running) and the store of what the last poll saw."""
    own = live_ids(page)
    return html.Div(className="live-follow", children=[
        html.Div(id=own["banner"], className="live-banner" + (" live-fixed" if fixed else "")),
        dcc.Interval(id=own["interval"], interval=live.LIVE_MS, disabled=True),
        dcc.Store(id=own["store"]), dcc.Store(id=own["zoom"])])


def _followed(values) -> list[str]:
    names: list[str] = []
    for value in values if isinstance(values, (list, tuple)) else [values]:
        names += [data.check_name(name) for name in text_list(value, "the runs")]
    return list(dict.fromkeys(names))[:live.MAX_FOLLOWED]


def _banner_line(name: str, several: bool, now: float) -> tuple[html.Span, dict]:
    """(the run's banner line, its fingerprint's status part) from its info read now."""
    try:
        info = data.live_info(name)
    except PROBLEMS as exc:
        said, state, info = problem_text(exc), live.UNKNOWN, None
    else:
        said, state = live.status_line(info, now)
    label = f"{name}: {said}" if several else said
    return html.Span(label, title=label, className=f"live-status live-{state}"), info


@answers(lambda problem: ([html.Span(problem, className="live-status live-unknown")], True,
                          dash.no_update))
def follow(runs: tuple, previous: Any, parts: tuple[str, ...], now: float | None = None
           ) -> tuple[list, bool, Any]:
    """(banner lines, whether the poll is off, the new fingerprint or no_update): `runs`
    are the values of the page's run choosers; the poll runs while one of them is running,
    and the fingerprint store changes (waking the page's views) only when what the page
    shows of them did, so an idle poll costs one read of each run's info."""
    now = time.time() if now is None else now
    names = _followed(runs)
    lines, found, states = [], {}, []
    for name in names:
        line, info = _banner_line(name, len(names) > 1, now)
        lines.append(line)
        states.append(info.status if info is not None else live.UNKNOWN)
        found[name] = ({"status": live.UNKNOWN} if info is None
                       else live.fingerprint(name, info, parts))
    last = previous.get("runs") if isinstance(previous, dict) else None
    if last == found:
        return lines, not live.is_running(states), dash.no_update
    return lines, not live.is_running(states), {"runs": found,
                                                "changed": live.changed(last, found)}


def register_live(app: dash.Dash, page: str, run_ids: tuple[str, ...],
                  parts: tuple[str, ...]) -> None:
    """The page's banner and poll follow the runs chosen in `run_ids` (dropdowns); its views
    take Input(live_ids(page)["store"], "data") to refresh when `parts` of a run change."""
    own = live_ids(page)
    app.callback(Output(own["banner"], "children"), Output(own["interval"], "disabled"),
                 Output(own["store"], "data"), *[Input(ident, "value") for ident in run_ids],
                 Input(own["interval"], "n_intervals"), State(own["store"], "data"))(
        lambda *args: follow(args[:-2], args[-1], parts))


def live_tick(store_id: str) -> bool:
    """Whether the callback running now was woken by the live store alone (a poll saw the
    run change), not by the user or a new run; False outside a callback."""
    try:
        triggered = dash.ctx.triggered_prop_ids
    except MissingCallbackContextException:
        return False
    return bool(triggered) and set(triggered) == {f"{store_id}.data"}


def polled(function: Callable, store_id: str) -> Callable:
    """`function` as a callback whose last argument is the live store's state: passed on
    only when a poll alone woke the call (else None: the user or a new run did, and the
    view starts afresh)."""
    @functools.wraps(function)
    def called(*args):
        *rest, state = args
        return function(*rest, state if live_tick(store_id) else None)
    return called


def live_changed(live_state: Any) -> frozenset[str]:
    """The parts the last poll saw change (every part when the state is not a poll's)."""
    if not isinstance(live_state, dict) or not isinstance(live_state.get("changed"), list):
        return frozenset(live.PARTS) | {"status", "runs"}
    return frozenset(part for part in live_state["changed"] if isinstance(part, str))


def keep_zooms(app: dash.Dash, page: str, graph: Any) -> None:
    """The page's zoom store follows the zoom each plot of `graph` (an id, or a pattern id
    with ALL) was given, merged in the browser from every relayout (assets/live.js): its
    live refresh states it on the new figures (zoom_of, live.kept_zoom)."""
    app.clientside_callback(
        ClientsideFunction("live", "zooms"), Output(live_ids(page)["zoom"], "data"),
        Input(graph, "relayoutData"), State(graph, "id"), State(live_ids(page)["zoom"], "data"),
        prevent_initial_call=True)


def zoom_key(ident: Any) -> str:
    """The zoom store's key of a graph id (as assets/live.js writes it)."""
    if isinstance(ident, dict):
        return "&".join(f"{key}={ident[key]}" for key in sorted(ident))
    return str(ident)


def zoom_of(zooms: Any, ident: Any) -> Any:
    """The zoom the store holds for one graph (None when none)."""
    return zooms.get(zoom_key(ident)) if isinstance(zooms, dict) else None
