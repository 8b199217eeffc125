"""GraphDef and NodeDef: the graph as plain data, the form every pass reads and writes.
Inputs are spelled "node", "node:1", "^node"; versioned JSON (de)serialization; importing a
GraphDef back into a Graph (with cycle and unknown-op checks); TF's one-line node summary."""

from __future__ import annotations

import base64
import heapq
import json
from dataclasses import dataclass, field

import numpy as np

from engine import dtypes, errors
from engine.shapes import TensorShape

JSON_FORMAT = "engine.graphdef"
JSON_VERSION = 1
_MAX_INLINE_VALUES = 1 << 16


@dataclass
class NodeDef:
    name: str
    op: str
    input: list[str] = field(default_factory=list)
    device: str = ""
    attr: dict = field(default_factory=dict)
    output_dtypes: tuple = ()          # DType per output
    output_shapes: tuple = ()          # TensorShape per output
    meta: dict = field(default_factory=dict)   # "stack" (creation site) and whatever passes add

    def data_inputs(self) -> list[str]:
        return [i for i in self.input if not i.startswith("^")]

    def control_inputs(self) -> list[str]:
        return [i[1:] for i in self.input if i.startswith("^")]

    def summary(self) -> str:
        """TF's SummarizeNodeDef: `{{node n}} = Op[a=v, _device="d"](inputs)`."""
        attrs = [f"{k}={format_attr(v)}" for k, v in sorted(self.attr.items())
                 if not k.startswith("_")]
        attrs += [f"{k}={format_attr(v)}" for k, v in sorted(self.attr.items())
                  if k.startswith("_")]
        if self.device:
            attrs.append(f'_device="{self.device}"')
        return f"{{{{node {self.name}}}}} = {self.op}[{', '.join(attrs)}]({', '.join(self.input)})"

    def defined_at(self) -> str:
        stack = self.meta.get("stack", ())
        return stack[-1] if stack else "<unknown>"


@dataclass
class GraphDef:
    node: list[NodeDef]
    version: int = 0

    def __post_init__(self):
        self._by_name = {n.name: n for n in self.node}

    def by_name(self, name: str) -> NodeDef:
        return self._by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def to_text(self) -> str:
        """One node a line, for golden-file tests and debugging."""
        lines = []
        for n in self.node:
            device = f" @ {n.device}" if n.device else ""
            lines.append(f"{n.name} = {n.op}({', '.join(n.input)}){device}")
        return "\n".join(lines) + "\n"


def parse_input(spelling: str) -> tuple[str, int]:
    """"a" -> ("a", 0); "a:2" -> ("a", 2); "^a" -> ("a", -1)."""
    if spelling.startswith("^"):
        return spelling[1:], -1
    name, sep, index = spelling.rpartition(":")
    if sep and index.isdigit():
        return name, int(index)
    return spelling, 0


def tensor_spelling(op_name: str, index: int) -> str:
    return op_name if index == 0 else f"{op_name}:{index}"


def format_attr(value) -> str:
    if isinstance(value, dtypes.DType):
        return value.proto_name
    if isinstance(value, TensorShape):
        return value.bracket_str()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, np.ndarray):
        dt = dtypes.as_dtype(value.dtype)
        flat = " ".join(str(v) for v in value.reshape(-1)[:10])
        return (f"Tensor<type: {dt.name} shape: {list(value.shape)} values: {flat}"
                f"{'...' if value.size > 10 else ''}>")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    return str(value)


# -- Graph -> GraphDef ------------------------------------------------------------------------

def node_def_from_operation(op) -> NodeDef:
    inputs = [tensor_spelling(t.op.name, t.value_index) for t in op.inputs]
    inputs += [f"^{c.name}" for c in op.control_inputs]
    return NodeDef(name=op.name, op=op.type, input=inputs, device=op.device, attr=dict(op.attrs),
                   output_dtypes=tuple(t.dtype for t in op.outputs),
                   output_shapes=tuple(t.shape for t in op.outputs), meta=dict(op.meta))


