"""tf.TensorArray as TF1 builds it: the TensorArrayV3 op family on a resource handle, each
operation threading a float `flow` scalar so reads follow the writes they depend on. A
TensorArray passed through tf.while_loop or tf.cond travels as its flow."""

from __future__ import annotations

import contextlib

from engine import dtypes
from engine.graph import Tensor
from engine.ops.core import constant_value, convert_to_tensor, graph_of, shape_error
from engine.ops.registry import register_op
from engine.shapes import TensorShape

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "TensorArray",
]

_SCALAR = TensorShape([])
_FLOW = (dtypes.float32, _SCALAR)


def _check_scalar(op, t: Tensor, what: str) -> None:
    if t.shape.ndims not in (None, 0):
        raise shape_error(op, f"Shape must be rank 0 but is rank {t.shape.ndims} ({what})")


def _check_handle(op) -> None:
    handle = op.inputs[0]
    if not handle.dtype.is_resource:
        raise TypeError(f"Input 'handle' of '{op.type}' Op has type {handle.dtype.name} that "
                        "does not match expected type of resource.")


def _array_infer(op):
    _check_scalar(op, op.inputs[0], "size")
    return [(dtypes.resource, _SCALAR), _FLOW]


def _write_infer(op):
    _check_handle(op)
    _check_scalar(op, op.inputs[1], "index")
    return [_FLOW]


def _read_infer(op):
    _check_handle(op)
    return [(op.attrs["dtype"], TensorShape(None))]


def _gather_infer(op):
    _check_handle(op)
    element = op.attrs.get("element_shape", TensorShape(None))
    if element.dims is None:
        return [(op.attrs["dtype"], TensorShape(None))]
    return [(op.attrs["dtype"], TensorShape([op.inputs[1].shape[0]] + list(element.dims)))]


def _size_infer(op):
    _check_handle(op)
    return [(dtypes.int32, _SCALAR)]


def _concat_infer(op):
    _check_handle(op)
    return [(op.attrs["dtype"], TensorShape(None)), (dtypes.int64, TensorShape([None]))]


register_op("TensorArrayV3", _array_infer, stateful=True)
register_op("TensorArrayWriteV3", _write_infer, stateful=True)
register_op("TensorArrayReadV3", _read_infer, stateful=True)
register_op("TensorArrayGatherV3", _gather_infer, stateful=True)
register_op("TensorArrayScatterV3", lambda op: (_check_handle(op), [_FLOW])[1], stateful=True)
register_op("TensorArraySizeV3", _size_infer, stateful=True)
register_op("TensorArrayConcatV3", _concat_infer, stateful=True)
register_op("TensorArraySplitV3", lambda op: (_check_handle(op), [_FLOW])[1], stateful=True)
register_op("TensorArrayGradV3", lambda op: (_check_handle(op), [(dtypes.resource, _SCALAR),
                                                                _FLOW])[1], stateful=True)
register_op("TensorArrayCloseV3", lambda op: (_check_handle(op), [])[1], stateful=True)


