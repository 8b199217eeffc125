"""The Histograms page's callbacks as plain functions against a real run store written with
RunWriter.histogram (and a TensorBoard event-file run written by torch's SummaryWriter):
run and tag choice from the address, both histogram modes beside the distribution view,
and hostile inputs answered with a message."""

from __future__ import annotations

import dash
import numpy as np
import pytest
from dash.exceptions import PreventUpdate

from engine.record import RunWriter
from viz.histograms import TB_PERCENTILES, percentiles
from workbench import data
from workbench.pages import histograms as page
from workbench.pages.common import zoom_key

RUN, PLAIN, TORCH = "hist-run", "scalars-only", "tb-hist"
STEPS = 8


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("histogram-logs")
    rng = np.random.default_rng(0)
    with RunWriter(root, RUN) as run:
        for step in range(STEPS):
            run.histogram("layer1/weights", rng.normal(step, 1.0, 1000), step)
            if step % 2 == 0:
                run.histogram("bias", rng.uniform(0, 1, 100), step)
            run.scalar("loss", 1.0 / (step + 1), step)
    with RunWriter(root, PLAIN) as run:
        run.scalar("loss", 1.0, 0)
    return root


@pytest.fixture
def store(logdir):
    data.set_logdir(logdir)
    yield logdir
    data.set_logdir("runs")


def graphs(children) -> list:
    return [child for row in children if hasattr(row, "children")
            and isinstance(row.children, list) for child in row.children
            if type(child).__name__ == "Graph"]


def test_data_reads_histogram_tags_and_records(store):
    assert data.histogram_tags(RUN) == ["bias", "layer1/weights"]
    assert data.histogram_tags(PLAIN) == []
    records = data.histograms(RUN, "layer1/weights")
    assert [r.step for r in records] == list(range(STEPS))
    assert all(r.count == 1000 and sum(r.counts) == 1000 for r in records)


def test_run_choice_prefers_a_run_with_histograms_and_reads_the_address(store):
    options, chosen, notice = page.run_choice({"run": None})
    assert {o["value"] for o in options} == {RUN, PLAIN}
    assert (chosen, notice) == ([RUN], "")
    assert page.run_choice({"run": PLAIN})[1:] == ([PLAIN], "")
    assert page.run_choice({"run": f"{RUN},{PLAIN}"})[1] == [RUN, PLAIN]
    _, chosen, notice = page.run_choice({"run": "nope"})
    assert chosen == [RUN] and "No readable run named 'nope'" in notice


def test_tag_choice_keeps_the_address_tag_else_the_first(store):
    assert page.tag_choice([RUN], None, {"tag": "layer1/weights"}) == (
        ["bias", "layer1/weights"], ["layer1/weights"])
    assert page.tag_choice([RUN], None, {"tag": "missing"})[1] == ["bias"]
    assert page.tag_choice([RUN], ["bias"], None)[1] == ["bias"]
    assert page.tag_choice([PLAIN], None, None) == ([], [])


@pytest.mark.parametrize("mode", ["offset", "overlay"])
def test_figures_draw_the_histogram_mode_beside_the_distribution(store, mode):
    children = page.figures([RUN], ["layer1/weights", "bias"], mode)
    drawn = graphs(children)
    assert [g.id for g in drawn] == [
        page.graph_id(kind, RUN, tag, mode) for tag in ("layer1/weights", "bias")
        for kind in ("histogram", "distribution")]
    assert {g.id["type"] for g in drawn} == {page.GRAPH}
    assert [g.id["mode"] for g in drawn[:2]] == [mode, page.ANY_MODE]
    histogram, distribution = drawn[0].figure, drawn[1].figure
    steps = [f"step {s}" for s in range(STEPS)]
    assert [t.name for t in histogram.data][:STEPS] == steps
    if mode == "offset":
        assert histogram.layout.yaxis.autorange == "reversed"
    else:
        assert histogram.data[-1].marker.showscale
    records = data.histograms(RUN, "layer1/weights")
    np.testing.assert_allclose(distribution.data[-1].y,
                               [percentiles(r, (50,))[0] for r in records])
    np.testing.assert_allclose(distribution.data[-1].y, range(STEPS), atol=0.25)
    assert len(distribution.data) == len(TB_PERCENTILES)


