"""The one interface the Plan runs a partition through, and the choice of executor per
partition: the compiled straight-line function (engine/runtime/executor.py) for partitions
without control flow, the dynamic executor (dynamic_executor.py) for the rest. A third kind
(a jit) registers in EXECUTORS and in `choose_executors`; nothing else changes."""

from __future__ import annotations

from typing import Protocol

from engine.graph_def import NodeDef
from engine.kernels.registry import KernelContext
from engine.ops.control_flow_ops import CONTROL_FLOW_OP_TYPES
from engine.runtime.rendezvous import Deadline

COMPILED = "compiled"
DYNAMIC = "dynamic"


class PartitionExecutor(Protocol):
    """Runs one partition (the nodes of one device) of a plan, once per step.

    `run(feeds, out, rendezvous, stats, deadline)`: `feeds` holds the fed values by _Arg
    index, `out` receives the fetched values by _Retval index; `rendezvous` carries the cut
    edges (None when the plan has one partition); `stats`, when a list, gets one
    `(executor, thread id, [(node index, start ns, end ns, output bytes), ...])` entry per
    run, one record per node execution (a node in a loop records once per iteration); a
    list with a `checker(executor)` method also gets every output checked for NaN/Inf;
    `deadline` bounds the step. Failures raise OpErrors that name the node."""

    kind: str                    # COMPILED, DYNAMIC, ...
    device: object               # engine.devices.Device
    nodes: list[NodeDef]         # schedule order; stats records index into it
    label: str
    num_kernels: int             # kernels a step runs (at least once each)

    def run(self, feeds: list, out: list, rendezvous, stats: list | None,
            deadline: Deadline | None = None) -> None: ...


def has_control_flow(nodes: list[NodeDef]) -> bool:
    return any(n.op in CONTROL_FLOW_OP_TYPES for n in nodes)


def choose_executors(partitions: dict[str, list[NodeDef]]) -> dict[str, str]:
    """Per device, the kind of executor. Partitions with control-flow ops run dynamically,
    and so does every partition that receives from a dynamic one (a dead tensor may cross
    with the Recv); the others keep the compiled path."""
    kinds = {d: DYNAMIC if has_control_flow(nodes) else COMPILED
             for d, nodes in partitions.items()}
    receivers: dict[str, set[str]] = {}
    for device, nodes in partitions.items():
        for n in nodes:
            if n.op == "_Recv":
                receivers.setdefault(n.attr["send_device"], set()).add(device)
    stack = [d for d, kind in kinds.items() if kind == DYNAMIC]
    while stack:
        for peer in receivers.get(stack.pop(), ()):
            if kinds.get(peer) == COMPILED:
                kinds[peer] = DYNAMIC
                stack.append(peer)
    return kinds


def make_executor(kind: str, device, nodes: list[NodeDef], ctx: KernelContext, label: str,
                  peer_devices: dict[str, str]) -> PartitionExecutor:
    return EXECUTORS[kind](device, nodes, ctx, label, peer_devices)


def _compiled(device, nodes, ctx, label, peers):
    from engine.runtime.executor import CompiledPartition
    return CompiledPartition(device, nodes, ctx, label, peers)


def _dynamic(device, nodes, ctx, label, peers):
    from engine.runtime.dynamic_executor import DynamicPartition
    return DynamicPartition(device, nodes, ctx, label, peers)


EXECUTORS = {COMPILED: _compiled, DYNAMIC: _dynamic}
