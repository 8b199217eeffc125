"""Array kernels: Const, Placeholder, Identity, Reshape, Cast, Shape, Size, ExpandDims,
BroadcastTo, Fill, ZerosLike, OnesLike, StopGradient, and the runtime's _Arg/_Retval. The
restructuring and indexing kernels live in array_restructure.py and array_index.py."""

from __future__ import annotations

import numpy as np
import torch

from engine import dtypes, errors
from engine.kernels.registry import (
    ALL_TYPES,
    GPU_REAL,
    INDEX_TYPES,
    WITH_QUANTIZED,
    Constant,
    kernel,
)

_ANY = {}


def host_tensor(values, dtype) -> torch.Tensor:
    """Shapes and indices stay in host memory whatever the device (TF's HostMemory args).
    Made through numpy: a third of torch.tensor's cost for a short list, and a backward
    pass makes a few dozen of them per step."""
    return torch.from_numpy(np.array(values, dtype=dtype.numpy_dtype))


class ShapeTensors:
    """A shape kernel's host tensors by shape: a loop's Shape ops see the same few shapes
    every iteration, and handing out one tensor per shape (as the executor hands out a
    Const's) saves building it again and lets the consumers' IntList caches hit."""

    __slots__ = ("dtype", "known")
    LIMIT = 64

    def __init__(self, dtype):
        self.dtype = dtype
        self.known: dict = {}

    def __call__(self, shape) -> torch.Tensor:
        found = self.known.get(shape)
        if found is None:
            if len(self.known) >= self.LIMIT:
                self.known.clear()
            found = self.known[shape] = host_tensor(list(shape), self.dtype)
        return found


class IntList:
    """A host tensor's values as a list, remembered for the last tensor seen: the shape and
    axis tensors a kernel reads in a loop are mostly the same objects (Consts, ShapeTensors)."""

    __slots__ = ("last",)

    def __init__(self):
        self.last = (None, None)     # one tuple, replaced whole: concurrent steps read it

    def __call__(self, t: torch.Tensor) -> list:
        tensor, values = self.last
        if t is not tensor:
            values = t.tolist()
            self.last = (t, values)
        return values


@kernel("Const", CPU={"dtype": WITH_QUANTIZED + (dtypes.string,)}, GPU={"dtype": WITH_QUANTIZED})
def const(node, ctx):
    array = np.array(node.attr["value"], copy=True)
    if node.attr["dtype"] is dtypes.string:   # strings stay numpy object arrays of bytes
        return Constant(array)
    return Constant(torch.from_numpy(array).to(ctx.torch_device))


@kernel("Placeholder", CPU=_ANY, GPU=_ANY)
def placeholder(node, ctx):
    dtype = node.attr["dtype"]
    shape = node.attr["shape"]

    def missing_feed():
        raise errors.InvalidArgumentError(
            node, None, f"You must feed a value for placeholder tensor '{node.name}' with dtype "
                        f"{dtype.tf_string}"
                        f"{'' if shape.dims is None else ' and shape ' + shape.bracket_str()}")
    return missing_feed


def _identity(x):
    return x


@kernel("Identity", CPU=_ANY, GPU=_ANY)
@kernel("StopGradient", CPU=_ANY, GPU=_ANY)
@kernel("PlaceholderWithDefault", CPU=_ANY, GPU=_ANY)
def identity(node, ctx):
    return _identity


@kernel("Reshape", CPU={"T": WITH_QUANTIZED, "Tshape": INDEX_TYPES},
        GPU={"T": WITH_QUANTIZED, "Tshape": INDEX_TYPES}, host_memory=("shape",))
def reshape(node, ctx):
    values = IntList()

    def run(x, shape):
        wanted = values(shape)
        # A gradient's Reshape back to the shape it already has (the common case of a
        # broadcast reduction that reduced nothing) forwards its input, as Identity does.
        return x if len(wanted) == x.dim() and x.shape == tuple(wanted) else x.reshape(wanted)
    return run


@kernel("Cast", CPU=_ANY, GPU=_ANY)
def cast(node, ctx):
    target = node.attr["DstT"].torch_dtype

    def run(x):
        return x.to(target)
    return run


@kernel("Shape", CPU={"out_type": INDEX_TYPES}, GPU={"out_type": INDEX_TYPES},
        host_memory=("output",))
def shape(node, ctx):
    tensors = ShapeTensors(node.attr["out_type"])

    def run(x):
        return tensors(x.shape)
    return run


@kernel("Size", CPU={"out_type": INDEX_TYPES}, GPU={"out_type": INDEX_TYPES},
        host_memory=("output",))
def size(node, ctx):
    out = node.attr["out_type"]

    def run(x):
        return host_tensor(x.numel(), out)
    return run


@kernel("ExpandDims", CPU=_ANY, GPU=_ANY, host_memory=("dim",))
def expand_dims(node, ctx):
    def run(x, dim):
        return x.unsqueeze(int(dim.reshape(-1)[0]))
    return run


@kernel("BroadcastTo", CPU={"T": ALL_TYPES}, GPU={"T": ALL_TYPES}, host_memory=("shape",))
def broadcast_to(node, ctx):
    def run(x, shape):
        return x.expand(shape.tolist()).contiguous()
    return run


@kernel("Fill", CPU={"T": ALL_TYPES}, GPU={"T": GPU_REAL}, host_memory=("dims",))
def fill(node, ctx):
    device = ctx.torch_device

    def run(dims, value):
        return torch.full(dims.tolist(), value.item(), dtype=value.dtype, device=device)
    return run


@kernel("ZerosLike", CPU=_ANY, GPU=_ANY)
def zeros_like(node, ctx):
    return torch.zeros_like


@kernel("OnesLike", CPU=_ANY, GPU=_ANY)
def ones_like(node, ctx):
    return torch.ones_like


@kernel("_Arg", CPU=_ANY, GPU=_ANY)
@kernel("_Retval", CPU=_ANY, GPU=_ANY)
def arg_or_retval(node, ctx):
    """Feeds and fetches are wired by the executor; these exist so placement sees a kernel."""
    return _identity


# The restructuring and indexing kernels register when this family is imported.
from engine.kernels import array_index, array_restructure  # noqa: E402,F401
