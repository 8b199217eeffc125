"""Histograms of a recorded tensor over steps, drawn as TensorBoard does: "offset" (one
ridge per step, newest in front) and "overlay" (every step on one axis, coloured by step),
and the distributions view (TensorBoard's percentile bands over steps, from the buckets)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from engine.record.schema import HistogramRecord

OFFSET, OVERLAY = "offset", "overlay"
MODES = (OFFSET, OVERLAY)
# TensorBoard's distribution percentiles: min, -2 sd, -1.5 sd, -1 sd, -0.5 sd, median and
# back up (normal_histogram_bps in tensorboard/plugins/distribution/compressor.py).
TB_PERCENTILES = (0.0, 6.68, 15.87, 30.85, 50.0, 69.15, 84.13, 93.32, 100.0)
MAX_STEPS = 50                 # TensorBoard's histogram plugin keeps 50 samples per tag
DRAWN_BINS = 30
BAND_COLOR = (31, 119, 180)
RIDGE_HEIGHT = 2.2             # a ridge's tallest bucket, in gaps between drawn steps


def percentiles(record: HistogramRecord,
                qs: Sequence[float] = TB_PERCENTILES) -> np.ndarray:
    """The values at percentiles `qs` (0..100) of the histogram, values spread evenly inside
    each bucket (the piecewise-linear CDF through the bucket edges), clamped to the recorded
    min and max where those are finite. NaN for every q when the histogram is empty."""
    edges = np.asarray(record.edges, dtype=np.float64)
    counts = np.asarray(record.counts, dtype=np.float64)
    cum = np.concatenate(([0.0], np.cumsum(counts)))
    total = cum[-1]
    if counts.size == 0 or not total > 0:
        return np.full(len(qs), np.nan)
    out = np.empty(len(qs))
    for k, q in enumerate(qs):
        target = total * min(max(float(q), 0.0), 100.0) / 100.0
        # The first non-empty bucket whose top reaches the target.
        bucket = int(np.flatnonzero((cum[1:] >= target) & (counts > 0))[0])
        fraction = (target - cum[bucket]) / counts[bucket]
        out[k] = edges[bucket] + min(max(fraction, 0.0), 1.0) * (edges[bucket + 1]
                                                                  - edges[bucket])
    low = record.min if math.isfinite(record.min) else -np.inf
    high = record.max if math.isfinite(record.max) else np.inf
    return np.clip(out, low, high) if low <= high else out


def sampled(records: Sequence[HistogramRecord], limit: int = MAX_STEPS
            ) -> list[HistogramRecord]:
    """At most `limit` records evenly spread over the steps, first and last kept."""
    if len(records) <= limit:
        return list(records)
    keep = np.unique(np.linspace(0, len(records) - 1, limit).round().astype(int))
    return [records[i] for i in keep]


def common_edges(records: Sequence[HistogramRecord], bins: int = DRAWN_BINS) -> np.ndarray:
    """Evenly spaced edges over every record's buckets (one x axis for all steps)."""
    lows = [r.edges[0] for r in records if r.edges and sum(r.counts) > 0]
    highs = [r.edges[-1] for r in records if r.edges and sum(r.counts) > 0]
    low, high = (min(lows), max(highs)) if lows else (0.0, 1.0)
    if not high > low:             # a constant tensor: one unit around its value
        low, high = low - 0.5, high + 0.5
    return np.linspace(low, high, bins + 1)


def rebinned(record: HistogramRecord, edges: np.ndarray) -> np.ndarray:
    """The record's counts moved onto `edges`, each bucket's count spread evenly over its
    width (a zero-width bucket puts all of it at its edge)."""
    own = np.asarray(record.edges, dtype=np.float64)
    counts = np.asarray(record.counts, dtype=np.float64)
    if counts.size == 0:
        return np.zeros(len(edges) - 1)
    cum = np.concatenate(([0.0], np.cumsum(counts)))
    at = np.interp(edges, own, cum, left=0.0, right=cum[-1])
    return np.diff(at)


def _centres(edges: np.ndarray) -> np.ndarray:
    return (edges[:-1] + edges[1:]) / 2


def _step_color(fraction: float) -> str:
    """Old steps light orange, new steps deep orange (TensorBoard's histogram colours)."""
    light, deep = np.array([255, 204, 153]), np.array([204, 85, 0])
    red, green, blue = (light + (deep - light) * fraction).round().astype(int)
    return f"rgb({red},{green},{blue})"


def _fraction(index: int, count: int) -> float:
    return index / (count - 1) if count > 1 else 1.0


def _layout(figure: go.Figure, title: str, height: int) -> go.Figure:
    figure.update_layout(
        title={"text": title, "x": 0.01}, height=height, hovermode="closest",
        margin={"l": 60, "r": 20, "t": 40, "b": 40}, plot_bgcolor="white", showlegend=False)
    figure.update_xaxes(gridcolor="#eee", zeroline=False)
    figure.update_yaxes(gridcolor="#eee", zeroline=False)
    return figure


