"""The graph page's picture as cytoscape data (pure lists and dicts, no dash): expanded
scopes and series as compound boxes, collapsed ones as sized leaves placed by the server,
folded edges (bundled into a box when one node reaches many of its members) routed around
boxes; colour modes with their legends; the partition view (a box
per device, Send/Recv cut edges labelled); the stylesheet and the preset layout the page
hands to dash-cytoscape."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from engine.record.schema import (
    CutEdgeRecord,
    GraphRecord,
    OpStatRecord,
    PlacementRecord,
    TransferRecord,
)
from viz.colors import (
    CATEGORY_COLORS,
    OTHER_CATEGORY_COLOR,
    SEQUENTIAL_COLORS,
    UNPLACED_COLOR,
    device_color,
    device_label,
    legend_entries,
    parse_device,
    text_color,
)
from viz.edge_routes import Geometry, Point, geometry, route, segments
from viz.edges import input_source
from viz.graph_labels import (
    BOX_FONT,
    EDGE_FONT,
    FONT_FAMILY,
    LEAF_FONT,
    LINE_PX,
    clipped_label,
    drawn,
    place_edge_labels,
    text_width,
    title_width,
)
from viz.hierarchy import OP, ROOT, SERIES, HierarchyView, ViewEdge, ViewNode, fold_edges
from viz.layout import BOX_LABEL, BOX_PAD, nested_layout

COLOR_MODES = {
    "device": "Assigned device",
    "requested": "Requested device",
    "op": "Op type",
    "time": "Compute time (step)",
    "bytes": "Output bytes (step)",
}
DEFAULT_COLOR_MODE = "device"
NO_STEP_COLOR = "#eeeeee"
CUT_COLOR = "#d55e00"
CUT_LEGEND = "Send/Recv cut"
# A node joined to this many members of an open box it is not in is joined to the box by
# one edge (TensorBoard's bridge edges): opening a scope that variables, gradients and
# summaries reach would otherwise add dozens of long edges routed round other boxes.
BUNDLE_MIN = 4
CUT_TENSOR_MAX = 30            # a cut edge's label names its tensor in this many characters
DEVICE_BOX = "device:"         # id prefix of a partition view's device box
TASK_BOX = "task:"


@dataclass(frozen=True)
class LegendItem:
    label: str
    color: str
    outline: str = ""          # a virtual GPU's legend entry is outlined
    kind: str = "node"         # "edge": drawn as a dashed line


@dataclass(frozen=True)
class StepFacts:
    """What one traced step measured, per node: total compute time and output bytes; the
    transfers and cut edges label the partition view's cut edges."""
    step: int | None
    time_us: Mapping[str, float]
    out_bytes: Mapping[str, int]
    transfers: Sequence[TransferRecord] = ()


def step_facts(step: int | None, stats: Iterable[OpStatRecord],
               transfers: Iterable[TransferRecord] = ()) -> StepFacts:
    """Sums per node (a loop body's node runs once per iteration)."""
    time_us: dict[str, float] = {}
    out_bytes: dict[str, int] = {}
    for record in stats:
        time_us[record.node] = time_us.get(record.node, 0.0) + record.end_us - record.start_us
        out_bytes[record.node] = out_bytes.get(record.node, 0) + record.output_bytes
    return StepFacts(step, time_us, out_bytes, tuple(transfers))


NO_STEP = StepFacts(None, {}, {})


# -- colour modes -----------------------------------------------------------------------


def _most_common(counts: Counter) -> str:
    return min(counts, key=lambda value: (-counts[value], value)) if counts else ""


def _dominant(values: Iterable[str]) -> str:
    return _most_common(Counter(values))


def _dominant_of(values: Mapping[str, str], names: Sequence[str]) -> str:
    """_dominant of the names' values ("" for a name without one), counted in C: a leaf
    of the first view stands for thousands of ops."""
    counts = Counter(map(values.get, names))
    if None in counts:
        counts[""] += counts.pop(None)
    return _most_common(counts)


