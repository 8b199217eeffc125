"""Text page (`/text?run=A,B&tag=T&step=N` or `&all=1`): TensorBoard's Text dashboard. For
each chosen run and text tag, the entries logged, newest first: at the slider's step, or at
every step ("show all"), a page of at most PAGE_ENTRIES at a time; markdown drawn with raw
HTML shown as text; a string tensor as a table of markdown cells (viz.text: TensorBoard's
layout); long entries and large tables clipped with a note."""

from __future__ import annotations

import time
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from engine.record.schema import TextRecord
from viz.text import text_table
from workbench import data, inputs
from workbench.inputs import clipped, step_number
from workbench.pages.common import (
    PROBLEMS,
    address,
    address_ids,
    address_values,
    answers,
    choose_runs,
    labelled,
    live_follow,
    live_ids,
    loading,
    message,
    page_header,
    polled,
    register_address,
    register_live,
)
from workbench.pages.step_slider import followed_steps, slider_position, step_marks

PATH = "/text"
NAME = "Text"
PAGE_ENTRIES = 20              # entries drawn at once; older ones on the next pages
MAX_CHARS = 100_000            # an entry longer than this is drawn clipped, with a note
MAX_CELLS = 500                # a table's cells drawn at most, the rest named in a note
ALL = "all"

QUERY_STORE = "text-query-store"
ADDRESS_STORE = address_ids("text")["set"]
RUN_DROPDOWN = "text-run-dropdown"
TAG_DROPDOWN = "text-tag-dropdown"
ALL_CHECK = "text-all-checklist"
VIEW_LINK = "text-view-link"
NOTICE_TEXT = "text-notice-text"
TAG_NOTICE_TEXT = "text-tag-notice-text"
STEP_SLIDER = "text-step-slider"
STEP_NOTICE_TEXT = "text-step-notice-text"
PAGE_STORE = "text-page-store"
NEWER_BUTTON = "text-newer-button"
OLDER_BUTTON = "text-older-button"
PAGE_TEXT = "text-page-text"
ENTRIES_DIV = "text-entries-div"
ENTRIES_LOADING = "text-entries-loading"
LIVE = live_ids("text")
LIVE_PARTS = ("steps", "text_tags")


