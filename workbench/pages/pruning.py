"""Pruning page (`/pruning?run=NAME&stage=N`): a pruned run's per-layer sensitivity curves (a
layer's curve hidden or shown from the checklist), each layer's sparsity at the chosen
prune-retrain stage, accuracy over the schedule with that stage marked, and the compression
figures (stored weight values and bytes, dense versus CSR, and the accuracy change). While the
run is being written, the page follows it (the shared live poll). The run and stage chosen
are kept in the address."""

from __future__ import annotations

import dash
from dash import Input, Output, State, dcc, html

from viz.message import message_figure
from viz.pruning import compression_rows, schedule_figure, sensitivity_figure, sparsity_figure
from workbench import data, inputs
from workbench.pages.common import (
    PROBLEMS,
    address,
    address_stores,
    address_value,
    answers,
    choose_run,
    labelled,
    live_changed,
    live_follow,
    live_ids,
    loading,
    message,
    page_header,
    polled,
    register_address,
    register_live,
    run_choices,
    run_notice,
    run_options,
)

PATH = "/pruning"
NAME = "Pruning"

QUERY_STORE = "pruning-query-store"
STAGE_QUERY_STORE = "pruning-stage-query-store"     # the address's run and stage
RUN_DROPDOWN = "pruning-run-dropdown"
NOTICE_TEXT = "pruning-notice-text"
LAYERS_CHECKLIST = "pruning-layers-checklist"
STAGE_DROPDOWN = "pruning-stage-dropdown"
COMPRESSION_DIV = "pruning-compression-div"
SENSITIVITY_GRAPH = "pruning-sensitivity-graph"
SPARSITY_GRAPH = "pruning-sparsity-graph"
SCHEDULE_GRAPH = "pruning-schedule-graph"
LIVE = live_ids("pruning")
LIVE_PARTS = ("pruning",)
NOTHING = ("No pruning recorded in this run. sample_graphs/prune_digits.py --logdir DIR "
           "records one (engine.compression.pruning.record_pruning).")


def layout(run: str | None = None, stage: str | None = None, **_query) -> html.Div:
    graph_config = {"displaylogo": False, "responsive": True}
    return html.Div([
        page_header("Pruning", "Magnitude pruning: how much each layer can lose, what the "
                               "prune-retrain stages did, and what the sparse model stores."),
        dcc.Store(id=QUERY_STORE, data=address_value(run)),
        dcc.Store(id=STAGE_QUERY_STORE, data={"run": run, "stage": stage}),
        *address_stores("pruning"),
        html.Div(className="controls", children=[
            labelled("Run", dcc.Dropdown(id=RUN_DROPDOWN, clearable=False)),
            labelled("Stage", dcc.Dropdown(id=STAGE_DROPDOWN, clearable=False)),
        ]),
        html.P(id=NOTICE_TEXT, className="message"),
        live_follow("pruning"),
        loading("pruning-compression-loading", html.Div(id=COMPRESSION_DIV)),
        html.Div(className="pruning-grid", children=[
            html.Div(className="pruning-cell", children=[
                dcc.Checklist(id=LAYERS_CHECKLIST, inline=True,
                              className="pruning-layers"),
                loading("pruning-sensitivity-loading",
                        dcc.Graph(id=SENSITIVITY_GRAPH, config=graph_config)),
            ]),
            html.Div(className="pruning-cell", children=[
                loading("pruning-schedule-loading",
                        dcc.Graph(id=SCHEDULE_GRAPH, config=graph_config)),
            ]),
            html.Div(className="pruning-cell", children=[
                loading("pruning-sparsity-loading",
                        dcc.Graph(id=SPARSITY_GRAPH, config=graph_config)),
            ]),
        ]),
    ])


def _has_pruning(name: str) -> bool:
    try:
        return bool(data.prune_stages(name) or data.sensitivity_curves(name))
    except PROBLEMS:
        return False


