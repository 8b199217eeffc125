"""A PyTorch nn.Module's graph as a run-store GraphRecord: traced with torch.fx, module paths
as name scopes (`blocks.0.conv` is the node `blocks/0/conv`, its parameters
`blocks/0/conv/weight`), shapes and dtypes from one run on example inputs when given."""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import torch
import torch.fx
from torch import nn
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

from engine.record.schema import GraphRecord, NodeRecord, TensorSpec

_STACK_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')
ATTR_TEXT_LIMIT = 200          # a module's extra_repr can be long (a Sequential's children)


class ModuleGraphError(ValueError):
    """The module cannot be traced or run on the example inputs; says which and why."""


def module_graph(module: nn.Module, example_inputs: Iterable[Any] = (),
                 concrete_args: Mapping[str, Any] | None = None) -> GraphRecord:
    """The graph of `module.forward`. Each call of a submodule is one node named by its path
    with the submodule's class as op (nn.Linear -> `Linear`), each function or tensor method
    called inside a module is a node in that module's scope (`blocks/0/relu`), each
    parameter a `Parameter` node feeding its module. With example inputs the module runs once
    (under no_grad) so every node carries its output shapes and dtypes."""
    graph_module = _traced(module, concrete_args)
    example_inputs = tuple(example_inputs)
    if example_inputs:
        _propagate_shapes(graph_module, module, example_inputs)
    return GraphRecord(version=0, nodes=tuple(_Converter(graph_module).nodes()))


def _traced(module: nn.Module, concrete_args) -> torch.fx.GraphModule:
    if not isinstance(module, nn.Module):
        raise TypeError(f"module_graph expects a torch.nn.Module, got {type(module).__name__}")
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True        # the inspector's creation site
    try:
        graph = tracer.trace(module, concrete_args=concrete_args)
    except Exception as exc:  # noqa: BLE001 -- fx raises many kinds; all mean "not traceable"
        raise ModuleGraphError(
            f"cannot trace {type(module).__name__} with torch.fx: {type(exc).__name__}: "
            f"{exc}. Python control flow that depends on tensor values cannot be traced; "
            f"fix those arguments with concrete_args={{name: value}}") from exc
    return torch.fx.GraphModule(tracer.root, graph, type(module).__name__)


def _propagate_shapes(graph_module: torch.fx.GraphModule, module: nn.Module,
                      example_inputs: tuple) -> None:
    try:
        with torch.no_grad():
            ShapeProp(graph_module).propagate(*example_inputs)
    except Exception as exc:  # noqa: BLE001 -- the user's forward failed on their inputs
        cause = exc.__cause__ or exc
        raise ModuleGraphError(
            f"{type(module).__name__} failed on the example inputs "
            f"({_shapes_text(example_inputs)}): {type(cause).__name__}: {cause}") from exc


def _shapes_text(values: tuple) -> str:
    return ", ".join(f"{tuple(v.shape)} {str(v.dtype).removeprefix('torch.')}"
                     if isinstance(v, torch.Tensor) else type(v).__name__ for v in values)


