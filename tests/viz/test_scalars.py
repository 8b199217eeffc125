"""Smoothing against a hand-computed debiased EMA, downsampling, and the curves figure."""

from __future__ import annotations

import numpy as np
import pytest

from viz.scalars import (
    BUCKET_PX,
    MAX_POINTS,
    PLOT_AREA_PX,
    downsample,
    downsample_indices,
    scalar_curve,
    scalars_figure,
    smooth,
    subplot_points,
)


def test_smoothing_matches_the_debiased_ema_by_hand():
    # w = 0.5: ema1 = 0.5*1 = 0.5 -> /0.5 = 1; ema2 = 0.25 + 1.5 = 1.75 -> /0.75 = 7/3;
    # ema3 = 0.875 + 0.5 = 1.375 -> /0.875 = 11/7.
    assert smooth([1.0, 3.0, 1.0], 0.5) == pytest.approx([1.0, 7 / 3, 11 / 7])


def test_zero_weight_is_the_raw_series_and_constants_stay_flat():
    assert smooth([3.0, 1.0, 2.0], 0.0) == pytest.approx([3.0, 1.0, 2.0])
    assert list(smooth([2.0] * 5, 0.9)) == [2.0] * 5


def test_non_finite_points_pass_through_without_poisoning_the_average():
    out = smooth([1.0, np.nan, 3.0], 0.5)
    assert np.isnan(out[1])
    assert out[2] == pytest.approx(7 / 3)


def test_weight_out_of_range_is_refused():
    with pytest.raises(ValueError, match="smoothing"):
        smooth([1.0], 1.0)


def test_downsampling_keeps_first_last_min_and_max():
    rng = np.random.default_rng(0)
    values = rng.normal(size=100_000)
    values[12_345] = 50.0
    values[67_890] = -50.0
    keep = downsample_indices(values, 2000)
    assert len(keep) <= 2000
    assert {0, 99_999, 12_345, 67_890} <= set(keep.tolist())
    assert np.all(np.diff(keep) > 0)
    steps, kept = downsample(np.arange(100_000) * 10, values, 2000)
    assert steps[0] == 0 and steps[-1] == 999_990
    assert kept.max() == 50.0 and kept.min() == -50.0


def test_short_series_are_untouched():
    assert downsample_indices([1.0, 2.0, 3.0]).tolist() == [0, 1, 2]


def test_figure_has_one_bold_curve_per_run_and_faint_raw_curves():
    series = {
        "run_b": (np.arange(50), np.linspace(2.0, 0.1, 50)),
        "run_a": (np.arange(50), np.linspace(3.0, 0.5, 50)),
    }
    figure = scalars_figure(series, "loss", smoothing=0.6)
    bold = [t for t in figure.data if t.showlegend is not False]
    assert [t.name for t in bold] == ["run_a", "run_b"]
    assert all(t.line.width > 2 for t in bold)
    faint = [t for t in figure.data if t.showlegend is False]
    assert len(faint) == 2 and all("rgba" in t.line.color for t in faint)
    assert bold[0].y[-1] != pytest.approx(0.5)
    raw_only = scalars_figure(series, "loss", smoothing=0.0)
    assert len(raw_only.data) == 2
    assert raw_only.data[0].y[-1] == pytest.approx(0.5)
    assert figure.layout.title.text == "loss"


def _smooth_by_loop(values, weight):
    """TensorBoard's definition, point by point: the reference for the vectorized one."""
    out, last, seen = [], 0.0, 0
    for value in values:
        if not np.isfinite(value):
            out.append(value)
            continue
        last = last * weight + (1.0 - weight) * value
        seen += 1
        out.append(last / (1.0 - weight ** seen))
    return np.asarray(out)


@pytest.mark.parametrize("weight", [0.0, 0.3, 0.6, 0.95, 0.999])
def test_vectorized_smoothing_equals_the_point_by_point_definition(weight):
    rng = np.random.default_rng(7)
    values = rng.normal(size=2000).cumsum()
    values[rng.choice(2000, 40, replace=False)] = np.nan
    values[[3, 700, 1999]] = [np.inf, -np.inf, np.nan]
    np.testing.assert_allclose(smooth(values, weight), _smooth_by_loop(values, weight),
                               rtol=1e-9, atol=1e-9)


def _downsample_by_loop(values, max_points):
    """The bucket-by-bucket definition: the reference for the vectorized downsampling."""
    raw = np.asarray(values, dtype=np.float64)
    if raw.size <= max_points:
        return np.arange(raw.size)
    keep = {0, raw.size - 1}
    for bucket in np.array_split(np.arange(1, raw.size - 1), (max_points - 2) // 2):
        chunk = raw[bucket]
        if np.isfinite(chunk).any():
            masked = np.where(np.isfinite(chunk), chunk, np.nan)
            keep.update((bucket[np.nanargmin(masked)], bucket[np.nanargmax(masked)]))
        else:
            keep.add(bucket[0])
    return np.array(sorted(keep))


@pytest.mark.parametrize("count, max_points", [(2001, 2000), (2003, 2000), (5000, 10),
                                               (100_000, 2000), (12_345, 77), (9, 4)])
def test_vectorized_downsampling_equals_the_bucket_by_bucket_definition(count, max_points):
    rng = np.random.default_rng(count)
    series = [rng.normal(size=count), np.round(rng.normal(size=count))]  # ties too
    holed = rng.normal(size=count)
    holed[rng.random(count) < 0.3] = np.nan
    holed[rng.random(count) < 0.1] = np.inf
    holed[: count // 3] = np.nan                       # whole buckets without a finite value
    for values in series + [holed]:
        np.testing.assert_array_equal(downsample_indices(values, max_points),
                                      _downsample_by_loop(values, max_points))


def test_a_curve_is_smoothed_over_every_point_then_downsampled():
    values = np.random.default_rng(3).normal(size=10_000).cumsum()
    curve = scalar_curve(np.arange(10_000) * 2, values, 0.9, max_points=500)
    keep = downsample_indices(values, 500)
    np.testing.assert_array_equal(curve.steps, keep * 2)
    np.testing.assert_array_equal(curve.raw, values[keep])
    np.testing.assert_allclose(curve.smoothed, smooth(values, 0.9)[keep])
    assert scalar_curve([0, 1], [1.0, 3.0], 0.0).smoothed.tolist() == [1.0, 3.0]


def test_a_subplot_keeps_a_bucket_every_two_pixels_of_its_width():
    """One column (about 1,180 px at 1280): MAX_POINTS; two (about 540 px each): 544."""
    assert subplot_points(1) == MAX_POINTS == 1200
    assert subplot_points(2) == subplot_points(7) == 544
    assert (subplot_points(2) - 2) // 2 * BUCKET_PX <= PLOT_AREA_PX * 0.46