@answers(lambda problem: ([], None, problem))
def run_choice(requested: str | None) -> tuple[list[dict], str | None, str]:
    """(options, chosen run, notice): the requested run, else the newest run with pruning
    records, else the newest healthy run."""
    names, healthy = run_choices()
    options = run_options(names, frozenset(names) - frozenset(healthy))
    pruned = [name for name in healthy if _has_pruning(name)]
    chosen = choose_run(names, requested, pruned or healthy)
    if not names:
        return options, None, "No runs in the log directory yet."
    return options, chosen, run_notice(requested, chosen)


def _run(run) -> str:
    if run in (None, ""):
        raise inputs.BadInput("choose a run")
    return data.check_name(inputs.text(run, "the run"))


def _news(live_state) -> bool:
    """Whether a poll saw the run's pruning records (or its status) change."""
    return bool(live_changed(live_state) & {"pruning", "status", "runs"})


@answers(lambda problem: ([], [], [], None, message(problem)))
def run_view(run, shown=None, stage=None, layer_options=None, stage_options=None,
             live_state=None, query=None):
    """(layer options, shown layers, stage options, chosen stage, compression figures) of
    the run: every layer shown, the address's stage (`query`: its run and stage) when it
    names this run's, else the last stage chosen. After a poll (`live_state`) the
    user's choice stays: the layers they hid stay hidden (new layers are shown), a stage
    they chose stays chosen, the last stage follows the newest; what did not change is not
    sent again (it would redraw the figures)."""
    name = _run(run)
    if live_state is not None and not _news(live_state):
        return (dash.no_update,) * 5
    curves, stages = data.sensitivity_curves(name), data.prune_stages(name)
    if not curves and not stages:
        return [], [], [], None, message(NOTHING, "pruning-empty-text")
    layers = list(curves) or [layer.layer for layer in stages[-1].layers]
    layer_choices = [{"label": layer, "value": layer} for layer in layers]
    stage_choices = [{"label": f"stage {s.stage} (step {s.step})", "value": s.stage}
                     for s in stages]
    last = stages[-1].stage if stages else None
    table = _compression_table(data.compression(name))
    if live_state is None:
        asked = _asked_stage(name, stages, query)
        return layer_choices, layers, stage_choices, last if asked is None else asked, table
    return _followed(layer_choices, layers, shown, layer_options) + _followed_stage(
        stage_choices, last, stage, stage_options) + (table,)


def _asked_stage(run: str, stages, query) -> int | None:
    """The stage the address asks for, when it names this run (or none) and the run has it."""
    query = query if isinstance(query, dict) else {}
    if address_value(query.get("run")) not in (None, run):
        return None
    try:
        asked = inputs.step_number(address_value(query.get("stage")), "the stage")
    except inputs.BadInput:
        return None
    return asked if asked in {s.stage for s in stages} else None


def _run_view_input(run, shown, stage, layer_options, stage_options, query, live_state):
    return run_view(run, shown, stage, layer_options, stage_options, live_state, query)


@answers(lambda _problem: dash.no_update)
def view_address(run, stage) -> str:
    """The address of the run and stage shown, as the page reads it back."""
    return address(PATH, {"run": data.check_name(run) if run else None,
                          "stage": inputs.step_number(stage, "the stage")})


def _values(options) -> list:
    return [option.get("value") for option in options if isinstance(option, dict)] if (
        isinstance(options, list)) else []


def _followed(choices: list[dict], layers: list[str], shown, before) -> tuple:
    """(layer options, shown layers) after a poll: no_update where unchanged."""
    known = _values(before)
    kept = inputs.text_list(shown, "the layers") if shown is not None else list(known)
    now = [layer for layer in layers if layer in kept or layer not in known]
    return (dash.no_update if known == layers else choices,
            dash.no_update if now == kept else now)


