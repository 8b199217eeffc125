"""Static shapes (`TensorShape`): possibly unknown rank, possibly unknown dimensions, and the
broadcasting and merging rules that shape inference uses."""

from __future__ import annotations

from collections.abc import Iterable


class TensorShape:
    """`dims` is None for unknown rank, else a tuple of int-or-None."""

    __slots__ = ("_dims",)

    def __init__(self, dims: Iterable | None | TensorShape):
        if isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif dims is None:
            self._dims = None
        else:
            self._dims = tuple(_as_dim(d) for d in dims)

    @property
    def dims(self) -> tuple | None:
        return self._dims

    @property
    def ndims(self) -> int | None:
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def as_list(self) -> list:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def num_elements(self) -> int | None:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other) -> TensorShape:
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape(a if a is not None else b for a, b in zip(self._dims, other._dims))

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of Shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return None if isinstance(key, int) else TensorShape(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __eq__(self, other) -> bool:
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        return f"TensorShape({None if self._dims is None else list(self._dims)})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return f"({_dim_str(self._dims[0])},)"
        return "(" + ", ".join(_dim_str(d) for d in self._dims) + ")"

    def bracket_str(self) -> str:
        """TF's C++ spelling used in error messages: `[?,3]`, `?` for unknown rank."""
        if self._dims is None:
            return "?"
        return "[" + ",".join("?" if d is None else str(d) for d in self._dims) + "]"


def _as_dim(d) -> int | None:
    if d is None:
        return None
    value = getattr(d, "value", d)
    if value is None:
        return None
    value = int(value)
    if value < -1:
        raise ValueError(f"Dimension {value} must be >= -1")
    return None if value == -1 else value


def _dim_str(d) -> str:
    return "?" if d is None else str(d)


def as_shape(shape) -> TensorShape:
    if isinstance(shape, TensorShape):
        return shape
    return TensorShape(shape)


def unknown_shape() -> TensorShape:
    return TensorShape(None)


def scalar() -> TensorShape:
    return TensorShape(())


def broadcast_shapes(a: TensorShape, b: TensorShape) -> TensorShape | None:
    """numpy broadcasting of static shapes; None when the dims definitely conflict."""
    if a.dims is None or b.dims is None:
        return TensorShape(None)
    ra, rb = list(a.dims), list(b.dims)
    n = max(len(ra), len(rb))
    ra = [1] * (n - len(ra)) + ra
    rb = [1] * (n - len(rb)) + rb
    out = []
    for x, y in zip(ra, rb):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        elif x == y:
            out.append(x)
        else:
            return None
    return TensorShape(out)
