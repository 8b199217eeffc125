"""Array ops and their tf.* builders: constants and placeholders, Identity, Reshape, Cast, Shape,
ExpandDims, Fill, ...; and concat, split, stack, tile, pad, transpose, squeeze, reverse, where,
one_hot (shape inference in array_shapes.py; slicing and gathers in array_index.py)."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.graph import Tensor
from engine.ops import array_shapes
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
    "boolean_mask",
    "broadcast_to",
    "cast",
    "concat",
    "constant",
    "expand_dims",
    "fill",
    "gather",
    "gather_nd",
    "identity",
    "invert_permutation",
    "matrix_transpose",
    "newaxis",
    "one_hot",
    "ones",
    "ones_like",
    "pad",
    "placeholder",
    "placeholder_with_default",
    "reshape",
    "reverse",
    "reverse_sequence",
    "reverse_v2",
    "scatter_nd",
    "shape",
    "shape_n",
    "size",
    "slice",
    "split",
    "squeeze",
    "stack",
    "stop_gradient",
    "strided_slice",
    "tile",
    "transpose",
    "unsorted_segment_sum",
    "unstack",
    "where",
    "where_v2",
    "zeros",
    "zeros_like",
]


def _same_as_input(op):
    return [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape)]


def _const_infer(op):
    return [(op.attrs["dtype"], TensorShape(op.attrs["value"].shape))]


def _placeholder_infer(op):
    return [(op.attrs["dtype"], op.attrs["shape"])]


def _placeholder_with_default_infer(op):
    default = op.inputs[0]
    if not op.attrs["shape"].is_compatible_with(default.shape):
        raise shape_error(op, f"Shapes must be equal rank / compatible: the default has shape "
                              f"{default.shape.bracket_str()}, the placeholder "
                              f"{op.attrs['shape'].bracket_str()}")
    return [(default.dtype.base_dtype, op.attrs["shape"])]


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
register_op("PlaceholderWithDefault", _placeholder_with_default_infer)
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


def placeholder_with_default(input, shape, name: str | None = None):  # noqa: A002
    """A placeholder that yields `input` when it is not fed (TF's PlaceholderWithDefault)."""
    default = convert_to_tensor(input)
    return graph_of(default).create_op(
        "PlaceholderWithDefault", [default],
        {"dtype": default.dtype.base_dtype, "shape": as_shape(shape)},
        name=name or "PlaceholderWithDefault").outputs[0]


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


# -- concat, split, stack ------------------------------------------------------------------

newaxis = None


def is_graph_value(v) -> bool:
    return isinstance(v, Tensor) or hasattr(v, "_as_graph_element")


def _holds_graph_value(values) -> bool:
    if isinstance(values, (list, tuple)):
        return any(_holds_graph_value(v) for v in values)
    return is_graph_value(values)


def convert_values(values, name: str) -> list[Tensor]:
    """A list of values whose tensors fix the dtype of the Python values beside them."""
    dtype = next((convert_to_tensor(v).dtype.base_dtype for v in values if is_graph_value(v)),
                 None)
    return [convert_to_tensor(v, dtype=dtype, name=f"{name}_{i}") if not is_graph_value(v)
            else convert_to_tensor(v) for i, v in enumerate(values)]


def index_tensor(value, name: str) -> Tensor:
    """Axes, sizes, paddings and multiples: int32 unless given as an int64 tensor; a list
    holding tensors is packed (TF's autopacking)."""
    if isinstance(value, (list, tuple)) and _holds_graph_value(value):
        return stack(list(value), name=name)
    return convert_to_tensor(value, name=name, preferred_dtype=dtypes.int32)


def concat(values, axis, name: str = "concat"):
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    if not values:
        raise ValueError("List argument 'values' to 'ConcatV2' Op with length 0 shorter than "
                         "minimum length 2.")
    g = graph_of(values, axis)
    with op_scope(g, name, "concat") as scope:
        tensors = convert_values(values, "values")
        axis_t = index_tensor(axis, "axis")
        if len(tensors) == 1:
            array_shapes.with_rank(axis_t.op, axis_t.shape, 0)
            return g.create_op("Identity", tensors, {"T": tensors[0].dtype.base_dtype},
                               name=scope).outputs[0]
        attrs = {"N": len(tensors), "T": tensors[0].dtype.base_dtype,
                 "Tidx": axis_t.dtype.base_dtype}
        return g.create_op("ConcatV2", tensors + [axis_t], attrs, name=scope).outputs[0]


def concat_offset(axis, shapes, name: str | None = None) -> list[Tensor]:
    """The offset of each input of a concat along `axis` (used by the concat gradient)."""
    g = graph_of(axis, shapes)
    with op_scope(g, name, "ConcatOffset") as scope:
        axis_t = convert_to_tensor(axis, dtype=dtypes.int32, name="concat_dim")
        op = g.create_op("ConcatOffset", [axis_t] + list(shapes),
                         {"N": len(shapes), "shape_type": shapes[0].dtype.base_dtype},
                         name=scope)
        return list(op.outputs)


def split(value, num_or_size_splits, axis=0, num=None, name: str = "split") -> list[Tensor]:
    value = convert_to_tensor(value)
    g = graph_of(value, num_or_size_splits, axis)
    if isinstance(num_or_size_splits, (int, np.integer)) and \
            not isinstance(num_or_size_splits, bool):
        count = int(num_or_size_splits)
        if count < 1:
            raise ValueError(f"Attr 'num_split' of 'Split' Op passed {count} less than "
                             "minimum 1.")
        with op_scope(g, name, "split") as scope:
            axis_t = convert_to_tensor(axis, dtype=dtypes.int32, name="split_dim")
            return list(g.create_op("Split", [axis_t, value],
                                    {"num_split": count, "T": value.dtype.base_dtype},
                                    name=scope).outputs)
    with op_scope(g, name, "split") as scope:
        sizes = index_tensor(num_or_size_splits, "size_splits")
        if sizes.shape.ndims == 0:
            raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits "
                             f"argument to split. Argument provided: {num_or_size_splits}")
        if num is None:
            num = sizes.shape[0] if sizes.shape.ndims == 1 else None
            if num is None:
                raise ValueError(f"Cannot infer argument `num` from shape {num_or_size_splits}")
        axis_t = convert_to_tensor(axis, dtype=dtypes.int32, name="split_dim")
        attrs = {"num_split": int(num), "T": value.dtype.base_dtype,
                 "Tlen": sizes.dtype.base_dtype}
        return list(g.create_op("SplitV", [value, sizes, axis_t], attrs, name=scope).outputs)


