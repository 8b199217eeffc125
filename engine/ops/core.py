"""What every op module needs: turning Python values into tensors, picking the graph of the
inputs, naming helper constants inside an op's scope, and shape-inference helpers."""

from __future__ import annotations

import contextlib

import numpy as np

from engine import dtypes
from engine.graph import Graph, Operation, Tensor, get_default_graph


def graph_of(*values) -> Graph:
    """The graph that owns the tensor inputs (the default graph when there are none)."""
    found = None
    for v in values:
        for t in (v if isinstance(v, (list, tuple)) else [v]):
            element = getattr(t, "_as_graph_element", None)
            t = element() if element else t
            if isinstance(t, (Tensor, Operation)):
                if found is None:
                    found = t.graph
                elif t.graph is not found:
                    raise ValueError(f"{t} must be from the same graph as the other inputs.")
    return found or get_default_graph()


@contextlib.contextmanager
def op_scope(graph: Graph, name: str | None, default_name: str):
    """Reserves the op's unique name as a scope, so helper constants are named `<op>/y`."""
    with graph.as_default(), graph.name_scope(name or default_name) as scope:
        yield scope


def string_array(value) -> np.ndarray:
    """str/bytes (nested lists, numpy str arrays) as a numpy object array of bytes: TF's
    string tensors hold bytes, and str is encoded as UTF-8."""
    array = np.array(value, dtype=object)
    flat = array.reshape(-1)
    for i, item in enumerate(flat):
        if isinstance(item, str):
            flat[i] = item.encode("utf-8")
        elif not isinstance(item, bytes):
            raise TypeError(f"Expected string, but got {item!r} of type "
                            f"'{type(item).__name__}'.")
    return array


def _numpy_value(value, dtype: dtypes.DType | None) -> np.ndarray:
    if dtype is dtypes.string or (dtype is None and _is_text(value)):
        return string_array(value)
    if dtype is not None:
        if dtype.numpy_dtype is None:
            raise TypeError(f"Cannot make a constant of dtype {dtype.name}")
        array = np.asarray(value)
        whole = dtype.is_integer or dtype.is_quantized
        if whole and array.dtype.kind == "f" and array.size:  # np.asarray([]) is float64
            raise TypeError(f"Expected {dtype.name}, got {value!r} of type "
                            f"'{type(value).__name__}' instead.")
        return np.asarray(value, dtype=dtype.numpy_dtype)
    array = np.asarray(value)
    # TF's defaults: Python floats become float32, Python ints int32.
    if array.dtype == np.float64 and not isinstance(value, np.ndarray | np.generic):
        array = array.astype(np.float32)
    elif array.dtype == np.int64 and not isinstance(value, np.ndarray | np.generic):
        array = array.astype(np.int32)
    if array.dtype.kind in "OUS":
        raise TypeError(f"Cannot convert {value!r} to a tensor: unsupported element type "
                        f"{array.dtype}")
    return array


def _is_text(value) -> bool:
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return isinstance(value, (str, bytes)) or (
        isinstance(value, np.ndarray) and value.dtype.kind in "SU")


def make_constant(value, dtype=None, shape=None, name: str = "Const",
                  graph: Graph | None = None) -> Tensor:
    graph = graph or get_default_graph()
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    array = _numpy_value(value, dtype)
    if shape is not None:
        shape = list(shape)
        count = int(np.prod(shape)) if shape else 1
        if array.size == 1 and count != 1:
            array = np.full(shape, array.reshape(()), dtype=array.dtype)
        elif array.size != count:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {array.shape}.")
        else:
            array = array.reshape(shape)
    # A quantized constant holds its plain integers; numpy cannot name the quantized type.
    out_dtype = dtype if dtype is not None and dtype.is_quantized else dtypes.as_dtype(array.dtype)
    op = graph.create_op("Const", [], {"value": array, "dtype": out_dtype}, name=name)
    return op.outputs[0]


def convert_to_tensor(value, dtype=None, name: str | None = None,
                      preferred_dtype=None) -> Tensor:
    """Tensors pass through (dtype checked), Variables give their value, anything else
    becomes a Const."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    element = getattr(value, "_as_graph_element", None)
    if element is not None and not isinstance(value, Tensor):
        value = value.value() if hasattr(value, "value") else element()
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype.base_dtype is not dtype.base_dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with "
                             f"dtype {value.dtype.name}: {value}")
        return value
    if isinstance(value, Operation):
        raise TypeError(f"Can't convert Operation '{value.name}' to Tensor (target dtype="
                        f"{dtype}, name={name})")
    if dtype is None and preferred_dtype is not None:
        try:
            return make_constant(value, preferred_dtype, name=name or "Const")
        except (TypeError, ValueError):
            pass
    return make_constant(value, dtype, name=name or "Const")


def constant_value(tensor: Tensor) -> np.ndarray | None:
    """The value of a tensor known at build time (a Const, or the Shape of a fully known
    tensor), else None."""
    op = tensor.op
    if op.type == "Const":
        return op.attrs["value"]
    if op.type == "Shape" and op.inputs[0].shape.is_fully_defined():
        return np.asarray(op.inputs[0].shape.as_list(),
                          dtype=op.attrs["out_type"].numpy_dtype)
    return None


def same_dtype_inputs(op: Operation, arg_names=("x", "y")) -> dtypes.DType:
    """TF's build-time check that all inputs share one dtype (attr T); arithmetic never takes
    a quantized type (its Quantized* twin does)."""
    first = op.inputs[0].dtype.base_dtype
    refuse_quantized(op, first, arg_names[0])
    for i, t in enumerate(op.inputs[1:], start=1):
        if t.dtype.base_dtype is not first:
            raise TypeError(f"Input '{arg_names[i] if i < len(arg_names) else i}' of "
                            f"'{op.type}' Op has type {t.dtype.base_dtype.name} that does not "
                            f"match type {first.name} of argument '{arg_names[0]}'.")
    return first


def shape_error(op: Operation, detail: str) -> ValueError:
    shapes = ", ".join(t.shape.bracket_str() for t in op.inputs)
    return ValueError(f"{detail} for '{op.name}' (op: '{op.type}') with input shapes: {shapes}.")


def check_dtype_allowed(op: Operation, dtype: dtypes.DType, allowed, arg: str = "T") -> None:
    if dtype.base_dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise TypeError(f"Value passed to parameter '{arg}' of op '{op.type}' ('{op.name}') has "
                        f"DataType {dtype.base_dtype.name} not in list of allowed values: {names}")


# TF's list for arithmetic ops (Add, MatMul, Relu, ...): every real and complex type.
ARITHMETIC_TYPES = (dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64, dtypes.uint8,
                    dtypes.uint16, dtypes.uint32, dtypes.uint64, dtypes.int8, dtypes.int16,
                    dtypes.int32, dtypes.int64, dtypes.complex64, dtypes.complex128)


def refuse_quantized(op: Operation, dtype: dtypes.DType, arg: str = "x") -> None:
    """Quantized values are plain integers underneath; an op that would do arithmetic on them
    refuses them at build time, as TF does."""
    if dtype.base_dtype.is_quantized:
        check_dtype_allowed(op, dtype, ARITHMETIC_TYPES, arg=arg)
