"""StepStats -> Chrome trace (TF's python/client/timeline.py, TF_BEHAVIOUR 4.9): one process
per device for compute and one for tensors, ops as "X" events in non-overlapping lanes,
dataflow arrows between lanes, and optional memory objects and counters."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from engine.devices import DeviceSpec

__all__ = ["Timeline"]

_LABEL = re.compile(r"(.*) = (.*)\((.*)\)")


def _parse_op_label(label: str) -> tuple[str, str, list[str]]:
    """`name = Op(in1, in2)` -> (name, Op, inputs); TF's 'unknown' when it does not parse
    (the Send/Recv labels, which lack their closing parenthesis, never do)."""
    match = _LABEL.match(label)
    if match is None:
        return "unknown", "unknown", []
    name, op, inputs = match.groups()
    return name, op, inputs.split(", ") if inputs else []


def _allocator_name(device: str) -> str:
    """TF's allocator names: `cpu` for host memory, `GPU_<i>_bfc` for a GPU's."""
    try:
        spec = DeviceSpec.from_string(device)
    except ValueError:
        return "cpu"
    if spec.device_type == "GPU":
        return f"GPU_{spec.device_index or 0}_bfc"
    return "cpu"


def _description(tensor) -> str:
    """TF's snapshot text: the TensorDescription proto printed, quotes removed."""
    return (f"allocation_description {{\n  requested_bytes: {tensor.num_bytes}\n"
            f"  allocator_name: {tensor.allocator}\n}}\n")


@dataclass
class _Tensor:
    name: str
    object_id: int
    create_time: int
    pid: int
    allocator: str
    num_bytes: int
    unref_times: list[int] = field(default_factory=list)


class _ChromeTrace:
    def __init__(self):
        self.metadata: list[dict] = []
        self.events: list[dict] = []

    def process(self, name: str, pid: int) -> None:
        self.metadata.append({"name": "process_name", "ph": "M", "pid": pid,
                              "args": {"name": name}})

    def event(self, ph: str, category: str, name: str, pid: int, tid: int, ts: int,
              **extra) -> None:
        self.events.append({"ph": ph, "cat": category, "name": name, "pid": pid, "tid": tid,
                            "ts": ts, **extra})

    def to_string(self, pretty: bool) -> str:
        trace = {"traceEvents": self.metadata + self.events}
        if pretty:
            return json.dumps(trace, indent=4, separators=(",", ": "))
        return json.dumps(trace, separators=(",", ":"))


class Timeline:
    """`Timeline(run_metadata.step_stats).generate_chrome_trace_format()` gives the JSON that
    chrome://tracing and Perfetto open."""

    def __init__(self, step_stats, graph=None):
        self._step_stats = step_stats
        self._graph = graph

    def generate_chrome_trace_format(self, show_dataflow: bool = True,
                                     show_memory: bool = False, op_time: str = "schedule") -> str:
        if op_time != "schedule":
            raise ValueError(f"Timeline op_time={op_time!r}: only 'schedule' is available (the "
                             "engine records no separate GPU kernel streams).")
        return _Analysis(self._step_stats, show_dataflow, show_memory).trace.to_string(True)


