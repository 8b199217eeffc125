"""Static shape inference of the indexing and restructuring array ops (concat, split, slice,
strided slice, gather, transpose, pad, tile, pack, where, one_hot, ...), as TF's C++ shape
functions do it: exact where inputs are known, unknown dims or rank where they are not."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.ops import strided_slice
from engine.ops.core import check_dtype_allowed, constant_value, shape_error
from engine.ops.registry import register_op
from engine.shapes import TensorShape, broadcast_shapes

INDEX_DTYPES = (dtypes.int32, dtypes.int64)
UNKNOWN = TensorShape(None)


# -- helpers -----------------------------------------------------------------------------

def static_value(tensor) -> np.ndarray | None:
    """The build-time value of a tensor: a Const, the Shape of a known tensor, or a Pack of
    such values (how `x[1:n]` and `tf.stack([a, 2])` pass their indices)."""
    value = constant_value(tensor)
    if value is not None or tensor.op.type != "Pack":
        return value
    parts = [static_value(t) for t in tensor.op.inputs]
    if any(p is None for p in parts):
        return None
    return np.stack(parts, axis=tensor.op.attrs["axis"]).astype(tensor.dtype.numpy_dtype)


def static_ints(tensor) -> list[int] | None:
    value = static_value(tensor)
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def shape_from_tensor(tensor) -> TensorShape:
    """A shape given as a 1-D int tensor: its value where known (-1 = unknown dim), else
    unknown dims of the tensor's length."""
    value = static_ints(tensor)
    if value is not None:
        return TensorShape([None if d < 0 else d for d in value])
    n = tensor.shape[0] if tensor.shape.ndims == 1 else None
    return TensorShape(None if n is None else [None] * n)


def unknown_of_rank(rank: int | None) -> TensorShape:
    return TensorShape(None if rank is None else [None] * rank)


def merge(op, a: TensorShape, b: TensorShape, context: str = "") -> TensorShape:
    """TF's InferenceContext::Merge, with its messages."""
    if a.ndims is None:
        return b
    if b.ndims is None:
        return a
    suffix = f" {context}" if context else ""
    if a.ndims != b.ndims:
        raise shape_error(op, f"Shapes must be equal rank, but are {a.ndims} and {b.ndims}"
                              f"{suffix}")
    for k, (x, y) in enumerate(zip(a.dims, b.dims)):
        if x is not None and y is not None and x != y:
            raise shape_error(op, f"Dimension {k} in both shapes must be equal, but are {x} and "
                                  f"{y}. Shapes are {a.bracket_str()} and {b.bracket_str()}."
                                  f"{suffix}")
    return a.merge_with(b)


def with_rank(op, shape: TensorShape, rank: int) -> TensorShape:
    if shape.ndims is None:
        return unknown_of_rank(rank)
    if shape.ndims != rank:
        raise shape_error(op, f"Shape must be rank {rank} but is rank {shape.ndims}")
    return shape


def with_rank_at_least(op, shape: TensorShape, rank: int) -> None:
    if shape.ndims is not None and shape.ndims < rank:
        raise shape_error(op, f"Shape must be at least rank {rank} but is rank {shape.ndims}")


def _add_dims(a, b):
    return None if a is None or b is None else a + b


def _scalar_axis(op, t) -> int | None:
    with_rank(op, t.shape, 0)
    value = static_ints(t)
    return None if value is None else value[0]


def _same_dtype_list(op, values, arg: str) -> dtypes.DType:
    kinds = [v.dtype.base_dtype for v in values]
    if len(set(kinds)) > 1:
        raise TypeError(f"Tensors in list passed to '{arg}' of '{op.type}' Op have types "
                        f"[{', '.join(k.name for k in kinds)}] that don't all match.")
    return kinds[0]


# -- concat and split ----------------------------------------------------------------------