def format_us(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.3g} s"
    if value >= 1e3:
        return f"{value / 1e3:.3g} ms"
    return f"{value:.3g} us"


def format_bytes(value: float) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"


def _bins(values: Mapping[str, float], fmt) -> tuple[dict[str, str], list[LegendItem]]:
    """Log-spaced bins over the positive values, one sequential colour each."""
    positive = [value for value in values.values() if value > 0]
    if not positive:
        return {}, []
    low, high = min(positive), max(positive)
    count = len(SEQUENTIAL_COLORS) if high > low else 1
    span = math.log10(high) - math.log10(low) if high > low else 1.0
    edges = [low * 10 ** (span * i / count) for i in range(count + 1)]

    def bin_of(value: float) -> int:
        if high == low:
            return 0
        return min(count - 1, int((math.log10(value) - math.log10(low)) / span * count))

    colors = {key: SEQUENTIAL_COLORS[bin_of(value)] for key, value in values.items() if value > 0}
    used = sorted({bin_of(value) for value in positive})
    legend = [LegendItem(f"{fmt(edges[i])} – {fmt(edges[i + 1])}", SEQUENTIAL_COLORS[i])
              for i in used]
    return colors, legend


def leaf_colors(mode: str, leaves: Sequence[ViewNode], graph: GraphRecord,
                assigned: Mapping[str, str], facts: StepFacts = NO_STEP,
                devices: Sequence = (), dominant: Mapping[str, str] | None = None
                ) -> tuple[dict[str, str], list[LegendItem]]:
    """(leaf id -> fill colour, legend) for a colour mode; a leaf standing for many ops takes
    their most common device or op type, or the sum of their time or bytes. `dominant`:
    each leaf's most common assigned device, when the caller has it already."""
    if mode == "device" and dominant is not None:
        chosen = dict(dominant)
    elif mode in ("device", "requested"):
        requested = {node.name: node.device for node in graph.nodes}
        source = assigned if mode == "device" else requested
        chosen = {leaf.id: _dominant(source.get(name, "") for name in leaf.members)
                  for leaf in leaves}
    if mode in ("device", "requested"):
        entries = legend_entries(chosen.values(), devices)
        label = {entry.device: entry.label for entry in entries}
        if mode == "requested":
            label = {name: name or "(none requested)" for name in chosen.values()}
        legend = [LegendItem(label[entry.device], entry.color,
                             "#333333" if entry.virtual else "") for entry in entries]
        return {key: device_color(value) for key, value in chosen.items()}, legend
    if mode == "op":
        ops = {node.name: node.op for node in graph.nodes}
        chosen = {leaf.id: _dominant(ops.get(name, "") for name in leaf.members)
                  for leaf in leaves}
        ranked = [op for op, _ in sorted(Counter(chosen.values()).items(),
                                         key=lambda item: (-item[1], item[0]))]
        palette = dict(zip(ranked, CATEGORY_COLORS))
        colors = {key: palette.get(op, OTHER_CATEGORY_COLOR) for key, op in chosen.items()}
        legend = [LegendItem(op, color) for op, color in palette.items()]
        if len(ranked) > len(CATEGORY_COLORS):
            legend.append(LegendItem(f"{len(ranked) - len(CATEGORY_COLORS)} other op types",
                                     OTHER_CATEGORY_COLOR))
        return colors, legend
    if mode in ("time", "bytes"):
        per_node = facts.time_us if mode == "time" else facts.out_bytes
        totals = {leaf.id: float(sum(per_node.get(name, 0) for name in leaf.members))
                  for leaf in leaves}
        colors, legend = _bins(totals, format_us if mode == "time" else format_bytes)
        missing = "no traced step" if facts.step is None else f"did not run in step {facts.step}"
        legend.append(LegendItem(missing, NO_STEP_COLOR))
        return {leaf.id: colors.get(leaf.id, NO_STEP_COLOR) for leaf in leaves}, legend
    raise ValueError(f"unknown colour mode {mode!r}; one of {', '.join(COLOR_MODES)}")


