"""Indexing builders: tf.slice, tf.strided_slice and `Tensor.__getitem__` (TF's _slice_helper),
tf.gather, tf.gather_nd, tf.scatter_nd, tf.unsorted_segment_sum and tf.boolean_mask.
array_ops re-exports them, so `tf.*` finds them there."""

from __future__ import annotations

import builtins
import numbers

import numpy as np

from engine import dtypes
from engine.graph import Tensor
from engine.ops.core import convert_to_tensor, graph_of, op_scope

_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
                     "scalar tf.int32/tf.int64 tensors are valid indices")
_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def slice(input_, begin, size, name: str | None = None):  # noqa: A001 - TF's name
    x = convert_to_tensor(input_)
    g = graph_of(x, begin, size)
    with op_scope(g, name, "Slice") as scope:
        begin_t = A.index_tensor(begin, "begin")
        size_t = convert_to_tensor(size, dtype=begin_t.dtype.base_dtype, name="size") \
            if not A.is_graph_value(size) else convert_to_tensor(size)
        return g.create_op("Slice", [x, begin_t, size_t], {"T": x.dtype.base_dtype,
                                                           "Index": begin_t.dtype.base_dtype},
                           name=scope).outputs[0]


def _spec_tensors(begin, end, strides):
    """begin/end/strides as tensors of one index dtype (int64 if any of them is)."""
    ts = [A.index_tensor(v, n) for v, n in ((begin, "begin"), (end, "end"))]
    ts.append(A.ones_like(ts[0]) if strides is None else A.index_tensor(strides, "strides"))
    if any(t.dtype.base_dtype is dtypes.int64 for t in ts):
        ts = [A.cast(t, dtypes.int64) for t in ts]
    return ts


def _mask_attrs(begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask):
    values = (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)
    return {k: int(v) for k, v in zip(_MASKS, values)}


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name: str | None = None):
    """TF's StridedSlice: numpy-style ranges, with each mask bit i marking entry i of the spec
    as "from the start", "to the end", `...`, a new axis of size 1, or an index (dim dropped)."""
    x = convert_to_tensor(input_)
    g = graph_of(x, begin, end, strides)
    with op_scope(g, name, "StridedSlice") as scope:
        begin_t, end_t, strides_t = _spec_tensors(begin, end, strides)
        attrs = {"T": x.dtype.base_dtype, "Index": begin_t.dtype.base_dtype,
                 **_mask_attrs(begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                               shrink_axis_mask)}
        return g.create_op("StridedSlice", [x, begin_t, end_t, strides_t], attrs,
                           name=scope).outputs[0]


def strided_slice_grad(shape, begin, end, strides, dy, begin_mask=0, end_mask=0,
                       ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0,
                       name: str | None = None):
    """dy placed where StridedSlice took it from, zeros elsewhere, in a tensor of `shape`."""
    dy = convert_to_tensor(dy)
    g = graph_of(shape, begin, end, strides, dy)
    with op_scope(g, name, "StridedSliceGrad") as scope:
        shape_t = A.index_tensor(shape, "shape")
        begin_t, end_t, strides_t = _spec_tensors(begin, end, strides)
        if shape_t.dtype.base_dtype is not begin_t.dtype.base_dtype:
            shape_t = A.cast(shape_t, begin_t.dtype.base_dtype)
        attrs = {"T": dy.dtype.base_dtype, "Index": begin_t.dtype.base_dtype,
                 **_mask_attrs(begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                               shrink_axis_mask)}
        return g.create_op("StridedSliceGrad", [shape_t, begin_t, end_t, strides_t, dy], attrs,
                           name=scope).outputs[0]


# -- Tensor.__getitem__ ----------------------------------------------------------------------

