"""The Graph page's drawing as a standalone SVG file, from the same cytoscape elements the
page draws (boxes, leaves with their fills and labels, routed edges with arrows, the cut
edges' labels where the page places them), so the export needs no browser-side SVG
renderer."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from viz.edge_routes import Point, Rect
from viz.graph_elements import CUT_COLOR, LINE_PX, drawn_geometry, node_centres
from viz.graph_labels import EDGE_FONT, drawn, drawn_edge_labels

MARGIN = 20.0
EDGE_COLOR = "#a7b0bc"
BOX_FILL, BOX_STROKE = "#f5f7fa", "#9aa5b1"
EDGE_LABEL_COLOR = "#7a2e00"   # as the stylesheet's edge.labelled


def _bends(data: dict, src: Point, dst: Point) -> list[Point]:
    """Absolute bend points from cytoscape's (distance, weight) pairs."""
    if "bends" not in data:
        return []
    dx, dy = dst[0] - src[0], dst[1] - src[1]
    length = (dx * dx + dy * dy) ** 0.5 or 1.0
    nx, ny = -dy / length, dx / length
    points = []
    for d, w in zip(data["bends"].split(), data["weights"].split()):
        d, w = float(d), float(w)
        points.append((src[0] + w * dx + d * nx, src[1] + w * dy + d * ny))
    return points


def _border(outside: Point, rect: Rect) -> Point:
    """Where the segment from `outside` to the centre of `rect` meets its border."""
    cx, cy = (rect[0] + rect[2]) / 2, (rect[1] + rect[3]) / 2
    dx, dy = outside[0] - cx, outside[1] - cy
    half_w, half_h = (rect[2] - rect[0]) / 2, (rect[3] - rect[1]) / 2
    scale = min(half_w / abs(dx) if dx else float("inf"),
                half_h / abs(dy) if dy else float("inf"), 1.0)
    return cx + dx * scale, cy + dy * scale


def _text(x: float, y: float, lines: Sequence[str], size: int, color: str,
          weight: str = "normal") -> str:
    first = y - (len(lines) - 1) * LINE_PX / 2
    spans = "".join(f'<tspan x="{x:.1f}" y="{first + i * LINE_PX:.1f}">{escape(line)}</tspan>'
                    for i, line in enumerate(lines))
    return (f'<text font-size="{size}" font-weight="{weight}" fill="{color}" '
            f'text-anchor="middle" dominant-baseline="middle">{spans}</text>')


def graph_svg(elements: Sequence[dict]) -> str:
    """The whole drawing (not only what the window shows) on a white background."""
    nodes = [e for e in elements if "source" not in e["data"]]
    placed, at = drawn_geometry(elements)
    texts = {e["data"]["id"]: e["data"]["label"] for e in elements
             if "source" in e["data"] and e["data"].get("label")}
    rects = placed.rects
    ends = node_centres(rects, at)     # a bundled edge ends at a box
    if not rects:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>\n'
    labels = drawn_edge_labels(elements, drawn(nodes))
    extent = [*rects.values(), *(label.rect for label in labels)]
    left = min(r[0] for r in extent) - MARGIN
    top = min(r[1] for r in extent) - MARGIN
    width = max(r[2] for r in extent) + MARGIN - left
    height = max(r[3] for r in extent) + MARGIN - top
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="{left:.1f} {top:.1f} '
             f'{width:.1f} {height:.1f}" width="{width:.0f}" height="{height:.0f}" '
             'font-family="sans-serif">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
             'markerWidth="6" markerHeight="6" orient="auto-start-reverse">'
             f'<path d="M0,0 L10,5 L0,10 z" fill="{EDGE_COLOR}"/></marker></defs>',
             f'<rect x="{left:.1f}" y="{top:.1f}" width="{width:.1f}" height="{height:.1f}" '
             'fill="#ffffff"/>']
    for element in nodes:                        # boxes come before what they hold
        data = element["data"]
        rect = rects.get(data["id"])
        if rect is None or "position" in element:
            continue
        stroke = data.get("color", BOX_STROKE)
        parts.append(f'<rect x="{rect[0]:.1f}" y="{rect[1]:.1f}" width="{rect[2] - rect[0]:.1f}" '
                     f'height="{rect[3] - rect[1]:.1f}" rx="6" fill="{BOX_FILL}" '
                     f'stroke="{stroke}"/>')
        parts.append(_text((rect[0] + rect[2]) / 2, rect[1] + 10, [data["label"]], 12,
                           "#333333", "bold"))
    for element in elements:
        data = element["data"]
        if "source" not in data or data["source"] not in ends or data["target"] not in ends:
            continue
        src, dst = ends[data["source"]], ends[data["target"]]
        path = [src, *_bends(data, src, dst), dst]
        path[0] = _border(path[1], rects[data["source"]])
        path[-1] = _border(path[-2], rects[data["target"]])
        cut = " cut" in f" {element.get('classes', '')}"
        dash = ' stroke-dasharray="5,3"' if cut or "control" in element.get("classes", "") \
            else ""
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in path)
        parts.append(f'<polyline points="{points}" fill="none" '
                     f'stroke="{CUT_COLOR if cut else EDGE_COLOR}" '
                     f'stroke-width="{data.get("width", 1.2)}"{dash} '
                     'marker-end="url(#arrow)"/>')
    for element in nodes:
        data = element["data"]
        if "position" not in element:
            continue
        x, y = at[data["id"]]
        w, h = data["width"], data["height"]
        if data.get("kind") == "op":
            shape = f'<ellipse cx="{x:.1f}" cy="{y:.1f}" rx="{w / 2:.1f}" ry="{h / 2:.1f}"'
        else:
            shape = (f'<rect x="{x - w / 2:.1f}" y="{y - h / 2:.1f}" width="{w:.1f}" '
                     f'height="{h:.1f}" rx="5"')
        parts.append(f'{shape} fill="{data.get("color", "#cccccc")}" stroke="#4a5563" '
                     'stroke-width="1"/>')
        parts.append(_text(x, y, data["label"].split("\n"), 11, data.get("text", "#111111")))
    for label in labels:               # above the edges and nodes, as the page draws them
        left, top, right, bottom = label.rect
        parts.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" '
                     f'height="{bottom - top:.1f}" fill="#ffffff" fill-opacity="0.9"/>')
        parts.append(_text((left + right) / 2, (top + bottom) / 2, [texts[label.owner]],
                           EDGE_FONT, EDGE_LABEL_COLOR))
    parts.append("</svg>\n")
    return "\n".join(parts)
