"""GraphDef and NodeDef: the graph as plain data, the form every pass reads and writes.
Inputs are spelled "node", "node:1", "^node"; the JSON string forms (schema in graph_json.py);
TF's import_graph_def back into a Graph (input_map, return_elements, cycle, unknown-op and
colocation checks); TF's one-line node summary."""

from __future__ import annotations

import contextlib
import heapq
import logging
from dataclasses import dataclass, field

import numpy as np

from engine import dtypes, errors, graph_json
from engine.graph_json import JSON_FORMAT, JSON_VERSION  # noqa: F401 - read here by callers
from engine.ops import registry
from engine.shapes import TensorShape

logger = logging.getLogger("engine")


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
    source: str = ""          # the file it was read from, for error messages

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


# -- JSON (the schema and its checks live in engine/graph_json.py) ----------------------------

def node_to_json(n: NodeDef) -> dict:
    """The JSON object of one node; constants above graph_json.MAX_ELIDED_INLINE_VALUES
    elements are elided (the run store's form)."""
    return graph_json.encode_node(n)


def graph_def_to_json(graph_def: GraphDef, strip_prefix: str = "") -> str:
    """The current schema version as a string, every constant inline except the elided
    large ones (engine.save_graph keeps those in a side .npz)."""
    return graph_json.document_to_json(graph_def, strip_prefix)


def graph_def_from_json(text: str, source: str = "<string>") -> GraphDef:
    """Parses the JSON form (version 1 or 2, without side arrays). Errors name the file
    (`source`), the node and the field."""
    header, fields, _ = graph_json.document_from_json(text, source)
    return GraphDef([NodeDef(**f) for f in fields], version=header["graph_version"],
                    source=source)


# -- GraphDef -> Graph ------------------------------------------------------------------------

_MERGES = ("Merge", "RefMerge")
_NEXT_ITERATIONS = ("NextIteration", "RefNextIteration")


def is_back_edge(producer: NodeDef, consumer: NodeDef) -> bool:
    """A while loop's NextIteration -> Merge edge: the one edge a legal cycle goes through
    (TF's rule), left out of the topological order."""
    return consumer.op in _MERGES and producer.op in _NEXT_ITERATIONS


def topological_order(nodes: list[NodeDef]) -> list[NodeDef]:
    """Kahn's algorithm over data and control inputs, taking ready nodes in their original
    order (so a graph built in order stays in order); loop back edges (is_back_edge) do not
    count. Any other cycle raises InvalidArgumentError naming the nodes on it."""
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
            if not is_back_edge(by_name[src], n):
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
    """Nodes left after Kahn's algorithm include the ones downstream of a cycle; keep those on
    one: the members of strongly connected components with more than one node, or with a self
    loop (Tarjan's algorithm, iterative, so linear in the graph and safe for deep chains)."""
    by_name = {n.name: n for n in stuck}
    preds = {n.name: [p for p in dict.fromkeys(parse_input(i)[0] for i in n.input)
                      if p in by_name and not is_back_edge(by_name[p], n)]
             for n in stuck}
    on_cycle = set()
    for component in _strongly_connected_components(list(preds), preds):
        if len(component) > 1 or component[0] in preds[component[0]]:
            on_cycle.update(component)
    return [n for n in stuck if n.name in on_cycle]