def graph_def_from_graph(graph) -> GraphDef:
    return GraphDef([node_def_from_operation(op) for op in graph.get_operations()],
                    version=graph.version)


# -- JSON ----------------------------------------------------------------------------------

def _encode_attr(value):
    if isinstance(value, dtypes.DType):
        return {"dtype": value.name}
    if isinstance(value, TensorShape):
        return {"shape": None if value.dims is None else list(value.dims)}
    if isinstance(value, np.ndarray):
        values = value.reshape(-1).tolist() if value.size <= _MAX_INLINE_VALUES else None
        if value.dtype == object and values is not None:
            values = [_encode_bytes(v) for v in values]
        return {"tensor": {"dtype": dtypes.as_dtype(value.dtype).name,
                           "shape": list(value.shape), "values": values}}
    if isinstance(value, (list, tuple)):
        return [_encode_attr(v) for v in value]
    if isinstance(value, (np.generic,)):
        return value.item()
    return value


def _encode_bytes(value: bytes):
    """A string tensor element: its text when it is UTF-8, else {"base64": ...}."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def _decode_bytes(value) -> bytes:
    return base64.b64decode(value["base64"]) if isinstance(value, dict) else value.encode()


def _decode_attr(value, where: str):
    if isinstance(value, dict):
        if "dtype" in value:
            return dtypes.as_dtype(value["dtype"])
        if "shape" in value:
            return TensorShape(value["shape"])
        if "tensor" in value:
            t = value["tensor"]
            if t.get("values") is None:
                raise ValueError(f"{where}: tensor attr has no values (it was too large to inline)")
            dt = dtypes.as_dtype(t["dtype"])
            values = [_decode_bytes(v) for v in t["values"]] if dt.is_string else t["values"]
            return np.asarray(values, dtype=dt.numpy_dtype).reshape(t["shape"])
        raise ValueError(f"{where}: unknown attr encoding with keys {sorted(value)}")
    if isinstance(value, list):
        return [_decode_attr(v, where) for v in value]
    return value


def node_to_json(n: NodeDef) -> dict:
    return {"name": n.name, "op": n.op, "input": list(n.input), "device": n.device,
            "attr": {k: _encode_attr(v) for k, v in n.attr.items()},
            "output_dtypes": [d.name for d in n.output_dtypes],
            "output_shapes": [None if s.dims is None else list(s.dims) for s in n.output_shapes],
            "stack": list(n.meta.get("stack", ()))}


def graph_def_to_json(graph_def: GraphDef, strip_prefix: str = "") -> str:
    """One node per line (diff-friendly). `strip_prefix` is removed from creation-site paths,
    so files written from a checkout do not carry the machine's absolute paths."""
    head = json.dumps({"format": JSON_FORMAT, "version": JSON_VERSION,
                       "graph_version": graph_def.version})
    lines = []
    for n in graph_def.node:
        doc = node_to_json(n)
        if strip_prefix:
            doc["stack"] = [s[len(strip_prefix):] if s.startswith(strip_prefix) else s
                            for s in doc["stack"]]
        lines.append(json.dumps(doc, separators=(",", ":")))
    return head[:-1] + ', "node": [\n' + ",\n".join(lines) + "\n]}\n"


