"""Math kernels: elementwise arithmetic, comparisons, logic and unary functions, MatMul and
BatchMatMulV2, ClipByValue, reductions, ArgMax/ArgMin, scans, Range, LinSpace, Rank, AddN,
BroadcastGradientArgs and the fused gradient helpers (SigmoidGrad, TanhGrad, RsqrtGrad)."""

from __future__ import annotations

import functools

import numpy as np
import torch

from engine import dtypes, errors
from engine.kernels.array import host_tensor
from engine.kernels.registry import (
    CPU_FLOAT,
    CPU_NUMERIC,
    CPU_REAL,
    GPU_FLOAT,
    GPU_REAL,
    INDEX_TYPES,
    kernel,
)
from engine.ops.reduction_ops import range_size

_COMPLEX = (dtypes.complex64, dtypes.complex128)
_BOOL = (dtypes.bool,)

_ELEMENTWISE = {
    "Add": torch.add, "Sub": torch.sub, "Mul": torch.mul,
    "Maximum": torch.maximum, "Minimum": torch.minimum, "Pow": torch.pow,
    "Less": torch.lt, "Greater": torch.gt,
    "Neg": torch.neg, "Square": torch.square, "Abs": torch.abs,
}
_REAL_ELEMENTWISE = {"LessEqual": torch.le, "GreaterEqual": torch.ge}
_FLOAT_BINARY = {"RealDiv": torch.div}
_FLOAT_UNARY = {
    "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Exp": torch.exp, "Log": torch.log,
    "Sqrt": torch.sqrt, "Reciprocal": torch.reciprocal, "Log1p": torch.log1p,
    "Expm1": torch.expm1, "Rsqrt": torch.rsqrt, "Sin": torch.sin, "Cos": torch.cos,
}
# torch has no complex kernels for these (TF's Erf is real-only too).
_REAL_FLOAT_UNARY = {
    "Floor": torch.floor, "Ceil": torch.ceil, "Rint": torch.round, "Erf": torch.erf,
    "IsFinite": torch.isfinite, "IsNan": torch.isnan, "IsInf": torch.isinf,
}
_LOGICAL = {"LogicalAnd": torch.logical_and, "LogicalOr": torch.logical_or,
            "LogicalNot": torch.logical_not}


def _fixed(fn):
    """A factory that ignores the node: the torch function is the kernel itself, so the
    executor calls torch directly with no Python wrapper in between."""
    return lambda node, ctx: fn


for _op, _fn in _ELEMENTWISE.items():
    kernel(_op, CPU={"T": CPU_NUMERIC}, GPU={"T": GPU_REAL})(_fixed(_fn))
for _op, _fn in (("Equal", torch.eq), ("NotEqual", torch.ne)):
    kernel(_op, CPU={"T": CPU_NUMERIC + _BOOL}, GPU={"T": GPU_REAL + _BOOL})(_fixed(_fn))
# torch.div would turn integers into floats; TF registers RealDiv for float and complex only.
for _op, _fn in (*_FLOAT_BINARY.items(), *_FLOAT_UNARY.items()):
    kernel(_op, CPU={"T": CPU_FLOAT + (dtypes.complex64, dtypes.complex128)},
           GPU={"T": GPU_FLOAT})(_fixed(_fn))


for _op, _fn in _REAL_ELEMENTWISE.items():
    kernel(_op, CPU={"T": CPU_REAL}, GPU={"T": GPU_REAL})(_fixed(_fn))
for _op, _fn in _REAL_FLOAT_UNARY.items():
    kernel(_op, CPU={"T": CPU_FLOAT}, GPU={"T": GPU_FLOAT})(_fixed(_fn))
for _op, _fn in _LOGICAL.items():
    kernel(_op, CPU={"T": _BOOL}, GPU={"T": _BOOL})(_fixed(_fn))
kernel("Round", CPU={"T": CPU_REAL}, GPU={"T": GPU_REAL})(_fixed(torch.round))


@kernel("Sign", CPU={"T": CPU_REAL}, GPU={"T": GPU_REAL})
def sign(node, ctx):
    if not node.attr["T"].is_floating:
        return torch.sign

    def run(x):
        return torch.where(torch.isnan(x), x, torch.sign(x))   # torch.sign(NaN) is 0
    return run


def _divide_checked(fn):
    """A division kernel factory: integer division by zero is TF's InvalidArgumentError
    (torch would raise a bare RuntimeError on CPU and give garbage on CUDA)."""
    def factory(node, ctx):
        if node.attr["T"].is_floating:
            return fn

        def run(x, y):
            if not bool(torch.all(y)):
                raise errors.InvalidArgumentError(node, None, "Integer division by zero")
            return fn(x, y)
        return run
    return factory


