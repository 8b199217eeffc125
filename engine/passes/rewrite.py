"""A small kit for GraphDef rewrite passes: unique names, a consumer index, copy-on-write
node edits (the input GraphDef is never mutated), rewiring, and `verify()`, which checks that a
rewritten graph is well formed before anyone runs or saves it. No torch, no runtime."""

from __future__ import annotations

import copy
import importlib
from collections.abc import Iterable

from engine import errors
from engine.graph_def import GraphDef, NodeDef, tensor_spelling, topological_order
from engine.graph_schema import parse_input


def tensor_key(spelling: str) -> tuple[str, int]:
    """("node", index) of a data input spelling ("node", "node:1"); "^node" is a control."""
    if spelling.startswith("^"):
        raise ValueError(f"{spelling!r} is a control input, not a tensor")
    return parse_input(spelling)


def tensor_name(spelling: str) -> str:
    """The canonical "node:N" name of a tensor spelling ("node" -> "node:0")."""
    src, index = tensor_key(spelling)
    return f"{src}:{index}"


class Rewriter:
    """Edits over one GraphDef. Nodes read through `node()` are the input's own objects and
    must not be changed; `edit()` returns a private copy that replaces the node. `result()`
    gives a new GraphDef in topological order; the input GraphDef is left as it was."""

    def __init__(self, graph_def: GraphDef):
        self.source = graph_def
        self._nodes: dict[str, NodeDef] = {n.name: n for n in graph_def.node}
        self._owned: set[str] = set()
        self._taken: set[str] = {n.lower() for n in self._nodes}
        # The consumer index is kept up to date edit by edit (rebuilding it after every
        # rewire made a pass quadratic in the graph's size): nodes that may have changed
        # since the last query are re-indexed at the next one. A node's position (its place
        # in the node order, as a full rebuild would meet it) keeps the consumers' order.
        self._position: dict[str, int] = {n: i for i, n in enumerate(self._nodes)}
        self._next_position = len(self._position)
        self._consumers: dict[str, dict[tuple[str, int], None]] = {}
        self._indexed: dict[str, list[tuple[str, int]]] = {}
        self._stale: set[str] = set(self._nodes)

    # -- reading -------------------------------------------------------------------------

    def __contains__(self, name: str) -> bool:
        return name in self._nodes

    def node(self, name: str) -> NodeDef:
        try:
            return self._nodes[name]
        except KeyError:
            raise errors.NotFoundError(None, None, f"Rewriter: no node named {name!r} in the "
                                                   "graph being rewritten") from None

    def nodes(self) -> list[NodeDef]:
        return list(self._nodes.values())

    def producer(self, spelling: str) -> NodeDef:
        return self.node(parse_input(spelling)[0])

    def consumers(self, spelling: str) -> list[tuple[str, int]]:
        """(consumer node, input slot) of every data edge reading the tensor; "^node" gives
        the nodes holding a control input on it (slot: its position in `input`), in node
        order."""
        self._refresh_index()
        key = spelling if spelling.startswith("^") else tensor_name(spelling)
        return sorted(self._consumers.get(key, ()),
                      key=lambda edge: (self._position[edge[0]], edge[1]))

    def _refresh_index(self) -> None:
        for name in self._stale:
            for key, slot in self._indexed.pop(name, ()):
                del self._consumers[key][(name, slot)]
            node = self._nodes.get(name)
            if node is not None:
                self._index(node)
        self._stale.clear()

    def _index(self, node: NodeDef) -> None:
        edges = []
        for slot, s in enumerate(node.input):
            key = s if s.startswith("^") else tensor_name(s)
            self._consumers.setdefault(key, {})[(node.name, slot)] = None
            edges.append((key, slot))
        self._indexed[node.name] = edges

    # -- names -----------------------------------------------------------------------------

    def unique_name(self, base: str) -> str:
        """`base` if no node has it (ignoring case, as graph files do), else base_1, base_2...;
        the name is reserved at once, so two calls never hand out the same one."""
        name, i = base, 0
        while name.lower() in self._taken:
            i += 1
            name = f"{base}_{i}"
        self._taken.add(name.lower())
        return name

    # -- edits -----------------------------------------------------------------------------

    def edit(self, name: str) -> NodeDef:
        """A private, mutable copy of the node, which takes its place."""
        n = self.node(name)
        if name not in self._owned:
            n = NodeDef(n.name, n.op, list(n.input), n.device, dict(n.attr), n.output_dtypes,
                        n.output_shapes, copy.deepcopy(n.meta))
            self._nodes[name] = n
            self._owned.add(name)
        self._stale.add(name)
        return n

    def add(self, node: NodeDef) -> NodeDef:
        """Adds a new node; its name must be free (take one from `unique_name`)."""
        if node.name in self._nodes:
            raise errors.InvalidArgumentError(None, None, f"Rewriter: cannot add node "
                                                          f"{node.name!r}: the name is taken")
        self._taken.add(node.name.lower())
        self._nodes[node.name] = node
        self._owned.add(node.name)
        self._position[node.name] = self._next_position
        self._next_position += 1
        self._stale.add(node.name)
        return node

    def replace(self, name: str, node: NodeDef) -> NodeDef:
        """Puts `node` where `name` was (node.name may differ from name; consumers are not
        rewired: give the new node the old name to keep them)."""
        self.remove(name)
        self._taken.discard(name.lower())
        return self.add(node)

    def remove(self, name: str) -> None:
        self.node(name)
        del self._nodes[name]
        self._owned.discard(name)
        self._stale.add(name)

    def rewire(self, old: str, new: str, exclude: Iterable[str] = ()) -> int:
        """Every data input reading tensor `old` reads `new` instead (except in the nodes
        named in `exclude`); returns how many inputs changed."""
        skip = set(exclude)
        spelling = tensor_spelling(*tensor_key(new))
        changed = 0
        for consumer, slot in self.consumers(old):
            if consumer in skip:
                continue
            self.edit(consumer).input[slot] = spelling
            changed += 1
        return changed

    def keep_only_needed(self, outputs: Iterable[str]) -> list[str]:
        """Drops every node that no output needs (data or control); returns their names."""
        needed: set[str] = set()
        stack = [parse_input(o.lstrip("^"))[0] for o in outputs]
        while stack:
            name = stack.pop()
            if name in needed or name not in self._nodes:
                continue
            needed.add(name)
            stack.extend(parse_input(s.lstrip("^"))[0] for s in self._nodes[name].input)
        dropped = [n for n in self._nodes if n not in needed]
        for name in dropped:
            self.remove(name)
        return dropped

    def result(self) -> GraphDef:
        """The rewritten graph, in topological order (the original order among ready nodes)."""
        nodes = list(self._nodes.values())
        try:
            nodes = topological_order(nodes)
        except errors.InvalidArgumentError:
            pass    # verify() names the cycle; the graph is returned for it to look at
        return GraphDef(nodes, version=self.source.version, source=self.source.source)