def graph_def_from_json(text: str, source: str = "<string>") -> GraphDef:
    """Parses the JSON form. Errors name the file (`source`), the node and the field."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{source}: not valid JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != JSON_FORMAT:
        raise ValueError(f"{source}: not an {JSON_FORMAT} document (field 'format')")
    if doc.get("version") != JSON_VERSION:
        raise ValueError(f"{source}: unsupported version {doc.get('version')!r} "
                         f"(field 'version'; this build reads {JSON_VERSION})")
    nodes = []
    for i, raw in enumerate(doc.get("node", [])):
        where = f"{source}: node[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) \
                or not isinstance(raw.get("op"), str):
            raise ValueError(f"{where}: needs string fields 'name' and 'op'")
        where = f"{source}: node '{raw['name']}'"
        nodes.append(NodeDef(
            name=raw["name"], op=raw["op"], input=list(raw.get("input", [])),
            device=raw.get("device", ""),
            attr={k: _decode_attr(v, f"{where} attr '{k}'")
                  for k, v in raw.get("attr", {}).items()},
            meta={"stack": tuple(raw.get("stack", ()))}))
    return GraphDef(nodes, version=doc.get("graph_version", 0))


# -- GraphDef -> Graph ------------------------------------------------------------------------

def topological_order(nodes: list[NodeDef]) -> list[NodeDef]:
    """Kahn's algorithm over data and control inputs, taking ready nodes in their original
    order (so a graph built in order stays in order); a cycle raises InvalidArgumentError
    naming the nodes on it."""
    by_name = {n.name: n for n in nodes}
    position = {n.name: i for i, n in enumerate(nodes)}
    pending = {}
    consumers: dict[str, list[str]] = {n.name: [] for n in nodes}
    for n in nodes:
        preds = set()
        for spelling in n.input:
            src, _ = parse_input(spelling)
            if src not in by_name:
                raise errors.InvalidArgumentError(
                    None, None, f"Node '{n.name}': input '{spelling}' refers to a node that is not "
                                "in the graph.")
            preds.add(src)
        pending[n.name] = len(preds)
        for p in preds:
            consumers[p].append(n.name)
    ready = [position[n.name] for n in nodes if pending[n.name] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        node = nodes[heapq.heappop(ready)]
        order.append(node)
        for c in consumers[node.name]:
            pending[c] -= 1
            if pending[c] == 0:
                heapq.heappush(ready, position[c])
    if len(order) != len(nodes):
        stuck = [n for n in nodes if pending[n.name] > 0]
        raise errors.InvalidArgumentError(
            None, None, "Graph contains a cycle through nodes: "
            + ", ".join(sorted(n.name for n in _cycle_members(stuck)))
            + ". Dataflow graphs must be acyclic; remove one of these inputs.")
    return order


def _cycle_members(stuck: list[NodeDef]) -> list[NodeDef]:
    """Nodes left after Kahn's algorithm include downstream ones; keep those that can reach
    themselves, i.e. the cycle itself."""
    names = {n.name for n in stuck}
    preds = {n.name: {parse_input(i)[0] for i in n.input} & names for n in stuck}
    changed = True
    while changed:
        changed = False
        for name in list(names):
            if not any(name in preds[other] for other in names if other != name) \
                    and name not in preds[name]:
                names.discard(name)
                changed = True
    return [n for n in stuck if n.name in names]


def import_graph_def(graph_def: GraphDef, graph=None, name: str = "import"):
    """Adds the nodes of `graph_def` to `graph` (default graph) under the `name/` prefix and
    returns the created operations in the file's order."""
    from engine.graph import get_default_graph
    from engine.ops import registry
    graph = graph or get_default_graph()
    for n in graph_def.node:
        registry.get_op_def(n.op, n.name)
    order = topological_order(graph_def.node)
    prefix = f"{name}/" if name else ""
    created = {}
    for n in order:
        inputs, controls = [], []
        for spelling in n.input:
            src, index = parse_input(spelling)
            op = created[src]
            if index < 0:
                controls.append(op)
            elif index >= len(op.outputs):
                raise ValueError(f"Node '{n.name}': input '{spelling}' asks for output {index} "
                                 f"but '{src}' has {len(op.outputs)} outputs")
            else:
                inputs.append(op.outputs[index])
        attrs = {k: v for k, v in n.attr.items()}
        if "_class" in attrs:
            attrs["_class"] = [f"loc:@{prefix}{c[5:]}" for c in attrs["_class"]]
        with graph.name_scope(None), graph.device(n.device or None):
            op = graph.create_op(n.op, inputs, attrs, name=prefix + n.name,
                                 control_inputs=controls)
        if n.meta.get("stack"):
            op.meta["stack"] = tuple(n.meta["stack"])
        created[n.name] = op
    return [created[n.name] for n in graph_def.node]
