"""Gradient rules of the array ops (concat, split, slice, strided slice, gather, transpose,
pad, tile, pack, select, ...), one small function per op type, side by side in one table.
Gathers get dense gradients (UnsortedSegmentSum) where TF builds IndexedSlices."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.ops import array_index as I  # noqa: N812 - short names, as in grads.py
from engine.ops import array_ops as A  # noqa: N812
from engine.ops import math_ops as M  # noqa: N812
from engine.ops.array_shapes import static_ints, static_value


def _shape_of(t, dtype=dtypes.int32):
    """t's shape as a Const when fully known (so the gradient graph stays static), else a
    Shape op."""
    if t.shape.is_fully_defined():
        return A.constant(np.asarray(t.shape.as_list(), dtype=dtype.numpy_dtype))
    return A.shape(t, out_type=dtype)


def _masks(op) -> dict:
    return {k: op.attrs[k] for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                     "new_axis_mask", "shrink_axis_mask")}


def _rank(t) -> int | None:
    return t.shape.ndims


# -- concat and split -------------------------------------------------------------------------

def _concat_grad(op, grad):
    """Each input gets the slice of grad it was copied into (TF: ConcatOffset + Slice)."""
    values, axis_t = op.inputs[:-1], op.inputs[-1]
    axis = static_ints(axis_t)
    rank = next((v.shape.ndims for v in values if v.shape.ndims is not None), None)
    if axis is not None and rank is not None and all(v.shape.is_fully_defined() for v in values):
        a, offset, out = axis[0] % rank, 0, []
        for v in values:
            dims = v.shape.as_list()
            begin = [offset if j == a else 0 for j in range(rank)]
            out.append(I.slice(grad, np.asarray(begin, np.int32), np.asarray(dims, np.int32)))
            offset += dims[a]
        return out + [None]
    shapes = A.shape_n(list(values))
    offsets = A.concat_offset(axis_t, shapes)
    return [I.slice(grad, o, s) for o, s in zip(offsets, shapes)] + [None]


def _split_grad(op, *grads):
    return None, A.concat(list(grads), op.inputs[0])


def _split_v_grad(op, *grads):
    return A.concat(list(grads), op.inputs[2]), None, None


def _pack_grad(op, grad):
    return A.unstack(grad, num=op.attrs["N"], axis=op.attrs["axis"])


def _unpack_grad(op, *grads):
    return [A.stack(list(grads), axis=op.attrs["axis"])]


# -- slicing ----------------------------------------------------------------------------------

def _slice_grad(op, grad):
    """Pads grad back to the input's shape with zeros before and after the slice."""
    x, begin_t = op.inputs[0], op.inputs[1]
    y = op.outputs[0]
    begin = static_ints(begin_t)
    if begin is not None and x.shape.is_fully_defined() and y.shape.is_fully_defined():
        pairs = [[b, xd - yd - b] for b, xd, yd in zip(begin, x.shape.as_list(),
                                                       y.shape.as_list())]
        paddings = np.asarray(pairs, dtype=np.int32).reshape(-1, 2)
    else:
        dt = begin_t.dtype.base_dtype
        after = M.subtract(M.subtract(A.shape(x, out_type=dt), A.shape(y, out_type=dt)), begin_t)
        paddings = A.concat([A.reshape(begin_t, [-1, 1]), A.reshape(after, [-1, 1])], 1)
    return A.pad(grad, paddings), None, None


def _strided_slice_grad(op, grad):
    x, begin, end, strides = op.inputs
    shape = _shape_of(x, begin.dtype.base_dtype)
    return (I.strided_slice_grad(shape, begin, end, strides, grad, **_masks(op)),
            None, None, None)


def _strided_slice_grad_grad(op, grad):
    _, begin, end, strides, _ = op.inputs
    return None, None, None, None, I.strided_slice(grad, begin, end, strides, **_masks(op))


# -- gathers and scatters ---------------------------------------------------------------------