# -- partition view ---------------------------------------------------------------------



def repainted_leaves(elements: Sequence[dict], members: Mapping[str, Sequence[str]],
                     paint) -> list[dict]:
    """Copies of drawn elements with each leaf that has members repainted: `paint(members)`
    gives the data to set and the classes to add (the originals are the Graph page's cached
    elements and stay as they are)."""
    out = []
    for element in elements:
        ident = element.get("data", {}).get("id")
        if "leaf" not in element.get("classes", "") or ident not in members:
            out.append(element)
            continue
        data, classes = paint(members[ident])
        out.append({**element, "data": {**element["data"], **data},
                    "classes": f"{element['classes']}{classes}"})
    return out

def task_of(device: str) -> str:
    parsed = parse_device(device)
    return f"/job:{parsed.job or 'localhost'}/task:{parsed.task}"


def partition_view(view: HierarchyView, assigned: Mapping[str, str]
                   ) -> tuple[list[ViewNode], tuple[ViewEdge, ...], dict[str, str]]:
    """The same leaves split by device: (nodes, edges, box id -> device) where each device
    is a box (inside a box per task when the devices name several tasks) holding the scope
    boxes and leaves of the ops it runs. Ids are "DEVICE|ID"."""
    by_id = {node.id: node for node in view.nodes}
    rep = {name: f"{assigned.get(name, '')}|{leaf}" for name, leaf in view.rep.items()}
    members: dict[str, list[str]] = {}
    for name, key in rep.items():
        members.setdefault(key, []).append(name)
    devices = sorted({key.partition("|")[0] for key in members})
    tasks = sorted({task_of(device) for device in devices if device})
    nodes: list[ViewNode] = []
    box_device: dict[str, str] = {}
    if len(tasks) > 1:
        for task in tasks:
            nodes.append(ViewNode(TASK_BOX + task, "task", task, ROOT, True, ()))
    for device in devices:
        parent = TASK_BOX + task_of(device) if len(tasks) > 1 and device else ROOT
        box = DEVICE_BOX + device
        nodes.append(ViewNode(box, "device", device_label(device), parent, True, ()))
        box_device[box] = device
    boxes_needed: set[str] = set()
    for key in members:
        device, _, leaf = key.partition("|")
        parent = by_id[leaf].parent
        while parent != ROOT:
            boxes_needed.add(f"{device}|{parent}")
            parent = by_id[parent].parent
    for node in view.nodes:            # boxes before what they hold, as in the view
        for device in devices:
            key = f"{device}|{node.id}"
            if key not in boxes_needed and key not in members:
                continue
            parent = f"{device}|{node.parent}" if node.parent != ROOT else DEVICE_BOX + device
            nodes.append(ViewNode(key, node.kind, node.label, parent, node.expanded,
                                  tuple(members.get(key, ()))))
            box_device[key] = device
    return nodes, fold_edges(view.underlying, rep), box_device


def _cut_index(cuts: Iterable[CutEdgeRecord]) -> dict[tuple[str, str], list[CutEdgeRecord]]:
    index: dict[tuple[str, str], list[CutEdgeRecord]] = {}
    for cut in cuts:
        producer = input_source(cut.tensor)[0]
        for consumer in cut.consumers:
            index.setdefault((producer, consumer), []).append(cut)
    return index


