"""data.curve's read path: every value from the index and the steps and wall times of the
kept rows only, giving exactly the curve scalar_curve draws from the whole series; read once
per run state (counted), again after the run changed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.record import RunReader, RunWriter
from viz.scalars import MAX_POINTS, scalar_curve
from workbench import data

T0 = 1_790_000_000.0


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
