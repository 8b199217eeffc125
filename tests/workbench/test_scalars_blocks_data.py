"""data.curve on a long tag: drawn from the run store's blocks (no value row decoded but the
tail's), each bucket's raw extremes kept; a curve too fine for whole-block buckets, and a run
written before blocks, are drawn from every point exactly as before; a row committed later
shows at once."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from engine.record import RunReader, RunWriter
from viz.scalars import block_sketch, scalar_curve, sketch_curve, subplot_points
from workbench import data

T0 = 1_790_000_000.0
POINTS = 64 * 900 + 21          # enough blocks for 544-point curves, too few for 1,200


@pytest.fixture(scope="module")
def long_logdir(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("logs")
    rng = np.random.default_rng(3)
    values = rng.normal(size=POINTS).cumsum()
    values[rng.integers(0, POINTS, 40)] += 300.0
    values[[7, 40_000]] = [math.nan, -math.inf]
    with RunWriter(logdir, "long") as writer:
        for k, value in enumerate(values.tolist()):
            writer.scalar("loss", value, k // 4, wall_time=T0 + k * 0.1)
    return logdir


@pytest.fixture
def logdir(long_logdir, tmp_path):
    """A private copy of the module's run (a test may change it)."""
    import shutil
    shutil.copytree(long_logdir / "long", tmp_path / "long")
    data.set_logdir(tmp_path)
    yield tmp_path
    data.set_logdir("runs")


@pytest.fixture
def value_reads(monkeypatch):
    counted = []
    original = RunReader.scalar_values

    def counting(self, tag):
        counted.append(tag)
        return original(self, tag)
    monkeypatch.setattr(RunReader, "scalar_values", counting)
    return counted


def test_a_long_tag_is_drawn_from_its_blocks(logdir, value_reads):
    points = subplot_points(2)
    got = data.curve("long", "loss", 0.6, points)
    assert value_reads == []                       # no reading of every value
    reader = RunReader(logdir / "long")
    expected = sketch_curve(block_sketch(reader.scalar_blocks("loss"), points), 0.6)
    for name in ("steps", "raw", "smoothed", "wall_times"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
    steps, values, walls = reader.scalar_series("loss")
    finite = values[np.isfinite(values)]
    assert got.raw[np.isfinite(got.raw)].max() == finite.max()
    assert got.raw[np.isfinite(got.raw)].min() == finite.min()
    assert got.steps.size <= points and got.steps[0] == steps[0] and got.steps[-1] == steps[-1]
    index = np.searchsorted(walls, got.wall_times)
    np.testing.assert_array_equal(values[index], got.raw)


def assert_drawn_from_every_point(got, run, points) -> None:
    """`got` equals the exact curve of every recorded point (the path without blocks)."""
    steps, values, walls = RunReader(run).scalar_series("loss")
    expected = scalar_curve(steps, values, 0.6, points, walls)
    for name in ("steps", "raw", "smoothed", "wall_times"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))


def test_a_curve_finer_than_whole_blocks_is_drawn_from_every_point(logdir, value_reads):
    got = data.curve("long", "loss", 0.6, subplot_points(1))
    assert value_reads == ["loss"]
    assert_drawn_from_every_point(got, logdir / "long", subplot_points(1))


def test_a_run_written_before_blocks_is_drawn_from_every_point(logdir, value_reads):
    conn = sqlite3.connect(logdir / "long" / "run.sqlite")
    with conn:
        conn.execute("DROP TABLE scalar_blocks")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.close()
    got = data.curve("long", "loss", 0.6, subplot_points(2))
    assert value_reads == ["loss"]
    assert_drawn_from_every_point(got, logdir / "long", subplot_points(2))


def test_a_row_committed_later_shows_at_once(logdir, value_reads):
    data.curve("long", "loss", 0.6, subplot_points(2))
    conn = sqlite3.connect(logdir / "long" / "run.sqlite")
    with conn:
        conn.execute("INSERT INTO scalars (wall_time, tag_id, step, value) SELECT "
                     "wall_time + 1, tag_id, step + 1, -1e6 FROM scalars "
                     "ORDER BY step DESC LIMIT 1")
    conn.close()
    got = data.curve("long", "loss", 0.6, subplot_points(2))
    assert got.raw[-1] == -1e6 and got.raw.min() == -1e6 and value_reads == []
