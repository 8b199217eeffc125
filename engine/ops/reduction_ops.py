"""Reductions (Sum, Mean, Max, Min, Prod, Any, All), ArgMax/ArgMin, the scans Cumsum/Cumprod,
and the index sequences Range, LinSpace and Rank that all-axes reductions of unknown rank
build; their shape inference and tf.* builders (math_ops re-exports them)."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.ops.core import (
    check_dtype_allowed,
    constant_value,
    convert_to_tensor,
    graph_of,
    make_constant,
    op_scope,
    shape_error,
)
from engine.ops.registry import register_op
from engine.shapes import TensorShape

__all__ = [
    "arg_max",
    "arg_min",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "lin_space",
    "linspace",
    "range",
    "rank",
    "reduce_all",
    "reduce_any",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
]

# TF's dtype order for tf.range's inference: the widest argument wins.
_RANGE_DTYPES = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def is_all_axes(axes_t, x) -> bool:
    """True for the axes tensor `Range(0, Rank(x), 1)` that an all-axes reduction of a tensor
    of unknown rank builds (so shape inference can still say "scalar")."""
    op = axes_t.op
    if op.type != "Range" or op.inputs[1].op.type != "Rank":
        return False
    start, delta = constant_value(op.inputs[0]), constant_value(op.inputs[2])
    return (op.inputs[1].op.inputs[0] is x and start is not None and delta is not None
            and int(start) == 0 and int(delta) == 1)


def reduced_shape(input_shape: TensorShape, axes, keep_dims: bool) -> TensorShape:
    """The static result shape; `axes` None means "not known at build time"."""
    if input_shape.ndims is None:
        return TensorShape(None)
    if axes is None:
        return TensorShape([None] * input_shape.ndims) if keep_dims else TensorShape(None)
    rank = input_shape.ndims
    axes = {int(a) % rank if rank else 0 for a in np.asarray(axes).reshape(-1)}
    if keep_dims:
        return TensorShape([1 if i in axes else d for i, d in enumerate(input_shape.dims)])
    return TensorShape([d for i, d in enumerate(input_shape.dims) if i not in axes])


def _check_axes(op, axes, rank: int) -> None:
    for a in np.asarray(axes).reshape(-1):
        if not -max(rank, 1) <= int(a) < max(rank, 1):
            raise shape_error(op, f"Invalid reduction dimension {int(a)} for input with "
                                  f"{rank} dimensions")


def _reduce_infer(op):
    x, axes_t = op.inputs
    keep = op.attrs["keep_dims"]
    if is_all_axes(axes_t, x):
        return [(x.dtype.base_dtype, TensorShape(None) if keep else TensorShape([]))]
    axes = constant_value(axes_t)
    if axes is not None and x.shape.ndims is not None:
        _check_axes(op, axes, x.shape.ndims)
    return [(x.dtype.base_dtype, reduced_shape(x.shape, axes, keep))]


def _bool_reduce_infer(op):
    check_dtype_allowed(op, op.inputs[0].dtype, (dtypes.bool,), arg="input")
    return _reduce_infer(op)


def _arg_reduce_infer(op):
    x, axis_t = op.inputs
    axis = constant_value(axis_t)
    if axis is not None and x.shape.ndims is not None:
        if np.asarray(axis).size != 1:
            raise shape_error(op, "dimension must be a scalar")
        _check_axes(op, axis, x.shape.ndims)
    return [(op.attrs["output_type"], reduced_shape(x.shape, axis, False))]


def _scan_infer(op):
    x, axis_t = op.inputs
    if axis_t.shape.ndims not in (None, 0):
        raise shape_error(op, f"Shape must be rank 0 but is rank {axis_t.shape.ndims}")
    axis = constant_value(axis_t)
    if axis is not None and x.shape.ndims is not None:
        rank = x.shape.ndims
        if not -rank <= int(axis) < rank:
            raise shape_error(op, f"Expected scan axis in the range [{-rank}, {rank}), but got "
                                  f"{int(axis)}")
    return [(x.dtype.base_dtype, x.shape)]


def _computed_inputs_error(op, detail: str, values) -> ValueError:
    """TF's shape-function error for ops whose inputs were constant at build time."""
    base = str(shape_error(op, detail))[:-1]
    known = ", ".join(f"input[{i}] = <{v.item()}>" for i, v in enumerate(values))
    return ValueError(f"{base} and with computed input tensors: {known}.")


def range_size(start, limit, delta) -> int:
    """The length TF's Range kernel computes (integer or float formula by dtype)."""
    if isinstance(start, np.integer):
        return int((abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta)))
    return int(np.ceil(np.abs((limit - start) / delta)))