def _gather_axis(op) -> int:
    params = op.inputs[0]
    axis = static_ints(op.inputs[2])
    rank = _rank(params)
    if axis is None or (rank is None and axis[0] != 0):
        raise ValueError(f"The gradient of GatherV2 '{op.name}' needs a constant axis, and "
                         "params of known rank unless the axis is 0.")
    return axis[0] % rank if rank else axis[0]


def _gather_grad(op, grad):
    """Dense: the gathered rows are summed back into their params rows. A non-zero axis is
    moved to the front for the sum and back afterwards."""
    params, indices = op.inputs[0], op.inputs[1]
    axis = _gather_axis(op)
    flat_indices = A.reshape(indices, [-1])
    if params.shape.is_fully_defined():
        dims = params.shape.as_list()
        values_shape = np.asarray(dims[:axis] + [-1] + dims[axis + 1:], np.int32)
        count = dims[axis]
    else:
        full = A.shape(params)
        pieces = [I.strided_slice(full, [0], [axis])] if axis else []
        pieces += [[-1], I.strided_slice(full, [axis + 1], [0], end_mask=1)]
        values_shape = A.concat(pieces, 0)
        count = I.strided_slice(full, [axis], [axis + 1], shrink_axis_mask=1)
    values = A.reshape(grad, values_shape)
    if axis == 0:
        return I.unsorted_segment_sum(values, flat_indices, count), None, None
    perm = [axis] + list(range(axis)) + list(range(axis + 1, _rank(params)))
    summed = I.unsorted_segment_sum(A.transpose(values, perm), flat_indices, count)
    return A.transpose(summed, np.argsort(perm).astype(np.int32)), None, None


def _gather_nd_grad(op, grad):
    params, indices = op.inputs
    return I.scatter_nd(indices, grad, _shape_of(params, indices.dtype.base_dtype)), None


def _scatter_nd_grad(op, grad):
    return None, I.gather_nd(grad, op.inputs[0]), None


def _unsorted_segment_sum_grad(op, grad):
    """Each data element gets its segment's gradient; dropped (negative) ids get zero."""
    data, ids = op.inputs[0], op.inputs[1]
    gathered = I.gather(grad, M.maximum(ids, A.zeros_like(ids)))
    keep = M.greater(ids, -1)
    if _rank(data) is None or _rank(ids) is None:
        # One trailing 1 per data dim beyond the ids' dims, counted at run time.
        extra = M.subtract(A.size(A.shape(gathered)), A.size(A.shape(ids)))
        ones = A.fill(A.expand_dims(extra, 0), np.int32(1))
        keep = A.reshape(keep, A.concat([A.shape(ids), ones], 0))
    elif _rank(data) > _rank(ids):
        ones = np.ones(_rank(data) - _rank(ids), np.int32)
        keep = A.reshape(keep, A.concat([A.shape(ids), ones], 0))
    return A.where_v2(keep, gathered, A.zeros_like(gathered)), None, None


# -- restructuring ----------------------------------------------------------------------------

def _transpose_grad(op, grad):
    perm = static_ints(op.inputs[1])
    if perm is not None:
        rank = len(perm)
        inverse = np.argsort([p % rank for p in perm]).astype(np.int32)
        return A.transpose(grad, inverse), None
    return A.transpose(grad, A.invert_permutation(op.inputs[1])), None


def _squeeze_grad(op, grad):
    return [A.reshape(grad, _shape_of(op.inputs[0]))]


def _pad_grad(op, grad):
    """The input's part of grad: a Slice from the leading paddings, of the input's shape."""
    x, paddings = op.inputs[0], op.inputs[1]
    dtype = paddings.dtype.base_dtype
    value = static_value(paddings)
    if value is not None:
        begin = np.asarray(value).reshape(-1, 2)[:, 0].astype(dtype.numpy_dtype)
    else:
        begin = A.reshape(I.slice(paddings, [0, 0], [-1, 1]), [-1])
    x_grad = I.slice(grad, begin, _shape_of(x, dtype))
    return [x_grad, None] + ([None] if op.type == "PadV2" else [])


def _mirror_pad_grad(op, grad):
    return A.mirror_pad_grad(grad, op.inputs[1], op.attrs["mode"]), None


