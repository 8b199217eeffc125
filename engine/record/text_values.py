"""Text summaries as string tensors: what RunWriter.text accepts (a str, a nested list of str,
a numpy array of strings) turned into (cells in row-major order, shape), refusing ragged or
non-string input with the tag and the offending position named."""

from __future__ import annotations

from typing import Any

import numpy as np

Cells = tuple[str, ...]
Shape = tuple[int, ...]

_ACCEPTED = "a str, a list of str (a list of rows for a table) or a numpy array of strings"


def string_tensor(tag: str, value: Any) -> tuple[Cells, Shape]:
    """(cells, shape): a str is shape (); a list of str one column (n,); a list of rows (or
    a numpy array of strings) its own shape. bytes cells are read as UTF-8, as TensorFlow's
    string tensors hold text."""
    if isinstance(value, (str, bytes)):
        return (_cell(tag, value, ()),), ()
    if isinstance(value, np.ndarray):
        return _array_cells(tag, value)
    if isinstance(value, (list, tuple)):
        shape = _nested_shape(tag, value, ())
        return tuple(_cell(tag, item, at) for at, item in _leaves(value, ())), shape
    raise TypeError(f"text {tag!r}: text must be {_ACCEPTED}, got {type(value).__name__}")


def _cell(tag: str, item: Any, at: tuple[int, ...]) -> str:
    if isinstance(item, np.ndarray):        # a 0-d array in a list: its one element
        item = item.item()
    if isinstance(item, str):
        return item
    if isinstance(item, (bytes, np.bytes_)):
        return bytes(item).decode("utf-8", "replace")
    where = f" at {list(at)}" if at else ""
    raise TypeError(f"text {tag!r}: every cell must be a str, got {type(item).__name__}{where}")


def _is_nested(item: Any) -> bool:
    return isinstance(item, (list, tuple)) or (isinstance(item, np.ndarray) and item.ndim > 0)


def _nested_shape(tag: str, items: list | tuple, at: tuple[int, ...]) -> Shape:
    """The shape of a nested list; every row at one depth must have the same length."""
    nested = [_is_nested(item) for item in items]
    if not any(nested):
        return (len(items),)
    if not all(nested):
        first = nested.index(True) if not nested[0] else nested.index(False)
        kinds = ("a list", "a string") if nested[0] else ("a string", "a list")
        raise ValueError(f"text {tag!r}: ragged nested list: item {list(at + (first,))} is "
                         f"{kinds[1]} where item {list(at + (0,))} is {kinds[0]}; a text "
                         "table needs every row the same length")
    shapes = [_nested_shape(tag, list(item), at + (i,)) for i, item in enumerate(items)]
    for i, shape in enumerate(shapes):
        if shape != shapes[0]:
            raise ValueError(f"text {tag!r}: ragged nested list: item {list(at + (i,))} has "
                             f"shape {list(shape)} where item {list(at + (0,))} has "
                             f"{list(shapes[0])}; a text table needs every row the same "
                             "length")
    return (len(items),) + shapes[0]


def _leaves(items: Any, at: tuple[int, ...]):
    for i, item in enumerate(items):
        if _is_nested(item):
            yield from _leaves(item, at + (i,))
        else:
            yield at + (i,), item


def _array_cells(tag: str, array: np.ndarray) -> tuple[Cells, Shape]:
    shape = tuple(int(d) for d in array.shape)
    if array.dtype.kind == "U":
        return tuple(str(item) for item in array.reshape(-1).tolist()), shape
    if array.dtype.kind in "SO":
        flat = array.reshape(-1)
        return tuple(_cell(tag, item, tuple(int(i) for i in np.unravel_index(k, shape)))
                     for k, item in enumerate(flat)), shape
    raise TypeError(f"text {tag!r}: text must be {_ACCEPTED}, got a {array.dtype} array")
