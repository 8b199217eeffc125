"""The scalars figure's three horizontal axes (step, relative time in a readable unit, wall
time), the log value axis, and the full-resolution CSV / TensorBoard-JSON exports."""

import csv
import io
import json

import numpy as np
import plotly.graph_objects as go
import pytest

from viz.scalars import (
    RELATIVE,
    STEP,
    WALL,
    curves_figure,
    mark_step,
    relative_unit,
    scalar_curve,
    series_csv,
    series_json,
    tags_figure,
)

T0 = 1_790_000_000.0


def _curve(steps, values, walls, smoothing=0.0):
    return scalar_curve(np.asarray(steps), np.asarray(values), smoothing,
                        wall_times=np.asarray(walls, dtype=np.float64))


def test_relative_time_reads_in_seconds_minutes_or_hours():
    assert relative_unit(90.0) == (1.0, "seconds")
    assert relative_unit(600.0) == (60.0, "minutes")
    assert relative_unit(5 * 3600.0) == (3600.0, "hours")


def test_each_horizontal_axis_places_the_points_and_names_itself():
    curve = _curve([0, 10, 20], [3.0, 2.0, 1.0], [T0, T0 + 300.0, T0 + 900.0])
    by_step = curves_figure({"a": curve}, "loss", x_axis=STEP)
    assert list(by_step.data[0].x) == [0, 10, 20]
    assert by_step.layout.xaxis.title.text == "step"
    relative = curves_figure({"a": curve}, "loss", x_axis=RELATIVE)
    np.testing.assert_allclose(relative.data[0].x, [0.0, 5.0, 15.0])      # minutes
    assert relative.layout.xaxis.title.text == "relative time (minutes)"
    wall = curves_figure({"a": curve}, "loss", x_axis=WALL)
    assert np.asarray(wall.data[0].x).dtype.kind == "M"                    # datetimes
    assert str(np.asarray(wall.data[0].x)[1]) == str(np.datetime64(int((T0 + 300) * 1e3),
                                                                    "ms"))
    # Hover names the step whatever the axis.
    assert list(wall.data[0].customdata) == [0, 10, 20]
    assert "step %{customdata}" in wall.data[0].hovertemplate


def test_relative_time_starts_each_run_at_zero():
    a = _curve([0, 1], [1.0, 2.0], [T0, T0 + 30.0])
    b = _curve([0, 1], [1.0, 2.0], [T0 + 500.0, T0 + 560.0])
    figure = curves_figure({"a": a, "b": b}, "loss", x_axis=RELATIVE)
    assert [list(trace.x) for trace in figure.data] == [[0.0, 30.0], [0.0, 60.0]]


def test_log_scale_and_a_bad_axis():
    curve = _curve([0, 1], [1.0, 100.0], [T0, T0 + 1])
    assert curves_figure({"a": curve}, "loss", log_y=True).layout.yaxis.type == "log"
    assert curves_figure({"a": curve}, "loss").layout.yaxis.type == "linear"
    with pytest.raises(ValueError, match="x_axis must be one of step, relative, wall"):
        curves_figure({"a": curve}, "loss", x_axis="epoch")


def test_downsampling_keeps_the_wall_times_of_the_kept_points():
    steps = np.arange(100_000)
    values = np.sin(steps / 50.0)
    values[77_777] = 40.0
    curve = _curve(steps, values, T0 + steps * 0.5)
    assert curve.steps.size <= 2000 and 77_777 in curve.steps
    np.testing.assert_allclose(curve.wall_times, T0 + curve.steps * 0.5)


def _series():
    return [("run a", "loss", np.array([1, 2]), np.array([T0, T0 + 1.25]),
             np.array([0.5, np.nan])),
            ("b,c", "acc", np.array([7]), np.array([T0 + 2]), np.array([1.0 / 3.0]))]


def test_csv_export_has_every_point_at_full_precision():
    rows = list(csv.reader(io.StringIO(series_csv(_series()))))
    assert rows[0] == ["run", "tag", "step", "wall_time", "value"]
    assert rows[1] == ["run a", "loss", "1", repr(T0), "0.5"]
    assert rows[2][4] == "nan"
    assert rows[3][:3] == ["b,c", "acc", "7"] and float(rows[3][4]) == 1.0 / 3.0


