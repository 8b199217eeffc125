"""NoOp and the grouping helpers built on control edges (tf.no_op, tf.group, tf.tuple,
with_dependencies), and TF1's control-flow primitives with their builders: Switch, Merge,
Enter, Exit, NextIteration (and their Ref twins), LoopCond and ControlTrigger. tf.cond and
tf.while_loop (engine/ops/cond.py, while_loop.py) are made of these."""

from __future__ import annotations

import collections

from engine import dtypes
from engine.graph import Operation, Tensor
from engine.ops.core import convert_to_tensor, graph_of, shape_error
from engine.ops.registry import register_op
from engine.shapes import TensorShape

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "Assert",
    "group",
    "no_op",
    "tuple",
]

_SEQUENCE = (list, tuple)   # taken before this module defines its own `tuple`
_Merged = collections.namedtuple("Merge", ["output", "value_index"])

# The op types that need the dynamic executor (engine/runtime/dynamic_executor.py).
CONTROL_FLOW_OP_TYPES = frozenset({
    "Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
    "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger"})


# -- shape inference ---------------------------------------------------------------------------

def _out_dtype(op, t: Tensor):
    return t.dtype if op.type.startswith("Ref") else t.dtype.base_dtype


def _switch_infer(op):
    data, pred = op.inputs
    if pred.dtype.base_dtype is not dtypes.bool:
        raise TypeError(f"Input 'pred' of '{op.type}' Op has type {pred.dtype.base_dtype.name} "
                        "that does not match expected type of bool.")
    if pred.shape.ndims not in (None, 0):
        raise shape_error(op, f"Shape must be rank 0 but is rank {pred.shape.ndims}")
    dtype = _out_dtype(op, data)
    return [(dtype, data.shape), (dtype, data.shape)]


def _merge_shape(shapes: list[TensorShape]) -> TensorShape:
    """TF's MergeShape: the dims all inputs agree on; unknown rank when ranks differ."""
    first = shapes[0]
    if first.dims is None or any(s.dims is None or len(s.dims) != len(first.dims)
                                 for s in shapes[1:]):
        return TensorShape(None)
    return TensorShape(d if all(s.dims[i] == d for s in shapes[1:]) else None
                       for i, d in enumerate(first.dims))


def _merge_infer(op):
    if not op.inputs:
        raise ValueError(f"'{op.type}' Op '{op.name}' needs at least one input.")
    kinds = [t.dtype.base_dtype for t in op.inputs]
    if any(k is not kinds[0] for k in kinds):
        raise TypeError(f"Tensors in list passed to 'inputs' of '{op.type}' Op have types "
                        f"[{', '.join(k.name for k in kinds)}] that don't all match.")
    return [(_out_dtype(op, op.inputs[0]), _merge_shape([t.shape for t in op.inputs])),
            (dtypes.int32, TensorShape([]))]


def _enter_infer(op):
    """TF's EnterShape: a loop variable's shape is unknown until the loop sets its invariant;
    a loop constant keeps its input's shape."""
    data = op.inputs[0]
    if not op.attrs.get("frame_name"):
        raise ValueError(f"The Enter '{op.name}' must have a frame name.")
    shape = data.shape if op.attrs.get("is_constant") else TensorShape(None)
    return [(_out_dtype(op, data), shape)]


def _forward_infer(op):
    data = op.inputs[0]
    return [(_out_dtype(op, data), data.shape)]


def _loop_cond_infer(op):
    pred = op.inputs[0]
    if pred.dtype.base_dtype is not dtypes.bool:
        raise TypeError(f"Input 'input' of 'LoopCond' Op has type {pred.dtype.base_dtype.name} "
                        "that does not match expected type of bool.")
    if pred.shape.ndims not in (None, 0):
        raise shape_error(op, f"Shape must be rank 0 but is rank {pred.shape.ndims}")
    return [(dtypes.bool, TensorShape([]))]