def offset_figure(records: Sequence[HistogramRecord], title: str,
                  height: int = 420) -> go.Figure:
    """One filled ridge per step at that step's height on a downward step axis, oldest at
    the top (the back), newest at the bottom drawn last (the front)."""
    drawn = sampled(records)
    edges = common_edges(drawn)
    centres = _centres(edges)
    counts = [rebinned(r, edges) for r in drawn]
    tallest = max((c.max() for c in counts), default=0.0) or 1.0
    steps = [r.step for r in drawn]
    gap = (steps[-1] - steps[0]) / max(len(steps) - 1, 1) if steps else 1.0
    scale = RIDGE_HEIGHT * (gap or 1.0) / tallest
    traces = []
    for k, (record, values) in enumerate(zip(drawn, counts)):
        color = _step_color(_fraction(k, len(drawn)))
        ridge = record.step - values * scale
        traces.append(go.Scatter(
            x=np.concatenate((centres, centres[::-1])),
            y=np.concatenate((ridge, np.full(centres.size, float(record.step)))),
            fill="toself", fillcolor="rgba(255,255,255,0.85)", mode="lines",
            line={"color": color, "width": 1.2}, name=f"step {record.step}",
            hoveron="points", customdata=np.concatenate((values, np.zeros(centres.size))),
            hovertemplate=(f"step {record.step}<br>value %{{x:.4g}}<br>count "
                           "%{customdata:.4g}<extra></extra>")))
    figure = _layout(go.Figure(data=traces), title, height)
    figure.update_yaxes(title={"text": "step"}, autorange="reversed")
    figure.update_xaxes(title={"text": "value"})
    return figure


def overlay_figure(records: Sequence[HistogramRecord], title: str,
                   height: int = 420) -> go.Figure:
    """Every step's histogram on one axis, coloured light (old) to deep (new), newest on top;
    a colour bar gives the steps."""
    drawn = sampled(records)
    edges = common_edges(drawn)
    centres = _centres(edges)
    traces = []
    for k, record in enumerate(drawn):
        traces.append(go.Scatter(
            x=centres, y=rebinned(record, edges), mode="lines", name=f"step {record.step}",
            line={"color": _step_color(_fraction(k, len(drawn))), "width": 1.5},
            hovertemplate=(f"step {record.step}<br>value %{{x:.4g}}<br>count %{{y:.4g}}"
                           "<extra></extra>")))
    if drawn:
        steps = [r.step for r in drawn]
        traces.append(go.Scatter(
            x=[centres[0]], y=[0], mode="markers", hoverinfo="skip", name="steps",
            marker={"size": 0.1, "opacity": 0, "color": [steps[0]], "cmin": steps[0],
                    "cmax": steps[-1] if steps[-1] > steps[0] else steps[0] + 1,
                    "colorscale": [[0, _step_color(0.0)], [1, _step_color(1.0)]],
                    "showscale": True, "colorbar": {"title": {"text": "step"},
                                                    "thickness": 12}}))
    figure = _layout(go.Figure(data=traces), title, height)
    figure.update_xaxes(title={"text": "value"})
    figure.update_yaxes(title={"text": "count"}, rangemode="tozero")
    return figure


def histogram_figure(records: Sequence[HistogramRecord], title: str, mode: str = OFFSET,
                     height: int = 420) -> go.Figure:
    if mode not in MODES:
        raise ValueError(f"histogram mode must be one of {', '.join(MODES)}, got {mode!r}")
    return (offset_figure if mode == OFFSET else overlay_figure)(records, title, height)


def bands(records: Sequence[HistogramRecord]) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values [steps, 9]) of TB_PERCENTILES per step (every step, not sampled)."""
    steps = np.array([r.step for r in records], dtype=np.int64)
    values = np.array([percentiles(r) for r in records]).reshape(len(records),
                                                                  len(TB_PERCENTILES))
    return steps, values


def distribution_figure(records: Sequence[HistogramRecord], title: str,
                        height: int = 420) -> go.Figure:
    """Nested filled bands over steps, darker towards the middle: [0, 100], [6.68, 93.32],
    [15.87, 84.13], [30.85, 69.15] percentiles, and the median as a line."""
    steps, values = bands(records)
    count = len(TB_PERCENTILES)
    red, green, blue = BAND_COLOR
    traces = []
    for k in range(count // 2):
        low, high = values[:, k], values[:, count - 1 - k]
        label = f"{TB_PERCENTILES[k]:g}–{TB_PERCENTILES[count - 1 - k]:g}%"
        traces.append(go.Scatter(x=steps, y=low, mode="lines", line={"width": 0},
                                 hoverinfo="skip", name=f"{label} low"))
        traces.append(go.Scatter(
            x=steps, y=high, mode="lines", line={"width": 0}, fill="tonexty",
            fillcolor=f"rgba({red},{green},{blue},{0.15 + 0.15 * k:.2f})", name=label,
            customdata=low, hovertemplate=(f"step %{{x}}<br>{label}: %{{customdata:.4g}} to "
                                           "%{y:.4g}<extra></extra>")))
    traces.append(go.Scatter(
        x=steps, y=values[:, count // 2], mode="lines", name="median",
        line={"color": f"rgb({red},{green},{blue})", "width": 2},
        hovertemplate="step %{x}<br>median %{y:.4g}<extra></extra>"))
    figure = _layout(go.Figure(data=traces), title, height)
    figure.update_xaxes(title={"text": "step"})
    figure.update_yaxes(title={"text": "value"})
    return figure
