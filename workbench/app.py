"""create_app(logdir): the Dash application. Pages are registered explicitly, in nav order,
and each page registers its own callbacks on this app (so several apps can live in one
process, as the browser tests need). Malformed requests are refused before Dash sees them
(request_checks), and a callback that fails anyway answers "no update", never a 500."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import dash
from dash import dcc, html

from workbench import cytoscape_js, data, first_page, plotly_js, request_checks
from workbench.pages import (
    alerts,
    compare,
    graph,
    histograms,
    images,
    placement,
    pruning,
    quantization,
    replay,
    runs,
    scalars,
    text,
    timeline,
)

PAGES = (runs, graph, placement, scalars, histograms, images, text, timeline, alerts, compare,
         replay, pruning, quantization)
ASSETS = Path(__file__).resolve().parent.parent / "assets"
TITLE = "Workbench"
NAV_ID = "app-nav-div"
_log = logging.getLogger("workbench")


def _shell(logdir: str, container) -> html.Div:
    """The header and nav around `container` (where Dash's pages go: first_page's)."""
    links = [dcc.Link(page.NAME, href=page.PATH, className="nav-link",
                      id=f"app-nav-{page.NAME.lower()}-link") for page in PAGES]
    return html.Div(className="app", children=[
        html.Header(className="app-header", children=[
            html.Span(TITLE, className="app-title"),
            html.Nav(links, id=NAV_ID, className="nav"),
            html.Span(f"logdir: {logdir}", className="app-logdir", title=logdir),
        ]),
        html.Main(container, className="app-main"),
    ])


def _shown_logdir(logdir) -> str:
    """The logdir relative to where the server started: pages never show the server's
    absolute paths."""
    try:
        return os.path.relpath(os.path.abspath(logdir), os.getcwd())
    except ValueError:          # another drive (Windows): the folder's own name
        return Path(logdir).name


def _callback_failed(exc: Exception) -> None:
    """Dash's own callbacks (the pages' router) meeting a forged value: logged, and answered
    with no update. The workbench's callbacks answer with a message themselves."""
    _log.warning("callback failed: %s: %.200s", type(exc).__name__, exc)


def create_app(logdir: str | os.PathLike, full_plotly: bool = False) -> dash.Dash:
    """The workbench for the runs in `logdir`; serve it with app.run(host, port). The browser
    gets plotly.js's basic bundle (plotly_js), or Dash's full one with `full_plotly`, and
    dash-cytoscape's only where a canvas needs it (cytoscape_js)."""
    data.set_logdir(logdir)
    app = dash.Dash(
        __name__, use_pages=True, pages_folder="", assets_folder=str(ASSETS),
        title=TITLE, suppress_callback_exceptions=True, update_title=None,
        on_error=_callback_failed)
    for order, page in enumerate(PAGES):
        dash.register_page(page.__name__, path=page.PATH, name=page.NAME, title=f"{page.NAME} · "
                           f"{TITLE}", order=order, layout=page.layout)
        page.register_callbacks(app)
    shown = _shown_logdir(logdir)
    app.layout = lambda: _shell(shown, first_page.page_container(app))
    request_checks.install(app)
    cytoscape_js.install()
    if not full_plotly:
        plotly_js.install(app)
    return app
