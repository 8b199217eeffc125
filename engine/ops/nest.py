"""What control flow needs of nested structures (loop variables and branch results): tf.nest's
flatten and pack_sequence_as (engine/nest.py), and assert_same_structure / map_structure with
TF's check_types=False semantics and its full mismatch message."""

from __future__ import annotations

from engine.nest import _children, flatten, is_nested, pack_sequence_as

__all__ = ["assert_same_structure", "flatten", "is_nested", "map_structure", "pack_sequence_as"]


def _shape_text(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_shape_text(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_shape_text(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_shape_text(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return "."


def _mismatch(a, b) -> str | None:
    if is_nested(a) != is_nested(b):
        seq, other = (a, b) if is_nested(a) else (b, a)
        return (f'Substructure "type={type(seq).__name__} str={seq!r}" is a sequence, while '
                f'substructure "type={type(other).__name__} str={other!r}" is not')
    if not is_nested(a):
        return None
    if type(a) is not type(b) and not (isinstance(a, (list, tuple))
                                       and isinstance(b, (list, tuple))
                                       and not hasattr(a, "_fields")
                                       and not hasattr(b, "_fields")):
        return (f"The two namedtuples don't have the same sequence type. First structure "
                f"type={type(a).__name__} str={a!r} has type {type(a).__name__}, while second "
                f"structure type={type(b).__name__} str={b!r} has type {type(b).__name__}")
    if isinstance(a, dict) and sorted(a) != sorted(b):
        return f"The two dictionaries don't have the same set of keys: {sorted(a)} vs {sorted(b)}"
    if len(_children(a)) != len(_children(b)):
        return (f"The two structures don't have the same number of elements. First structure: "
                f"type={type(a).__name__} str={a!r}. Second structure: type={type(b).__name__} "
                f"str={b!r}")
    for x, y in zip(_children(a), _children(b)):
        found = _mismatch(x, y)
        if found:
            return found
    return None


def assert_same_structure(a, b) -> None:
    """Raises TF's ValueError when `a` and `b` do not nest alike (lists and tuples count as
    the same kind of sequence, as in TF's check_types=False)."""
    found = _mismatch(a, b)
    if found is not None:
        raise ValueError(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: type={type(a).__name__} str={a!r}\n\n"
            f"Second structure: type={type(b).__name__} str={b!r}\n\n"
            f"More specifically: {found}\nEntire first structure:\n{_shape_text(a)}\n"
            f"Entire second structure:\n{_shape_text(b)}")


def map_structure(fn, *structures):
    """`fn` applied leaf-wise to `structures` (which must nest alike), in the first's shape."""
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    flat = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*flat)])
