"""Op definitions: for each op type its static shape/dtype inference, which inputs are refs,
whether it is stateful, and its gradient rule. No torch here: kernels live in engine/kernels."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine import errors


@dataclass
class OpDef:
    """`infer(op)` returns one (dtype, TensorShape) per output; it reads op.inputs and attrs and
    raises ValueError (TF's build-time error) when the inputs cannot work together."""
    name: str
    infer: Callable
    ref_inputs: tuple[int, ...] = ()      # input slots that take a ref (and so force colocation)
    stateful: bool = False                # never pruned as a duplicate, never constant-folded
    gradient: Callable | None = None      # grad_fn(op, *output_grads) -> list of input grads
    not_differentiable: bool = False


_OP_DEFS: dict[str, OpDef] = {}


def register_op(name: str, infer: Callable, *, ref_inputs: tuple[int, ...] = (),
                stateful: bool = False) -> OpDef:
    if name in _OP_DEFS:
        raise KeyError(f"Op type '{name}' is registered twice")
    op_def = OpDef(name, infer, ref_inputs=ref_inputs, stateful=stateful)
    _OP_DEFS[name] = op_def
    return op_def


def get_op_def(name: str, node_name: str | None = None) -> OpDef:
    try:
        return _OP_DEFS[name]
    except KeyError:
        where = f" (node '{node_name}')" if node_name else ""
        raise errors.NotFoundError(
            None, None,
            f"Op type not registered '{name}'{where}. Registered op types: "
            f"{', '.join(sorted(_OP_DEFS))}") from None


def is_registered(name: str) -> bool:
    return name in _OP_DEFS


def registered_op_types() -> list[str]:
    return sorted(_OP_DEFS)


def RegisterGradient(op_type: str):  # noqa: N802 - TF's spelling
    """Decorator: `@RegisterGradient("MatMul") def _matmul_grad(op, grad): ...`."""
    def decorate(fn):
        get_op_def(op_type).gradient = fn
        return fn
    return decorate


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 - TF's spelling
    get_op_def(op_type).not_differentiable = True
