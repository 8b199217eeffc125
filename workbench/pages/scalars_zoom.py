"""The Scalars page's zoom fetching: a zoom (a relayout's x range) re-reads each curve's
points in that range at full resolution, downsampled again to the same budget (extremes
kept); an autorange (double click) restores the whole view. The zoom is one x range for
every subplot, kept in a store and in the address (`from`, `to`)."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from viz.scalars import RELATIVE, STEP, WALL, X_AXES, Curve, relative_unit_of
from workbench import data, inputs

ZOOM_STORE = "scalars-zoom-store"
# The relayout that last asked something of the x axes ({"relayout": ..., "n": count}),
# written in the browser from the plots' relayout events (assets/scalars.js): the zoom
# fetch's input.
ZOOM_ASK_STORE = "scalars-zoom-ask-store"
MAX_END_CHARS = 40
# Plotly's x axes of the subplots: xaxis, xaxis2, ... (tags_figure's names).
_X_RANGE = re.compile(r"^xaxis(\d{0,3})\.range(?:\[([01])\])?$")
_X_AUTO = re.compile(r"^xaxis(\d{0,3})\.autorange$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}(?::\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?)?$")
RESET = "reset"


def relayout_zoom(relayout: Any) -> tuple[Any, Any] | str | None:
    """What a relayout event asks of the x axes: (from, to) as plotly gave them (numbers, or
    date text on a wall-time axis), RESET for an autorange (a double click), None for
    anything else (a resize, a y-only zoom, junk)."""
    if not isinstance(relayout, dict):
        return None
    ends: dict[str, list] = {}
    for key, value in relayout.items():
        if not isinstance(key, str):
            continue
        if _X_AUTO.match(key) and value is True:
            return RESET
        found = _X_RANGE.match(key)
        if not found:
            continue
        axis = found.group(1)
        if found.group(2) is None:
            if isinstance(value, (list, tuple)) and len(value) == 2:
                ends[axis] = list(value)
        else:
            ends.setdefault(axis, [None, None])[int(found.group(2))] = value
    for pair in ends.values():
        if all(end is not None for end in pair):
            return pair[0], pair[1]
    return None


def asked_relayout(asked: Any) -> Any:
    """The relayout a zoom-ask store holds (None for none or a malformed store)."""
    return asked.get("relayout") if isinstance(asked, dict) else None


def relayout_values(relayout: Any) -> dict[str, list]:
    """The value ranges a relayout set ({"yaxis2": [low, high], ...}, unchecked): a drag's
    box sets them with the x range, and the redrawn figure states them, so the plot keeps
    them whatever order plotly's redraws come in (live.kept_zoom checks them)."""
    if not isinstance(relayout, dict):
        return {}
    ends: dict[str, list] = {}
    for key, value in relayout.items():
        found = _Y_RANGE.match(key) if isinstance(key, str) else None
        if not found:
            continue
        axis = f"yaxis{found.group(1)}"
        if found.group(2) is None:
            if isinstance(value, (list, tuple)) and len(value) == 2:
                ends[axis] = list(value)
        else:
            ends.setdefault(axis, [None, None])[int(found.group(2))] = value
    return ends


_Y_RANGE = re.compile(r"^yaxis(\d{0,3})\.range(?:\[([01])\])?$")


def checked_zoom(zoom: Any, x_axis: str) -> tuple[Any, Any] | None:
    """The (from, to) of a zoom store or address pair for the `x_axis` shown: numbers on the
    step and relative axes, dates (text) on the wall axis, ascending; None for no zoom or
    one made on another axis. BadInput names what is wrong with a bad one."""
    if zoom is None:
        return None
    if not isinstance(zoom, dict) or set(zoom) != {"axis", "from", "to"}:
        raise inputs.BadInput(f"A zoom must be {{axis, from, to}}, got {inputs.clipped(zoom)}")
    if zoom["axis"] not in X_AXES:
        raise inputs.BadInput(f"A zoom's axis must be one of {', '.join(X_AXES)}, got "
                              f"{inputs.clipped(zoom['axis'])}")
    if zoom["axis"] != x_axis:
        return None
    low, high = (x_end(zoom[end], x_axis, end) for end in ("from", "to"))
    seconds = (wall_seconds(low), wall_seconds(high)) if x_axis == WALL else (low, high)
    return (low, high) if seconds[0] <= seconds[1] else (high, low)


def zoom_or_none(zoom: Any, x_axis: str) -> tuple[Any, Any] | None:
    """checked_zoom's (from, to), or None for a bad zoom as for none: where a page reads a
    zoom it did not just receive (the address, its own store) and draws unzoomed instead."""
    try:
        return checked_zoom(zoom, x_axis)
    except inputs.BadInput:
        return None


def x_end(value: Any, x_axis: str, what: str = "end") -> Any:
    """One end of a zoom on `x_axis`, checked: a finite number, or on the wall axis also a
    date as plotly writes one ("2026-12-02 15:35:15.123"). Address text is read as such."""
    if isinstance(value, str) and x_axis != WALL:
        try:
            value = float(value) if len(value) <= MAX_END_CHARS else value
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise inputs.BadInput(f"The zoom's {what} must be a number, got "
                              f"{inputs.clipped(value)}")
    if isinstance(value, str):
        if x_axis != WALL or len(value) > MAX_END_CHARS or not _DATE.match(value.strip()):
            kind = "a number or a date" if x_axis == WALL else "a number"
            raise inputs.BadInput(f"The zoom's {what} must be {kind}, got "
                                  f"{inputs.clipped(value)}")
        wall_seconds(value)
        return value.strip()
    if not math.isfinite(value) or abs(value) > 1e18:
        raise inputs.BadInput(f"The zoom's {what} must be a finite number, got "
                              f"{inputs.clipped(value)}")
    return value


def wall_seconds(value: Any) -> float:
    """Seconds since the epoch of a wall-axis end: plotly's date text (UTC, as the figure
    draws wall times) or milliseconds since the epoch."""
    if not isinstance(value, str):
        return float(value) / 1e3
    try:
        moment = np.datetime64(value.strip().replace(" ", "T"), "ns")
    except ValueError as exc:
        raise inputs.BadInput(f"The zoom's end is not a date: {inputs.clipped(value)}") from exc
    return float(moment.astype(np.int64)) / 1e9


def zoomed_tag(by_run: dict[str, Curve], tag: str, weight: float, points: int, x_axis: str,
               ends: tuple[Any, Any]) -> dict[str, Curve]:
    """Each run's curve of `tag` (its whole view in `by_run`) re-read in the zoomed range."""
    if x_axis == WALL:
        by, low, high = WALL, wall_seconds(ends[0]), wall_seconds(ends[1])
    elif x_axis == RELATIVE:
        unit, _ = relative_unit_of(by_run)      # the axis's unit, from the whole view
        by, low, high = RELATIVE, float(ends[0]) * unit, float(ends[1]) * unit
    else:
        by, low, high = STEP, float(ends[0]), float(ends[1])
    return {run: data.zoomed_curve(run, tag, weight, points, by, low, high)
            for run in by_run}


def state_range(figure, ends: tuple[Any, Any] | None) -> None:
    """Every subplot's x axis set to the zoom (or to autorange with none): plotly's
    uirevision keeps the axis a drag changed, the others are told."""
    update = ({"range": list(ends), "autorange": False} if ends is not None
              else {"autorange": True})
    figure.update_layout({axis: update for axis in figure.layout.to_plotly_json()
                          if _X_AXIS.match(axis)})


_X_AXIS = re.compile(r"^xaxis\d{0,3}$")
