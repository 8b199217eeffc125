"""Scalars zoom fetching: a zoom re-reads the zoomed range at full resolution (downsampled to
the same budget, extremes kept, neighbours just outside, smoothing carried from the points
before), reading the range and not the whole tag; each x axis; the zoom in the address and
back; a double click's autorange restores the whole view; hostile relayouts change nothing."""

from __future__ import annotations

import math
import re
import shutil
import sqlite3

import numpy as np
import pytest
from dash.exceptions import PreventUpdate

from engine.record import RunReader, RunWriter
from engine.record.schema import SCALAR_BLOCK_POINTS
from viz.scalars import smooth
from workbench import data
from workbench.pages import scalars, scalars_zoom

T0 = 1_790_000_000.0
POINTS = 40_000
DT = 0.5                       # seconds between points: the run spans 5.6 hours
POINTS_DRAWN = 100             # per curve in the data tests (49 buckets, 98+ blocks a range)
GRAPH = [{"type": scalars.CURVE_GRAPH, "tag": "loss"}]


def _values() -> np.ndarray:
    rng = np.random.default_rng(8)
    values = rng.normal(size=POINTS).cumsum()
    values[[12_345, 15_000, 30_001]] = [400.0, -400.0, 900.0]      # spikes to keep
    values[11_111] = math.nan
    return values


