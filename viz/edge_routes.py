"""Edge routes around boxes for the nested layout (viz.layout.nested_layout): an edge leaves
its source's boxes through their lower borders, passes the rows between its ends through
the gaps between their members (between two columns of a wrapped box, up or down the gap
between them), and enters its target's boxes from above, so it never cuts through a box it
does not belong to; plus the geometry (footprints, rows, columns) and crossing counts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from viz.fit_layout import column_spans
from viz.graph_labels import title_width
from viz.layout import BOX_LABEL, BOX_PAD, ROW_GAP

Point = tuple[float, float]
Intervals = list[tuple[float, float]]
Rect = tuple[float, float, float, float]        # left, top, right, bottom
SIDE_ROOM = 30.0               # how far outside the top-level rows a detour may run
MARGIN = 5.0                   # an edge keeps this far from the members it passes


@dataclass(frozen=True)
class Row:
    top: float
    bottom: float
    spans: tuple[tuple[float, float], ...]      # members' (left, right), left to right
    column: int = 0                             # which of its box's columns it is in


@dataclass(frozen=True)
class Column:
    """One of a box's side-by-side columns of rows (viz.fit_layout wraps tall boxes)."""
    left: float
    right: float
    first: int                 # index of its first row in the box's rows
    stop: int                  # one past its last


@dataclass(frozen=True)
class Geometry:
    """Where everything of one drawing is: each item's footprint (a box's includes its
    label band), each box's rows of children, and each item's enclosing boxes."""
    rects: Mapping[str, Rect]
    rows: Mapping[str, tuple[Row, ...]]           # box ("" the canvas) -> its rows
    columns: Mapping[str, tuple[Column, ...]]     # box -> its columns, left to right
    row_of: Mapping[str, int]                     # item -> index of its row in its box
    parents: Mapping[str, str]
    chains: Mapping[str, tuple[str, ...]]         # item -> boxes holding it, outermost first
    free: dict = field(default_factory=dict)      # free x intervals per row and run, lazily


def geometry(parents: Mapping[str, str], positions: Mapping[str, Point],
             sizes: Mapping[str, tuple[float, float]],
             titles: Mapping[str, str] | None = None) -> Geometry:
    """Footprints as nested_layout allotted them: a leaf is its size around its centre; a
    box is its children's extent plus padding, and the label band above, at least as wide
    as its title (`titles`: box id -> label) around its middle."""
    children: dict[str, list[str]] = {"": []}
    for item, parent in parents.items():
        children.setdefault(parent, []).append(item)
    chains: dict[str, tuple[str, ...]] = {}
    for item in parents:
        path = []
        while item and item not in chains:
            path.append(item)
            item = parents[item]
        found = chains[item] + (item,) if item else ()
        for node in reversed(path):
            chains[node] = found
            found = found + (node,)
    rects: dict[str, Rect] = {}
    for item, (x, y) in positions.items():
        w, h = sizes[item]
        rects[item] = (x - w / 2, y - h / 2, x + w / 2, y + h / 2)
    boxes = sorted((item for item in children if item and item not in rects),
                   key=lambda item: -len(chains.get(item, ())))      # innermost first
    for box in boxes:
        inner = [rects[kid] for kid in children[box] if kid in rects]
        if not inner:
            continue
        left, right = min(r[0] for r in inner) - BOX_PAD, max(r[2] for r in inner) + BOX_PAD
        spill = max(0.0, (title_width((titles or {}).get(box, "")) - (right - left)) / 2)
        rects[box] = (left - spill, min(r[1] for r in inner) - BOX_PAD - BOX_LABEL,
                      right + spill, max(r[3] for r in inner) + BOX_PAD)
    rows: dict[str, tuple[Row, ...]] = {}
    row_of: dict[str, int] = {}
    columns: dict[str, tuple[Column, ...]] = {}
    for box, kids in children.items():
        placed = [kid for kid in kids if kid in rects]
        spans = column_spans((rects[kid][0], rects[kid][2]) for kid in placed)
        found: list[Row] = []
        strips: list[Column] = []
        for column, (left, right) in enumerate(spans):
            first = len(found)
            members_of = [kid for kid in placed if left <= rects[kid][0] <= right]
            for members in _rows_by_centre(members_of, rects):
                for kid in members:
                    row_of[kid] = len(found)
                found.append(Row(min(rects[k][1] for k in members),
                                 max(rects[k][3] for k in members),
                                 tuple((rects[k][0], rects[k][2]) for k in members), column))
            strips.append(Column(left, right, first, len(found)))
        rows[box] = tuple(found)
        columns[box] = tuple(strips)
    return Geometry(rects, rows, columns, row_of, dict(parents), chains)