# -- verify ----------------------------------------------------------------------------------

def load_op_registry() -> None:
    """Op types register when their module is imported; engine.api imports every op module."""
    importlib.import_module("engine.api")


def _fail(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, f"verify: {message}")


def _check_names(graph_def: GraphDef) -> None:
    seen: dict[str, str] = {}
    for n in graph_def.node:
        if not n.name:
            raise _fail(f"a {n.op} node has an empty name (field 'name')")
        if n.name.lower() in seen:
            raise _fail(f"node '{n.name}', field 'name': duplicate node name (node "
                        f"'{seen[n.name.lower()]}' has the same name, ignoring case)")
        seen[n.name.lower()] = n.name


def _check_inputs(graph_def: GraphDef) -> None:
    by_name = {n.name: n for n in graph_def.node}
    for n in graph_def.node:
        for slot, spelling in enumerate(n.input):
            try:
                src, index = parse_input(spelling.lstrip("^"))
            except Exception:  # noqa: BLE001 - any unparsable spelling is the same mistake
                raise _fail(f"node '{n.name}', field 'input' [{slot}]: {spelling!r} is not "
                            "a tensor name ('node', 'node:N' or '^node')") from None
            if src not in by_name:
                raise _fail(f"node '{n.name}', field 'input' [{slot}]: {spelling!r} names "
                            f"node '{src}', which is not in the graph (a dangling input)")
            count = len(by_name[src].output_dtypes)
            if not spelling.startswith("^") and count and index >= count:
                raise _fail(f"node '{n.name}', field 'input' [{slot}]: {spelling!r} asks for "
                            f"output {index} of '{src}', which has {count} output(s)")


def verify(graph_def: GraphDef) -> dict[str, tuple[tuple, tuple]]:
    """Checks that a rewritten graph is well formed: unique names, every input names an
    existing node and an output it has, no cycle, and every node's op accepts the dtypes and
    shapes of its inputs and attrs (the registry's inference, run by importing the graph into
    a fresh Graph). Raises InvalidArgumentError naming the node and field; returns each node's
    inferred (output dtypes, output shapes)."""
    from engine.graph import Graph
    from engine.graph_def import import_graph_def

    load_op_registry()
    _check_names(graph_def)
    _check_inputs(graph_def)
    try:
        topological_order(graph_def.node)
    except errors.InvalidArgumentError as e:
        raise _fail(e.message) from None
    graph = Graph()
    try:
        import_graph_def(GraphDef(graph_def.node, source=graph_def.source or "rewritten graph"),
                         name="", graph=graph)
    except (errors.OpError, ValueError, TypeError) as e:
        raise _fail(getattr(e, "message", None) or str(e)) from None
    return {op.name: (tuple(t.dtype for t in op.outputs), tuple(t.shape for t in op.outputs))
            for op in graph.get_operations()}


def finish(rewriter: Rewriter) -> GraphDef:
    """The rewriter's result, verified, with every node's output dtypes and shapes filled in
    from inference (nodes a pass built leave them empty)."""
    graph_def = rewriter.result()
    inferred = verify(graph_def)
    nodes = []
    for n in graph_def.node:
        dts, shapes = inferred[n.name]
        if n.output_dtypes != dts or len(n.output_shapes) != len(shapes):
            n = NodeDef(n.name, n.op, n.input, n.device, n.attr, dts, shapes, n.meta)
        nodes.append(n)
    return GraphDef(nodes, version=graph_def.version, source=graph_def.source)
