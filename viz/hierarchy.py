"""The graph as TensorBoard groups it: name scopes, and series nodes for siblings that differ
only by a number (`block_0` … `block_1249`, `add`, `add_1`, …) and have the same structure;
plus the visible view of a set of expanded groups (boxes, collapsed leaves, folded edges)."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from engine.record.schema import GraphRecord
from viz.search_pattern import MAX_SUBJECT, compile_search

OP = "op"
SCOPE = "scope"
SERIES = "series"
ROOT = ""
# TensorBoard groups from 5 members; four towers (tower_0..tower_3) are a series too, and
# ops from 3 (a gradient's MatMul, MatMul_1 pair is two different products, not a series).
SERIES_MIN_SCOPES = 2
SERIES_MIN_OPS = 3
DEFAULT_VISIBLE_LIMIT = 60     # the first view opens levels while at most this many leaves show
_NUMBERED = re.compile(r"^(.*?)_(\d+)$")


@dataclass(frozen=True)
class Group:
    """One item of the hierarchy: an op, a name scope or a series of siblings."""
    id: str
    kind: str                  # OP | SCOPE | SERIES
    label: str                 # what the node shows: last name part, or "block_[0-1249]"
    parent: str                # id of the enclosing group (ROOT at the top)
    children: tuple[str, ...]  # ids, in first-member order; () for an op
    members: int               # ops under it (1 for an op)
    op: str = ""               # op type of an op; for a series of ops, theirs


@dataclass(frozen=True)
class Hierarchy:
    groups: Mapping[str, Group]           # by id; ROOT is the whole graph
    op_ids: Mapping[str, str]             # node name -> its op's id
    chains: Mapping[str, tuple[str, ...]]  # node name -> enclosing group ids, outermost first
    loops: frozenset[str]                 # scopes of while loops (start collapsed)
    edges: tuple[tuple[str, str, bool], ...] = ()   # (producer, consumer, control)
    # The node names in drawing order (a group's are one run of it) and each group's run
    # (start, stop), so that a view maps each visible leaf's names at once (members_of)
    # instead of walking every group of the graph per view.
    drawing_order: tuple[str, ...] = ()
    runs: Mapping[str, tuple[int, int]] = field(default_factory=dict, compare=False)
    graph_index: Mapping[str, int] = field(default_factory=dict, compare=False)
    # group id -> indices into `edges` of the edges whose ends' innermost common group it is
    # (ROOT when none): an edge is drawn exactly when that group is open, so a view folds
    # only the edges of its open groups, not all of the graph's.
    edges_within: Mapping[str, tuple[int, ...]] = field(default_factory=dict, compare=False)
    _members: dict = field(default_factory=dict, compare=False, repr=False)

    def members_of(self, gid: str) -> tuple[str, ...]:
        """The node names under group `gid` (an op: its own), in graph order; kept."""
        found = self._members.get(gid)
        if found is None:
            start, stop = self.runs[gid]
            found = tuple(sorted(self.drawing_order[start:stop],
                                 key=self.graph_index.__getitem__))
            self._members[gid] = found
        return found


@dataclass(frozen=True)
class ViewNode:
    id: str
    kind: str
    label: str
    parent: str                # id of the box it is drawn in (ROOT: none)
    expanded: bool             # a box around its children, or a leaf
    members: tuple[str, ...]   # node names it stands for
    size: int = 0              # a series: how many siblings it stands for


@dataclass(frozen=True)
class ViewEdge:
    src: str
    dst: str
    edges: tuple[tuple[str, str, bool], ...]   # underlying (producer, consumer, control)

    @property
    def control(self) -> bool:
        return all(control for _, _, control in self.edges)


@dataclass(frozen=True)
class HierarchyView:
    nodes: tuple[ViewNode, ...]            # boxes before what they hold
    edges: tuple[ViewEdge, ...]
    expanded: frozenset[str]
    rep: Mapping[str, str]                 # node name -> id of the visible leaf holding it
    underlying: tuple[tuple[str, str, bool], ...] = ()   # the graph's edges (the hierarchy's)

    def leaves(self) -> tuple[ViewNode, ...]:
        return tuple(node for node in self.nodes if not node.expanded)


def op_id(name: str, scopes: frozenset[str]) -> str:
    """An op whose name is also a scope (TF's variable "w" beside "w/read") is drawn inside
    that scope as "w/(w)", as TensorBoard does, so ids stay unique."""
    return f"{name}/({name.rpartition('/')[2]})" if name in scopes else name


def _child_id(parent: str, part: str) -> str:
    return f"{parent}/{part}" if parent else part


def format_numbers(numbers: Iterable[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> "0-2,5,7-8"."""
    ordered = sorted(set(numbers))
    runs: list[list[int]] = []
    for number in ordered:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def series_label(prefix: str, numbers: list[int], has_base: bool) -> str:
    """"block_[0-1249]"; a base member without number (TF's "add" before "add_1") is named
    first: "add, add_[1-3]"."""
    label = f"{prefix}_[{format_numbers(numbers)}]" if numbers else prefix
    return f"{prefix}, {label}" if has_base and numbers else label


def name_scopes(names: Iterable[str]) -> frozenset[str]:
    """Every proper name prefix: "a/b/c" lives in scopes "a" and "a/b"."""
    scopes: set[str] = set()
    for name in names:
        cut = name.rfind("/")
        # The longest prefix first: once one is known, so are all shorter ones.
        while cut > 0 and name[:cut] not in scopes:
            scopes.add(name[:cut])
            cut = name.rfind("/", 0, cut)
    return frozenset(scopes)


def loop_scopes(graph: GraphRecord) -> frozenset[str]:
    """The scopes of while loops: those that directly hold a LoopCond (`while`, `rnn/while`),
    as TF's while_loop names its frame."""
    return frozenset(node.name.rpartition("/")[0] for node in graph.nodes
                     if node.op == "LoopCond" and "/" in node.name)


class _Builder:
    def __init__(self, graph: GraphRecord) -> None:
        self.graph = graph
        self.scopes = name_scopes(node.name for node in graph.nodes)
        self.children: dict[str, list[str]] = {ROOT: []}
        self.kind: dict[str, str] = {ROOT: SCOPE}
        self.op_of: dict[str, str] = {}
        self.op_ids: dict[str, str] = {}

    def build(self) -> Hierarchy:
        for node in self.graph.nodes:
            self._add_op(node.name, node.op)
        signature: dict[str, str] = {}
        self._signatures(ROOT, signature)
        groups: dict[str, Group] = {}
        self._emit(ROOT, ROOT, "", signature, groups)
        chains = _chains(groups)
        enclosing = {name: chains[groups[oid].parent] for name, oid in self.op_ids.items()}
        edges = _edges(self.graph, self.op_ids)
        order, runs = _runs(groups, {oid: name for name, oid in self.op_ids.items()})
        return Hierarchy(groups, self.op_ids, enclosing, loop_scopes(self.graph), edges,
                         order, runs, {name: i for i, name in enumerate(self.op_ids)},
                         _edges_within(edges, groups, chains, self.op_ids))

    def _scope(self, scope: str) -> str:
        """`scope` (and the scopes above it) added where missing, outermost first."""
        if not scope or scope in self.kind:
            return scope
        parent = self._scope(scope.rpartition("/")[0])
        self.kind[scope] = SCOPE
        self.children[scope] = []
        self.children[parent].append(scope)
        return scope

    def _add_op(self, name: str, op: str) -> None:
        parent = self._scope(name.rpartition("/")[0])
        if name in self.scopes:
            parent = self._scope(name)
        oid = op_id(name, self.scopes)
        self.kind[oid] = OP
        self.op_of[oid] = op
        self.op_ids[name] = oid
        self.children[parent].append(oid)

    def _signatures(self, root: str, out: dict[str, str]) -> None:
        """Structure of each scope (its children's names and structures), bottom-up without
        recursion: siblings with equal signatures are copies of one another."""
        order, stack = [], [root]
        while stack:
            item = stack.pop()
            order.append(item)
            stack.extend(child for child in self.children.get(item, ()) if
                         self.kind[child] == SCOPE)
        for item in reversed(order):
            text = ";".join(
                f"{_last(child)}={out[child] if self.kind[child] == SCOPE else self.op_of[child]}"
                for child in self.children[item])
            out[item] = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()

    def _emit(self, item: str, parent: str, label: str, signature: dict[str, str],
              groups: dict[str, Group]) -> int:
        """Adds `item` and (with series formed among its children) everything under it;
        returns its op count."""
        if self.kind[item] == OP:
            groups[item] = Group(item, OP, label, parent, (), 1, self.op_of[item])
            return 1
        members = 0
        ids = []
        for entry in self._series(item, signature):
            if isinstance(entry, str):
                members += self._emit(entry, item, _last(entry), signature, groups)
                ids.append(entry)
                continue
            sid, slabel, items = entry
            count = sum(self._emit(child, sid, _last(child), signature, groups)
                        for child in items)
            op = self.op_of.get(items[0], "")
            groups[sid] = Group(sid, SERIES, slabel, item, tuple(items), count, op)
            members += count
            ids.append(sid)
        groups[item] = Group(item, SCOPE, label, parent, tuple(ids), members)
        return members

    def _series(self, scope: str, signature: dict[str, str]) -> list:
        """The scope's children, where each run of numbered siblings of one prefix and
        structure becomes (series id, label, member ids), placed at its first member."""
        def key(child: str) -> tuple[str, str, str] | None:
            last = _last(child)
            if self.kind[child] == OP and last.startswith("("):
                return None
            found = _NUMBERED.match(last)
            prefix = found.group(1) if found else last
            shape = signature[child] if self.kind[child] == SCOPE else self.op_of[child]
            return prefix, self.kind[child], shape

        children = self.children[scope]
        keyed = [key(child) for child in children]
        total: dict[tuple, int] = {}
        numbered: set[tuple] = set()
        members: dict[tuple, list[str]] = {}
        for k, child in zip(keyed, children):
            if k is None:
                continue
            total[k] = total.get(k, 0) + 1
            members.setdefault(k, []).append(child)
            if _NUMBERED.match(_last(child)):
                numbered.add(k)
        series = {k for k in numbered
                  if total[k] >= (SERIES_MIN_OPS if k[1] == OP else SERIES_MIN_SCOPES)}
        if not series:
            return list(children)
        out: list = []
        placed: set[tuple] = set()
        for k, child in zip(keyed, children):
            if k not in series:
                out.append(child)
            elif k not in placed:
                placed.add(k)
                out.append(self._series_entry(scope, k, members[k]))
        return out

    def _series_entry(self, scope: str, k: tuple, items: list[str]) -> tuple:
        prefix = k[0]
        numbers, has_base = [], False
        for child in items:
            found = _NUMBERED.match(_last(child))
            if found and found.group(1) == prefix:
                numbers.append(int(found.group(2)))
            else:
                has_base = True
        label = series_label(prefix, numbers, has_base)
        sid = _child_id(scope, label.replace(", ", "+"))
        if k[1] == OP:
            sid += f"[{k[2]}]"
        return sid, label, sorted(items, key=_number_of)



def _runs(groups: Mapping[str, Group], names: Mapping[str, str]
          ) -> tuple[tuple[str, ...], dict[str, tuple[int, int]]]:
    """The node names depth first (children in order) and each group's run of them."""
    order: list[str] = []
    runs: dict[str, tuple[int, int]] = {}
    stack: list[tuple[str, bool]] = [(ROOT, False)]
    starts: dict[str, int] = {}
    while stack:
        gid, done = stack.pop()
        if done:
            runs[gid] = (starts[gid], len(order))
            continue
        starts[gid] = len(order)
        if groups[gid].kind == OP:
            order.append(names[gid])
            runs[gid] = (starts[gid], len(order))
            continue
        stack.append((gid, True))
        stack.extend((child, False) for child in reversed(groups[gid].children))
    return tuple(order), runs


def _edges_within(edges: Sequence[tuple[str, str, bool]], groups: Mapping[str, Group],
                  chains: Mapping[str, tuple[str, ...]], op_ids: Mapping[str, str]
                  ) -> dict[str, tuple[int, ...]]:
    """Each edge under the innermost group holding both ends (found once per pair of the
    ends' groups: most edges join ops of one scope)."""
    found: dict[str, list[int]] = {}
    common: dict[tuple[str, str], str] = {}
    for index, (producer, consumer, _) in enumerate(edges):
        if producer == consumer:
            continue                   # drawn in no view
        pair = (groups[op_ids[producer]].parent, groups[op_ids[consumer]].parent)
        gid = common.get(pair)
        if gid is None:
            gid = common[pair] = _innermost_common(chains[pair[0]], chains[pair[1]])
        found.setdefault(gid, []).append(index)
    return {gid: tuple(indices) for gid, indices in found.items()}


def _innermost_common(a: tuple[str, ...], b: tuple[str, ...]) -> str:
    depth = 0
    while depth < min(len(a), len(b)) and a[depth] == b[depth]:
        depth += 1
    return a[depth - 1] if depth else ROOT


def _chains(groups: Mapping[str, Group]) -> dict[str, tuple[str, ...]]:
    """group id -> itself and the groups above it, outermost first (ROOT: ())."""
    chains: dict[str, tuple[str, ...]] = {ROOT: ()}
    for gid in reversed(groups):            # _emit adds a group after all it holds
        if gid != ROOT and groups[gid].kind != OP:
            chains[gid] = chains[groups[gid].parent] + (gid,)
    return chains


def _edges(graph: GraphRecord, names: Mapping[str, str]) -> tuple[tuple[str, str, bool], ...]:
    """viz.edges.graph_edges inlined (it is most of building a 10,000-node hierarchy):
    one (producer, consumer, control) per distinct edge between nodes of the graph, by
    consumer in graph order, then by producer in graph order."""
    order = {name: index for index, name in enumerate(names)}
    edges: list[tuple[str, str, bool]] = []
    for node in graph.nodes:
        found: dict[tuple[str, str, bool], int] = {}
        for spelled in node.inputs:
            if spelled[:1] == "^":
                key = (spelled[1:], node.name, True)
            else:
                src, sep, index = spelled.rpartition(":")
                key = (src if sep and index.isdigit() else spelled, node.name, False)
            where = order.get(key[0])
            if where is not None:
                found[key] = where
        if found:
            edges += sorted(found, key=lambda edge: (found[edge], edge[2]))
    return tuple(edges)


def _last(item: str) -> str:
    return item.rpartition("/")[2]


def _number_of(item: str) -> tuple[int, str]:
    found = _NUMBERED.match(_last(item))
    return (int(found.group(2)) if found else -1, item)


def build_hierarchy(graph: GraphRecord) -> Hierarchy:
    """Scopes and series of `graph` (the workbench caches it per graph version)."""
    return _Builder(graph).build()


def group_members(hierarchy: Hierarchy, group: str) -> list[str]:
    """Node names under `group`, in graph order."""
    return [name for name, chain in hierarchy.chains.items()
            if group in chain or hierarchy.op_ids[name] == group]


def _walk(groups: Mapping[str, Group], expanded: frozenset[str]):
    """(id, group, open) of every drawn item in drawing order, boxes before what they hold:
    the children of open groups (ROOT is open), down to the first closed group or op."""
    stack = list(reversed(groups[ROOT].children))
    while stack:
        item = stack.pop()
        group = groups[item]
        opened = item in expanded and group.kind != OP
        yield item, group, opened
        if opened:
            stack.extend(reversed(group.children))


def representatives(hierarchy: Hierarchy, expanded: frozenset[str]) -> dict[str, str]:
    """node name -> the visible leaf holding it (its outermost collapsed group, else
    itself), in graph order."""
    leaf_of: dict[str, str] = {}
    for item, _, opened in _walk(hierarchy.groups, frozenset(expanded)):
        if not opened:
            leaf_of.update(dict.fromkeys(hierarchy.members_of(item), item))
    return {name: leaf_of[name] for name in hierarchy.op_ids}


def hierarchy_view(hierarchy: Hierarchy, expanded: Iterable[str]) -> HierarchyView:
    """What is drawn for these expanded groups: a box per expanded group (only the
    hierarchy's own ids count), a leaf per collapsed group or op, and one edge per pair of
    leaves that some graph edge joins."""
    groups = hierarchy.groups
    expanded = frozenset(frozenset(expanded) & (groups.keys() - {ROOT}))
    expanded = frozenset(g for g in expanded if groups[g].kind != OP and _open_above(
        groups, g, expanded))
    nodes: list[ViewNode] = []
    leaf_of: dict[str, str] = {}
    for item, group, opened in _walk(groups, expanded):
        if opened:
            nodes.append(ViewNode(item, group.kind, group.label, group.parent, True, ()))
            continue
        names = hierarchy.members_of(item)
        nodes.append(ViewNode(item, group.kind, group.label, group.parent, False, names,
                              len(group.children)))
        leaf_of.update(dict.fromkeys(names, item))
    rep = {name: leaf_of[name] for name in hierarchy.op_ids}    # graph order
    return HierarchyView(tuple(nodes), fold_edges(_drawn_edges(hierarchy, expanded), rep),
                         expanded, rep, hierarchy.edges)


def _drawn_edges(hierarchy: Hierarchy, opened: frozenset[str]) -> list[tuple[str, str, bool]]:
    """The graph's edges between different leaves of the view whose open groups are
    `opened` (each open above), in graph order: those within ROOT or an open group."""
    within = hierarchy.edges_within
    indices = sorted(itertools.chain.from_iterable(within.get(gid, ()) for gid in opened | {ROOT}))
    return [hierarchy.edges[index] for index in indices]


def _open_above(groups: Mapping[str, Group], group: str, expanded: frozenset[str]) -> bool:
    parent = groups[group].parent
    while parent != ROOT:
        if parent not in expanded:
            return False
        parent = groups[parent].parent
    return True


def fold_edges(edges: Iterable[tuple[str, str, bool]],
               rep: Mapping[str, str]) -> tuple[ViewEdge, ...]:
    """One drawn edge per pair of distinct leaves that underlying edges join."""
    folded: dict[tuple[str, str], list] = {}
    leaf = rep.__getitem__
    for edge in edges:
        src, dst = leaf(edge[0]), leaf(edge[1])
        if src != dst:
            found = folded.get((src, dst))
            if found is None:
                folded[src, dst] = [edge]
            else:
                found.append(edge)
    return tuple(ViewEdge(src, dst, tuple(found)) for (src, dst), found in folded.items())


def frontier(hierarchy: Hierarchy, expanded: frozenset[str]) -> frozenset[str]:
    """Collapsed groups that are visible now."""
    return frozenset(item for item, group, opened in _walk(hierarchy.groups, frozenset(expanded))
                     if not opened and group.kind != OP)


def _leaf_count(hierarchy: Hierarchy, expanded: frozenset[str]) -> int:
    """How many leaves the view of `expanded` draws (every group holds an op)."""
    return sum(not opened for _, _, opened in _walk(hierarchy.groups, expanded))


def expand_level(hierarchy: Hierarchy, expanded: Iterable[str]) -> frozenset[str]:
    expanded = frozenset(expanded)
    return expanded | frontier(hierarchy, expanded)


def expand_level_within(hierarchy: Hierarchy, expanded: Iterable[str], limit: int
                        ) -> tuple[frozenset[str], int, int]:
    """One level deeper, opening the visible closed groups in drawing order while at most
    `limit` leaves show (the first always opens): (expanded, opened, closed before). A
    10,000-node graph's next level can be a thousand nodes no one can read at once."""
    drawn = hierarchy_view(hierarchy, expanded)
    expanded = drawn.expanded
    closed = [node.id for node in drawn.leaves() if node.kind != OP]
    shown = len(drawn.leaves())
    opened = set(expanded)
    for gid in closed:
        grows = len(hierarchy.groups[gid].children) - 1
        if shown + grows > limit and len(opened) > len(expanded):
            continue
        opened.add(gid)
        shown += grows
    return frozenset(opened), len(opened) - len(expanded), len(closed)


def default_expansion(hierarchy: Hierarchy, limit: int = DEFAULT_VISIBLE_LIMIT
                      ) -> frozenset[str]:
    """Open whole levels while at most `limit` leaves show; while loops stay closed, and
    a series opens only on demand (its members are copies of one another)."""
    expanded: frozenset[str] = frozenset()
    closed = hierarchy.loops | {gid for gid, group in hierarchy.groups.items()
                                if group.kind == SERIES}
    while True:
        deeper = expand_level(hierarchy, expanded) - closed
        if deeper == expanded:
            return expanded
        if _leaf_count(hierarchy, deeper) > limit:
            return expanded if expanded else _first_single(hierarchy, deeper, limit)
        expanded = deeper


def _first_single(hierarchy: Hierarchy, deeper: frozenset[str], limit: int) -> frozenset[str]:
    """A graph under one scope (Inception's "InceptionV3/") opens that scope even when its
    children are many: one box of many beats a single square."""
    top = hierarchy.groups[ROOT].children
    return frozenset(top) & deeper if len(top) == 1 else frozenset()


def reveal(hierarchy: Hierarchy, expanded: Iterable[str], node: str) -> frozenset[str]:
    """`expanded` plus every group above `node` (a node name or a group id)."""
    expanded = frozenset(expanded)
    if node in hierarchy.chains:
        return expanded | frozenset(hierarchy.chains[node])
    chain = []
    group = hierarchy.groups.get(node)
    while group is not None and group.parent != ROOT:
        chain.append(group.parent)
        group = hierarchy.groups.get(group.parent)
    return expanded | frozenset(chain)


def search(hierarchy: Hierarchy, pattern: str, limit: int = 50) -> list[str]:
    """Node names matching the regular expression `pattern` (re.search over each name's
    first MAX_SUBJECT characters), graph order, at most `limit`; re.error for a pattern that
    does not compile, UnsafePattern for one that could run for minutes
    (viz.search_pattern)."""
    compiled = compile_search(pattern)
    found = []
    for name in hierarchy.chains:
        if compiled.search(name, 0, MAX_SUBJECT):
            found.append(name)
            if len(found) >= limit:
                break
    return found