def _value_through_cast(t):
    """A build-time value, also behind the Cast that tf.range puts on Python arguments."""
    if t.op.type == "Cast":
        value = constant_value(t.op.inputs[0])
        return None if value is None else np.asarray(value).astype(t.dtype.numpy_dtype)
    return constant_value(t)


def _range_infer(op):
    for t in op.inputs:
        if t.shape.ndims not in (None, 0):
            raise shape_error(op, f"Shape must be rank 0 but is rank {t.shape.ndims}")
        check_dtype_allowed(op, t.dtype, _RANGE_DTYPES, arg="Tidx")
    values = [_value_through_cast(t) for t in op.inputs]
    dtype = op.attrs["Tidx"]
    if any(v is None for v in values):
        return [(dtype, TensorShape([None]))]
    start, limit, delta = (np.asarray(v).reshape(()) for v in values)
    if delta == 0:
        raise _computed_inputs_error(op, "Requires delta != 0", values)
    if delta > 0 and start > limit:
        raise _computed_inputs_error(
            op, f"Requires start <= limit when delta > 0: {start.item()}/{limit.item()}", values)
    if delta < 0 and start < limit:
        raise _computed_inputs_error(
            op, f"Requires start >= limit when delta < 0: {start.item()}/{limit.item()}", values)
    return [(dtype, TensorShape([range_size(start[()], limit[()], delta[()])]))]


def _linspace_infer(op):
    start_t, stop_t, num_t = op.inputs
    for t, arg in ((start_t, "start"), (stop_t, "stop"), (num_t, "num")):
        if t.shape.ndims not in (None, 0):
            raise shape_error(op, f"Shape must be rank 0 but is rank {t.shape.ndims} "
                                  f"for '{arg}'")
    if stop_t.dtype.base_dtype is not start_t.dtype.base_dtype:
        raise TypeError(f"Input 'stop' of 'LinSpace' Op has type {stop_t.dtype.name} that does "
                        f"not match type {start_t.dtype.name} of argument 'start'.")
    check_dtype_allowed(op, start_t.dtype, dtypes.FLOATS)
    check_dtype_allowed(op, num_t.dtype, (dtypes.int32, dtypes.int64), arg="Tidx")
    num = constant_value(num_t)
    if num is not None and int(num) <= 0:
        raise _computed_inputs_error(op, f"Requires num > 0: {int(num)}",
                                     [constant_value(t) for t in op.inputs])
    return [(start_t.dtype.base_dtype, TensorShape([None if num is None else int(num)]))]


def _rank_infer(op):
    return [(dtypes.int32, TensorShape([]))]


for _name in ("Sum", "Mean", "Max", "Min", "Prod"):
    register_op(_name, _reduce_infer)
for _name in ("Any", "All"):
    register_op(_name, _bool_reduce_infer)
for _name in ("ArgMax", "ArgMin"):
    register_op(_name, _arg_reduce_infer)
for _name in ("Cumsum", "Cumprod"):
    register_op(_name, _scan_infer)
register_op("Range", _range_infer)
register_op("LinSpace", _linspace_infer)
register_op("Rank", _rank_infer)


# -- tf.* builders -----------------------------------------------------------------------

def _one_of(new, old, new_name: str, old_name: str):
    """TF's deprecated_argument_lookup: the TF1 spelling is accepted, both at once is not."""
    if old is not None:
        if new is not None:
            raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
        return old
    return new


def reduction_axes(x, axis):
    """The axes tensor of a reduction: constant when the rank is known, else TF's dynamic
    Range(0, Rank(x), 1) for "all axes"."""
    if axis is not None:
        axes = convert_to_tensor(axis, name="reduction_indices", preferred_dtype=dtypes.int32)
        if axes.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"Value passed to parameter 'reduction_indices' has DataType "
                            f"{axes.dtype.name} not in list of allowed values: int32, int64")
        return axes
    if x.shape.ndims is not None:
        return make_constant(np.arange(x.shape.ndims, dtype=np.int32), name="reduction_indices")
    return range(0, rank(x), 1)


