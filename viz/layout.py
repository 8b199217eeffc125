"""Layered DAG layout: topological generations as rows, barycenter sweeps to order each
row so edges cross less. Pure Python over networkx; the workbench caches the result."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import networkx as nx

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
    x: dict[str, float] = {}
    for row in rows:
        _place_row(row, x)
    above, below = _neighbours(layer, edges)
    for _ in range(sweeps):
        _sweep(rows[1:], x, above)
        _sweep(rows[-2::-1], x, below)
    return {node: (x[node], -float(layer[node])) for node in layer}