_DIVISIONS = {
    "FloorDiv": functools.partial(torch.div, rounding_mode="floor"),
    "FloorMod": torch.remainder,
    "TruncateDiv": functools.partial(torch.div, rounding_mode="trunc"),
    "TruncateMod": torch.fmod,
}
for _op, _fn in _DIVISIONS.items():
    kernel(_op, CPU={"T": CPU_REAL}, GPU={"T": GPU_REAL})(_divide_checked(_fn))


@kernel("MulNoNan", CPU={"T": CPU_FLOAT + _COMPLEX}, GPU={"T": GPU_FLOAT})
def mul_no_nan(node, ctx):
    def run(x, y):
        return torch.where(y == 0, 0, x * y)
    return run


@kernel("DivNoNan", CPU={"T": CPU_FLOAT + _COMPLEX}, GPU={"T": GPU_FLOAT})
def div_no_nan(node, ctx):
    def run(x, y):
        return torch.where(y == 0, 0, x / y)
    return run


@kernel("ClipByValue", CPU={"T": CPU_REAL}, GPU={"T": GPU_REAL})
def clip_by_value(node, ctx):
    def run(t, lo, hi):
        # minimum first, then maximum, as TF's composite: a lower bound above the upper one
        # wins (torch.clamp would let the upper bound win).
        return torch.maximum(torch.minimum(t, hi), lo)
    return run


@kernel("SquaredDifference", CPU={"T": CPU_REAL}, GPU={"T": GPU_REAL})
def squared_difference(node, ctx):
    def run(x, y):
        return torch.square(x - y)
    return run


@kernel("SigmoidGrad", CPU={"T": CPU_FLOAT}, GPU={"T": GPU_FLOAT})
def sigmoid_grad(node, ctx):
    # dy * y * (1 - y) in one kernel, torch autograd's own (three kernels otherwise)
    return _swapped(torch.ops.aten.sigmoid_backward.default)


def _swapped(backward):
    """TF's (y, dy) argument order for torch's (grad_output, output) backward kernels."""
    def run(y, dy):
        return backward(dy, y)
    return run


@kernel("TanhGrad", CPU={"T": CPU_FLOAT}, GPU={"T": GPU_FLOAT})
def tanh_grad(node, ctx):
    return _swapped(torch.ops.aten.tanh_backward.default)     # dy * (1 - y * y)


@kernel("RsqrtGrad", CPU={"T": CPU_FLOAT + _COMPLEX}, GPU={"T": GPU_FLOAT})
def rsqrt_grad(node, ctx):
    def run(y, dy):
        return -0.5 * dy * (y * y * y)      # d(x^-1/2)/dx = -x^(-3/2) / 2 = -y^3 / 2
    return run


@kernel("MatMul", CPU={"T": CPU_NUMERIC}, GPU={"T": GPU_FLOAT})
def matmul(node, ctx):
    ta, tb = node.attr.get("transpose_a", False), node.attr.get("transpose_b", False)
    if not ta and not tb:
        return torch.mm

    def run(a, b):
        return torch.mm(a.t() if ta else a, b.t() if tb else b)
    return run


def _adjoint(x: torch.Tensor) -> torch.Tensor:
    return x.mH if x.is_complex() else x.mT


@kernel("BatchMatMulV2",
        CPU={"T": CPU_FLOAT + _COMPLEX + (dtypes.int32, dtypes.int64)},
        GPU={"T": GPU_FLOAT})
def batch_matmul(node, ctx):
    adj_x, adj_y = node.attr.get("adj_x", False), node.attr.get("adj_y", False)
    if not adj_x and not adj_y:
        return torch.matmul

    def run(a, b):
        return torch.matmul(_adjoint(a) if adj_x else a, _adjoint(b) if adj_y else b)
    return run


# -- reductions ------------------------------------------------------------------------------

def _axes(axes: torch.Tensor) -> tuple[int, ...]:
    if axes.dim() == 1:
        return tuple(axes.tolist())
    return tuple(axes.reshape(-1).tolist())


def _reduction(reduce):
    """A kernel factory for the reductions: `reduce(x, dims, keepdim)`, with TF's meaning of
    an empty axis list (reduce nothing), where torch would reduce every axis."""
    def factory(node, ctx):
        keep = node.attr.get("keep_dims", False)
        memo = [(None, 0, ())]       # the last (axes, rank, dims), replaced whole

        def run(x, axes):
            rank = max(x.dim(), 1)
            last = memo[0]
            if axes is last[0] and rank == last[1]:
                dims = last[2]
            else:
                dims = tuple(sorted({d % rank for d in _axes(axes)}))
                memo[0] = (axes, rank, dims)
            return reduce(x, dims, keep) if dims else x
        return run
    return factory


