"""Restructuring kernels: ConcatV2, ConcatOffset, Split(V), Pack/Unpack, Tile, Pad(V2),
MirrorPad(Grad), Transpose, InvertPermutation, Squeeze, ReverseV2, ReverseSequence and ShapeN;
plus the helpers every array kernel shares (TF's shape spelling, InvalidArgumentError naming
the node)."""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812 - torch's convention

from engine import errors
from engine.kernels.array import ShapeTensors, host_tensor
from engine.kernels.registry import (
    ALL_TYPES,
    CPU_NUMERIC,
    GPU_REAL,
    INDEX_TYPES,
    WITH_QUANTIZED,
    kernel,
)
from engine.ops.array_shapes import check_reverse_message

# -- shared helpers for the array kernels ----------------------------------------------------

def ints(t: torch.Tensor) -> list[int]:
    if t.dim() == 1 and not t.is_floating_point():
        return t.tolist()
    return [int(v) for v in t.reshape(-1).tolist()]


def shape_str(shape) -> str:
    """TF's TensorShape::DebugString: `[2,3]`."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def invalid(node, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(node, None, message)


def outputs(values: list):
    """A kernel with one output returns the tensor itself, with several a tuple."""
    return values[0] if len(values) == 1 else tuple(values)


def on_one_device(values, device) -> list[torch.Tensor]:
    """A kernel's inputs may mix host tensors (shapes stay in host memory, TF's HostMemory)
    with tensors on the kernel's device; torch needs one device."""
    if all(v.device == values[0].device for v in values):
        return list(values)
    return [v.to(device) for v in values]


def _axis_in(node, axis: int, rank: int, message: str) -> int:
    if not -rank <= axis < rank:
        raise invalid(node, message)
    return axis % rank


# -- concat and split -------------------------------------------------------------------------

def _check_concat_shapes(node, values, axis: int) -> None:
    first = values[0].shape
    for i, v in enumerate(values[1:], start=1):
        if v.dim() != len(first):
            raise invalid(node, f"ConcatOp : Ranks of all input tensors should match: shape[0] = "
                                f"{shape_str(first)} vs. shape[{i}] = {shape_str(v.shape)}")
        for j, (a, b) in enumerate(zip(first, v.shape)):
            if j != axis and a != b:
                raise invalid(node, f"ConcatOp : Dimension {j} in both shapes must be equal: "
                                    f"shape[0] = {shape_str(first)} vs. shape[{i}] = "
                                    f"{shape_str(v.shape)}")


@kernel("ConcatV2", CPU={"T": WITH_QUANTIZED, "Tidx": INDEX_TYPES},
        GPU={"T": WITH_QUANTIZED, "Tidx": INDEX_TYPES}, host_memory=("axis",))
def concat(node, ctx):
    device = ctx.torch_device

    def run(*args):
        values, axis = args[:-1], int(args[-1])
        rank = values[0].dim()
        axis = _axis_in(node, axis, rank, f"ConcatOp : Expected concatenating dimensions in the "
                                          f"range [{-rank}, {rank}), but got {axis}")
        _check_concat_shapes(node, values, axis)
        return torch.cat(on_one_device(values, device), axis)
    return run


@kernel("ConcatOffset", CPU={}, GPU={}, host_memory=("concat_dim", "shape", "offset"))
def concat_offset(node, ctx):
    dtype = node.attr.get("shape_type")

    def run(axis, *shapes):
        dims = [ints(s) for s in shapes]
        rank = len(dims[0])
        a = _axis_in(node, int(axis), rank, f"Concat dim is out of range: {int(axis)} vs. {rank}")
        offsets, offset = [], 0
        for i, d in enumerate(dims):
            if len(d) != rank or any(x != y for j, (x, y) in enumerate(zip(d, dims[0]))
                                     if j != a):
                raise invalid(node, f"All dimensions except {a} must match. Input {i} has shape "
                                    f"{shape_str(d)} and doesn't match input 0 with shape "
                                    f"{shape_str(dims[0])}.")
            offsets.append(host_tensor([offset if j == a else 0 for j in range(rank)], dtype))
            offset += d[a]
        return outputs(offsets)
    return run


def _split_axis(node, axis: int, rank: int) -> int:
    return _axis_in(node, axis, rank, f"-input rank(-{rank}) <= split_dim < input rank "
                                      f"({rank}), but got {axis}")


@kernel("Split", CPU={"T": ALL_TYPES}, GPU={"T": ALL_TYPES}, host_memory=("split_dim",))
def split(node, ctx):
    count = node.attr["num_split"]

    def run(axis, x):
        a = _split_axis(node, int(axis), x.dim())
        if x.shape[a] % count:
            raise invalid(node, f"Number of ways to split should evenly divide the split "
                                f"dimension, but got split_dim {a} (size = {x.shape[a]}) and "
                                f"num_split {count}")
        return outputs([p.clone() for p in x.tensor_split(count, a)])
    return run