def test_figures_say_what_is_missing(store, text_of):
    assert "Choose at least one run" in text_of(page.figures([RUN], [], "offset"))
    assert "None of the chosen runs recorded" in text_of(page.figures([PLAIN], ["bias"], None))
    text = text_of(page.figures(["gone"], ["bias"], "offset"))
    assert "gone: No run named 'gone' in the log directory." in text


@pytest.mark.parametrize("runs, tags, mode, expected", [
    ([RUN], ["bias"], "stacked", "histogram mode must be one of offset, overlay"),
    ([RUN], ["bias"], 5, "histogram mode must be one of"),
    ({"a": 1}, ["bias"], "offset", "the runs must be a list"),
    ([RUN], "x" * 5000, "offset", "at most 1000"),
    (["../etc"], ["bias"], "offset", "not a run name"),
    ([RUN], [["nested"]], "offset", "the tags must be text"),
])
def test_hostile_inputs_become_a_message(store, text_of, runs, tags, mode, expected):
    assert expected.lower() in text_of(page.figures(runs, tags, mode)).lower()
    options, chosen = page.tag_choice(runs, tags, {"tag": tags})
    assert isinstance(options, list) and set(chosen) <= set(options)


def test_hostile_queries_fall_back_to_a_choice(store):
    for query in (None, 5, {"run": ["x"]}, {"run": "x" * 10_000}, {"run": "a/../b"}):
        options, chosen, _ = page.run_choice(query)
        assert chosen == [RUN] and len(options) == 2


def test_layout_reads_the_mode_from_the_address():
    assert radio(page.layout(mode="overlay")).value == "overlay"
    assert radio(page.layout(mode="bogus")).value == "offset"


def radio(tree):
    """The mode's radio items, wherever the layout puts them."""
    if getattr(tree, "id", None) == page.MODE_RADIO:
        return tree
    children = getattr(tree, "children", None)
    for child in children if isinstance(children, list) else [children]:
        found = radio(child) if child is not None and not isinstance(child, str) else None
        if found is not None:
            return found
    return None


def test_the_view_is_in_the_address_and_read_back(store):
    import urllib.parse
    link = page.view_link([RUN, PLAIN], ["layer1/weights"], "overlay")
    assert link == "/histograms?run=hist-run,scalars-only&tag=layer1/weights&mode=overlay"
    assert page.view_link([RUN], ["bias"], "offset") == "/histograms?run=hist-run&tag=bias"
    assert page.view_link([], [], None) == "/histograms"
    # The address gives back the same view: the runs, the tag, the mode.
    query = {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(link).query
                                                       ).items()}
    assert page.run_choice(query)[1:] == ([RUN, PLAIN], "")
    assert page.tag_choice([RUN, PLAIN], None, query)[1] == ["layer1/weights"]
    assert radio(page.layout(**query)).value == "overlay"


@pytest.mark.parametrize("mode", ["bogus", "OVERLAY", ["overlay"], 5, "x" * 10_000])
def test_a_bad_mode_in_the_address_is_told_on_the_page(store, mode):
    _options, chosen, notice = page.run_choice({"run": RUN, "tag": "bias", "mode": mode})
    assert chosen == [RUN]
    assert "histogram mode" in notice and "not one of offset, overlay; showing offset" in notice
    assert len(notice) < 300
    _options, _chosen, both = page.run_choice({"run": "nope", "mode": "bogus"})
    assert "No readable run named 'nope'" in both and "'bogus' is not one of" in both
    assert page.run_choice({"run": RUN, "mode": "overlay"})[2] == ""
    assert page.view_link([RUN], ["bias"], mode) == "/histograms"


def test_the_view_link_takes_any_value(store, caplog):
    from test_robust_callbacks import call_with_every_hostile_value
    call_with_every_hostile_value(page.view_link, ([RUN], ["bias"], "overlay"))
    assert [r.getMessage() for r in caplog.records if r.levelno >= 40] == []


