"""The Graph page's search regex, bounded before it runs: Python's `re` backtracks, so a
pattern like `(a+)+$` takes exponential time on a long name. re2 is not at hand, so the
shapes that explode are refused with a message saying why, and each name is matched over
its first MAX_SUBJECT characters only."""

from __future__ import annotations

import re
from re import _constants as sre
from re import _parser as sre_parse

MAX_PATTERN = 200              # characters in a search
MAX_SUBJECT = 256              # characters of each node name the search reads
# Unbounded repeats of a class (`.*`, `\w+`, `[^/]*`): k of them over a name that they all
# match take time like its length to the k+1 (3 on 400 characters: seconds a name).
MAX_WIDE_REPEATS = 2
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_WIDE = (sre.ANY, sre.IN, sre.NOT_LITERAL, sre.CATEGORY)
_GROUPS = (sre.SUBPATTERN, sre.ATOMIC_GROUP, sre.ASSERT, sre.ASSERT_NOT)


class UnsafePattern(ValueError):
    """A search the page will not run: it could take minutes on the graph's names."""


def compile_search(pattern: str) -> re.Pattern:
    """`pattern` compiled, once it is known to run in bounded time: re.error when it is no
    regular expression, UnsafePattern when it is too long, repeats a repeat (`(a+)+`,
    `(a*)*`), repeats alternatives that can match the same text (`(a|a)*`, `(a|ab)*`), or
    has more than MAX_WIDE_REPEATS unbounded repeats of a class."""
    if len(pattern) > MAX_PATTERN:
        raise UnsafePattern(f"the search is {len(pattern)} characters long (at most "
                            f"{MAX_PATTERN})")
    compiled = re.compile(pattern)
    parsed = sre_parse.parse(pattern)
    _check(parsed, inside_repeat=False)
    wide = _wide_repeats(parsed)
    if wide > MAX_WIDE_REPEATS:
        raise UnsafePattern(f"the search has {wide} open-ended repeats like .* or \\w+ (at "
                            f"most {MAX_WIDE_REPEATS}): it could take minutes on long names")
    return compiled


def _check(items, inside_repeat: bool) -> None:
    for op, arg in items:
        if op in _REPEATS:
            _low, high, body = arg
            if inside_repeat and high > 1:
                raise UnsafePattern("the search repeats a repeat, as (a+)+ does: it could "
                                    "take minutes on long names; drop the inner + or *")
            _check(body, inside_repeat or high > 1)
        elif op == sre.BRANCH:
            if inside_repeat and not _distinct_starts(arg[1]):
                raise UnsafePattern("the search repeats alternatives that can match the same "
                                    "text, as (a|ab)* does: it could take minutes on long "
                                    "names")
            for branch in arg[1]:
                _check(branch, inside_repeat)
        elif op in _GROUPS:
            _check(_group_body(op, arg), inside_repeat)


def _group_body(op, arg):
    """What a group holds: an atomic group's argument is its body, the others' is a tuple
    ending with it."""
    return arg if op == sre.ATOMIC_GROUP else arg[-1]


def _distinct_starts(branches) -> bool:
    """Whether every alternative starts with its own literal character (then at most one can
    match at a place, and a repeat of them does not backtrack among them)."""
    starts = []
    for branch in branches:
        items = list(branch)
        if not items or items[0][0] != sre.LITERAL:
            return False
        starts.append(items[0][1])
    return len(set(starts)) == len(starts)


def _wide_repeats(items) -> int:
    count = 0
    for op, arg in items:
        if op in _REPEATS:
            _low, high, body = arg
            body = list(body)
            if high == sre.MAXREPEAT and len(body) == 1 and body[0][0] in _WIDE:
                count += 1
            count += _wide_repeats(body)
        elif op == sre.BRANCH:
            count += max((_wide_repeats(branch) for branch in arg[1]), default=0)
        elif op in _GROUPS:
            count += _wide_repeats(_group_body(op, arg))
    return count
