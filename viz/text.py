"""A text summary's string tensor laid out as TensorBoard's text plugin lays it out
(tensorboard/plugins/text/text_plugin.py: text_array_to_html, make_table, reduce_to_2d): a
1-D tensor is one column, a 2-D one a table of cells (each cell markdown), a higher rank its
first 2-D slice [0, ..., 0, :, :] under TensorBoard's warning; with caps on cells and
characters, and notes saying what they left out."""

from __future__ import annotations

from dataclasses import dataclass

from engine.record.schema import TextRecord

# TensorBoard's WARNING_TEMPLATE word for word (markdown; its three spaces after "only", left
# by a line continuation, drawn as one).
WARNING_TEMPLATE = ("**Warning:** This text summary contained data of dimensionality {rank}, "
                    "but only 2d tables are supported. Showing a 2d slice of the data "
                    "instead.")


@dataclass(frozen=True)
class TextTable:
    rows: tuple[tuple[str, ...], ...]   # the cells drawn, row by row, clipped to the caps
    warning: str                        # TensorBoard's warning for a rank above 2, else ""
    notes: tuple[str, ...]              # what the caps left out; an empty tensor says so


def reduce_to_2d(cells: tuple[str, ...], shape: tuple[int, ...]
                 ) -> tuple[tuple[str, ...], int, int]:
    """(cells, rows, columns) of the table TensorBoard draws: a vector as one column, a
    matrix as itself, a higher rank as its slice [0, ..., 0, :, :], which in row-major order
    is the first rows x columns cells."""
    if len(shape) == 1:
        return cells, shape[0], 1
    rows, columns = shape[-2], shape[-1]
    return cells[:rows * columns], rows, columns


def text_table(record: TextRecord, max_cells: int, max_chars: int) -> TextTable:
    """The table of a record whose shape has rank 1 or more: at most max_cells cells (whole
    rows while a row fits, else the first max_cells columns of the first row) and max_chars
    characters over all of them (the cell that crosses the limit is cut there; later rows
    are left out)."""
    rank = len(record.shape)
    warning = WARNING_TEMPLATE.format(rank=rank) if rank > 2 else ""
    cells, rows, columns = reduce_to_2d(record.cells, record.shape)
    if not record.cells:
        return TextTable((), warning, (f"An empty text tensor (shape {list(record.shape)}).",))
    shown_columns = min(columns, max_cells)
    shown_rows = min(rows, max(1, max_cells // columns))
    notes = []
    if (shown_rows, shown_columns) != (rows, columns):
        part = f"the first {shown_rows:,} of {rows:,} rows"
        if shown_columns < columns:
            part += f" and {shown_columns:,} of {columns:,} columns"
        notes.append(f"Showing {part} ({max_cells:,} cells at most).")
    grid = [cells[r * columns:r * columns + shown_columns] for r in range(shown_rows)]
    drawn, total = _clipped_rows(grid, max_chars)
    if total > max_chars:
        notes.append(f"Clipped: showing the first {max_chars:,} of {total:,} characters.")
    return TextTable(drawn, warning, tuple(notes))


def _clipped_rows(grid: list[tuple[str, ...]], max_chars: int
                  ) -> tuple[tuple[tuple[str, ...], ...], int]:
    """(the rows with at most max_chars characters in all, the characters there were)."""
    total = sum(len(cell) for row in grid for cell in row)
    if total <= max_chars:
        return tuple(grid), total
    left, drawn = max_chars, []
    for row in grid:
        if left <= 0:
            break
        kept = []
        for cell in row:
            kept.append(cell[:max(left, 0)])
            left -= len(cell)
        drawn.append(tuple(kept))
    return tuple(drawn), total
