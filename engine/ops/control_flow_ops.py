"""NoOp and the grouping helpers built on control edges: tf.no_op, tf.group, tf.tuple,
with_dependencies."""

from __future__ import annotations

from engine.graph import Operation, Tensor
from engine.ops.core import graph_of
from engine.ops.registry import register_op

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "group",
    "no_op",
    "tuple",
]

register_op("NoOp", lambda op: [])
_SEQUENCE = (list, tuple)   # taken before this module defines its own `tuple`


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
