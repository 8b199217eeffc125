"""Min/max buckets drawn from the run store's blocks (viz.scalars.block_sketch): on random
series with spikes, NaN and infinities, every bucket's min and max are the raw points' own
(checked against a computation over the raw rows), for the whole range and zoomed ranges
read from a real store, on the step, relative and wall-time axes; and the smoothing drawn
from blocks stays within its stated bound of smoothing every point."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.record import RunReader, RunWriter, store
from engine.record.schema import SCALAR_BLOCK_POINTS, ScalarBlocks
from viz.scalars import (
    RELATIVE,
    STEP,
    WALL,
    block_sketch,
    drawable_from_blocks,
    relative_unit,
    sketch_curve,
    smooth,
    subplot_points,
    x_values,
)

T0 = 1_790_000_000.0


def spiky(n: int, seed: int, holes: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.normal(size=n).cumsum()
    spikes = rng.integers(0, n, max(n // 300, 3))
    values[spikes] += rng.choice([-200.0, 200.0], spikes.size)
    if holes:
        values[rng.integers(0, n, 5)] = math.nan
        values[rng.integers(0, n, 2)] = math.inf
        values[rng.integers(0, n, 2)] = -math.inf
        values[200:200 + 3 * SCALAR_BLOCK_POINTS] = math.nan     # whole blocks of NaN
    return values


def in_memory(steps, values, walls) -> ScalarBlocks:
    """What the reader gives for a whole range: the writer's blocks, the rest as the tail."""
    whole = len(values) // SCALAR_BLOCK_POINTS * SCALAR_BLOCK_POINTS
    empty = (np.array([], np.int64), np.array([]), np.array([]))
    return ScalarBlocks(empty, store.scalar_blocks(steps, values, walls),
                        (steps[whole:], values[whole:], walls[whole:]))


def check_extremes(sketch, steps, values, walls) -> None:
    """Each bucket (bucket_starts) keeps the raw min and max of its points (over the
    finite ones; a bucket with none keeps its first point), each kept point is a raw point
    (its step, value and wall time), and the first and last points are kept."""
    positions = sketch.positions
    assert (np.diff(positions) > 0).all()
    np.testing.assert_array_equal(sketch.steps, steps[positions])
    np.testing.assert_array_equal(sketch.values, values[positions])
    np.testing.assert_array_equal(sketch.walls, walls[positions])
    assert positions[0] == 0 and positions[-1] == values.size - 1
    ends = np.append(sketch.bucket_starts[1:], values.size)
    for start, end in zip(sketch.bucket_starts, ends):
        raw = values[start:end]
        kept = sketch.values[(positions >= start) & (positions < end)]
        finite = raw[np.isfinite(raw)]
        if finite.size:
            assert kept[np.isfinite(kept)].min() == finite.min()
            assert kept[np.isfinite(kept)].max() == finite.max()
            # the first of equal extremes, as downsample_indices keeps
            assert start + np.flatnonzero(raw == finite.min())[0] in positions
            assert start + np.flatnonzero(raw == finite.max())[0] in positions
        else:
            assert start in positions


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("points", [subplot_points(2), subplot_points(1), 200])
def test_every_bucket_keeps_the_raw_min_and_max(seed, points):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(110_000, 140_000)) + int(rng.integers(0, SCALAR_BLOCK_POINTS))
    steps = np.arange(n, dtype=np.int64) * 3
    values = spiky(n, seed)
    walls = T0 + np.cumsum(rng.uniform(0.01, 2.0, n))
    found = in_memory(steps, values, walls)
    assert drawable_from_blocks(found, points)
    sketch = block_sketch(found, points)
    assert sketch.positions.size <= points and sketch.count == n
    assert len(sketch.bucket_starts) == (points - 2) // 2
    check_extremes(sketch, steps, values, walls)


