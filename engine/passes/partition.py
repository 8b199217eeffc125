"""`partition(client_graph, location=by_device)`: one subgraph per location (a device, or a
task under `by_task`). Every data edge that crosses devices becomes a `_Send`/`_Recv` pair with
TF's rendezvous key, one transfer per (tensor, destination device), also between two devices of
one location; control edges cross as a tiny Const sent over and an Identity. The rendezvous key
is derived from the Send/Recv attrs alone (`key_of`), so a partition needs nothing beyond its
GraphDef."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine import dtypes
from engine.graph_def import NodeDef, parse_input, tensor_spelling
from engine.passes.cross_device_loops import is_control_loop_merge
from engine.passes.prune import ClientGraph
from engine.shapes import TensorShape

INCARNATION = 1   # in-process devices always have incarnation 1 (TF_BEHAVIOUR 3.9)


@dataclass(frozen=True)
class CutEdge:
    tensor: str                  # "src:0", or "^src" for a control edge
    src_device: str
    dst_device: str
    send_node: str
    recv_node: str
    key: str
    dtype: object                # DType
    shape: TensorShape
    consumers: tuple[str, ...]


@dataclass
class PartitionResult:
    partitions: dict[str, list[NodeDef]]        # location -> nodes in schedule order
    cut_edges: list[CutEdge]


def rendezvous_key(send_device: str, recv_device: str, tensor_name: str,
                   incarnation: int = INCARNATION) -> str:
    return f"{send_device};{incarnation:016x};{recv_device};{tensor_name};0:0"


def key_of(node: NodeDef) -> str:
    """The rendezvous key of a _Send or _Recv node, from its attrs (as TF's GetRendezvousKey
    builds it), with the top-level frame's `0:0`."""
    attr = node.attr
    return rendezvous_key(attr["send_device"], attr["recv_device"], attr["tensor_name"],
                          attr["send_device_incarnation"])


def by_device(device: str) -> str:
    """The in-process location policy: one partition per device."""
    return device


def by_task(device: str) -> str:
    """The distributed location policy: one partition per task (`/job:x/replica:r/task:n`),
    as TF's master partitions a graph for its workers."""
    parts = [p for p in device.split("/") if p and not p.startswith("device:")]
    return "/" + "/".join(parts)


