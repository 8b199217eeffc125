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

from engine import dtypes, errors, graph_json, graph_schema
from engine.graph_json import JSON_FORMAT, JSON_VERSION  # noqa: F401 - read here by callers
from engine.graph_schema import GraphFileError, a_an, field_at, node_at, parse_input
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


def graph_def_from_json(text: str | bytes, source: str = "<string>") -> GraphDef:
    """Parses the JSON form (text, or UTF-8 bytes; version 1 or 2, without side arrays), checked
    against the schema (engine/graph_schema.py): a document that breaks it raises GraphFileError
    naming the file (`source`), the node and the field."""
    return graph_def_from_document(text, source)[0]


def graph_def_from_document(text: str | bytes, source: str, open_arrays=None,
                            runtime: bool = False) -> tuple[GraphDef, dict]:
    """The checked GraphDef of a JSON document and its raw collections; `open_arrays(name,
    version)` opens the arrays a version 2 or 3 document names; `runtime`: a plan's partition,
    which may hold the runtime's _Send/_Recv/_Arg/_Retval nodes (engine/runtime/plan_spec.py)."""
    header, fields, collections = graph_json.document_from_json(text, source, open_arrays,
                                                                runtime)
    nodes = [NodeDef(**f) for f in fields]
    index_of = graph_schema.check_names_and_references(nodes, source, runtime)
    _check_acyclic(nodes, source)
    graph_schema.check_ops(nodes, source, index_of, runtime)
    return GraphDef(nodes, version=header["graph_version"], source=source), collections


def _check_acyclic(nodes: list[NodeDef], source: str) -> None:
    """A cycle is named by its members, located at the first of them in the file."""
    order = _ready_order(nodes)
    if len(order) != len(nodes):
        members = _cycle(nodes, order)
        names = {n.name for n in members}
        first = next(i for i, n in enumerate(nodes) if n.name in names)
        where = field_at(node_at(source, first, nodes[first].name), "input")
        raise GraphFileError(None, None, f"{where}: {_cycle_message(members)}")


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
    order = _ready_order(nodes)
    if len(order) != len(nodes):
        raise errors.InvalidArgumentError(None, None, _cycle_message(_cycle(nodes, order)))
    return order


def _ready_order(nodes: list[NodeDef]) -> list[NodeDef]:
    """Kahn's order of the nodes not on or behind a cycle (loop back edges left out)."""
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
    return order


def _cycle(nodes: list[NodeDef], order: list[NodeDef]) -> list[NodeDef]:
    done = {n.name for n in order}
    return _cycle_members([n for n in nodes if n.name not in done])


def _cycle_message(members: list[NodeDef]) -> str:
    return ("Graph contains a cycle through nodes: " + ", ".join(sorted(n.name for n in members))
            + ". Dataflow graphs must be acyclic; remove one of these inputs.")


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
    source = graph_def.source or "graph_def"
    mapped = _checked_input_map(input_map, graph, graph_def)
    _check_names(graph_def, source, return_elements)
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
        position = {n.name: i for i, n in enumerate(graph_def.node)}
        back_edges: list[tuple] = []
        for n in order:
            at = node_at(source, position[n.name], n.name)
            created[n.name] = _import_node(graph, n, created, final, mapped, at, back_edges)
        for merge, slot, src, index, at in back_edges:
            _wire_back_edge(merge, slot, created[src], index, at)
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


def _check_names(graph_def: GraphDef, source: str, return_elements) -> None:
    seen: dict[str, int] = {}
    for i, n in enumerate(graph_def.node):
        if n.name.lower() in seen:
            where = field_at(node_at(source, i, n.name), "name")
            raise GraphFileError(None, None, f"{where}: duplicate node name: node "
                                             f"{seen[n.name.lower()]} has the same name (node "
                                             "names are unique, ignoring case)")
        seen[n.name.lower()] = i
    if return_elements is not None and (isinstance(return_elements, str) or not all(
            isinstance(r, str) for r in return_elements)):
        raise TypeError("return_elements must be a list of strings.")


