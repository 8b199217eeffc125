"""The Text page's callbacks as plain functions against a real run store written with
RunWriter.text (and a TensorBoard event-file run written by torch's SummaryWriter): runs and
tags chosen from the address (unknown ones named), entries by step newest first, the step
slider and "show all", paging, hostile text drawn as text and a long entry clipped; string
tensors drawn as TensorBoard's text plugin draws them (tables of markdown cells, a higher
rank's 2-D slice under its warning, caps on cells and characters with notes)."""

from __future__ import annotations

import numpy as np
import pytest
from dash import dcc, html

from engine.record import RunWriter
from viz.text import WARNING_TEMPLATE
from workbench import data
from workbench.pages import text as page

RUN, OTHER, PLAIN, TABLES = "text-run", "text-other", "no-text", "text-tables"
TABLE = [["**metric**", "value"], ["loss", "`0.25`"], ["hostile", "<script>x()</script>"]]
NOTE_STEPS = [0, 4, 9]
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> **bold**'


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("text-logs")
    with RunWriter(root, TABLES) as run:
        run.text("table", TABLE, 1)
        run.text("column", ["first", "second"], 1)
        run.text("cube", np.array([[["a", "b"], ["c", "d"]], [["e", "f"], ["g", "h"]]]), 1)
        run.text("tall", [[f"r{r}", "x"] for r in range(page.MAX_CELLS)], 1)
        run.text("wordy", [["y" * (page.MAX_CHARS - 5)], ["z" * 10], ["w"]], 1)
        run.text("empty", np.zeros((0, 3), dtype=str), 1)
    with RunWriter(root, PLAIN) as run:
        run.scalar("loss", 1.0, 0)
    with RunWriter(root, OTHER) as run:
        run.text("notes", "the other run", 2)
    with RunWriter(root, RUN) as run:
        for step in range(10):
            run.scalar("loss", 1.0, step)
            if step in NOTE_STEPS:
                run.text("notes", f"# step {step}\n\nloss is *fine*", step)
        run.text("hostile", HOSTILE, 1)
        run.text("huge", "x" * (1 << 20), 1)
        for step in range(45):
            run.text("long", f"entry {step}", step)
    return root


@pytest.fixture
def texts(logdir):
    data.set_logdir(logdir)
    yield logdir
    data.set_logdir("runs")


def _markdowns(entries) -> list[dcc.Markdown]:
    """Every Markdown drawn, tables' cells included, in page order."""
    found = []

    def walk(node):
        if isinstance(node, dcc.Markdown):
            found.append(node)
            return
        children = node if isinstance(node, list) else getattr(node, "children", None)
        for child in children if isinstance(children, (list, tuple)) else [children]:
            if child is not None and not isinstance(child, str):
                walk(child)
    walk(entries)
    return found


def _tables(entry) -> list[list[list[str]]]:
    """Each table of an entry as rows of its cells' markdown."""
    found = []

    def walk(node):
        if isinstance(node, html.Table):
            (body,) = [node.children] if not isinstance(node.children, list) else node.children
            found.append([[cell.children.children for cell in row.children]
                          for row in body.children])
            return
        children = getattr(node, "children", None)
        for child in children if isinstance(children, (list, tuple)) else [children]:
            if child is not None and not isinstance(child, str):
                walk(child)
    walk(entry)
    return found


def _notes(entry) -> list[str]:
    return [child.children for child in entry.children
            if isinstance(child, html.P) and "text-clipped" in child.className]


def test_the_run_with_text_and_its_first_tag_are_chosen(texts):
    options, chosen, notice = page.run_choice(None)
    assert {option["value"] for option in options} == {RUN, OTHER, PLAIN, TABLES}
    assert chosen == [RUN] and notice == ""          # the newest run that logged text
    tags, picked, told = page.tag_choice(chosen, None, None)
    assert tags == ["hostile", "huge", "long", "notes"] and picked == ["hostile"]
    assert told == ""


