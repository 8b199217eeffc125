"""Turns what the Session computed (graph, placement, plans, step stats) into run-store
records and TF's RunMetadata. The passes never see the recorder; the Session calls these.
Traced steps give one OpStat per kernel and one Transfer per Recv; untraced ones a
StepRecord only."""

from __future__ import annotations

from engine.graph_def import GraphDef, NodeDef, node_to_json
from engine.passes.place import Placement
from engine.record import schema
from engine.runtime.config import DeviceStepStats, NodeExecStats, NodeOutput, StepStats


def _spec(dtype, shape) -> schema.TensorSpec:
    return schema.TensorSpec(dtype.name, None if shape.dims is None else tuple(shape.dims))


def graph_record(graph_def: GraphDef) -> schema.GraphRecord:
    nodes = []
    for n in graph_def.node:
        encoded = node_to_json(n)
        nodes.append(schema.NodeRecord(
            name=n.name, op=n.op, inputs=tuple(n.input), device=n.device,
            attrs=_summarize_attrs(encoded["attr"]),
            outputs=tuple(_spec(d, s) for d, s in zip(n.output_dtypes, n.output_shapes)),
            stack=tuple(n.meta.get("stack", ()))))
    return schema.GraphRecord(version=graph_def.version, nodes=tuple(nodes))


def _summarize_attrs(attrs: dict) -> dict:
    """Keeps the record small: large constant values are replaced by a summary."""
    out = {}
    for k, v in attrs.items():
        if isinstance(v, dict) and "tensor" in v:
            t = v["tensor"]
            values = t.get("values")
            out[k] = {"tensor": {"dtype": t["dtype"], "shape": t["shape"],
                                 "values": values if values is not None and len(values) <= 16
                                 else None}}
        else:
            out[k] = v
    return out


def placement_records(placement: Placement, names, version: int) -> list:
    return [schema.PlacementRecord(node=d.node, op=d.op, requested=d.requested,
                                   assigned=d.assigned, reason=d.reason, detail=d.detail,
                                   log_line=d.log_line, graph_version=version)
            for d in (placement.decisions[n] for n in names)]


def device_records(devices) -> list:
    return [schema.DeviceRecord(d.name, d.device_type, d.index, d.physical_desc, d.virtual)
            for d in devices]


def plan_records(plan, devices_present) -> tuple:
    key = plan.key
    record = schema.PlanRecord(plan.id, key.graph_version, key.fetches, key.feeds, key.targets,
                               tuple(devices_present))
    parts = [schema.PartitionRecord(plan.id, p.device.name, tuple(n.name for n in p.nodes))
             for p in plan.partitions]
    edges = [schema.CutEdgeRecord(plan.id, e.tensor, e.src_device, e.dst_device, e.send_node,
                                  e.recv_node, e.key, e.dtype.name,
                                  None if e.shape.dims is None else tuple(e.shape.dims),
                                  e.consumers)
             for e in plan.result.cut_edges]
    return record, parts, edges


def step_records(step: int, plan, wall_start: float, duration_us: float, stats, t0_ns: int):
    """OpStat and Transfer records from the executor's raw (index, start, end, bytes) tuples."""
    ops, transfers = [], []
    for part, thread, raw in stats:
        for index, start, end, nbytes in raw:
            node: NodeDef = part.nodes[index]
            ops.append(schema.OpStatRecord(step, node.name, node.op, part.device.name,
                                           (start - t0_ns) / 1e3, (end - t0_ns) / 1e3, nbytes,
                                           thread))
            if node.op == "_Recv":
                transfers.append(schema.TransferRecord(step, node.meta["key"],
                                                       node.attr["tensor_name"],
                                                       node.attr["send_device"],
                                                       node.attr["recv_device"], nbytes))
    moved = sum(t.bytes for t in transfers)
    record = schema.StepRecord(step, plan.id, wall_start, duration_us, len(ops), moved)
    return record, ops, transfers


def untraced_step_record(step: int, plan, wall_start: float, duration_us: float,
                         bytes_moved: int) -> schema.StepRecord:
    """An untraced step: its duration, plan, kernel count and the bytes its Recvs took."""
    return schema.StepRecord(step, plan.id, wall_start, duration_us, plan.num_kernels,
                             bytes_moved)


def step_stats(stats, t0_ns: int, wall_start_us: int) -> StepStats:
    """TF's StepStats: per device the node stats, absolute start in microseconds."""
    by_device: dict[str, DeviceStepStats] = {}
    for part, thread, raw in stats:
        dev = by_device.setdefault(part.device.name, DeviceStepStats(part.device.name))
        for index, start, end, nbytes in raw:
            node = part.nodes[index]
            rel = (end - start) // 1000
            dev.node_stats.append(NodeExecStats(
                node_name=node.name, all_start_micros=wall_start_us + (start - t0_ns) // 1000,
                op_start_rel_micros=0, op_end_rel_micros=rel, all_end_rel_micros=rel,
                timeline_label=timeline_label(node), thread_id=thread,
                output=[NodeOutput(0, nbytes)] if nbytes else [], op=node.op))
    return StepStats(list(by_device.values()))


def timeline_label(node: NodeDef) -> str:
    """TF 4.8 (the Send/Recv labels have no closing parenthesis in TF either)."""
    if node.op == "_Send":
        return f"{node.name} = _Send({node.attr['tensor_name']} @{node.attr['recv_device']}"
    if node.op == "_Recv":
        return f"{node.name} = _Recv({node.attr['tensor_name']} @{node.attr['send_device']}"
    return f"{node.name} = {node.op}({', '.join(node.data_inputs())})"
