"""Live follow, without Dash or viz: what the run-status banner says about a run (running,
finished, stopped unexpectedly), the cheap fingerprint of what a page shows of a run, so
a page's refresh can tell whether anything changed since its last poll, and the user's zoom
carried over into a refreshed figure."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from engine.record.schema import DAMAGED, FINISHED, INTERRUPTED, RUNNING, UNREADABLE, RunInfo
from workbench import data

LIVE_MS = 2000                 # how often a page polls while a run it shows is running
MAX_FOLLOWED = 8               # runs one page follows at once (a banner line each)
MAX_EXCEPTION_CHARS = 300      # of the writer's exception, on the banner
UNKNOWN = "unknown"            # the banner state of a run that could not be read this poll
MAX_RANGE_TEXT = 40            # a range end as text: a date on a wall-time axis
_AXIS = re.compile(r"^[xy]axis\d{0,2}$")

# The parts of a run a page can follow: each cheap (a count or a short list, read through the
# data module's cache) and JSON-plain, since the fingerprint makes a round trip to the browser.
Part = Callable[[str, RunInfo], Any]
PARTS: dict[str, Part] = {
    "steps": lambda name, info: info.num_steps,
    "tags": lambda name, info: list(info.tags),
    "graph": lambda name, info: data.graph_versions(name),
    "traced": lambda name, info: len(data.traced_steps(name)),
    "alerts": lambda name, info: len(data.alerts(name)),
    "placements": lambda name, info: len(data.placements(name)),
    "histogram_tags": lambda name, info: data.histogram_tags(name),
    "image_tags": lambda name, info: data.image_tags(name),
    "text_tags": lambda name, info: data.text_tags(name),
    "pruning": lambda name, info: _pruning(name),
    "quantization": lambda name, info: _quantization(name),
}


def _pruning(name: str) -> list:
    """Sensitivity points, prune stages and the compression record's seq (Pruning page)."""
    figures = data.compression(name)
    return [sum(len(points) for points in data.sensitivity_curves(name).values()),
            len(data.prune_stages(name)), None if figures is None else figures.seq]


def _quantization(name: str) -> list:
    """Comparisons (by name and graph versions), cost rows and graph versions (Quantization
    page)."""
    return [[[c.name, c.original_graph_version, c.quantized_graph_version, c.seq]
             for c in data.quantization_comparisons(name)],
            len(data.quantization_costs(name)), data.graph_versions(name)]


def clock(stamp: float, now: float) -> str:
    """A wall time as the banner shows it: the time of day, with the date when not today."""
    local = time.localtime(stamp)
    if time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d", time.localtime(now)):
        return time.strftime("%H:%M:%S", local)
    return time.strftime("%Y-%m-%d %H:%M:%S", local)


def ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 7200:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"


def _steps(count: int) -> str:
    return f"{count:,} step" + ("" if count == 1 else "s")


def _last_step(info: RunInfo) -> str:
    return f"last step {info.num_steps - 1:,}" if info.num_steps else "no step recorded"


def status_line(info: RunInfo, now: float | None = None) -> tuple[str, str]:
    """(what the banner says, its state: running, finished, interrupted, damaged or
    unreadable) for a run's info; the writer's exception follows when it recorded one."""
    now = time.time() if now is None else now
    updated = info.updated if isinstance(info.updated, (int, float)) else None
    if info.status == RUNNING:
        step = f"step {info.num_steps - 1:,}" if info.num_steps else "no step yet"
        wrote = f", last write {ago(now - updated)}" if updated is not None else ""
        text = f"● running: {step}{wrote}"
    elif info.status == FINISHED:
        when = f" at {clock(updated, now)}" if updated is not None else ""
        text = f"finished{when} after {_steps(info.num_steps)}"
    elif info.status == INTERRUPTED:
        since = f": no write since {clock(updated, now)}" if updated is not None else ""
        text = f"stopped unexpectedly{since} ({_last_step(info)})"
    elif info.status in (DAMAGED, UNREADABLE):
        text = f"{info.status}: {data.shown(info.error or 'no reason recorded')}"
    else:
        text = f"status {info.status}"
    if info.exception:
        exception = info.exception.strip().splitlines()[-1][:MAX_EXCEPTION_CHARS]
        text += f"; the writer recorded an exception: {exception}"
    return text, info.status


def fingerprint(name: str, info: RunInfo, parts: Iterable[str]) -> dict:
    """The run's status and the chosen parts' values: what a page shows of the run changed
    when (and, as far as the parts reach, only when) this does."""
    found: dict[str, Any] = {"status": info.status}
    for part in parts:
        try:
            found[part] = PARTS[part](name, info)
        except Exception:  # noqa: BLE001 -- the page's own callbacks tell what is wrong
            found[part] = None
    return found


def changed(previous: Any, current: dict[str, dict]) -> list[str]:
    """The parts (status included) that differ between two polls' fingerprints, by run;
    every part when the runs followed are not the same ones, or nothing came before."""
    every = sorted({part for found in current.values() for part in found} | {"runs"})
    if not isinstance(previous, dict) or set(previous) != set(current):
        return every
    return sorted({part for name, found in current.items() for part, value in found.items()
                   if not isinstance(previous[name], dict)
                   or previous[name].get(part) != value})


def is_running(states: Iterable[str]) -> bool:
    return RUNNING in set(states)



def _range_end(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return value == value and abs(value) != float("inf")
    return isinstance(value, str) and 0 < len(value) <= MAX_RANGE_TEXT


def _pair(value: Any) -> list | None:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(map(_range_end, value)):
        return list(value)
    return None


def zoomed_axes(zoom: Any) -> dict[str, list]:
    """Axis -> [low, high] of a plot's zoom as the page's zoom store holds it ({"xaxis":
    [low, high], ...}, merged in the browser from its relayouts), checked: axes by plotly's
    names, ends numbers or short text (a date on a wall-time axis)."""
    if not isinstance(zoom, dict):
        return {}
    return {axis: list(ends) for axis, ends in zoom.items()
            if isinstance(axis, str) and _AXIS.match(axis) and _pair(ends)}


def kept_zoom(figure: Any, zoom: Any) -> Any:
    """The refreshed figure with the user's zoom set on it: plotly's uirevision keeps only
    what a drag changed, and only while the figure's own ranges stay as they were, so the
    zoom is stated outright. A go.Figure or a figure dict."""
    axes = zoomed_axes(zoom)
    if not axes:
        return figure
    update = {axis: {"range": ends, "autorange": False} for axis, ends in axes.items()}
    if hasattr(figure, "update_layout"):
        figure.update_layout(update)
        return figure
    layout = figure.setdefault("layout", {})
    for axis, value in update.items():
        layout[axis] = {**layout.get(axis, {}), **value}
    return figure