def test_the_address_chooses_runs_and_tags_and_names_unknown_ones(texts):
    assert page.run_choice({"run": f"{OTHER},{RUN}"})[1:] == ([OTHER, RUN], "")
    _, chosen, notice = page.run_choice({"run": "nope"})
    assert chosen == [RUN]
    assert notice == f"No readable run named 'nope' in the log directory; showing {RUN}."
    assert page.tag_choice([RUN], None, {"tag": "notes"})[1:] == (["notes"], "")
    _, picked, told = page.tag_choice([RUN], None, {"tag": "missing"})
    assert picked == ["hostile"]
    assert told == "No text tag named 'missing' in the chosen runs; showing hostile."
    # The tags of every chosen run; the current choice stays where it still exists.
    tags, picked, _ = page.tag_choice([RUN, OTHER], ["notes", "gone"], None)
    assert "notes" in tags and picked == ["notes"]


def test_the_slider_stops_at_steps_with_text_and_shows_the_latest(texts):
    low, high, marks, position, notice = page.step_choice([RUN], ["notes"], None)
    assert (low, high, position, notice) == (0, 2, 2, "")
    assert marks == {0: "0", 1: "4", 2: "9"}
    entries, line, newer_off, older_off = page.text_view([RUN], ["notes"], position, [])
    assert line == "Entries 1–1 of 1" and newer_off and older_off
    (markdown,) = _markdowns(entries)
    assert markdown.children == "# step 9\n\nloss is *fine*"
    assert markdown.dangerously_allow_html is False
    assert f"{RUN} · notes · step 9 · " in entries[0].children[0].children
    entries, *_ = page.text_view([RUN], ["notes"], 0, [])
    assert _markdowns(entries)[0].children.startswith("# step 0")
    # A step in the address is shown; one without text is named, the latest shown.
    assert page.step_choice([RUN], ["notes"], {"step": "4"})[3] == 1
    moved = page.step_choice([RUN], ["notes"], {"step": "5"})
    assert moved[3] == 2 and moved[4] == "No text at step 5; showing the latest, step 9."


def test_two_runs_share_the_slider_each_shown_at_its_steps(texts):
    _, high, marks, _, _ = page.step_choice([RUN, OTHER], ["notes"], None)
    assert marks == {0: "0", 1: "2", 2: "4", 3: "9"} and high == 3
    entries, *_ = page.text_view([RUN, OTHER], ["notes"], 1, [])
    assert [markdown.children for markdown in _markdowns(entries)] == ["the other run"]


def test_show_all_lists_every_step_newest_first_and_pages(texts):
    entries, line, _, _ = page.text_view([RUN], ["notes"], None, [page.ALL])
    assert [m.children.split("\n")[0] for m in _markdowns(entries)] == [
        "# step 9", "# step 4", "# step 0"]
    assert line == "Entries 1–3 of 3"
    entries, line, newer_off, older_off = page.text_view([RUN], ["long"], None, [page.ALL], 0)
    assert len(entries) == page.PAGE_ENTRIES and line == "Entries 1–20 of 45"
    assert newer_off and not older_off
    assert page.text_view([RUN], ["long"], None, [page.ALL], 1)[2:] == (False, False)
    assert page.text_view([RUN], ["long"], None, [page.ALL], 2)[2:] == (False, True)
    assert _markdowns(entries)[0].children == "entry 44"
    entries, line, _, _ = page.text_view([RUN], ["long"], None, [page.ALL], 2)
    assert line == "Entries 41–45 of 45" and _markdowns(entries)[-1].children == "entry 0"
    assert page.text_view([RUN], ["long"], None, [page.ALL], 99)[1] == "Entries 41–45 of 45"
    assert page.slider_disabled([page.ALL]) and not page.slider_disabled([])


def test_paging_buttons_turn_pages_and_other_changes_start_again():
    assert page.turned_page(page.OLDER_BUTTON, 0) == 1
    assert page.turned_page(page.OLDER_BUTTON, 3) == 4
    assert page.turned_page(page.NEWER_BUTTON, 3) == 2
    assert page.turned_page(page.NEWER_BUTTON, 0) == 0
    assert page.turned_page(page.RUN_DROPDOWN, 5) == 0
    assert page.turned_page(page.OLDER_BUTTON, "x") == 1