def _shows_all(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", ALL)


def layout(run: str | None = None, tag: str | None = None, step: str | None = None,
           **query) -> html.Div:
    shows_all = _shows_all(query.get(ALL))     # `all=1`: a name not to shadow as a parameter
    return html.Div([
        page_header("Text", "Text logged by summaries (markdown; raw HTML is shown as text; "
                            "a string tensor as a table), newest first: at the slider's "
                            "step, or at every step."),
        dcc.Store(id=QUERY_STORE, data={"run": run, "tag": tag, "step": step}),
        dcc.Store(id=ADDRESS_STORE),
        dcc.Store(id=PAGE_STORE, data=0),
        html.Div(className="controls", children=[
            labelled("Runs", dcc.Dropdown(id=RUN_DROPDOWN, multi=True)),
            labelled("Tags", dcc.Dropdown(id=TAG_DROPDOWN, multi=True)),
            labelled("Steps", dcc.Checklist(
                id=ALL_CHECK, options=[{"label": "Show all", "value": ALL}],
                value=[ALL] if shows_all else [], inline=True)),
            html.Div(className="control", children=[
                html.A("Link to this view", id=VIEW_LINK, href=PATH, className="view-link")]),
        ]),
        html.P(id=NOTICE_TEXT, className="message notice"),
        html.P(id=TAG_NOTICE_TEXT, className="message notice"),
        live_follow("text"),
        html.Div(className="control", style={"maxWidth": "900px"}, children=[
            html.Label("Step"),
            dcc.Slider(id=STEP_SLIDER, min=0, max=0, step=1, marks={}, value=None,
                       included=False, updatemode="mouseup", allow_direct_input=False)]),
        html.P(id=STEP_NOTICE_TEXT, className="message notice"),
        html.Div(className="text-paging", children=[
            html.Button("Newer", id=NEWER_BUTTON, n_clicks=0),
            html.Span(id=PAGE_TEXT, className="muted", style={"margin": "0 8px"}),
            html.Button("Older", id=OLDER_BUTTON, n_clicks=0)]),
        loading(ENTRIES_LOADING, html.Div(id=ENTRIES_DIV)),
    ])


def _query(query: Any) -> dict:
    return query if isinstance(query, dict) else {}


def _text_tags(name: str) -> list[str]:
    try:
        return data.text_tags(name)
    except PROBLEMS:            # the runs' own messages tell what is wrong
        return []


@answers(lambda problem: ([], [], problem))
def run_choice(query: dict | None) -> tuple[list[dict], list[str], str]:
    """Every readable run as an option; the runs the address names (comma-separated), else
    the newest healthy run that logged text, else the newest healthy run; a notice naming
    a run the address asked for that is not there."""
    return choose_runs(_query(query).get("run"), data.text_tags)


def _chosen_runs(runs: Any) -> list[str]:
    return [data.check_name(run) for run in inputs.text_list(runs, "the runs")]


@answers(lambda problem: ([], [], problem))
def tag_choice(runs: Any, current: Any, query: dict | None = None, live: Any = None
               ) -> tuple[list[str], list[str], str]:
    """(the chosen runs' text tags, the tags chosen, a notice): the current choice where it
    still exists, else the address's tags, else the first tag. After a poll (`live`) a
    choice that stays is not sent again."""
    before = inputs.text_list(current, "the tags")
    tags = sorted({tag for run in _chosen_runs(runs) for tag in _text_tags(run)})
    asked = [] if before else address_values(_query(query).get("tag"), tags)
    kept = [tag for tag in (before or asked) if tag in tags]
    if live is not None and kept and kept == before:
        return tags, dash.no_update, dash.no_update
    chosen = kept or tags[:1]
    missing = [tag for tag in asked if tag not in tags]
    notice = ""
    if missing:
        instead = f"; showing {', '.join(chosen)}" if chosen else ""
        notice = f"No text tag named {clipped(missing[0])} in the chosen runs{instead}."
    return tags, chosen, notice


def _pairs(runs: Any, tags: Any) -> list[tuple[str, str]]:
    """The chosen (run, tag) pairs the run logged, runs in the order chosen."""
    tags = inputs.text_list(tags, "the tags")
    pairs = []
    for run in _chosen_runs(runs):
        present = set(data.text_tags(run))
        pairs += [(run, tag) for tag in tags if tag in present]
    return pairs


def text_steps(runs: Any, tags: Any) -> list[int]:
    """The steps with a text entry in any chosen (run, tag), ascending: the slider's stops."""
    return sorted({record.step for run, tag in _pairs(runs, tags)
                   for record in data.texts(run, tag)})


_NO_STEPS = (0, 0, {}, None)


@answers(lambda problem: (*_NO_STEPS, problem))
def step_choice(runs: Any, tags: Any, query: dict | None, position: Any = None,
                last: Any = None, live: Any = None) -> tuple:
    """(slider min, max, marks, position, a notice), as the Images page's slider: one
    position per step with text; the address's step when one has it, else the latest; a
    poll adds new steps and follows the newest when the latest was shown."""
    unique = text_steps(runs, tags)
    if not unique:
        return (*_NO_STEPS, "")
    if live is not None:
        return followed_steps(unique, position, last)
    requested = step_number(_query(query).get("step"), "the step in the address")
    chosen, notice = unique[-1], ""
    if requested is not None and requested != chosen:
        if requested in unique:
            chosen = requested
        else:
            notice = f"No text at step {requested}; showing the latest, step {chosen}."
    return 0, len(unique) - 1, step_marks(unique), unique.index(chosen), notice


def slider_disabled(show_all: Any) -> bool:
    return ALL in inputs.text_list(show_all, "show all")


def turned_page(triggered: Any, page: Any) -> int:
    """The page after a click on Newer or Older (page 0 is the newest); any other change
    (runs, tags, step, show all) starts again at 0. The view clips a page past the last."""
    page = page if isinstance(page, int) and not isinstance(page, bool) and page >= 0 else 0
    if triggered == OLDER_BUTTON:
        return page + 1
    if triggered == NEWER_BUTTON:
        return max(0, page - 1)
    return 0


def _turned(_newer, _older, _runs, _tags, _position, _show_all, page) -> int:
    return turned_page(dash.ctx.triggered_id, page)


def clip(text: str, limit: int = MAX_CHARS) -> tuple[str, str]:
    """(the text drawn, a note when it was clipped, else "")."""
    if len(text) <= limit:
        return text, ""
    return text[:limit], (f"Clipped: showing the first {limit:,} of {len(text):,} "
                          f"characters.")


def _when(record: TextRecord) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.wall_time))


