"""Math kernels: elementwise arithmetic, unary functions, MatMul, reductions, AddN,
BroadcastGradientArgs and the Sigmoid/Tanh gradient helpers."""

from __future__ import annotations

import functools

import torch

from engine import dtypes
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

_ELEMENTWISE = {
    "Add": torch.add, "Sub": torch.sub, "Mul": torch.mul,
    "Maximum": torch.maximum, "Minimum": torch.minimum, "Pow": torch.pow,
    "Equal": torch.eq, "Less": torch.lt, "Greater": torch.gt,
    "Neg": torch.neg, "Square": torch.square, "Abs": torch.abs,
}
_FLOAT_BINARY = {"RealDiv": torch.div}
_FLOAT_UNARY = {
    "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Exp": torch.exp, "Log": torch.log,
    "Sqrt": torch.sqrt, "Reciprocal": torch.reciprocal,
}


def _fixed(fn):
    """A factory that ignores the node: the torch function is the kernel itself, so the
    executor calls torch directly with no Python wrapper in between."""
    return lambda node, ctx: fn


for _op, _fn in _ELEMENTWISE.items():
    kernel(_op, CPU={"T": CPU_NUMERIC}, GPU={"T": GPU_REAL})(_fixed(_fn))
# torch.div would turn integers into floats; TF registers RealDiv for float and complex only.
for _op, _fn in (*_FLOAT_BINARY.items(), *_FLOAT_UNARY.items()):
    kernel(_op, CPU={"T": CPU_FLOAT + (dtypes.complex64, dtypes.complex128)},
           GPU={"T": GPU_FLOAT})(_fixed(_fn))


@kernel("SquaredDifference", CPU={"T": CPU_REAL}, GPU={"T": GPU_REAL})
def squared_difference(node, ctx):
    def run(x, y):
        return torch.square(x - y)
    return run


@kernel("SigmoidGrad", CPU={"T": CPU_FLOAT}, GPU={"T": GPU_FLOAT})
def sigmoid_grad(node, ctx):
    def run(y, dy):
        return dy * y * (1 - y)
    return run


@kernel("TanhGrad", CPU={"T": CPU_FLOAT}, GPU={"T": GPU_FLOAT})
def tanh_grad(node, ctx):
    def run(y, dy):
        return dy * (1 - y * y)
    return run


@kernel("MatMul", CPU={"T": CPU_NUMERIC}, GPU={"T": GPU_FLOAT})
def matmul(node, ctx):
    ta, tb = node.attr.get("transpose_a", False), node.attr.get("transpose_b", False)
    if not ta and not tb:
        return torch.mm

    def run(a, b):
        return torch.mm(a.t() if ta else a, b.t() if tb else b)
    return run


def _axes(axes: torch.Tensor) -> tuple[int, ...]:
    return tuple(axes.reshape(-1).tolist())


def _reduction(reduce):
    """A kernel factory for Sum/Mean/Max: `reduce(x, dims, keepdim)`, with TF's meaning of an
    empty axis list (reduce nothing), where torch would reduce every axis."""
    def factory(node, ctx):
        keep = node.attr.get("keep_dims", False)

        def run(x, axes):
            dims = _axes(axes)
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


def _max(x, dims, keep):
    return torch.amax(x, dim=dims, keepdim=keep)


for _op, _reduce, _cpu in (("Sum", _sum, CPU_NUMERIC), ("Mean", _mean, CPU_NUMERIC),
                           ("Max", _max, CPU_REAL)):
    kernel(_op, CPU={"T": _cpu, "Tidx": INDEX_TYPES}, GPU={"T": GPU_REAL, "Tidx": INDEX_TYPES},
           host_memory=("reduction_indices",))(_reduction(_reduce))


@kernel("ArgMax", CPU={"T": CPU_REAL}, GPU={"T": GPU_REAL}, host_memory=("dimension",))
def argmax(node, ctx):
    out = node.attr["output_type"].torch_dtype

    def run(x, axis):
        return torch.argmax(x, dim=int(axis.reshape(-1)[0])).to(out)
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
    def run(s0, s1):
        r0, r1 = broadcast_gradient_args_values(s0.tolist(), s1.tolist())
        return host_tensor(r0, dtypes.int32), host_tensor(r1, dtypes.int32)
    return run