def _strongly_connected_components(vertices: list[str], edges: dict[str, list[str]]):
    """Tarjan's SCCs of the graph vertex -> edges[vertex], with an explicit stack."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in vertices:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            vertex, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(edges[succ])))
                    break
                if succ in on_stack:
                    low[vertex] = min(low[vertex], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[vertex])
                if low[vertex] == index[vertex]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == vertex:
                            break
                    yield component


def import_graph_def(graph_def: GraphDef, input_map=None, return_elements=None, name=None,
                     op_dict=None, producer_op_list=None, *, graph=None):
    """tf.import_graph_def: adds the nodes of `graph_def` to `graph` (default: the default
    graph) under the unique scope `name` (default "import"; "" for none), feeding the inputs
    named in `input_map` ("node:N" or "^node" -> Tensor) from the given tensors instead.
    Returns the Tensors ("node:N") and Operations ("node") named in `return_elements`, or None.
    Nodes keep their requested devices, colocation groups (`_class`, renamed with the prefix),
    creation stacks and, without an input_map, their saved static shapes."""
    from engine.graph import get_default_graph
    if not isinstance(graph_def, GraphDef):
        raise TypeError("graph_def must be a GraphDef proto.")
    if op_dict is not None or producer_op_list is not None:
        logger.warning("import_graph_def: op_dict and producer_op_list are deprecated and "
                       "ignored, as in TensorFlow.")
    graph = graph or get_default_graph()
    where = f"{graph_def.source}: " if graph_def.source else ""
    mapped = _checked_input_map(input_map, graph, graph_def)
    _check_names(graph_def, where, return_elements)
    try:
        for n in graph_def.node:
            registry.get_op_def(n.op, n.name)
        order = topological_order(graph_def.node)
    except errors.OpError as e:
        raise type(e)(None, None, where + e.message) from None
    with graph.as_default():
        if name == "":
            prefix = ""
        else:
            with graph.name_scope(name or "import") as prefix:
                pass
        with graph.name_scope(None):
            final = {n.name: graph.unique_name(prefix + n.name) for n in graph_def.node}
        created: dict[str, object] = {}
        back_edges: list[tuple] = []
        for n in order:
            created[n.name] = _import_node(graph, n, created, final, mapped, where, back_edges)
        for merge, slot, src, index in back_edges:
            _wire_back_edge(merge, slot, created[src], index, where)
    return _return_elements(return_elements, created, graph_def)


def _checked_input_map(input_map, graph, graph_def: GraphDef) -> dict:
    if input_map is None:
        return {}
    if not isinstance(input_map, dict) or not all(isinstance(k, str) for k in input_map):
        raise TypeError("input_map must be a dictionary mapping strings to Tensor objects.")
    used = {i if i.startswith("^") or ":" in i else f"{i}:0" for n in graph_def.node
            for i in n.input}
    mapped = {}
    for key, value in input_map.items():
        spelling = key if key.startswith("^") or ":" in key else f"{key}:0"
        target = value.op if key.startswith("^") and hasattr(value, "op") else value
        if getattr(target, "graph", None) is not graph:
            raise ValueError(f"input_map value for {key!r} must be a Tensor of the graph being "
                             f"imported into, got {target!r}")
        mapped[spelling] = target
    missing = sorted(k for k in mapped if k not in used)
    if missing:
        raise ValueError("Attempted to map inputs that were not found in graph_def: "
                         f"[{', '.join(missing)}]")
    return mapped


def _check_names(graph_def: GraphDef, where: str, return_elements) -> None:
    seen: set[str] = set()
    for n in graph_def.node:
        if n.name.lower() in seen:
            raise ValueError(f"{where}node '{n.name}': duplicate node name (node names are "
                             "unique, ignoring case)")
        seen.add(n.name.lower())
    if return_elements is not None and (isinstance(return_elements, str) or not all(
            isinstance(r, str) for r in return_elements)):
        raise TypeError("return_elements must be a list of strings.")


def _import_node(graph, n: NodeDef, created: dict, final: dict, mapped: dict, where: str,
                 back_edges: list):
    inputs, controls, later = [], [], []
    for slot, spelling in enumerate(n.data_inputs()):
        src, index = parse_input(spelling)
        if src not in created:
            later.append((slot, src, index))    # a loop's back edge: wired once src exists
            inputs.append(None)
        else:
            inputs.append(_data_input(n, slot, spelling, created, mapped, where))
    if later:
        # As TF builds a loop: the Merge first takes its entering value in every slot.
        entering = next((t for t in inputs if t is not None), None)
        if entering is None:
            raise ValueError(f"{where}node '{n.name}': a {n.op} needs an input from outside "
                             "the loop")
        inputs = [entering if t is None else t for t in inputs]
    for src in n.control_inputs():
        target = mapped.get(f"^{src}", created[src])
        controls.append(target)
    attrs = dict(n.attr)
    if "_class" in attrs:
        attrs["_class"] = [_renamed_group(g, final, n, where) for g in attrs["_class"]]
    # Colocated nodes take their group's device, not the device scopes around the import.
    with contextlib.ExitStack() as scopes:
        scopes.enter_context(graph.name_scope(None))
        scopes.enter_context(graph.control_dependencies(None))
        scopes.enter_context(graph.colocate_with(None))
        try:
            if "_class" in attrs:
                scopes.enter_context(graph.device(None))
            if n.device:
                scopes.enter_context(graph.device(n.device))
            op = graph.create_op(n.op, inputs, attrs, name=final[n.name] + "/",
                                 control_inputs=controls)
        except errors.OpError as e:
            raise type(e)(None, None, where + e.message) from None
        except Exception as e:  # noqa: BLE001 - infer functions trust attrs a file may lack
            raise ValueError(f"{where}node '{n.name}': cannot import a {n.op} with these "
                             f"inputs and attrs ({type(e).__name__}: {e})") from None
    _check_outputs(op, n, where, keep_shapes=not mapped)
    if n.meta.get("stack"):
        op.meta["stack"] = tuple(n.meta["stack"])
    back_edges.extend((op, slot, src, index) for slot, src, index in later)
    return op


def _data_input(n: NodeDef, slot: int, spelling: str, created: dict, mapped: dict, where: str):
    src, index = parse_input(spelling)
    key = f"{src}:{index}"
    producer = created[src]
    if key in mapped:
        tensor = mapped[key]
        expected = producer.outputs[index].dtype.base_dtype \
            if index < len(producer.outputs) else None
        if expected is not None and tensor.dtype.base_dtype is not expected:
            raise ValueError(f"Input {slot} of node {n.name} was passed "
                             f"{tensor.dtype.base_dtype.name} from {tensor.name} incompatible "
                             f"with expected {expected.name}.")
        return tensor
    if index >= len(producer.outputs):
        raise ValueError(f"{where}node '{n.name}': input '{spelling}' asks for output {index} "
                         f"but '{src}' has {len(producer.outputs)} outputs")
    return producer.outputs[index]


def _wire_back_edge(merge, slot: int, producer, index: int, where: str) -> None:
    if index >= len(producer.outputs):
        raise ValueError(f"{where}node '{merge.name}': input {slot} asks for output {index} but "
                         f"'{producer.name}' has {len(producer.outputs)} outputs")
    value = producer.outputs[index]
    if value.dtype.base_dtype is not merge.inputs[slot].dtype.base_dtype:
        raise ValueError(f"{where}node '{merge.name}': input {slot} from '{producer.name}' is "
                         f"{value.dtype.name}, its other inputs are "
                         f"{merge.inputs[slot].dtype.name}")
    merge._update_input(slot, value)


def _renamed_group(group: str, final: dict, n: NodeDef, where: str) -> str:
    anchor = group[5:] if group.startswith("loc:@") else None
    if anchor not in final:
        raise ValueError(f"{where}node '{n.name}': specified colocation to an op that does not "
                         f"exist during import: {anchor or group} (attr '_class')")
    return f"loc:@{final[anchor]}"


def _check_outputs(op, n: NodeDef, where: str, keep_shapes: bool) -> None:
    """The saved output dtypes must be what the op gives; saved shapes (which may carry a
    set_shape the op cannot infer) are merged back in."""
    for t in op.outputs:
        if not isinstance(t.dtype, dtypes.DType) or not isinstance(t.shape, TensorShape):
            raise ValueError(f"{where}node '{n.name}': its attrs do not describe a {n.op} "
                             f"(output {t.value_index} came out as {t.dtype!r}, {t.shape!r})")
    if n.output_dtypes:
        got = [t.dtype for t in op.outputs]
        if list(n.output_dtypes) != got:
            raise ValueError(f"{where}node '{n.name}': field 'output_dtypes' says "
                             f"{[d.name for d in n.output_dtypes]} but a {n.op} with these "
                             f"inputs and attrs gives {[d.name for d in got]}")
    if keep_shapes and n.output_shapes:
        if len(n.output_shapes) != len(op.outputs):
            raise ValueError(f"{where}node '{n.name}': field 'output_shapes' lists "
                             f"{len(n.output_shapes)} outputs, the op has {len(op.outputs)}")
        for t, shape in zip(op.outputs, n.output_shapes):
            if not t.shape.is_compatible_with(shape):
                raise ValueError(f"{where}node '{n.name}': field 'output_shapes' says "
                                 f"{shape} for output {t.value_index}, the op gives {t.shape}")
            t.set_shape(shape)


def _return_elements(return_elements, created: dict, graph_def: GraphDef):
    if return_elements is None:
        return None
    out = []
    for r in return_elements:
        src, sep, index = r.rpartition(":")
        if sep and index.isdigit():
            if src not in created:
                raise ValueError(f"Requested return tensor '{r}' not found in graph def")
            op = created[src]
            if int(index) >= len(op.outputs):
                raise ValueError(f"Invalid return output {index} of node '{src}', which has "
                                 f"{len(op.outputs)} output(s)")
            out.append(op.outputs[int(index)])
        elif r in created:
            out.append(created[r])
        else:
            raise ValueError(f"Requested return node '{r}' not found in graph def")
    return out
