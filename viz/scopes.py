"""Name-scope grouping: which nodes are visible for a set of expanded scopes. A collapsed
scope becomes one node (its path), edges are re-targeted to it and de-duplicated."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from engine.record.schema import GraphRecord, PlacementRecord
from viz.edges import assigned_devices, graph_edges, is_cut

OP = "op"
SCOPE = "scope"
# The first view opens whole levels while at most this many nodes show: beyond about 60,
# labels overlap and edges cannot be followed; the rest is one "Expand a level" or click away.
DEFAULT_VISIBLE_LIMIT = 60


@dataclass(frozen=True)
class VisibleNode:
    name: str                  # node name, or scope path for a collapsed scope
    kind: str                  # OP | SCOPE
    op: str                    # op type; "" for a scope
    device: str                # assigned device; for a scope the one most members use
    devices: tuple[tuple[str, int], ...]  # (device, members on it), most used first
    members: int               # 1 for an op


@dataclass(frozen=True)
class VisibleEdge:
    src: str
    dst: str
    count: int                 # underlying node edges folded into this one
    cut: int                   # how many of them cross devices
    control: bool              # every underlying edge is a control edge
    data_cut: int = 0          # how many data (not control) edges cross devices


@dataclass(frozen=True)
class GraphView:
    nodes: tuple[VisibleNode, ...]
    edges: tuple[VisibleEdge, ...]
    expanded: frozenset[str]


def all_scopes(graph: GraphRecord) -> frozenset[str]:
    """Every proper name prefix: "a/b/c" lives in scopes "a" and "a/b"."""
    scopes: set[str] = set()
    for node in graph.nodes:
        parts = node.name.split("/")
        scopes.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
    return frozenset(scopes)


def scope_chain(name: str, scopes: frozenset[str]) -> tuple[str, ...]:
    """Scopes holding `name`, outermost first. A node whose name is also a scope (TF's
    "w" beside "w/Assign") belongs to that scope, so collapsing it never shows two "w"s."""
    parts = name.split("/")
    chain = tuple("/".join(parts[:depth]) for depth in range(1, len(parts)))
    return chain + (name,) if name in scopes else chain


def _representative(name: str, chain: tuple[str, ...], expanded: frozenset[str]) -> str:
    for scope in chain:
        if scope not in expanded:
            return scope
    return name


def _representatives(
    graph: GraphRecord, expanded: frozenset[str], scopes: frozenset[str] | None = None
) -> dict[str, str]:
    scopes = all_scopes(graph) if scopes is None else scopes
    return {
        node.name: _representative(node.name, scope_chain(node.name, scopes), expanded)
        for node in graph.nodes
    }


def scope_view(
    graph: GraphRecord, placements: Iterable[PlacementRecord], expanded: Iterable[str]
) -> GraphView:
    """Visible nodes (in first-member order) and re-targeted, de-duplicated edges."""
    expanded = frozenset(expanded)
    devices = assigned_devices(placements)
    rep = _representatives(graph, expanded)
    members: dict[str, list] = {}
    for node in graph.nodes:
        members.setdefault(rep[node.name], []).append(node)
    nodes = tuple(_visible_node(name, group, devices) for name, group in members.items())
    return GraphView(nodes, _visible_edges(graph, rep, devices), expanded)


def _visible_node(name: str, group: list, devices: dict[str, str]) -> VisibleNode:
    counts = Counter(devices.get(node.name, "") for node in group)
    by_use = tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    is_op = len(group) == 1 and group[0].name == name
    return VisibleNode(
        name=name,
        kind=OP if is_op else SCOPE,
        op=group[0].op if is_op else "",
        device=by_use[0][0],
        devices=by_use,
        members=len(group),
    )


def _visible_edges(
    graph: GraphRecord, rep: dict[str, str], devices: dict[str, str]
) -> tuple[VisibleEdge, ...]:
    # Per visible edge: [edges, crossing edges, data edges, crossing data edges].
    folded: dict[tuple[str, str], list[int]] = {}
    for edge in graph_edges(graph):
        key = (rep[edge.src], rep[edge.dst])
        if key[0] == key[1]:
            continue
        crossing, data = is_cut(edge, devices), not edge.control
        totals = folded.setdefault(key, [0, 0, 0, 0])
        for index, add in enumerate((1, crossing, data, crossing and data)):
            totals[index] += add
    return tuple(
        VisibleEdge(src, dst, count, cut, control=data == 0, data_cut=data_cut)
        for (src, dst), (count, cut, data, data_cut) in folded.items()
    )


def visible_count(graph: GraphRecord, expanded: Iterable[str]) -> int:
    return len(set(_representatives(graph, frozenset(expanded)).values()))


def frontier(graph: GraphRecord, expanded: Iterable[str]) -> frozenset[str]:
    """Collapsed scopes that are visible now: every enclosing scope is expanded."""
    expanded = frozenset(expanded)
    scopes = all_scopes(graph)
    visible = _representatives(graph, expanded, scopes).values()
    return frozenset(name for name in visible if name in scopes and name not in expanded)


def expand_level(graph: GraphRecord, expanded: Iterable[str]) -> frozenset[str]:
    """Open every scope that is visible and collapsed (one level deeper everywhere)."""
    expanded = frozenset(expanded)
    return expanded | frontier(graph, expanded)


def loop_frames(graph: GraphRecord) -> frozenset[str]:
    """The scopes of while loops: those that directly hold a LoopCond (`while`, `rnn/while`,
    `map/while`), as TF's while_loop names its frame."""
    return frozenset(node.name.rpartition("/")[0] for node in graph.nodes
                     if node.op == "LoopCond" and "/" in node.name)


def default_expansion(
    graph: GraphRecord, limit: int = DEFAULT_VISIBLE_LIMIT
) -> frozenset[str]:
    """Expand whole levels, outermost first, while the visible node count stays <= limit.
    While loops stay collapsed, as TensorBoard shows them: a click or "Expand a level" opens
    one."""
    expanded: frozenset[str] = frozenset()
    loops = loop_frames(graph)
    while True:
        deeper = expand_level(graph, expanded) - loops
        if deeper == expanded or visible_count(graph, deeper) > limit:
            return expanded
        expanded = deeper
