"""`control_flow_info(nodes)`: the frame (while loop) every node runs in, by TF's
BuildControlFlowInfo (core/graph/control_flow.cc) as the executor reads it: an Enter runs in the
parent frame and feeds its `frame_name`, an Exit runs in the loop's frame and feeds the parent.
Shared by the partitioner (loops across devices) and the dynamic executor (frame layout)."""

from __future__ import annotations

import collections
from dataclasses import dataclass

from engine import errors
from engine.graph_def import NodeDef, parse_input

ROOT_FRAME = ""
ENTER_OPS = ("Enter", "RefEnter")
EXIT_OPS = ("Exit", "RefExit")


@dataclass(frozen=True)
class ControlFlowInfo:
    frame_of: dict[str, str]      # node -> the frame it runs in ("" is the top level)
    parent_of: dict[str, str]     # frame -> its parent frame (the root has none)

    def output_frame(self, node: NodeDef) -> str:
        """The frame a node's outputs live in: an Enter's child, an Exit's parent."""
        if node.op in ENTER_OPS:
            return node.attr.get("frame_name", "")
        frame = self.frame_of[node.name]
        return self.parent_of.get(frame, ROOT_FRAME) if node.op in EXIT_OPS else frame

    def enclosing(self, frame: str) -> list[str]:
        """`frame` and every frame around it, innermost first, the root left out."""
        chain = []
        while frame != ROOT_FRAME:
            chain.append(frame)
            frame = self.parent_of[frame]
        return chain


def has_loops(nodes: list[NodeDef]) -> bool:
    return any(n.op in ENTER_OPS for n in nodes)


def control_flow_info(nodes: list[NodeDef]) -> ControlFlowInfo:
    """A breadth-first walk from the nodes without inputs, in node order; a node reached from
    two frames is refused with TF's message, a node no walk reaches stays in the root (as TF
    leaves it)."""
    successors = _successors(nodes)
    frame_of: dict[str, str] = {}
    parent_of: dict[str, str] = {}
    first_from: dict[str, NodeDef] = {}
    queue = collections.deque(n for n in nodes if not n.input)
    for n in queue:
        frame_of[n.name] = ROOT_FRAME
    while queue:
        n = queue.popleft()
        here = _frame_fed_by(n, frame_of[n.name], parent_of)
        for dst in successors[n.name]:
            there = frame_of.get(dst.name)
            if there is None:
                frame_of[dst.name] = here
                first_from[dst.name] = n
                queue.append(dst)
            elif there != here:
                other = first_from.get(dst.name, dst)
                raise errors.InvalidArgumentError(
                    dst, None, f"node {dst.name} has inputs from different frames. The input "
                               f"node {n.name} is in frame '{here}'. The input node "
                               f"{other.name} is in frame '{there}'.")
    for n in nodes:
        frame_of.setdefault(n.name, ROOT_FRAME)
    return ControlFlowInfo(frame_of, parent_of)


def _successors(nodes: list[NodeDef]) -> dict[str, list[NodeDef]]:
    """Each node's consumers: data consumers first (in node, then slot, order), then
    control consumers, so the walk (and so which error a bad graph gets) is deterministic."""
    data: dict[str, list[NodeDef]] = {n.name: [] for n in nodes}
    control: dict[str, list[NodeDef]] = {n.name: [] for n in nodes}
    for n in nodes:
        for spelling in n.input:
            src, index = parse_input(spelling)
            (control if index < 0 else data)[src].append(n)
    return {name: data[name] + control[name] for name in data}


def _frame_fed_by(n: NodeDef, frame: str, parent_of: dict[str, str]) -> str:
    if n.op in ENTER_OPS:
        name = n.attr.get("frame_name", "")
        if not name:
            raise errors.InvalidArgumentError(
                n, None, f"The Enter node {n.name} must have a frame name.")
        parent = parent_of.setdefault(name, frame)
        if parent != frame:
            raise errors.InternalError(
                n, None, f"Invalid loop structure: Mismatched parent frames for \"{name}\": "
                         f"\"{frame}\" vs \"{parent}\". The node giving this error: node "
                         f"{n.name}.")
        return name
    if n.op in EXIT_OPS:
        return parent_of.get(frame, frame)
    return frame