def _sum(x, dims, keep):
    return torch.sum(x, dim=dims, keepdim=keep, dtype=x.dtype)


def _mean(x, dims, keep):
    if x.is_floating_point() or x.is_complex():
        return torch.mean(x, dim=dims, keepdim=keep)
    count = 1
    for d in dims:
        count *= x.shape[d]
    total = torch.sum(x, dim=dims, keepdim=keep, dtype=torch.int64)
    return torch.div(total, count, rounding_mode="trunc").to(x.dtype)   # TF truncates


def _reduced_size(x, dims, keep) -> list[int]:
    return [1 if i in dims else n for i, n in enumerate(x.shape) if keep or i not in dims]


def _extreme(reduce, empty_value):
    """Max/Min; over an empty axis TF gives the identity (-inf/+inf, or the integer type's
    lowest/highest value), where torch raises."""
    def run(x, dims, keep):
        if x.dim() and any(x.shape[d] == 0 for d in dims):
            return torch.full(_reduced_size(x, dims, keep), empty_value(x.dtype),
                              dtype=x.dtype, device=x.device)
        return reduce(x, dim=dims, keepdim=keep)
    return run


def _lowest(dtype):
    return -float("inf") if dtype.is_floating_point else torch.iinfo(dtype).min


def _highest(dtype):
    return float("inf") if dtype.is_floating_point else torch.iinfo(dtype).max


def _prod(x, dims, keep):
    for d in sorted(dims, reverse=True):    # from the last axis, so the others keep their index
        x = torch.prod(x, dim=d, keepdim=keep, dtype=x.dtype)
    return x


def _any(x, dims, keep):
    return torch.any(x, dim=dims, keepdim=keep)


def _all(x, dims, keep):
    return torch.all(x, dim=dims, keepdim=keep)


_REDUCTIONS = (
    ("Sum", _sum, CPU_NUMERIC, GPU_REAL),
    ("Mean", _mean, CPU_NUMERIC, GPU_REAL),
    ("Max", _extreme(torch.amax, _lowest), CPU_REAL, GPU_REAL),
    ("Min", _extreme(torch.amin, _highest), CPU_REAL, GPU_REAL),
    ("Prod", _prod, CPU_NUMERIC, GPU_REAL),
    ("Any", _any, _BOOL, _BOOL),
    ("All", _all, _BOOL, _BOOL),
)
for _op, _reduce, _cpu, _gpu in _REDUCTIONS:
    kernel(_op, CPU={"T": _cpu, "Tidx": INDEX_TYPES}, GPU={"T": _gpu, "Tidx": INDEX_TYPES},
           host_memory=("reduction_indices",))(_reduction(_reduce))


def _arg_reduction(pick, nan_value: float):
    """ArgMax/ArgMin: the first index on ties; NaN never wins (TF's CPU kernel skips it:
    argmax([nan, 1.]) is 1, where torch would pick the NaN)."""
    def factory(node, ctx):
        out = node.attr["output_type"].torch_dtype
        floating = node.attr["T"].is_floating

        def run(x, axis):
            if floating:
                x = torch.where(torch.isnan(x), nan_value, x)
            return pick(x, dim=int(axis.reshape(-1)[0])).to(out)
        return run
    return factory


kernel("ArgMax", CPU={"T": CPU_REAL}, GPU={"T": GPU_REAL},
       host_memory=("dimension",))(_arg_reduction(torch.argmax, -float("inf")))
kernel("ArgMin", CPU={"T": CPU_REAL}, GPU={"T": GPU_REAL},
       host_memory=("dimension",))(_arg_reduction(torch.argmin, float("inf")))


def _shift_in(x: torch.Tensor, dim: int, fill) -> torch.Tensor:
    """x moved one step along `dim`, `fill` entering at the front (an exclusive scan)."""
    n = x.shape[dim]
    if n == 0:
        return x
    pad = torch.full_like(x.narrow(dim, 0, 1), fill)
    return torch.cat([pad, x.narrow(dim, 0, n - 1)], dim)


def _scan(scan, identity):
    def factory(node, ctx):
        exclusive, reverse = node.attr.get("exclusive", False), node.attr.get("reverse", False)

        def run(x, axis):
            dim = int(axis) % max(x.dim(), 1)
            if reverse:
                x = x.flip(dim)
            out = scan(x, dim, dtype=x.dtype)
            if exclusive:
                out = _shift_in(out, dim, identity)
            return out.flip(dim) if reverse else out
        return run
    return factory


