"""Scalar curves: TensorBoard's debiased exponential smoothing, min/max-preserving
downsampling of long series, and the figure with faint raw and bold smoothed curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

MAX_POINTS = 2000
RUN_COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)


def smooth(values: Sequence[float], weight: float) -> np.ndarray:
    """TensorBoard's smoothing: last = last*w + (1-w)*v, divided by 1 - w**n (n = finite
    points so far) so early points are not pulled towards zero. Non-finite values pass
    through without touching the average; a constant series comes back unchanged."""
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    raw = np.asarray(values, dtype=np.float64)
    finite = raw[np.isfinite(raw)]
    if finite.size == 0 or np.all(finite == finite[0]):
        return raw.copy()
    out = raw.copy()
    mask = np.isfinite(raw)
    seen = np.arange(1, int(mask.sum()) + 1, dtype=np.float64)
    out[mask] = _ema(raw[mask], weight) / (1.0 - weight ** seen)
    return out


_EMA_BLOCK = 256


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
    """One run's series ready to draw: the kept steps, raw and smoothed values there."""
    steps: np.ndarray
    raw: np.ndarray
    smoothed: np.ndarray
    smoothing: float


def scalar_curve(steps: Sequence[float], values: Sequence[float], smoothing: float,
                 max_points: int = MAX_POINTS) -> Curve:
    """Smoothed over every point, then downsampled by the raw values' extremes."""
    raw = np.asarray(values, dtype=np.float64)
    keep = downsample_indices(raw, max_points)
    smoothed = smooth(raw, smoothing)[keep] if smoothing > 0 else raw[keep]
    return Curve(np.asarray(steps)[keep], raw[keep], smoothed, smoothing)


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


def curves_figure(curves_by_run: Mapping[str, Curve], tag: str, height: int = 420) -> go.Figure:
    """scalars_figure from curves computed already (as the workbench caches them)."""
    colors = run_colors(list(curves_by_run))
    traces = []
    for run, curve in sorted(curves_by_run.items()):
        if curve.smoothing > 0:
            traces.append(go.Scatter(
                x=curve.steps, y=curve.raw, mode="lines", name=f"{run} (raw)",
                legendgroup=run, showlegend=False, hoverinfo="skip",
                line={"color": _faded(colors[run], 0.3), "width": 1}))
        traces.append(go.Scatter(
            x=curve.steps, y=curve.smoothed, mode="lines", name=run,
            legendgroup=run, line={"color": colors[run], "width": 2.5},
            hovertemplate=f"{run}<br>step %{{x}}<br>{tag} %{{y:.6g}}<extra></extra>"))
    figure = go.Figure(data=traces)
    figure.update_layout(
        title={"text": tag, "x": 0.01}, height=height, hovermode="closest",
        margin={"l": 50, "r": 10, "t": 40, "b": 40}, plot_bgcolor="white",
        xaxis={"title": {"text": "step"}, "gridcolor": "#eee"},
        yaxis={"gridcolor": "#eee"},
        legend={"orientation": "h", "y": -0.2},
    )
    return figure
