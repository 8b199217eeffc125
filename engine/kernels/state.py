"""Variable state and its kernels. A VariableSlot is the ref a VariableV2 node outputs; the
session's VariableStore keeps one per (device, variable name) across runs. As in TF1, updates
write into the slot's buffer in place and reads hand out that buffer, so a read that runs
after an update (in the same step or a later one) sees it."""

from __future__ import annotations

import threading

import torch

from engine import errors
from engine.kernels.registry import (
    CPU_REAL,
    GPU_FLOAT,
    GPU_VARIABLE,
    WITH_QUANTIZED,
    Constant,
    kernel,
)


class VariableSlot:
    """`value` is the variable's live buffer (None until the first Assign). Kernels that
    update a variable write into `read()` in place; only Assign may replace the buffer."""

    __slots__ = ("name", "device", "dtype", "shape", "value", "lock")

    def __init__(self, name: str, device: str, dtype, shape):
        self.name = name
        self.device = device
        self.dtype = dtype
        self.shape = shape
        self.value: torch.Tensor | None = None
        self.lock = threading.Lock()      # held by updates whose use_locking attr is true

    def read(self) -> torch.Tensor:
        value = self.value
        if value is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {self.name}")
        return value

    def assign(self, value: torch.Tensor) -> None:
        """Copies `value` into the buffer (onto the buffer's device and dtype). The first
        assign, or one that changes the shape, takes a private copy, so a variable never
        aliases a Const, a feed or another variable's buffer."""
        current = self.value
        if current is None:
            self.value = value.clone(memory_format=torch.contiguous_format)
        elif current.shape != value.shape:
            self.value = value.to(current.device, current.dtype, copy=True).contiguous()
        else:
            current.copy_(_unaliased(current, value))


def honour_use_locking(node, update):
    """TF's use_locking: an update op with the attr set holds its variable's lock (the ref is
    the first argument), so concurrent locked updates are never lost. Without it updates may
    race, as TF documents; Assign defaults to locking, AssignAdd/AssignSub and the Apply ops
    do not."""
    if not node.attr.get("use_locking", False):
        return update

    def locked(slot, *args):
        with slot.lock:
            return update(slot, *args)
    return locked


def _unaliased(buffer: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """`value` itself, or a copy where it shares memory with `buffer` (`assign(w,
    transpose(w))`): an in-place op may not read memory it is writing."""
    if value is buffer or value.device.type == "meta":
        return value
    if value.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr():
        return value.clone()
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


@kernel("VariableV2", CPU={"dtype": WITH_QUANTIZED}, GPU={"dtype": GPU_VARIABLE})
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


def _check_same_size(node, buffer: torch.Tensor, update: torch.Tensor) -> None:
    if buffer.shape != update.shape:
        raise errors.InvalidArgumentError(
            node, None, f"Parameters and update must be the same size: variable "
                        f"{list(buffer.shape)}, update {list(update.shape)}")


@kernel("Assign", CPU={"T": WITH_QUANTIZED}, GPU={"T": GPU_VARIABLE})
def assign(node, ctx):
    validate = node.attr.get("validate_shape", True)

    def run(slot, value):
        if validate:
            _check_shape(node, slot, value)
        slot.assign(value)
        return slot
    return honour_use_locking(node, run)


@kernel("AssignAdd", CPU={"T": CPU_REAL}, GPU={"T": GPU_VARIABLE})
def assign_add(node, ctx):
    def run(slot, value):
        buffer = slot.read()
        _check_same_size(node, buffer, value)
        buffer.add_(_unaliased(buffer, value))
        return slot
    return honour_use_locking(node, run)


@kernel("AssignSub", CPU={"T": CPU_REAL}, GPU={"T": GPU_VARIABLE})
def assign_sub(node, ctx):
    def run(slot, value):
        buffer = slot.read()
        _check_same_size(node, buffer, value)
        buffer.sub_(_unaliased(buffer, value))
        return slot
    return honour_use_locking(node, run)


@kernel("ApplyGradientDescent", CPU={"T": CPU_REAL}, GPU={"T": GPU_FLOAT})
def apply_gradient_descent(node, ctx):
    def run(slot, alpha, delta):
        buffer = slot.read()
        _check_same_size(node, buffer, delta)
        buffer.sub_(alpha * delta)
        return slot
    return honour_use_locking(node, run)


@kernel("NoOp", CPU={}, GPU={})
def no_op(node, ctx):
    def run():
        return None
    return run
