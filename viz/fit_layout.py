"""Fitting the layered layout to the window: a box whose rows make it much taller than the
window is wide has its rows wrapped into side-by-side columns (read top to bottom, then left
to right), and the zoom at which a drawing fits the Graph page's canvas."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# The graph canvas at a 1280x800 window (the inspector and the controls take the rest) and
# cytoscape's fit padding (viz.graph_elements.cytoscape_layout says the same).
CANVAS = (1280.0 - 360.0, 800.0 - 300.0)
FIT_PADDING = 28.0
# Columns stand this far apart: wider than any gap inside one (viz.layout.NODE_GAP), so the
# edge routes find the columns again from the members' x extents alone (column_spans).
COLUMN_GAP = 40.0
# A hole wider than this in the members' x extents parts two columns: between a node gap
# (14 px) and COLUMN_GAP, clear of both whatever the rounding.
COLUMN_HOLE = 27.0
# Only a layout that one column would draw smaller than this zoom wraps (an open box as if
# it were drawn alone): a chain that fits the window readably keeps its straight flow.
READABLE = 1.0
MAX_COLUMNS = 8
CAPS = 64                      # column heights tried, evenly on a log scale
# Wrapping must fit the window at least this much larger: a layout near the window's shape
# keeps its one column, as its data flow reads best.
GAIN = 1.15

Span = tuple[float, float]


def fit_zoom(width: float, height: float, canvas: tuple[float, float] = CANVAS) -> float:
    """The zoom at which a drawing of `width` x `height` fits the canvas with its padding."""
    return min(canvas[0] / (width + 2 * FIT_PADDING), canvas[1] / (height + 2 * FIT_PADDING))


def rects_fit_zoom(rects: Iterable[tuple[float, float, float, float]],
                   canvas: tuple[float, float] = CANVAS) -> float:
    """fit_zoom of the extent of these (left, top, right, bottom) rectangles; 0 for none."""
    rects = list(rects)
    if not rects:
        return 0.0
    return fit_zoom(max(r[2] for r in rects) - min(r[0] for r in rects),
                    max(r[3] for r in rects) - min(r[1] for r in rects), canvas)


def _split(heights: Sequence[float], gap: float, most: float) -> list[int]:
    """Where each column starts when rows fill columns in order up to `most` tall each."""
    starts, used = [0], 0.0
    for index, height in enumerate(heights):
        if index > starts[-1] and used + gap + height > most:
            starts.append(index)
            used = height
        else:
            used += (gap if index > starts[-1] else 0.0) + height
    return starts


def columns_size(widths: Sequence[float], heights: Sequence[float], starts: Sequence[int],
                 row_gap: float) -> tuple[float, float]:
    """(width, height) of the rows laid out in columns starting at `starts`."""
    bounds = [*starts, len(widths)]
    width = sum(max(widths[a:b]) for a, b in zip(bounds, bounds[1:]))
    height = max(sum(heights[a:b]) + row_gap * (b - a - 1) for a, b in zip(bounds, bounds[1:]))
    return width + COLUMN_GAP * (len(starts) - 1), height


def wrap_rows(widths: Sequence[float], heights: Sequence[float], row_gap: float,
              canvas: tuple[float, float] = CANVAS) -> list[int]:
    """The first row of each column ([0]: one column) for rows of these sizes, filled in
    order: of the columns that CAPS heights between the tallest row and all rows give, those
    that fit `canvas` at the largest zoom, when one column fits it below READABLE and
    they beat it by GAIN."""
    if len(widths) != len(heights):
        raise ValueError(f"wrap_rows needs one width per height, got {len(widths)} widths "
                         f"and {len(heights)} heights")
    best, best_zoom = [0], fit_zoom(*columns_size(widths, heights, [0], row_gap), canvas)
    if len(heights) < 2 or best_zoom >= READABLE:
        return best
    least = best_zoom * GAIN
    low, high = max(heights), sum(heights) + row_gap * (len(heights) - 1)
    for step in range(CAPS):
        starts = _split(heights, row_gap, low * (high / low) ** (step / CAPS))
        if not 1 < len(starts) <= MAX_COLUMNS:
            continue
        zoom = fit_zoom(*columns_size(widths, heights, starts, row_gap), canvas)
        if zoom >= least and zoom > best_zoom:
            best, best_zoom = starts, zoom
    return best


def column_spans(spans: Iterable[Span], gap: float = COLUMN_HOLE) -> list[Span]:
    """The columns of one box from its members' (left, right) extents: runs of extents
    whose union has no hole wider than `gap` (a hole inside one column is at most a node
    gap, between columns it is COLUMN_GAP), left to right."""
    out: list[list[float]] = []
    for left, right in sorted(spans):
        if out and left - out[-1][1] <= gap:
            out[-1][1] = max(out[-1][1], right)
        else:
            out.append([left, right])
    return [(left, right) for left, right in out]
