"""Nested structures as tf.nest sees them (lists, tuples, namedtuples, dicts by sorted key):
flatten, pack_sequence_as, map_structure, assert_same_structure, and the shallow-structure
helpers the RNN cell wrappers use. Pure Python; tensors are leaves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def is_nested(structure) -> bool:
    return isinstance(structure, (list, tuple, dict))


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _children(structure) -> list:
    if isinstance(structure, dict):
        return [structure[k] for k in sorted(structure)]
    return list(structure)


def _sequence_like(instance, items: list):
    """A structure of `instance`'s kind holding `items` (in flatten order)."""
    if isinstance(instance, dict):    # values come in sorted-key order; keep the dict's own
        by_key = dict(zip(sorted(instance), items))
        return type(instance)((k, by_key[k]) for k in instance)
    if _is_namedtuple(instance):
        return type(instance)(*items)
    if isinstance(instance, tuple):
        return tuple(items)
    return list(items)


def flatten(structure) -> list:
    """The leaves of `structure`, depth first (a leaf flattens to [leaf])."""
    if not is_nested(structure):
        return [structure]
    out: list = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def _packed(structure, flat: list, index: int):
    if not is_nested(structure):
        return flat[index], index + 1
    items = []
    for child in _children(structure):
        item, index = _packed(child, flat, index)
        items.append(item)
    return _sequence_like(structure, items), index


def pack_sequence_as(structure, flat_sequence):
    """`flat_sequence` arranged as `structure` is."""
    flat_sequence = list(flat_sequence)
    want = len(flatten(structure))
    if want != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {want} elements, but "
                         f"flat_sequence had {len(flat_sequence)} elements.  Structure: "
                         f"{structure}, flat_sequence: {flat_sequence}.")
    packed, _ = _packed(structure, flat_sequence, 0)
    return packed


def assert_same_structure(nest1, nest2, check_types: bool = True) -> None:
    """Raises ValueError (different nesting or lengths) or TypeError (different sequence
    types) as tf.nest does."""
    if is_nested(nest1) != is_nested(nest2):
        raise ValueError(f"The two structures don't have the same nested structure.\n\n"
                         f"First structure: {nest1}\n\nSecond structure: {nest2}.")
    if not is_nested(nest1):
        return
    if check_types and type(nest1) is not type(nest2) and not (
            isinstance(nest1, list) and isinstance(nest2, list)):
        raise TypeError(f"The two structures don't have the same sequence type. Input "
                        f"structure has type {type(nest1)}, while shallow structure has type "
                        f"{type(nest2)}.")
    a, b = _children(nest1), _children(nest2)
    if len(a) != len(b) or (isinstance(nest1, dict) and sorted(nest1) != sorted(nest2)):
        raise ValueError(f"The two structures don't have the same nested structure.\n\n"
                         f"First structure: {nest1}\n\nSecond structure: {nest2}.")
    for x, y in zip(a, b):
        assert_same_structure(x, y, check_types)


def map_structure(fn: Callable, *structures) -> Any:
    """fn applied leaf-wise across structures of one shape."""
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*flats)])


def flatten_up_to(shallow, structure) -> list:
    """`structure` flattened only as deep as `shallow` goes (its deeper parts stay whole)."""
    if not is_nested(shallow):
        return [structure]
    if not is_nested(structure):
        raise TypeError(f"If shallow structure is a sequence, input must also be a sequence. "
                        f"Input has type: {type(structure)}.")
    a, b = _children(shallow), _children(structure)
    if len(a) != len(b):
        raise ValueError(f"The two structures don't have the same sequence length. Input "
                         f"structure has length {len(b)}, while shallow structure has length "
                         f"{len(a)}.")
    out: list = []
    for s, x in zip(a, b):
        out.extend(flatten_up_to(s, x))
    return out


def map_structure_up_to(shallow, fn: Callable, *structures) -> Any:
    flats = [flatten_up_to(shallow, s) for s in structures]
    return pack_sequence_as(shallow, [fn(*leaves) for leaves in zip(*flats)])


def get_traverse_shallow_structure(traverse_fn: Callable, structure):
    """The shallow structure of booleans that `traverse_fn` picks out of `structure`: at each
    level it returns a bool (True descends, False stops) or a structure of bools."""
    to_traverse = traverse_fn(structure)
    if not is_nested(structure):
        if not isinstance(to_traverse, bool):
            raise TypeError(f"traverse_fn returned structure: {to_traverse} for non-structure: "
                            f"{structure}")
        return to_traverse
    if isinstance(to_traverse, bool):
        if not to_traverse:
            return False
        return _sequence_like(structure, [get_traverse_shallow_structure(traverse_fn, child)
                                          for child in _children(structure)])
    if not is_nested(to_traverse):
        raise TypeError(f"traverse_fn returned a non-bool scalar: {to_traverse} for input: "
                        f"{structure}")
    level = []
    for pick, branch in zip(flatten(to_traverse), flatten_up_to(to_traverse, structure)):
        if not isinstance(pick, bool):
            raise TypeError(f"traverse_fn didn't return a depth=1 structure of bools.  saw: "
                            f"{pick}  for structure: {to_traverse}")
        level.append(get_traverse_shallow_structure(traverse_fn, branch) if pick else False)
    return _sequence_like(structure, level)