def _markdown(text: str) -> dcc.Markdown:
    # dash's Markdown is told not to draw raw HTML (as TensorBoard sanitises it), so a
    # <script> in a summary is text.
    return dcc.Markdown(text, dangerously_allow_html=False, className="text-markdown")


def _notes(notes: list[str] | tuple[str, ...]) -> list[html.P]:
    return [html.P(note, className="message notice text-clipped") for note in notes]


def _table(record: TextRecord) -> list:
    """A string tensor as TensorBoard draws it: a table of markdown cells, a higher rank's
    2-D slice under its warning."""
    table = text_table(record, MAX_CELLS, MAX_CHARS)
    body = html.Tbody([html.Tr([html.Td(_markdown(cell)) for cell in row])
                       for row in table.rows])
    return [*([_markdown(table.warning)] if table.warning else []),
            *([html.Div(html.Table(body, className="text-table"), className="text-table-wrap")]
              if table.rows else []),
            *_notes(table.notes)]


def entry(run: str, record: TextRecord) -> html.Div:
    """One entry: its step and time, then its text as markdown, or its string tensor as a
    table of markdown cells."""
    if record.shape:
        shown = _table(record)
    else:
        text, note = clip(record.text)
        shown = [_markdown(text), *_notes([note] if note else [])]
    return html.Div(className="text-entry", children=[
        html.Div(f"{run} · {record.tag} · step {record.step} · {_when(record)}",
                 className="muted text-entry-head"), *shown])


def _newest_first(records: list[TextRecord]) -> list[TextRecord]:
    return sorted(records, key=lambda record: (record.step, record.wall_time), reverse=True)