def _import_node(graph, n: NodeDef, created: dict, final: dict, mapped: dict, at: str,
                 back_edges: list):
    """`at` locates the node ("g.json: node 3 ('x')") for errors. A loop's back edge (an input
    not created yet: the order leaves NextIteration -> Merge out) joins `back_edges`, to be
    wired once its source exists."""
    inputs, controls, later = [], [], []
    for slot, spelling in enumerate(n.data_inputs()):
        src, index = parse_input(spelling)
        if src not in created:
            later.append((slot, src, index))
            inputs.append(None)
        else:
            inputs.append(_data_input(n, slot, spelling, created, mapped, at))
    if later:
        # As TF builds a loop: the Merge first takes its entering value in every slot.
        entering = next((t for t in inputs if t is not None), None)
        if entering is None:
            raise GraphFileError(None, None, f"{field_at(at, 'input')}: a {n.op} needs an "
                                             "input from outside the loop")
        inputs = [entering if t is None else t for t in inputs]
    for src in n.control_inputs():
        target = mapped.get(f"^{src}", created[src])
        controls.append(target)
    attrs = dict(n.attr)
    if "_class" in attrs:
        attrs["_class"] = [_renamed_group(g, final, field_at(at, "attr", "_class", j))
                           for j, g in enumerate(attrs["_class"])]
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
            raise type(e)(None, None, f"{at}: {e.message}") from None
        # Shape inference raises TF's ValueError for inputs that cannot work together, and
        # may trip over attrs of the right type but a wrong value (a stride list too short).
        except Exception as e:  # noqa: BLE001
            raise GraphFileError(None, None, f"{at}, fields 'input' and 'attr': cannot import a "
                                             f"{n.op} with these inputs and attrs "
                                             f"({type(e).__name__}: {e})") from None
    _check_outputs(op, n, at, keep_shapes=not mapped)
    if n.meta.get("stack"):
        op.meta["stack"] = tuple(n.meta["stack"])
    back_edges.extend((op, slot, src, index, at) for slot, src, index in later)
    return op


def _data_input(n: NodeDef, slot: int, spelling: str, created: dict, mapped: dict, at: str):
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
        raise GraphFileError(None, None, f"{field_at(at, 'input', slot)}: {spelling!r} names "
                                         f"output {index} of {src!r}, which has "
                                         f"{len(producer.outputs)} outputs")
    return producer.outputs[index]


def _wire_back_edge(merge, slot: int, producer, index: int, at: str) -> None:
    where = field_at(at, "input", slot)
    if index >= len(producer.outputs):
        raise GraphFileError(None, None, f"{where}: asks for output {index} but "
                                         f"'{producer.name}' has {len(producer.outputs)} outputs")
    value = producer.outputs[index]
    if value.dtype.base_dtype is not merge.inputs[slot].dtype.base_dtype:
        raise GraphFileError(None, None, f"{where}: '{producer.name}' gives "
                                         f"{value.dtype.name}, the Merge's other inputs are "
                                         f"{merge.inputs[slot].dtype.name}")
    merge._update_input(slot, value)


def _renamed_group(group: str, final: dict, where: str) -> str:
    anchor = group[5:] if group.startswith("loc:@") else None
    if anchor not in final:
        raise GraphFileError(None, None, f"{where}: specified colocation to an op that does not "
                                         f"exist during import: {anchor or group}")
    return f"loc:@{final[anchor]}"


def _check_outputs(op, n: NodeDef, at: str, keep_shapes: bool) -> None:
    """The saved output dtypes must be what the op gives; saved shapes (which may carry a
    set_shape the op cannot infer) are merged back in."""
    for t in op.outputs:
        if not isinstance(t.dtype, dtypes.DType) or not isinstance(t.shape, TensorShape):
            raise GraphFileError(None, None, f"{at}, field 'attr': its attrs do not describe a "
                                             f"{n.op} (output {t.value_index} came out as "
                                             f"{t.dtype!r}, {t.shape!r})")
    if n.output_dtypes:
        got = [t.dtype for t in op.outputs]
        if list(n.output_dtypes) != got:
            saved = [d.name for d in n.output_dtypes]
            raise GraphFileError(None, None, f"{at}, field 'output_dtypes': says {saved} but "
                                             f"{a_an(n.op)} with these inputs and attrs gives "
                                             f"{[d.name for d in got]}")
    if keep_shapes and n.output_shapes:
        if len(n.output_shapes) != len(op.outputs):
            raise GraphFileError(None, None, f"{at}, field 'output_shapes': lists "
                                             f"{len(n.output_shapes)} outputs, the op has "
                                             f"{len(op.outputs)}")
        for t, shape in zip(op.outputs, n.output_shapes):
            if not t.shape.is_compatible_with(shape):
                raise GraphFileError(None, None, f"{field_at(at, 'output_shapes', t.value_index)}"
                                                 f": says {shape}, the op gives {t.shape}")
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
