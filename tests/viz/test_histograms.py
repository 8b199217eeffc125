"""viz.histograms: TensorBoard's percentiles from buckets (against numpy on known data), the
offset and overlay traces, the distribution bands; and that it needs neither dash nor torch."""

from __future__ import annotations

import numpy as np
import pytest

from engine.record.schema import HistogramRecord
from viz.histograms import (
    MAX_STEPS,
    TB_PERCENTILES,
    bands,
    common_edges,
    distribution_figure,
    histogram_figure,
    overlay_figure,
    percentiles,
    rebinned,
    sampled,
)


def record_of(values, step: int = 0, bins: int = 30) -> HistogramRecord:
    """As RunWriter.histogram stores it: np.histogram buckets, min/max/sum over values."""
    values = np.asarray(values, dtype=np.float64)
    counts, edges = np.histogram(values, bins=bins)
    return HistogramRecord("w", step, 1000.0 + step, tuple(edges.tolist()),
                           tuple(counts.astype(float).tolist()), float(values.min()),
                           float(values.max()), float(values.sum()), int(values.size))


def test_percentiles_of_evenly_spread_values_match_numpy():
    # 0.5, 1.5, ..., 9999.5 in 100 buckets of width 100: spread evenly within every bucket,
    # so the bucket interpolation is numpy's percentile up to half a value's spacing.
    values = np.arange(10_000) + 0.5
    found = percentiles(record_of(values, bins=100))
    expected = np.percentile(values, TB_PERCENTILES)
    np.testing.assert_allclose(found, expected, atol=0.51)
    assert found[0] == 0.5 and found[-1] == 9999.5          # clamped to the recorded min/max


def test_percentiles_of_normal_values_are_within_a_bucket_of_numpy():
    values = np.random.default_rng(0).normal(3.0, 2.0, 100_000)
    record = record_of(values, bins=200)
    width = record.edges[1] - record.edges[0]
    np.testing.assert_allclose(percentiles(record), np.percentile(values, TB_PERCENTILES),
                               atol=width)
    # The median of a normal sits at its mean; the 15.87/84.13 ones a standard deviation out.
    p = dict(zip(TB_PERCENTILES, percentiles(record)))
    assert p[50.0] == pytest.approx(3.0, abs=0.03)
    assert p[84.13] - p[15.87] == pytest.approx(4.0, abs=0.05)


def test_percentiles_interpolate_inside_a_bucket_and_skip_empty_ones():
    record = HistogramRecord("w", 0, 0.0, (0.0, 1.0, 2.0, 3.0, 4.0), (0.0, 4.0, 0.0, 4.0),
                             0.0, 4.0, 16.0, 8)
    assert percentiles(record, (0, 25, 50, 75, 100)).tolist() == [1.0, 1.5, 2.0, 3.5, 4.0]


def test_percentiles_of_an_empty_histogram_are_nan():
    record = HistogramRecord("w", 0, 0.0, (0.0, 1.0), (0.0,), float("nan"), float("nan"), 0.0, 0)
    assert np.isnan(percentiles(record)).all()


def test_rebinned_keeps_the_total_and_spreads_evenly():
    record = HistogramRecord("w", 0, 0.0, (0.0, 2.0), (10.0,), 0.0, 2.0, 10.0, 10)
    edges = np.array([0.0, 0.5, 1.0, 4.0])
    assert rebinned(record, edges).tolist() == [2.5, 2.5, 5.0]


def test_sampled_keeps_first_and_last_and_at_most_the_limit():
    records = [record_of([float(s)], step=s) for s in range(200)]
    kept = sampled(records)
    assert len(kept) == MAX_STEPS
    assert kept[0].step == 0 and kept[-1].step == 199
    assert [r.step for r in kept] == sorted({r.step for r in kept})


def _steps(n: int = 5) -> list[HistogramRecord]:
    rng = np.random.default_rng(1)
    return [record_of(rng.normal(s, 1.0, 500), step=10 * s) for s in range(n)]


def test_offset_draws_one_ridge_per_step_newest_last_on_a_downward_step_axis():
    records = _steps()
    figure = histogram_figure(records, "w", "offset")
    assert [t.name for t in figure.data] == [f"step {r.step}" for r in records]
    assert all(t.fill == "toself" for t in figure.data)
    assert figure.layout.yaxis.autorange == "reversed"
    edges = common_edges(records)
    for trace, record in zip(figure.data, records):
        bins = len(edges) - 1
        base = np.asarray(trace.y)[bins:]
        ridge = np.asarray(trace.y)[:bins]
        assert (base == record.step).all()             # the ridge stands on its own step
        assert (ridge <= record.step).all()            # and rises towards the older ones
        np.testing.assert_allclose(np.asarray(trace.customdata)[:bins],
                                   rebinned(record, edges))
    colors = [t.line.color for t in figure.data]
    assert colors[0] != colors[-1]


def test_overlay_draws_every_step_on_one_axis_with_a_step_colour_bar():
    records = _steps()
    figure = overlay_figure(records, "w")
    lines, bar = figure.data[:-1], figure.data[-1]
    assert [t.name for t in lines] == [f"step {r.step}" for r in records]
    edges = common_edges(records)
    for trace, record in zip(lines, records):
        assert sum(trace.y) == pytest.approx(sum(record.counts))
        np.testing.assert_allclose(trace.x, (edges[:-1] + edges[1:]) / 2)
    assert bar.marker.showscale and (bar.marker.cmin, bar.marker.cmax) == (0, 40)


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="offset, overlay"):
        histogram_figure(_steps(), "w", "stacked")


def test_distribution_bands_nest_around_the_median():
    records = _steps()
    steps, values = bands(records)
    assert steps.tolist() == [0, 10, 20, 30, 40]
    assert (np.diff(values, axis=1) >= 0).all()        # each percentile above the last
    figure = distribution_figure(records, "w")
    # 4 bands (low edge + filled high edge) and the median line.
    assert len(figure.data) == 9
    highs = figure.data[1:8:2]
    assert all(t.fill == "tonexty" for t in highs)
    opacities = [float(t.fillcolor.rsplit(",", 1)[1].rstrip(")")) for t in highs]
    assert opacities == sorted(opacities) and opacities[0] < opacities[-1]
    np.testing.assert_allclose(figure.data[0].y, values[:, 0])       # min
    np.testing.assert_allclose(figure.data[1].y, values[:, 8])       # max
    median = figure.data[-1]
    assert median.name == "median"
    np.testing.assert_allclose(median.y, [percentiles(r, (50,))[0] for r in records])
    np.testing.assert_allclose(median.y, [r.step / 10 for r in records], atol=0.2)


@pytest.mark.parametrize("bins, values", [
    (30, np.random.default_rng(0).normal(0.0, 1.0, 5000)),
    (7, np.random.default_rng(1).exponential(1.0, 300)),
    (100, np.arange(1000.0)),
])
def test_percentiles_match_tensorboards_distribution_compressor(bins, values):
    compressor = pytest.importorskip("tensorboard.plugins.distribution.compressor")
    record = record_of(values, bins=bins)
    buckets = list(zip(record.edges[:-1], record.edges[1:], record.counts))
    expected = [value for _, value in compressor.compress_histogram(buckets)]
    assert [bp / 100 for bp in compressor.NORMAL_HISTOGRAM_BPS] == list(TB_PERCENTILES)
    np.testing.assert_allclose(percentiles(record), expected, rtol=0, atol=1e-9)