def test_json_export_is_tensorboards_wall_step_value_rows():
    doc = json.loads(series_json(_series()))
    assert doc == {"run a": {"loss": [[T0, 1, 0.5], [T0 + 1.25, 2, None]]},
                   "b,c": {"acc": [[T0 + 2, 7, 1.0 / 3.0]]}}


def test_a_marked_step_stands_where_the_run_logged_it_or_where_it_stopped():
    from viz.scalars import mark_step

    curve = _curve([0, 10, 20], [3.0, 2.0, 1.0], [T0, T0 + 60.0, T0 + 120.0])
    at_step = mark_step(curves_figure({"a": curve}, "loss"), {"a": curve}, 15)
    assert at_step.layout.shapes[0].x0 == 15
    assert at_step.layout.annotations[0].text == "step 15"
    # The failing step logged no value: on a time axis, the line stands at the last point.
    beyond = mark_step(curves_figure({"a": curve}, "loss", x_axis=RELATIVE), {"a": curve}, 99,
                       RELATIVE)
    assert beyond.layout.shapes[0].x0 == 120.0
    within = mark_step(curves_figure({"a": curve}, "loss", x_axis=RELATIVE), {"a": curve}, 10,
                       RELATIVE)
    assert within.layout.shapes[0].x0 == 60.0


@pytest.mark.parametrize("axis", [STEP, RELATIVE, WALL])
@pytest.mark.parametrize("log_y", [False, True])
def test_the_figure_built_unchecked_is_one_plotly_accepts(axis, log_y):
    """curves_figure skips plotly.py's per-property checks for speed: every property it sets
    must still be one plotly knows, with a value it accepts (the checked rebuild raises
    otherwise), and the axis types are given instead of left to guess."""
    curves = {run: _curve(range(10), np.linspace(1, 2, 10) * (k + 1), T0 + np.arange(10.0),
                          0.6) for k, run in enumerate(("a", "b"))}
    figure = mark_step(curves_figure(curves, "loss", x_axis=axis, log_y=log_y), curves, 4,
                       axis)
    checked = go.Figure(figure.to_plotly_json())
    assert json.loads(checked.to_json()) == json.loads(figure.to_json())
    assert figure.layout.xaxis.type == ("date" if axis == WALL else "linear")
    assert len(figure.layout.template.to_plotly_json().get("layout", {})) == 0


def test_tags_share_one_figure_a_subplot_each():
    """tags_figure: each tag its own axes (its own relative-time unit), the subplots in a
    grid of two columns, nothing above plotly's schema (checked with validation on)."""
    short = _curve([0, 1, 2], [3.0, 2.0, 1.0], [T0, T0 + 30.0, T0 + 60.0])
    long = _curve([0, 10, 20], [1.0, 2.0, 4.0], [T0, T0 + 600.0, T0 + 1200.0])
    by_tag = {"loss": {"a": short}, "lr": {"a": long, "b": short}, "acc": {"b": long}}
    for axis in (STEP, RELATIVE, WALL):
        go.Figure(tags_figure(by_tag, x_axis=axis, marked_step=10).to_dict())   # validates
    figure = tags_figure(by_tag, x_axis=RELATIVE, log_y=True, marked_step=10)
    layout = figure.layout
    assert layout.xaxis.title.text == "relative time (seconds)"
    assert layout.xaxis2.title.text == "relative time (minutes)"
    assert layout.xaxis3.domain == layout.xaxis.domain             # third: under the first
    assert layout.yaxis3.domain[1] < layout.yaxis.domain[0]
    assert layout.yaxis2.type == "log"
    assert [a.text for a in layout.annotations][-3:] == ["loss", "lr", "acc"]
    assert [t.name for t in figure.data if t.showlegend is not False] == ["a", "b"]
    single = tags_figure({"loss": {"a": short}})
    assert single.layout.xaxis.domain == (0.0, 1.0) and "xaxis2" not in single.to_dict()["layout"]
    with pytest.raises(ValueError, match="x_axis must be one of"):
        tags_figure(by_tag, x_axis="epoch")
