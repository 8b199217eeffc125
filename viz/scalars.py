"""Scalar curves: TensorBoard's debiased exponential smoothing, min/max-preserving
downsampling of long series (from every point, or from the run store's blocks of points),
and the figure with faint raw and bold smoothed curves."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from engine.record.schema import BLOCK, SCALAR_BLOCK_FIELDS, ScalarBlocks

# Points kept per curve: first, last and the min and max of 599 buckets, about one bucket
# per two pixels of a plot as wide as a 1280-pixel window; more would not change a pixel
# and cost the browser time to draw (TensorBoard keeps 1,000 samples a tag).
MAX_POINTS = 1200
RUN_COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)


def smooth(values: Sequence[float], weight: float,
           carry: tuple[float, int] = (0.0, 0)) -> np.ndarray:
    """TensorBoard's smoothing: last = last*w + (1-w)*v, divided by 1 - w**n (n = finite
    points so far) so early points are not pulled towards zero. Non-finite values pass
    through without touching the average; a constant series comes back unchanged. `carry`
    (smoothing_carry: the running average and finite count of the points before these)
    continues a series' smoothing from where its earlier points left it."""
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    raw = np.asarray(values, dtype=np.float64)
    mask = np.isfinite(raw)
    every = bool(mask.all())            # the usual case: no masking, no copies
    finite = raw if every else raw[mask]
    average, before = float(carry[0]), int(carry[1])
    if before > 0:
        if finite.size == 0:
            return raw.copy()
        ahead = np.arange(1, finite.size + 1, dtype=np.float64)
        averaged = (_ema(finite, weight) + average * weight ** ahead) / (
            1.0 - weight ** (before + ahead))
        if every:
            return averaged
        out = raw.copy()
        out[mask] = averaged
        return out
    if finite.size == 0 or not (finite != finite[0]).any():
        return raw.copy()
    averaged = _ema(finite, weight)
    # 1 - w**n is 1.0 exactly once w**n < 2**-54: only the first `debiased` points change.
    debiased = 0 if weight == 0.0 else min(
        finite.size, int(math.log(2.0 ** -54) / math.log(weight)) + 1)
    averaged[:debiased] /= 1.0 - weight ** np.arange(1, debiased + 1, dtype=np.float64)
    if every:
        return averaged
    out = raw.copy()
    out[mask] = averaged
    return out


_EMA_BLOCK = 128