@pytest.fixture(scope="module")
def long_logdir(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("zoom")
    with RunWriter(logdir, "long") as writer:
        for step, value in enumerate(_values().tolist()):
            writer.scalar("loss", value, step, wall_time=T0 + step * DT)
    with RunWriter(logdir, "short") as writer:
        for step in range(50):
            writer.scalar("loss", 1.0 / (step + 1), step, wall_time=T0 + step)
    # The same long run as written before blocks (schema 4): every point is read instead.
    shutil.copytree(logdir / "long", logdir / "rows")
    conn = sqlite3.connect(logdir / "rows" / "run.sqlite")
    with conn:
        conn.execute("DROP TABLE scalar_blocks")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.close()
    return logdir


@pytest.fixture
def logdir(long_logdir):
    data.set_logdir(long_logdir)
    yield long_logdir
    data.set_logdir("runs")


@pytest.fixture
def whole_reads(monkeypatch):
    """The reads of every point of a tag, counted."""
    counted = []
    for name in ("scalar_values", "scalar_series", "scalars"):
        original = getattr(RunReader, name)

        def counting(self, tag, _original=original, _name=name):
            counted.append(_name)
            return _original(self, tag)
        monkeypatch.setattr(RunReader, name, counting)
    return counted


def _inside(curve, low, high) -> np.ndarray:
    return (curve.steps >= low) & (curve.steps <= high)


def _block_spread(values: np.ndarray) -> float:
    blocks = values[: values.size // SCALAR_BLOCK_POINTS * SCALAR_BLOCK_POINTS]
    finite = np.where(np.isfinite(blocks), blocks, np.nan).reshape(-1, SCALAR_BLOCK_POINTS)
    return float(np.nanmax(np.nanmax(finite, axis=1) - np.nanmin(finite, axis=1)))


@pytest.mark.parametrize("run", ["long", "rows"])
@pytest.mark.parametrize("low, high", [(10_000, 20_000), (12_000, 12_400)])
def test_a_zoom_draws_the_range_finer_with_its_extremes(logdir, run, low, high):
    values = _values()
    whole = data.curve(run, "loss", 0.6, POINTS_DRAWN)
    zoomed = data.zoomed_curve(run, "loss", 0.6, POINTS_DRAWN, "step", low, high)
    inside = _inside(zoomed, low, high)
    assert inside.sum() >= POINTS_DRAWN - 4 > 3 * _inside(whole, low, high).sum()
    assert zoomed.steps.size <= POINTS_DRAWN + 2
    # The neighbours just outside, so the line reaches the plot's edges.
    assert (zoomed.steps[0], zoomed.steps[-1]) == (low - 1, high + 1)
    part = values[low:high + 1]
    assert np.nanmax(zoomed.raw[inside]) == np.nanmax(part)
    assert np.nanmin(zoomed.raw[inside]) == np.nanmin(part)
    assert np.array_equal(zoomed.raw, values[zoomed.steps], equal_nan=True)
    assert np.array_equal(zoomed.wall_times, T0 + zoomed.steps * DT)
    # Smoothed as a part of the whole series: exactly from every point (a run without
    # blocks); from the raw points of a short range and the 31 before it, the blocks before
    # those at their means (0.6**31 of their error is left); or, drawn from blocks, within
    # the weight times a block's spread, as the whole view is.
    exact = smooth(values, 0.6)[zoomed.steps]
    tolerance = {"rows": 1e-9, "short": 1e-4, "wide": 0.6 * _block_spread(values)}[
        run if run == "rows" else "wide" if high - low > 5_000 else "short"]
    assert np.nanmax(np.abs(zoomed.smoothed - exact)) <= tolerance
    assert zoomed.series_walls == (T0, T0 + (POINTS - 1) * DT)


def test_a_zoom_on_a_run_store_reads_the_range_not_the_whole_tag(logdir, whole_reads,
                                                                 monkeypatch):
    data.clear_cache()
    data.curve("long", "loss", 0.6, POINTS_DRAWN)       # the whole view: from its blocks
    ranges = []
    original = RunReader.scalar_range

    def counting(self, tag, first, last):
        found = original(self, tag, first, last)
        ranges.append(found[0].size)
        return found
    monkeypatch.setattr(RunReader, "scalar_range", counting)
    wide = data.zoomed_curve("long", "loss", 0.6, POINTS_DRAWN, "step", 2_000, 38_000)
    narrow = data.zoomed_curve("long", "loss", 0.6, POINTS_DRAWN, "step", 20_000, 20_900)
    assert whole_reads == []
    # The wide range from its blocks (rows read: at most a block before it); the narrow
    # one's 903 rows (901 and its neighbours).
    assert max(ranges[:1]) < SCALAR_BLOCK_POINTS and ranges[-1] == 903
    assert wide.steps.size > 90 and narrow.steps.size == POINTS_DRAWN


def test_a_series_drawn_whole_already_comes_back_whole(logdir):
    whole = data.curve("short", "loss", 0.6, POINTS_DRAWN)
    zoomed = data.zoomed_curve("short", "loss", 0.6, POINTS_DRAWN, "step", 10, 20)
    assert zoomed is whole


def test_wall_and_relative_zooms_find_the_same_points(logdir):
    low, high = 10_000, 20_000
    by_step = data.zoomed_curve("long", "loss", 0.6, POINTS_DRAWN, "step", low, high)
    by_wall = data.zoomed_curve("long", "loss", 0.6, POINTS_DRAWN, "wall", T0 + low * DT,
                                T0 + high * DT)
    by_relative = data.zoomed_curve("long", "loss", 0.6, POINTS_DRAWN, "relative", low * DT,
                                    high * DT)
    assert np.array_equal(by_wall.steps, by_relative.steps)
    # A block counts by its walls, so the wall range may reach a block further.
    assert low - SCALAR_BLOCK_POINTS - 1 <= by_wall.steps[0] <= low - 1
    assert high + 1 <= by_wall.steps[-1] <= high + SCALAR_BLOCK_POINTS + 1
    assert _inside(by_wall, low, high).sum() >= 0.9 * _inside(by_step, low, high).sum()
    empty = data.zoomed_curve("long", "loss", 0.6, POINTS_DRAWN, "wall", T0 - 100, T0 - 50)
    assert empty.steps.size == 0 and empty.series_walls == by_wall.series_walls


def _zoom(relayout, x_axis="step", current=None, log_scale=(), tags=("loss",), runs=("long",)):
    return scalars.zoom_curves({"relayout": relayout, "n": 1}, GRAPH, list(runs), list(tags),
                               0.6, x_axis, list(log_scale), None, current)


def _trace_x(figure) -> np.ndarray:
    bold = [trace for trace in figure.data if not trace.name.endswith("(raw)")][0]
    return np.asarray(bold.x)


@pytest.mark.parametrize("log_scale", [(), ("log",)])
def test_the_zoom_callback_redraws_the_range_and_keeps_it(logdir, log_scale):
    whole = scalars.curves(["long"], ["loss"], 0.6, None, "step", list(log_scale))[-1].figure
    (figure,), zoom = _zoom({"xaxis.range[0]": 20_000.5, "xaxis.range[1]": 10_000.25},
                            log_scale=log_scale)
    assert zoom == {"axis": "step", "from": 10_000.25, "to": 20_000.5}    # reversed: sorted
    x = _trace_x(figure)
    inside = (x >= 10_000.25) & (x <= 20_000.5)
    before = ((_trace_x(whole) >= 10_000) & (_trace_x(whole) <= 20_000)).sum()
    assert inside.sum() >= 1190 > 3 * before
    assert (x[0], x[-1]) == (10_000, 20_001)
    assert figure.layout.xaxis.range == (10_000.25, 20_000.5)
    assert figure.layout.xaxis.autorange is False
    assert figure.layout.uirevision == "loss"
    assert figure.layout.yaxis.type == ("log" if log_scale else "linear")
    # A box's value range comes with it and is stated too (a bad one is not).
    (figure,), _ = _zoom({"xaxis.range[0]": 1, "xaxis.range[1]": 9, "yaxis.range[0]": -2,
                          "yaxis.range[1]": 3}, log_scale=log_scale)
    assert figure.layout.yaxis.range == (-2, 3) and figure.layout.yaxis.autorange is False
    (figure,), _ = _zoom({"xaxis.range[0]": 1, "xaxis.range[1]": 9,
                          "yaxis.range": [math.nan, 3]}, log_scale=log_scale)
    assert figure.layout.yaxis.range is None
    # The same zoom again (a relayout plotly repeats) is not fetched again.
    with pytest.raises(PreventUpdate):
        _zoom({"xaxis.range": [10_000.25, 20_000.5]}, current=zoom)


def test_a_double_click_restores_the_whole_view(logdir):
    whole = scalars.curves(["long"], ["loss"], 0.6, None, "step", [])[-1].figure
    current = {"axis": "step", "from": 10_000, "to": 20_000}
    (figure,), zoom = _zoom({"xaxis.autorange": True, "yaxis.autorange": True},
                            current=current)
    assert zoom is None
    assert np.array_equal(_trace_x(figure), _trace_x(whole))
    assert figure.layout.xaxis.autorange is True
    with pytest.raises(PreventUpdate):          # nothing was zoomed: nothing to restore
        _zoom({"xaxis.autorange": True}, current=None)


def test_every_subplot_is_zoomed_together(logdir, tmp_path):
    (figure,), zoom = scalars.zoom_curves(
        {"relayout": {"xaxis.range[0]": 10, "xaxis.range[1]": 20}, "n": 3},
        [{"type": scalars.CURVE_GRAPH, "tag": "loss,other"}],
        ["long"], ["loss", "other"], 0.6, "step", [], None, None)
    assert zoom["from"] == 10 and figure.layout.xaxis.range == (10, 20)
    assert "xaxis2" not in figure.layout.to_plotly_json()     # "other" is not in the run


def test_relative_and_wall_zooms_on_the_page(logdir):
    hours = 3600.0
    (figure,), zoom = _zoom({"xaxis.range[0]": 10_000 * DT / hours,
                             "xaxis.range[1]": 20_000 * DT / hours}, x_axis="relative")
    x = _trace_x(figure)
    assert zoom["axis"] == "relative" and figure.layout.xaxis.title.text == (
        "relative time (hours)")
    # Relative to the run's first point, in the whole view's unit, as before the zoom.
    steps = np.asarray([t for t in figure.data if t.name == "long"][0].customdata)
    assert np.allclose(x, steps * DT / hours)
    assert ((x >= 10_000 * DT / hours) & (x <= 20_000 * DT / hours)).sum() > 1000
    start = np.datetime64(int((T0 + 10_000 * DT) * 1e3), "ms")
    end = np.datetime64(int((T0 + 20_000 * DT) * 1e3), "ms")
    text = [str(start).replace("T", " "), str(end).replace("T", " ")]
    (figure,), zoom = _zoom({"xaxis.range[0]": text[0], "xaxis.range[1]": text[1]},
                            x_axis="wall")
    assert zoom == {"axis": "wall", "from": text[0], "to": text[1]}
    x = np.asarray(_trace_x(figure), dtype="datetime64[ms]")
    assert ((x >= start) & (x <= end)).sum() > 1000


def test_the_zoom_is_in_the_address_and_read_back(logdir):
    link = scalars.view_link(["long"], ["loss"], "step", [], 0.6, None,
                             {"axis": "step", "from": 10_000, "to": 20_000.5})
    assert link == "/scalars?run=long&tag=loss&from=10000&to=20000.5"
    # A zoom made on another axis is not this view's.
    assert scalars.view_link(["long"], ["loss"], "wall", [], 0.6, None,
                             {"axis": "step", "from": 1, "to": 2}) == (
        "/scalars?run=long&tag=loss&x=wall")
    page = scalars.layout(run="long", tag="loss", **{"from": "10000", "to": "20000.5"})
    stores = {c.id: getattr(c, "data", None) for c in _walk(page) if type(c).__name__ == "Store"}
    assert stores[scalars_zoom.ZOOM_STORE] == {"axis": "step", "from": 10_000.0,
                                               "to": 20_000.5}
    graph = next(c for c in _walk(page) if type(c).__name__ == "Graph")
    assert graph.figure.layout.xaxis.range == (10_000.0, 20_000.5)
    assert ((_trace_x(graph.figure) >= 10_000) & (_trace_x(graph.figure) <= 20_000)).sum() > 1000
    wall = scalars.layout(run="long", tag="loss", x="wall",
                          **{"from": "2026-09-21 12:00:00", "to": "2026-09-21 13:00:00"})
    stores = {c.id: getattr(c, "data", None) for c in _walk(wall) if type(c).__name__ == "Store"}
    assert stores[scalars_zoom.ZOOM_STORE]["from"] == "2026-09-21 12:00:00"
    for bad in ({"from": "nope", "to": "5"}, {"from": "nan", "to": "5"},
                {"from": "1e300", "to": "5"}, {"from": "5"}):
        page = scalars.layout(run="long", tag="loss", **bad)     # opens unzoomed
        assert _stores(page)[scalars_zoom.ZOOM_STORE] is None


def _stores(page) -> dict:
    return {c.id: getattr(c, "data", None) for c in _walk(page) if type(c).__name__ == "Store"}


def _walk(component):
    yield component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, (str, int, float)):
            yield from _walk(child)


@pytest.mark.parametrize("relayout", [
    {"xaxis.range[0]": math.nan, "xaxis.range[1]": 5}, {"xaxis.range[0]": "a",
                                                          "xaxis.range[1]": "b"},
    {"xaxis.range[0]": 1e300, "xaxis.range[1]": 5}, {"xaxis.range": [True, 5]},
    {"xaxis.range": "x" * 100_000}, {"xaxis.range[0]": [1], "xaxis.range[1]": {}},
    {"autosize": True}, {"yaxis.range[0]": 1, "yaxis.range[1]": 2}, {"xaxis.range[0]": 5},
    None, 5, "nope", [], {5: 1}])
def test_hostile_relayouts_change_nothing(logdir, relayout):
    with pytest.raises(PreventUpdate):
        _zoom(relayout)


@pytest.mark.parametrize("zoom_ask", [None, 5, "x", [], {"n": 1}, {"relayout": 5, "n": 2},
                                      {"relayout": [{"xaxis.range": [1, 2]}]}])
def test_hostile_zoom_asks_change_nothing(logdir, zoom_ask):
    with pytest.raises(PreventUpdate):
        scalars.zoom_curves(zoom_ask, GRAPH, ["long"], ["loss"], 0.6, "step", [], None, None)


def test_bad_zooms_are_told_by_name():
    told = {
        5: "A zoom must be {axis, from, to}, got 5",
        "x": "A zoom must be {axis, from, to}, got 'x'",
    }
    for zoom, text in told.items():
        with pytest.raises(scalars.inputs.BadInput, match=text.replace("{", r"\{")
                           .replace("}", r"\}")):
            scalars_zoom.checked_zoom(zoom, "step")
    with pytest.raises(scalars.inputs.BadInput, match="axis must be one of step, relative"):
        scalars_zoom.checked_zoom({"axis": "y", "from": 1, "to": 2}, "step")
    with pytest.raises(scalars.inputs.BadInput, match="zoom's from must be a finite number"):
        scalars_zoom.checked_zoom({"axis": "step", "from": math.inf, "to": 2}, "step")
    with pytest.raises(scalars.inputs.BadInput, match="zoom's to must be a number or a date"):
        scalars_zoom.checked_zoom({"axis": "wall", "from": "2026-01-01", "to": "soon"}, "wall")
    assert scalars_zoom.checked_zoom({"axis": "step", "from": 9, "to": 2}, "step") == (2, 9)
    assert scalars_zoom.checked_zoom({"axis": "wall", "from": "2026-01-02",
                                      "to": "2026-01-01 10:00"}, "wall") == (
        "2026-01-01 10:00", "2026-01-02")
    assert scalars_zoom.relayout_zoom({"xaxis2.range[1]": 4, "xaxis2.range[0]": 3}) == (3, 4)
    assert scalars_zoom.relayout_zoom({"xaxis3.autorange": True}) == scalars_zoom.RESET


def test_a_live_refresh_fetches_the_zoom_again(logdir):
    zoom = {"axis": "step", "from": 10_000, "to": 20_000}
    (figure,) = scalars.refresh_curves(GRAPH, ["long"], ["loss"], 0.6, "step", [], None,
                                       {"runs": {}, "changed": ["steps"]}, None, zoom)
    x = _trace_x(figure)
    assert (x[0], x[-1]) == (9_999, 20_001) and figure.layout.xaxis.range == (10_000, 20_000)
    with pytest.raises(PreventUpdate):        # a junk zoom store: the figure stays
        scalars.refresh_curves(GRAPH, ["long"], ["loss"], 0.6, "step", [], None,
                               {"runs": {}, "changed": ["steps"]}, None, "junk")


def test_the_browser_side_names_the_page_s_own_ids():
    """assets/scalars.js writes the zoom-ask store of the Scalars page's plots, and listens to
    the relayout events assets/live.js re-sends: a renamed id on either side breaks the zoom."""
    from workbench.app import ASSETS
    scalars_js = (ASSETS / "scalars.js").read_text()
    assert f'"{scalars_zoom.ZOOM_ASK_STORE}"' in scalars_js
    assert f'"#{scalars.CURVES_DIV}"' in scalars_js
    event = re.search(r'const RELAYOUT_EVENT = "([^"]+)"', (ASSETS / "live.js").read_text())
    assert event and f'const RELAYOUT_EVENT = "{event.group(1)}"' in scalars_js