def _concat_infer(op):
    values, axis_t = op.inputs[:-1], op.inputs[-1]
    dtype = _same_dtype_list(op, values, "values")
    check_dtype_allowed(op, axis_t.dtype, INDEX_DTYPES, "Tidx")
    ranks = [v.shape.ndims for v in values if v.shape.ndims is not None]
    rank = ranks[0] if ranks else None
    for v in values:
        if rank is not None:
            with_rank(op, v.shape, rank)
    if rank == 0:
        raise shape_error(op, "Can't concatenate scalars (use tf.stack instead)")
    axis = _scalar_axis(op, axis_t)
    if axis is None or rank is None:
        return [(dtype, unknown_of_rank(rank))]
    with_rank_at_least(op, unknown_of_rank(rank), -axis if axis < 0 else axis + 1)
    axis %= rank
    known = [v.shape for v in values]
    # TF merges from the last input backwards, the dims before and after the axis separately.
    before, middle, after = known[-1][:axis], known[-1][axis], known[-1][axis + 1:]
    for s in reversed(known[:-1]):
        before = merge(op, s[:axis], before)
        middle = _add_dims(middle, s[axis])
        after = merge(op, s[axis + 1:], after)
    return [(dtype, TensorShape(list(before.dims) + [middle] + list(after.dims)))]


def _concat_offset_infer(op):
    shapes = op.inputs[1:]
    return [(s.dtype.base_dtype, merge(op, s.shape, shapes[0].shape)) for s in shapes]


def _split_axis(op, axis_t, x) -> int | None:
    axis = _scalar_axis(op, axis_t)
    if axis is None or x.shape.ndims is None:
        return None
    with_rank_at_least(op, x.shape, -axis if axis < 0 else axis + 1)
    return axis % x.shape.ndims


def _split_infer(op):
    axis_t, x = op.inputs
    n = op.attrs["num_split"]
    axis = _split_axis(op, axis_t, x)
    if axis is None:
        return [(x.dtype.base_dtype, unknown_of_rank(x.shape.ndims))] * n
    dims = list(x.shape.dims)
    if dims[axis] is not None:
        if dims[axis] % n:
            raise shape_error(op, f"Dimension size must be evenly divisible by {n} but is "
                                  f"{dims[axis]}")
        dims[axis] //= n
    return [(x.dtype.base_dtype, TensorShape(dims))] * n


def _split_v_sizes(op, sizes: list[int], total: int | None) -> list[int | None]:
    if sum(1 for s in sizes if s == -1) > 1:
        raise shape_error(op, "size_splits can only have one -1")
    known = sum(s for s in sizes if s != -1)
    if -1 in sizes:
        sizes = [(None if total is None else total - known) if s == -1 else s for s in sizes]
    for i, s in enumerate(sizes):
        if s is not None and s < 0:
            raise shape_error(op, f"Split size at index {i} must be >= 0. Got: {s}")
    if total is not None and None not in sizes and sum(sizes) != total:
        raise shape_error(op, f"can't split axis of size {total} into pieces of size "
                              f"[{','.join(str(s) for s in sizes)}]")
    return sizes


def _split_v_infer(op):
    x, sizes_t, axis_t = op.inputs
    n = op.attrs["num_split"]
    sizes_shape = with_rank(op, sizes_t.shape, 1)
    if sizes_shape[0] is not None and sizes_shape[0] != n:
        raise shape_error(op, f"Number of split outputs ({n}) does not match the size of "
                              f"size_splits ({sizes_shape[0]})")
    axis = _split_axis(op, axis_t, x)
    dtype = x.dtype.base_dtype
    if axis is None:
        return [(dtype, unknown_of_rank(x.shape.ndims))] * n
    if x.shape.ndims == 0:
        raise shape_error(op, "Can't split scalars")
    sizes = static_ints(sizes_t)
    dims = list(x.shape.dims)
    if sizes is None:
        return [(dtype, TensorShape(dims[:axis] + [None] + dims[axis + 1:]))] * n
    sizes = _split_v_sizes(op, sizes, dims[axis])
    return [(dtype, TensorShape(dims[:axis] + [s] + dims[axis + 1:])) for s in sizes]


# -- slicing -------------------------------------------------------------------------------

def _slice_infer(op):
    x, begin_t, size_t = op.inputs
    lengths = merge(op, with_rank(op, begin_t.shape, 1), with_rank(op, size_t.shape, 1))
    if lengths[0] is not None:
        with_rank(op, x.shape, lengths[0])
    rank = lengths[0] if lengths[0] is not None else x.shape.ndims
    sizes, begins = static_ints(size_t), static_ints(begin_t)
    if sizes is None:
        return [(x.dtype.base_dtype, unknown_of_rank(rank))]
    dims = []
    for i, s in enumerate(sizes):
        dim = x.shape[i] if x.shape.ndims is not None else None
        if s != -1:
            dims.append(s)
        elif begins is not None and dim is not None:
            dims.append(dim - begins[i])
        else:
            dims.append(None)
    return [(x.dtype.base_dtype, TensorShape(dims))]