kernel("Cumsum", CPU={"T": CPU_NUMERIC, "Tidx": INDEX_TYPES},
       GPU={"T": GPU_REAL, "Tidx": INDEX_TYPES}, host_memory=("axis",))(_scan(torch.cumsum, 0))
kernel("Cumprod", CPU={"T": CPU_NUMERIC, "Tidx": INDEX_TYPES},
       GPU={"T": GPU_REAL, "Tidx": INDEX_TYPES}, host_memory=("axis",))(_scan(torch.cumprod, 1))


# -- sequences -------------------------------------------------------------------------------

_RANGE_TYPES = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def range_values(start, limit, delta, dtype: np.dtype) -> np.ndarray:
    """TF's Range: `start + i * delta`, each step rounded in the output dtype (so
    range(0., 1., .1) ends in float32 0.90000004, as TF 2.21 gives)."""
    start, limit, delta = (np.asarray(v, dtype=dtype)[()] for v in (start, limit, delta))
    n = range_size(start, limit, delta)
    return (start + np.arange(n, dtype=dtype) * delta).astype(dtype)


def _check_range(node, start, limit, delta) -> None:
    if delta == 0:
        raise errors.InvalidArgumentError(node, None, f"Requires delta != 0: {delta}")
    if delta > 0 and start > limit:
        raise errors.InvalidArgumentError(
            node, None, f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise errors.InvalidArgumentError(
            node, None, f"Requires start >= limit when delta < 0: {start}/{limit}")


@kernel("Range", CPU={"Tidx": _RANGE_TYPES}, GPU={"Tidx": _RANGE_TYPES},
        host_memory=("start", "limit", "delta"))
def range_kernel(node, ctx):
    dtype = node.attr["Tidx"].numpy_dtype
    device = ctx.torch_device

    def run(start, limit, delta):
        values = [v.item() for v in (start, limit, delta)]
        _check_range(node, *values)
        return torch.from_numpy(range_values(*values, dtype)).to(device)
    return run


@kernel("LinSpace", CPU={"T": CPU_FLOAT, "Tidx": INDEX_TYPES},
        GPU={"T": GPU_FLOAT, "Tidx": INDEX_TYPES}, host_memory=("start", "stop", "num"))
def linspace(node, ctx):
    device = ctx.torch_device

    def run(start, stop, num):
        n = int(num)
        if n <= 0:
            raise errors.InvalidArgumentError(node, None, f"Requires num > 0: {n}")
        start, stop = start.to(device), stop.to(device)
        if n == 1:
            return start.reshape(1)
        step = (stop - start) / (n - 1)
        out = start + step * torch.arange(n, dtype=start.dtype, device=device)
        out[-1] = stop          # TF's kernel sets the end point exactly
        return out
    return run


@kernel("Rank", CPU={}, GPU={}, host_memory=("output",))
def rank(node, ctx):
    def run(x):
        return host_tensor(x.dim(), dtypes.int32)
    return run


@kernel("AddN", CPU={"T": CPU_NUMERIC}, GPU={"T": GPU_REAL})
def add_n(node, ctx):
    def run(*terms):
        return functools.reduce(torch.add, terms)
    return run


def broadcast_gradient_args_values(s0: list[int], s1: list[int]) -> tuple[list[int], list[int]]:
    """The axes each input was broadcast along (TF's BCast reduction indices)."""
    n = max(len(s0), len(s1))
    a = [1] * (n - len(s0)) + list(s0)
    b = [1] * (n - len(s1)) + list(s1)
    r0, r1 = [], []
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            if x == 1:
                r0.append(i)
                r1.append(i)
        elif x == 1:
            r0.append(i)
        elif y == 1:
            r1.append(i)
        else:
            raise ValueError(f"Incompatible shapes: {list(s0)} vs. {list(s1)}")
    return r0, r1


@kernel("BroadcastGradientArgs", CPU={"T": INDEX_TYPES}, GPU={"T": INDEX_TYPES},
        host_memory=("s0", "s1", "r0", "r1"))
def broadcast_gradient_args(node, ctx):
    memo = [(None, None, None)]      # the last (s0, s1, result), replaced whole

    def run(s0, s1):
        last = memo[0]
        if s0 is last[0] and s1 is last[1]:
            return last[2]
        r0, r1 = broadcast_gradient_args_values(s0.tolist(), s1.tolist())
        result = host_tensor(r0, dtypes.int32), host_tensor(r1, dtypes.int32)
        memo[0] = (s0, s1, result)
        return result
    return run