def _check_index(idx) -> None:
    if isinstance(idx, numbers.Integral):
        return
    dtype = getattr(idx, "dtype", None)
    base = getattr(dtype, "base_dtype", None)
    shape = getattr(idx, "shape", None)
    if base not in (dtypes.int32, dtypes.int64) or \
            (shape is not None and getattr(shape, "ndims", None) not in (0, None)):
        raise TypeError(f"{_SLICE_TYPE_ERROR}, got {idx!r}")


def _sparse_spec(key) -> tuple[list, list, list, dict]:
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, s in enumerate(key):
        if isinstance(s, builtins.slice):
            for value, out, mask, default in ((s.start, begin, "begin_mask", 0),
                                              (s.stop, end, "end_mask", 0),
                                              (s.step, strides, None, 1)):
                if value is None:
                    out.append(default)
                    if mask:
                        masks[mask] |= 1 << i
                else:
                    _check_index(value)
                    out.append(value)
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= 1 << i
        else:
            _check_index(s)
            begin.append(s)
            end.append(s + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= 1 << i
    return begin, end, strides, masks


def _slice_helper(tensor, slice_spec):
    """`x[...]` as TF builds it: one StridedSlice named `strided_slice`, its begin/end/strides
    packed into vectors (Consts `stack`, `stack_1`, `stack_2` when all are Python ints)."""
    x = convert_to_tensor(tensor)
    if isinstance(slice_spec, bool) or \
            (isinstance(slice_spec, Tensor) and slice_spec.dtype.base_dtype is dtypes.bool) or \
            (isinstance(slice_spec, np.ndarray) and slice_spec.dtype == bool):
        return boolean_mask(x, slice_spec)
    key = slice_spec if isinstance(slice_spec, (list, tuple)) else [slice_spec]
    begin, end, strides, masks = _sparse_spec(key)
    g = graph_of(x, begin, end, strides)
    with op_scope(g, None, "strided_slice") as scope:
        if begin:
            begin, end, strides = (A.stack(v, name="stack") for v in (begin, end, strides))
        else:
            begin = end = strides = A.constant([], dtype=dtypes.int32, name="stack")
        return strided_slice(x, begin, end, strides, name=scope, **masks)


def _not_iterable(self):
    raise TypeError(f"'{type(self).__name__}' object is not iterable.")


def install_slicing(cls) -> None:
    """Gives Tensor (and Variable) numpy-style `x[...]`; iteration stays an error, as in TF."""
    cls.__getitem__ = _slice_helper
    if "__iter__" not in cls.__dict__:
        cls.__iter__ = _not_iterable


# -- gathers and scatters --------------------------------------------------------------------

def gather(params, indices, validate_indices=None, name: str | None = None, axis=None,
           batch_dims: int = 0):
    if batch_dims != 0:
        raise ValueError(f"tf.gather(batch_dims={batch_dims}) is not supported by this engine; "
                         "only batch_dims=0 is.")
    params_t = convert_to_tensor(params)
    g = graph_of(params_t, indices, axis)
    with op_scope(g, name, "GatherV2") as scope:
        indices_t = convert_to_tensor(indices, name="indices")
        axis_t = A.index_tensor(0 if axis is None else axis, "axis")
        attrs = {"Tparams": params_t.dtype.base_dtype, "Tindices": indices_t.dtype.base_dtype,
                 "Taxis": axis_t.dtype.base_dtype, "batch_dims": 0}
        return g.create_op("GatherV2", [params_t, indices_t, axis_t], attrs,
                           name=scope).outputs[0]


def gather_nd(params, indices, name: str | None = None, batch_dims: int = 0):
    if batch_dims != 0:
        raise ValueError(f"tf.gather_nd(batch_dims={batch_dims}) is not supported by this "
                         "engine; only batch_dims=0 is.")
    params_t = convert_to_tensor(params)
    g = graph_of(params_t, indices)
    with op_scope(g, name, "GatherNd") as scope:
        indices_t = convert_to_tensor(indices, name="indices")
        attrs = {"Tparams": params_t.dtype.base_dtype, "Tindices": indices_t.dtype.base_dtype}
        return g.create_op("GatherNd", [params_t, indices_t], attrs, name=scope).outputs[0]


def scatter_nd(indices, updates, shape, name: str | None = None):
    """Zeros of `shape` with `updates` added at `indices` (repeated indices sum)."""
    g = graph_of(indices, updates, shape)
    with op_scope(g, name, "ScatterNd") as scope:
        indices_t = convert_to_tensor(indices, name="indices")
        updates_t = convert_to_tensor(updates, name="updates")
        shape_t = convert_to_tensor(shape, dtype=indices_t.dtype.base_dtype, name="shape") \
            if not A.is_graph_value(shape) else convert_to_tensor(shape)
        attrs = {"T": updates_t.dtype.base_dtype, "Tindices": indices_t.dtype.base_dtype}
        return g.create_op("ScatterNd", [indices_t, updates_t, shape_t], attrs,
                           name=scope).outputs[0]


def unsorted_segment_sum(data, segment_ids, num_segments, name: str | None = None):
    """out[i] = sum of data[j...] over the j with segment_ids[j...] == i; negative ids are
    dropped, as in TF."""
    data_t = convert_to_tensor(data)
    g = graph_of(data_t, segment_ids, num_segments)
    with op_scope(g, name, "UnsortedSegmentSum") as scope:
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        num = A.index_tensor(num_segments, "num_segments")
        attrs = {"T": data_t.dtype.base_dtype, "Tindices": ids.dtype.base_dtype,
                 "Tnumsegments": num.dtype.base_dtype}
        return g.create_op("UnsortedSegmentSum", [data_t, ids, num], attrs,
                           name=scope).outputs[0]


def boolean_mask(tensor, mask, name: str = "boolean_mask", axis=None):
    """The elements (or sub-tensors) of `tensor` where `mask` is true, as TF builds it:
    flatten the masked dims into one, then gather the true positions (Where + Squeeze)."""
    g = graph_of(tensor, mask)
    with op_scope(g, name, "boolean_mask"):
        x = convert_to_tensor(tensor, name="tensor")
        mask_t = convert_to_tensor(mask, name="mask")
        k = mask_t.shape.ndims
        if k == 0:
            raise ValueError("mask cannot be scalar.")
        if k is None:
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None.  E.g. shape=[None] is ok, but shape=None "
                             "is not.")
        axis = 0 if axis is None else int(axis)
        covered = x.shape[axis:axis + k]
        if not covered.is_compatible_with(mask_t.shape):
            raise ValueError(f"Shapes {covered} and {mask_t.shape} are incompatible")
        flat = _flatten_masked_dims(x, mask_t, axis, k)
        indices = A.squeeze(A.where(A.reshape(mask_t, [-1])), axis=[1])
        return gather(flat, indices, axis=axis)


def _flatten_masked_dims(x, mask, axis: int, k: int):
    count = mask.shape.num_elements()
    if count is None:
        count = x.shape[axis:axis + k].num_elements()
    if x.shape.ndims is not None and x.shape.is_fully_defined():
        dims = x.shape.as_list()
        return A.reshape(x, dims[:axis] + [-1 if count is None else count] + dims[axis + k:])
    full = A.shape(x)
    new_shape = A.concat([strided_slice(full, [0], [axis]) if axis else
                          A.constant([], dtype=dtypes.int32),
                          [-1 if count is None else count],
                          strided_slice(full, [axis + k], [0], end_mask=1)], 0)
    flat = A.reshape(x, new_shape)
    if x.shape.ndims is not None:
        dims = list(x.shape.dims)
        flat.set_shape(dims[:axis] + [count] + dims[axis + k:])
    return flat


# array_ops re-exports this module's builders, and these use array_ops' helpers: importing it
# last lets either module be imported first.
from engine.ops import array_ops as A  # noqa: E402,N812