class _Partitioner:
    def __init__(self, client: ClientGraph, location: Callable[[str], str]):
        self.client = client
        self.location = location
        self.by_name = {n.name: n for n in client.nodes}
        self.partitions: dict[str, list[NodeDef]] = {}
        self.cut_edges: list[CutEdge] = []
        self.edge_consumers: list[list[str]] = []     # per cut edge
        self.recv_for: dict[tuple, str] = {}          # (src, slot, dst device) -> input name
        self.edge_of: dict[tuple, int] = {}
        self.counter = 0
        self.edge_id = 0
        self.loop_control: str | None = None       # of the node being partitioned

    def emit(self, device: str, node: NodeDef) -> None:
        self.partitions.setdefault(self.location(device), []).append(node)

    def new_name(self, prefix: str) -> str:
        name = f"{prefix}/_{self.counter}"
        self.counter += 1
        return name

    def run(self) -> PartitionResult:
        devices = self.client.devices
        for n in self.client.nodes:
            dst_device = devices[n.name]
            inputs, self.loop_control = [], self.control_loop_input(n)
            made_recvs = len(self.cut_edges)
            for spelling in n.input:
                self.edge_id += 1
                src, index = parse_input(spelling)
                src_device = devices[src]
                if src_device == dst_device:
                    if index >= 0 or src != self.loop_control:
                        inputs.append(spelling)
                elif index < 0:
                    inputs.append("^" + self.control_transfer(src, src_device, dst_device, n))
                else:
                    inputs.append(self.data_transfer(src, index, src_device, dst_device, n))
            if self.loop_control and made_recvs == len(self.cut_edges):
                inputs.append("^" + self.loop_control)   # TF adds back the unused edge
            self.emit(dst_device, NodeDef(n.name, n.op, inputs, dst_device, n.attr,
                                          n.output_dtypes, n.output_shapes, n.meta))
        edges = [CutEdge(e.tensor, e.src_device, e.dst_device, e.send_node, e.recv_node, e.key,
                         e.dtype, e.shape, tuple(consumers))
                 for e, consumers in zip(self.cut_edges, self.edge_consumers)]
        return PartitionResult(self.partitions, edges)

    def control_loop_input(self, n: NodeDef) -> str | None:
        """The control loop Merge (engine/passes/cross_device_loops.py) that `n` takes a
        control input from, if any: it moves onto the Recvs made for `n`."""
        for src in n.control_inputs():
            if is_control_loop_merge(self.by_name[src]):
                return src
        return None

    def data_transfer(self, src: str, index: int, src_device: str, dst_device: str,
                      consumer: NodeDef) -> str:
        key = (src, index, dst_device)
        if key not in self.recv_for:
            producer = self.by_name[src]
            dtype = producer.output_dtypes[index].base_dtype
            shape = producer.output_shapes[index] if producer.output_shapes else \
                TensorShape(None)
            self.recv_for[key] = self.pair(src, tensor_spelling(src, index), src_device,
                                           dst_device, dtype, shape, f"{src}:{index}")
            self.edge_of[key] = len(self.cut_edges) - 1
        self.edge_consumers[self.edge_of[key]].append(consumer.name)
        return self.recv_for[key]

    def control_transfer(self, src: str, src_device: str, dst_device: str,
                         consumer: NodeDef) -> str:
        """TF 3.6: a Const on the producer's device (after ^src) is sent; the receiving side
        adds an Identity that the consumer takes as its control input."""
        key = (src, -1, dst_device)
        if key not in self.recv_for:
            dummy = self.new_name(src)
            self.emit(src_device, NodeDef(
                dummy, "Const", [f"^{src}"], src_device,
                {"dtype": dtypes.float32, "value": np.zeros([0], np.float32)},
                (dtypes.float32,), (TensorShape([0]),), {"control_edge_from": src}))
            recv = self.pair(dummy, dummy, src_device, dst_device, dtypes.float32,
                             TensorShape([0]), f"^{src}")
            ident = self.new_name(src)
            self.emit(dst_device, NodeDef(ident, "Identity", [recv], dst_device,
                                          {"T": dtypes.float32}, (dtypes.float32,),
                                          (TensorShape([0]),), {"control_edge_from": src}))
            self.recv_for[key] = ident
            self.edge_of[key] = len(self.cut_edges) - 1
        self.edge_consumers[self.edge_of[key]].append(consumer.name)
        return self.recv_for[key]

    def pair(self, src: str, spelling: str, src_device: str, dst_device: str, dtype,
             shape, tensor_label: str) -> str:
        tensor_name = f"edge_{self.edge_id}_{src}"
        key = rendezvous_key(src_device, dst_device, tensor_name)
        attrs = {"tensor_name": tensor_name, "send_device": src_device,
                 "send_device_incarnation": INCARNATION, "recv_device": dst_device,
                 "client_terminated": False}
        send, recv = self.new_name(src), self.new_name(src)
        self.emit(src_device, NodeDef(send, "_Send", [spelling], src_device,
                                      {"T": dtype, **attrs}, (), (), {"key": key}))
        controls = [f"^{self.loop_control}"] if self.loop_control else []
        self.emit(dst_device, NodeDef(recv, "_Recv", controls, dst_device,
                                      {"tensor_type": dtype, **attrs}, (dtype,), (shape,),
                                      {"key": key}))
        self.edge_consumers.append([])
        self.cut_edges.append(CutEdge(tensor_label, src_device, dst_device, send, recv, key,
                                      dtype, shape, ()))
        return recv


def partition(client: ClientGraph,
              location: Callable[[str], str] = by_device) -> PartitionResult:
    """Splits the client graph by the location (`location(device)`) of each node's assigned
    device. Nodes are emitted in one global order in which every Send precedes its Recv, so
    running each partition in its own order, in parallel, cannot deadlock."""
    return _Partitioner(client, location).run()
