"""The Runs page draws PAGE_ROWS runs at a time: which rows each page holds, the previous
and next buttons (never before the first page or past the last), the pager hidden while
one page holds every run, and bad page numbers from the browser answered with a message."""

from __future__ import annotations

import pytest

from engine.record import RunWriter
from workbench import data
from workbench.pages import runs


@pytest.fixture
def many(tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "PAGE_ROWS", 4)
    for k in range(10):
        with RunWriter(tmp_path, f"run-{k:02d}") as writer:
            writer.scalar("loss", float(k), 0)
    data.set_logdir(tmp_path)
    yield tmp_path
    data.set_logdir("runs")


def _names(table) -> list[str]:
    body = table.children[1]
    return [row.children[0].children for row in body.children]


def test_each_page_holds_its_rows_in_name_order(many):
    assert _names(runs.runs_table(None, 0)) == ["run-00", "run-01", "run-02", "run-03"]
    assert runs.pager(None, 0) == ("Runs 1–4 of 10", runs.SHOWN)
    assert _names(runs.runs_table(None, 2)) == ["run-08", "run-09"]
    assert runs.pager(None, 2) == ("Runs 9–10 of 10", runs.SHOWN)
    # Past the end (the runs shrank since the page was chosen): the last page.
    assert _names(runs.runs_table(None, 7)) == ["run-08", "run-09"]
    assert runs.pager(None, 7)[0] == "Runs 9–10 of 10"


def test_the_buttons_stop_at_the_first_and_last_page(many):
    previous, following = runs.PREVIOUS_BUTTON, runs.NEXT_BUTTON
    assert runs.turned_page(previous, 0) == 0
    assert runs.turned_page(previous, 2) == 1
    assert runs.turned_page(following, 1) == 2
    assert runs.turned_page(following, 2) == 2
    assert runs.turned_page(following, None) == 1
    assert runs.turned_page(None, 2) == 2


def test_one_page_of_runs_hides_the_pager(many, monkeypatch):
    monkeypatch.setattr(runs, "PAGE_ROWS", 50)
    assert len(_names(runs.runs_table(None, 0))) == 10
    assert runs.pager(None, 0) == ("", runs.HIDDEN)


@pytest.mark.parametrize("page", [-1, "x", 2.5, [1], True])
def test_a_bad_page_number_is_a_message(many, page, text_of):
    assert "The page must be a step number" in text_of(runs.runs_table(None, page))
    assert runs.pager(None, page) == ("", runs.HIDDEN)
    assert runs.turned_page(runs.NEXT_BUTTON, page) == 0


def _by_id(component, ident):
    """The component with `ident` inside `component` (None when there is none)."""
    if getattr(component, "id", None) == ident:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        if hasattr(child, "to_plotly_json") and (found := _by_id(child, ident)) is not None:
            return found
    return None


@pytest.mark.parametrize("page, first, shows", [(None, "run-00", "Runs 1–4 of 10"),
                                                ("3", "run-08", "Runs 9–10 of 10")])
def test_the_layout_holds_the_first_table_and_pager(many, page, first, shows):
    """The page's first rows come with its layout (no callback round trip before they draw):
    the page the address names, its pager shown."""
    page_layout = runs.layout(page=page)
    table = _by_id(page_layout, runs.TABLE_DIV).children
    assert _names(table)[0] == first
    assert _by_id(page_layout, runs.PAGE_TEXT).children == shows
    assert _by_id(page_layout, runs.PAGER_DIV).style == runs.SHOWN


def test_the_layout_of_an_empty_logdir_says_so(tmp_path):
    data.set_logdir(tmp_path)
    try:
        page_layout = runs.layout()
    finally:
        data.set_logdir("runs")
    assert _by_id(page_layout, runs.TABLE_DIV).children.id == runs.EMPTY_TEXT
    assert _by_id(page_layout, runs.PAGER_DIV).style == runs.HIDDEN
