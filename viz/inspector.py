"""What the inspector panel shows for one node (op, inputs with their shapes and dtypes,
outputs, requested and assigned device, placement reason, creation site) or for a scope."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from engine.record.schema import GraphRecord, NodeRecord, PlacementRecord, TensorSpec
from viz.edges import assigned_devices, input_source
from viz.hierarchy import Hierarchy, group_members
from viz.scopes import OP, SCOPE, all_scopes


def format_shape(shape: tuple[int | None, ...] | None) -> str:
    """TensorFlow's spelling: "<unknown>" rank, "[?, 64]", "[]" for a scalar."""
    if shape is None:
        return "<unknown>"
    return "[" + ", ".join("?" if dim is None else str(dim) for dim in shape) + "]"


def _tensor(spec: TensorSpec | None) -> dict:
    if spec is None:
        return {"dtype": "", "shape": "<unknown>"}
    return {"dtype": spec.dtype, "shape": format_shape(spec.shape)}


def _input_rows(node: NodeRecord, by_name: dict[str, NodeRecord]) -> list[dict]:
    rows = []
    for spelled in node.inputs:
        src, index, control = input_source(spelled)
        producer = by_name.get(src)
        spec = None
        if producer is not None and not control and index < len(producer.outputs):
            spec = producer.outputs[index]
        rows.append({"name": spelled, "control": control, **_tensor(spec)})
    return rows


def _latest_placement(placements: Iterable[PlacementRecord], name: str) -> PlacementRecord | None:
    found = None
    for record in placements:
        if record.node == name:
            found = record
    return found


def op_details(graph: GraphRecord, placements: Iterable[PlacementRecord], name: str) -> dict:
    by_name = {node.name: node for node in graph.nodes}
    node = by_name[name]
    placed = _latest_placement(placements, name)
    return {
        "kind": OP,
        "name": node.name,
        "op": node.op,
        "inputs": _input_rows(node, by_name),
        "outputs": [{"index": i, **_tensor(spec)} for i, spec in enumerate(node.outputs)],
        "requested": node.device,
        "assigned": placed.assigned if placed else "",
        "reason": placed.reason if placed else "",
        "detail": placed.detail if placed else "",
        "log_line": placed.log_line if placed else "",
        "stack": list(node.stack),
        "attrs": dict(node.attrs),
    }


def scope_details(graph: GraphRecord, placements: Iterable[PlacementRecord], scope: str) -> dict:
    """Members summary: how many nodes, which op types and devices, most common first."""
    members = [node for node in graph.nodes
               if node.name == scope or node.name.startswith(scope + "/")]
    if not members:
        raise KeyError(f"no node or scope named {scope!r} in graph version {graph.version}")
    devices = assigned_devices(placements)
    ops = Counter(node.op for node in members)
    spread = Counter(devices.get(node.name, "") for node in members)
    return {
        "kind": SCOPE,
        "name": scope,
        "members": len(members),
        "ops": sorted(ops.items(), key=lambda item: (-item[1], item[0])),
        "devices": sorted(spread.items(), key=lambda item: (-item[1], item[0])),
        "member_names": [node.name for node in members],
    }


def node_details(graph: GraphRecord, placements: Iterable[PlacementRecord], node_name: str,
                 as_scope: bool = False) -> dict:
    """Details of an op node, or the members summary of a scope (`as_scope`, or when the
    name is only a scope). KeyError names the missing node."""
    placements = list(placements)
    is_node = any(node.name == node_name for node in graph.nodes)
    if as_scope or not is_node:
        if node_name in all_scopes(graph) or is_node:
            return scope_details(graph, placements, node_name)
        raise KeyError(f"no node or scope named {node_name!r} in graph version {graph.version}")
    return op_details(graph, placements, node_name)


def node_stats(stats: Iterable, name: str) -> dict | None:
    """How often node `name` ran in one traced step and for how long in all: a node inside a
    while loop runs once per iteration. None when it did not run."""
    runs = [record for record in stats if record.node == name]
    if not runs:
        return None
    return {"step": runs[0].step, "executions": len(runs),
            "total_us": sum(record.end_us - record.start_us for record in runs)}


def group_details(hierarchy: Hierarchy, placements: Iterable[PlacementRecord],
                  group_id: str) -> dict:
    """Members summary of a scope or series of the hierarchy (viz.hierarchy)."""
    group = hierarchy.groups.get(group_id)
    if group is None or group.kind == OP:
        raise KeyError(f"no scope or series {group_id!r} in this graph")
    names = group_members(hierarchy, group_id)
    devices = assigned_devices(placements)
    ops = Counter(hierarchy.groups[hierarchy.op_ids[name]].op for name in names)
    spread = Counter(devices.get(name, "") for name in names)
    return {
        "kind": group.kind,
        "name": group_id,
        "label": group.label,
        "members": len(names),
        "series_size": len(group.children) if group.kind == "series" else 0,
        "ops": sorted(ops.items(), key=lambda item: (-item[1], item[0])),
        "devices": sorted(spread.items(), key=lambda item: (-item[1], item[0])),
        "member_names": names,
    }


def step_details(name: str, step: int | None, stats: Iterable, summaries: Iterable) -> dict:
    """This step's time and output bytes of node `name`, and the latest statistics (at or
    before the step) of each watched output tensor "name:i"."""
    runs = [record for record in stats if record.node == name]
    latest: dict[str, object] = {}
    for record in summaries:
        tensor, _, index = record.node.rpartition(":")
        if tensor == name and index.isdigit() and (step is None or record.step <= step):
            latest[record.node] = record
    return {
        "step": step,
        "executions": len(runs),
        "time_us": sum(record.end_us - record.start_us for record in runs),
        "bytes": sum(record.output_bytes for record in runs),
        "summaries": [latest[key] for key in sorted(latest)],
    }
