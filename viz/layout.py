"""Layered DAG layout: topological generations as rows, barycenter sweeps to order each
row so edges cross less; and the nested form TensorBoard uses for scope boxes, where each
open box lays out its own members (edges leaving a box do not pull its insides apart), its
rows wrapped into columns when they are too many for the window (viz.fit_layout).
Pure Python over networkx; the workbench caches the result."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import networkx as nx

from viz.fit_layout import COLUMN_GAP, columns_size, wrap_rows

Position = tuple[float, float]


def _back_edges(graph: nx.DiGraph) -> list[tuple[str, str]]:
    """Edges closing a cycle in an iterative depth-first search. Collapsed scopes can form
    cycles (a/x -> b/y -> a/z), and layering needs a DAG, so these are left out of it."""
    on_stack, done = 1, 2
    state: dict[str, int] = {}
    back: list[tuple[str, str]] = []
    for root in graph:
        if root in state:
            continue
        state[root] = on_stack
        stack = [(root, iter(graph.succ[root]))]
        while stack:
            node, successors = stack[-1]
            for nxt in successors:
                seen = state.get(nxt)
                if seen is None:
                    state[nxt] = on_stack
                    stack.append((nxt, iter(graph.succ[nxt])))
                    break
                if seen == on_stack:
                    back.append((node, nxt))
            else:
                state[node] = done
                stack.pop()
    return back


def assign_layers(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> dict[str, int]:
    """node -> layer: a node sits one row below its deepest producer (longest path), and a
    source with consumers sits just above its first consumer, so constants and variables
    are drawn next to where they are used instead of all in the top row."""
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((src, dst) for src, dst in edges if src != dst)
    if not nx.is_directed_acyclic_graph(graph):
        graph.remove_edges_from(_back_edges(graph))
    layer = {
        node: depth
        for depth, generation in enumerate(nx.topological_generations(graph))
        for node in generation
    }
    for node in graph:
        if graph.succ[node] and not graph.pred[node]:
            layer[node] = min(layer[consumer] for consumer in graph.succ[node]) - 1
    return layer


def _neighbours(
    layer: dict[str, int], edges: Iterable[tuple[str, str]]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    above: dict[str, list[str]] = {node: [] for node in layer}
    below: dict[str, list[str]] = {node: [] for node in layer}
    for src, dst in edges:
        if src in layer and dst in layer and layer[src] < layer[dst]:
            above[dst].append(src)
            below[src].append(dst)
    return above, below


def _place_row(row: list[str], x: dict[str, float]) -> None:
    offset = (len(row) - 1) / 2
    for index, node in enumerate(row):
        x[node] = index - offset


def _sweep(rows: Sequence[list[str]], x: dict[str, float], towards: dict[str, list[str]]) -> None:
    """Reorder each row by the mean x of its neighbours in `towards`; ties keep the order."""
    def barycenter(node: str) -> tuple[float, float]:
        linked = towards[node]
        mean = sum(x[other] for other in linked) / len(linked) if linked else x[node]
        return mean, x[node]

    for row in rows:
        row.sort(key=barycenter)
        _place_row(row, x)


def layered_layout(
    nodes: Iterable[str], edges: Iterable[tuple[str, str]], sweeps: int = 4
) -> dict[str, Position]:
    """node -> (x, y). Row r (y = -r) holds layer r; x is the centred slot in the row."""
    edges = list(edges)
    layer = assign_layers(nodes, edges)
    rows: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for node, depth in layer.items():
        rows[depth].append(node)
    x = _swept(rows, layer, edges, sweeps)
    return {node: (x[node], -float(layer[node])) for node in layer}


def _swept(rows: Sequence[list[str]], layer: Mapping[str, int], edges: list[tuple[str, str]],
           sweeps: int) -> dict[str, float]:
    """Centred slots per row, then `sweeps` down-and-up barycenter passes (rows reordered
    in place to cut crossings); the slots they end with."""
    x: dict[str, float] = {}
    for row in rows:
        _place_row(row, x)
    above, below = _neighbours(layer, edges)
    for _ in range(sweeps):
        _sweep(rows[1:], x, above)
        _sweep(rows[-2::-1], x, below)
    return x


# Spacing as tight as the labels allow: every pixel saved is zoom at which the whole graph
# fits the window. Rows keep 34 px: at 28 Chromium draws the partition view's cut labels
# over the device box beside them (tests/browser/test_graph_labels_in_browser.py).
BOX_PAD = 12                   # cytoscape's compound padding (the stylesheet says the same)
BOX_LABEL = 18                 # room above a box for its label
NODE_GAP = 14
ROW_GAP = 34
Size = tuple[float, float]


def _rows(items: list[str], edges: list[tuple[str, str]], sweeps: int) -> list[list[str]]:
    layer = assign_layers(items, edges)
    rows: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for item in items:
        rows[layer[item]].append(item)
    rows = [row for row in rows if row]
    _swept(rows, layer, edges, sweeps)
    return rows


def _place_box(items: list[str], edges: list[tuple[str, str]], size: dict[str, Size],
               sweeps: int) -> tuple[dict[str, Position], Size]:
    """Centres of `items` relative to the box's top-left corner, and the box's size. Rows
    too many for the window's shape wrap into side-by-side columns (viz.fit_layout), each
    row centred in its column."""
    for item in items:
        size.setdefault(item, (40.0, 20.0))      # an empty box (none is drawn so far)
    rows = _rows(items, edges, sweeps)
    widths = [sum(size[item][0] for item in row) + NODE_GAP * (len(row) - 1) for row in rows]
    heights = [max(size[item][1] for item in row) for row in rows]
    starts = wrap_rows(widths, heights, ROW_GAP) if rows else [0]
    bounds = [*starts, len(rows)]
    at: dict[str, Position] = {}
    column_left = 0.0
    for first, stop in zip(bounds, bounds[1:]):
        inner = max(widths[first:stop])
        top = 0.0
        for row, width, height in zip(rows[first:stop], widths[first:stop],
                                      heights[first:stop]):
            left = column_left + (inner - width) / 2
            for item in row:
                w = size[item][0]
                at[item] = (left + w / 2, top + height / 2)
                left += w + NODE_GAP
            top += height + ROW_GAP
        column_left += inner + COLUMN_GAP
    if not rows:
        return at, (0.0, 0.0)
    return at, columns_size(widths, heights, starts, ROW_GAP)


def nested_layout(parents: Mapping[str, str], leaf_sizes: Mapping[str, Size],
                  edges: Iterable[tuple[str, str]], sweeps: int = 4,
                  box_widths: Mapping[str, float] | None = None) -> dict[str, Position]:
    """Leaf centres (absolute) for boxes nested as `parents` says (id -> enclosing box id,
    "" at the top; boxes are the ids that are someone's parent, leaves have a size). Each box
    lays out its children alone; an edge between two leaves counts in the innermost box
    holding both, between the children of that box that hold its ends. `box_widths`: the
    least width a box takes (its title's), its children centred in it."""
    children: dict[str, list[str]] = {"": []}
    for item, parent in parents.items():
        children.setdefault(parent, []).append(item)
        children.setdefault(item, [])
    chain: dict[str, tuple[str, ...]] = {"": ()}

    def chain_of(item: str) -> tuple[str, ...]:
        path = []
        while item not in chain:
            path.append(item)
            item = parents[item]
        found = chain[item]
        for node in reversed(path):
            found = chain[node] = found + (node,)
        return found

    box_edges: dict[str, set[tuple[str, str]]] = {}
    for src, dst in edges:
        a, b = chain_of(src), chain_of(dst)
        depth = 0
        while depth < min(len(a), len(b)) and a[depth] == b[depth]:
            depth += 1
        if depth < len(a) and depth < len(b):
            box = a[depth - 1] if depth else ""
            box_edges.setdefault(box, set()).add((a[depth], b[depth]))
    size: dict[str, Size] = dict(leaf_sizes)
    relative: dict[str, Position] = {}
    inner: dict[str, float] = {}
    order = sorted(children, key=lambda item: -len(chain_of(item)))   # innermost first
    for box in order:
        kids = children[box]
        if not kids:
            continue
        at, (width, height) = _place_box(kids, sorted(box_edges.get(box, ())), size, sweeps)
        relative.update(at)
        inner[box] = width
        size[box] = (max(width + 2 * BOX_PAD, (box_widths or {}).get(box, 0.0)),
                     height + 2 * BOX_PAD + BOX_LABEL)
    absolute: dict[str, Position] = {}
    origin: dict[str, Position] = {"": (0.0, 0.0)}
    for item in sorted(parents, key=lambda item: len(chain_of(item))):    # outermost first
        ox, oy = origin[parents[item]]
        x, y = relative[item]
        cx, cy = ox + x, oy + y
        if children[item]:
            h = size[item][1]
            origin[item] = (cx - inner[item] / 2, cy - h / 2 + BOX_PAD + BOX_LABEL)
        else:
            absolute[item] = (round(cx, 1), round(cy, 1))
    return absolute