def cut_label(edge: ViewEdge, cuts: Mapping[tuple[str, str], list[CutEdgeRecord]],
              facts: StepFacts) -> str:
    """"tensor · bytes · transfer time" of the step for the Send/Recv pairs under one drawn
    edge (the first tensor named, a count of the others)."""
    found: dict[str, CutEdgeRecord] = {}
    for producer, consumer, _ in edge.edges:
        for cut in cuts.get((producer, consumer), ()):
            found.setdefault(cut.key, cut)
    if not found:
        return ""
    moved = {record.key: record.bytes for record in facts.transfers}
    tensors = sorted({cut.tensor for cut in found.values()})
    total = sum(moved.get(key, cut.bytes) for key, cut in found.items())
    time_us = sum(facts.time_us.get(cut.recv_node, 0.0) for cut in found.values())
    parts = [clipped_label(tensors[0], CUT_TENSOR_MAX)
             + (f" +{len(tensors) - 1}" if len(tensors) > 1 else ""),
             format_bytes(total)]
    if time_us:
        parts.append(format_us(time_us))
    return " · ".join(parts)


# -- elements ---------------------------------------------------------------------------


def _leaf_lines(node: ViewNode, device: str) -> list[str]:
    if node.kind == OP:
        return [clipped_label(node.label)]
    count = len(node.members)
    first = clipped_label(f"{node.label} ({node.size})" if node.kind == SERIES else node.label)
    where = f" · {device_label(device)}" if device else ""
    return [first, f"{count} op{'s' if count != 1 else ''}{where}"]


def _unclipped_first(node: ViewNode) -> str:
    return f"{node.label} ({node.size})" if node.kind == SERIES else node.label


def _leaf(node: ViewNode, parent: str, color: str, device: str, selected: bool) -> dict:
    lines = _leaf_lines(node, device)
    # room round the text: an ellipse is narrower than its box above and below the middle
    width = max(text_width(line, LEAF_FONT) for line in lines) + 18
    height = LINE_PX * len(lines) + (12 if node.kind == OP else 18)
    data = {"id": node.id, "label": "\n".join(lines), "kind": node.kind, "color": color,
            "text": text_color(color), "width": round(width + 0.49), "height": height,
            "members": len(node.members)}
    if lines[0] != _unclipped_first(node):
        data["full"] = _unclipped_first(node)      # the hover shows what the label cut
    if parent != ROOT:
        data["parent"] = parent
    classes = f"leaf {node.kind}" + (" selected" if selected else "")
    return {"data": data, "classes": classes}


def bundled(nodes: Sequence[ViewNode], edges: Sequence[ViewEdge]
            ) -> list[tuple[ViewEdge, tuple[ViewEdge, ...]]]:
    """(drawn edge, the view's edges it stands for): the edges between one node and
    BUNDLE_MIN or more members of an open box that does not hold that node become one edge
    to the box itself (the outermost such box; targets first, then sources, so members of
    two boxes may join box to box). The others stand for themselves, in the view's order."""
    parents = {node.id: node.parent for node in nodes}
    chains: dict[str, tuple[str, ...]] = {ROOT: ()}

    def chain(item: str) -> tuple[str, ...]:
        if item not in chains:
            chains[item] = chain(parents[item]) + (item,)
        return chains[item]

    def lifted(end: str, other: str) -> str:
        """The outermost box holding `end` and not `other` (`end` when there is none)."""
        outside = chain(other)
        for box in chain(end)[:-1]:
            if box not in outside:
                return box
        return end

    drawn = [(edge, (edge,)) for edge in edges]
    for side in ("dst", "src"):
        groups: dict[tuple[str, str], list[tuple[ViewEdge, tuple[ViewEdge, ...]]]] = {}
        for item in drawn:
            edge = item[0]
            key = (edge.src, lifted(edge.dst, edge.src)) if side == "dst" else (
                lifted(edge.src, edge.dst), edge.dst)
            groups.setdefault(key, []).append(item)
        drawn = []
        for (src, dst), members in groups.items():
            if len(members) < BUNDLE_MIN or (src, dst) == (members[0][0].src,
                                                           members[0][0].dst):
                drawn += members
                continue
            stood = tuple(edge for _, under in members for edge in under)
            joined = tuple(triple for edge in stood for triple in edge.edges)
            drawn.append((ViewEdge(src, dst, joined), stood))
    return drawn