def stack(values, axis: int = 0, name: str = "stack") -> Tensor:
    if axis == 0 and not _holds_graph_value(values):
        return make_constant(values, name=name)
    if is_graph_value(values):
        if axis != 0:
            raise TypeError(f"Expected list for 'values' argument to 'Pack' Op, not {values}.")
        return convert_to_tensor(values)     # TF: a tensor is already its own stack
    values = list(values)
    g = graph_of(values)
    with op_scope(g, name, "stack") as scope:
        tensors = convert_values(values, "values")
        rank = tensors[0].shape.ndims
        if rank is not None and not -(rank + 1) <= axis < rank + 1:
            raise ValueError(f"Argument `axis` = {axis} not in range [{-(rank + 1)}, "
                             f"{rank + 1})")
        return g.create_op("Pack", tensors, {"N": len(tensors), "axis": int(axis),
                                             "T": tensors[0].dtype.base_dtype},
                           name=scope).outputs[0]


def unstack(value, num=None, axis: int = 0, name: str = "unstack") -> list[Tensor]:
    value = convert_to_tensor(value)
    shape = value.shape
    if shape.ndims is not None and not -shape.ndims <= axis < shape.ndims:
        raise ValueError(f"Argument `axis` = {axis} not in range [{-shape.ndims}, "
                         f"{shape.ndims})")
    if num is None:
        num = shape[axis] if shape.ndims is not None else None
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {shape}")
    op = graph_of(value).create_op("Unpack", [value], {"num": int(num), "axis": int(axis),
                                                       "T": value.dtype.base_dtype},
                                   name=name or "unstack")
    return list(op.outputs)


# -- restructuring -------------------------------------------------------------------------

def _with_index_input(op_type, x, index, index_name, index_attr, name, attrs=None):
    x = convert_to_tensor(x)
    g = graph_of(x, index)
    with op_scope(g, name, op_type) as scope:
        index_t = index_tensor(index, index_name)
        full = {"T": x.dtype.base_dtype, index_attr: index_t.dtype.base_dtype, **(attrs or {})}
        return g.create_op(op_type, [x, index_t], full, name=scope).outputs[0]


def tile(input, multiples, name: str | None = None):  # noqa: A002 - TF's argument name
    return _with_index_input("Tile", input, multiples, "multiples", "Tmultiples", name)


def reverse(tensor, axis, name: str | None = None):
    return _with_index_input("ReverseV2", tensor, axis, "axis", "Tidx", name)


