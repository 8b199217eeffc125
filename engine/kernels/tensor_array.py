"""TensorArray kernels (TF's TensorArrayV3 family): TensorArrayV3 makes a fresh array for the
step and outputs its handle (the store itself, a host object) and a flow scalar; reads and
writes go through the handle and order themselves by the flow. Messages are TF's."""

from __future__ import annotations

import torch

from engine import dtypes, errors
from engine.kernels.array import host_tensor
from engine.kernels.registry import ALL_TYPES, kernel

_ANY = {}
# Arrays of resources hold the handles of other arrays (nested loops' accumulators).
_ELEMENT_TYPES = ALL_TYPES + (dtypes.resource,)
_WHOLE = {"dtype": ALL_TYPES}
_ELEMENT = {"dtype": _ELEMENT_TYPES}


class TensorArrayStore:
    """One step's array: per index its tensor (None until written), whether a read cleared
    it, and the element shape all writes must share (when identical_element_shapes)."""

    def __init__(self, node, size: int, device):
        attr = node.attr
        self.name = node.name
        self.dtype = attr["dtype"]
        # The torch dtype a write may skip the dtype check for (None where two TF dtypes
        # share it, as the quantized ones do).
        torch_dtype = self.dtype.torch_dtype
        self.torch_dtype = torch_dtype if torch_dtype is not None and \
            dtypes.as_dtype(torch_dtype) is self.dtype else None
        self.dynamic_size = bool(attr.get("dynamic_size", False))
        self.clear_after_read = bool(attr.get("clear_after_read", True))
        self.identical = bool(attr.get("identical_element_shapes", False))
        shape = attr.get("element_shape")
        self.element_shape = None if shape is None or shape.dims is None else list(shape.dims)
        self.values: list[torch.Tensor | None] = [None] * size
        self.cleared = [False] * size
        self.closed = False
        self.device = device
        self.grads: dict[str, TensorArrayStore] = {}
        self.aggregate = False      # a gradient array sums the writes to one index

    def gradient(self, source: str) -> TensorArrayStore:
        """The gradient array of this one for the gradients call `source` (TF's
        TensorArrayGradV3): same size and element shape, writes to an index summed."""
        found = self.grads.get(source)
        if found is None:
            found = TensorArrayStore.__new__(TensorArrayStore)
            found.__dict__.update(self.__dict__)
            found.name = f"{self.name}@{source}"
            found.values = [None] * len(self.values)
            found.cleared = [False] * len(self.values)
            found.closed = False
            found.clear_after_read = True
            found.grads = {}
            found.aggregate = True
            self.grads[source] = found
        return found

    def _error(self, text: str, cls=errors.InvalidArgumentError):
        return cls(None, None, f"TensorArray {self.name}: {text}")

    def _check_open(self) -> None:
        if self.closed:
            raise self._error("has already been closed.")

    def write(self, index: int, value: torch.Tensor) -> None:
        values = self.values
        if value.dtype == self.torch_dtype and not self.identical and not self.closed:
            # The common cases, every check below passed: a fresh index, or the next one of
            # a growing array (a gradient loop's accumulator).
            if 0 <= index < len(values) and values[index] is None and \
                    not self.cleared[index]:
                values[index] = value
                return
            if index == len(values) and self.dynamic_size:
                values.append(value)
                self.cleared.append(False)
                return
        self._check_open()
        if index < 0:
            raise self._error(f"Writing to negative indices (index {index}) is not allowed.",
                              errors.OutOfRangeError)
        if index >= len(self.values):
            if not self.dynamic_size:
                raise self._error(f"Tried to write to index {index} but array is not resizeable "
                                  f"and size is: {len(self.values)}")
            grow = index + 1 - len(self.values)
            self.values.extend([None] * grow)
            self.cleared.extend([False] * grow)
        if self.dtype.is_resource:
            self._write_handle(index, value)
            return
        if dtypes.as_dtype(value.dtype) is not self.dtype:
            raise self._error(f"TensorArray dtype is {self.dtype.tf_string} but Op is trying to "
                              f"write dtype {dtypes.as_dtype(value.dtype).tf_string}.")
        shape = list(value.shape)
        if self.identical and self.element_shape is not None and not _fits(shape,
                                                                           self.element_shape):
            raise self._error(f"Could not write to TensorArray index {index} because the value "
                              f"shape is {_text(shape)} which is incompatible with the "
                              f"TensorArray's inferred element shape: "
                              f"{_text(self.element_shape)} (consider setting infer_shape=False).")
        if self.cleared[index]:
            raise self._error(f"Could not write to TensorArray index {index} because it has "
                              "already been read.")
        if self.values[index] is not None and self.aggregate:
            self.values[index] = self.values[index] + value
            return
        if self.values[index] is not None:
            raise self._error(f"Could not write to TensorArray index {index} because it has "
                              "already been written to.")
        if self.identical:
            self.element_shape = shape
        self.values[index] = value

    def _write_handle(self, index: int, value) -> None:
        """An array of handles (the gradients pass keeps a nested loop's accumulator of each
        outer iteration so): the element is the resource itself, written once."""
        if not isinstance(value, TensorArrayStore):
            raise self._error(f"TensorArray dtype is resource but Op is trying to write "
                              f"{type(value).__name__} to index {index}.")
        if self.values[index] is not None or self.cleared[index]:
            raise self._error(f"Could not write to TensorArray index {index} because it has "
                              "already been written to.")
        self.values[index] = value

    def read(self, index: int) -> torch.Tensor:
        if self.closed:
            self._check_open()
        if index < 0 or index >= len(self.values):
            raise self._error(f"Tried to read from index {index} but array size is: "
                              f"{len(self.values)}")
        value = self.values[index]
        if value is None:
            if self.cleared[index]:
                raise self._error(f"Could not read index {index} twice because it was cleared "
                                  "after a previous read (perhaps try setting clear_after_read "
                                  "= false?).")
            if self.element_shape is None or any(d is None for d in self.element_shape):
                raise self._error(
                    f"Could not read from TensorArray index {index}.  Furthermore, the element "
                    f"shape is not fully defined: {_text(self.element_shape)}.  It is possible "
                    "you are working with a resizeable TensorArray and stop_gradients is not "
                    "allowing the gradients to be written.  If you set the full element_shape "
                    "property on the forward TensorArray, the proper all-zeros tensor will be "
                    "returned instead of incurring this error.")
            return torch.zeros(self.element_shape, dtype=self.dtype.torch_dtype,
                               device=self.device)
        if self.clear_after_read:
            self.values[index] = None
            self.cleared[index] = True
        return value

    def gather(self, indices: list[int]) -> torch.Tensor:
        if not indices:
            if self.element_shape is None or any(d is None for d in self.element_shape):
                raise self._error("Tried to gather 0 elements but the element shape is not "
                                  f"fully defined: {_text(self.element_shape)}")
            return torch.zeros([0] + self.element_shape, dtype=self.dtype.torch_dtype,
                               device=self.device)
        values = [self.read(i) for i in indices]
        _same_shapes(self, values, "Gather")
        return torch.stack(values)

    def concat(self) -> tuple[torch.Tensor, torch.Tensor]:
        values = [self.read(i) for i in range(len(self.values))]
        for i, v in enumerate(values):
            if v.dim() == 0:
                raise self._error(f"Concat saw a scalar shape at index {i} but requires at least "
                                  "vectors.  Did you mean to call TensorArray.stack instead?")
        lengths = host_tensor([v.shape[0] for v in values], dtypes.int64)
        if not values:
            tail = (self.element_shape or [0])[1:]
            return torch.zeros([0] + [d or 0 for d in tail], dtype=self.dtype.torch_dtype,
                               device=self.device), lengths
        return torch.cat(values), lengths