def _rows_by_centre(items: list[str], rects: Mapping[str, Rect]) -> list[list[str]]:
    """Items grouped into rows by their centre's y (a row's members share it, up to the
    layout's rounding), top to bottom, each row left to right."""
    def centre(item: str) -> float:
        return (rects[item][1] + rects[item][3]) / 2

    rows: list[list[str]] = []
    for item in sorted(items, key=centre):
        if rows and centre(item) - centre(rows[-1][0]) <= 1.0:
            rows[-1].append(item)
        else:
            rows.append([item])
    return [sorted(row, key=lambda item: rects[item][0]) for row in rows]


def _lateral(geo: Geometry, box: str, column: int = 0) -> tuple[float, float]:
    """The x range an edge may use inside `box`'s `column`: its padding included, its
    border not; a column's reaches to the middle of the gaps beside it."""
    if box:
        left, _, right, _ = geo.rects[box]
        left, right = left + BOX_PAD / 2, right - BOX_PAD / 2
    else:
        spans = [span for row in geo.rows.get("", ()) for span in row.spans]
        if not spans:
            return 0.0, 0.0
        left = min(s[0] for s in spans) - SIDE_ROOM
        right = max(s[1] for s in spans) + SIDE_ROOM
    strips = geo.columns.get(box, ())
    if len(strips) > 1:
        if column > 0:
            left = _gap(strips, column)
        if column < len(strips) - 1:
            right = _gap(strips, column + 1)
    return left, right


def _gap(strips: Sequence[Column], column: int) -> float:
    """The middle of the gap left of `column` (between it and the one before)."""
    return (strips[column - 1].right + strips[column].left) / 2


def _column_rows(geo: Geometry, box: str, index: int) -> range:
    """The indices of the rows in the column of row `index` of `box`."""
    strip = geo.columns[box][geo.rows[box][index].column]
    return range(strip.first, strip.stop)


def _free(row: Row, lateral: tuple[float, float]) -> Intervals:
    """Where a vertical line passes `row` without touching its members, MARGIN away from
    them (a gap narrower than that keeps its middle); the row's ends count, and a box's
    padding is free space."""
    low, high = lateral
    bounds = [low, *[v for span in row.spans for v in span], high]
    free = []
    for start, end in zip(bounds[::2], bounds[1::2]):
        if end - start >= 2 * MARGIN:
            free.append((start + MARGIN, end - MARGIN))
        elif end > start:
            free.append(((start + end) / 2, (start + end) / 2))
    return free


def _free_at(geo: Geometry, box: str, index: int) -> Intervals:
    key = (box, index)
    if key not in geo.free:
        row = geo.rows[box][index]
        geo.free[key] = _free(row, _lateral(geo, box, row.column))
    return geo.free[key]


def _common(a: Intervals, b: Intervals) -> Intervals:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start <= end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _nearest(free: Intervals, wanted: float) -> float:
    return min((min(max(wanted, start), end) for start, end in free),
               key=lambda x: abs(x - wanted))


def _groups(geo: Geometry, box: str, passed: range) -> list[tuple[int, int, Intervals]]:
    """(first row, last row, x intervals free in all of them) for each run of `passed`
    that one vertical line can pass, greedily from the top (cached: the edges leaving one
    box pass the same rows)."""
    key = (box, passed.start, passed.stop)
    if key in geo.free:
        return geo.free[key]
    groups: list[tuple[int, int, Intervals]] = []
    for index in passed:
        free = _free_at(geo, box, index)
        if groups and (shared := _common(groups[-1][2], free)):
            groups[-1] = (groups[-1][0], index, shared)
        else:
            groups.append((index, index, free))
    geo.free[key] = groups
    return groups


