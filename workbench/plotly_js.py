"""Which plotly.js the browser gets: the vendored basic bundle (plotly.js core with the bar,
pie and scatter traces, every trace the pages draw; vendor/README.md says where it comes from)
answered at the address Dash's renderer asks for the full one, so a fresh browser parses
1.2 MB instead of 4.8 MB before the first figure draws."""

from __future__ import annotations

import hashlib
from pathlib import Path

import dash
from dash.fingerprint import check_fingerprint
from flask import Response, request

BUNDLE = Path(__file__).resolve().parent / "vendor" / "plotly-basic.min.js"
VERSION = "4.1.1"
# The trace types the basic bundle registers (a browser test reads them from the bundle).
TRACES = frozenset({"bar", "pie", "scatter"})
# Dash's address for plotly's own file: SUITE + FILE with its fingerprint
# (`package_data/plotly.v7_1_0m<mtime>.min.js`) or without.
SUITE, FILE = "_dash-component-suites/plotly/", "package_data/plotly.min.js"


def install(app: dash.Dash) -> None:
    """Answers app's requests for plotly.min.js with BUNDLE. It is revalidated on each page
    load (a 304 when unchanged) instead of cached for a year as Dash's fingerprinted files
    are: the address is the full bundle's, and a server started with --full-plotly must not
    find the basic one in the browser's cache."""
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