class _Converter:
    """fx nodes -> NodeRecords, with names unique per scope as TensorFlow makes them."""

    def __init__(self, graph_module: torch.fx.GraphModule) -> None:
        self.root = graph_module
        self.names: dict[torch.fx.Node, str] = {}
        self.taken: set[str] = set()
        self.outputs: dict[torch.fx.Node, tuple[TensorSpec, ...]] = {}
        self.parameters: dict[int, str] = {}    # id(parameter) -> its node: one per parameter

    def nodes(self) -> list[NodeRecord]:
        records: list[NodeRecord] = []
        for node in self.root.graph.nodes:
            self.outputs[node] = _specs(node.meta.get("tensor_meta"))
            if node.op == "call_module":
                records.extend(self._module_call(node))
            else:
                records.append(self._plain(node))
        return records

    def _unique(self, wanted: str) -> str:
        name, count = wanted, 0
        while name in self.taken:
            count += 1
            name = f"{wanted}_{count}"
        self.taken.add(name)
        return name

    def _inputs(self, node: torch.fx.Node) -> tuple[str, ...]:
        if node.op == "call_function" and node.target is operator.getitem:
            producer, index = node.args[0], node.args[1]
            if (isinstance(producer, torch.fx.Node) and isinstance(index, int)
                    and 0 < index < len(self.outputs.get(producer, ()))):
                return (f"{self.names[producer]}:{index}",)
        return tuple(self.names[source] for source in node.all_input_nodes)

    def _module_call(self, node: torch.fx.Node) -> list[NodeRecord]:
        submodule = self.root.get_submodule(node.target)
        name = self._unique(_scoped(node.target))
        params = []                  # a module called twice shares its parameters' nodes
        for param_name, param in submodule.named_parameters(recurse=False):
            if id(param) not in self.parameters:
                self.parameters[id(param)] = self._unique(f"{name}/{param_name}")
                params.append(NodeRecord(
                    name=self.parameters[id(param)], op="Parameter", inputs=(),
                    device=_device(param), attrs={"trainable": param.requires_grad},
                    outputs=(_spec(param),), stack=()))
        weights = tuple(self.parameters[id(param)] for param in
                        submodule.parameters(recurse=False))
        self.names[node] = name
        attrs = {"module": _clipped(_class_path(submodule))}
        if submodule.extra_repr():
            attrs["config"] = _clipped(submodule.extra_repr())
        record = NodeRecord(
            name=name, op=type(submodule).__name__,
            inputs=self._inputs(node) + weights,
            device=next((_device(p) for p in submodule.parameters()), ""), attrs=attrs,
            outputs=self.outputs[node], stack=_stack(node))
        return [*params, record]

    def _plain(self, node: torch.fx.Node) -> NodeRecord:
        scope = _innermost_scope(node)
        if node.op == "get_attr":
            name = self._unique(_scoped(node.target))
            value = _attribute(self.root, node.target)
            op = "Parameter" if isinstance(value, nn.Parameter) else "Const"
            device = _device(value) if isinstance(value, torch.Tensor) else ""
        else:
            op = {"placeholder": "Placeholder", "output": "Output"}.get(node.op) or _callee(node)
            base = node.target if node.op == "placeholder" else (
                "output" if node.op == "output" else _callee(node))
            name = self._unique(f"{scope}/{base}" if scope else str(base))
            device = ""
        self.names[node] = name
        return NodeRecord(name=name, op=op, inputs=self._inputs(node), device=device,
                          attrs=_call_attrs(node), outputs=self.outputs[node],
                          stack=_stack(node))


def _class_path(module: nn.Module) -> str:
    return f"{type(module).__module__}.{type(module).__qualname__}"


def _scoped(path: str) -> str:
    return path.replace(".", "/")


def _innermost_scope(node: torch.fx.Node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    return _scoped(next(reversed(stack))) if stack else ""


def _callee(node: torch.fx.Node) -> str:
    target = node.target
    if isinstance(target, str):                       # a tensor method: x.mean()
        return target
    return getattr(target, "__name__", type(target).__name__).strip("_") or "call"


def _attribute(root: nn.Module, path: str) -> Any:
    value: Any = root
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _call_attrs(node: torch.fx.Node) -> dict:
    """The call's constant arguments (axis, keepdim, ...), as text: JSON-safe and short."""
    attrs = {}
    for index, value in enumerate(node.args):
        if not isinstance(value, torch.fx.Node) and node.op in ("call_function", "call_method"):
            attrs[f"arg{index}"] = _clipped(repr(value))
    for key, value in node.kwargs.items():
        if not isinstance(value, torch.fx.Node):
            attrs[key] = _clipped(repr(value))
    return attrs


def _clipped(text: str) -> str:
    return text if len(text) <= ATTR_TEXT_LIMIT else text[:ATTR_TEXT_LIMIT - 1] + "…"


def _device(tensor: torch.Tensor) -> str:
    kind = "GPU" if tensor.device.type == "cuda" else tensor.device.type.upper()
    return f"/device:{kind}:{tensor.device.index or 0}"


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _spec(tensor: torch.Tensor) -> TensorSpec:
    return TensorSpec(_dtype_name(tensor.dtype), tuple(int(d) for d in tensor.shape))


def _specs(meta: Any) -> tuple[TensorSpec, ...]:
    """One spec per output: a tensor's, each element's of a tuple output (a nested tuple
    element shows as its first tensor's spec)."""
    if meta is None:
        return ()
    if isinstance(meta, TensorMetadata):
        return (TensorSpec(_dtype_name(meta.dtype), tuple(int(d) for d in meta.shape)),)
    if isinstance(meta, (tuple, list)):
        return tuple(spec for item in meta for spec in _specs(item)[:1])
    if isinstance(meta, dict):
        return tuple(spec for item in meta.values() for spec in _specs(item)[:1])
    return ()


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def _stack(node: torch.fx.Node) -> tuple[str, ...]:
    """fx's recorded stack trace as the run store's creation sites, outermost first: the
    user's frames (forward and what it calls), not torch's own."""
    text = node.stack_trace or ""
    return tuple(f"{os.path.basename(m['file'])}:{m['line']} in {m['function']}"
                 for m in _STACK_LINE.finditer(text)
                 if not os.path.abspath(m["file"]).startswith(_TORCH_DIR))