def _spec_lengths(op, tensors) -> int | None:
    shapes = [with_rank(op, t.shape, 1) for t in tensors]
    lengths = shapes[0]
    for s in shapes[1:]:
        lengths = merge(op, lengths, s)
    return lengths[0]


def _strided_slice_infer(op):
    x, begin_t, end_t, strides_t = op.inputs
    for t in (begin_t, end_t, strides_t):
        check_dtype_allowed(op, t.dtype, INDEX_DTYPES, "Index")
    n = _spec_lengths(op, (begin_t, end_t, strides_t))
    strides = static_ints(strides_t)
    masks = strided_slice.Masks.of(op.attrs)
    if masks.ellipsis & (masks.ellipsis - 1):
        raise shape_error(op, "Multiple ellipses in slice spec not allowed")
    if x.shape.ndims is None or n is None or strides is None:
        return [(x.dtype.base_dtype, UNKNOWN)]
    try:
        dense = strided_slice.resolve(list(x.shape.dims), static_ints(begin_t),
                                      static_ints(end_t), strides, masks)
    except strided_slice.SliceSpecError as e:
        raise shape_error(op, str(e)) from None
    return [(x.dtype.base_dtype, TensorShape(dense.final))]


def _strided_slice_grad_infer(op):
    shape_t, dy = op.inputs[0], op.inputs[4]
    return [(dy.dtype.base_dtype, shape_from_tensor(shape_t))]


# -- gathers and scatters --------------------------------------------------------------------

def _gather_infer(op):
    params, indices, axis_t = op.inputs
    check_dtype_allowed(op, indices.dtype, INDEX_DTYPES, "Tindices")
    with_rank_at_least(op, params.shape, 1)
    axis = _scalar_axis(op, axis_t)
    pshape, ishape = params.shape, indices.shape
    dtype = params.dtype.base_dtype
    if axis is None:
        known = pshape.ndims is not None and ishape.ndims is not None
        return [(dtype, unknown_of_rank(pshape.ndims + ishape.ndims - 1 if known else None))]
    with_rank_at_least(op, pshape, -axis if axis < 0 else axis + 1)
    if pshape.ndims is None or ishape.ndims is None:
        return [(dtype, UNKNOWN)]
    axis %= pshape.ndims
    dims = list(pshape.dims[:axis]) + list(ishape.dims) + list(pshape.dims[axis + 1:])
    return [(dtype, TensorShape(dims))]


def _gather_nd_infer(op):
    params, indices = op.inputs
    check_dtype_allowed(op, indices.dtype, INDEX_DTYPES, "Tindices")
    with_rank_at_least(op, indices.shape, 1)
    depth = indices.shape[-1] if indices.shape.ndims is not None else None
    dtype = params.dtype.base_dtype
    if params.shape.ndims is None or depth is None:
        return [(dtype, UNKNOWN)]
    if depth > params.shape.ndims:
        raise shape_error(op, f"indices.shape[-1] must be <= params.rank, but saw indices "
                              f"shape: {indices.shape.bracket_str()} and params shape: "
                              f"{params.shape.bracket_str()}")
    dims = list(indices.shape.dims[:-1]) + list(params.shape.dims[depth:])
    return [(dtype, TensorShape(dims))]


def _scatter_nd_infer(op):
    indices, updates, shape_t = op.inputs
    check_dtype_allowed(op, indices.dtype, INDEX_DTYPES, "Tindices")
    return [(updates.dtype.base_dtype, shape_from_tensor(shape_t))]


def _unsorted_segment_sum_infer(op):
    data, ids, num_t = op.inputs
    check_dtype_allowed(op, ids.dtype, INDEX_DTYPES, "Tindices")
    dtype = data.dtype.base_dtype
    if data.shape.ndims is None or ids.shape.ndims is None:
        return [(dtype, UNKNOWN)]
    k = ids.shape.ndims
    with_rank_at_least(op, data.shape, k)
    for a, b in zip(data.shape.dims[:k], ids.shape.dims):
        if a is not None and b is not None and a != b:
            raise shape_error(op, f"Dimensions must be equal, but are {a} and {b}")
    num = static_ints(num_t)
    return [(dtype, TensorShape([None if num is None else num[0]] + list(data.shape.dims[k:])))]


# -- permutations and reshapes ------------------------------------------------------------

