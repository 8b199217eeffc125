"""Indexing kernels: Slice, StridedSlice(Grad), GatherV2, GatherNd, ScatterNd,
UnsortedSegmentSum, Where, Select(V2) and OneHot. Indices are checked on every device (TF's
GPU kernels skip that check and return zeros; an error naming the node is kinder)."""

from __future__ import annotations

import itertools

import numpy as np
import torch

from engine import dtypes
from engine.kernels.array_restructure import ints, invalid, on_one_device, shape_str
from engine.kernels.registry import ALL_TYPES, CPU_NUMERIC, GPU_REAL, INDEX_TYPES, kernel
from engine.ops import strided_slice as ss

# nonzero, index_add_ and index_put_ have no torch kernels for uint16/32/64.
_COUNTABLE = CPU_NUMERIC + (dtypes.bool,)
_GPU_COUNTABLE = GPU_REAL + (dtypes.bool,)


def _position(shape, flat: int) -> str:
    """TF's SliceDebugString: where a flat offset sits in `shape`, as `[1,0]`."""
    if not shape:
        return ""
    return "[" + ",".join(str(int(i)) for i in np.unravel_index(flat, tuple(shape))) + "]"


def _long(indices: torch.Tensor, device) -> torch.Tensor:
    return indices.to(device=device, dtype=torch.long)