def _followed_stage(choices: list[dict], last, stage, before) -> tuple:
    """(stage options, chosen stage) after a poll: the newest stage when the user was at
    the newest (or at none), else theirs; no_update where unchanged."""
    known = _values(before)
    at_newest = stage is None or not known or stage == known[-1]
    chosen = last if at_newest or stage not in _values(choices) else stage
    return (dash.no_update if known == _values(choices) else choices,
            dash.no_update if chosen == stage else chosen)


def _compression_table(record) -> html.Div:
    if record is None:
        return message("No compression figures recorded in this run.")
    rows = [html.Tr([html.Th(label), html.Td(value)]) for label, value in
            compression_rows(record)]
    return html.Table(html.Tbody(rows), className="pruning-compression")


@answers(lambda problem: message_figure(problem))
def sensitivity(run, shown, live_state=None):
    """The sensitivity curves of the shown layers (all when `shown` is None); a poll that
    saw no new pruning records sends nothing."""
    name = _run(run)
    if live_state is not None and not _news(live_state):
        return dash.no_update
    curves = data.sensitivity_curves(name)
    if not curves:
        return message_figure("No sensitivity analysis recorded in this run.")
    chosen = inputs.text_list(shown, "the layers") if shown is not None else None
    return _revised(sensitivity_figure(curves, chosen), name, "sensitivity")


def _revised(figure, run: str, kind: str):
    """A revision fixed per run and plot: a refresh after a poll keeps the user's zoom."""
    figure.update_layout(uirevision=f"{run}:{kind}")
    return figure


@answers(lambda problem: (message_figure(problem), message_figure(problem)))
def stage_view(run, stage, live_state=None):
    """(sparsity bars at the stage, accuracy over the schedule with the stage marked); a
    poll that saw no new pruning records sends nothing."""
    name = _run(run)
    if live_state is not None and not _news(live_state):
        return dash.no_update, dash.no_update
    stages = data.prune_stages(name)
    if not stages:
        empty = message_figure("No prune-retrain stages recorded in this run.")
        return empty, empty
    number = inputs.step_number(stage, "the stage")
    by_number = {s.stage: s for s in stages}
    if number is not None and number not in by_number:
        raise inputs.BadInput(f"the run has no stage {number}; it has stages "
                              f"{stages[0].stage} to {stages[-1].stage}")
    chosen = by_number[stages[-1].stage if number is None else number]
    layers = list(data.sensitivity_curves(name))
    return (_revised(sparsity_figure(chosen, layers), name, "sparsity"),
            _revised(schedule_figure(stages, chosen.stage), name, "schedule"))


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(LAYERS_CHECKLIST, "options"), Output(LAYERS_CHECKLIST, "value"),
                 Output(STAGE_DROPDOWN, "options"), Output(STAGE_DROPDOWN, "value"),
                 Output(COMPRESSION_DIV, "children"), Input(RUN_DROPDOWN, "value"),
                 State(LAYERS_CHECKLIST, "value"), State(STAGE_DROPDOWN, "value"),
                 State(LAYERS_CHECKLIST, "options"), State(STAGE_DROPDOWN, "options"),
                 State(STAGE_QUERY_STORE, "data"), Input(LIVE["store"], "data"))(
        polled(_run_view_input, LIVE["store"]))
    app.callback(Output(SENSITIVITY_GRAPH, "figure"), Input(RUN_DROPDOWN, "value"),
                 Input(LAYERS_CHECKLIST, "value"), Input(LIVE["store"], "data"))(
        polled(sensitivity, LIVE["store"]))
    app.callback(Output(SPARSITY_GRAPH, "figure"), Output(SCHEDULE_GRAPH, "figure"),
                 Input(RUN_DROPDOWN, "value"), Input(STAGE_DROPDOWN, "value"),
                 Input(LIVE["store"], "data"))(polled(stage_view, LIVE["store"]))
    register_address(app, "pruning", PATH, view_address, Input(RUN_DROPDOWN, "value"),
                     Input(STAGE_DROPDOWN, "value"))
    register_live(app, "pruning", (RUN_DROPDOWN,), LIVE_PARTS)
