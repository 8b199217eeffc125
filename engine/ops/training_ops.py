"""The optimizers' update ops (ApplyMomentum, ApplyAdam, ApplyAdagrad, ApplyRMSProp,
ApplyCenteredRMSProp, ApplyAdadelta): the variable and its slots come in as refs (so placement
colocates them all), the hyper-parameters as scalars; the kernels update the refs in place."""

from __future__ import annotations

from dataclasses import dataclass

from engine.ops.core import graph_of, shape_error
from engine.ops.registry import register_op

# tf.* names come from engine/train; these builders are the gen_training_ops layer.
__all__: list[str] = []


@dataclass(frozen=True)
class _Signature:
    inputs: tuple[str, ...]        # TF's argument names, in order
    refs: tuple[str, ...]          # the ref arguments (the variable first)
    scalars: tuple[str, ...]       # the rank-0 hyper-parameters

    @property
    def ref_slots(self) -> tuple[int, ...]:
        return tuple(self.inputs.index(r) for r in self.refs)


SIGNATURES = {
    "ApplyMomentum": _Signature(("var", "accum", "lr", "grad", "momentum"),
                                ("var", "accum"), ("lr", "momentum")),
    "ApplyAdam": _Signature(("var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1",
                             "beta2", "epsilon", "grad"), ("var", "m", "v"),
                            ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon")),
    "ApplyAdagrad": _Signature(("var", "accum", "lr", "grad"), ("var", "accum"), ("lr",)),
    "ApplyRMSProp": _Signature(("var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"),
                               ("var", "ms", "mom"), ("lr", "rho", "momentum", "epsilon")),
    "ApplyCenteredRMSProp": _Signature(("var", "mg", "ms", "mom", "lr", "rho", "momentum",
                                        "epsilon", "grad"), ("var", "mg", "ms", "mom"),
                                       ("lr", "rho", "momentum", "epsilon")),
    "ApplyAdadelta": _Signature(("var", "accum", "accum_update", "lr", "rho", "epsilon", "grad"),
                                ("var", "accum", "accum_update"), ("lr", "rho", "epsilon")),
}


def _apply_infer(op):
    """TF's ApplyXxx shape function: refs and grad share the variable's shape, the
    hyper-parameters are scalars, and every input has the variable's dtype."""
    sig = SIGNATURES[op.type]
    args = dict(zip(sig.inputs, op.inputs))
    var = args["var"]
    for name in sig.refs:
        if not args[name].dtype.is_ref:
            raise TypeError(f"'{op.type}' Op '{op.name}' requires l-value input '{name}', got "
                            f"{args[name].name} of dtype {args[name].dtype.name}. Pass a "
                            "tf.Variable.")
    base = var.dtype.base_dtype
    for name, t in args.items():
        if t.dtype.base_dtype is not base:
            raise TypeError(f"Input '{name}' of '{op.type}' Op has type "
                            f"{t.dtype.base_dtype.name} that does not match type {base.name} "
                            "of argument 'var'.")
    for name in sig.scalars:
        rank = args[name].shape.ndims
        if rank not in (None, 0):
            raise shape_error(op, f"Shape must be rank 0 but is rank {rank} (argument "
                                  f"'{name}')")
    shape = var.shape
    for name in sig.refs[1:] + ("grad",):
        other = args[name].shape
        if not shape.is_compatible_with(other):
            raise shape_error(op, f"Shapes of 'var' {shape.bracket_str()} and '{name}' "
                                  f"{other.bracket_str()} must be equal")
        shape = shape.merge_with(other)
    return [(var.dtype, shape)]


for _op_type, _sig in SIGNATURES.items():
    register_op(_op_type, _apply_infer, ref_inputs=_sig.ref_slots, stateful=True)


def _as_ref(x):
    return x._ref() if hasattr(x, "_ref") else x


def _apply(op_type: str, args: list, attrs: dict, name: str | None):
    args = [_as_ref(a) for a in args]
    var = args[0]
    attrs = {"T": var.dtype.base_dtype, **attrs}
    return graph_of(*args).create_op(op_type, args, attrs, name=name or op_type).outputs[0]


def apply_momentum(var, accum, lr, grad, momentum, use_locking=False, use_nesterov=False,
                   name=None):
    return _apply("ApplyMomentum", [var, accum, lr, grad, momentum],
                  {"use_locking": bool(use_locking), "use_nesterov": bool(use_nesterov)}, name)


def apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
               use_locking=False, use_nesterov=False, name=None):
    return _apply("ApplyAdam", [var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon,
                                grad],
                  {"use_locking": bool(use_locking), "use_nesterov": bool(use_nesterov)}, name)


def apply_adagrad(var, accum, lr, grad, use_locking=False, update_slots=True, name=None):
    return _apply("ApplyAdagrad", [var, accum, lr, grad],
                  {"use_locking": bool(use_locking), "update_slots": bool(update_slots)}, name)


def apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False,
                   name=None):
    return _apply("ApplyRMSProp", [var, ms, mom, lr, rho, momentum, epsilon, grad],
                  {"use_locking": bool(use_locking)}, name)


def apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad,
                            use_locking=False, name=None):
    return _apply("ApplyCenteredRMSProp", [var, mg, ms, mom, lr, rho, momentum, epsilon, grad],
                  {"use_locking": bool(use_locking)}, name)


def apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, use_locking=False,
                   name=None):
    return _apply("ApplyAdadelta", [var, accum, accum_update, lr, rho, epsilon, grad],
                  {"use_locking": bool(use_locking)}, name)