class TensorArray:
    """A list of tensors of one dtype, written and read by index inside a step (a while
    loop's body writes element i in iteration i). Every write returns a new TensorArray
    object for the same array with the new flow; use it for what follows."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape: bool = True,
                 element_shape=None, colocate_with_first_write_call: bool = True, name=None):
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot construct with both handle and tensor_array_name")
        if handle is not None and not isinstance(handle, Tensor):
            raise TypeError(f"Handle must be a Tensor, got {type(handle).__name__}")
        if handle is None and size is None:
            raise ValueError("Size must be provided if handle is not provided")
        if handle is not None and size is not None:
            raise ValueError("Cannot provide both a handle and size at the same time")
        if handle is not None and element_shape is not None:
            raise ValueError("Cannot provide both a handle and element_shape at the same time")
        if handle is not None and flow is None:
            raise ValueError("flow must not be None if handle is not None.")
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._size = size
        # Shared by every TensorArray object of this array (writes refine it).
        self._element_shape = [TensorShape(element_shape) if element_shape is not None
                               else TensorShape(None)]
        self._colocate_with = [] if colocate_with_first_write_call else None
        if handle is not None:
            self._handle, self._flow = handle, flow
            return
        g = graph_of(size)
        with g.as_default(), g.name_scope(name or "TensorArray") as scope:
            size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
            self._size = size
            attrs = {"dtype": self._dtype, "element_shape": self._element_shape[0],
                     "dynamic_size": self._dynamic_size,
                     "clear_after_read": True if clear_after_read is None
                     else bool(clear_after_read),
                     "identical_element_shapes": bool(infer_shape),
                     "tensor_array_name": tensor_array_name or ""}
            # Placed with its first write (TF's colocate_with_first_write_call).
            with g.device(None) if colocate_with_first_write_call else contextlib.nullcontext(), \
                    g.colocate_with(None):
                op = g.create_op("TensorArrayV3", [size], attrs, name=scope)
        self._handle, self._flow = op.outputs

    # -- properties ---------------------------------------------------------------------------

    @property
    def dtype(self):
        return self._dtype

    @property
    def handle(self) -> Tensor:
        return self._handle

    @property
    def flow(self) -> Tensor:
        return self._flow

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape[0]

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    def with_flow(self, flow: Tensor) -> TensorArray:
        """The same array after the operation that produced `flow` (TF's
        build_ta_with_new_flow)."""
        new = TensorArray.__new__(TensorArray)
        new.__dict__.update(self.__dict__)
        new._flow = flow
        return new

    def _check_element_shape(self, shape: TensorShape) -> None:
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected "
                             f"{self.element_shape} ")
        if self._infer_shape:
            self._element_shape[0] = self.element_shape.merge_with(shape)

    def _colocated(self, value: Tensor):
        g = value.graph
        if self._colocate_with is None:
            return contextlib.nullcontext()
        if not self._colocate_with:
            self._colocate_with.append(value)
        return g.colocate_with(self._colocate_with[0])

    def _create(self, op_type: str, inputs, attrs: dict, name: str):
        g = self._handle.graph
        return g.create_op(op_type, inputs, attrs, name=name)

    # -- operations ---------------------------------------------------------------------------

    def write(self, index, value, name=None) -> TensorArray:
        g = self._handle.graph
        with g.as_default(), g.name_scope(name or "TensorArrayWrite"):
            value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            _check_dtypes(value, self._dtype)
            self._check_element_shape(value.shape)
            index = convert_to_tensor(index, dtype=dtypes.int32)
            with self._colocated(value):
                flow = self._create("TensorArrayWriteV3", [self._handle, index, value,
                                                           self._flow],
                                    {"T": self._dtype}, "TensorArrayWriteV3").outputs[0]
        return self.with_flow(flow)

    def read(self, index, name=None) -> Tensor:
        g = self._handle.graph
        with g.as_default():
            index = convert_to_tensor(index, dtype=dtypes.int32)
            value = self._create("TensorArrayReadV3", [self._handle, index, self._flow],
                                 {"dtype": self._dtype}, name or "TensorArrayReadV3").outputs[0]
        value.set_shape(self.element_shape)
        return value

    def gather(self, indices, name=None) -> Tensor:
        g = self._handle.graph
        with g.as_default():
            indices = convert_to_tensor(indices, dtype=dtypes.int32)
            value = self._create("TensorArrayGatherV3", [self._handle, indices, self._flow],
                                 {"dtype": self._dtype, "element_shape": self.element_shape},
                                 name or "TensorArrayGatherV3").outputs[0]
        if self.element_shape.dims is not None:
            value.set_shape([None] + list(self.element_shape.dims))
        return value

    def stack(self, name=None) -> Tensor:
        """Every element, stacked on a new first axis."""
        from engine.ops.reduction_ops import range as tf_range
        g = self._handle.graph
        with g.as_default(), g.colocate_with(self._handle), \
                g.name_scope(name or "TensorArrayStack"):
            value = self.gather(tf_range(0, self.size()), name=name)
            size = constant_value(self._size) if isinstance(self._size, Tensor) else self._size
            if self.element_shape.dims is not None and not self._dynamic_size and \
                    size is not None:
                value.set_shape([int(size)] + list(self.element_shape.dims))
            return value

    def unstack(self, value, name=None) -> TensorArray:
        """Element i is value[i]."""
        from engine.ops.array_ops import shape
        from engine.ops.reduction_ops import range as tf_range
        g = self._handle.graph
        with g.as_default(), g.name_scope(name or "TensorArrayUnstack"):
            value = convert_to_tensor(value, preferred_dtype=self._dtype)
            count = shape(value)[0]
            return self.scatter(tf_range(0, count), value, name=name)

    def scatter(self, indices, value, name=None) -> TensorArray:
        g = self._handle.graph
        with g.as_default(), g.name_scope(name or "TensorArrayScatter"):
            value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            _check_dtypes(value, self._dtype)
            self._check_element_shape(value.shape[1:])
            indices = convert_to_tensor(indices, dtype=dtypes.int32)
            with self._colocated(value):
                flow = self._create("TensorArrayScatterV3",
                                    [self._handle, indices, value, self._flow],
                                    {"T": self._dtype},
                                    "TensorArrayScatterV3").outputs[0]
        return self.with_flow(flow)

    def size(self, name=None) -> Tensor:
        g = self._handle.graph
        with g.as_default():
            if not self._dynamic_size and self._size is not None:
                return convert_to_tensor(self._size, dtype=dtypes.int32)
            return self._create("TensorArraySizeV3", [self._handle, self._flow], {},
                                name or "TensorArraySizeV3").outputs[0]

    def concat(self, name=None) -> Tensor:
        """Every element concatenated along its first axis."""
        g = self._handle.graph
        with g.as_default():
            shape = self.element_shape
            op = self._create("TensorArrayConcatV3", [self._handle, self._flow],
                              {"dtype": self._dtype,
                               "element_shape_except0": shape[1:] if shape.dims is not None
                               else TensorShape(None)},
                              name or "TensorArrayConcatV3")
        value = op.outputs[0]
        if shape.dims is not None:
            value.set_shape([None] + list(shape.dims[1:]))
        return value

    def split(self, value, lengths, name=None) -> TensorArray:
        """Element i is the next lengths[i] rows of value."""
        from engine.ops.array_ops import cast
        g = self._handle.graph
        with g.as_default(), g.name_scope(name or "TensorArraySplit"):
            value = convert_to_tensor(value, dtype=self._dtype, name="value")
            with self._colocated(value):
                lengths = cast(lengths, dtypes.int64)
                flow = self._create("TensorArraySplitV3",
                                    [self._handle, value, lengths, self._flow],
                                    {"T": self._dtype}, "TensorArraySplitV3").outputs[0]
        return self.with_flow(flow)

    def grad(self, source: str, flow=None, name=None) -> TensorArray:
        """The gradient array of this one for the gradients call `source` (made on first
        use at run time, same size; writes to one index add up)."""
        g = self._handle.graph
        flow = self._flow if flow is None else flow
        with g.as_default(), g.name_scope(name or "TensorArrayGrad"), \
                g.colocate_with(self._handle):
            op = self._create("TensorArrayGradV3", [self._handle, flow], {"source": source},
                              "TensorArrayGradV3")
            from engine.ops.array_ops import identity
            with g.control_dependencies([op.outputs[0]]):
                flow = identity(flow, name="gradient_flow")
        grad = TensorArray(dtype=self._dtype, handle=op.outputs[0], flow=flow,
                           infer_shape=self._infer_shape,
                           colocate_with_first_write_call=False)
        grad._element_shape = self._element_shape
        grad._size = self._size
        grad._dynamic_size = self._dynamic_size
        return grad

    def identity(self) -> TensorArray:
        from engine.ops.array_ops import identity
        return self.with_flow(identity(self._flow))

    def close(self, name=None):
        return self._create("TensorArrayCloseV3", [self._handle], {},
                            name or "TensorArrayCloseV3")

    def __repr__(self) -> str:
        return f"<tf.TensorArray '{self._handle.op.name}' dtype={self._dtype.name}>"


def _check_dtypes(value: Tensor, dtype) -> None:
    if value.dtype.base_dtype is not dtype:
        raise ValueError(f"TensorArray dtype is {dtype.name} but Op is trying to write dtype "
                         f"{value.dtype.base_dtype.name}.")
