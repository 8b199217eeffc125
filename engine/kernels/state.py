"""Variable state and its kernels. A VariableSlot is the ref a VariableV2 node outputs; the
session's VariableStore keeps one per (device, variable name) across runs. Updates replace the
slot's tensor instead of writing in place, so a value read earlier in a step never changes."""

from __future__ import annotations

import threading

import torch

from engine import errors
from engine.kernels.registry import ALL_TYPES, CPU_REAL, GPU_FLOAT, GPU_VARIABLE, Constant, kernel


class VariableSlot:
    __slots__ = ("name", "device", "dtype", "shape", "value")

    def __init__(self, name: str, device: str, dtype, shape):
        self.name = name
        self.device = device
        self.dtype = dtype
        self.shape = shape
        self.value: torch.Tensor | None = None

    def read(self) -> torch.Tensor:
        value = self.value
        if value is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {self.name}")
        return value


class VariableStore:
    """Per-session variable storage; thread-safe creation, lock-free reads."""

    def __init__(self):
        self._slots: dict[tuple[str, str], VariableSlot] = {}
        self._lock = threading.Lock()

    def slot(self, name: str, device: str, dtype, shape) -> VariableSlot:
        key = (device, name)
        with self._lock:
            found = self._slots.get(key)
            if found is None:
                found = self._slots[key] = VariableSlot(name, device, dtype, shape)
            return found

    def slots(self) -> list[VariableSlot]:
        return list(self._slots.values())

    def clear(self) -> None:
        self._slots.clear()


@kernel("VariableV2", CPU={"dtype": ALL_TYPES}, GPU={"dtype": GPU_VARIABLE})
def variable(node, ctx):
    return Constant(ctx.variables.slot(node.name, ctx.device.name, node.attr["dtype"],
                                       node.attr["shape"]))


def _check_shape(node, slot: VariableSlot, value: torch.Tensor) -> None:
    declared = slot.shape
    if declared.dims is not None and list(value.shape) != [d if d is not None else s for d, s in
                                                           zip(declared.dims, value.shape)]:
        raise errors.InvalidArgumentError(
            node, None, f"Assign requires shapes of both tensors to match. lhs shape= "
                        f"{declared.bracket_str()} rhs shape= {list(value.shape)}")


@kernel("Assign", CPU={"T": ALL_TYPES}, GPU={"T": GPU_VARIABLE})
def assign(node, ctx):
    validate = node.attr.get("validate_shape", True)

    def run(slot, value):
        if validate:
            _check_shape(node, slot, value)
        slot.value = value
        return slot
    return run


@kernel("AssignAdd", CPU={"T": CPU_REAL}, GPU={"T": GPU_VARIABLE})
def assign_add(node, ctx):
    def run(slot, value):
        slot.value = slot.read() + value
        return slot
    return run


@kernel("AssignSub", CPU={"T": CPU_REAL}, GPU={"T": GPU_VARIABLE})
def assign_sub(node, ctx):
    def run(slot, value):
        slot.value = slot.read() - value
        return slot
    return run


@kernel("ApplyGradientDescent", CPU={"T": CPU_REAL}, GPU={"T": GPU_FLOAT})
def apply_gradient_descent(node, ctx):
    def run(slot, alpha, delta):
        slot.value = slot.read() - alpha * delta
        return slot
    return run


@kernel("NoOp", CPU={}, GPU={})
def no_op(node, ctx):
    def run():
        return None
    return run
