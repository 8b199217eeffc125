"""Stateful ops: VariableV2 (outputs a ref), Assign, AssignAdd, AssignSub and
ApplyGradientDescent, whose first input is a ref and so pins them to the variable's device."""

from __future__ import annotations

from engine import dtypes
from engine.ops.core import convert_to_tensor, graph_of, op_scope, shape_error
from engine.ops.registry import register_op
from engine.shapes import TensorShape

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "assign",
    "assign_add",
    "assign_sub",
]


def _variable_infer(op):
    return [(op.attrs["dtype"]._as_ref, op.attrs["shape"])]


def _check_ref(op):
    ref = op.inputs[0]
    if not ref.dtype.is_ref:
        raise TypeError(f"'{op.type}' Op '{op.name}' requires l-value input 'ref', got "
                        f"{ref.name} of dtype {ref.dtype.name}. Pass a tf.Variable.")
    return ref


def _assign_infer(op):
    ref = _check_ref(op)
    value = op.inputs[1]
    if value.dtype.base_dtype is not ref.dtype.base_dtype:
        raise TypeError(f"Input 'value' of '{op.type}' Op has type {value.dtype.name} that does "
                        f"not match type {ref.dtype.name} of argument 'ref'.")
    shape = ref.shape
    if op.attrs.get("validate_shape", True) and not ref.shape.is_compatible_with(value.shape):
        raise shape_error(op, "Shapes must be equal rank / dimensions must be equal")
    if op.type == "Assign":
        shape = value.shape if not op.attrs.get("validate_shape", True) else \
            ref.shape.merge_with(value.shape)
    return [(ref.dtype, shape)]


def _apply_gd_infer(op):
    ref = _check_ref(op)
    alpha, delta = op.inputs[1], op.inputs[2]
    if alpha.shape.ndims not in (None, 0):
        raise shape_error(op, "alpha must be a scalar")
    if not ref.shape.is_compatible_with(delta.shape):
        raise shape_error(op, "var and delta do not have the same shape")
    for t in (alpha, delta):
        if t.dtype.base_dtype is not ref.dtype.base_dtype:
            raise TypeError(f"Input of '{op.type}' Op has type {t.dtype.name} that does not "
                            f"match type {ref.dtype.base_dtype.name} of argument 'var'.")
    return [(ref.dtype, ref.shape)]


register_op("VariableV2", _variable_infer, stateful=True)
register_op("Assign", _assign_infer, ref_inputs=(0,), stateful=True)
register_op("AssignAdd", _assign_infer, ref_inputs=(0,), stateful=True)
register_op("AssignSub", _assign_infer, ref_inputs=(0,), stateful=True)
register_op("ApplyGradientDescent", _apply_gd_infer, ref_inputs=(0,), stateful=True)


def variable_op(shape, dtype, name: str):
    g = graph_of()
    return g.create_op("VariableV2", [], {"shape": TensorShape(shape),
                                          "dtype": dtypes.as_dtype(dtype).base_dtype,
                                          "container": "", "shared_name": ""},
                       name=name).outputs[0]


def _as_ref(ref):
    return ref._ref() if hasattr(ref, "_ref") else ref


def _update(op_type, ref, value, name, attrs):
    ref = _as_ref(ref)
    g = graph_of(ref, value)
    with op_scope(g, name, op_type) as scope:
        value = convert_to_tensor(value, dtype=ref.dtype.base_dtype, name="value")
        return g.create_op(op_type, [ref, value], {"T": ref.dtype.base_dtype, **attrs},
                           name=scope).outputs[0]


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    return _update("Assign", ref, value, name,
                   {"validate_shape": validate_shape is not False,
                    "use_locking": use_locking is not False})


def assign_add(ref, value, use_locking=None, name=None):
    return _update("AssignAdd", ref, value, name, {"use_locking": bool(use_locking)})


def assign_sub(ref, value, use_locking=None, name=None):
    return _update("AssignSub", ref, value, name, {"use_locking": bool(use_locking)})


def apply_gradient_descent(var, alpha, delta, use_locking=False, name=None):
    var = _as_ref(var)
    return graph_of(var, alpha, delta).create_op(
        "ApplyGradientDescent", [var, alpha, delta],
        {"T": var.dtype.base_dtype, "use_locking": bool(use_locking)},
        name=name or "ApplyGradientDescent").outputs[0]
