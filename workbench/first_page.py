"""The page a browser opens comes inside Dash's first layout (`_dash-layout`), instead of
from the pages' router callback that Dash fires once that layout has drawn: one round trip
less before a fresh page draws, and the page is built while the browser still reads the
callbacks. assets/first_page.js names the address the layout is for (the HEADER on that
request); the layout then holds that page, and the pages' Location already at that address,
so the router does not fire on load. Links inside the app go through the router as before.
Without the header, or for an address that is no page, the layout is the bare shell and the
router draws the page, as Dash does."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlsplit

import dash
from dash import dcc, html
from flask import has_request_context, request

HEADER = "X-Workbench-Location"
LAYOUT = "_dash-layout"
MAX_ADDRESS = 8192          # a longer address is no page's: the router answers it
# What dash.page_container holds, in order (Dash 2.16 to 4.4): the ids are read from it, so
# the page is built with the ids the router's callbacks use; another shape turns this off.
CONTAINER_KINDS = ("Location", "Div", "Store", "Div")
_log = logging.getLogger("workbench")


def page_container(app: dash.Dash):
    """What the shell holds where Dash's page_container goes: the page asked for, when this
    is the first layout request of a page load (asked_address), else Dash's own."""
    address = asked_address(app)
    ids = container_ids() if address is not None else None
    if ids is None:
        return dash.page_container
    try:
        return _container_at(app, address, ids)
    except Exception as exc:  # noqa: BLE001 -- the router builds the page (and says why)
        _log.warning("first page not built: %s: %.200s", type(exc).__name__, exc)
        return dash.page_container


def container_ids() -> tuple[str, str, str, str] | None:
    """The ids of dash.page_container's Location, content, store and dummy, or None (and a
    warning, once) where Dash builds it otherwise: then the router draws each first page."""
    children = getattr(dash.page_container, "children", None) or ()
    kinds = tuple(type(child).__name__ for child in children)
    ids = tuple(getattr(child, "id", None) for child in children)
    if kinds == CONTAINER_KINDS and all(isinstance(ident, str) for ident in ids):
        return ids
    if not _warned:
        _warned.append(True)
        _log.warning("dash %s builds its page container as %s, not %s: each first page "
                     "comes from the router", dash.__version__, kinds, CONTAINER_KINDS)
    return None


_warned: list = []


def asked_address(app: dash.Dash) -> str | None:
    """The browser's address (window.location.href) the layout is asked for, or None."""
    if not has_request_context() or request.path != app.config.routes_pathname_prefix + LAYOUT:
        return None
    address = request.headers.get(HEADER)
    return address if address and len(address) <= MAX_ADDRESS else None


def query_parameters(query: str) -> dict:
    """The layout's keyword arguments from an address's query, as Dash's router reads them
    (one value a name as text, a repeated name as a list)."""
    parsed = parse_qs(query, keep_blank_values=True)
    return {key: values[0] if len(values) == 1 else values for key, values in parsed.items()}


def _page_at(app: dash.Dash, path: str) -> dict | None:
    relative = app.strip_relative_path(path) or ""
    return next((page for page in dash.page_registry.values()
                 if page["path"].strip("/") == relative), None)


def _container_at(app: dash.Dash, address: str, ids: tuple[str, str, str, str]):
    url = urlsplit(address)
    page = _page_at(app, url.path)
    if page is None:
        return dash.page_container
    layout = page["layout"]
    content = layout(**query_parameters(url.query)) if callable(layout) else layout
    title = page["title"]() if callable(page["title"]) else page["title"]
    # The Location's props as window.location has them: equal ones are not set again on
    # mount, which is what would fire the router.
    location_id, content_id, store_id, dummy_id = ids
    location = dcc.Location(id=location_id, refresh="callback-nav", href=address,
                            pathname=url.path, search=f"?{url.query}" if url.query else "",
                            hash=f"#{url.fragment}" if url.fragment else "")
    return html.Div([location, html.Div(content, id=content_id, disable_n_clicks=True),
                     dcc.Store(id=store_id, data={"title": title}),
                     html.Div(id=dummy_id, disable_n_clicks=True)])
