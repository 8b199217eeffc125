"""`add_control_loops(client)`: TF's AddControlFlow (core/graph/graph_partition.cc), run before
partitioning. A while loop whose body spans devices gets, on every device that receives a value
inside the loop, a control loop of its own (Enter -> Merge -> Switch on the loop's LoopCond ->
NextIteration, named `_cloop...`) that re-runs that device's frame once per iteration; the
partitioner gives each Recv inside the loop a control input from that Merge, so the Recv runs,
and so one Send/Recv pair is exchanged, per iteration. Before that, control-flow nodes are
colocated with their data (TF's OptimizeControlFlowColocation), so a loop's own Enter, Merge,
Switch, NextIteration and Exit stay with its loop variable."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine import dtypes, errors
from engine.devices import DeviceSpec
from engine.graph_def import NodeDef, parse_input
from engine.kernels.registry import find_kernel
from engine.passes.control_flow_info import (
    ENTER_OPS,
    EXIT_OPS,
    ROOT_FRAME,
    ControlFlowInfo,
    control_flow_info,
    has_loops,
)
from engine.passes.prune import ClientGraph
from engine.shapes import TensorShape

CONTROL_LOOP_PREFIX = "_cloop"
_SCALAR, _EMPTY = TensorShape([]), TensorShape([0])


def is_control_loop_merge(node: NodeDef) -> bool:
    """TF's IsControlLoop for a Merge: the partitioner moves its control edges onto Recvs."""
    return node.op == "Merge" and node.name.startswith(CONTROL_LOOP_PREFIX)


def add_control_loops(client: ClientGraph) -> ClientGraph:
    """The client graph with control-flow colocation applied and a control loop per (frame,
    device) that receives a value inside the frame; unchanged without loops."""
    if not has_loops(client.nodes):
        return client
    info = control_flow_info(client.nodes)
    devices = colocate_control_flow(client.nodes, client.devices)
    loops = _ControlLoops(client.nodes, devices, info)
    extra_controls: dict[str, str] = {}
    for n in client.nodes:
        frame = info.frame_of[n.name]
        if frame != ROOT_FRAME and any(devices[parse_input(spelling)[0]] != devices[n.name]
                                       for spelling in n.input):
            extra_controls[n.name] = loops.merge_for(frame, devices[n.name])
    if not extra_controls:
        return ClientGraph(client.nodes, devices, client.arg_names, client.retval_names)
    return ClientGraph(loops.nodes_with(extra_controls), devices, client.arg_names,
                       client.retval_names)


def colocate_control_flow(nodes: list[NodeDef], devices: dict[str, str]) -> dict[str, str]:
    """A Switch goes to its data input's device, an Exit to its input's, a (non-ref) Enter and
    a NextIteration to their first data consumer's, where the node has a kernel there. As in
    TF this overrides the placer (its log shows the placer's choice), and keeps the control
    structure of a loop next to its loop variable, off the devices its body visits."""
    by_name = {n.name: n for n in nodes}
    consumers: dict[str, str] = {}
    for n in nodes:
        for spelling in n.data_inputs():
            consumers.setdefault(parse_input(spelling)[0], n.name)
    moved = dict(devices)
    for n in nodes:
        target = None
        if n.op == "Switch" or n.op in EXIT_OPS:
            target = moved[parse_input(n.data_inputs()[0])[0]]
        elif (n.op == "Enter" or n.op == "NextIteration") and n.name in consumers:
            target = moved[consumers[n.name]]
        if target and target != moved[n.name] and _has_kernel(by_name[n.name], target):
            moved[n.name] = target
    return moved


def _has_kernel(node: NodeDef, device: str) -> bool:
    device_type = DeviceSpec.from_string(device).device_type
    return device_type is not None and find_kernel(node, device_type) is not None


@dataclass
class _Loop:
    head: list[NodeDef]       # [Const,] Enter, Merge: before the frame's first node
    tail: list[NodeDef]       # Switch, NextIteration: right after the frame's LoopCond
    merge: str