def _fits(shape: list, element_shape: list) -> bool:
    return len(shape) == len(element_shape) and all(
        e is None or s == e for s, e in zip(shape, element_shape))


def _text(shape) -> str:
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _same_shapes(store: TensorArrayStore, values: list, what: str) -> None:
    first = list(values[0].shape)
    for i, v in enumerate(values[1:], start=1):
        if list(v.shape) != first:
            raise store._error(f"Could not read from TensorArray index {i} because it has "
                               f"shape {_text(list(v.shape))} but the first element has shape "
                               f"{_text(first)} ({what} needs identical element shapes).")


def _ints(t) -> list[int]:
    return [int(v) for v in t.reshape(-1).tolist()]


_FLOW = host_tensor(0.0, dtypes.float32)


@kernel("TensorArrayV3", CPU=_ELEMENT, GPU=_ELEMENT, host_memory=("size", "handle"))
def tensor_array(node, ctx):
    device = ctx.torch_device

    def run(size):
        count = int(size.item())
        if count < 0:
            raise errors.InvalidArgumentError(node, None, f"Size should be >= 0, got: {count}")
        return TensorArrayStore(node, count, device), _FLOW
    return run


@kernel("TensorArrayGradV3", CPU=_ANY, GPU=_ANY, host_memory=("handle", "grad_handle"))
def tensor_array_grad(node, ctx):
    source = node.attr["source"]

    def run(handle, flow):
        return handle.gradient(source), _FLOW
    return run


