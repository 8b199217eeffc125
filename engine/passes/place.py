"""`place(graph_def, devices, ...)`: TensorFlow's placer. Colocation groups (`_class` and ref
edges), merged device specs, kernel availability per device type, soft placement, the
generator heuristic, TF's error texts; every decision carries its reason and log line."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine import errors
from engine.devices import (
    Device,
    DeviceSpec,
    IncompatibleDevicesError,
    MalformedDeviceError,
    merge_colocation_specs,
    sort_by_preference,
)
from engine.graph_def import GraphDef, NodeDef, parse_input
from engine.kernels.registry import find_kernel, registered_kernels_text, supported_device_types
from engine.ops.registry import get_op_def, is_registered
from engine.record.schema import COLOCATED, CONSUMERS, DEFAULT, EXPLICIT, PREASSIGNED, SOFT_FALLBACK

# The Python client of TF 1.12 rewrites these tags into plain node names.
_NODE_TAG = re.compile(r"\{\{(?:colocation_)?node ([^}]+)\}\}")


@dataclass(frozen=True)
class Decision:
    node: str
    op: str
    requested: str
    assigned: str
    reason: str
    detail: str

    @property
    def log_line(self) -> str:
        return f"{self.node}: ({self.op}): {self.assigned}"


@dataclass
class Placement:
    decisions: dict[str, Decision] = field(default_factory=dict)   # in assignment order
    notes: list[str] = field(default_factory=list)   # "Ignoring device specification ..." lines

    def device_of(self, name: str) -> str:
        return self.decisions[name].assigned

    def as_dict(self) -> dict[str, str]:
        return {name: d.assigned for name, d in self.decisions.items()}


@dataclass
class _Group:
    members: list[NodeDef]
    spec: DeviceSpec
    types: list[str]                  # supported device types, preference order
    candidates: list[Device] | None = None
    soft: bool = False
    soft_why: str = ""
    device: Device | None = None
    supported: dict = field(default_factory=dict)   # node name -> its supported types


class _UnionFind:
    def __init__(self, names):
        self.parent = {n: n for n in names}

    def find(self, x: str) -> str:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def place(graph_def: GraphDef, devices: list[Device], allow_soft_placement: bool = False,
          previous: dict[str, str] | None = None) -> Placement:
    """Assigns every node of `graph_def` a device. `previous` holds earlier assignments that
    must be kept (stateful nodes keep their device when the graph grows)."""
    devices = sort_by_preference(devices)
    previous = previous or {}
    placement = Placement()
    nodes = graph_def.node
    specs = {n.name: _requested_spec(n) for n in nodes}
    types_present = list(dict.fromkeys(d.device_type for d in devices))
    supported = {n.name: supported_device_types(n, types_present) for n in nodes}
    uf = _colocation_union(graph_def, specs, placement)
    groups = _build_groups(nodes, uf, specs, supported, previous, allow_soft_placement)
    by_name = {d.name: d for d in devices}

    def assign(n: NodeDef, device: Device, reason: str, detail: str) -> None:
        placement.decisions[n.name] = Decision(n.name, n.op, n.device, device.name, reason, detail)

    generators = []
    for n in nodes:
        if n.name in previous and previous[n.name] in by_name:
            assign(n, by_name[previous[n.name]], PREASSIGNED, "kept from an earlier placement")
            continue
        if _is_generator(n):
            generators.append(n)
            continue
        group = groups[uf.find(n.name)]
        device = _group_device(group, n, devices, allow_soft_placement)
        device = _metadata_heuristic(n, device, group, placement, by_name)
        assign(n, device, *_reason(n, group, device))

    consumers = _consumer_devices(nodes, placement)
    for n in generators:
        group = groups[uf.find(n.name)]
        if len(group.members) == 1 and group.device is None:
            cands = _candidates(group, n, devices, allow_soft_placement)
            wanted = consumers.get(n.name, set())
            if len(wanted) == 1 and (only := next(iter(wanted))) in {d.name for d in cands}:
                assign(n, by_name[only], *_generator_reason(n, group, only))
                continue
        device = _group_device(group, n, devices, allow_soft_placement)
        assign(n, device, *_reason(n, group, device))
    return placement


# -- colocation groups ------------------------------------------------------------------------

def _requested_spec(n: NodeDef) -> DeviceSpec:
    try:
        return DeviceSpec.parse(n.device)
    except MalformedDeviceError:
        raise _wrap(n, f"Malformed device specification '{n.device}'. Use a name like "
                       "/job:localhost/replica:0/task:0/device:CPU:0, /device:GPU:1 or /gpu:1.",
                    errors.InvalidArgumentError) from None


def _colocation_union(graph_def: GraphDef, specs, placement: Placement) -> _UnionFind:
    """Rule 2.2: shared `loc:@` groups, and every ref- or resource-typed input edge."""
    uf = _UnionFind([n.name for n in graph_def.node])
    first_in_group: dict[str, str] = {}
    for n in graph_def.node:
        for group in n.attr.get("_class", ()) or (f"loc:@{n.name}",):
            anchor = group[5:] if group.startswith("loc:@") else group
            if anchor in graph_def:
                uf.union(anchor, n.name)
            elif group in first_in_group:
                uf.union(first_in_group[group], n.name)
            else:
                first_in_group[group] = n.name
        ref_slots = get_op_def(n.op).ref_inputs if is_registered(n.op) else ()
        for slot in ref_slots:
            if slot < len(n.data_inputs()):
                src, index = parse_input(n.data_inputs()[slot])
                _ref_edge_spec(graph_def.by_name(src), n, specs, placement)
                uf.union(src, n.name)
        for slot, spelling in enumerate(n.data_inputs()):
            src, index = parse_input(spelling)
            producer = graph_def.by_name(src)
            if slot not in ref_slots and index < len(producer.output_dtypes) and \
                    producer.output_dtypes[index].is_resource:
                # A resource handle (a TensorArray's, through a loop's Enter) is used where
                # the resource lives.
                uf.union(src, n.name)
    return uf


def _ref_edge_spec(src: NodeDef, dst: NodeDef, specs, placement: Placement) -> None:
    """Rule 2.4: an incompatible consumer spec on a ref edge yields to the producer's."""
    a, b = specs[src.name], specs[dst.name]
    if a.is_empty or b.is_empty:
        return
    try:
        merge_colocation_specs(a, b, False)
    except IncompatibleDevicesError:
        specs[dst.name] = a
        placement.notes.append(
            f"Ignoring device specification {b} for node '{dst.name}' because the input edge "
            f"from '{src.name}' is a reference connection and already has a device field set "
            f"to {a}")