def test_an_event_file_run_answers_the_same_queries(tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter
    writer = SummaryWriter(str(tmp_path / TORCH))
    for step in range(3):
        writer.add_histogram("weights", np.linspace(-1.0, 1.0, 101) + step, step)
    writer.close()
    data.set_logdir(tmp_path)
    try:
        assert data.histogram_tags(TORCH) == ["weights"]
        assert page.run_choice(None)[1] == [TORCH]
        drawn = graphs(page.figures([TORCH], ["weights"], "overlay"))
        assert len(drawn) == 2
        median = drawn[1].figure.data[-1].y
        np.testing.assert_allclose(median, [0.0, 1.0, 2.0], atol=0.1)
    finally:
        data.set_logdir("runs")


# -- a live refresh: new steps set on the drawn plots, in their mode, with the user's zoom --


def _poll(changed=("steps",)) -> dict:
    return {"runs": {}, "changed": list(changed)}


def test_a_poll_refreshes_each_plot_in_its_mode_with_its_zoom(tmp_path):
    rng = np.random.default_rng(1)
    data.set_logdir(tmp_path)
    try:
        with RunWriter(tmp_path, "live") as run:
            for step in range(3):
                run.histogram("w", rng.normal(step, 1.0, 200), step)
            run.flush()
            drawn = graphs(page.figures(["live"], ["w"], "overlay"))
            ids = [graph.id for graph in drawn]
            revisions = [graph.figure.layout.uirevision for graph in drawn]
            run.histogram("w", rng.normal(3, 1.0, 200), 3)
            run.flush()
            zoom = {"xaxis": [0.5, 2.5], "yaxis": [0, 40]}
            ridges, bands = page.refresh_figures(ids, "overlay", _poll(),
                                                 {zoom_key(ids[0]): zoom})
        # The new step drawn, in overlay (a colour bar, no filled ridge), zoom stated.
        assert [t.name for t in ridges.data][:4] == [f"step {s}" for s in range(4)]
        assert ridges.data[-1].marker.showscale and ridges.data[0].fill is None
        assert list(ridges.layout.xaxis.range) == [0.5, 2.5]
        assert list(ridges.layout.yaxis.range) == [0, 40]
        assert ridges.layout.xaxis.autorange is False
        assert len(bands.data[-1].x) == 4 and bands.layout.xaxis.range is None
        assert [ridges.layout.uirevision, bands.layout.uirevision] == revisions
        # The mode changed since these plots were drawn: the mode's redraw replaces the
        # histogram, and its zoom (taken on another axis) is not carried over.
        stale = page.refresh_figures(ids, "offset", _poll(), {zoom_key(ids[0]): zoom})
        assert stale[0] is dash.no_update and len(stale[1].data[-1].x) == 4
        assert page.graph_id("histogram", "live", "w", "offset") != ids[0]
    finally:
        data.set_logdir("runs")


@pytest.mark.parametrize("ids, live_state", [
    ([page.graph_id("histogram", RUN, "bias", "offset")], None),          # not a poll
    ([page.graph_id("histogram", RUN, "bias", "offset")], _poll(["alerts"])),  # nothing shown
    ([], _poll()), ("junk", _poll()),
])
def test_a_refresh_without_news_sends_nothing(store, ids, live_state):
    with pytest.raises(PreventUpdate):
        page.refresh_figures(ids, "offset", live_state)


def test_a_refresh_answers_hostile_ids_plot_by_plot(store):
    good = page.graph_id("distribution", RUN, "bias", "offset")
    hostile = [5, {"kind": "other"}, {**good, "run": "../x"}, {**good, "tag": "missing"},
               {**good, "mode": "offset"}, good]
    got = page.refresh_figures(hostile, "offset", _poll())
    assert got[:5] == [dash.no_update] * 5 and len(got[5].data) == len(TB_PERCENTILES)
    with pytest.raises(PreventUpdate):      # a bad mode: nothing sent, nothing raised
        page.refresh_figures([good], "stacked", _poll())