class _ControlLoops:
    """The control loops made so far, keyed by (frame, device), and where they go."""

    def __init__(self, nodes: list[NodeDef], devices: dict[str, str], info: ControlFlowInfo):
        self.nodes = nodes
        self.devices = devices
        self.info = info
        self.loops: dict[tuple[str, str], _Loop] = {}
        self.loop_cond: dict[str, NodeDef] = {}
        self.iterations: dict[str, int] = {}
        self.first_node: dict[str, str] = {}
        for n in nodes:
            frame = info.frame_of[n.name]
            self.first_node.setdefault(frame, n.name)
            if n.op == "LoopCond":
                self.loop_cond[frame] = n
            elif n.op in ENTER_OPS:
                self.iterations.setdefault(n.attr["frame_name"],
                                           int(n.attr.get("parallel_iterations", 10)))
        self.counter = 0

    def merge_for(self, frame: str, device: str) -> str:
        """The Merge of `device`'s control loop for `frame`, made (with those of the frames
        around it) when first asked for."""
        loop = self.loops.get((frame, device))
        if loop is None:
            parent = self.info.parent_of[frame]
            outer = self.merge_for(parent, device) if parent != ROOT_FRAME else None
            loop = self._make(frame, device, outer)
            self.loops[(frame, device)] = loop
        return loop.merge

    def _make(self, frame: str, device: str, outer_merge: str | None) -> _Loop:
        cond = self.loop_cond.get(frame)
        if cond is None:
            raise errors.InvalidArgumentError(
                None, None, f"A cross-device loop must have a pivot predicate: {frame}")
        f32 = dtypes.float32
        head = []
        if outer_merge is None:
            head.append(self._node("Const", [], device, {"dtype": f32, "value": np.zeros(
                [0], np.float32)}, (f32,), (_EMPTY,), frame))
            outer_merge = head[0].name
        enter = self._node("Enter", [outer_merge], device, {
            "T": f32, "frame_name": frame, "is_constant": False,
            "parallel_iterations": self.iterations.get(frame, 10)}, (f32,), (_EMPTY,), frame)
        merge_name, next_name = self._name(frame), self._name(frame)
        merge = NodeDef(merge_name, "Merge", [enter.name, next_name], device, {"T": f32, "N": 2},
                        (f32, dtypes.int32), (_EMPTY, _SCALAR), {})
        switch_inputs = [merge.name, cond.name]
        if self.devices[cond.name] != device:
            switch_inputs.append("^" + merge.name)    # its Recv of the predicate, per iteration
        switch = self._node("Switch", switch_inputs, device, {"T": f32}, (f32, f32),
                            (_EMPTY, _EMPTY), frame)
        nxt = NodeDef(next_name, "NextIteration", [f"{switch.name}:1"], device, {"T": f32},
                      (f32,), (_EMPTY,), {})
        for node in (*head, enter, merge, switch, nxt):
            self.devices[node.name] = device
        return _Loop(head + [enter, merge], [switch, nxt], merge.name)

    def _name(self, frame: str) -> str:
        """TF's ControlLoopName: `_cloop` before a fresh name (here the frame's)."""
        self.counter += 1
        return f"{CONTROL_LOOP_PREFIX}{frame}/_{self.counter - 1}"

    def _node(self, op: str, inputs: list[str], device: str, attr: dict, out_dtypes,
              out_shapes, frame: str) -> NodeDef:
        return NodeDef(self._name(frame), op, inputs, device, attr, out_dtypes, out_shapes, {})

    def nodes_with(self, extra_controls: dict[str, str]) -> list[NodeDef]:
        """The nodes in order, each control loop's head before its frame's first node (outer
        loops first) and its tail after its LoopCond, with the control edges added."""
        before: dict[str, list[NodeDef]] = {}
        after: dict[str, list[NodeDef]] = {}
        ordered = sorted(self.loops.items(), key=lambda kv: len(self.info.enclosing(kv[0][0])))
        for (frame, _), loop in ordered:
            before.setdefault(self.first_node[frame], []).extend(loop.head)
            after.setdefault(self.loop_cond[frame].name, []).extend(loop.tail)
        out = []
        for n in self.nodes:
            out.extend(before.get(n.name, ()))
            if n.name in extra_controls:
                n = NodeDef(n.name, n.op, [*n.input, f"^{extra_controls[n.name]}"], n.device,
                            n.attr, n.output_dtypes, n.output_shapes, n.meta)
            out.append(n)
            out.extend(after.get(n.name, ()))
        return out