class _Analysis:
    def __init__(self, step_stats, show_dataflow: bool, show_memory: bool):
        self.trace = _ChromeTrace()
        self._tensors: dict[str, _Tensor] = {}
        self._flow_starts: dict[str, tuple[int, int, int]] = {}
        self._next_flow_id = 0
        devices = list(step_stats.dev_stats)
        self._allocate_pids(devices)
        lanes = self._assign_lanes(devices)
        self._analyze_tensors(devices, lanes, show_memory)
        self._show_compute(devices, lanes, show_dataflow)
        if show_memory:
            self._show_memory_counters()

    def _allocate_pids(self, devices) -> None:
        self._allocators_pid = 0
        self.trace.process("Allocators", 0)
        self._device_pids, self._tensor_pids = {}, {}
        for k, dev in enumerate(devices):
            self._device_pids[dev.device] = 1 + 2 * k
            self._tensor_pids[dev.device] = 2 + 2 * k
            self.trace.process(f"{dev.device} Compute", 1 + 2 * k)
            self.trace.process(f"{dev.device} Tensors", 2 + 2 * k)

    @staticmethod
    def _assign_lanes(devices) -> dict[int, int]:
        """Greedy: each op takes the first lane whose last op ended before it started."""
        lanes_of: dict[int, int] = {}
        for dev in devices:
            lanes = [0]
            for ns in dev.node_stats:
                end = ns.all_start_micros + ns.all_end_rel_micros
                lane = next((i for i, free_at in enumerate(lanes)
                             if ns.all_start_micros > free_at), len(lanes))
                if lane == len(lanes):
                    lanes.append(end)
                else:
                    lanes[lane] = end
                lanes_of[id(ns)] = lane
        return lanes_of

    def _analyze_tensors(self, devices, lanes, show_memory: bool) -> None:
        for dev in devices:
            device_pid, tensors_pid = self._device_pids[dev.device], self._tensor_pids[dev.device]
            allocator = _allocator_name(dev.device)
            for ns in dev.node_stats:
                tid, start = lanes[id(ns)], ns.all_start_micros
                end = start + ns.all_end_rel_micros
                for index, output in enumerate(ns.output):
                    name = ns.node_name if index == 0 else f"{ns.node_name}:{index}"
                    tensor = _Tensor(name, len(self._tensors), start, tensors_pid, allocator,
                                     output.total_bytes, [end])
                    self._tensors[name] = tensor
                    self._flow_starts[name] = (end, device_pid, tid)
                    if show_memory:
                        self.trace.event("N", "Tensor", name, tensors_pid, tid, start,
                                         id=tensor.object_id)
                        self.trace.event("O", "Tensor", name, tensors_pid, tid, end - 1,
                                         id=tensor.object_id, args={"snapshot": {
                                             "tensor_description": _description(tensor)}})

    def _show_compute(self, devices, lanes, show_dataflow: bool) -> None:
        for dev in devices:
            device_pid = self._device_pids[dev.device]
            for ns in dev.node_stats:
                tid, start = lanes[id(ns)], ns.all_start_micros
                end = start + ns.all_end_rel_micros
                _, op, inputs = _parse_op_label(ns.timeline_label)
                args = {"name": ns.node_name, "op": op}
                args.update({f"input{i}": name for i, name in enumerate(inputs)})
                self.trace.event("X", "Op", op, device_pid, tid, start,
                                 dur=ns.all_end_rel_micros, args=args)
                for name in inputs:
                    self._flow_into(name, start, end, device_pid, tid, show_dataflow)

    def _flow_into(self, name: str, start: int, end: int, pid: int, tid: int,
                   show_dataflow: bool) -> None:
        if name not in self._tensors:
            cut = name.rfind("/_")
            name = name[:cut] if cut > 0 else name
        tensor = self._tensors.get(name)
        if tensor is None:
            return
        tensor.unref_times.append(end - 1)
        created_at, created_pid, created_tid = self._flow_starts[name]
        if show_dataflow and (created_pid != pid or created_tid != tid):
            flow_id = self._next_flow_id
            self._next_flow_id += 1
            self.trace.event("s", "DataFlow", name, created_pid, created_tid, created_at,
                             id=flow_id)
            self.trace.event("t", "DataFlow", name, pid, tid, start, id=flow_id)

    def _show_memory_counters(self) -> None:
        allocations: dict[str, list[tuple[int, int, str]]] = {}
        for name, tensor in self._tensors.items():
            last_unref = max(tensor.unref_times)
            self.trace.event("D", "Tensor", name, tensor.pid, 0, last_unref,
                             id=tensor.object_id)
            allocations.setdefault(tensor.allocator, []).extend(
                [(tensor.create_time, tensor.num_bytes, name),
                 (last_unref, -tensor.num_bytes, name)])
        for allocator, records in allocations.items():
            total = 0
            for ts, num_bytes, _ in sorted(records, key=lambda r: r[0]):
                total += num_bytes
                self.trace.events.append({"ph": "C", "cat": "Memory", "name": allocator,
                                          "pid": self._allocators_pid, "tid": 0, "ts": ts,
                                          "args": {allocator: total}})