def _build_groups(nodes, uf, specs, supported, previous, soft: bool) -> dict[str, _Group]:
    groups: dict[str, _Group] = {}
    for n in nodes:
        root = uf.find(n.name)
        own = DeviceSpec.parse(previous[n.name]) if n.name in previous else specs[n.name]
        group = groups.get(root)
        if group is None:
            groups[root] = _Group([n], own, list(supported[n.name]))
            continue
        try:
            group.spec = merge_colocation_specs(group.spec, own, soft)
        except IncompatibleDevicesError as e:
            raise _wrap(n, f"Cannot colocate nodes {{{{colocation_node {group.members[0].name}}}}}"
                           f" and {{{{colocation_node {n.name}}}}}: {e}",
                        errors.InvalidArgumentError, _debug_info(group.members + [n])) from None
        types = [t for t in group.types if t in supported[n.name]]
        if not types:
            raise _wrap(n, f"Cannot colocate nodes {{{{colocation_node {group.members[0].name}}}}}"
                           f" and {{{{colocation_node {n.name}}}}} because no device type supports "
                           "both of those nodes and the other nodes colocated with them.",
                        errors.InvalidArgumentError, _debug_info(group.members + [n], supported))
        group.types = types
        group.members.append(n)
    for group in groups.values():
        group.supported = supported
    return groups


# -- choosing devices -------------------------------------------------------------------------

def _candidates(group: _Group, n: NodeDef, devices: list[Device], soft: bool) -> list[Device]:
    if group.candidates is not None:
        return group.candidates
    if group.spec.is_empty:
        found = [d for d in devices if d.device_type in group.types]
        if not found:
            raise _wrap(n, f"Node had no OpKernel registered to support this operation: "
                           f"Operation was {n.op} and inputs were {_input_types(n)}",
                        errors.InvalidArgumentError, _debug_info(group.members, group.supported))
    else:
        matching = [d for d in devices if group.spec.matches(d.spec)]
        found = [d for d in matching if d.device_type in group.types]
        if not found and soft:
            relaxed = group.spec.without_type_and_index()
            found = [d for d in devices if relaxed.matches(d.spec) and d.device_type in group.types]
            if found:
                group.soft = True
                group.soft_why = _soft_reason(group, matching)
        if not found:
            raise _explicit_error(n, group, devices)
    group.candidates = found
    return found


def _group_device(group: _Group, n: NodeDef, devices, soft: bool) -> Device:
    if group.device is None:
        group.device = _candidates(group, n, devices, soft)[0]
    return group.device


def _is_generator(n: NodeDef) -> bool:
    """No data inputs and exactly one non-ref output (Const, Placeholder, ...)."""
    return (not n.data_inputs() and len(n.output_dtypes) == 1
            and not n.output_dtypes[0].is_ref)


def _metadata_heuristic(n, device, group, placement, by_name) -> Device:
    """Shape/Size/Rank follow their input's device when that device is a candidate."""
    if n.op not in ("Shape", "Size", "Rank") or len(group.members) > 1:
        return device
    src, _ = parse_input(n.data_inputs()[0])
    decided = placement.decisions.get(src)
    if decided and decided.assigned in {d.name for d in group.candidates or ()}:
        return by_name[decided.assigned]
    return device


def _consumer_devices(nodes, placement: Placement) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for n in nodes:
        decided = placement.decisions.get(n.name)
        for spelling in n.input:
            src, _ = parse_input(spelling)
            found.setdefault(src, set()).add(decided.assigned if decided else "")
    return found