register_op("NoOp", lambda op: [])
register_op("ControlTrigger", lambda op: [])
register_op("Switch", _switch_infer)
register_op("RefSwitch", _switch_infer, ref_inputs=(0,))
register_op("Merge", _merge_infer)
# A RefMerge forwards refs on every input slot (TF's N is unbounded; 64 is plenty).
register_op("RefMerge", _merge_infer, ref_inputs=tuple(range(64)))
register_op("Enter", _enter_infer)
register_op("RefEnter", _enter_infer, ref_inputs=(0,))
register_op("Exit", _forward_infer)
register_op("RefExit", _forward_infer, ref_inputs=(0,))
register_op("NextIteration", _forward_infer)
register_op("RefNextIteration", _forward_infer, ref_inputs=(0,))
register_op("LoopCond", _loop_cond_infer)


def _assert_infer(op):
    condition = op.inputs[0]
    if condition.dtype.base_dtype is not dtypes.bool:
        raise TypeError(f"Input 'condition' of 'Assert' Op has type "
                        f"{condition.dtype.base_dtype.name} that does not match expected type "
                        "of bool.")
    if condition.shape.ndims not in (None, 0):
        raise shape_error(op, f"Shape must be rank 0 but is rank {condition.shape.ndims}")
    return []


register_op("Assert", _assert_infer, stateful=True)


# -- builders ----------------------------------------------------------------------------------

def _create(op_type: str, inputs, attrs: dict, name: str | None) -> Operation:
    return graph_of(inputs).create_op(op_type, inputs, attrs, name=name or op_type)


def switch(data, pred, dtype=None, name=None):
    """(output_false, output_true): `data` goes to output 1 when `pred` is true, else to
    output 0; the other output is dead (its consumers do not run)."""
    g = graph_of(data, pred)
    with g.as_default(), g.name_scope(name or "Switch") as scope:
        data = convert_to_tensor(data, dtype=dtype, name="data")
        pred = convert_to_tensor(pred, name="pred")
        op_type = "RefSwitch" if data.dtype.is_ref else "Switch"
        op = g.create_op(op_type, [data, pred], {"T": data.dtype.base_dtype}, name=scope)
    return op.outputs[0], op.outputs[1]


def ref_switch(data, pred, name=None):
    return switch(data, pred, name=name or "RefSwitch")


def merge(inputs, name=None):
    """Forwards the first of `inputs` that is alive; returns (output, value_index)."""
    if any(t is None for t in inputs):
        raise ValueError(f"At least one of the merge inputs is None: {list(inputs)}")
    g = graph_of(list(inputs))
    with g.as_default(), g.name_scope(name or "Merge") as scope:
        tensors = [convert_to_tensor(t) for t in inputs]
        op_type = "RefMerge" if all(t.dtype.is_ref for t in tensors) else "Merge"
        op = g.create_op(op_type, tensors, {"T": tensors[0].dtype.base_dtype,
                                            "N": len(tensors)}, name=scope)
    return _Merged(op.outputs[0], op.outputs[1])


def ref_merge(inputs, name=None):
    return merge(inputs, name=name or "RefMerge")


def enter(data, frame_name: str, is_constant: bool = False, parallel_iterations: int = 10,
          use_ref: bool = True, use_input_shape: bool = True, name=None) -> Tensor:
    """Makes `data` available in the child frame `frame_name` (every iteration of it when
    `is_constant`); at most `parallel_iterations` iterations of the frame run at once."""
    data = convert_to_tensor(data)
    op_type = "RefEnter" if data.dtype.is_ref and use_ref else "Enter"
    op = _create(op_type, [data], {"T": data.dtype.base_dtype, "frame_name": frame_name,
                                   "is_constant": bool(is_constant),
                                   "parallel_iterations": int(parallel_iterations)},
                 name or "Enter")
    out = op.outputs[0]
    if use_input_shape:
        out.set_shape(data.shape)
    return out


def exit(data, name=None) -> Tensor:  # noqa: A001 - TF's name
    """Makes `data` available in the parent frame (the loop's result)."""
    data = convert_to_tensor(data)
    op_type = "RefExit" if data.dtype.is_ref else "Exit"
    return _create(op_type, [data], {"T": data.dtype.base_dtype}, name or "Exit").outputs[0]