def test_hostile_text_is_drawn_as_text_and_a_huge_entry_is_clipped(texts):
    entries, *_ = page.text_view([RUN], ["hostile"], None, [])
    (markdown,) = _markdowns(entries)
    assert markdown.children == HOSTILE and markdown.dangerously_allow_html is False
    entries, *_ = page.text_view([RUN], ["huge"], None, [])
    (markdown,) = _markdowns(entries)
    assert len(markdown.children) == page.MAX_CHARS
    note = entries[0].children[-1]
    assert note.children == (f"Clipped: showing the first {page.MAX_CHARS:,} of "
                             f"{1 << 20:,} characters.")


def test_the_view_link_keeps_runs_tags_and_the_step_or_all(texts):
    assert page.view_link([RUN], ["notes"], 1, []) == f"/text?run={RUN}&tag=notes&step=4"
    assert page.view_link([RUN, OTHER], ["notes"], None, [page.ALL]) == (
        f"/text?run={RUN},{OTHER}&tag=notes&all=1")
    assert page.view_link(None, None, None, None) == "/text"
    assert page.view_link(["../x"], ["notes"], None, []) == "/text"


def test_runs_without_text_and_hostile_inputs_answer_with_messages(texts, text_of):
    assert page.tag_choice([PLAIN], None, None) == ([], [], "")
    assert page.step_choice([PLAIN], [], None) == (0, 0, {}, None, "")
    assert "Choose at least one run" in text_of(page.text_view([PLAIN], [], None, [])[0])
    assert "None of the chosen runs logged text" in text_of(
        page.text_view([PLAIN], ["notes"], None, [])[0])
    for runs, tags, position, show_all in (
            (["../etc"], ["notes"], None, []), (5, ["notes"], None, []),
            ([RUN], {"a": 1}, None, []), ([RUN], ["notes"], 99, []),
            ([RUN], ["notes"], "x", []), ([RUN], ["notes"], None, 3)):
        entries, line, newer_off, older_off = page.text_view(runs, tags, position, show_all)
        assert line == "" and text_of(entries), (runs, tags, position, show_all)
        assert newer_off and older_off
    assert page.step_choice([RUN], ["notes"], {"step": "-1"})[4].startswith("The step in the")
    assert page.run_choice(["not", "a", "dict"])[1] == [RUN]


def test_an_event_file_run_shows_its_text(tmp_path):
    pytest.importorskip("tensorboard")
    pytest.importorskip("crc32c")
    pytest.importorskip("torch.utils.tensorboard")
    import tensorboard_logdir

    from engine.record.event_files import clear_memo

    clear_memo()
    logs = tensorboard_logdir.write_mixed_logdir(tmp_path / "logs", with_tf=False)
    data.set_logdir(logs.logdir)
    try:
        _, chosen, _ = page.run_choice({"run": logs.torch})
        assert chosen == [logs.torch]
        # torch's add_text writes the tag as TensorBoard's text plugin names it.
        tag = "notes/text_summary"
        assert page.tag_choice(chosen, None, None)[1] == [tag]
        assert page.step_choice(chosen, [tag], None)[:4] == (0, 0, {0: "0"}, 0)
        entries, line, _, _ = page.text_view(chosen, [tag], 0, [])
        # torch writes a string vector of one: TensorBoard draws a one-cell table.
        assert _tables(entries[0]) == [[["written by torch"]]]
        assert line == "Entries 1–1 of 1"
        # With no run in the address, a run that logged text is chosen: the torch one.
        assert page.run_choice(None)[1] == [logs.torch]
    finally:
        data.set_logdir("runs")
        clear_memo()


def test_a_running_run_wakes_the_page_and_the_slider_follows_the_latest(tmp_path):
    from dash import no_update

    from workbench.pages.common import follow

    data.set_logdir(tmp_path)
    try:
        with RunWriter(tmp_path, "live") as run:
            for step in (0, 2):
                run.text("notes", f"note {step}", step)
            run.flush()
            _, off, first = follow(("live",), None, page.LIVE_PARTS)
            assert off is False and first["runs"]["live"]["text_tags"] == ["notes"]
            assert page.step_choice(["live"], ["notes"], None)[1:4:2] == (1, 1)
            tick = {"runs": {}, "changed": ["steps"]}
            assert page.step_choice(["live"], ["notes"], None, 1, 1, tick) == (no_update,) * 5
            run.text("notes", "note 4", 4)
            run.text("more", "a new tag", 4)
            run.flush()
            _, _, second = follow(("live",), first, page.LIVE_PARTS)
            assert second["changed"] == ["steps", "text_tags"]
            at_latest = page.step_choice(["live"], ["notes"], None, 1, 1, tick)
            assert at_latest[1] == 2 and at_latest[3] == 2
            kept = page.step_choice(["live"], ["notes"], None, 0, 1, tick)
            assert kept[1] == 2 and kept[3] is no_update
            assert page.tag_choice(["live"], ["notes"], None, tick) == (
                ["more", "notes"], no_update, no_update)
            entries, *_ = page.text_view(["live"], ["notes"], 2, [])
            assert [m.children for m in _markdowns(entries)] == ["note 4"]
    finally:
        data.set_logdir("runs")