reverse_v2 = reverse


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None,  # noqa: A002
                     name: str | None = None, seq_dim=None, batch_dim=None):
    """Reverses the first seq_lengths[i] entries along `seq_axis` of each slice i along
    `batch_axis`; the rest stays in place (seq_dim / batch_dim are the older spellings)."""
    seq_axis = _deprecated_alias("seq_axis", seq_axis, "seq_dim", seq_dim)
    batch_axis = _deprecated_alias("batch_axis", batch_axis, "batch_dim", batch_dim)
    if seq_axis is None:
        raise TypeError("Expected int for argument 'seq_dim' not None.")
    input = convert_to_tensor(input, name="input")  # noqa: A001
    g = graph_of(input, seq_lengths)
    with op_scope(g, name, "ReverseSequence") as scope:
        lengths = convert_to_tensor(seq_lengths, name="seq_lengths",
                                    preferred_dtype=dtypes.int32)
        attrs = {"T": input.dtype.base_dtype, "Tlen": lengths.dtype.base_dtype,
                 "seq_dim": int(seq_axis), "batch_dim": int(batch_axis or 0)}
        return g.create_op("ReverseSequence", [input, lengths], attrs, name=scope).outputs[0]


def _deprecated_alias(new_name: str, new_value, old_name: str, old_value):
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'.")
        return old_value
    return new_value


def pad(tensor, paddings, mode: str = "CONSTANT", name: str | None = None, constant_values=0):
    mode = str(mode).upper()
    if mode in ("REFLECT", "SYMMETRIC"):
        return _with_index_input("MirrorPad", tensor, paddings, "paddings", "Tpaddings", name,
                                 {"mode": mode})
    if mode != "CONSTANT":
        raise ValueError('Value of argument `mode` expected to be one of "CONSTANT", '
                         f'"REFLECT", or "SYMMETRIC". Received `mode` = {mode}')
    if not is_graph_value(constant_values) and np.ndim(constant_values) == 0 and \
            constant_values == 0:
        return _with_index_input("Pad", tensor, paddings, "paddings", "Tpaddings", name)
    tensor = convert_to_tensor(tensor)
    g = graph_of(tensor, paddings, constant_values)
    with op_scope(g, name, "PadV2") as scope:
        paddings_t = index_tensor(paddings, "paddings")
        value = convert_to_tensor(constant_values, dtype=tensor.dtype.base_dtype,
                                  name="constant_values") \
            if not is_graph_value(constant_values) else convert_to_tensor(constant_values)
        attrs = {"T": tensor.dtype.base_dtype, "Tpaddings": paddings_t.dtype.base_dtype}
        return g.create_op("PadV2", [tensor, paddings_t, value], attrs, name=scope).outputs[0]


def mirror_pad_grad(grad, paddings, mode: str, name: str | None = None):
    return _with_index_input("MirrorPadGrad", grad, paddings, "paddings", "Tpaddings", name,
                             {"mode": mode})


def dynamic_range(vector) -> Tensor:
    """[0, 1, ..., len(vector) - 1] as int32, for ranks known only at run time. Built from
    Where over an all-true mask, since Range belongs to the math ops."""
    mask = cast(ones_like(vector), dtypes.bool)
    return cast(reshape(_where(mask, None), [-1]), dtypes.int32)


def transpose(a, perm=None, name: str = "transpose", conjugate: bool = False):
    a = convert_to_tensor(a)
    if conjugate and a.dtype.is_complex:
        raise ValueError(f"transpose(conjugate=True) of complex '{a.name}' needs a Conj op, "
                         "which this engine does not have; conjugate the values first.")
    g = graph_of(a, perm)
    with op_scope(g, name, "transpose") as scope:
        if perm is None:
            rank = a.shape.ndims
            perm = np.arange(rank - 1, -1, -1, dtype=np.int32) if rank is not None else \
                reverse(dynamic_range(shape(a)), [0])
        perm_t = index_tensor(perm, "perm")
        return g.create_op("Transpose", [a, perm_t], {"T": a.dtype.base_dtype,
                                                      "Tperm": perm_t.dtype.base_dtype},
                           name=scope).outputs[0]


def matrix_transpose(a, name: str = "matrix_transpose", conjugate: bool = False):
    a = convert_to_tensor(a)
    g = graph_of(a)
    with op_scope(g, name, "matrix_transpose"):
        rank = a.shape.ndims
        if rank is not None:
            if rank < 2:
                raise ValueError("Argument `a` should be a (batch) matrix with rank >= 2.  "
                                 f"Received `a` = {a} with shape: {a.shape}")
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        else:
            from engine.ops.array_index import strided_slice
            dims = dynamic_range(shape(a))
            perm = concat([strided_slice(dims, [0], [-2]),
                           reverse(strided_slice(dims, [-2], [0], end_mask=1), [0])], 0)
        return transpose(a, perm, conjugate=conjugate)