def _transpose_infer(op):
    x, perm_t = op.inputs
    dtype = x.dtype.base_dtype
    perm = static_ints(perm_t)
    length = perm_t.shape[0] if perm_t.shape.ndims == 1 else None
    # The rank comes from the input, else from perm's length or value.
    rank = next((r for r in (x.shape.ndims, length, None if perm is None else len(perm))
                 if r is not None), None)
    if rank is None:
        return [(dtype, UNKNOWN)]
    if x.shape.ndims is None and rank < 2:
        return [(dtype, x.shape)]
    with_rank(op, perm_t.shape, 1)
    if length is not None and length != rank:
        raise shape_error(op, f"Dimension must be {rank} but is {length}")
    if perm is None:
        return [(dtype, unknown_of_rank(rank))]
    dims = []
    for p in perm:
        if not -rank <= p < rank:
            raise shape_error(op, f"perm dim {p} is out of range of input rank {rank}")
        dims.append(x.shape[p] if x.shape.ndims is not None else None)
    return [(dtype, TensorShape(dims))]


def _invert_permutation_infer(op):
    x = op.inputs[0]
    check_dtype_allowed(op, x.dtype, INDEX_DTYPES)
    return [(x.dtype.base_dtype, with_rank(op, x.shape, 1))]


def _squeeze_infer(op):
    x = op.inputs[0]
    dtype, rank = x.dtype.base_dtype, x.shape.ndims
    if rank is None:
        return [(dtype, UNKNOWN)]
    wanted = []
    for i, d in enumerate(op.attrs["squeeze_dims"]):
        if not -rank <= d < rank:
            raise shape_error(op, f"squeeze_dims[{i}] not in [{-rank},{rank}).")
        wanted.append(d % rank)
    dims = []
    for i, dim in enumerate(x.shape.dims):
        explicit = i in wanted
        if dim is None:
            if explicit:
                continue
            if not wanted:
                return [(dtype, UNKNOWN)]
        elif dim == 1:
            if explicit or not wanted:
                continue
        elif explicit:
            raise shape_error(op, f"Can not squeeze dim[{i}], expected a dimension of 1, got "
                                  f"{dim}")
        dims.append(dim)
    return [(dtype, TensorShape(dims))]


def _padded_shape(op, x, paddings_t, sign: int = 1) -> TensorShape:
    check_dtype_allowed(op, paddings_t.dtype, INDEX_DTYPES, "Tpaddings")
    pshape = with_rank(op, paddings_t.shape, 2)
    if pshape[1] is not None and pshape[1] != 2:
        raise shape_error(op, f"Dimension must be 2 but is {pshape[1]}")
    n = pshape[0]
    if n is not None:
        with_rank(op, x.shape, n)
    elif x.shape.ndims is not None:
        n = x.shape.ndims
    value = static_value(paddings_t)
    if value is None:
        return unknown_of_rank(n)
    value = np.asarray(value).reshape(-1, 2)
    with_rank(op, x.shape, len(value))
    if (value < 0).any():
        raise shape_error(op, "Paddings must be non-negative")
    dims = x.shape.dims if x.shape.ndims is not None else [None] * len(value)
    return TensorShape([None if d is None else d + sign * int(a + b)
                        for d, (a, b) in zip(dims, value)])


def _pad_infer(op):
    if op.type == "PadV2":
        x, value = op.inputs[0], op.inputs[2]
        if value.dtype.base_dtype is not x.dtype.base_dtype:
            raise TypeError(f"Input 'constant_values' of 'PadV2' Op has type "
                            f"{value.dtype.base_dtype.name} that does not match type "
                            f"{x.dtype.base_dtype.name} of argument 'input'.")
        with_rank(op, value.shape, 0)
    return [(op.inputs[0].dtype.base_dtype, _padded_shape(op, op.inputs[0], op.inputs[1]))]


def _mirror_pad_grad_infer(op):
    return [(op.inputs[0].dtype.base_dtype, _padded_shape(op, op.inputs[0], op.inputs[1], -1))]


def _tile_infer(op):
    x, multiples_t = op.inputs
    check_dtype_allowed(op, multiples_t.dtype, INDEX_DTYPES, "Tmultiples")
    multiples = shape_from_tensor(multiples_t)
    if x.shape.ndims is not None:
        multiples = with_rank(op, multiples, x.shape.ndims)
    if multiples.ndims is None:
        return [(x.dtype.base_dtype, UNKNOWN)]
    x_shape = with_rank(op, x.shape, multiples.ndims)
    dims = [0 if 0 in (a, b) else None if a is None or b is None else a * b
            for a, b in zip(x_shape.dims, multiples.dims)]
    return [(x.dtype.base_dtype, TensorShape(dims))]


