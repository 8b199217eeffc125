"""Array ops: Const, Placeholder, Identity, Reshape, Cast, Shape, Size, ExpandDims,
BroadcastTo, Fill, ZerosLike, OnesLike, StopGradient, and their tf.* builders."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.ops.core import (
    constant_value,
    convert_to_tensor,
    graph_of,
    make_constant,
    op_scope,
    shape_error,
)
from engine.ops.registry import register_op
from engine.shapes import TensorShape, as_shape

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "broadcast_to",
    "cast",
    "constant",
    "expand_dims",
    "fill",
    "identity",
    "ones",
    "ones_like",
    "placeholder",
    "reshape",
    "shape",
    "size",
    "stop_gradient",
    "zeros",
    "zeros_like",
]


def _same_as_input(op):
    return [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape)]


def _const_infer(op):
    return [(op.attrs["dtype"], TensorShape(op.attrs["value"].shape))]


def _placeholder_infer(op):
    return [(op.attrs["dtype"], op.attrs["shape"])]


def _reshape_infer(op):
    x, shape_t = op.inputs
    target = constant_value(shape_t)
    if target is None:
        n = shape_t.shape[0] if shape_t.shape.ndims == 1 else None
        return [(x.dtype.base_dtype, TensorShape(None if n is None else [None] * n))]
    target = [int(d) for d in np.asarray(target).reshape(-1)]
    if sum(1 for d in target if d == -1) > 1:
        raise shape_error(op, "Cannot infer multiple unknown dimensions in shape "
                              f"{target}")
    size = x.shape.num_elements()
    known = int(np.prod([d for d in target if d != -1])) if target else 1
    if -1 in target:
        if size is not None:
            if known == 0 or size % known:
                raise shape_error(op, f"Cannot reshape a tensor with {size} elements to shape "
                                      f"{target}")
            target = [size // known if d == -1 else d for d in target]
        else:
            target = [None if d == -1 else d for d in target]
    elif size is not None and size != known:
        raise shape_error(op, f"Cannot reshape a tensor with {size} elements to shape "
                              f"{target} ({known} elements)")
    return [(x.dtype.base_dtype, TensorShape(target))]


def _cast_infer(op):
    return [(op.attrs["DstT"], op.inputs[0].shape)]


def _shape_infer(op):
    rank = op.inputs[0].shape.ndims
    return [(op.attrs["out_type"], TensorShape([rank]))]


def _size_infer(op):
    return [(op.attrs["out_type"], TensorShape([]))]


def _expand_dims_infer(op):
    x, dim_t = op.inputs
    dim = constant_value(dim_t)
    if dim is None or x.shape.ndims is None:
        return [(x.dtype.base_dtype, TensorShape(None))]
    dims = list(x.shape.dims)
    axis = int(np.asarray(dim).reshape(-1)[0])
    if not -len(dims) - 1 <= axis <= len(dims):
        raise shape_error(op, f"Tried to expand dim index {axis} for tensor with "
                              f"{len(dims)} dimensions")
    if axis < 0:
        axis += len(dims) + 1
    return [(x.dtype.base_dtype, TensorShape(dims[:axis] + [1] + dims[axis:]))]


def _shape_from_input(op, index):
    value = constant_value(op.inputs[index])
    if value is None:
        n = op.inputs[index].shape[0] if op.inputs[index].shape.ndims == 1 else None
        return TensorShape(None if n is None else [None] * n)
    return TensorShape([int(d) for d in np.asarray(value).reshape(-1)])


def _broadcast_to_infer(op):
    return [(op.inputs[0].dtype.base_dtype, _shape_from_input(op, 1))]


def _fill_infer(op):
    if op.inputs[1].shape.ndims not in (None, 0):
        raise shape_error(op, "value must be a scalar")
    return [(op.inputs[1].dtype.base_dtype, _shape_from_input(op, 0))]


register_op("Const", _const_infer)
register_op("Placeholder", _placeholder_infer)
register_op("Identity", _same_as_input)
register_op("StopGradient", _same_as_input)
register_op("ZerosLike", _same_as_input)
register_op("OnesLike", _same_as_input)
register_op("Reshape", _reshape_infer)
register_op("Cast", _cast_infer)
register_op("Shape", _shape_infer)
register_op("Size", _size_infer)
register_op("ExpandDims", _expand_dims_infer)
register_op("BroadcastTo", _broadcast_to_infer)
register_op("Fill", _fill_infer)


# -- tf.* builders -----------------------------------------------------------------------

def constant(value, dtype=None, shape=None, name: str = "Const", verify_shape: bool = False):
    return make_constant(value, dtype, shape, name=name)


def placeholder(dtype, shape=None, name: str | None = None):
    dtype = dtypes.as_dtype(dtype)
    g = graph_of()
    op = g.create_op("Placeholder", [], {"dtype": dtype, "shape": as_shape(shape)},
                     name=name or "Placeholder")
    return op.outputs[0]


def _unary(op_type: str, x, name, attrs=None):
    x = convert_to_tensor(x)
    return graph_of(x).create_op(op_type, [x], attrs or {"T": x.dtype.base_dtype},
                                 name=name or op_type).outputs[0]


def identity(input, name: str | None = None):  # noqa: A002 - TF's argument name
    return _unary("Identity", input, name)


def stop_gradient(input, name: str | None = None):  # noqa: A002
    return _unary("StopGradient", input, name)


def zeros_like(tensor, dtype=None, name: str | None = None):
    tensor = convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) is not tensor.dtype.base_dtype:
        return zeros(shape(tensor), dtype=dtype, name=name)
    return _unary("ZerosLike", tensor, name)


def ones_like(tensor, dtype=None, name: str | None = None):
    tensor = convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) is not tensor.dtype.base_dtype:
        return ones(shape(tensor), dtype=dtype, name=name)
    return _unary("OnesLike", tensor, name)


def reshape(tensor, shape, name: str | None = None):  # noqa: A002
    tensor = convert_to_tensor(tensor)
    g = graph_of(tensor, shape)
    with op_scope(g, name, "Reshape") as scope:
        shape_t = convert_to_tensor(shape, name="shape", preferred_dtype=dtypes.int32)
        if shape_t.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"Value passed to parameter 'shape' of op 'Reshape' has DataType "
                            f"{shape_t.dtype.name} not in list of allowed values: int32, int64")
        return g.create_op("Reshape", [tensor, shape_t],
                           {"T": tensor.dtype.base_dtype, "Tshape": shape_t.dtype.base_dtype},
                           name=scope).outputs[0]


def cast(x, dtype, name: str | None = None):
    x = convert_to_tensor(x)
    dtype = dtypes.as_dtype(dtype)
    if x.dtype.base_dtype is dtype:
        return x
    return graph_of(x).create_op("Cast", [x], {"SrcT": x.dtype.base_dtype, "DstT": dtype},
                                 name=name or "Cast").outputs[0]


def shape(input, name: str | None = None, out_type=dtypes.int32):  # noqa: A002
    input = convert_to_tensor(input)  # noqa: A001
    return graph_of(input).create_op(
        "Shape", [input], {"T": input.dtype.base_dtype, "out_type": dtypes.as_dtype(out_type)},
        name=name or "Shape").outputs[0]


def size(input, name: str | None = None, out_type=dtypes.int32):  # noqa: A002
    input = convert_to_tensor(input)  # noqa: A001
    return graph_of(input).create_op(
        "Size", [input], {"T": input.dtype.base_dtype, "out_type": dtypes.as_dtype(out_type)},
        name=name or "Size").outputs[0]


def expand_dims(input, axis, name: str | None = None):  # noqa: A002
    input = convert_to_tensor(input)  # noqa: A001
    g = graph_of(input)
    with op_scope(g, name, "ExpandDims") as scope:
        dim = convert_to_tensor(axis, dtype=dtypes.int32, name="dim")
        return g.create_op("ExpandDims", [input, dim],
                           {"T": input.dtype.base_dtype, "Tdim": dtypes.int32},
                           name=scope).outputs[0]


def broadcast_to(input, shape, name: str | None = None):  # noqa: A002
    input = convert_to_tensor(input)  # noqa: A001
    g = graph_of(input, shape)
    with op_scope(g, name, "BroadcastTo") as scope:
        shape_t = convert_to_tensor(shape, name="shape")
        return g.create_op("BroadcastTo", [input, shape_t],
                           {"T": input.dtype.base_dtype, "Tidx": shape_t.dtype.base_dtype},
                           name=scope).outputs[0]


def fill(dims, value, name: str | None = None):
    g = graph_of(dims, value)
    with op_scope(g, name, "Fill") as scope:
        dims_t = convert_to_tensor(dims, name="dims")
        value_t = convert_to_tensor(value, name="value")
        return g.create_op("Fill", [dims_t, value_t],
                           {"T": value_t.dtype.base_dtype, "index_type": dims_t.dtype.base_dtype},
                           name=scope).outputs[0]


def zeros(shape, dtype=dtypes.float32, name: str | None = None):
    dtype = dtypes.as_dtype(dtype)
    if not hasattr(shape, "op"):
        return make_constant(0, dtype, list(shape), name=name or "zeros")
    return fill(shape, np.zeros((), dtype=dtype.numpy_dtype), name=name or "zeros")


def ones(shape, dtype=dtypes.float32, name: str | None = None):
    dtype = dtypes.as_dtype(dtype)
    if not hasattr(shape, "op"):
        return make_constant(1, dtype, list(shape), name=name or "ones")
    return fill(shape, np.ones((), dtype=dtype.numpy_dtype), name=name or "ones")