def _mirror_pad_grad_grad(op, grad):
    return A.pad(grad, op.inputs[1], mode=op.attrs["mode"]), None


def _tile_grad(op, grad):
    """Views grad as [m0, d0, m1, d1, ...] and sums over the multiples' axes."""
    x, multiples = op.inputs
    rank = _rank(x) if _rank(x) is not None else multiples.shape[0]
    if rank is None:
        raise ValueError(f"The gradient of Tile '{op.name}' needs an input of known rank.")
    m = static_ints(multiples)
    if m is not None and x.shape.is_fully_defined():
        split_shape = np.asarray([v for pair in zip(m, x.shape.as_list()) for v in pair],
                                 np.int32).reshape(-1)
    else:
        shape = A.shape(x, out_type=multiples.dtype.base_dtype)
        split_shape = A.reshape(A.transpose(A.stack([multiples, shape])), [-1])
    x_grad = M.reduce_sum(A.reshape(grad, split_shape), list(range(0, 2 * rank, 2)))
    x_grad.set_shape(x.shape)
    return x_grad, None


def _reverse_grad(op, grad):
    return A.reverse(grad, op.inputs[1]), None


def _reverse_sequence_grad(op, grad):
    """Reversing the same prefixes again puts each gradient back where its value came from."""
    return A.reverse_sequence(grad, op.inputs[1], seq_axis=op.attrs["seq_dim"],
                              batch_axis=op.attrs["batch_dim"]), None


# -- selection --------------------------------------------------------------------------------

def _select_grad(op, grad):
    c, x = op.inputs[0], op.inputs[1]
    zeros = A.zeros_like(x)
    return None, A.where(c, grad, zeros), A.where(c, zeros, grad)


def _sum_to_shape(g, x, z):
    """Sums g (shaped like the broadcast output z) back to x's shape."""
    if x.shape.is_fully_defined() and z.shape.is_fully_defined():
        xs, zs = x.shape.as_list(), z.shape.as_list()
        if xs == zs:
            return g
        lead = len(zs) - len(xs)
        axes = list(range(lead)) + [lead + i for i, d in enumerate(xs)
                                    if d == 1 and zs[lead + i] != 1]
        return A.reshape(M.reduce_sum(g, axes, keepdims=True), np.asarray(xs, np.int32))
    axes, _ = M.broadcast_gradient_args(A.shape(x), A.shape(z))
    return A.reshape(M.reduce_sum(g, axes, keepdims=True), A.shape(x))


def _select_v2_grad(op, grad):
    c, x, y = op.inputs
    zero = A.zeros([], dtype=grad.dtype.base_dtype)
    z = op.outputs[0]
    return (None, _sum_to_shape(A.where_v2(c, grad, zero), x, z),
            _sum_to_shape(A.where_v2(c, zero, grad), y, z))


GRADIENTS = {
    "ConcatV2": _concat_grad, "Split": _split_grad, "SplitV": _split_v_grad,
    "Pack": _pack_grad, "Unpack": _unpack_grad, "Slice": _slice_grad,
    "StridedSlice": _strided_slice_grad, "StridedSliceGrad": _strided_slice_grad_grad,
    "GatherV2": _gather_grad, "GatherNd": _gather_nd_grad, "ScatterNd": _scatter_nd_grad,
    "UnsortedSegmentSum": _unsorted_segment_sum_grad, "Transpose": _transpose_grad,
    "Squeeze": _squeeze_grad, "Pad": _pad_grad, "PadV2": _pad_grad,
    "MirrorPad": _mirror_pad_grad, "MirrorPadGrad": _mirror_pad_grad_grad, "Tile": _tile_grad,
    "ReverseV2": _reverse_grad, "ReverseSequence": _reverse_sequence_grad,
    "Select": _select_grad, "SelectV2": _select_v2_grad,
}

# TF marks these; Where's int64 coordinates carry no gradient either.
NOT_DIFFERENTIABLE = ("ConcatOffset", "InvertPermutation", "ShapeN", "OneHot", "Where")
