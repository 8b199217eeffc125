"""The Graph page's pan and zoom in its address (`zoom=0.8&pan=120,-40`): read back here
into the first drawing's layout, so a reload or a copied address shows the same part of the
graph; written by the browser as the user pans or zooms (assets/graph.js), since the
viewport never travels to the server."""

from __future__ import annotations

from typing import Any

from workbench.inputs import BadInput, clipped, finite_number
from workbench.pages.common import address_value

# cytoscape's own bounds on the Graph page's canvas (graph.layout: minZoom, maxZoom)
MIN_ZOOM = 0.05
MAX_ZOOM = 4.0
MAX_PAN = 1e7                  # pixels: far past any drawing, short of float trouble
KEPT = ("zoom", "pan")         # the address parameters the browser writes itself


def address_viewport(query: Any) -> tuple[dict | None, str]:
    """({"zoom": z, "pan": {"x": x, "y": y}} or None, a notice): the address's viewport when
    it names both a zoom and a pan, each a finite number in range; anything else is left
    out (the drawing is fitted to the window), and the notice says what was wrong."""
    if not isinstance(query, dict):
        return None, ""
    zoom, pan = address_value(query.get("zoom")), address_value(query.get("pan"))
    if zoom is None and pan is None:
        return None, ""
    try:
        if zoom is None or pan is None:
            raise BadInput("the address needs both a zoom and a pan (zoom=0.8&pan=120,-40)")
        return {"zoom": finite_number(zoom, "the address's zoom", MIN_ZOOM, MAX_ZOOM),
                "pan": _pan(pan)}, ""
    except BadInput as problem:
        return None, f"Not restoring the view: {problem}; fitting the graph to the window."


def _pan(value: str) -> dict[str, float]:
    parts = value.split(",")
    if len(parts) != 2:
        raise BadInput(f"the address's pan must be two numbers x,y, got {clipped(value)}")
    x, y = (finite_number(part, f"the address's pan {axis}", -MAX_PAN, MAX_PAN)
            for part, axis in zip(parts, "xy"))
    if x is None or y is None:
        raise BadInput(f"the address's pan must be two numbers x,y, got {clipped(value)}")
    return {"x": x, "y": y}


def restored(layout: dict, viewport: dict | None) -> dict:
    """The drawing's preset layout set to the viewport instead of fitting the window (none:
    as it was)."""
    if viewport is None:
        return layout
    return {**layout, "fit": False, "zoom": viewport["zoom"], "pan": dict(viewport["pan"])}