def _page_of(count: int, page: Any) -> int:
    pages = max(1, -(-count // PAGE_ENTRIES))
    page = page if isinstance(page, int) and not isinstance(page, bool) else 0
    return min(max(page, 0), pages - 1)


def _listed(problem: str) -> tuple:
    return [message(problem)], "", True, True


@answers(_listed)
def text_view(runs: Any, tags: Any, position: Any, show_all: Any, page: Any = 0) -> tuple:
    """(the entries drawn, the paging line, whether Newer and Older are off): each chosen
    (run, tag)'s entries at the slider's step (the latest when none is chosen), or at every
    step with "show all", newest first, PAGE_ENTRIES at a time from `page` (0 the newest)."""
    if not inputs.text_list(runs, "the runs") or not inputs.text_list(tags, "the tags"):
        return _listed("Choose at least one run and one text tag.")
    pairs = _pairs(runs, tags)
    found = [(run, record) for run, tag in pairs for record in data.texts(run, tag)]
    if not found:
        return _listed("None of the chosen runs logged text under the chosen tags.")
    if not slider_disabled(show_all):
        steps = sorted({record.step for _, record in found})
        chosen = slider_position(position, len(steps))
        step = steps[-1 if chosen is None else chosen]
        found = [(run, record) for run, record in found if record.step == step]
    ordered = [(run, record) for run, tag in pairs
               for record in _newest_first([r for name, r in found
                                            if name == run and r.tag == tag])]
    page = _page_of(len(ordered), page)
    start = page * PAGE_ENTRIES
    shown = ordered[start:start + PAGE_ENTRIES]
    line = f"Entries {start + 1}–{start + len(shown)} of {len(ordered)}"
    older = start + len(shown) < len(ordered)
    return [entry(run, record) for run, record in shown], line, page == 0, not older


@answers(lambda _problem: PATH)
def view_link(runs: Any, tags: Any, position: Any, show_all: Any) -> str:
    """The address of this view (runs, tags, and the step shown or all=1)."""
    query = {"run": _chosen_runs(runs), "tag": inputs.text_list(tags, "the tags")}
    if slider_disabled(show_all):
        query["all"] = "1"
    else:
        steps = text_steps(runs, tags)
        chosen = slider_position(position, len(steps)) if steps else None
        if chosen is not None:
            query["step"] = str(steps[chosen])
    return address(PATH, query)


@answers(lambda _problem: True)
def checked_slider_disabled(show_all: Any) -> bool:
    return slider_disabled(show_all)


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(TAG_DROPDOWN, "options"), Output(TAG_DROPDOWN, "value"),
                 Output(TAG_NOTICE_TEXT, "children"), Input(RUN_DROPDOWN, "value"),
                 State(TAG_DROPDOWN, "value"), State(QUERY_STORE, "data"),
                 Input(LIVE["store"], "data"))(polled(tag_choice, LIVE["store"]))
    app.callback(Output(STEP_SLIDER, "min"), Output(STEP_SLIDER, "max"),
                 Output(STEP_SLIDER, "marks"), Output(STEP_SLIDER, "value"),
                 Output(STEP_NOTICE_TEXT, "children"), Input(RUN_DROPDOWN, "value"),
                 Input(TAG_DROPDOWN, "value"), State(QUERY_STORE, "data"),
                 State(STEP_SLIDER, "value"), State(STEP_SLIDER, "max"),
                 Input(LIVE["store"], "data"))(polled(step_choice, LIVE["store"]))
    app.callback(Output(STEP_SLIDER, "disabled"), Input(ALL_CHECK, "value"))(
        checked_slider_disabled)
    app.callback(Output(PAGE_STORE, "data"), Input(NEWER_BUTTON, "n_clicks"),
                 Input(OLDER_BUTTON, "n_clicks"), Input(RUN_DROPDOWN, "value"),
                 Input(TAG_DROPDOWN, "value"), Input(STEP_SLIDER, "value"),
                 Input(ALL_CHECK, "value"), State(PAGE_STORE, "data"))(_turned)
    app.callback(Output(ENTRIES_DIV, "children"), Output(PAGE_TEXT, "children"),
                 Output(NEWER_BUTTON, "disabled"), Output(OLDER_BUTTON, "disabled"),
                 Input(RUN_DROPDOWN, "value"), Input(TAG_DROPDOWN, "value"),
                 Input(STEP_SLIDER, "value"), Input(ALL_CHECK, "value"),
                 Input(PAGE_STORE, "data"), Input(LIVE["store"], "data"))(
        lambda runs, tags, position, show_all, page, _live: text_view(
            runs, tags, position, show_all, page))
    register_address(app, "text", PATH, view_link, Input(RUN_DROPDOWN, "value"),
                     Input(TAG_DROPDOWN, "value"), Input(STEP_SLIDER, "value"),
                     Input(ALL_CHECK, "value"), link=VIEW_LINK)
    register_live(app, "text", (RUN_DROPDOWN,), LIVE_PARTS)