# -- reasons ----------------------------------------------------------------------------------

def _reason(n: NodeDef, group: _Group, device: Device) -> tuple[str, str]:
    if group.soft:
        return SOFT_FALLBACK, (f"requested {group.spec.to_string() or n.device}: {group.soft_why}; "
                               f"allow_soft_placement moved it to {device.name}")
    own = DeviceSpec.parse(n.device)
    others = [m.name for m in group.members if m is not n]
    if not own.is_empty and own == group.spec:
        return EXPLICIT, f"matches the requested device {own}"
    if not group.spec.is_empty:
        return COLOCATED, (f"colocated with {', '.join(others[:3])}"
                           f"{'...' if len(others) > 3 else ''}, which required {group.spec}")
    if others:
        return COLOCATED, f"colocated with {', '.join(others[:3])}; first device with a kernel"
    return DEFAULT, _default_detail(n, device, group)


def _generator_reason(n: NodeDef, group: _Group, device_name: str) -> tuple[str, str]:
    if group.spec.is_empty:
        return CONSUMERS, "no inputs and no request: placed with all of its consumers"
    return EXPLICIT, f"matches the requested device {group.spec}; placed with its consumers"


def _default_detail(n: NodeDef, device: Device, group: _Group) -> str:
    missing = [t for t in ("GPU", "CPU") if t not in group.types and t != device.device_type]
    if "GPU" in missing:
        return f"no request; no GPU kernel for {n.op}{_dtype_suffix(n)}, so the first CPU"
    return f"no request; the highest-priority device with a {n.op} kernel"


def _soft_reason(group: _Group, matching: list[Device]) -> str:
    if not matching:
        return "no such device in this session"
    lacking = sorted({d.device_type for d in matching} - set(group.types))
    blockers = [m for m in group.members if any(t not in group.supported[m.name] for t in lacking)]
    who = blockers[0] if blockers else group.members[0]
    return (f"no {'/'.join(lacking)} kernel for {who.op}{_dtype_suffix(who)}"
            + (f" (node '{who.name}')" if len(group.members) > 1 else ""))


def _dtype_suffix(n: NodeDef) -> str:
    for attr in ("dtype", "T"):
        value = n.attr.get(attr)
        if value is not None and hasattr(value, "name"):
            return f" with {attr}={value.name}"
    return ""


# -- errors (TF_BEHAVIOUR 2.9 - 2.11) -----------------------------------------------------------

def _explicit_error(n: NodeDef, group: _Group, devices: list[Device]):
    requested = DeviceSpec.parse(n.device)
    info = _debug_info(group.members, group.supported)
    if requested == group.spec:
        if not any(requested.matches(d.spec) for d in devices):
            names = ", ".join(sorted(d.name for d in devices))
            return _wrap(n, f"Operation was explicitly assigned to {n.device} but available "
                            f"devices are [ {names} ]. Make sure the device specification refers "
                            "to a valid device.", errors.InvalidArgumentError)
        if requested.has_type:
            return _wrap(n, f"Could not satisfy explicit device specification '{n.device}' "
                            f"because no supported kernel for {requested.device_type} devices is "
                            f"available.{info}\nRegistered kernels:\n"
                            f"{registered_kernels_text(n.op)}", errors.InvalidArgumentError)
        return _wrap(n, f"Could not satisfy explicit device specification '{n.device}{info}",
                     errors.InvalidArgumentError)
    return _wrap(n, f"Could not satisfy explicit device specification '{n.device}' because the "
                    f"node {{{{colocation_node {n.name}}}}} was colocated with a group of nodes "
                    f"that required incompatible device '{group.spec}'{info}",
                 errors.InvalidArgumentError)


def _debug_info(members: list[NodeDef], supported=None) -> str:
    if len(members) <= 1:
        return ""
    types_by_op: dict[str, list[str]] = {}
    for m in members:
        types = supported[m.name] if supported else [t for t in ("GPU", "CPU")
                                                      if find_kernel(m, t)]
        types_by_op.setdefault(m.op, types)
    lines = ["\nColocation Debug Info:\nColocation group had the following types and devices: "]
    for op, types in types_by_op.items():
        lines.append(f"\n{op}: " + "".join(f"{t} " for t in types))
    lines.append("\n\nColocation members and user-requested devices:")
    for m in members:
        lines.append(f"\n  {m.name} ({m.op}) {m.device}")
    lines.append("\n")
    return "".join(lines)


def _input_types(n: NodeDef) -> str:
    return "[" + ", ".join(str(n.attr.get("T", "?")) for _ in n.data_inputs()) + "]"


def _wrap(n: NodeDef, detail: str, cls, extra: str = ""):
    site = n.defined_at()
    message = (f"Cannot assign a device for operation {n.name}: {detail}{extra}\n\t "
               f"[[node {n.name} (defined at {site}) = {n.summary().split(' = ', 1)[1]}]]")
    return cls(n, None, _NODE_TAG.sub(r"\1", message))