def _split_v_sizes(node, sizes: list[int], total: int) -> list[int]:
    if sum(1 for s in sizes if s == -1) > 1:
        raise invalid(node, "There can only be one -1 in the input.")
    known = sum(s for s in sizes if s != -1)
    for i, s in enumerate(sizes):
        if s < -1:
            raise invalid(node, f"Split size at index {i} must be >= 0. Got: {s}")
    if (-1 not in sizes and known != total) or known > total:
        raise invalid(node, "Determined shape must either match input shape along split_dim "
                            "exactly if fully specified, or be less than the size of the input "
                            f"along split_dim if not fully specified.  Got: {known}")
    return [total - known if s == -1 else s for s in sizes]


@kernel("SplitV", CPU={"T": ALL_TYPES, "Tlen": INDEX_TYPES},
        GPU={"T": ALL_TYPES, "Tlen": INDEX_TYPES}, host_memory=("size_splits", "split_dim"))
def split_v(node, ctx):
    count = node.attr["num_split"]

    def run(x, size_splits, axis):
        a = _split_axis(node, int(axis), x.dim())
        sizes = ints(size_splits)
        if size_splits.dim() != 1 or len(sizes) != count:
            raise invalid(node, f"size of the split_tensor must be 1-D and have the same "
                                f"elements as outputs got {size_splits.dim()} -D and "
                                f"{len(sizes)} elements")
        sizes = _split_v_sizes(node, sizes, x.shape[a])
        return outputs([p.clone() for p in torch.split(x, sizes, a)])
    return run


# -- pack and unpack --------------------------------------------------------------------------

@kernel("Pack", CPU={"T": ALL_TYPES}, GPU={"T": ALL_TYPES})
def pack(node, ctx):
    axis, device = node.attr["axis"], ctx.torch_device

    def run(*values):
        first = values[0].shape
        for i, v in enumerate(values[1:], start=1):
            if v.shape != first:
                raise invalid(node, f"Shapes of all inputs must match: values[0].shape = "
                                    f"{shape_str(first)} != values[{i}].shape = "
                                    f"{shape_str(v.shape)}")
        rank = len(first) + 1
        a = _axis_in(node, axis, rank, f"axis = {axis} not in [{-rank}, {rank})")
        return torch.stack(on_one_device(values, device), a)
    return run


@kernel("Unpack", CPU={"T": ALL_TYPES}, GPU={"T": ALL_TYPES})
def unpack(node, ctx):
    axis, num = node.attr["axis"], node.attr["num"]

    def run(x):
        rank = x.dim()
        a = _axis_in(node, axis, rank, f"axis = {axis} not in [{-rank}, {rank})")
        if x.shape[a] != num:
            raise invalid(node, f"Input shape axis {a} must equal {num}, got shape "
                                f"{shape_str(x.shape)}")
        return outputs([t.clone() for t in x.unbind(a)])
    return run


# -- tile, pad, mirror pad --------------------------------------------------------------------

@kernel("Tile", CPU={"T": ALL_TYPES, "Tmultiples": INDEX_TYPES},
        GPU={"T": ALL_TYPES, "Tmultiples": INDEX_TYPES}, host_memory=("multiples",))
def tile(node, ctx):
    def run(x, multiples):
        m = ints(multiples)
        if len(m) != x.dim():
            raise invalid(node, f"Expected multiples argument to be a vector of length "
                                f"{x.dim()} but got length {len(m)}")
        for i, v in enumerate(m):
            if v < 0:
                raise invalid(node, f"Expected multiples[{i}] >= 0, but got {v}")
        return x.repeat(m) if m else x.clone()
    return run


def paddings_of(node, x_shape, paddings: torch.Tensor) -> list[tuple[int, int]]:
    if paddings.dim() != 2 or paddings.shape[1] != 2:
        raise invalid(node, f"paddings must be a matrix with 2 columns: "
                            f"{shape_str(paddings.shape)}")
    if paddings.shape[0] != len(x_shape):
        raise invalid(node, f"The first dimension of paddings must be the rank of inputs"
                            f"{shape_str(paddings.shape)} {shape_str(x_shape)}")
    pairs = [tuple(row) for row in paddings.tolist()]
    for a, b in pairs:
        if a < 0 or b < 0:
            raise invalid(node, f"Paddings must be non-negative: {a} {b}")
    return pairs


