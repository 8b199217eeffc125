"""data.curve's read path: every value from the index and the steps and wall times of the
kept rows only, giving exactly the curve scalar_curve draws from the whole series at each
subplot size; every value read once per run state (counted), again after the run changed;
one read at a time, a page's ahead of the warming's."""

from __future__ import annotations

import contextlib
import math
import threading
import time

import numpy as np
import pytest

from engine.record import RunReader, RunWriter
from viz.scalars import MAX_POINTS, scalar_curve, subplot_points
from workbench import data

T0 = 1_790_000_000.0
DEADLINE_S = 60


@pytest.fixture
def long_run(tmp_path):
    rng = np.random.default_rng(5)
    values = rng.normal(size=6000).cumsum()
    values[[10, 4000]] = [math.nan, math.inf]
    with RunWriter(tmp_path, "long") as writer:
        for step, value in enumerate(values):
            writer.scalar("loss", float(value), step * 3, wall_time=T0 + step * 0.5)
    data.set_logdir(tmp_path)
    yield tmp_path
    data.set_logdir("runs")


@pytest.fixture
def reads(monkeypatch):
    counted = {"values": 0, "points": 0}
    for name, key in (("scalar_values", "values"), ("scalar_points", "points")):
        original = getattr(RunReader, name)

        def counting(self, *args, _original=original, _key=key):
            counted[_key] += 1
            return _original(self, *args)
        monkeypatch.setattr(RunReader, name, counting)
    return counted


@pytest.mark.parametrize("weight", [0.0, 0.6, 0.99])
def test_the_curve_is_the_one_drawn_from_the_whole_series(long_run, weight):
    with RunReader(long_run / "long") as reader:
        steps, values, walls = reader.scalar_series("loss")
    expected = scalar_curve(steps, values, weight, wall_times=walls)
    got = data.curve("long", "loss", weight)
    assert got.steps.size == MAX_POINTS
    np.testing.assert_array_equal(got.steps, expected.steps)
    np.testing.assert_array_equal(got.raw, expected.raw)
    np.testing.assert_array_equal(got.smoothed, expected.smoothed)
    np.testing.assert_array_equal(got.wall_times, expected.wall_times)


def test_a_run_is_read_once_per_state_and_again_when_it_changes(long_run, reads):
    data.curve("long", "loss", 0.6)
    data.curve("long", "loss", 0.9)              # another smoothing: no second read
    data.curve("long", "loss", 0.6)
    assert reads == {"values": 1, "points": 1}
    import sqlite3
    conn = sqlite3.connect(long_run / "long" / "run.sqlite")
    with conn:
        conn.execute("INSERT INTO scalars (wall_time, tag_id, step, value) SELECT "
                     "wall_time + 1, tag_id, step + 3, -1e6 FROM scalars "
                     "ORDER BY step DESC LIMIT 1")
    conn.close()
    curve = data.curve("long", "loss", 0.6)
    assert reads == {"values": 2, "points": 2}
    assert curve.raw[-1] == -1e6 and curve.steps[-1] == 6000 * 3


@pytest.mark.parametrize("points", [subplot_points(2), subplot_points(1)])
def test_each_subplot_width_gets_the_curve_of_the_whole_series(long_run, points):
    """A curve for two columns (544 points) or one (1,200) is the one scalar_curve draws
    from every point at that size (the series has a NaN and an infinity), its extremes kept."""
    with RunReader(long_run / "long") as reader:
        steps, values, walls = reader.scalar_series("loss")
    expected = scalar_curve(steps, values, 0.6, max_points=points, wall_times=walls)
    got = data.curve("long", "loss", 0.6, points)
    assert got.steps.size == points
    for name in ("steps", "raw", "smoothed", "wall_times"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
    finite = values[np.isfinite(values)]
    assert got.raw[np.isfinite(got.raw)].max() == finite.max()
    assert got.raw[np.isfinite(got.raw)].min() == finite.min()


def test_every_value_is_read_once_whatever_the_points(long_run, reads):
    for points in (MAX_POINTS, subplot_points(2), MAX_POINTS, subplot_points(2)):
        data.curve("long", "loss", 0.6, points)
    assert reads == {"values": 1, "points": 2}       # the kept rows differ per size


def test_short_tags_and_a_tag_of_nan_only(tmp_path):
    """A tag with one point, and one whose values are all NaN, draw as they are at any size."""
    with RunWriter(tmp_path, "short") as writer:
        writer.scalar("one", 2.5, 7, wall_time=T0)
        for step in range(3000):
            writer.scalar("nan", math.nan, step, wall_time=T0 + step)
    data.set_logdir(tmp_path)
    try:
        one = data.curve("short", "one", 0.6, subplot_points(2))
        assert one.steps.tolist() == [7] and one.raw.tolist() == [2.5]
        nan = data.curve("short", "nan", 0.6, subplot_points(2))
        assert nan.steps[0] == 0 and nan.steps[-1] == 2999 and np.isnan(nan.raw).all()
        assert nan.steps.size <= subplot_points(2)
    finally:
        data.set_logdir("runs")


def test_a_page_read_goes_ahead_of_the_warming():
    """With a read under way, a waiting page read takes the next turn before a waiting
    background (warming) read, and only one read runs at a time."""
    turns = data._ReadTurns()
    order, running = [], []
    holding, release = threading.Event(), threading.Event()

    def read(name, background=False):
        def body():
            with contextlib.ExitStack() as stack:
                if background:
                    stack.enter_context(turns.background())
                with turns.turn():
                    running.append(name)
                    assert len(running) == 1
                    order.append(name)
                    if name == "first":
                        holding.set()
                        release.wait(DEADLINE_S)
                    running.remove(name)
        return threading.Thread(target=body)

    first = read("first")
    first.start()
    assert holding.wait(DEADLINE_S)
    warming, page = read("warming", background=True), read("page")
    warming.start()
    wait_until(lambda: turns.waiting() == (0, 1))
    page.start()
    wait_until(lambda: turns.waiting() == (1, 1))
    release.set()
    for thread in (first, warming, page):
        thread.join(DEADLINE_S)
    assert order == ["first", "page", "warming"]


def wait_until(condition) -> None:
    """Spins until condition() holds (a deadline, not a sleep, bounds it)."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, "the threads did not reach their turns"