def _axis_in(op, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise shape_error(op, f"Invalid axis: {axis}; must be in [{-rank},{rank})")
    return axis % rank


def _pack_infer(op):
    dtype = _same_dtype_list(op, op.inputs, "values")
    cur = op.inputs[-1].shape
    for i in range(len(op.inputs) - 2, -1, -1):
        cur = merge(op, op.inputs[i].shape, cur, f"From merging shape {i} with other shapes.")
    if cur.ndims is None:
        return [(dtype, UNKNOWN)]
    axis = _axis_in(op, op.attrs["axis"], cur.ndims + 1)
    dims = list(cur.dims)
    return [(dtype, TensorShape(dims[:axis] + [len(op.inputs)] + dims[axis:]))]


def _unpack_infer(op):
    x = op.inputs[0]
    num, dtype = op.attrs["num"], x.dtype.base_dtype
    if x.shape.ndims is None:
        return [(dtype, UNKNOWN)] * num
    axis = _axis_in(op, op.attrs["axis"], x.shape.ndims)
    dim = x.shape[axis]
    if dim is not None and dim != num:
        raise shape_error(op, f"Dimension must be {num} but is {dim}")
    dims = list(x.shape.dims)
    return [(dtype, TensorShape(dims[:axis] + dims[axis + 1:]))] * num


def _reverse_infer(op):
    x, axis_t = op.inputs
    check_dtype_allowed(op, axis_t.dtype, INDEX_DTYPES, "Tidx")
    axes = static_ints(axis_t)
    if axes is not None and x.shape.ndims is not None:
        _check_reverse_axes(op, axes, x.shape.ndims)
    return [(x.dtype.base_dtype, x.shape)]



def _reverse_sequence_infer(op):
    """TF's ReverseSequence shape function: non-negative dims inside the rank, a vector of
    lengths as long as the batch dim (batch_dim == seq_dim is only caught when it runs)."""
    x, lengths = op.inputs
    check_dtype_allowed(op, lengths.dtype, INDEX_DTYPES, "Tlen")
    if lengths.shape.ndims is not None and lengths.shape.ndims != 1:
        raise shape_error(op, f"Shape must be rank 1 but is rank {lengths.shape.ndims}")
    rank = x.shape.ndims
    if rank is None:
        return [(x.dtype.base_dtype, UNKNOWN)]
    seq_dim, batch_dim = op.attrs["seq_dim"], op.attrs["batch_dim"]
    for label, dim in (("batch_dim", batch_dim), ("seq_dim", seq_dim)):
        if dim < 0:
            raise shape_error(op, f"{label} must be >=0, got {dim}")
    for label, dim in (("seq_dim", seq_dim), ("batch_dim", batch_dim)):
        if dim >= rank:
            raise shape_error(op, f"{label} must be < input rank: {dim} vs. {rank}")
    dims = list(x.shape.dims)
    count = lengths.shape[0] if lengths.shape.ndims == 1 else None
    if dims[batch_dim] is not None and count is not None and dims[batch_dim] != count:
        raise shape_error(op, f"Dimensions must be equal, but are {dims[batch_dim]} and {count}")
    dims[batch_dim] = dims[batch_dim] if dims[batch_dim] is not None else count
    return [(x.dtype.base_dtype, TensorShape(dims))]

def check_reverse_message(axes: list[int], rank: int) -> str | None:
    """TF's ReverseV2 validation (the unclosed bracket is TF's own text)."""
    seen = set()
    for i, a in enumerate(axes):
        if not -rank <= a < rank:
            return f"'axis'[{i}] = {a} is out of valid range [0, {rank - 1}"
        if a % rank in seen:
            return f"axis {a % rank} specified more than once."
        seen.add(a % rank)
    return None


def _check_reverse_axes(op, axes, rank) -> None:
    message = check_reverse_message(axes, rank)
    if message:
        raise shape_error(op, message)


# -- selection and encoding ------------------------------------------------------------------

def _where_infer(op):
    x = op.inputs[0]
    return [(dtypes.int64, TensorShape([None, x.shape.ndims]))]


def _select_infer(op):
    cond, t, e = op.inputs
    if cond.dtype.base_dtype is not dtypes.bool:
        raise TypeError(f"Input 'condition' of '{op.type}' Op has type {cond.dtype.name} that "
                        "does not match expected type of bool.")
    dtype = _same_branch_dtype(op, t, e)
    data = merge(op, t.shape, e.shape)
    if cond.shape.ndims is None or data.ndims is None or cond.shape.ndims == 0:
        return [(dtype, data)]
    if cond.shape.ndims != 1 or data.ndims == 0:
        return [(dtype, merge(op, data, cond.shape))]
    merge(op, cond.shape, TensorShape([data[0]]))
    return [(dtype, data)]


def _same_branch_dtype(op, t, e) -> dtypes.DType:
    if t.dtype.base_dtype is not e.dtype.base_dtype:
        raise TypeError(f"Input 'e' of '{op.type}' Op has type {e.dtype.base_dtype.name} that "
                        f"does not match type {t.dtype.base_dtype.name} of argument 't'.")
    return t.dtype.base_dtype


def _broadcast(op, a: TensorShape, b: TensorShape) -> TensorShape:
    out = broadcast_shapes(a, b)
    if out is None:
        bad = next((x, y) for x, y in zip(reversed(a.dims), reversed(b.dims))
                   if x not in (1, None) and y not in (1, None) and x != y)
        raise shape_error(op, f"Dimensions must be equal, but are {bad[0]} and {bad[1]}")
    return out


def _select_v2_infer(op):
    cond, t, e = op.inputs
    if cond.dtype.base_dtype is not dtypes.bool:
        raise TypeError(f"Input 'condition' of '{op.type}' Op has type {cond.dtype.name} that "
                        "does not match expected type of bool.")
    dtype = _same_branch_dtype(op, t, e)
    return [(dtype, _broadcast(op, cond.shape, _broadcast(op, t.shape, e.shape)))]


def _one_hot_infer(op):
    indices, depth_t, on, off = op.inputs
    check_dtype_allowed(op, indices.dtype, (dtypes.uint8, dtypes.int8, dtypes.int32,
                                            dtypes.int64), "TI")
    axis = op.attrs["axis"]
    if axis < -1:
        raise shape_error(op, "axis must be >= -1")
    depth = static_ints(depth_t)
    if depth is not None and depth[0] < 0:
        raise shape_error(op, f"Dimension size, given by scalar input 1, must be non-negative "
                              f"but is {depth[0]}")
    dtype = _same_branch_dtype(op, on, off)
    if indices.shape.ndims is None:
        return [(dtype, UNKNOWN)]
    new_rank = indices.shape.ndims + 1
    at = (axis + new_rank) % new_rank       # TF's own wrap of an out-of-range axis
    dims = list(indices.shape.dims)
    return [(dtype, TensorShape(dims[:at] + [None if depth is None else depth[0]] + dims[at:]))]


def _shape_n_infer(op):
    return [(op.attrs["out_type"], TensorShape([t.shape.ndims])) for t in op.inputs]


register_op("ConcatV2", _concat_infer)
register_op("ConcatOffset", _concat_offset_infer)
register_op("Split", _split_infer)
register_op("SplitV", _split_v_infer)
register_op("Slice", _slice_infer)
register_op("StridedSlice", _strided_slice_infer)
register_op("StridedSliceGrad", _strided_slice_grad_infer)
register_op("GatherV2", _gather_infer)
register_op("GatherNd", _gather_nd_infer)
register_op("ScatterNd", _scatter_nd_infer)
register_op("UnsortedSegmentSum", _unsorted_segment_sum_infer)
register_op("Transpose", _transpose_infer)
register_op("InvertPermutation", _invert_permutation_infer)
register_op("Squeeze", _squeeze_infer)
register_op("Pad", _pad_infer)
register_op("PadV2", _pad_infer)
register_op("MirrorPad", _pad_infer)
register_op("MirrorPadGrad", _mirror_pad_grad_infer)
register_op("Tile", _tile_infer)
register_op("Pack", _pack_infer)
register_op("Unpack", _unpack_infer)
register_op("ReverseV2", _reverse_infer)
register_op("ReverseSequence", _reverse_sequence_infer)
register_op("Where", _where_infer)
register_op("Select", _select_infer)
register_op("SelectV2", _select_v2_infer)
register_op("OneHot", _one_hot_infer)
register_op("ShapeN", _shape_n_infer)
