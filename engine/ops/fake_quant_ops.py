"""Fake quantization (tf.quantization.fake_quant_with_min_max_{args,vars,vars_per_channel} and
their *_gradient ops): float in, float out, each value snapped to one of 2^num_bits levels of a
range nudged so that 0.0 is exactly representable, as quantization-aware training uses them."""

from __future__ import annotations

from collections import namedtuple

from engine import dtypes
from engine.ops.array_shapes import merge
from engine.ops.core import graph_of, op_scope, shape_error
from engine.ops.quantized_ops import float_scalar
from engine.ops.registry import register_op
from engine.shapes import TensorShape

__all__ = ["fake_quant_with_min_max_args", "fake_quant_with_min_max_args_gradient",
           "fake_quant_with_min_max_vars", "fake_quant_with_min_max_vars_gradient",
           "fake_quant_with_min_max_vars_per_channel",
           "fake_quant_with_min_max_vars_per_channel_gradient"]

ARGS = "FakeQuantWithMinMaxArgs"
VARS = "FakeQuantWithMinMaxVars"
PER_CHANNEL = "FakeQuantWithMinMaxVarsPerChannel"
FORWARD_OPS = (ARGS, VARS, PER_CHANNEL)
GRADIENT_OPS = tuple(f"{op}Gradient" for op in FORWARD_OPS)
SCALAR = TensorShape([])
F32 = dtypes.float32

# The output tuples of TF's generated wrappers for the gradient ops.
_GRAD_FIELDS = ["backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"]
FakeQuantWithMinMaxVarsGradient = namedtuple(f"{VARS}Gradient", _GRAD_FIELDS)
FakeQuantWithMinMaxVarsPerChannelGradient = namedtuple(f"{PER_CHANNEL}Gradient", _GRAD_FIELDS)


# -- shape inference (TF's shape functions and their messages) -------------------------------

def _float32(op, names) -> None:
    for t, name in zip(op.inputs, names):
        if t.dtype.base_dtype is not F32:
            raise TypeError(f"Input '{name}' of '{op.type}' Op ('{op.name}') has type "
                            f"{t.dtype.base_dtype.name} that does not match expected type of "
                            "float32.")


def _rank(op, shape: TensorShape, rank: int) -> None:
    if shape.ndims is not None and shape.ndims != rank:
        raise shape_error(op, f"Shape must be rank {rank} but is rank {shape.ndims}")


def _channels(op, value: TensorShape, ranges: tuple[TensorShape, ...]) -> int | None:
    """The last dimension of `value`, which both per-channel ranges [d] must have."""
    if value.ndims is not None and value.ndims < 1:
        raise shape_error(op, f"Shape must be at least rank 1 but is rank {value.ndims}")
    depth = value.dims[-1] if value.ndims else None
    for shape in ranges:
        _rank(op, shape, 1)
        d = shape.dims[0] if shape.ndims else None
        if depth is not None and d is not None and depth != d:
            raise shape_error(op, f"Dimensions must be equal, but are {depth} and {d}")
        depth = depth if depth is not None else d
    return depth


def _args_infer(op):
    _float32(op, ("inputs",))
    return [(F32, op.inputs[0].shape)]


def _vars_infer(op):
    _float32(op, ("inputs", "min", "max"))
    for t in op.inputs[1:]:
        _rank(op, t.shape, 0)
    return [(F32, op.inputs[0].shape)]


def _per_channel_infer(op):
    _float32(op, ("inputs", "min", "max"))
    _channels(op, op.inputs[0].shape, (op.inputs[1].shape, op.inputs[2].shape))
    return [(F32, op.inputs[0].shape)]


def _args_gradient_infer(op):
    # TF checks that gradients and inputs agree only when the kernel runs.
    _float32(op, ("gradients", "inputs"))
    return [(F32, op.inputs[0].shape)]


def _vars_gradient_infer(op):
    _float32(op, ("gradients", "inputs", "min", "max"))
    shape = merge(op, op.inputs[0].shape, op.inputs[1].shape)
    for t in op.inputs[2:]:
        _rank(op, t.shape, 0)
    return [(F32, shape), (F32, SCALAR), (F32, SCALAR)]


def _per_channel_gradient_infer(op):
    _float32(op, ("gradients", "inputs", "min", "max"))
    shape = merge(op, op.inputs[0].shape, op.inputs[1].shape)
    depth = _channels(op, shape, (op.inputs[2].shape, op.inputs[3].shape))
    return [(F32, shape), (F32, TensorShape([depth])), (F32, TensorShape([depth]))]


register_op(ARGS, _args_infer)
register_op(VARS, _vars_infer)
register_op(PER_CHANNEL, _per_channel_infer)
register_op(f"{ARGS}Gradient", _args_gradient_infer)
register_op(f"{VARS}Gradient", _vars_gradient_infer)
register_op(f"{PER_CHANNEL}Gradient", _per_channel_gradient_infer)


# -- graph builders (tf.quantization.* and tf.* in TF1) ---------------------------------------

