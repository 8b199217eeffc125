"""dash-cytoscape's bundle (0.5 MB of JavaScript) kept out of every page's scripts: Dash
lists it as a lazy resource, still served at its address, and assets/cytoscape.js loads it
when a canvas first renders (the Graph, Compare and Replay pages), so a fresh browser on the
other pages neither fetches nor compiles it before they draw."""

from __future__ import annotations

import dash_cytoscape

NAMESPACE = "dash_cytoscape"
# The address assets/cytoscape.js loads (after the app's requests_pathname_prefix).
ADDRESS = f"_dash-component-suites/{NAMESPACE}/dash_cytoscape.min.js"


def install() -> None:
    """Marks dash-cytoscape's scripts lazy: Dash leaves a lazy resource out of the page and
    serves it when asked (for every app in this process: they all get the stand-in)."""
    dash_cytoscape._js_dist = [{**entry, "async": "lazy"} for entry in dash_cytoscape._js_dist]