def _place(elements: list[dict], nodes: Sequence[ViewNode], edges: Sequence[ViewEdge]
           ) -> tuple[dict[tuple[str, str], list[tuple[float, float]]], dict[str, dict]]:
    """Positions every leaf (cytoscape's preset layout): each open box lays out its own
    members, as TensorBoard does, so the server computes (and caches) the layout once per
    expansion and the browser only draws. Returns each edge's bend points around the boxes
    it does not belong to (viz.edge_routes), and where cytoscape puts each node (a box at
    the middle of its members and padding; its label band lies above)."""
    sizes = {e["data"]["id"]: (e["data"]["width"], e["data"]["height"]) for e in elements
             if "width" in e["data"]}
    parents = {node.id: node.parent for node in nodes}
    pairs = [(edge.src, edge.dst) for edge in edges]
    titles = {e["data"]["id"]: e["data"]["label"] for e in elements if "box" in e["classes"]}
    at = nested_layout(parents, sizes, pairs,
                       box_widths={box: title_width(label) for box, label in titles.items()})
    for element in elements:
        found = at.get(element["data"]["id"])
        if found is not None and "width" in element["data"]:
            element["position"] = {"x": found[0], "y": found[1]}
    placed = geometry(parents, at, sizes, titles)
    centres = {item: {"x": x, "y": y} for item, (x, y) in
               node_centres(placed.rects, at).items()}
    return {pair: route(placed, *pair) for pair in pairs}, centres


def drawn_geometry(elements: Sequence[dict]) -> tuple[Geometry, dict[str, Point]]:
    """(the footprints, each leaf's centre) of graph_elements' output as cytoscape draws it:
    what the SVG export and the layout checks read back from the elements alone (a box's
    title band as wide as its title, as _place allotted it)."""
    nodes = [e for e in elements if "source" not in e["data"]]
    parents = {e["data"]["id"]: e["data"].get("parent", "") for e in nodes}
    at = {e["data"]["id"]: (e["position"]["x"], e["position"]["y"]) for e in nodes
          if "position" in e}
    sizes = {e["data"]["id"]: (e["data"]["width"], e["data"]["height"]) for e in nodes
             if "position" in e}
    titles = {e["data"]["id"]: e["data"]["label"] for e in nodes if "position" not in e}
    return geometry(parents, at, sizes, titles), at


