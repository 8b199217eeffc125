"""viz.search_pattern: the Graph page's search refuses the regex shapes that backtrack
for minutes in Python's `re` (a repeated repeat, repeated overlapping alternatives, more
than two open-ended class repeats, a pattern past 200 characters) with a message saying
why, and reads only a name's first 256 characters; ordinary searches run as before."""

from __future__ import annotations

import re

import pytest
from viz_records import make_node

from engine.record.schema import GraphRecord
from viz.hierarchy import build_hierarchy, search
from viz.search_pattern import (
    MAX_PATTERN,
    MAX_SUBJECT,
    MAX_WIDE_REPEATS,
    UnsafePattern,
    compile_search,
)

LONG = "a" * 5000                   # (a+)+$ on this would backtrack about 2**5000 times


@pytest.mark.parametrize("pattern, told", [
    ("(a+)+$", "repeats a repeat"), ("(a*)*", "repeats a repeat"),
    ("(?:a{2,})+b", "repeats a repeat"), ("((a+)x)*", "repeats a repeat"),
    ("(a|a)*$", "repeats alternatives"), ("(a|ab)*c", "repeats alternatives"),
    ("(.|x)+$", "repeats alternatives"),
    (".*.*.*x", f"3 open-ended repeats like .* or \\w+ (at most {MAX_WIDE_REPEATS})"),
    ("x" * (MAX_PATTERN + 1), f"201 characters long (at most {MAX_PATTERN})")])
def test_patterns_that_could_run_for_minutes_are_refused_saying_why(pattern, told):
    with pytest.raises(UnsafePattern, match=re.escape(told)):
        compile_search(pattern)


@pytest.mark.parametrize("pattern", [
    r"layer1/.*MatMul", r"\w+/\w+$", r"_grad/MatMul_1$", "(ab|cd)*x", "a+b+c+",
    r"^gradients/(layer1|layer2)/", "x{2,5}", "(ab?)+"])
def test_ordinary_searches_compile(pattern):
    assert compile_search(pattern).pattern == pattern


def test_no_regex_is_re_error():
    with pytest.raises(re.error):
        compile_search("(")


def test_a_long_name_is_searched_over_its_first_characters():
    graph = GraphRecord(1, (make_node(LONG + "/end", "Const"), make_node("b/end", "Const")))
    tree = build_hierarchy(graph)
    with pytest.raises(UnsafePattern):
        search(tree, "(a+)+$")
    assert search(tree, "end$") == ["b/end"]             # past the first 256 of the long one
    assert search(tree, f"a{{{MAX_SUBJECT}}}") == [LONG + "/end"]
    assert search(tree, f"a{{{MAX_SUBJECT + 1}}}") == []
