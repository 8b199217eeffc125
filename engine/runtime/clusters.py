"""The dynamic executor's fused twin for untraced steps: inside a while loop, groups of plain
kernel nodes of one frame become one cluster item that runs its members as straight-line
Python, so a loop iteration pays the pending-count bookkeeping per cluster, not per node."""

from __future__ import annotations

import collections
import itertools
import linecache
import traceback
from collections.abc import Callable

from engine import errors
from engine.kernels.control_flow import NO_VALUE
from engine.runtime.executor import _node_error, node_failure
from engine.runtime.frames import (
    CONST,
    KERNEL,
    MERGE,
    NEXT,
    RECV,
    ROOT_FRAME,
    SEND,
    TRIGGER,
    Item,
)

# Ops whose kernel can leave an output dead (NO_VALUE): the edge of a cluster, never inside.
_DEAD_MAKERS = frozenset(("Switch", "RefSwitch"))
_FORWARDS = frozenset(("Identity", "StopGradient"))
_SEARCH_BUDGET = 4000        # nodes one cycle check may visit before refusing the merge
_compile_ids = itertools.count()


class Cluster:
    """What a cluster item runs: its members in a topological order, where each member's
    inputs come from (the cluster's external inputs or an earlier member's outputs), and
    which member outputs leave the cluster."""

    accepts_controls = False      # every control edge into a member comes from the cluster

    def __init__(self, members: list[Item], label: str, device):
        self.members = members
        self.label = label
        self.device = device
        self.position = {m.id: i for i, m in enumerate(members)}
        self.inputs: dict[tuple, int] = {}    # (producer id, its output slot) -> input
        self.outputs: dict[tuple, int] = {}   # (member position, its output slot) -> output
        # Per member, per input slot: ("x", cluster input) or ("m", member position, slot).
        self.sources: list[list] = [[None] * m.num_inputs for m in members]
        self.control_sources: list[list[int]] = [[] for _ in members]
        self.control_members: list[int] = []   # per control edge out, the member it leaves
        self.run = None

    def output(self, member_id: int, slot: int) -> int:
        return self.outputs.setdefault((self.position[member_id], slot), len(self.outputs))

    def internal(self, src_id: int, dst_id: int, slot: int, src_slot: int) -> None:
        at = self.position
        if slot < 0:
            self.control_sources[at[dst_id]].append(at[src_id])
        else:
            self.sources[at[dst_id]][slot] = ("m", at[src_id], src_slot)

    def external(self, src_id: int, src_slot: int, dst_id: int, slot: int) -> bool:
        """Wires member input `slot` to a value from outside; True when that value is new
        to the cluster (it needs an edge into the cluster item)."""
        key = (src_id, src_slot)
        new = key not in self.inputs
        k = self.inputs.setdefault(key, len(self.inputs))
        self.sources[self.position[dst_id]][slot] = ("x", k)
        return new

    # -- the live path: one compiled function --------------------------------------------

    def compile(self) -> None:
        names: dict[tuple, str] = {}
        scope: dict = {}
        args = [f"a{k}" for k in range(len(self.inputs))]
        lines = [f"def cluster({', '.join(args)}):"]
        line_nodes: dict[int, object] = {}
        for i, m in enumerate(self.members):
            ins = [args[s[1]] if s[0] == "x" else names[(s[1], s[2])] for s in self.sources[i]]
            emit(m, f"{i}", ins, names, (i,), scope, lines, line_nodes, "    ")
        results = [names[key] for key in self.outputs]
        lines.append(f"    return {results[0]}" if len(results) == 1 else
                     f"    return ({''.join(r + ', ' for r in results)})")
        self.run = build(lines, scope, line_nodes, f"{self.label} cluster", "cluster",
                         self.device)

    # -- the path with a dead input: member by member, as the executor would -------------

    def run_dead(self, values) -> tuple[tuple, list[bool]]:
        """The cluster's outputs when some input is dead: a member with a dead input (or a
        dead member it waits for) is dead and runs nothing. Returns the outputs (NO_VALUE
        where dead) and each member's deadness."""
        outs: list[tuple] = []
        dead = []
        for i, m in enumerate(self.members):
            args = [values[s[1]] if s[0] == "x" else outs[s[1]][s[2]] for s in self.sources[i]]
            if any(a is NO_VALUE for a in args) or any(dead[j] for j in self.control_sources[i]):
                dead.append(True)
                outs.append(m.dead_outputs)
                continue
            dead.append(False)
            if m.kind == CONST:
                outs.append((m.value,))
                continue
            try:
                result = m.kernel(*args)
            except BaseException as e:
                traceback.clear_frames(e.__traceback__)
                raise node_failure(e, m.node, self.device) from e
            count = m.num_outputs
            outs.append((result,) if count == 1 else tuple(result) if count else ())
        return tuple(outs[pos][slot] for pos, slot in self.outputs), dead