def _constant_pad(x, pairs, value):
    flat = [p for pair in reversed(pairs) for p in pair]
    if not any(flat):
        return x.clone()
    return F.pad(x, flat, mode="constant", value=value)


@kernel("Pad", CPU={"T": ALL_TYPES, "Tpaddings": INDEX_TYPES},
        GPU={"T": ALL_TYPES, "Tpaddings": INDEX_TYPES}, host_memory=("paddings",))
def pad(node, ctx):
    def run(x, paddings):
        return _constant_pad(x, paddings_of(node, x.shape, paddings), 0)
    return run


@kernel("PadV2", CPU={"T": ALL_TYPES, "Tpaddings": INDEX_TYPES},
        GPU={"T": ALL_TYPES, "Tpaddings": INDEX_TYPES},
        host_memory=("paddings", "constant_values"))
def pad_v2(node, ctx):
    def run(x, paddings, value):
        return _constant_pad(x, paddings_of(node, x.shape, paddings), value.item())
    return run


def mirror_index(n: int, before: int, after: int, mode: str) -> list[int]:
    """Source position of each padded position along one dim: REFLECT repeats no edge
    ([3,2 | 1,2,3 | 2,1]), SYMMETRIC repeats it ([2,1 | 1,2,3 | 3,2])."""
    edge = 1 if mode == "REFLECT" else 0
    left = list(range(before - 1 + edge, edge - 1, -1))
    right = list(range(n - 1 - edge, n - 1 - edge - after, -1))
    return left + list(range(n)) + right


def _check_mirror(node, pairs, dims, mode: str) -> None:
    for (a, b), n in zip(pairs, dims):
        if mode == "REFLECT" and (a >= n or b >= n) and (a or b):
            raise invalid(node, f"paddings must be less than the dimension size: {a}, {b} not "
                                f"less than {n}")
        if mode == "SYMMETRIC" and (a > n or b > n):
            raise invalid(node, f"paddings must be no greater than the dimension size: {a}, "
                                f"{b} greater than {n}")


@kernel("MirrorPad", CPU={"T": ALL_TYPES, "Tpaddings": INDEX_TYPES},
        GPU={"T": ALL_TYPES, "Tpaddings": INDEX_TYPES}, host_memory=("paddings",))
def mirror_pad(node, ctx):
    mode = node.attr["mode"]

    def run(x, paddings):
        pairs = paddings_of(node, x.shape, paddings)
        _check_mirror(node, pairs, x.shape, mode)
        out = x
        for d, (a, b) in enumerate(pairs):
            if a or b:
                index = torch.tensor(mirror_index(x.shape[d], a, b, mode), device=x.device)
                out = out.index_select(d, index)
        return out.clone() if out is x else out
    return run


@kernel("MirrorPadGrad", CPU={"T": CPU_NUMERIC, "Tpaddings": INDEX_TYPES},
        GPU={"T": GPU_REAL, "Tpaddings": INDEX_TYPES}, host_memory=("paddings",))
def mirror_pad_grad(node, ctx):
    """Sums each padded position's gradient back onto the element it mirrors."""
    mode = node.attr["mode"]

    def run(grad, paddings):
        pairs = paddings_of(node, grad.shape, paddings)
        dims = [n - a - b for n, (a, b) in zip(grad.shape, pairs)]
        _check_mirror(node, pairs, dims, mode)
        out = grad
        for d, ((a, b), n) in enumerate(zip(pairs, dims)):
            if a or b:
                index = torch.tensor(mirror_index(n, a, b, mode), device=grad.device)
                shape = list(out.shape)
                shape[d] = n
                out = torch.zeros(shape, dtype=grad.dtype, device=grad.device).index_add_(
                    d, index, out)
        return out.clone() if out is grad else out
    return run


# -- transpose, squeeze, reverse, ShapeN ------------------------------------------------------

def _permutation(node, perm: list[int], rank: int) -> list[int]:
    if len(perm) != rank:
        raise invalid(node, f"transpose expects a vector of size {rank}. But input(1) is a "
                            f"vector of size {len(perm)}")
    out = []
    for d in perm:
        out.append(_axis_in(node, d, rank, f"{d} is out of range [0 .. {rank})"))
    for i in range(rank):
        if i not in out:
            raise invalid(node, f"{i} is missing from {{{','.join(str(p) for p in perm)}}}.")
    return out


@kernel("Transpose", CPU={"T": ALL_TYPES, "Tperm": INDEX_TYPES},
        GPU={"T": ALL_TYPES, "Tperm": INDEX_TYPES}, host_memory=("perm",))
def transpose(node, ctx):
    def run(x, perm):
        return x.permute(_permutation(node, ints(perm), x.dim())).contiguous()
    return run