@kernel("TensorArrayWriteV3", CPU={"T": _ELEMENT_TYPES}, GPU={"T": _ELEMENT_TYPES},
        host_memory=("handle", "index"))
def tensor_array_write(node, ctx):
    def run(handle, index, value, flow):
        handle.write(int(index.item()), value)
        return flow
    return run


@kernel("TensorArrayReadV3", CPU=_ELEMENT, GPU=_ELEMENT, host_memory=("handle", "index"))
def tensor_array_read(node, ctx):
    def run(handle, index, flow):
        return handle.read(int(index.item()))
    return run


@kernel("TensorArrayGatherV3", CPU=_WHOLE, GPU=_WHOLE, host_memory=("handle", "indices"))
def tensor_array_gather(node, ctx):
    def run(handle, indices, flow):
        return handle.gather(_ints(indices))
    return run


@kernel("TensorArrayScatterV3", CPU={"T": ALL_TYPES}, GPU={"T": ALL_TYPES},
        host_memory=("handle", "indices"))
def tensor_array_scatter(node, ctx):
    def run(handle, indices, value, flow):
        positions = _ints(indices)
        if value.dim() == 0 or value.shape[0] != len(positions):
            raise handle._error(f"Expected len(indices) == values.shape[0], but saw: "
                                f"{len(positions)} vs. "
                                f"{value.shape[0] if value.dim() else 'a scalar'}")
        for i, position in enumerate(positions):
            handle.write(position, value[i])
        return flow
    return run


@kernel("TensorArraySizeV3", CPU=_ANY, GPU=_ANY, host_memory=("handle", "size"))
def tensor_array_size(node, ctx):
    def run(handle, flow):
        return host_tensor(len(handle.values), dtypes.int32)
    return run


@kernel("TensorArrayConcatV3", CPU=_WHOLE, GPU=_WHOLE, host_memory=("handle", "lengths"))
def tensor_array_concat(node, ctx):
    def run(handle, flow):
        return handle.concat()
    return run


@kernel("TensorArraySplitV3", CPU={"T": ALL_TYPES}, GPU={"T": ALL_TYPES},
        host_memory=("handle", "lengths"))
def tensor_array_split(node, ctx):
    def run(handle, value, lengths, flow):
        sizes = _ints(lengths)
        total = value.shape[0] if value.dim() else 0
        if sum(sizes) != total:
            raise handle._error(f"Expected sum of lengths to be equal to values.shape[0], but "
                                f"sum of lengths is {sum(sizes)} and value's shape is: "
                                f"{_text(list(value.shape))}")
        if len(sizes) != len(handle.values) and not handle.dynamic_size:
            raise handle._error(f"TensorArray's size is not equal to the size of lengths "
                                f"({len(handle.values)} vs. {len(sizes)}), and the TensorArray "
                                "is not marked as dynamically resizeable")
        start = 0
        for i, n in enumerate(sizes):
            handle.write(i, value[start:start + n])
            start += n
        return flow
    return run


@kernel("TensorArrayCloseV3", CPU=_ANY, GPU=_ANY, host_memory=("handle",))
def tensor_array_close(node, ctx):
    def run(handle):
        handle.closed = True
    return run