def invert_permutation(x, name: str | None = None):
    return _unary("InvertPermutation", index_tensor(x, "x"), name)


def squeeze(input, axis=None, name: str | None = None, squeeze_dims=None):  # noqa: A002
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'squeeze_dims'.")
        axis = squeeze_dims
    axis = [] if axis is None else [int(axis)] if np.ndim(axis) == 0 else \
        [int(a) for a in axis]
    x = convert_to_tensor(input)
    return _unary("Squeeze", x, name, {"T": x.dtype.base_dtype, "squeeze_dims": axis})


def shape_n(input, out_type=dtypes.int32, name: str | None = None) -> list[Tensor]:  # noqa: A002
    tensors = [convert_to_tensor(t) for t in input]
    op = graph_of(tensors).create_op("ShapeN", tensors, {
        "N": len(tensors), "T": tensors[0].dtype.base_dtype,
        "out_type": dtypes.as_dtype(out_type)}, name=name or "ShapeN")
    return list(op.outputs)


# -- selection and encoding ------------------------------------------------------------------

def _where(condition, name):
    g = graph_of(condition)
    with op_scope(g, name, "Where") as scope:
        cond = convert_to_tensor(condition, name="condition", preferred_dtype=dtypes.bool)
        return g.create_op("Where", [cond], {"T": cond.dtype.base_dtype}, name=scope).outputs[0]


def _select(op_type, condition, x, y, name):
    g = graph_of(condition, x, y)
    with op_scope(g, name, op_type) as scope:
        cond = convert_to_tensor(condition, name="condition", preferred_dtype=dtypes.bool)
        t, e = convert_values([x, y], "branch")
        return g.create_op(op_type, [cond, t, e], {"T": t.dtype.base_dtype},
                           name=scope).outputs[0]


def where(condition, x=None, y=None, name: str | None = None):
    """TF1's tf.where: the coordinates of true elements (int64, one row each), or, given x and
    y, Select (a vector condition picks rows)."""
    if x is None and y is None:
        return _where(condition, name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return _select("Select", condition, x, y, name)


def where_v2(condition, x=None, y=None, name: str | None = None):
    """TF2's where: like where, but condition, x and y broadcast against each other."""
    if x is None and y is None:
        return _where(condition, name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return _select("SelectV2", condition, x, y, name)


def _one_hot_dtypes(on_value, off_value, dtype):
    on = None if on_value is None else convert_to_tensor(
        on_value, name="on_value", preferred_dtype=dtype)
    off = None if off_value is None else convert_to_tensor(
        off_value, name="off_value", preferred_dtype=dtype)
    for label, t in (("on_value", on), ("off_value", off)):
        if t is not None and dtype is not None and t.dtype.base_dtype is not dtype:
            raise TypeError(f"dtype {t.dtype.base_dtype} of {label} does not match dtype "
                            f"parameter {dtype}")
    if dtype is None:
        dtype = on.dtype.base_dtype if on is not None else \
            off.dtype.base_dtype if off is not None else dtypes.float32
    on = on if on is not None else convert_to_tensor(1, dtype=dtype, name="on_value")
    off = off if off is not None else convert_to_tensor(0, dtype=dtype, name="off_value")
    if on.dtype.base_dtype is not off.dtype.base_dtype:
        raise TypeError(f"dtype {on.dtype.base_dtype} of on_value does not match dtype "
                        f"{off.dtype.base_dtype} of off_value")
    return on, off


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None,
            name: str | None = None):
    g = graph_of(indices, depth, on_value, off_value)
    with op_scope(g, name, "one_hot") as scope:
        dtype = None if dtype is None else dtypes.as_dtype(dtype)
        indices_t = convert_to_tensor(indices, name="indices")
        depth_t = convert_to_tensor(depth, dtype=dtypes.int32, name="depth")
        on, off = _one_hot_dtypes(on_value, off_value, dtype)
        attrs = {"axis": -1 if axis is None else int(axis), "T": on.dtype.base_dtype,
                 "TI": indices_t.dtype.base_dtype}
        return g.create_op("OneHot", [indices_t, depth_t, on, off], attrs,
                           name=scope).outputs[0]


# Slicing and gathers live beside this module; `tf.*` sees them through this module.
from engine.ops.array_index import (  # noqa: E402
    boolean_mask,
    gather,
    gather_nd,
    install_slicing,
    scatter_nd,
    slice,  # noqa: A004 - TF's name
    strided_slice,
    unsorted_segment_sum,
)

install_slicing(Tensor)
