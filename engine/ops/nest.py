"""Nested structures of values (TF's `nest`): lists, tuples, namedtuples and dicts (by sorted
key) are structure, everything else is a leaf. Control flow uses it for the loop variables and
branch results users pass as structures."""

from __future__ import annotations


def is_nested(value) -> bool:
    return isinstance(value, (list, tuple, dict))


def _children(value) -> list:
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    return list(value)


def flatten(structure) -> list:
    """The leaves of `structure`, depth first (dicts in sorted key order)."""
    if not is_nested(structure):
        return [structure]
    out = []
    stack = [structure]
    while stack:
        value = stack.pop()
        if is_nested(value):
            stack.extend(reversed(_children(value)))
        else:
            out.append(value)
    return out


def _rebuild(like, children: list):
    if isinstance(like, dict):
        keyed = dict(zip(sorted(like), children))
        return type(like)((k, keyed[k]) for k in like)
    if isinstance(like, tuple) and hasattr(like, "_fields"):
        return type(like)(*children)
    return type(like)(children)


def pack_sequence_as(structure, flat_sequence):
    """`flat_sequence`'s values in the shape of `structure`."""
    flat = list(flat_sequence)
    leaves = len(flatten(structure))
    if leaves != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {leaves} elements, but "
                         f"flat_sequence had {len(flat)} elements.  Structure: {structure!r}, "
                         f"flat_sequence: {flat!r}.")
    position = iter(flat)

    def pack(like):
        if not is_nested(like):
            return next(position)
        return _rebuild(like, [pack(c) for c in _children(like)])
    return pack(structure)


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