def emit(m: Item, tag: str, ins: list[str], names: dict, key: tuple, scope: dict,
         lines: list[str], line_nodes: dict, indent: str) -> None:
    """Appends member `m`'s statement (its inputs the expressions `ins`) and names its outputs
    in `names` under `key + (slot,)`. Constants, Identity and NoOp cost no statement."""
    if m.kind == CONST:
        scope[f"c{tag}"] = m.value
        names[key + (0,)] = f"c{tag}"
        return
    if m.node.op == "NoOp" or m.kind == TRIGGER:
        return
    if m.node.op in _FORWARDS and m.kernel.__name__ == "_identity":
        names[key + (0,)] = ins[0]
        return
    scope[f"k{tag}"] = m.kernel
    call = f"k{tag}({', '.join(ins)})"
    count = m.num_outputs
    if count == 0:
        lines.append(f"{indent}{call}")
    elif count == 1:
        names[key + (0,)] = f"v{tag}"
        lines.append(f"{indent}v{tag} = {call}")
    else:
        outs = [f"v{tag}_{k}" for k in range(count)]
        for k, local in enumerate(outs):
            names[key + (k,)] = local
        lines.append(f"{indent}{', '.join(outs)} = {call}")
    line_nodes[len(lines)] = m.node


def build(lines: list[str], scope: dict, line_nodes: dict, label: str, name: str,
          device) -> Callable:
    """Compiles generated `lines` (defining function `name`) into a callable whose errors
    name the node of the failing line."""
    filename = f"<engine {label} #{next(_compile_ids)}>"
    source = "\n".join(lines) + "\n"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 - generated from the graph
    fn = scope[name]

    def run(*values):
        try:
            return fn(*values)
        except BaseException as e:
            raise _node_error(e, fn, line_nodes, device) from e
    return run


def find_clusters(order: list[Item], in_edges, taken: set) -> list[list[Item]]:
    """Groups of at least two eligible nodes of one loop frame such that the graph of
    groups stays acyclic (so a group waiting for all its inputs cannot wait on itself) and
    every control edge into a member comes from its own group. Members come in a
    topological order (`order`, the graph's without its NextIteration edges). Nodes in
    `taken` stay out."""
    pos = {item.id: i for i, item in enumerate(order)}
    sends = [item for item in order if item.kind == SEND]
    group_of: dict[int, list[Item]] = {}
    closed: set[int] = set()      # eligible nodes no other node may join

    def producers(item: Item):
        found = [src for src, _ in in_edges[item.id] if src.kind != NEXT]
        return found + sends if item.kind == RECV else found

    def reaches(group: list[Item], start: Item) -> bool:
        """Whether `start` waits on `group` in the same iteration of the group's frame (or
        the search gives up: True). A NextIteration edge of the group's own frame leads to
        the next iteration, so it is not followed; an inner loop's is: a loop's exit waits
        on its body, so on whatever its body reads (a constant Enter's value included)."""
        low, frame = pos[group[0].id], group[0].frame
        seen, stack, visited = set(), [start], 0
        while stack:
            node = stack.pop()
            nodes = group_of.get(node.id, [node])
            if nodes is group:
                return True
            # A group's (or lone node's) first member names it: id() of the temporary
            # one-node lists would be reused once they are freed, skipping unseen nodes.
            # Nodes before the group in the order cannot wait on it, except a Merge, which
            # also waits on its NextIteration.
            if nodes[0].id in seen or (pos[nodes[-1].id] < low and nodes[0].kind != MERGE):
                continue
            seen.add(nodes[0].id)
            visited += len(nodes)
            if visited > _SEARCH_BUDGET:
                return True
            for member in nodes:
                stack.extend(waits_on(member, frame))
        return False

    def waits_on(item: Item, frame) -> list[Item]:
        found = [src for src, _ in in_edges[item.id]
                 if src.kind != NEXT or src.frame is not frame]
        return found + sends if item.kind == RECV else found

    for item in order:
        if item.id in taken or not _eligible(item, in_edges):
            continue
        controls = [src for src, slot in in_edges[item.id] if slot < 0]
        srcs = producers(item)
        joined = None
        for src in srcs:
            group = group_of.get(src.id)
            if group is None or group is joined or src.frame is not item.frame or \
                    src.id in closed:
                continue
            if any(group_of.get(c.id) is not group for c in controls):
                continue
            others = [s for s in srcs if group_of.get(s.id) is not group]
            if not any(reaches(group, s) for s in others):
                joined = group
                break
        if joined is not None:
            joined.append(item)
            group_of[item.id] = joined
        elif controls:
            closed.add(item.id)
        else:
            group_of[item.id] = [item]
    groups = {id(g): g for g in group_of.values()}.values()
    return [g for g in groups if len(g) > 1]


