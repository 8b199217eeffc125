"""The graph IR users build: Graph, Operation, Tensor. Unique names, name scopes, device
scopes (nested partial specs merge), control dependencies and colocation; every op keeps the
user code that created it in its metadata, which every pass carries along."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading

from engine import devices, dtypes
from engine.ops import registry
from engine.shapes import TensorShape

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\-/>]*$")
_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STACK_DEPTH = 8
logger = logging.getLogger("engine")


def _creation_stack() -> tuple[str, ...]:
    """The user frames that created an op (engine frames skipped), outermost first. Walking
    frames directly is ~20x cheaper than traceback.extract_stack, which matters at 10k ops."""
    frame = sys._getframe(2)
    found = []
    while frame is not None and len(found) < _STACK_DEPTH:
        filename = frame.f_code.co_filename
        if not filename.startswith(_ENGINE_DIR):
            found.append(f"{filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        frame = frame.f_back
    return tuple(reversed(found))


class Tensor:
    """One output of an Operation."""

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "__weakref__")
    # numpy must defer to our operator overloads (np.float32(2) * t).
    __array_priority__ = 100

    def __init__(self, op: Operation, value_index: int, dtype: dtypes.DType, shape: TensorShape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = shape

    @property
    def op(self) -> Operation:
        return self._op

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def graph(self) -> Graph:
        return self._op.graph

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    @property
    def device(self) -> str:
        return self._op.device

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        self._shape = self._shape.merge_with(TensorShape(shape))

    def consumers(self) -> list[Operation]:
        return [op for op in self.graph.get_operations()
                if any(t is self for t in op.inputs)]

    def eval(self, feed_dict=None, session=None):
        from engine.runtime.session import default_session_for
        return default_session_for(self.graph, session).run(self, feed_dict)

    def __repr__(self) -> str:
        return (f'<tf.Tensor "{self.name}" shape={self._shape} dtype={self._dtype.name}>')

    def __str__(self) -> str:
        return f'Tensor("{self.name}", shape={self._shape}, dtype={self._dtype.name})'

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        # TF1 graph tensors compare by identity, so they can be dict keys (feed_dict).
        return self is other

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not "
                        "None:` to test for a tensor, or build the condition into the graph.")

    def __iter__(self):
        raise TypeError("'Tensor' object is not iterable.")


class Operation:
    """A node: op type, inputs, attrs, requested device, and metadata (creation stack first)."""

    def __init__(self, graph: Graph, op_id: int, name: str, op_type: str, inputs: list[Tensor],
                 control_inputs: list[Operation], attrs: dict, device: str, meta: dict):
        self.graph = graph
        self._id = op_id
        self.name = name
        self.type = op_type
        self._inputs = tuple(inputs)
        self._control_inputs = list(control_inputs)
        self.attrs = attrs
        self.device = device
        self.meta = meta
        self.outputs: tuple[Tensor, ...] = ()
        self._control_flow_context = None

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return self._inputs

    @property
    def control_inputs(self) -> list[Operation]:
        return list(self._control_inputs)

    @property
    def op_def(self) -> registry.OpDef:
        return registry.get_op_def(self.type)

    @property
    def traceback(self) -> tuple[str, ...]:
        return self.meta.get("stack", ())

    def get_attr(self, name: str):
        try:
            return self.attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self.name}' has no attr named '{name}'.") from None

    def colocation_groups(self) -> list[str]:
        return list(self.attrs.get("_class", ())) or [f"loc:@{self.name}"]

    def values(self) -> tuple[Tensor, ...]:
        return self.outputs

    def _add_control_input(self, op: Operation) -> None:
        if op.graph is not self.graph:
            raise ValueError(f"Control input '{op.name}' is from a different graph than "
                             f"'{self.name}'.")
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            self.graph._bump_version()

    def _add_control_inputs(self, ops) -> None:
        for op in ops:
            self._add_control_input(op)

    def _remove_all_control_inputs(self) -> None:
        self._control_inputs = []
        self.graph._bump_version()

    def _update_input(self, index: int, tensor: Tensor) -> None:
        """Rewires data input `index` (TF's back edge into a loop's Merge, and the Switch or
        Enter a control-flow context puts in front of an outside value)."""
        if tensor.graph is not self.graph:
            raise ValueError(f"Tensor {tensor} must be from the same graph as '{self.name}'.")
        inputs = list(self._inputs)
        inputs[index] = tensor
        self._inputs = tuple(inputs)
        self.graph._bump_version()

    def _get_control_flow_context(self):
        """The cond branch or while loop the op was built in (None: the top level)."""
        return self._control_flow_context

    def _set_control_flow_context(self, ctx) -> None:
        self._control_flow_context = ctx

    def run(self, feed_dict=None, session=None) -> None:
        from engine.runtime.session import default_session_for
        default_session_for(self.graph, session).run(self, feed_dict)

    @property
    def node_def(self):
        return self.graph.node_def_of(self)

    def __repr__(self) -> str:
        return f'<tf.Operation "{self.name}" type={self.type}>'

    def __str__(self) -> str:
        return self.graph.node_def_of(self).summary()


class Graph:
    """A dataflow graph. Ops are added through the functions in engine.ops; the version
    counter changes with every mutation so sessions can cache plans per version."""

    def __init__(self):
        self._ops: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._name_stack = ""
        self._device_stack: list = []
        self._control_stack: list[list[Operation] | None] = []
        self._colocation_stack: list[Operation] = []
        self._collections: dict[str, list] = {}
        self._version = 0
        self._finalized = False
        self._seed = None
        self._graph_def_cache = None
        self._control_flow_context = None     # the cond branch / while body being built
        self._control_flow_used = False       # set by the first control-flow context
        self._lock = threading.RLock()

    # -- identity and lookup -------------------------------------------------------------

    @property
    def version(self) -> int:
        return self._version

    @property
    def finalized(self) -> bool:
        return self._finalized

    def finalize(self) -> None:
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        """TF's escape hatch for MonitoredSession, which finalizes the graph while it starts
        and must leave it as it was when starting fails."""
        self._finalized = False

    @property
    def seed(self) -> int | None:
        """The graph-level random seed (tf.set_random_seed); random ops derive theirs from it."""
        return self._seed

    @seed.setter
    def seed(self, seed: int | None) -> None:
        self._seed = seed

    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.") from None

    def get_tensor_by_name(self, name: str) -> Tensor:
        op_name, sep, index = name.rpartition(":")
        if not sep or not index.isdigit():
            raise ValueError(f"The name '{name}' looks like an (invalid) Operation name, not a "
                             "Tensor. Tensor names must be of the form "
                             "\"<op_name>:<output_index>\".")
        try:
            op = self._by_name[op_name]
        except KeyError:
            raise KeyError(f"The name '{name}' refers to a Tensor which does not exist. The "
                           f"operation, '{op_name}', does not exist in this graph.") from None
        if int(index) >= len(op.outputs):
            raise KeyError(f"The name '{name}' refers to a Tensor which does not exist. The "
                           f"operation, '{op_name}', exists but only has {len(op.outputs)} "
                           "outputs.")
        return op.outputs[int(index)]

    def as_graph_element(self, obj, allow_tensor: bool = True, allow_operation: bool = True):
        """Resolves a Tensor, Operation, Variable or name to an element of this graph."""
        if hasattr(obj, "_as_graph_element"):
            obj = obj._as_graph_element()
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
            raise ValueError(f"The name '{obj}' refers to an Operation, not a Tensor.")
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph.")
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"Operation {obj.name!r} is not an element of this graph.")
            return obj
        kinds = " or ".join(k for k, ok in (("Tensor", allow_tensor),
                                            ("Operation", allow_operation)) if ok)
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {kinds}.")

    # -- collections ---------------------------------------------------------------------

    def add_to_collection(self, name: str, value) -> None:
        self._collections.setdefault(name, []).append(value)

    def get_collection(self, name: str, scope: str | None = None) -> list:
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        pattern = re.compile(scope)
        return [i for i in items if pattern.match(getattr(i, "name", ""))]

    def get_collection_ref(self, name: str) -> list:
        return self._collections.setdefault(name, [])

    # -- naming --------------------------------------------------------------------------

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """TF's rule: names are unique case-insensitively; repeats get `_1`, `_2`, ..."""
        if self._name_stack:
            name = f"{self._name_stack}/{name}"
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base = key
            while key in self._names_in_use:
                key = f"{base}_{count}"
                count += 1
            if mark_as_used:
                self._names_in_use[key] = 1
            name = f"{name}_{count - 1}"
        return name

    def get_name_scope(self) -> str:
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name: str | None):
        if name:
            pattern = _VALID_SCOPE_NAME if self._name_stack else _VALID_OP_NAME
            if not pattern.match(name):
                raise ValueError(f"'{name}' is not a valid scope name. Scope names use letters, "
                                 "digits and _ . - / > (and may not start with _ . - at root).")
        old = self._name_stack
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield f"{new}/" if new else ""
        finally:
            self._name_stack = old

    # -- device, control and colocation scopes --------------------------------------------

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """String specs merge with outer scopes (inner fields win); a callable returns the
        device for each op; None ignores every outer scope."""
        entry = device_name_or_function
        if isinstance(entry, str):
            entry = devices.DeviceSpec.from_string(entry)
        elif isinstance(entry, devices.DeviceSpec) or entry is None or callable(entry):
            pass
        else:
            raise TypeError(f"tf.device expects a device string, DeviceSpec, function or None, "
                            f"got {type(entry).__name__}")
        self._device_stack.append(entry)
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """None clears the enclosing control dependencies and, as in TF, the control-flow
        context: ops made inside belong to no cond branch or loop until placed in one."""
        saved_context = self._control_flow_context
        if control_inputs is None:
            self._control_stack.append(None)
            self._control_flow_context = None
        else:
            ops = []
            for c in control_inputs:
                element = self.as_graph_element(c)
                ops.append(element.op if isinstance(element, Tensor) else element)
            self._control_stack.append(ops)
        try:
            yield
        finally:
            self._control_stack.pop()
            if control_inputs is None:
                self._control_flow_context = saved_context

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing: bool = False):
        if op is None:
            saved_coloc, self._colocation_stack = self._colocation_stack, []
            try:
                yield
            finally:
                self._colocation_stack = saved_coloc
            return
        element = self.as_graph_element(op)
        anchor = element.op if isinstance(element, Tensor) else element
        saved_devices, self._device_stack = self._device_stack, []
        saved_coloc = self._colocation_stack
        if ignore_existing:
            self._colocation_stack = []
        self._colocation_stack = self._colocation_stack + [anchor]
        try:
            yield
        finally:
            self._device_stack = saved_devices
            self._colocation_stack = saved_coloc

    def _current_control_inputs(self, inputs: list[Tensor]) -> list[Operation]:
        found: list[Operation] = []
        for entry in self._control_stack:
            if entry is None:
                found = []
            else:
                found.extend(op for op in entry if op not in found)
        input_ops = {id(t.op) for t in inputs}
        return [op for op in found if id(op) not in input_ops]

    def _apply_device_scopes(self, op: Operation) -> None:
        for entry in reversed(self._device_stack):
            if entry is None:
                break
            if callable(entry) and not isinstance(entry, devices.DeviceSpec):
                result = entry(op)
                spec = result if isinstance(result, devices.DeviceSpec) else \
                    devices.DeviceSpec.from_string(result or "")
                op.device = spec.to_string()
            else:
                current = devices.DeviceSpec.from_string(op.device)
                op.device = current.fill_from(entry).to_string()

    def _apply_colocation(self, op: Operation) -> None:
        groups = set()
        for anchor in self._colocation_stack:
            groups.update(anchor.colocation_groups())
        if not groups:
            return
        op.attrs["_class"] = sorted(groups)
        anchor = self._colocation_stack[-1]
        if not op.device:
            op.device = anchor.device
        elif anchor.device and op.device != anchor.device:
            logger.warning("Tried to colocate %s with an op %s that had a different device: %s vs "
                           "%s. Postponing error-checking until all devices are assigned.",
                           op.name, anchor.name, op.device, anchor.device)

    # -- mutation ------------------------------------------------------------------------

    def _bump_version(self) -> None:
        self._version += 1
        self._graph_def_cache = None

    def create_op(self, op_type: str, inputs, attrs: dict | None = None, name: str | None = None,
                  control_inputs=None) -> Operation:
        """Adds a node. Output dtypes and static shapes come from the op's definition."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        op_def = registry.get_op_def(op_type)
        inputs = list(inputs)
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError(f"Inputs of {op_type} must be Tensors, got {type(t).__name__}")
            if t.graph is not self:
                raise ValueError(f"Tensor {t} must be from the same graph as the {op_type} op "
                                 "being created.")
        with self._lock:
            # A name ending in "/" is a scope the caller already made unique (TF's convention).
            name = name[:-1] if name and name.endswith("/") else self.unique_name(name or op_type)
            if name in self._by_name:
                raise ValueError(f"Duplicate node name in graph: '{name}'")
            control = self._current_control_inputs(inputs)
            # A set, not list membership: an imported node may have thousands of them.
            seen = set(control)
            for c in control_inputs or ():
                if c not in seen:
                    seen.add(c)
                    control.append(c)
            op = Operation(self, len(self._ops), name, op_type, inputs, control,
                           dict(attrs or {}), "", {"stack": _creation_stack()})
            self._apply_device_scopes(op)
            self._apply_colocation(op)
            specs = op_def.infer(op)
            op.outputs = tuple(Tensor(op, i, dt, shape) for i, (dt, shape) in enumerate(specs))
            self._ops.append(op)
            self._by_name[name] = op
            self._bump_version()
            if self._control_flow_used:
                # Inside a cond branch or loop body the context may rewire the op's inputs
                # (through a Switch or an Enter) and add control inputs.
                from engine.ops.control_flow_context import post_process
                post_process(op)
        return op

    def _get_control_flow_context(self):
        return self._control_flow_context

    def _set_control_flow_context(self, ctx) -> None:
        self._control_flow_context = ctx

    # -- defaults and serialization -------------------------------------------------------

    @contextlib.contextmanager
    def as_default(self):
        _default_graph_stack().append(self)
        try:
            yield self
        finally:
            _default_graph_stack().pop()

    def node_def_of(self, op: Operation):
        from engine.graph_def import node_def_from_operation
        return node_def_from_operation(op)

    def as_graph_def(self):
        """The graph as plain data (engine.graph_def.GraphDef), cached per version."""
        from engine.graph_def import graph_def_from_graph
        with self._lock:
            if self._graph_def_cache is None or self._graph_def_cache.version != self._version:
                self._graph_def_cache = graph_def_from_graph(self)
            return self._graph_def_cache


_thread_local = threading.local()
_global_default_graph: list[Graph] = []


def _default_graph_stack() -> list[Graph]:
    stack = getattr(_thread_local, "stack", None)
    if stack is None:
        stack = _thread_local.stack = []
    return stack


def get_default_graph() -> Graph:
    stack = _default_graph_stack()
    if stack:
        return stack[-1]
    if not _global_default_graph:
        _global_default_graph.append(Graph())
    return _global_default_graph[0]


def reset_default_graph() -> None:
    if _default_graph_stack():
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. "
                             "If you need a cleared graph, exit the nesting and create a new "
                             "graph.")
    _global_default_graph.clear()
    _global_default_graph.append(Graph())