def _aliases(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.numel() > 0 and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


# -- slicing ----------------------------------------------------------------------------------

@kernel("Slice", CPU={"T": ALL_TYPES, "Index": INDEX_TYPES},
        GPU={"T": ALL_TYPES, "Index": INDEX_TYPES}, host_memory=("begin", "size"))
def slice_kernel(node, ctx):
    def run(x, begin, size):
        b, s = ints(begin), ints(size)
        rank = x.dim()
        if begin.dim() != 1 or size.dim() != 1 or len(b) != rank or len(s) != rank:
            raise invalid(node, f"Expected begin and size arguments to be 1-D tensors of size "
                                f"{rank}, but got shapes {shape_str(begin.shape)} and "
                                f"{shape_str(size.shape)} instead.")
        index = []
        for i, (start, count, dim) in enumerate(zip(b, s, x.shape)):
            count = dim - start if count == -1 else count
            if dim == 0 and (start != 0 or count != 0):
                raise invalid(node, f"Expected begin[{i}] == 0 (got {start}) and size[{i}] == 0 "
                                    f"(got {count}) when input.dim_size({i}) == 0")
            if dim and not 0 <= start <= dim:
                raise invalid(node, f"Expected begin[{i}] in [0, {dim}], but got {start}")
            if dim and not (0 <= count and start + count <= dim):
                raise invalid(node, f"Expected size[{i}] in [0, {dim - start}], but got {count}")
            index.append(slice(start, start + count))
        return x[tuple(index)].clone()
    return run


def _spec_resolver(node):
    """Resolves (shape, begin, end, strides) to a DenseSlice, cached: a training loop slices
    the same shapes every step."""
    masks = ss.Masks.of(node.attr)
    cache: dict = {}

    def resolve(shape, begin, end, strides) -> ss.DenseSlice:
        spec = (ints(begin), ints(end), ints(strides))
        if begin.dim() != 1 or not len(spec[0]) == len(spec[1]) == len(spec[2]):
            raise invalid(node, f"Expected begin, end, and strides to be 1D equal size tensors, "
                                f"but got shapes {shape_str(begin.shape)}, "
                                f"{shape_str(end.shape)}, and {shape_str(strides.shape)} "
                                "instead.")
        key = (tuple(shape),) + tuple(tuple(v) for v in spec)
        dense = cache.get(key)
        if dense is None:
            try:
                dense = ss.resolve(list(shape), *spec, masks)
            except ss.SliceSpecError as e:
                raise invalid(node, str(e)) from None
            if len(cache) < 64:
                cache[key] = dense
        return dense
    return resolve


@kernel("StridedSlice", CPU={"T": ALL_TYPES, "Index": INDEX_TYPES},
        GPU={"T": ALL_TYPES, "Index": INDEX_TYPES}, host_memory=("begin", "end", "strides"))
def strided_slice(node, ctx):
    resolve = _spec_resolver(node)

    def run(x, begin, end, strides):
        dense = resolve(x.shape, begin, end, strides)
        index, flips = dense.torch_index()
        y = x[index]
        if flips:
            y = y.flip(flips)
        y = y.reshape(dense.final)
        # TF's StridedSlice writes a new buffer; a view could change under a later Assign.
        return y.clone() if _aliases(y, x) else y
    return run


@kernel("StridedSliceGrad", CPU={"T": ALL_TYPES, "Index": INDEX_TYPES},
        GPU={"T": ALL_TYPES, "Index": INDEX_TYPES},
        host_memory=("shape", "begin", "end", "strides"))
def strided_slice_grad(node, ctx):
    resolve = _spec_resolver(node)

    def run(shape, begin, end, strides, dy):
        dims = ints(shape)
        dense = resolve(dims, begin, end, strides)
        if tuple(dy.shape) != dense.final:
            raise invalid(node, f"shape of dy was {shape_str(dy.shape)} instead of "
                                f"{shape_str(dense.final)}")
        out = torch.zeros(dims, dtype=dy.dtype, device=dy.device)
        index, flips = dense.torch_index()
        piece = dy.reshape(dense.processing)
        out[index] = piece.flip(flips) if flips else piece
        return out
    return run


# -- gathers and scatters ---------------------------------------------------------------------

def _first_bad(indices: torch.Tensor, bad: torch.Tensor) -> tuple[str, int] | None:
    """Where the first flagged index sits (TF's `[1,0]` spelling) and its value."""
    if not bool(bad.any()):
        return None
    flat = int(torch.nonzero(bad.reshape(-1))[0])
    return _position(indices.shape, flat), int(indices.reshape(-1)[flat])


@kernel("GatherV2", CPU={"Tparams": ALL_TYPES, "Tindices": INDEX_TYPES},
        GPU={"Tparams": ALL_TYPES, "Tindices": INDEX_TYPES}, host_memory=("axis",))
def gather(node, ctx):
    def run(params, indices, axis):
        rank, a = params.dim(), int(axis)
        if not -rank <= a < rank:
            raise invalid(node, f"Expected axis in the range [{-rank}, {rank}), but got {a}")
        a %= rank
        idx, limit = _long(indices, params.device), params.shape[a]
        bad = _first_bad(idx, (idx < 0) | (idx >= limit))
        if bad:
            raise invalid(node, f"indices{bad[0]} = {bad[1]} is not in [0, {limit})")
        out = params.index_select(a, idx.reshape(-1))
        return out.reshape(tuple(params.shape[:a]) + tuple(indices.shape) +
                           tuple(params.shape[a + 1:]))
    return run


def _nd_rows(node, indices: torch.Tensor, dims, label: str, shape_label: str):
    """indices as [rows, depth] longs, every row checked against dims."""
    depth = indices.shape[-1]
    flat = indices.reshape(-1, depth)
    if flat.numel():
        limits = torch.tensor(list(dims[:depth]), device=flat.device)
        bad = ((flat < 0) | (flat >= limits)).any(dim=1)
        if bool(bad.any()):
            row = int(torch.nonzero(bad)[0])
            values = ", ".join(str(v) for v in flat[row].tolist())
            where = _position(indices.shape[:-1], row)
            raise invalid(node, f"indices{where} = [{values}] does not index into "
                                f"{shape_label} {shape_str(dims)}{label}")
    return flat


@kernel("GatherNd", CPU={"Tparams": ALL_TYPES, "Tindices": INDEX_TYPES},
        GPU={"Tparams": ALL_TYPES, "Tindices": INDEX_TYPES})
def gather_nd(node, ctx):
    def run(params, indices):
        if indices.dim() < 1:
            raise invalid(node, f"indices must be at least a vector, got "
                                f"{shape_str(indices.shape)}")
        depth = indices.shape[-1]
        if depth > params.dim():
            raise invalid(node, f"index innermost dimension length must be <= params rank; "
                                f"saw: {depth} vs. {params.dim()}")
        flat = _nd_rows(node, _long(indices, params.device), params.shape,
                        f", node name: {node.name}", "param shape")
        if depth == 0:
            picked = params.unsqueeze(0).expand(flat.shape[0], *params.shape).clone()
        else:
            picked = params[tuple(flat[:, j] for j in range(depth))]
        return picked.reshape(tuple(indices.shape[:-1]) + tuple(params.shape[depth:]))
    return run


@kernel("ScatterNd", CPU={"T": CPU_NUMERIC, "Tindices": INDEX_TYPES},
        GPU={"T": GPU_REAL, "Tindices": INDEX_TYPES}, host_memory=("shape",))
def scatter_nd(node, ctx):
    def run(indices, updates, shape):
        dims = ints(shape)
        depth = indices.shape[-1] if indices.dim() else 0
        want = tuple(indices.shape[:-1]) + tuple(dims[depth:])
        if indices.dim() < 1 or depth > len(dims) or tuple(updates.shape) != want:
            raise invalid(node, f"updates.shape {shape_str(updates.shape)} must be "
                                f"indices.shape[:-1] + shape[indices.shape[-1]:] = "
                                f"{shape_str(want)} (indices.shape "
                                f"{shape_str(indices.shape)}, shape {shape_str(dims)})")
        flat = _nd_rows(node, _long(indices, updates.device), dims, "", "shape")
        out = torch.zeros(dims, dtype=updates.dtype, device=updates.device)
        values = updates.reshape((flat.shape[0],) + tuple(dims[depth:]))
        return out.index_put_(tuple(flat[:, j] for j in range(depth)), values, accumulate=True)
    return run


@kernel("UnsortedSegmentSum",
        CPU={"T": CPU_NUMERIC, "Tindices": INDEX_TYPES, "Tnumsegments": INDEX_TYPES},
        GPU={"T": GPU_REAL, "Tindices": INDEX_TYPES, "Tnumsegments": INDEX_TYPES},
        host_memory=("num_segments",))
def unsorted_segment_sum(node, ctx):
    def run(data, segment_ids, num_segments):
        count, k = int(num_segments), segment_ids.dim()
        if tuple(data.shape[:k]) != tuple(segment_ids.shape):
            raise invalid(node, f"data.shape = {shape_str(data.shape)} does not start with "
                                f"segment_ids.shape = {shape_str(segment_ids.shape)}")
        ids = _long(segment_ids, data.device)
        bad = _first_bad(ids, ids >= count)
        if bad:
            raise invalid(node, f"segment_ids{bad[0]} = {bad[1]} is out of range [0, {count})")
        rest = tuple(data.shape[k:])
        flat, values = ids.reshape(-1), data.reshape((-1,) + rest)
        keep = flat >= 0        # TF drops negative ids
        out = torch.zeros((count,) + rest, dtype=data.dtype, device=data.device)
        return out.index_add_(0, flat[keep], values[keep])
    return run


# -- selection and encoding -------------------------------------------------------------------

@kernel("Where", CPU={"T": _COUNTABLE}, GPU={"T": _GPU_COUNTABLE})
def where(node, ctx):
    def run(x):
        if x.dim() == 0:
            raise invalid(node, "WhereOp : Unhandled input dimensions: 0")
        return torch.nonzero(x if x.dtype == torch.bool else x != 0)
    return run


def _same_size(node, t, e) -> None:
    if t.shape != e.shape:
        raise invalid(node, f"'then' and 'else' must have the same size.  but received: "
                            f"{shape_str(t.shape)} vs. {shape_str(e.shape)}")


@kernel("Select", CPU={"T": ALL_TYPES}, GPU={"T": ALL_TYPES})
def select(node, ctx):
    device = ctx.torch_device

    def run(cond, t, e):
        cond, t, e = on_one_device((cond, t, e), device)
        _same_size(node, t, e)
        if cond.dim() == 0:
            return (t if bool(cond) else e).clone()
        if cond.dim() == 1 and t.dim() != 1:
            if t.dim() == 0:
                raise invalid(node, f"'then' must be at least a vector, but saw shape: "
                                    f"{shape_str(t.shape)}")
            if t.shape[0] != cond.numel():
                raise invalid(node, f"Number of batches of 'then' must match size of 'cond', "
                                    f"but saw: {t.shape[0]} vs. {cond.numel()}")
            cond = cond.reshape((-1,) + (1,) * (t.dim() - 1))
        elif cond.shape != t.shape:
            raise invalid(node, f"Inputs to operation {node.name} of type Select must have the "
                                f"same size and shape.  Input 0: {shape_str(cond.shape)} != "
                                f"input 1: {shape_str(t.shape)}")
        return torch.where(cond, t, e)
    return run


def _broadcastable(*shapes) -> bool:
    """Whether the shapes broadcast together (numpy's rule). torch.broadcast_shapes answers
    the same in ~100 us (its Python reference implementation), dropout's gradient asks each
    step."""
    for dims in itertools.zip_longest(*(reversed(s) for s in shapes), fillvalue=1):
        if len(set(dims) - {1}) > 1:
            return False
    return True


@kernel("SelectV2", CPU={"T": ALL_TYPES}, GPU={"T": ALL_TYPES})
def select_v2(node, ctx):
    device = ctx.torch_device

    def run(cond, t, e):
        cond, t, e = on_one_device((cond, t, e), device)
        if not _broadcastable(cond.shape, t.shape, e.shape):
            raise invalid(node, f"condition {shape_str(cond.shape)}, then {shape_str(t.shape)}, "
                                f"and else {shape_str(e.shape)} must be broadcastable")
        return torch.where(cond, t, e)
    return run


@kernel("OneHot", CPU={"T": ALL_TYPES, "TI": (dtypes.uint8, dtypes.int8) + INDEX_TYPES},
        GPU={"T": ALL_TYPES, "TI": (dtypes.uint8, dtypes.int8) + INDEX_TYPES},
        host_memory=("depth",))
def one_hot(node, ctx):
    axis, device = node.attr["axis"], ctx.torch_device

    def run(indices, depth, on_value, off_value):
        d = int(depth)
        if d < 0:
            raise invalid(node, f"depth must be non-negative, got: {d}")
        rank = indices.dim() + 1
        if not (axis == -1 or 0 <= axis < rank):
            raise invalid(node, f"Expected axis to be -1 or between [0, {rank}).  But "
                                f"received: {axis}")
        hot = _long(indices, device).unsqueeze(-1) == torch.arange(d, device=device)
        out = torch.where(hot, on_value.to(device), off_value.to(device))
        return out if axis == -1 else out.movedim(-1, axis).contiguous()
    return run
