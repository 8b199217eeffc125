"""viz.text lays out a string tensor as TensorBoard's text plugin does (its own
reduce_to_2d, make_table and WARNING_TEMPLATE, from the installed tensorboard, are the
reference): a vector is one column, a matrix a table, a higher rank its first 2-D slice under
the warning; the caps keep whole rows, or the first columns of a row wider than the cap, and
cut the characters where they run out."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from engine.record.schema import TextRecord
from viz.text import WARNING_TEMPLATE, reduce_to_2d, text_table


def _record(array: np.ndarray) -> TextRecord:
    return TextRecord("t", 0, 0.0, tuple(array.reshape(-1).tolist()),
                      tuple(array.shape))


def _tensorboard_rows(array: np.ndarray) -> list[list[str]]:
    """The cells of the table TensorBoard's make_table builds, row by row."""
    text_plugin = pytest.importorskip("tensorboard.plugins.text.text_plugin")
    shown = text_plugin.reduce_to_2d(array) if array.ndim > 2 else array
    html = text_plugin.make_table(shown)
    return [re.findall(r"<td>(.*?)</td>", row, re.S)
            for row in re.findall(r"<tr>(.*?)</tr>", html, re.S)]


@pytest.mark.parametrize("shape", [(3,), (1,), (2, 3), (1, 4), (2, 1, 3), (2, 3, 2, 2)])
def test_the_layout_is_tensorboards(shape):
    count = int(np.prod(shape))
    array = np.array([f"c{i}" for i in range(count)]).reshape(shape)
    table = text_table(_record(array), max_cells=1000, max_chars=10_000)
    assert [list(row) for row in table.rows] == _tensorboard_rows(array)
    assert table.notes == ()
    expected = WARNING_TEMPLATE.format(rank=len(shape)) if len(shape) > 2 else ""
    assert table.warning == expected


def test_the_warning_is_tensorboards_word_for_word():
    text_plugin = pytest.importorskip("tensorboard.plugins.text.text_plugin")
    theirs = text_plugin.WARNING_TEMPLATE % 4
    assert WARNING_TEMPLATE.format(rank=4) == " ".join(theirs.split())   # markdown: spaces


def test_reduce_to_2d_is_the_zeroth_slice_in_row_major_order():
    array = np.arange(2 * 3 * 4).reshape(2, 3, 4).astype(str)
    cells, rows, columns = reduce_to_2d(tuple(array.reshape(-1).tolist()), array.shape)
    assert (rows, columns) == (3, 4)
    assert np.array(cells).reshape(rows, columns).tolist() == array[0].tolist()
    assert reduce_to_2d(("a", "b"), (2,)) == (("a", "b"), 2, 1)


def test_the_cell_cap_keeps_whole_rows_or_the_first_columns():
    tall = _record(np.array([[f"{r},{c}" for c in range(3)] for r in range(10)]))
    table = text_table(tall, max_cells=7, max_chars=10_000)
    assert [row[0] for row in table.rows] == ["0,0", "1,0"]
    assert table.notes == ("Showing the first 2 of 10 rows (7 cells at most).",)
    wide = _record(np.array([[f"w{c}" for c in range(12)] for _ in range(2)]))
    table = text_table(wide, max_cells=5, max_chars=10_000)
    assert table.rows == (("w0", "w1", "w2", "w3", "w4"),)
    assert table.notes == ("Showing the first 1 of 2 rows and 5 of 12 columns "
                           "(5 cells at most).",)


def test_the_character_cap_cuts_the_cell_that_crosses_it_and_drops_later_rows():
    cells = np.array([["aaaa", "bbbb"], ["cccc", "dddd"], ["eeee", "ffff"]])
    table = text_table(_record(cells), max_cells=100, max_chars=10)
    assert table.rows == (("aaaa", "bbbb"), ("cc", ""))
    assert table.notes == ("Clipped: showing the first 10 of 24 characters.",)
    exact = text_table(_record(cells), max_cells=100, max_chars=24)
    assert exact.rows == tuple(map(tuple, cells.tolist())) and exact.notes == ()


def test_both_caps_name_what_they_left_out_and_empty_tensors_say_so():
    cells = np.array([["x" * 6] * 2] * 4)
    table = text_table(_record(cells), max_cells=4, max_chars=15)
    assert table.notes == ("Showing the first 2 of 4 rows (4 cells at most).",
                           "Clipped: showing the first 15 of 24 characters.")
    for shape in ((0,), (2, 0), (0, 2, 2)):
        empty = text_table(TextRecord("t", 0, 0.0, (), shape), 10, 10)
        assert empty.rows == () and empty.notes == (f"An empty text tensor (shape "
                                                    f"{list(shape)}).",)
    assert list(itertools.chain.from_iterable(table.rows)) == ["x" * 6, "x" * 6, "xxx", ""]