@kernel("InvertPermutation", CPU={"T": INDEX_TYPES}, GPU={"T": INDEX_TYPES},
        host_memory=("x", "y"))
def invert_permutation(node, ctx):
    def run(x):
        perm = ints(x)
        if x.dim() != 1:
            raise invalid(node, f"invert_permutation expects a 1D vector, got "
                                f"{shape_str(x.shape)}")
        inverse = [-1] * len(perm)
        for i, d in enumerate(perm):
            if not 0 <= d < len(perm):
                raise invalid(node, f"{d} is not between 0 and {len(perm)}")
            if inverse[d] != -1:
                raise invalid(node, f"{d} is duplicated in the input.")
            inverse[d] = i
        return torch.tensor(inverse, dtype=x.dtype)
    return run


@kernel("Squeeze", CPU={"T": ALL_TYPES}, GPU={"T": ALL_TYPES})
def squeeze(node, ctx):
    axes = list(node.attr["squeeze_dims"])

    def run(x):
        rank = x.dim()
        wanted = set()
        for d in axes:
            wanted.add(_axis_in(node, d, rank, f"Tried to squeeze dim index {d} for tensor with "
                                               f"{rank} dimensions."))
        for d in sorted(wanted):
            if x.shape[d] != 1:
                raise invalid(node, f"Can not squeeze dim[{d}], expected a dimension of 1, "
                                    f"got {x.shape[d]}")
        keep = [n for i, n in enumerate(x.shape) if (i not in wanted if wanted else n != 1)]
        return x.reshape(keep)
    return run


@kernel("ReverseV2", CPU={"T": ALL_TYPES, "Tidx": INDEX_TYPES},
        GPU={"T": ALL_TYPES, "Tidx": INDEX_TYPES}, host_memory=("axis",))
def reverse(node, ctx):
    def run(x, axis):
        axes = ints(axis)
        message = check_reverse_message(axes, x.dim())
        if message:
            raise invalid(node, message)
        return x.flip([a % x.dim() for a in axes]) if axes else x.clone()
    return run


def _check_reverse_sequence(node, x, lengths: list[int], seq_dim: int, batch_dim: int) -> None:
    """TF's ReverseSequence checks, in its order."""
    if batch_dim == seq_dim:
        raise invalid(node, f"batch_dim == seq_dim == {seq_dim}")
    for label, dim in (("seq_dim", seq_dim), ("batch_dim", batch_dim)):
        if dim >= x.dim():
            raise invalid(node, f"{label} must be < input rank ( {dim} vs. {x.dim()})")
    if len(lengths) != x.shape[batch_dim]:
        raise invalid(node, f"Length of seq_lengths != input.dims({batch_dim}), "
                            f"({len(lengths)} vs. {x.shape[batch_dim]})")
    for d, n in enumerate(lengths):
        if n < 0:
            raise invalid(node, f"seq_lens({d}) < 0")
        if n > x.shape[seq_dim]:
            raise invalid(node, f"seq_lens({d}) > input.dims({seq_dim})")


@kernel("ReverseSequence", CPU={"T": ALL_TYPES, "Tlen": INDEX_TYPES},
        GPU={"T": ALL_TYPES, "Tlen": INDEX_TYPES}, host_memory=("seq_lengths",))
def reverse_sequence(node, ctx):
    seq_dim, batch_dim = node.attr["seq_dim"], node.attr["batch_dim"]

    def run(x, seq_lengths):
        if seq_lengths.dim() != 1:
            raise invalid(node, f"seq_lengths must be 1-dim, not {seq_lengths.dim()}")
        lengths = ints(seq_lengths)
        _check_reverse_sequence(node, x, lengths, seq_dim, batch_dim)
        # Position t of slice i reads t' = n_i - 1 - t for t < n_i, else t: one gather.
        steps = torch.arange(x.shape[seq_dim], device=x.device)
        n = torch.tensor(lengths, device=x.device, dtype=steps.dtype).unsqueeze(1)
        index = torch.where(steps < n, n - 1 - steps, steps)      # [batch, seq]
        if seq_dim < batch_dim:
            index = index.t()
        view = [1] * x.dim()
        view[batch_dim], view[seq_dim] = x.shape[batch_dim], x.shape[seq_dim]
        return torch.gather(x, seq_dim, index.reshape(view).expand(x.shape))
    return run


@kernel("ShapeN", CPU={"out_type": INDEX_TYPES}, GPU={"out_type": INDEX_TYPES},
        host_memory=("output",))
def shape_n(node, ctx):
    tensors = ShapeTensors(node.attr["out_type"])

    def run(*xs):
        return outputs([tensors(x.shape) for x in xs])
    return run

