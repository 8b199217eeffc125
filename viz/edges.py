"""Edges of a recorded graph and which of them cross devices: the facts every other viz
module (scopes, layout, figures, inspector) derives its pictures from."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.record.schema import GraphRecord, PlacementRecord


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    control: bool


def input_source(spelled: str) -> tuple[str, int, bool]:
    """GraphDef input spelling -> (producer node, output index, is control edge)."""
    if spelled.startswith("^"):
        return spelled[1:], -1, True
    name, sep, index = spelled.rpartition(":")
    if sep and index.isdigit():
        return name, int(index), False
    return spelled, 0, False


def graph_edges(graph: GraphRecord) -> list[Edge]:
    """One edge per (producer, consumer, kind); inputs naming nodes outside the graph are
    skipped because the user graph never holds the runtime's _arg/_retval/Send/Recv nodes."""
    names = {node.name for node in graph.nodes}
    seen: set[tuple[str, str, bool]] = set()
    edges: list[Edge] = []
    for node in graph.nodes:
        for spelled in node.inputs:
            src, _, control = input_source(spelled)
            key = (src, node.name, control)
            if src in names and key not in seen:
                seen.add(key)
                edges.append(Edge(src, node.name, control))
    return edges


def assigned_devices(placements: Iterable[PlacementRecord]) -> dict[str, str]:
    """node -> assigned device; a later record for the same node wins."""
    return {record.node: record.assigned for record in placements}


def is_cut(edge: Edge, devices: dict[str, str]) -> bool:
    """True when both ends are placed and on different devices (a Send/Recv pair)."""
    src_device = devices.get(edge.src, "")
    dst_device = devices.get(edge.dst, "")
    return bool(src_device and dst_device and src_device != dst_device)


def cut_edges(graph: GraphRecord, placements: Iterable[PlacementRecord]) -> set[tuple[str, str]]:
    """(producer, consumer) pairs whose ends run on different devices."""
    devices = assigned_devices(placements)
    return {(e.src, e.dst) for e in graph_edges(graph) if is_cut(e, devices)}