def test_the_layout_takes_show_all_from_the_address():
    def checked(layout) -> list:
        found = []

        def walk(node):
            if getattr(node, "id", None) == page.ALL_CHECK:
                found.append(node.value)
            children = getattr(node, "children", None)
            for child in children if isinstance(children, list) else [children]:
                if child is not None and not isinstance(child, str):
                    walk(child)
        walk(layout)
        return found

    assert checked(page.layout(run="a", all="1")) == [[page.ALL]]
    assert checked(page.layout(run="a")) == [[]]
    assert checked(page.layout(all=["odd"])) == [[]]


def _entry(run: str, tag: str) -> html.Div:
    entries, line, _, _ = page.text_view([run], [tag], None, [])
    assert line == "Entries 1–1 of 1"
    return entries[0]


def test_a_2d_text_tensor_is_a_table_of_markdown_cells(texts):
    entry = _entry(TABLES, "table")
    assert _tables(entry) == [TABLE]
    markdowns = _markdowns(entry)
    assert [m.children for m in markdowns] == [cell for row in TABLE for cell in row]
    assert all(m.dangerously_allow_html is False for m in markdowns)
    assert _notes(entry) == []
    assert _tables(_entry(TABLES, "column")) == [[["first"], ["second"]]]   # one column


def test_a_higher_rank_shows_its_first_2d_slice_under_tensorboards_warning(texts):
    entry = _entry(TABLES, "cube")
    assert _tables(entry) == [[["a", "b"], ["c", "d"]]]
    warning = _markdowns(entry)[0].children
    assert warning == WARNING_TEMPLATE.format(rank=3)
    assert warning == ("**Warning:** This text summary contained data of dimensionality 3, "
                       "but only 2d tables are supported. Showing a 2d slice of the data "
                       "instead.")


def test_large_tables_are_capped_by_cells_and_characters_with_notes(texts):
    tall = _entry(TABLES, "tall")
    (rows,) = _tables(tall)
    assert len(rows) == page.MAX_CELLS // 2 and rows[-1] == [f"r{len(rows) - 1}", "x"]
    assert _notes(tall) == [f"Showing the first {len(rows)} of {page.MAX_CELLS} rows "
                            f"({page.MAX_CELLS} cells at most)."]
    wordy = _entry(TABLES, "wordy")
    (rows,) = _tables(wordy)
    assert rows == [["y" * (page.MAX_CHARS - 5)], ["z" * 5]]      # the cut row, none after
    total = page.MAX_CHARS + 6
    assert _notes(wordy) == [f"Clipped: showing the first {page.MAX_CHARS:,} of {total:,} "
                             "characters."]
    empty = _entry(TABLES, "empty")
    assert _tables(empty) == [] and _notes(empty) == ["An empty text tensor (shape [0, 3])."]


def test_the_demo_records_each_layers_weights_as_a_2d_text_table(tmp_path):
    from workbench.demo import train_mlp

    path, _ = train_mlp(str(tmp_path), "demo", 0.5, steps=2)
    data.set_logdir(tmp_path)
    try:
        (record,) = data.texts("demo", "weights")
        assert record.shape == (4, 4) and record.step == 2
        (rows,) = _tables(_entry("demo", "weights"))
        assert rows[0] == ["**layer**", "**shape**", "**mean abs**", "**max abs**"]
        assert [row[:2] for row in rows[1:]] == [
            ["`layer1/weights`", "64 x 64"], ["`layer2/weights`", "64 x 32"],
            ["`logits/weights`", "32 x 10"]]
    finally:
        data.set_logdir("runs")
