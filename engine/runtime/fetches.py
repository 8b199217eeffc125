"""Session.run's arguments: nested fetch structures flattened to unique graph elements and
rebuilt around the results; feed_dict keys resolved and values converted and checked."""

from __future__ import annotations

import numpy as np
import torch

from engine.graph import Graph, Operation, Tensor
from engine.ops.core import string_array


class FetchStructure:
    """Flattens lists, tuples, namedtuples and dicts of Tensors / Operations / Variables /
    names. `tensors` and `targets` are unique; `rebuild(values)` restores the caller's shape
    (None where an Operation was fetched)."""

    def __init__(self, graph: Graph, fetches):
        self.tensors: list[Tensor] = []
        self.targets: list[Operation] = []
        self._tensor_index: dict[int, int] = {}
        self._graph = graph
        self._template = self._flatten(fetches)

    def _element(self, fetch):
        if fetch is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>; fetch "
                            "Tensors, Operations, Variables or their names.")
        try:
            element = self._graph.as_graph_element(fetch)
        except TypeError:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must be a "
                            "string or Tensor. (Can not convert a "
                            f"{type(fetch).__name__} into a Tensor or Operation.)") from None
        except (KeyError, ValueError) as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. "
                             f"({e.args[0] if e.args else e})") from None
        if isinstance(element, Tensor):
            key = id(element)
            if key not in self._tensor_index:
                self._tensor_index[key] = len(self.tensors)
                self.tensors.append(element)
            return ("t", self._tensor_index[key])
        if element not in self.targets:
            self.targets.append(element)
        return ("op",)

    def _flatten(self, fetch):
        if isinstance(fetch, dict):
            return ("dict", type(fetch), [(k, self._flatten(v)) for k, v in fetch.items()])
        if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):
            return ("namedtuple", type(fetch), [self._flatten(v) for v in fetch])
        if isinstance(fetch, (list, tuple)):
            return ("seq", type(fetch), [self._flatten(v) for v in fetch])
        return self._element(fetch)

    def rebuild(self, values: list):
        return _rebuild(self._template, values)


def _rebuild(node, values):
    kind = node[0]
    if kind == "t":
        return values[node[1]]
    if kind == "op":
        return None
    if kind == "dict":
        return node[1]((k, _rebuild(v, values)) for k, v in node[2])
    if kind == "namedtuple":
        return node[1](*[_rebuild(v, values) for v in node[2]])
    return node[1](_rebuild(v, values) for v in node[2])


def resolve_feeds(graph: Graph, feed_dict) -> list[tuple[Tensor, object]]:
    if not feed_dict:
        return []
    if not isinstance(feed_dict, dict):
        raise TypeError(f"feed_dict must be a dict, got {type(feed_dict).__name__}")
    resolved = []
    for key, value in feed_dict.items():
        try:
            tensor = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except (TypeError, ValueError, KeyError) as e:
            raise TypeError(f"Cannot interpret feed_dict key {key!r} as Tensor: "
                            f"{e.args[0] if e.args else e}") from None
        if isinstance(value, (Tensor, Operation)):
            raise TypeError(f"The value of a feed cannot be a tf.Tensor object. Acceptable feed "
                            f"values include Python scalars, strings, lists, numpy ndarrays. "
                            f"(fed {value!r} for '{tensor.name}')")
        resolved.append((tensor, value))
    return resolved


def feed_value(tensor: Tensor, value) -> torch.Tensor | np.ndarray:
    """numpy-converts `value` to the fed tensor's dtype and checks its static shape."""
    dtype = tensor.dtype.base_dtype
    if dtype.is_string:
        return _string_feed(tensor, value)
    if _shareable(value, dtype.numpy_dtype):
        if not _fits(tensor.shape.dims, value.shape):
            raise ValueError(f"Cannot feed value of shape {value.shape} for Tensor "
                             f"'{tensor.name}', which has shape '{tensor.shape}'")
        return torch.from_numpy(value)
    try:
        array = np.array(value, dtype=dtype.numpy_dtype)
    except (TypeError, ValueError) as e:
        raise TypeError(f"Cannot feed value of type {type(value).__name__} for Tensor "
                        f"'{tensor.name}' of dtype {dtype.name}: {e}") from None
    except OverflowError:
        # Python ints that do not fit; numpy arrays of a wider dtype are cast (and wrap) as
        # TF casts them.
        info = np.iinfo(dtype.numpy_dtype) if dtype.is_integer else None
        bounds = f" [{info.min}, {info.max}]" if info is not None else ""
        raise ValueError(f"Cannot feed value {value!r} for Tensor '{tensor.name}' of dtype "
                         f"{dtype.name}: out of its range{bounds}") from None
    if dtype.is_integer and np.asarray(value).dtype.kind == "f":
        raise TypeError(f"Cannot feed floating-point values to Tensor '{tensor.name}' of dtype "
                        f"{dtype.name}; cast them first.")
    if not tensor.shape.is_compatible_with(array.shape):
        raise ValueError(f"Cannot feed value of shape {array.shape} for Tensor "
                         f"'{tensor.name}', which has shape '{tensor.shape}'")
    return torch.from_numpy(array)


def _shareable(value, numpy_dtype) -> bool:
    """A writable, aligned, C-ordered ndarray of the fed dtype is fed without a copy (TF too
    hands an aligned array's buffer to the step): kernels never write their inputs,
    variables copy what they are assigned and fetches are copies, so the step cannot change
    it nor keep it. 256x1024 float32: 50-70 us a step saved (bench_quantized)."""
    if type(value) is not np.ndarray or value.dtype != numpy_dtype:
        return False
    flags = value.flags
    return flags.c_contiguous and flags.writeable and flags.aligned


def _fits(dims: tuple | None, shape: tuple) -> bool:
    """TensorShape.is_compatible_with for a concrete shape, without building one."""
    if dims is None:
        return True
    if len(dims) != len(shape):
        return False
    for want, got in zip(dims, shape):
        if want is not None and want != got:
            return False
    return True


def _string_feed(tensor: Tensor, value) -> np.ndarray:
    """Strings travel as numpy object arrays of bytes (str is encoded as UTF-8)."""
    try:
        array = string_array(value)
    except TypeError as e:
        raise TypeError(f"Cannot feed value of type {type(value).__name__} for Tensor "
                        f"'{tensor.name}' of dtype string: {e}") from None
    if not tensor.shape.is_compatible_with(array.shape):
        raise ValueError(f"Cannot feed value of shape {array.shape} for Tensor "
                         f"'{tensor.name}', which has shape '{tensor.shape}'")
    return array


def to_numpy(value):
    """A fetched torch tensor as numpy (a copy: results must not alias engine buffers);
    0-d tensors come back as numpy scalars, as in TF."""
    if value is None:
        return None
    read = getattr(value, "read", None)
    if read is not None:
        value = read()
    if isinstance(value, np.ndarray):     # a string tensor: bytes, as TF returns them
        return value[()] if value.ndim == 0 else value.copy()
    if value.dtype == torch.bfloat16:
        value = value.float()
    array = value.detach().cpu().numpy()
    return array[()] if array.ndim == 0 else array.copy()