def next_iteration(data, name=None) -> Tensor:
    """Makes `data` available to the next iteration of its frame."""
    data = convert_to_tensor(data)
    op_type = "RefNextIteration" if data.dtype.is_ref else "NextIteration"
    return _create(op_type, [data], {"T": data.dtype.base_dtype},
                   name or "NextIteration").outputs[0]


def loop_cond(pred, name=None) -> Tensor:
    """The loop's termination predicate; its Switches route the loop variables by it."""
    pred = convert_to_tensor(pred)
    return _create("LoopCond", [pred], {}, name or "LoopCond").outputs[0]


def Assert(condition, data, summarize=None, name=None) -> Operation:  # noqa: N802 - TF's name
    """Fails the step with InvalidArgumentError("assertion failed: [data]...") when
    `condition` is false; `summarize` elements of each data tensor are printed (default 3)."""
    g = graph_of(condition, list(data))
    with g.as_default(), g.name_scope(name or "Assert") as scope:
        condition = convert_to_tensor(condition, name="condition")
        data = [convert_to_tensor(d, name="data") for d in data]
        return g.create_op("Assert", [condition] + data,
                           {"T": [d.dtype.base_dtype for d in data],
                            "summarize": 3 if summarize is None else int(summarize)},
                           name=scope)


def control_trigger(name=None) -> Operation:
    """A NoOp that runs even when its control inputs are dead."""
    return _create("ControlTrigger", [], {}, name or "ControlTrigger")


# -- grouping ----------------------------------------------------------------------------------

def no_op(name=None):
    return graph_of().create_op("NoOp", [], {}, name=name or "NoOp")


def _as_op(x) -> Operation:
    if hasattr(x, "_as_graph_element") and not isinstance(x, (Tensor, Operation)):
        x = x._as_graph_element()
    if isinstance(x, Tensor):
        return x.op
    if isinstance(x, Operation):
        return x
    raise TypeError(f"Expected a Tensor or Operation, got {type(x).__name__}: {x!r}")


def group(*inputs, **kwargs):
    """A NoOp that runs after all `inputs`. As in TF, inputs requested on several devices get
    one NoOp per device first, so the final control edges do not all cross devices."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"Unknown keyword arguments: {', '.join(kwargs)}")
    flat = []
    for x in inputs:
        flat.extend(x if isinstance(x, _SEQUENCE) else [x])
    ops = [_as_op(x) for x in flat]
    g = graph_of(ops)
    by_device: dict[str, list[Operation]] = {}
    for op in ops:
        by_device.setdefault(op.device, []).append(op)
    with g.as_default(), g.name_scope(name or "group_deps") as scope:
        if len(by_device) <= 1:
            device = next(iter(by_device), "")
            with g.device(device or None), g.control_dependencies(ops):
                return g.create_op("NoOp", [], {}, name=scope)
        deps = []
        for device in sorted(by_device):
            with g.device(device or None), g.control_dependencies(by_device[device]):
                deps.append(g.create_op("NoOp", [], {}, name="NoOp"))
        with g.control_dependencies(deps):
            return g.create_op("NoOp", [], {}, name=scope)


def with_dependencies(dependencies, output_tensor, name=None):
    from engine.ops.array_ops import identity
    g = graph_of(output_tensor)
    with g.as_default(), g.name_scope(name or "control_dependency") as scope:
        with g.control_dependencies(dependencies):
            return identity(output_tensor, name=scope)


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001 - TF's name
    """Tensors that are available only after all of `tensors` (and control_inputs) are."""
    live = [t for t in tensors if t is not None]
    g = graph_of(live)
    with g.as_default(), g.name_scope(name or "tuple"):
        deps = [t.op for t in live] + [_as_op(c) for c in control_inputs or ()]
        gate = group(*deps, name="group_deps")
        return [None if t is None else with_dependencies([gate], t)
                for t in tensors]
