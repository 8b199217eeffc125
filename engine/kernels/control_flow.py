"""Kernels of TF1's control-flow primitives. They compute values only; what makes them control
flow (dead outputs, frames, iterations) is the dynamic executor's job
(engine/runtime/dynamic_executor.py): a Switch leaves its untaken output as NO_VALUE, a Merge
is handed NO_VALUE for its dead inputs and forwards the live one."""

from __future__ import annotations

import numpy as np
import torch

from engine import dtypes, errors
from engine.kernels.array import host_tensor
from engine.kernels.registry import kernel

_ANY = {}


class _NoValue:
    """The dead tensor: an output slot that produced nothing (TF's Entry::NO_VALUE)."""

    __slots__ = ()
    nbytes = 0

    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE = _NoValue()


def _pred_value(node, pred) -> bool:
    if isinstance(pred, torch.Tensor):
        if pred.dim() != 0:
            raise errors.InvalidArgumentError(
                node, None, "The second input must be a scalar, but it has shape "
                            f"[{','.join(str(d) for d in pred.shape)}]")
        return bool(pred.item())
    return bool(pred)


@kernel("Switch", CPU=_ANY, GPU=_ANY, host_memory=("pred",))
@kernel("RefSwitch", CPU=_ANY, GPU=_ANY, host_memory=("pred",))
def switch(node, ctx):
    def run(data, pred):
        return (NO_VALUE, data) if _pred_value(node, pred) else (data, NO_VALUE)
    return run


@kernel("Merge", CPU=_ANY, GPU=_ANY, host_memory=("value_index",))
@kernel("RefMerge", CPU=_ANY, GPU=_ANY, host_memory=("value_index",))
def merge(node, ctx):
    indices = [host_tensor(i, dtypes.int32) for i in range(node.attr.get("N", 2))]

    def run(*inputs):
        for i, value in enumerate(inputs):
            if value is not NO_VALUE:
                return value, indices[i] if i < len(indices) else host_tensor(i, dtypes.int32)
        raise errors.InternalError(node, None, f"Merge {node.name} ran with no live input")
    return run


def _forward(x):
    return x


@kernel("Enter", CPU=_ANY, GPU=_ANY)
@kernel("RefEnter", CPU=_ANY, GPU=_ANY)
@kernel("Exit", CPU=_ANY, GPU=_ANY)
@kernel("RefExit", CPU=_ANY, GPU=_ANY)
@kernel("NextIteration", CPU=_ANY, GPU=_ANY)
@kernel("RefNextIteration", CPU=_ANY, GPU=_ANY)
@kernel("LoopCond", CPU=_ANY, GPU=_ANY, host_memory=("input", "output"))
def forward(node, ctx):
    return _forward


@kernel("ControlTrigger", CPU=_ANY, GPU=_ANY)
def control_trigger(node, ctx):
    def run():
        return None
    return run


def _summarize(value, limit: int) -> str:
    """TF's SummarizeValue: the first `limit` elements, space separated, `...` after."""
    array = np.asarray(value.cpu() if isinstance(value, torch.Tensor) else value).reshape(-1)
    items = [v.decode("utf-8", "replace") if isinstance(v, bytes) else
             str(int(v)) if isinstance(v, (bool, np.bool_)) else str(v)
             for v in array[:limit].tolist()]
    return " ".join(items) + ("..." if array.size > limit else "")


@kernel("Assert", CPU=_ANY, GPU=_ANY, host_memory=("condition", "data"))
def assert_(node, ctx):
    limit = node.attr.get("summarize", 3)

    def run(condition, *data):
        if not bool(condition.item()):
            shown = " ".join(f"[{_summarize(d, limit)}]" for d in data)
            raise errors.InvalidArgumentError(node, None, f"assertion failed: {shown}")
    return run