def _pass_rows(geo: Geometry, box: str, passed: range, x: float, wanted: float,
               points: list[Point]) -> float:
    """Waypoints through the rows `passed` of `box` (top to bottom): runs of rows that one
    vertical line can pass (through gaps or beside them) are passed by one, at the x
    nearest `wanted`; the moves between lie in the bands between rows. Returns the x the
    route ends at."""
    for first, last, free in _groups(geo, box, passed):
        if not free:
            continue
        gx = x if any(start <= x <= end for start, end in free) else _nearest(free, wanted)
        above = _band_above(geo, box, first)
        if abs(gx - x) > 0.5:
            points.append((x, above))
        points.append((gx, above))
        points.append((gx, _band_below(geo, box, last)))
        x = gx
    return x


def _band_above(geo: Geometry, box: str, index: int) -> float:
    """The y of the free band above row `index`: half the row gap, or for a box's first
    row half its padding (the label sits above that)."""
    rows = geo.rows[box]
    first = index == _column_rows(geo, box, index).start and box
    return rows[index].top - (BOX_PAD / 2 if first else ROW_GAP / 2)


def _band_below(geo: Geometry, box: str, index: int) -> float:
    rows = geo.rows[box]
    last = index == _column_rows(geo, box, index).stop - 1 and box
    return rows[index].bottom + (BOX_PAD / 2 if last else ROW_GAP / 2)


def _clamp(x: float, rect: Rect, inset: float) -> float:
    return min(max(x, rect[0] + inset), rect[2] - inset)


def route(geo: Geometry, src: str, dst: str) -> list[Point]:
    """Bend points of the edge src -> dst (leaves), none when it runs straight between
    neighbouring rows of one box."""
    a_chain, b_chain = geo.chains[src] + (src,), geo.chains[dst] + (dst,)
    depth = 0
    while depth < min(len(a_chain), len(b_chain)) - 1 and a_chain[depth] == b_chain[depth]:
        depth += 1
    common = a_chain[depth - 1] if depth else ""
    sx, _ = _centre(geo.rects[src])
    tx, _ = _centre(geo.rects[dst])
    points: list[Point] = []
    x = sx
    # Out of the source's boxes, innermost first, each through its lower border.
    for level in range(len(a_chain) - 1, depth, -1):
        item, box = a_chain[level], a_chain[level - 1]
        below = range(geo.row_of[item] + 1, _column_rows(geo, box, geo.row_of[item]).stop)
        x = _pass_rows(geo, box, below, x, _clamp(tx, geo.rects[box], BOX_PAD), points)
    a, b = a_chain[depth], b_chain[depth]
    ra, rb = geo.row_of[a], geo.row_of[b]
    rows = geo.rows[common]
    entry = _clamp(tx, geo.rects[b], MARGIN + 2)
    if rows[ra].column != rows[rb].column:
        x, top = _across(geo, common, ra, rb, x, entry, points)
    elif rb > ra:
        x = _pass_rows(geo, common, range(ra + 1, rb), x, entry, points)
        top = _band_above(geo, common, rb)
    else:
        x, top = _around(geo, common, rows, ra, rb, x, entry, points)
    if abs(entry - x) > 0.5:
        points += [(x, top), (entry, top)]
    x = entry
    # Into the target's boxes, outermost first, each through its upper border.
    for level in range(depth + 1, len(b_chain)):
        box, item = b_chain[level - 1], b_chain[level]
        inside = _clamp(tx, geo.rects[item], MARGIN + 2)
        x = _pass_rows(geo, box, range(_column_rows(geo, box, geo.row_of[item]).start,
                                       geo.row_of[item]), x, inside, points)
        top = _band_above(geo, box, geo.row_of[item])
        if abs(inside - x) > 0.5:
            points += [(x, top), (inside, top)]
        x = inside
    return _simplified(points)


def _around(geo: Geometry, box: str, rows: Sequence[Row], ra: int, rb: int, x: float,
            entry: float, points: list[Point]) -> tuple[float, float]:
    """An edge to the same row or one above (a cycle between collapsed groups): down out of
    the source's row, along the nearer side of the box, and into the target from above."""
    left, right = _lateral(geo, box, rows[ra].column)
    below, top = _band_below(geo, box, ra), _band_above(geo, box, rb)
    side = left if abs(x - left) + abs(entry - left) <= abs(x - right) + abs(entry - right) \
        else right
    points += [(x, below), (side, below), (side, top)]
    return side, top