@pytest.mark.parametrize("axis", [STEP, RELATIVE, WALL])
def test_each_axis_draws_the_kept_raw_points_at_their_own_x(axis):
    n = 80_000
    rng = np.random.default_rng(9)
    steps = np.arange(n, dtype=np.int64)
    values = spiky(n, 9)
    walls = T0 + np.cumsum(rng.uniform(0.01, 2.0, n))
    sketch = block_sketch(in_memory(steps, values, walls), subplot_points(2))
    curve = sketch_curve(sketch, 0.6)
    unit, _ = relative_unit(walls[-1] - walls[0])
    x = x_values(curve, axis, unit)
    expected = {STEP: steps, RELATIVE: (walls - walls[0]) / unit,
                WALL: (walls * 1e3).astype("datetime64[ms]")}[axis][sketch.positions]
    np.testing.assert_array_equal(x, expected)
    np.testing.assert_array_equal(curve.raw, values[sketch.positions])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A store of 90,000 spiky points written by RunWriter, 8 points a step (each step a
    commit), and what its rows read back as."""
    logdir = tmp_path_factory.mktemp("blocks")
    n = 90_000
    rng = np.random.default_rng(11)
    values = spiky(n, 11)
    walls = T0 + np.cumsum(rng.uniform(0.01, 2.0, n))
    with RunWriter(logdir, "run") as writer:
        for k, (value, wall) in enumerate(zip(values.tolist(), walls.tolist())):
            writer.scalar("loss", value, k // 8, wall_time=wall)
    reader = RunReader(logdir / "run")
    return reader, reader.scalar_series("loss")


@pytest.mark.parametrize("low, high", [(None, None), (1250, 7500), (4166, 9722), (0, 6250),
                                       (7500, None), (3000, 3100)])
def test_zoomed_ranges_read_from_a_store_keep_the_raw_extremes(recorded, low, high):
    reader, (steps, values, walls) = recorded
    found = reader.scalar_blocks("loss", low, high)
    inside = (steps >= (low or 0)) & (steps <= (steps[-1] if high is None else high))
    assert found is not None and found.count == inside.sum()
    points = next(p for p in (subplot_points(2), 200, 40, 10) if drawable_from_blocks(found, p))
    sketch = block_sketch(found, points)
    check_extremes(sketch, steps[inside], values[inside], walls[inside])


@pytest.mark.parametrize("weight", [0.0, 0.3, 0.6, 0.9, 0.99])
def test_smoothing_from_blocks_is_within_weight_times_a_block_spread(weight):
    """Each kept point's smoothed value is off the smoothing of every point by at most
    weight times the largest spread of a block (the points before it in its block, and the
    blocks before it, count at their means); weight 0 draws the raw values."""
    n = 70_000 + 13
    steps = np.arange(n, dtype=np.int64)
    values = spiky(n, 21, holes=False)
    walls = T0 + steps * 0.5
    sketch = block_sketch(in_memory(steps, values, walls), subplot_points(2))
    curve = sketch_curve(sketch, weight)
    exact = smooth(values, weight)[sketch.positions]
    blocks = values[: n // 64 * 64].reshape(-1, 64)
    spread = float((blocks.max(axis=1) - blocks.min(axis=1)).max())
    assert np.abs(curve.smoothed - exact).max() <= weight * spread + 1e-9
    if weight == 0.0:
        np.testing.assert_array_equal(curve.smoothed, curve.raw)


def test_smoothing_passes_non_finite_points_and_leaves_a_constant_series():
    n = 64 * 1200
    steps = np.arange(n, dtype=np.int64)
    walls = T0 + steps * 1.0
    flat = block_sketch(in_memory(steps, np.full(n, 2.5), walls), subplot_points(2))
    np.testing.assert_array_equal(sketch_curve(flat, 0.9).smoothed, np.full(
        flat.positions.size, 2.5))
    values = spiky(n, 5)
    values[64 * 10:64 * 40] = math.nan       # longer than a bucket: one keeps its NaN
    sketch = block_sketch(in_memory(steps, values, walls), subplot_points(2))
    smoothed = sketch_curve(sketch, 0.6).smoothed
    hole = ~np.isfinite(sketch.values)
    assert hole.any()
    np.testing.assert_array_equal(smoothed[hole], sketch.values[hole])
    assert np.isfinite(smoothed[~hole]).all()


def test_too_few_blocks_for_whole_block_buckets_are_not_drawn_from_blocks():
    n = 64 * 500
    steps = np.arange(n, dtype=np.int64)
    found = in_memory(steps, spiky(n, 3), T0 + steps * 1.0)
    assert drawable_from_blocks(found, 200)
    assert not drawable_from_blocks(found, subplot_points(1))     # 599 buckets