def _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices=None,
            keep_dims=None):
    axis = _one_of(axis, reduction_indices, "axis", "reduction_indices")
    keepdims = _one_of(keepdims, keep_dims, "keepdims", "keep_dims")
    x = convert_to_tensor(input_tensor, name="input_tensor")
    g = graph_of(x)
    with op_scope(g, name, op_type) as scope:
        axes = reduction_axes(x, axis)
        return g.create_op(op_type, [x, axes], {"T": x.dtype.base_dtype,
                                                "Tidx": axes.dtype.base_dtype,
                                                "keep_dims": bool(keepdims)},
                           name=scope).outputs[0]


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_any(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def _arg_reduce(op_type, x, axis, name, output_type):
    x = convert_to_tensor(x, name="input")
    g = graph_of(x)
    with op_scope(g, name, op_type) as scope:
        axis_t = convert_to_tensor(axis, name="dimension", preferred_dtype=dtypes.int32)
        if axis_t.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"Value passed to parameter 'dimension' of op '{op_type}' has "
                            f"DataType {axis_t.dtype.name} not in list of allowed values: "
                            "int32, int64")
        return g.create_op(op_type, [x, axis_t],
                           {"T": x.dtype.base_dtype, "Tidx": axis_t.dtype.base_dtype,
                            "output_type": dtypes.as_dtype(output_type)},
                           name=scope).outputs[0]


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    """Index of the largest value along `axis` (default 0); the first one on ties, and NaN
    never counts as largest (as TF's CPU kernel)."""
    axis = _one_of(axis, dimension, "axis", "dimension")
    return _arg_reduce("ArgMax", input, 0 if axis is None else axis, name, output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    axis = _one_of(axis, dimension, "axis", "dimension")
    return _arg_reduce("ArgMin", input, 0 if axis is None else axis, name, output_type)


def arg_max(input, dimension, output_type=dtypes.int64, name=None):  # noqa: A002 - TF1's op
    return _arg_reduce("ArgMax", input, dimension, name, output_type)


def arg_min(input, dimension, output_type=dtypes.int64, name=None):  # noqa: A002
    return _arg_reduce("ArgMin", input, dimension, name, output_type)


def _scan(op_type, x, axis, exclusive, reverse, name):
    x = convert_to_tensor(x, name="x")
    g = graph_of(x)
    with op_scope(g, name, op_type) as scope:
        axis_t = convert_to_tensor(axis, name="axis", preferred_dtype=dtypes.int32)
        return g.create_op(op_type, [x, axis_t],
                           {"T": x.dtype.base_dtype, "Tidx": axis_t.dtype.base_dtype,
                            "exclusive": bool(exclusive), "reverse": bool(reverse)},
                           name=scope).outputs[0]


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running sums along `axis`; `exclusive` leaves out the current element, `reverse` sums
    from the end: cumsum([a, b, c], exclusive=True, reverse=True) is [b + c, c, 0]."""
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    return _scan("Cumprod", x, axis, exclusive, reverse, name)


def _range_arg(value, dtype, name):
    if hasattr(value, "op") or hasattr(value, "_as_graph_element"):
        return convert_to_tensor(value)
    return convert_to_tensor(value, dtype=dtype, name=name)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """tf.range: `range(n)` is [0, n); without `dtype` the widest of the arguments' dtypes
    (int32 < int64 < float32 < float64) wins, so `range(1, 5.5)` is float32."""
    from engine.ops.array_ops import cast
    if limit is None:
        start, limit = 0, start
    g = graph_of(start, limit, delta)
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    with op_scope(g, name, "Range") as scope:
        args = [_range_arg(v, dtype, n) for v, n in ((start, "start"), (limit, "limit"),
                                                     (delta, "delta"))]
        for a in args:
            if a.dtype.base_dtype not in _RANGE_DTYPES:
                raise TypeError(f"tf.range takes int32, int64, float32 or float64 arguments; "
                                f"'{a.name}' is {a.dtype.name}")
        target = dtype or max((a.dtype.base_dtype for a in args), key=_RANGE_DTYPES.index)
        args = [cast(a, target) for a in args]
        return g.create_op("Range", args, {"Tidx": target}, name=scope).outputs[0]


def lin_space(start, stop, num, name=None):
    """`num` evenly spaced values from `start` to `stop` inclusive (TF's LinSpace: start +
    i * step in the input's dtype, the last value exactly `stop`)."""
    g = graph_of(start, stop, num)
    with op_scope(g, name, "LinSpace") as scope:
        start_t = convert_to_tensor(start, name="start")
        stop_t = convert_to_tensor(stop, name="stop", preferred_dtype=start_t.dtype)
        num_t = convert_to_tensor(num, name="num", preferred_dtype=dtypes.int32)
        return g.create_op("LinSpace", [start_t, stop_t, num_t],
                           {"T": start_t.dtype.base_dtype, "Tidx": num_t.dtype.base_dtype},
                           name=scope).outputs[0]


linspace = lin_space


def rank(input, name=None):  # noqa: A002 - TF's argument name
    """The number of dimensions: a constant when the static rank is known (as TF), else a
    Rank op evaluated at run time."""
    x = convert_to_tensor(input)
    g = graph_of(x)
    if x.shape.ndims is not None:
        with g.as_default():
            return make_constant(np.int32(x.shape.ndims), name=name or "Rank")
    return g.create_op("Rank", [x], {"T": x.dtype.base_dtype},
                       name=name or "Rank").outputs[0]