def _attrs(num_bits: int, narrow_range: bool, **more) -> dict:
    return {"num_bits": int(num_bits), "narrow_range": bool(narrow_range), **more}


def _create(op_type: str, values: dict, attrs: dict, name: str | None):
    graph = graph_of(*values.values())
    with op_scope(graph, name, op_type) as scope:
        inputs = [float_scalar(v, key) for key, v in values.items()]
        op = graph.create_op(op_type, inputs, attrs, name=scope)
    return op.outputs[0] if len(op.outputs) == 1 else tuple(op.outputs)


def _min_max_attrs(min: float, max: float) -> dict:  # noqa: A002 - TF's argument names
    return {"min": float(min), "max": float(max)}


def fake_quant_with_min_max_args(inputs, min: float = -6.0, max: float = 6.0,  # noqa: A002
                                 num_bits: int = 8, narrow_range: bool = False,
                                 name: str | None = None):
    """inputs (float32) fake-quantized to the fixed range [min, max] (attrs), nudged so that
    0.0 is a level: levels 0..2^num_bits-1 (1.. with narrow_range)."""
    return _create(ARGS, {"inputs": inputs},
                   _attrs(num_bits, narrow_range, **_min_max_attrs(min, max)), name)


def fake_quant_with_min_max_args_gradient(gradients, inputs, min: float = -6.0,  # noqa: A002
                                          max: float = 6.0, num_bits: int = 8,  # noqa: A002
                                          narrow_range: bool = False, name: str | None = None):
    """The straight-through gradient: `gradients` where inputs lie in the nudged range, else 0."""
    return _create(f"{ARGS}Gradient", {"gradients": gradients, "inputs": inputs},
                   _attrs(num_bits, narrow_range, **_min_max_attrs(min, max)), name)


def fake_quant_with_min_max_vars(inputs, min, max, num_bits: int = 8,  # noqa: A002
                                 narrow_range: bool = False, name: str | None = None):
    """As fake_quant_with_min_max_args with the range read from two float32 scalar tensors
    (typically variables a training loop moves)."""
    return _create(VARS, {"inputs": inputs, "min": min, "max": max},
                   _attrs(num_bits, narrow_range), name)


def fake_quant_with_min_max_vars_gradient(gradients, inputs, min, max,  # noqa: A002
                                          num_bits: int = 8, narrow_range: bool = False,
                                          name: str | None = None):
    """(backprops_wrt_input, backprop_wrt_min, backprop_wrt_max): the gradient inside the
    nudged range, and the sums of the gradients below it and above it."""
    out = _create(f"{VARS}Gradient", {"gradients": gradients, "inputs": inputs, "min": min,
                                      "max": max}, _attrs(num_bits, narrow_range), name)
    return FakeQuantWithMinMaxVarsGradient(*out)


def fake_quant_with_min_max_vars_per_channel(inputs, min, max, num_bits: int = 8,  # noqa: A002
                                             narrow_range: bool = False,
                                             name: str | None = None):
    """One range per channel: min and max have shape [d], d the last dimension of inputs."""
    return _create(PER_CHANNEL, {"inputs": inputs, "min": min, "max": max},
                   _attrs(num_bits, narrow_range), name)


def fake_quant_with_min_max_vars_per_channel_gradient(gradients, inputs, min,  # noqa: A002
                                                      max, num_bits: int = 8,  # noqa: A002
                                                      narrow_range: bool = False,
                                                      name: str | None = None):
    """As fake_quant_with_min_max_vars_gradient, the min/max gradients summed per channel."""
    out = _create(f"{PER_CHANNEL}Gradient", {"gradients": gradients, "inputs": inputs,
                                             "min": min, "max": max},
                  _attrs(num_bits, narrow_range), name)
    return FakeQuantWithMinMaxVarsPerChannelGradient(*out)


# tf.raw_ops entries, (inputs, outputs, attr defaults) as engine/ops/raw_ops.RawOp takes them;
# raw_ops builds the keyword-only wrappers.
_BITS = {"num_bits": 8, "narrow_range": False}
_ARGS_ATTRS = {"min": -6.0, "max": 6.0, **_BITS}
_VAR_IN = (("inputs", "f"), ("min", "f"), ("max", "f"))
RAW_SPECS = {
    ARGS: ((("inputs", "f"),), ("outputs",), _ARGS_ATTRS),
    f"{ARGS}Gradient": ((("gradients", "f"), ("inputs", "f")), ("backprops",), _ARGS_ATTRS),
    VARS: (_VAR_IN, ("outputs",), _BITS),
    f"{VARS}Gradient": ((("gradients", "f"), *_VAR_IN), tuple(_GRAD_FIELDS), _BITS),
    PER_CHANNEL: (_VAR_IN, ("outputs",), _BITS),
    f"{PER_CHANNEL}Gradient": ((("gradients", "f"), *_VAR_IN), tuple(_GRAD_FIELDS), _BITS),
}