def node_centres(rects: Mapping[str, tuple[float, float, float, float]],
                 leaves: Mapping[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    """Where cytoscape puts each node: a leaf where it was placed, a box at the middle of
    its members and padding (its footprint's label band lies above that)."""
    return {item: leaves.get(item, ((rect[0] + rect[2]) / 2,
                                    (rect[1] + BOX_LABEL + rect[3]) / 2))
            for item, rect in rects.items()}


def _routed(element: dict, bends: list[tuple[float, float]],
            at: Mapping[str, dict]) -> None:
    """A segments curve through the bend points (an edge without any stays straight)."""
    if not bends:
        return
    data = element["data"]
    src, dst = at[data["source"]], at[data["target"]]
    distances, weights = segments((src["x"], src["y"]), (dst["x"], dst["y"]), bends)
    data["bends"] = " ".join(f"{d:g}" for d in distances)
    data["weights"] = " ".join(f"{w:g}" for w in weights)
    element["classes"] += " routed"


def _box(node: ViewNode, parent: str, color: str = "") -> dict:
    title = node.label + ("/" if node.kind not in ("device", "task") else "")
    data = {"id": node.id, "label": clipped_label(title), "kind": node.kind}
    if data["label"] != title:
        data["full"] = title
    if parent != ROOT:
        data["parent"] = parent
    if color:
        data["color"] = color
    return {"data": data, "classes": f"box {node.kind}"}


def _edge(edge: ViewEdge, cut: bool, label: str) -> dict:
    """The id names both ends: cytoscape keeps an element by id across updates and cannot
    move an edge's ends, so an id must never be reused for another pair."""
    count = len(edge.edges)
    data = {"id": f"{edge.src}->{edge.dst}", "source": edge.src, "target": edge.dst, "count": count,
            "width": round(1.2 + math.log2(count), 2)}
    classes = ["edge"]
    if edge.control:
        classes.append("control")
    if cut:
        classes.append("cut")
    if label:
        data["label"] = label
        classes.append("labelled")
    return {"data": data, "classes": " ".join(classes)}


def graph_elements(view: HierarchyView, graph: GraphRecord,
                   placements: Iterable[PlacementRecord], mode: str = DEFAULT_COLOR_MODE,
                   facts: StepFacts = NO_STEP, partition: bool = False,
                   cuts: Iterable[CutEdgeRecord] = (), devices: Sequence = (),
                   selected: str = "") -> tuple[list[dict], list[LegendItem]]:
    """(cytoscape elements, legend). In the partition view leaves are split by device and
    the edges between device boxes carry the step's tensor, bytes and transfer time."""
    assigned = {record.node: record.assigned for record in placements}
    if partition:
        nodes, edges, box_device = partition_view(view, assigned)
    else:
        nodes, edges, box_device = list(view.nodes), view.edges, {}
    # The partition view keeps every edge: each carries its own Send/Recv label.
    drawn = [(edge, (edge,)) for edge in edges] if partition else bundled(nodes, edges)
    leaves = [node for node in nodes if not node.expanded]
    dominant = {leaf.id: _dominant_of(assigned, leaf.members) for leaf in leaves}
    colors, legend = leaf_colors(mode, leaves, graph, assigned, facts, devices, dominant)
    elements = []
    for node in nodes:
        if node.expanded:
            color = device_color(box_device[node.id]) if node.kind == "device" else ""
            elements.append(_box(node, node.parent, color))
        else:
            elements.append(_leaf(node, node.parent, colors.get(node.id, UNPLACED_COLOR),
                                  dominant[node.id], node.id == selected))
    bends, at = _place(elements, nodes, [edge for edge, _ in drawn])
    device_of = (
        {leaf.id: box_device[leaf.id] for leaf in leaves} if partition else dominant)
    cut_index = _cut_index(cuts) if partition else {}
    crossed = False
    for edge, stood in drawn:
        cuts_under = [one for one in stood if _crosses(one, device_of)]
        cut = bool(cuts_under)
        label = cut_label(edge, cut_index, facts) if cut and partition else ""
        element = _edge(edge, cut, label)
        _routed(element, bends[(edge.src, edge.dst)], at)
        elements.append(element)
        crossed = crossed or any(not one.control for one in cuts_under)
    _place_labels(elements, bends)
    if crossed:
        legend.append(LegendItem(CUT_LEGEND, CUT_COLOR, kind="edge"))
    return elements, legend


def _place_labels(elements: list[dict], bends: Mapping[tuple[str, str], list]) -> None:
    """Moves each edge label (text-margin) off the nodes, node labels and other edge labels
    it would cover at its edge's middle (viz.graph_labels.place_edge_labels)."""
    labelled = [e["data"] for e in elements if "source" in e["data"] and "label" in e["data"]]
    if not labelled:
        return
    found = drawn([e for e in elements if "source" not in e["data"]])
    offsets = place_edge_labels(found, [
        (d["id"], d["source"], d["target"], d["label"], bends[(d["source"], d["target"])])
        for d in labelled])
    for data in labelled:
        data["lx"], data["ly"] = offsets[data["id"]]


def _crosses(edge: ViewEdge, device_of: Mapping[str, str]) -> bool:
    src, dst = device_of.get(edge.src, ""), device_of.get(edge.dst, "")
    return bool(src and dst and src != dst)


def stylesheet() -> list[dict]:
    """Ops are ellipses, collapsed scopes rounded boxes, series stacked (double) boxes; an
    expanded scope is a labelled box around its members; cut edges are red and dashed."""
    return [
        {"selector": "node.leaf", "style": {
            "label": "data(label)", "text-valign": "center",
            "text-halign": "center", "font-size": LEAF_FONT, "font-family": FONT_FAMILY,
            "color": "data(text)",
            "background-color": "data(color)", "width": "data(width)",
            "height": "data(height)", "border-width": 1, "border-color": "#ffffff",
            "shape": "ellipse"}},
        # Only a closed scope's or series' label has two lines: wrapping makes cytoscape
        # split and measure every label line by line, so an op's one line is left unwrapped.
        {"selector": "node.leaf.scope, node.leaf.series", "style": {"text-wrap": "wrap"}},
        {"selector": "node.scope", "style": {"shape": "round-rectangle", "border-width": 1.5,
                                             "border-color": "#4a5563"}},
        {"selector": "node.series", "style": {"shape": "round-rectangle", "border-width": 4,
                                              "border-style": "double",
                                              "border-color": "#4a5563"}},
        {"selector": "node.box", "style": {
            "label": "data(label)", "text-valign": "top", "text-halign": "center",
            "font-size": BOX_FONT, "font-family": FONT_FAMILY, "font-weight": "bold",
            "color": "#333333", "shape":
            "round-rectangle", "background-color": "#f5f7fa", "background-opacity": 0.9,
            "border-width": 1, "border-color": "#9aa5b1", "padding": BOX_PAD,
            "text-margin-y": -2}},
        {"selector": "node.box.series", "style": {"border-style": "dashed",
                                                  "background-color": "#eef3f8"}},
        {"selector": "node.box.device", "style": {"border-width": 3,
                                                  "border-color": "data(color)",
                                                  "background-color": "#ffffff"}},
        {"selector": "node.box.task", "style": {"border-style": "dotted",
                                                "background-color": "#fafafa"}},
        {"selector": "node.selected", "style": {"border-width": 4, "border-color": "#111111",
                                                "border-style": "solid"}},
        {"selector": "edge", "style": {
            # straight, not bezier: an edge without bends joins one pair (ids name both
            # ends) and upward edges are routed round the side, so no two share a line, and
            # a bezier makes cytoscape bundle every edge with its parallels on each redraw
            "curve-style": "straight", "width": "data(width)", "line-color": "#a7b0bc",
            "events": "no",           # a click on a node an edge crosses is the node's
            "target-arrow-shape": "triangle", "target-arrow-color": "#a7b0bc",
            "arrow-scale": 0.8, "opacity": 0.9}},
        {"selector": "edge.routed", "style": {
            "curve-style": "segments", "edge-distances": "node-position",
            "segment-distances": "data(bends)", "segment-weights": "data(weights)"}},
        {"selector": "edge.control", "style": {"line-style": "dotted"}},
        {"selector": "edge.cut", "style": {"line-color": CUT_COLOR,
                                           "target-arrow-color": CUT_COLOR,
                                           "line-style": "dashed"}},
        {"selector": "edge.labelled", "style": {
            # level, as viz.graph_labels measures it (a rotated one would cross the boxes
            # beside a bend)
            "label": "data(label)", "font-size": EDGE_FONT, "font-family": FONT_FAMILY,
            "color": "#7a2e00", "text-background-color": "#ffffff",
            "text-background-opacity": 0.9, "text-background-padding": 2,
            "text-margin-x": "data(lx)", "text-margin-y": "data(ly)"}},
    ]


def cytoscape_layout() -> dict:
    """The positions the server computed (viz.layout.nested_layout), fitted to the canvas,
    no animation (a redraw is one frame)."""
    return {"name": "preset", "fit": True, "padding": 28, "animate": False}