def _ema(values: np.ndarray, weight: float) -> np.ndarray:
    """last_n = w * last_(n-1) + (1 - w) * v_n from last_0 = 0, vectorized: within blocks of
    _EMA_BLOCK points it is one matrix product with the powers of w (bounded by 1, so stable),
    and only the carry from block to block is a loop (a 1M-point series: ~4k iterations)."""
    count = values.size
    blocks = -(-count // _EMA_BLOCK)
    padded = np.zeros(blocks * _EMA_BLOCK)
    padded[:count] = values
    lags = np.subtract.outer(np.arange(_EMA_BLOCK), np.arange(_EMA_BLOCK))
    powers = np.where(lags >= 0, weight ** np.maximum(lags, 0), 0.0)
    within = (1.0 - weight) * (padded.reshape(blocks, _EMA_BLOCK) @ powers.T)
    decay = weight ** np.arange(1, _EMA_BLOCK + 1)
    carries = np.empty(blocks)
    carry = 0.0
    for b in range(blocks):
        carries[b] = carry
        carry = within[b, -1] + carry * decay[-1]
    return (within + carries[:, None] * decay[None, :]).reshape(-1)[:count]


def downsample_indices(values: Sequence[float], max_points: int = MAX_POINTS) -> np.ndarray:
    """Indices to keep: first, last, and the min and max of each of (max_points-2)/2 equal
    buckets in between (the first of equal ones), so spikes survive and the result has at
    most max_points points. A bucket with no finite value keeps its first point. Vectorized:
    a few passes over the series whatever the bucket count."""
    raw = np.asarray(values, dtype=np.float64)
    count = raw.size
    if count <= max_points:
        return np.arange(count)
    if max_points < 4:
        raise ValueError("max_points must be at least 4 to keep first, last, min and max")
    inner = raw[1:-1]
    # Bucket boundaries as np.array_split makes them: the first (size % n) one longer.
    buckets = (max_points - 2) // 2
    size, extra = divmod(inner.size, buckets)
    lengths = np.full(buckets, size)
    lengths[:extra] += 1
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    finite = np.isfinite(inner)
    lowest = _first_extreme(np.where(finite, inner, np.inf), starts, lengths, np.minimum)
    highest = _first_extreme(np.where(finite, inner, -np.inf), starts, lengths, np.maximum)
    has_finite = np.add.reduceat(finite, starts) > 0
    kept = np.concatenate((lowest[has_finite], highest[has_finite], starts[~has_finite]))
    return np.unique(np.concatenate(([0, count - 1], kept + 1)))


def _first_extreme(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                   extreme: np.ufunc) -> np.ndarray:
    """Per bucket, the index of the first element equal to the bucket's extreme."""
    best = extreme.reduceat(values, starts)
    hits = np.flatnonzero(values == np.repeat(best, lengths))
    # hits ascend, so their buckets do too: a bucket's first hit is where the bucket changes.
    bucket = np.searchsorted(starts, hits, side="right") - 1
    return hits[np.flatnonzero(np.diff(bucket, prepend=-1))]


def downsample(steps: Sequence[float], values: Sequence[float],
               max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    keep = downsample_indices(values, max_points)
    return np.asarray(steps)[keep], np.asarray(values)[keep]


@dataclass(frozen=True, eq=False)
class Curve:
    """One run's series ready to draw: the kept steps, raw and smoothed values there, and
    their wall times (seconds since the epoch) when known."""
    steps: np.ndarray
    raw: np.ndarray
    smoothed: np.ndarray
    smoothing: float
    wall_times: np.ndarray | None = None
    # (first, last) wall time of the whole series when these are a part of it (a zoomed
    # range): the relative axis counts from the series' start, in the unit of its span.
    series_walls: tuple[float, float] | None = None


def scalar_curve(steps: Sequence[float], values: Sequence[float], smoothing: float,
                 max_points: int = MAX_POINTS,
                 wall_times: Sequence[float] | None = None) -> Curve:
    """Smoothed over every point, then downsampled by the raw values' extremes."""
    raw = np.asarray(values, dtype=np.float64)
    keep = downsample_indices(raw, max_points)
    walls = None if wall_times is None else np.asarray(wall_times, dtype=np.float64)[keep]
    return kept_curve(raw, keep, np.asarray(steps)[keep], smoothing, walls)


def kept_curve(values: np.ndarray, keep: np.ndarray, kept_steps: np.ndarray,
               smoothing: float, kept_wall_times: np.ndarray | None = None) -> Curve:
    """scalar_curve from every value but the steps and wall times of the kept points only
    (what a reader that fetches those for the kept rows alone has): smoothed over every
    value, then taken at `keep` (downsample_indices of the values)."""
    raw = np.asarray(values, dtype=np.float64)
    smoothed = smooth(raw, smoothing)[keep] if smoothing > 0 else raw[keep]
    return Curve(np.asarray(kept_steps), raw[keep], smoothed, smoothing, kept_wall_times)


# Min/max buckets from blocks: each bucket is whole blocks (so its min and max are the raw
# points' own), at least this many, so a bucket is at most half as wide again as another
# (2 or 3 px where buckets are 2 px: 100,000 points draw from blocks at 1,200 points too).
MIN_BLOCKS_PER_BUCKET = 2


# A zoomed range takes buckets of one block or two (every bucket still whole blocks): below
# that its rows are read, at most 599 blocks' worth (38,336 points at 1,200 points a curve).
ZOOM_BLOCKS_PER_BUCKET = 1


def drawable_from_blocks(found: ScalarBlocks, max_points: int = MAX_POINTS,
                         per_bucket: int = MIN_BLOCKS_PER_BUCKET) -> bool:
    """Whether block_sketch can draw these points in max_points: more points than that,
    and enough blocks for whole-block buckets of at least `per_bucket` blocks (otherwise
    the points themselves are read)."""
    buckets = (max_points - 2) // 2
    return found.count > max_points and len(found.blocks) >= per_bucket * buckets


@dataclass(frozen=True, eq=False)
class Sketch:
    """A long series drawn from its blocks: the kept points (their positions in the series,
    steps, values, wall times: the first and last points and each bucket's min and max),
    where each bucket starts, and what smoothing needs (per unit, a block or a raw point:
    finite count and sum; per kept point, its unit and how many points of it come up to
    it)."""
    positions: np.ndarray
    steps: np.ndarray
    values: np.ndarray
    walls: np.ndarray
    bucket_starts: np.ndarray
    count: int
    unit_finite: np.ndarray
    unit_sum: np.ndarray
    kept_unit: np.ndarray
    kept_prefix: np.ndarray


def _point_units(points: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """Raw points as one-point blocks (SCALAR_BLOCK_FIELDS)."""
    steps, values, walls = (np.asarray(p, dtype=np.float64) for p in points)
    units = np.zeros((values.size, len(SCALAR_BLOCK_FIELDS)))
    finite = np.isfinite(values)
    for name, column in (("first_step", steps), ("last_step", steps), ("count", 1.0),
                         ("finite", finite), ("sum", np.where(finite, values, 0.0)),
                         ("min", values), ("min_step", steps), ("min_wall", walls),
                         ("max", values), ("max_step", steps), ("max_wall", walls),
                         ("first_value", values), ("first_wall", walls),
                         ("last_value", values), ("last_wall", walls), ("ordered", 1.0)):
        units[:, BLOCK[name]] = column
    return units


def block_sketch(found: ScalarBlocks, max_points: int = MAX_POINTS) -> Sketch:
    """The points downsample_indices would keep, with buckets of whole blocks: first, last,
    and the min and max of each of (max_points-2)/2 buckets (the first of equal ones; a
    bucket with no finite value keeps its first point), each bucket's min and max the raw
    points' own."""
    units = np.concatenate([_point_units(found.head), np.asarray(found.blocks, np.float64),
                            _point_units(found.tail)])
    counts = units[:, BLOCK["count"]].astype(np.int64)
    starts = np.cumsum(counts) - counts
    total = int(counts.sum())
    buckets = (max_points - 2) // 2
    bucket = starts * buckets // total
    first_units = np.flatnonzero(np.diff(bucket, prepend=-1))     # each bucket's first unit
    lengths = np.diff(np.append(first_units, units.shape[0]))
    has_finite = np.add.reduceat(units[:, BLOCK["finite"]], first_units) > 0
    finite = units[:, BLOCK["finite"]] > 0
    low = _first_extreme(np.where(finite, units[:, BLOCK["min"]], np.inf), first_units,
                         lengths, np.minimum)
    high = _first_extreme(np.where(finite, units[:, BLOCK["max"]], -np.inf), first_units,
                          lengths, np.maximum)
    kept = [_kept(units, starts, low[has_finite], "min"),
            _kept(units, starts, high[has_finite], "max"),
            _kept(units, starts, first_units[~has_finite], "first"),
            _kept(units, starts, np.array([0]), "first"),
            _kept(units, starts, np.array([units.shape[0] - 1]), "last")]
    position, unit, step, value, wall = (np.concatenate(part) for part in zip(*kept))
    order = np.unique(position, return_index=True)[1]
    return Sketch(position[order], step[order].astype(np.int64), value[order], wall[order],
                  starts[first_units], total, units[:, BLOCK["finite"]],
                  units[:, BLOCK["sum"]], unit[order],
                  np.minimum(position[order] - starts[unit[order]] + 1,
                             units[unit[order], BLOCK["finite"]]))


def _kept(units: np.ndarray, starts: np.ndarray, picked: np.ndarray, which: str) -> tuple:
    """(positions, units, steps, values, walls) of the `which` point of the picked units."""
    if which in ("min", "max"):
        offset = units[picked, BLOCK[f"{which}_offset"]].astype(np.int64)
        fields = (f"{which}_step", which, f"{which}_wall")
    elif which == "first":
        offset = np.zeros(picked.size, dtype=np.int64)
        fields = ("first_step", "first_value", "first_wall")
    else:
        offset = units[picked, BLOCK["count"]].astype(np.int64) - 1
        fields = ("last_step", "last_value", "last_wall")
    return (starts[picked] + offset, picked, *(units[picked, BLOCK[f]] for f in fields))


def sketch_curve(sketch: Sketch, smoothing: float,
                 carry: tuple[float, int] = (0.0, 0)) -> Curve:
    """The sketch's kept points, raw and smoothed. Smoothing is TensorBoard's over every
    point, except that the points of a block before a kept point (and the blocks before its
    own) count at their block's mean: off from smoothing every point by at most weight
    times a block's spread, and exact over raw points. `carry` as smooth() takes it."""
    raw = sketch.values
    smoothed = raw if smoothing <= 0 else _sketch_smoothed(sketch, smoothing, carry)
    return Curve(sketch.steps, raw, smoothed, smoothing, sketch.walls)


@dataclass(frozen=True, eq=False)
class UnitStates:
    """The smoothing's state after each unit (raw point or block, a block's points at its
    mean as sketch_curve counts them) of a whole series, to carry into a zoomed part."""
    last_steps: np.ndarray
    averages: np.ndarray
    finite: np.ndarray


def unit_states(found: ScalarBlocks, weight: float) -> UnitStates:
    units = np.concatenate([_point_units(found.head), np.asarray(found.blocks, np.float64),
                            _point_units(found.tail)])
    finite = units[:, BLOCK["finite"]]
    if weight <= 0:
        averages = np.zeros(finite.size)
    else:
        before, last = _unit_averages(finite, units[:, BLOCK["sum"]], weight)
        averages = np.append(before[1:], last)
    return UnitStates(units[:, BLOCK["last_step"]].astype(np.int64), averages,
                      np.cumsum(finite).astype(np.int64))


def smoothing_carry(states: UnitStates, first_step: int
                    ) -> tuple[tuple[float, int], int | None]:
    """The smoothing's state after the units that end before `first_step` (the series is
    in step order, so they are the first ones): ((running average, finite points), the
    last step they reach, None when there are none)."""
    count = int(np.searchsorted(states.last_steps, first_step, side="left"))
    if count == 0:
        return (0.0, 0), None
    return ((float(states.averages[count - 1]), int(states.finite[count - 1])),
            int(states.last_steps[count - 1]))


def carried(carry: tuple[float, int], values: np.ndarray, weight: float) -> tuple[float, int]:
    """The smoothing's state `carry` after these raw points too."""
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if not finite.size or weight <= 0:
        return carry[0], carry[1] + int(finite.size)
    average = float(_ema(finite, weight)[-1] + carry[0] * weight ** finite.size)
    return average, carry[1] + int(finite.size)


def _unit_averages(finite_units: np.ndarray, sums: np.ndarray, weight: float,
                   average: float = 0.0) -> tuple[np.ndarray, float]:
    """The running average before each unit (from `average`), and after the last."""
    means = np.divide(sums, finite_units, out=np.zeros_like(sums), where=finite_units > 0)
    decay = weight ** finite_units
    before = np.empty(finite_units.size)
    for u, (a, m) in enumerate(zip(decay.tolist(), means.tolist())):
        before[u] = average
        average = a * average + (1.0 - a) * m
    return before, average


def wall_step_range(found: ScalarBlocks, first_wall: float, last_wall: float
                    ) -> tuple[int, int] | None:
    """The steps of the points whose wall times may lie in [first_wall, last_wall], from
    the points and blocks of a series (a block counts by its first, last, min and max
    points' walls, so it may add a block's points beyond the ends); None when none may."""
    units = np.concatenate([_point_units(found.head), np.asarray(found.blocks, np.float64),
                            _point_units(found.tail)])
    walls = units[:, [BLOCK["first_wall"], BLOCK["last_wall"], BLOCK["min_wall"],
                      BLOCK["max_wall"]]]
    inside = (walls.max(axis=1) >= first_wall) & (walls.min(axis=1) <= last_wall)
    if not inside.any():
        return None
    return (int(units[inside, BLOCK["first_step"]].min()),
            int(units[inside, BLOCK["last_step"]].max()))


def _sketch_smoothed(sketch: Sketch, weight: float,
                     carry: tuple[float, int] = (0.0, 0)) -> np.ndarray:
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    raw = sketch.values
    finite_units = sketch.unit_finite
    means = np.divide(sketch.unit_sum, finite_units, out=np.zeros_like(sketch.unit_sum),
                      where=finite_units > 0)
    before = _unit_averages(finite_units, sketch.unit_sum, weight, float(carry[0]))[0]
    seen = np.cumsum(finite_units) - finite_units + int(carry[1])
    unit, prefix = sketch.kept_unit, sketch.kept_prefix
    # The kept point itself exactly (its weight, 1 - w, is most of it when w is small), the
    # points of its block before it at the block's mean.
    part = weight ** np.maximum(prefix - 1, 0)
    averaged = part * before[unit] + (1.0 - part) * means[unit]
    finite_raw = np.isfinite(raw)
    averaged[finite_raw] = (weight * averaged[finite_raw]
                            + (1.0 - weight) * raw[finite_raw])
    n = seen[unit] + prefix
    out = raw.copy()
    ok = finite_raw & (n > 0)
    out[ok] = averaged[ok] / (1.0 - weight ** n[ok])
    # Every bucket's min and max are kept: all equal means a constant series, which
    # smoothing leaves as it is (as smooth() does; a part of a series is not one).
    finite_raw = raw[np.isfinite(raw)]
    if carry[1] == 0 and (finite_raw.size == 0 or (finite_raw == finite_raw[0]).all()):
        return raw.copy()
    return out


# TensorBoard's three horizontal axes.
STEP, RELATIVE, WALL = "step", "relative", "wall"
X_AXES = (STEP, RELATIVE, WALL)
_DURATION_UNITS = ((3600.0 * 2, 3600.0, "hours"), (120.0, 60.0, "minutes"), (0.0, 1.0, "seconds"))


def relative_unit(span_s: float) -> tuple[float, str]:
    """The unit a relative-time axis reads best in for a span: seconds up to 2 minutes,
    minutes up to 2 hours, then hours."""
    for above, size, name in _DURATION_UNITS:
        if span_s > above:
            return size, name
    return 1.0, "seconds"


def x_values(curve: Curve, axis: str, unit: float = 1.0):
    """The curve's x coordinates on `axis`: steps; time since the run's first kept point in
    `unit` seconds; or wall-clock datetimes. A curve without wall times falls back to steps."""
    if axis == STEP or curve.wall_times is None or not curve.wall_times.size:
        return curve.steps
    if axis == RELATIVE:
        return (curve.wall_times - series_span(curve)[0]) / unit
    return (curve.wall_times * 1e3).astype("datetime64[ms]")


def compact(values: np.ndarray) -> np.ndarray:
    """values as float32 when that loses nothing a reader of the chart sees (7 significant
    digits; the figure's hover shows 6) and nothing leaves float32's normal range; float64
    otherwise. Half the bytes to send and for the browser to decode."""
    values = np.asarray(values, dtype=np.float64)
    magnitude = np.abs(values[np.isfinite(values) & (values != 0)])
    if magnitude.size and (magnitude.max() >= _FLOAT32_MAX or magnitude.min() < _FLOAT32_MIN):
        return values
    return values.astype(np.float32)


_FLOAT32_MAX = float(np.finfo(np.float32).max) / 2
_FLOAT32_MIN = float(np.finfo(np.float32).tiny)


def run_colors(runs: Sequence[str]) -> dict[str, str]:
    """Colour by position in the sorted run list, so a run keeps its colour across tags."""
    return {run: RUN_COLORS[i % len(RUN_COLORS)] for i, run in enumerate(sorted(runs))}


def _faded(color: str, alpha: float) -> str:
    red, green, blue = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def scalars_figure(series_by_run: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                   tag: str, smoothing: float = 0.6, height: int = 420) -> go.Figure:
    """One colour per run; raw curves faint (hidden from the legend), smoothed bold. With
    smoothing 0 the raw curve is the bold one."""
    return curves_figure({run: scalar_curve(steps, values, smoothing)
                          for run, (steps, values) in series_by_run.items()}, tag, height)


def curves_figure(curves_by_run: Mapping[str, Curve], tag: str, height: int = 420,
                  x_axis: str = STEP, log_y: bool = False) -> go.Figure:
    """scalars_figure from curves computed already (as the workbench caches them), against
    steps, relative time or wall time, on a linear or log value axis (points <= 0 are not
    drawn on a log axis, as in TensorBoard). Hover shows the step on every axis."""
    if x_axis not in X_AXES:
        raise ValueError(f"x_axis must be one of {', '.join(X_AXES)}, got {x_axis!r}")
    colors = run_colors(list(curves_by_run))
    unit, unit_name = relative_unit_of(curves_by_run)
    traces = _tag_traces(curves_by_run, tag, x_axis, unit, colors, None)
    # plotly.js's own defaults (white, #eee grid) instead of plotly.py's template, which
    # each figure would carry (7 kB) and the browser apply; axis types given, so plotly.js
    # does not scan the points to guess them.
    layout = {
        "template": _NO_TEMPLATE, "title": {"text": tag, "x": 0.01}, "height": height,
        "hovermode": "closest", "margin": {"l": 50, "r": 10, "t": 40, "b": 40},
        "plot_bgcolor": "white",
        "xaxis": _x_axis_layout(x_axis, unit_name),
        "yaxis": {"gridcolor": "#eee", "type": "log" if log_y else "linear"},
        "legend": {"orientation": "h", "y": -0.2},
    }
    # Built without plotly.py's per-property validation, which took most of the time of a
    # page of curves (a few fixed fields, checked once by the tests with validation on).
    return go.Figure(data=traces, layout=layout, _validate=False)


def series_span(curve: Curve) -> tuple[float, float]:
    """(first, last) wall time of the curve's whole series (its kept points hold both,
    unless it is a zoomed part: then series_walls says); (0, 0) without wall times."""
    if curve.series_walls is not None:
        return curve.series_walls
    if curve.wall_times is None or not curve.wall_times.size:
        return 0.0, 0.0
    return float(curve.wall_times[0]), float(curve.wall_times[-1])


def relative_unit_of(curves_by_run: Mapping[str, Curve]) -> tuple[float, str]:
    """relative_unit of the longest run among the curves."""
    spans = [last - first for first, last in map(series_span, curves_by_run.values())]
    return relative_unit(max(spans, default=0.0))




def _x_axis_layout(x_axis: str, unit_name: str) -> dict:
    x_title = {STEP: "step", RELATIVE: f"relative time ({unit_name})", WALL: "wall time"}[x_axis]
    return {"title": {"text": x_title}, "gridcolor": "#eee",
            "type": "date" if x_axis == WALL else "linear"}


def _tag_traces(curves_by_run: Mapping[str, Curve], tag: str, x_axis: str, unit: float,
                colors: Mapping[str, str], in_legend: set[str] | None) -> list[dict]:
    """A tag's traces, runs by name: faint raw (when smoothed) and bold smoothed. With
    `in_legend` (the runs given a legend entry so far) a run's bold trace enters the legend
    only the first time; with None every one does."""
    traces = []
    # On the step axis the hover's step is x itself: no second copy of the steps is sent.
    step_field = "x" if x_axis == STEP else "customdata"
    for run, curve in sorted(curves_by_run.items()):
        x = x_values(curve, x_axis, unit)
        if curve.smoothing > 0:
            traces.append({
                "type": "scatter", "x": x, "y": compact(curve.raw), "mode": "lines",
                "name": f"{run} (raw)", "legendgroup": run, "showlegend": False,
                "hoverinfo": "skip", "line": {"color": _faded(colors[run], 0.3), "width": 1}})
        bold = {
            "type": "scatter", "x": x, "y": compact(curve.smoothed), "mode": "lines",
            "name": run, "legendgroup": run, "line": {"color": colors[run], "width": 2.5},
            **({} if x_axis == STEP else {"customdata": curve.steps}),
            "hovertemplate": f"{run}<br>step %{{{step_field}}}<br>{tag} %{{y:.6g}}"
                             "<extra></extra>"}
        if in_legend is not None:
            if run in in_legend:
                bold["showlegend"] = False
            in_legend.add(run)
        traces.append(bold)
    return traces


_NO_TEMPLATE = pio.templates["none"].to_plotly_json()


# One figure for every tag: a subplot per tag in a grid (one column for one tag, two for
# more), each with its own axes and title, the runs' legend once. One plot to mount and
# draw instead of one per tag: plotly.js's fixed cost per plot is most of a page's drawing.
_ROW_GAP_PX = 80            # below a subplot: its ticks and x title, then the next one's title
_COLUMN_GAP = 0.08          # of the width: the right column's value ticks
_MARGIN = {"l": 50, "r": 10, "t": 30, "b": 60}
# The figure's plot area in a 1280-pixel window (the page's padding and the margins off),
# and the pixels a min/max bucket gets: a bucket draws as one vertical stroke, so finer ones
# would not change a pixel but cost the browser time to draw.
PLOT_AREA_PX = 1180
BUCKET_PX = 2


def subplot_points(tag_count: int) -> int:
    """Points a curve keeps in tags_figure of `tag_count` tags: MAX_POINTS in one column;
    in two (each subplot about 540 px wide at 1280) a bucket every BUCKET_PX pixels, 544
    points, which halves what the browser draws for the same picture."""
    if tag_count <= 1:
        return MAX_POINTS
    width = PLOT_AREA_PX * (1.0 - _COLUMN_GAP) / 2
    return min(MAX_POINTS, 2 * int(width // BUCKET_PX) + 2)


def tags_figure(curves_by_tag: Mapping[str, Mapping[str, Curve]], x_axis: str = STEP,
                log_y: bool = False, marked_step: int | None = None) -> go.Figure:
    """Every tag's curves (tag -> run -> Curve, in the order given) as subplots of one
    figure: the tag's title over each, its own x and y axes (x as curves_figure draws it,
    log values on each when `log_y`), one colour per run across all of them and the run's
    legend entry once (a click hides the run everywhere). `marked_step` is marked on each
    subplot as mark_step marks it. Subplot k (from 1) has axes xaxisk/yaxisk (plain xaxis
    and yaxis for the first), so a zoom names its subplot's axes."""
    if x_axis not in X_AXES:
        raise ValueError(f"x_axis must be one of {', '.join(X_AXES)}, got {x_axis!r}")
    tags = list(curves_by_tag)
    columns = 1 if len(tags) == 1 else 2
    rows = -(-len(tags) // columns)
    plot_px = 300 if rows == 1 else 240
    paper_px = rows * (plot_px + _ROW_GAP_PX) - _ROW_GAP_PX
    width = (1.0 - _COLUMN_GAP * (columns - 1)) / columns
    colors = run_colors(sorted({run for by_run in curves_by_tag.values() for run in by_run}))
    traces, shapes, marks, titles = [], [], [], []
    layout = {
        "template": _NO_TEMPLATE, "height": paper_px + _MARGIN["t"] + _MARGIN["b"],
        "hovermode": "closest", "margin": _MARGIN, "plot_bgcolor": "white",
        "legend": {"orientation": "h", "y": -50 / paper_px, "yanchor": "top"},
    }
    in_legend: set[str] = set()
    for k, tag in enumerate(tags, start=1):
        row, column = divmod(k - 1, columns)
        top = 1.0 - row * (plot_px + _ROW_GAP_PX) / paper_px
        x0 = column * (width + _COLUMN_GAP)
        suffix = "" if k == 1 else str(k)
        by_run = curves_by_tag[tag]
        unit, unit_name = relative_unit_of(by_run)
        for trace in _tag_traces(by_run, tag, x_axis, unit, colors, in_legend):
            traces.append({**trace, "xaxis": f"x{suffix}", "yaxis": f"y{suffix}"})
        layout[f"xaxis{suffix}"] = {
            **_x_axis_layout(x_axis, unit_name), "domain": [x0, x0 + width],
            "anchor": f"y{suffix}"}
        layout[f"yaxis{suffix}"] = {
            "gridcolor": "#eee", "type": "log" if log_y else "linear",
            "domain": [max(top - plot_px / paper_px, 0.0), top], "anchor": f"x{suffix}"}
        titles.append({"text": tag, "x": x0, "xref": "paper", "xanchor": "left", "y": top,
                       "yref": "paper", "yanchor": "bottom", "showarrow": False,
                       "font": {"size": 15}})
        where = None if marked_step is None else _marked_x(by_run, marked_step, x_axis)
        if where is not None:
            shapes.append(_mark_line(where, f"x{suffix}", f"y{suffix} domain"))
            marks.append(_mark_label(where, marked_step, f"x{suffix}", f"y{suffix} domain"))
    # The marks' labels first: a reader (and the Alerts tests) finds the step's label first.
    layout["annotations"] = marks + titles
    if shapes:
        layout["shapes"] = shapes
    return go.Figure(data=traces, layout=layout, _validate=False)


def mark_step(figure: go.Figure, curves_by_run: Mapping[str, Curve], step: int,
              x_axis: str = STEP) -> go.Figure:
    """A dashed vertical line at `step` (an alert's, say) with a label. On a time axis it
    stands where the first run (by name) logged that step, or its last point when the run
    stopped before it (a step that failed logs no value); unchanged if nothing was drawn."""
    where = _marked_x(curves_by_run, step, x_axis)
    if where is None:
        return figure
    figure.add_shape(**_mark_line(where, "x", "paper"))
    figure.add_annotation(**_mark_label(where, step, "x", "paper"))
    return figure


def _marked_x(curves_by_run: Mapping[str, Curve], step: int, x_axis: str):
    """Where `step` stands on the axis (None when nothing was drawn on a time axis)."""
    where = step if x_axis == STEP else _time_of_step(curves_by_run, step, x_axis)
    return str(where) if isinstance(where, np.datetime64) else where


def _mark_line(where, xref: str, yref: str) -> dict:
    return {"type": "line", "x0": where, "x1": where, "y0": 0, "y1": 1, "xref": xref,
            "yref": yref, "line": {"color": "#d62728", "dash": "dash", "width": 1.5}}


def _mark_label(where, step: int, xref: str, yref: str) -> dict:
    return {"x": where, "xref": xref, "y": 1, "yref": yref, "text": f"step {step}",
            "showarrow": False, "yanchor": "bottom", "font": {"color": "#d62728", "size": 11}}


def _time_of_step(curves_by_run: Mapping[str, Curve], step: int, x_axis: str):
    timed = [(run, c) for run, c in sorted(curves_by_run.items())
             if c.wall_times is not None and c.steps.size]
    if not timed:
        return None
    unit, _ = relative_unit_of(dict(timed))
    for _, curve in timed:
        at = np.flatnonzero(curve.steps >= step)
        if at.size:
            return x_values(curve, x_axis, unit)[at[0]]
    return x_values(timed[0][1], x_axis, unit)[-1]


def series_csv(series: Sequence[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]) -> str:
    """Every point of (run, tag, steps, wall_times, values) series as CSV with a header:
    run,tag,step,wall_time,value (full resolution, values with all float64 digits)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "tag", "step", "wall_time", "value"])
    for run, tag, steps, walls, values in series:
        for step, wall, value in zip(steps.tolist(), walls.tolist(), values.tolist()):
            writer.writerow([run, tag, step, repr(float(wall)), repr(float(value))])
    return out.getvalue()


def series_json(series: Sequence[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]) -> str:
    """The same points as TensorBoard's JSON download: {run: {tag: [[wall_time, step,
    value], ...]}}; NaN and infinities become null (JSON has no such numbers)."""
    doc: dict[str, dict[str, list]] = {}
    for run, tag, steps, walls, values in series:
        doc.setdefault(run, {})[tag] = [
            [float(wall), int(step), float(value) if math.isfinite(value) else None]
            for step, wall, value in zip(steps.tolist(), walls.tolist(), values.tolist())]
    return json.dumps(doc, allow_nan=False)