def _eligible(item: Item, in_edges) -> bool:
    if item.frame.name == ROOT_FRAME:
        return False      # run once a step: nothing to save, and queues keep their order
    if item.kind == CONST:
        return bool(in_edges[item.id])
    return item.kind == KERNEL and not item.reads and item.node.op not in _DEAD_MAKERS


def _topological(items: list[Item], in_edges) -> list[Item] | None:
    """Kahn's order of the graph without its NextIteration edges; None if it has a cycle."""
    waiting = [0] * len(in_edges)
    consumers: dict[int, list[Item]] = collections.defaultdict(list)
    for item in items:
        for src, _ in in_edges[item.id]:
            if src.kind != NEXT:
                waiting[item.id] += 1
                consumers[src.id].append(item)
    queue = collections.deque(item for item in items if waiting[item.id] == 0)
    order = []
    while queue:
        item = queue.popleft()
        order.append(item)
        for dst in consumers[item.id]:
            waiting[dst.id] -= 1
            if waiting[dst.id] == 0:
                queue.append(dst)
    return order if len(order) == len(items) else None


def fuse(items: list[Item], in_edges, device, label: str):
    """The fused twin of a linked graph (out-edges as (consumer, slot, producer slot), not
    yet laid out): each loop of loops.find_loops, then each cluster of find_clusters among
    the other nodes, replaced by one item placed where its first member was. Returns the
    items and their in-edges, for frames.layout."""
    from engine.runtime.loops import CompiledLoop, find_loops
    order = _topological(items, in_edges)
    if order is None:
        return items, in_edges
    programs = [CompiledLoop(shape, label, device) for shape in find_loops(items, order)]
    taken = {m.id for program in programs for m in program.members}
    programs += [Cluster(members, label, device)
                 for members in find_clusters(order, in_edges, taken)]
    if not programs:
        return items, in_edges
    owner: dict[int, Item] = {}
    for program in programs:
        cluster_item = _cluster_item(program)
        for m in program.members:
            owner[m.id] = cluster_item
    for item in items:
        _rewire(item, owner)
    for cluster_item in {id(c): c for c in owner.values()}.values():
        cluster = cluster_item.cluster
        cluster_item.num_inputs = len(cluster.inputs)
        cluster_item.num_outputs = len(cluster.outputs)
        cluster_item.dead_outputs = (NO_VALUE,) * cluster_item.num_outputs
        cluster_item.blank = (NO_VALUE,) * cluster_item.num_inputs
        cluster.compile()
        cluster_item.kernel = cluster.run
    fused = []
    for item in items:
        holder = owner.get(item.id)
        if holder is None:
            fused.append(item)
        elif holder.id == item.id:
            fused.append(holder)
    edges: list[list[tuple]] = [[] for _ in in_edges]
    for item in fused:
        for dst, slot, _ in item.out_edges:
            edges[dst.id].append((item, slot))
        for dst in item.out_controls:
            edges[dst.id].append((item, -1))
    return fused, edges


def _cluster_item(cluster) -> Item:
    first = cluster.members[0]
    item = Item(first.id, first.node)
    item.kind, item.frame, item.traced = KERNEL, first.frame, False
    item.is_constant, item.index, item.key = False, 0, ""
    item.cluster = cluster
    return item


def _rewire(item: Item, owner: dict[int, Item]) -> None:
    """Moves `item`'s out-edges onto the cluster items at either end (an edge inside one
    cluster becomes that cluster's own wiring)."""
    src = owner.get(item.id)
    producer = src if src is not None else item
    edges, controls = [], []
    for dst, slot, src_slot in item.out_edges:
        target = owner.get(dst.id)
        if src is not None and target is src:
            src.cluster.internal(item.id, dst.id, slot, src_slot)
            continue
        out_slot = src.cluster.output(item.id, src_slot) if src is not None else src_slot
        if target is None:
            edges.append((dst, slot, out_slot))
        elif target.cluster.external(producer.id, out_slot, dst.id, slot):
            edges.append((target, target.cluster.inputs[(producer.id, out_slot)], out_slot))
    for dst in item.out_controls:
        target = owner.get(dst.id)
        if src is not None and target is src:
            src.cluster.internal(item.id, dst.id, -1, 0)
            continue
        if target is not None and target.cluster.accepts_controls:
            controls.append(target)
            continue
        if target is not None:
            raise errors.InternalError(dst.node, None, f"Fusing the loop body put {dst.node.name} "
                                                       "in a cluster it has a control edge into.")
        controls.append(dst)
        if src is not None:
            src.cluster.control_members.append(src.cluster.position[item.id])
    if src is None:
        item.out_edges, item.out_controls = edges, controls
    else:
        src.out_edges.extend(edges)
        src.out_controls.extend(controls)