def _across(geo: Geometry, box: str, ra: int, rb: int, x: float, entry: float,
            points: list[Point]) -> tuple[float, float]:
    """An edge between two columns of `box`: down out of the source's row, along the band
    below it to the gap beside its column on the target's side, and up (or down) that gap
    to the band above the target's row; a column between is passed below all of them."""
    rows, strips = geo.rows[box], geo.columns[box]
    ca, cb = rows[ra].column, rows[rb].column
    forward = cb > ca
    near = _gap(strips, ca + 1 if forward else ca)
    far = _gap(strips, cb if forward else cb + 1)
    below, top = _band_below(geo, box, ra), _band_above(geo, box, rb)
    points += [(x, below), (near, below)]
    if abs(far - near) > 0.5:
        bottom = (geo.rects[box][3] - BOX_PAD / 2 if box else
                  max(row.bottom for row in rows) + ROW_GAP / 2)
        points += [(near, bottom), (far, bottom)]
    points.append((far, top))
    return far, top


def _centre(rect: Rect) -> Point:
    return (rect[0] + rect[2]) / 2, (rect[1] + rect[3]) / 2


def _simplified(points: list[Point]) -> list[Point]:
    """Repeated and collinear (axis-aligned) points dropped."""
    out: list[Point] = []
    for point in points:
        point = (round(point[0], 1), round(point[1], 1))
        if out and out[-1] == point:
            continue
        if len(out) >= 2 and (out[-2][0] == out[-1][0] == point[0]
                              or out[-2][1] == out[-1][1] == point[1]):
            out[-1] = point
            continue
        out.append(point)
    return out


def segments(src: Point, dst: Point, points: Sequence[Point]) -> tuple[list[float],
                                                                      list[float]]:
    """cytoscape's `segments` curve for absolute bend points: (distances, weights), each
    point as a weight along source -> target centre and a distance off that line (with
    `edge-distances: node-position`); positive distances lie to the line's right in screen
    terms (cytoscape's normal is (-dy, dx) with y down)."""
    dx, dy = dst[0] - src[0], dst[1] - src[1]
    length2 = dx * dx + dy * dy
    if length2 == 0:
        dx, dy, length2 = 0.0, 1.0, 1.0
    length = length2 ** 0.5
    distances, weights = [], []
    for px, py in points:
        rx, ry = px - src[0], py - src[1]
        weights.append(round((rx * dx + ry * dy) / length2, 4))
        distances.append(round((rx * -dy + ry * dx) / length, 1))
    return distances, weights


# -- checking routes ---------------------------------------------------------------------


def _hits(a: Point, b: Point, rect: Rect, inset: float = 1.0) -> bool:
    """Whether segment a-b passes through the inside of rect (shrunk by `inset`), by
    Liang-Barsky clipping."""
    left, top, right, bottom = rect[0] + inset, rect[1] + inset, rect[2] - inset, \
        rect[3] - inset
    if left >= right or top >= bottom:
        return False
    t0, t1 = 0.0, 1.0
    dx, dy = b[0] - a[0], b[1] - a[1]
    for p, q in ((-dx, a[0] - left), (dx, right - a[0]), (-dy, a[1] - top),
                 (dy, bottom - a[1])):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return False
    return True


def crossings(geo: Geometry, edges: Iterable[tuple[str, str]],
              routes: Mapping[tuple[str, str], Sequence[Point]] | None = None,
              boxes_only: bool = True) -> int:
    """How many (edge, box) pairs have the edge's drawn path (centre, bend points, centre)
    pass through a box that holds neither end (with boxes_only=False, leaves count too).
    An edge that ends at a box is drawn to its border: what the box holds is not crossed."""
    boxes = {item for item in geo.rects if item in geo.rows}
    count = 0
    for src, dst in edges:
        path = [_centre(geo.rects[src]), *((routes or {}).get((src, dst), ())),
                _centre(geo.rects[dst])]
        related = set(geo.chains[src]) | set(geo.chains[dst]) | {src, dst}
        for item, rect in geo.rects.items():
            if item in related or (boxes_only and item not in boxes) or not {
                    src, dst}.isdisjoint(geo.chains[item]):
                continue
            if any(_hits(p, q, rect) for p, q in zip(path, path[1:])):
                count += 1
    return count
