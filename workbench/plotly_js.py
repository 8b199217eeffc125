"""Which plotly.js the browser gets: the vendored basic bundle (plotly.js core with the bar,
pie and scatter traces, every trace the pages draw; vendor/README.md says where it comes from)
answered at the address Dash's renderer asks for the full one, so a fresh browser parses
1.2 MB instead of 4.8 MB before the first figure draws."""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path

import dash
import plotly
from dash.fingerprint import check_fingerprint
from flask import Response, request

BUNDLE = Path(__file__).resolve().parent / "vendor" / "plotly-basic.min.js"
VERSION = "4.1.1"
# The trace types the basic bundle registers (a browser test reads them from the bundle).
TRACES = frozenset({"bar", "pie", "scatter"})
# Dash's address for plotly's own file: SUITE + FILE with its fingerprint
# (`package_data/plotly.v7_1_0m<mtime>.min.js`) or without.
SUITE, FILE = "_dash-component-suites/plotly/", "package_data/plotly.min.js"
FULL = Path(plotly.__file__).resolve().parent / FILE
_log = logging.getLogger(__name__)


def shipped_version(path: Path = FULL) -> str | None:
    """The plotly.js version of the full bundle the installed plotly ships (its header)."""
    try:
        with path.open("rb") as f:
            head = f.read(256)
    except OSError:
        return None
    found = re.search(rb"plotly\.js v(\d+\.\d+\.\d+)", head)
    return found.group(1).decode() if found else None


def install(app: dash.Dash) -> None:
    """Answers app's requests for plotly.min.js with BUNDLE, where the installed plotly ships
    the bundle's plotly.js version (else Dash's full bundle stays, with a warning). It is
    revalidated on each page load (a 304 when unchanged) instead of cached for a year as
    Dash's fingerprinted files are: the address is the full bundle's, and a server started
    with --full-plotly must not find the basic one in the browser's cache."""
    shipped = shipped_version()
    if shipped != VERSION:
        # Another plotly (upgraded past the vendored bundle): its renderer may rely on a
        # newer plotly.js, so the full bundle it ships stays.
        _log.warning("plotly ships plotly.js %s, the vendored basic bundle is %s: serving "
                     "the full bundle (re-vendor as workbench/vendor/README.md says)",
                     shipped, VERSION)
        return
    body = BUNDLE.read_bytes()
    etag = hashlib.sha256(body).hexdigest()[:32]
    suite = app.config.routes_pathname_prefix + SUITE

    def basic_bundle():
        if (not request.path.startswith(suite)
                or check_fingerprint(request.path[len(suite):])[0] != FILE):
            return None
        response = Response(body, mimetype="application/javascript")
        response.set_etag(etag)
        response.cache_control.no_cache = True
        return response.make_conditional(request)

    app.server.before_request(basic_bundle)
