"""How wide the graph's labels are drawn (per-glyph widths of the Helvetica/Arial metrics the
stylesheet asks for) and where they lie: a leaf's lines on it, a box's title above its body,
an edge's label at its middle; and the overlaps of labels with each other and with the
nodes they do not belong to, which the layout must leave at none."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# cytoscape draws labels on a canvas with this font list; Chromium on Linux resolves it to
# Liberation Sans, Windows to Arial, macOS to Helvetica: one set of metrics, measured below.
FONT_FAMILY = "Helvetica, Arial, Liberation Sans, sans-serif"
# Advance widths (1/100 em, rounded up) of ' ' to '~' and then '·', '…', '–' in Liberation
# Sans as Chromium measures them (canvas measureText at 100 px).
_GLYPHS = " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`" \
    "abcdefghijklmnopqrstuvwxyz{|}~·…–"
_REGULAR = (
    28, 28, 36, 56, 56, 89, 67, 20, 34, 34, 39, 59, 28, 34, 28, 28, 56, 56, 56, 56, 56, 56,
    56, 56, 56, 56, 28, 28, 59, 59, 59, 56, 102, 67, 67, 73, 73, 67, 62, 78, 73, 28, 50, 67,
    56, 84, 73, 78, 67, 78, 73, 67, 62, 73, 67, 95, 67, 67, 62, 28, 28, 28, 47, 56, 34, 56,
    56, 50, 56, 56, 28, 56, 56, 23, 23, 50, 23, 84, 56, 56, 56, 56, 34, 50, 28, 56, 50, 73,
    50, 50, 50, 34, 26, 34, 59, 28, 100, 56)
_BOLD = (
    28, 34, 48, 56, 56, 89, 73, 24, 34, 34, 39, 59, 28, 34, 28, 28, 56, 56, 56, 56, 56, 56,
    56, 56, 56, 56, 34, 34, 59, 59, 59, 62, 98, 73, 73, 73, 73, 67, 62, 78, 73, 28, 56, 73,
    62, 84, 73, 78, 67, 78, 73, 67, 62, 73, 67, 95, 67, 67, 62, 34, 28, 34, 59, 56, 34, 56,
    62, 56, 62, 56, 34, 62, 62, 28, 28, 56, 28, 89, 62, 62, 62, 62, 39, 56, 34, 62, 56, 78,
    56, 56, 50, 39, 28, 39, 59, 28, 100, 56)
_WIDTHS = {False: dict(zip(_GLYPHS, _REGULAR)), True: dict(zip(_GLYPHS, _BOLD))}
_OTHER_GLYPH = 100             # any other character: as wide as the widest here
# Helvetica Neue (macOS) runs up to 4% wider than these metrics; the rest is slack.
SAFETY = 1.06
# cytoscape's box around a label is about 4 px wider and taller than its text (Chromium,
# read back with boundingBox): 5 px with the rounding.
LABEL_BOX_PAD = 5
LEAF_FONT = 11
BOX_FONT = 12
EDGE_FONT = 10
LINE_PX = 14                   # room per line of the 11 px font that a leaf's height allows
BOX_TITLE_PX = 17              # the 12 px bold title's box (16 px drawn)
# A title sits on its body's top border (the stylesheet's text-margin-y lifts it by the
# border's width), so its box starts where the body's padding does.
TITLE_MARGIN = 0
EDGE_LABEL_PAD = 2             # text-background-padding of an edge's label
LABEL_MAX = 40                 # longer labels are cut to this many characters, with "…"

Rect = tuple[float, float, float, float]         # left, top, right, bottom


def text_width(text: str, font_px: float, bold: bool = False) -> float:
    """The width of one line's label box in px, as cytoscape draws it (an upper bound over
    the fonts FONT_FAMILY finds)."""
    widths = _WIDTHS[bold]
    units = sum(widths.get(char, _OTHER_GLYPH) for char in text)
    return units * font_px / 100 * SAFETY + LABEL_BOX_PAD


def lines_height(lines: int, font_px: float = LEAF_FONT) -> float:
    """The height of a label box of `lines` lines (cytoscape's line height is its font's
    size; 5 px as for the width)."""
    return lines * font_px + LABEL_BOX_PAD


def clipped_label(text: str, limit: int = LABEL_MAX) -> str:
    """`text` cut to `limit` characters, the middle replaced by "…" (the inspector and the
    node's `name` keep the whole; ends say most: the scope and the index)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


@dataclass(frozen=True)
class Label:
    owner: str                 # the element whose label it is (an edge: "SRC->DST")
    kind: str                  # "leaf" | "title" | "edge"
    rect: Rect


@dataclass(frozen=True)
class Drawn:
    """Where cytoscape draws each node of graph_elements' output: a leaf around its
    position; a box's body around its children (their labels included, as cytoscape's
    compound sizing does) and its padding; its footprint adds the title band above."""
    parents: Mapping[str, str]
    leaves: Mapping[str, Rect]
    bodies: Mapping[str, Rect]
    footprints: Mapping[str, Rect]               # leaves and boxes
    labels: tuple[Label, ...]


def _chain(item: str, parents: Mapping[str, str]) -> tuple[str, ...]:
    out = []
    while item:
        item = parents.get(item, "")
        if item:
            out.append(item)
    return tuple(out)


def title_width(label: str) -> float:
    return text_width(label, BOX_FONT, bold=True)


def drawn(elements: Sequence[dict]) -> Drawn:
    """The rectangles of graph_elements' output (elements with positions and sizes)."""
    from viz.layout import BOX_LABEL, BOX_PAD
    nodes = [e for e in elements if "source" not in e["data"]]
    parents = {e["data"]["id"]: e["data"].get("parent", "") for e in nodes}
    leaves: dict[str, Rect] = {}
    labels: list[Label] = []
    for e in nodes:
        if "position" not in e:
            continue
        data, at = e["data"], e["position"]
        w, h = data["width"], data["height"]
        leaves[data["id"]] = (at["x"] - w / 2, at["y"] - h / 2, at["x"] + w / 2, at["y"] + h / 2)
        lines = data.get("label", "").split("\n")
        lw = max(text_width(line, LEAF_FONT) for line in lines)
        lh = lines_height(len(lines))
        labels.append(Label(data["id"], "leaf", (at["x"] - lw / 2, at["y"] - lh / 2,
                                                  at["x"] + lw / 2, at["y"] + lh / 2)))
    footprints: dict[str, Rect] = dict(leaves)
    bodies: dict[str, Rect] = {}
    kids: dict[str, list[str]] = {}
    for item, parent in parents.items():
        kids.setdefault(parent, []).append(item)
    titles = {e["data"]["id"]: e["data"].get("label", "") for e in nodes if "position" not in e}
    for box in sorted(titles, key=lambda item: -len(_chain(item, parents))):
        inner = [footprints[kid] for kid in kids.get(box, ()) if kid in footprints]
        if not inner:
            continue
        body = (min(r[0] for r in inner) - BOX_PAD, min(r[1] for r in inner) - BOX_PAD,
                max(r[2] for r in inner) + BOX_PAD, max(r[3] for r in inner) + BOX_PAD)
        bodies[box] = body
        middle, width = (body[0] + body[2]) / 2, title_width(titles[box])
        bottom = body[1] - TITLE_MARGIN
        title = (middle - width / 2, bottom - BOX_TITLE_PX, middle + width / 2, bottom)
        labels.append(Label(box, "title", title))
        footprints[box] = (min(body[0], title[0]), body[1] - BOX_LABEL,
                           max(body[2], title[2]), body[3])
    return Drawn(parents, leaves, bodies, footprints, tuple(labels))


Offset = tuple[float, float]
EdgeText = tuple[str, str, str, str, Sequence[tuple[float, float]]]   # id, src, dst, text, bends
STEP_PX = 8.0                  # how far apart the places tried along an edge lie
BESIDE_PX = 3.0                # a label beside its edge keeps this far from the line
# A placed label keeps this far from every other label and node: Chromium's label boxes
# come out up to a pixel or two larger than the metrics here at some zooms.
LABEL_MARGIN = 2.5


def _middle(found: Drawn, src: str, dst: str, bends: Sequence[tuple[float, float]]
            ) -> tuple[float, float]:
    """Where cytoscape puts an edge's label: its middle bend point (the middle two's midpoint
    for an even count), or for a straight edge the middle of the part between its ends'
    borders."""
    if bends:
        count = len(bends)
        a, b = bends[(count - 1) // 2], bends[count // 2]
        return (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
    s_rect, t_rect = found.footprints[src], found.footprints[dst]
    start = _border(s_rect, _centre(s_rect), _centre(t_rect))
    end = _border(t_rect, _centre(t_rect), _centre(s_rect))
    return (start[0] + end[0]) / 2, (start[1] + end[1]) / 2


def _edge_size(text: str) -> tuple[float, float]:
    return (text_width(text, EDGE_FONT) + 2 * EDGE_LABEL_PAD,
            lines_height(1, EDGE_FONT) + 2 * EDGE_LABEL_PAD)


def _around(point: tuple[float, float], size: tuple[float, float], offset: Offset = (0, 0)
            ) -> Rect:
    x, y = point[0] + offset[0], point[1] + offset[1]
    return x - size[0] / 2, y - size[1] / 2, x + size[0] / 2, y + size[1] / 2


def edge_labels(found: Drawn, edges: Iterable[EdgeText],
                offsets: Mapping[str, Offset] | None = None) -> tuple[Label, ...]:
    """The labels of `edges` where cytoscape draws them: at the middle, moved by the edge's
    offset (its text-margin, place_edge_labels)."""
    return tuple(Label(ident, "edge", _around(_middle(found, src, dst, bends), _edge_size(text),
                                              (offsets or {}).get(ident, (0.0, 0.0))))
                 for ident, src, dst, text, bends in edges)


class _Index:
    """Rectangles in a grid of cells, for the question: does this one meet any?"""

    def __init__(self, cell: float = 120.0) -> None:
        self.cell = cell
        self.cells: dict[tuple[int, int], list[Rect]] = {}

    def add(self, rect: Rect) -> None:
        for key in _cells(rect, self.cell):
            self.cells.setdefault(key, []).append(rect)

    def meets(self, rect: Rect) -> bool:
        return any(_meets(rect, other) for key in _cells(rect, self.cell)
                   for other in self.cells.get(key, ()))


def _path_points(path: Sequence[tuple[float, float]]) -> list[tuple[float, float, float]]:
    """(x, y, distance along the path) every STEP_PX along the polyline."""
    out, along = [], 0.0
    for (ax, ay), (bx, by) in zip(path, path[1:]):
        length = ((bx - ax) ** 2 + (by - ay) ** 2) ** 0.5
        steps = max(1, int(length // STEP_PX))
        out += [(ax + (bx - ax) * i / steps, ay + (by - ay) * i / steps,
                 along + length * i / steps) for i in range(steps)]
        along += length
    return out + [(*path[-1], along)] if path else out


def place_edge_labels(found: Drawn, edges: Sequence[EdgeText]) -> dict[str, Offset]:
    """Each labelled edge's offset from where cytoscape would put its label to the free
    place nearest its path's middle: on the path, or just beside or above or below it,
    clear of every node label, leaf, box it does not run in and label placed before. An
    edge with no free place keeps its middle (offset (0, 0))."""
    index = _Index()
    for label in found.labels:
        index.add(label.rect)
    for rect in found.leaves.values():
        index.add(rect)
    offsets: dict[str, Offset] = {}
    for ident, src, dst, text, bends in edges:
        size = _edge_size(text)
        allowed = set(_chain(src, found.parents)) | set(_chain(dst, found.parents))
        boxes = [rect for box, rect in found.bodies.items() if box not in allowed]
        path = [_centre(found.footprints[src]), *bends, _centre(found.footprints[dst])]
        points = _path_points(path)
        half = points[-1][2] / 2 if points else 0.0
        middle = _middle(found, src, dst, bends)
        chosen = middle
        for x, y, _ in sorted(points, key=lambda point: abs(point[2] - half)):
            spot = _free_spot(index, boxes, (x, y), size)
            if spot is not None:
                chosen = spot
                break
        offsets[ident] = (round(chosen[0] - middle[0], 1), round(chosen[1] - middle[1], 1))
        index.add(_around(chosen, size))
    return offsets


def _free_spot(index: _Index, boxes: Sequence[Rect], point: tuple[float, float],
               size: tuple[float, float]) -> tuple[float, float] | None:
    """The label's centre on `point`, else beside it (right, left), else above or below,
    where it meets nothing; None when every one meets something."""
    w, h = size
    x, y = point
    grown = LABEL_MARGIN + 0.5                 # _meets lets 0.5 px pass
    room = (w + 2 * grown, h + 2 * grown)
    for spot in ((x, y), (x + w / 2 + BESIDE_PX, y), (x - w / 2 - BESIDE_PX, y),
                 (x, y - h / 2 - BESIDE_PX), (x, y + h / 2 + BESIDE_PX)):
        rect = _around(spot, room)
        if not index.meets(rect) and not any(_meets(rect, box) for box in boxes):
            return spot
    return None


def _centre(rect: Rect) -> tuple[float, float]:
    return (rect[0] + rect[2]) / 2, (rect[1] + rect[3]) / 2


def _border(rect: Rect, inside: tuple[float, float], towards: tuple[float, float]
            ) -> tuple[float, float]:
    """Where the line from `inside` (the rect's centre) to `towards` leaves the rect."""
    dx, dy = towards[0] - inside[0], towards[1] - inside[1]
    half_w, half_h = (rect[2] - rect[0]) / 2, (rect[3] - rect[1]) / 2
    scale = min(half_w / abs(dx) if dx else float("inf"),
                half_h / abs(dy) if dy else float("inf"), 1.0)
    return inside[0] + dx * scale, inside[1] + dy * scale


def _meets(a: Rect, b: Rect, slack: float = 0.5) -> bool:
    """Whether two rectangles share more than `slack` px each way (touching is fine)."""
    return (min(a[2], b[2]) - max(a[0], b[0]) > slack
            and min(a[3], b[3]) - max(a[1], b[1]) > slack)


@dataclass(frozen=True)
class Overlap:
    label: Label
    other: str                 # the other label's owner, or the node it covers
    what: str                  # "label" | "leaf" | "box"


def overlaps(found: Drawn, extra: Sequence[Label] = (),
             ends: Mapping[str, tuple[str, str]] | None = None) -> list[Overlap]:
    """Every label meeting another label, a leaf it is not on, or a box body that does not
    hold it (a title is above its own body; an edge's label may lie in its ends' boxes).
    `ends`: each edge label's (source, target)."""
    labels = list(found.labels) + list(extra)
    ends = ends or {}
    out: list[Overlap] = []
    cell = 200.0
    grid: dict[tuple[int, int], list[int]] = {}
    for index, label in enumerate(labels):
        for key in _cells(label.rect, cell):
            grid.setdefault(key, []).append(index)
    for index, label in enumerate(labels):
        near = {other for key in _cells(label.rect, cell) for other in grid[key]}
        for other in sorted(near):
            if other > index and _meets(label.rect, labels[other].rect):
                out.append(Overlap(label, labels[other].owner, "label"))
        out += _over_nodes(found, label, ends.get(label.owner))
    return out


def _cells(rect: Rect, cell: float) -> list[tuple[int, int]]:
    return [(i, j) for i in range(int(rect[0] // cell), int(rect[2] // cell) + 1)
            for j in range(int(rect[1] // cell), int(rect[3] // cell) + 1)]


def _over_nodes(found: Drawn, label: Label, edge_ends: tuple[str, str] | None
                ) -> list[Overlap]:
    if label.kind == "edge" and edge_ends:
        allowed = set(_chain(edge_ends[0], found.parents)) | set(
            _chain(edge_ends[1], found.parents))
    else:
        allowed = {label.owner, *_chain(label.owner, found.parents)}
    out = []
    for leaf, rect in found.leaves.items():
        if leaf not in allowed and _meets(label.rect, rect):
            out.append(Overlap(label, leaf, "leaf"))
    for box, rect in found.bodies.items():
        if box not in allowed and _meets(label.rect, rect):
            out.append(Overlap(label, box, "box"))
    return out


def _centres(found: Drawn) -> dict[str, tuple[float, float]]:
    """Where cytoscape puts each node: a leaf at its position, a box at its body's middle."""
    return {item: _centre(rect) for item, rect in (*found.leaves.items(),
                                                   *found.bodies.items())}


def bend_points(data: Mapping, centres: Mapping[str, tuple[float, float]]
                ) -> list[tuple[float, float]]:
    """The absolute bend points of a drawn edge from its segments data (the inverse of
    viz.edge_routes.segments); none for a straight edge."""
    if not data.get("bends"):
        return []
    (sx, sy), (tx, ty) = centres[data["source"]], centres[data["target"]]
    dx, dy = tx - sx, ty - sy
    length = (dx * dx + dy * dy) ** 0.5 or 1.0
    if dx == dy == 0:
        dx, dy = 0.0, 1.0
    return [(sx + w * dx - d * dy / length, sy + w * dy + d * dx / length)
            for d, w in zip(map(float, data["bends"].split()),
                            map(float, data["weights"].split()))]


def drawn_edge_labels(elements: Sequence[dict], found: Drawn | None = None
                      ) -> tuple[Label, ...]:
    """The edge labels of graph_elements' output where their text margins put them (the
    box of each: its text and background padding); `found`: drawn(elements), if known."""
    found = found or drawn([e for e in elements if "source" not in e["data"]])
    centres = _centres(found)
    labelled = [e["data"] for e in elements
                if "source" in e["data"] and e["data"].get("label")]
    return edge_labels(found, [(d["id"], d["source"], d["target"], d["label"],
                                bend_points(d, centres)) for d in labelled],
                       {d["id"]: (d.get("lx", 0.0), d.get("ly", 0.0)) for d in labelled})


def element_overlaps(elements: Sequence[dict]) -> list[Overlap]:
    """overlaps() of graph_elements' output: its node labels and its edges' labels where
    their text margins put them."""
    found = drawn([e for e in elements if "source" not in e["data"]])
    ends = {e["data"]["id"]: (e["data"]["source"], e["data"]["target"]) for e in elements
            if "source" in e["data"] and e["data"].get("label")}
    return overlaps(found, drawn_edge_labels(elements, found), ends)
