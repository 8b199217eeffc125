"""The workbench's one door to recorded runs: resolves run names inside the log directory
and caches reader queries keyed by the run's database stamp (mtime and size of the SQLite
file and its WAL, or of a TensorBoard run's event files), so a live run refreshes and a
finished one is read once. Every query goes through one single-flight cache bounded in
entries and bytes; every key is built from validated values, never from what a client sent
as is."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from engine.record import RunStoreError, event_files, list_runs, open_run
from engine.record.reader import ListingCache, RunReader
from engine.record.schema import (
    DAMAGED,
    DATABASE_NAME,
    UNREADABLE,
    AlertRecord,
    DeviceRecord,
    GraphRecord,
    PlacementRecord,
    RunInfo,
    StepRecord,
)
from viz.first_view import element_fit_zoom, first_view
from viz.graph_elements import DEFAULT_COLOR_MODE, graph_elements, step_facts
from viz.hierarchy import Hierarchy, HierarchyView, build_hierarchy, hierarchy_view
from viz.scalars import (
    MAX_POINTS,
    RELATIVE,
    STEP,
    WALL,
    ZOOM_BLOCKS_PER_BUCKET,
    Curve,
    block_sketch,
    carried,
    downsample_indices,
    drawable_from_blocks,
    kept_curve,
    series_span,
    sketch_curve,
    smooth,
    smoothing_carry,
    unit_states,
    wall_step_range,
)
from viz.timeline import StepTrace
from workbench.cache import SingleFlightCache, estimated_bytes

CACHE_ENTRIES = 256
CACHE_BYTES = 512 << 20        # a 1M-point scalar series is 16 MB; a large graph a few MB
MAX_NAME_CHARS = 255           # the longest folder name common file systems allow

_logdir = Path("runs")
_warm_log = logging.getLogger("workbench")
_cache = SingleFlightCache(CACHE_ENTRIES, CACHE_BYTES)
_listing = ListingCache()      # each run folder's listing, kept while its files are unchanged


class UnknownRunError(LookupError):
    """A run name that is not a readable run folder directly inside the log directory."""


class UnknownStepError(UnknownRunError):
    """A step the run did not record with per-op stats (pages say so as for a run)."""


def set_logdir(logdir: str | os.PathLike) -> None:
    global _logdir
    _logdir = Path(logdir)
    clear_cache()


def logdir() -> Path:
    return _logdir


def clear_cache() -> None:
    _cache.clear()
    _listing.clear()


def cache_stats() -> tuple[int, int]:
    """(entries, estimated bytes) the query cache holds now."""
    return _cache.stats()


def shown(text: str) -> str:
    """text with the log directory's own path taken out, so messages name files relative
    to it and never show where the server keeps them."""
    for prefix in {str(_logdir), str(_logdir.resolve())} - {"."}:
        text = text.replace(prefix + os.sep, "")
    return text


def runs() -> list[RunInfo]:
    """Every folder in the log directory (unreadable and damaged ones included); none if it
    is missing. The listing itself is not cached (a run's status changes with time alone),
    but single-flight (requests that arrive together share one), and a run folder whose
    files did not change is not read again (a refresh of 500 finished runs is a few stats
    each)."""
    if not _logdir.is_dir():
        return []
    return _cache.get(("runs", str(_logdir)), lambda: list_runs(_logdir, _listing),
                      keep=False)


def readable_run_names() -> list[str]:
    """Runs that can be opened (damaged ones included: what is whole still shows), most
    recently started first."""
    return [info.name for info in _by_recency(runs()) if info.status != UNREADABLE]


def healthy_run_names() -> list[str]:
    """Readable runs with no damage found, most recently started first: the ones a page
    opens when the user asked for none."""
    return [info.name for info in _by_recency(runs())
            if info.status not in (UNREADABLE, DAMAGED)]


def _by_recency(infos: list[RunInfo]) -> list[RunInfo]:
    return sorted(infos, key=lambda info: (-(info.started or 0.0), info.name))


def check_name(name: Any) -> str:
    """name when it could name a run folder directly in the log directory (a str, not too
    long, no path separator or NUL, not . or ..); UnknownRunError otherwise."""
    if not isinstance(name, str):
        raise UnknownRunError(f"a run name must be text, got {type(name).__name__}")
    if not name or len(name) > MAX_NAME_CHARS:
        raise UnknownRunError(f"not a run name: {_clipped(name)} ({len(name)} characters)")
    if name in (".", "..") or "/" in name or os.sep in name or "\0" in name:
        raise UnknownRunError(f"not a run name: {_clipped(name)}")
    return name


def run_path(name: Any) -> Path:
    """The folder of run `name`; only plain names of folders directly in the log directory
    are accepted, so a query string cannot reach outside it."""
    path = _logdir / check_name(name)
    try:
        found = (path / DATABASE_NAME).is_file() or event_files.is_event_file_run(path)
    except OSError:
        found = False
    if not found:
        raise UnknownRunError(f"no run named {_clipped(name)} in the log directory")
    return path


def _clipped(text: str, limit: int = 60) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "…"


def _stamp(path: Path) -> tuple:
    """What changes when the run does. An empty WAL counts as none: the first reader of a
    closed run creates one, which must not make every cached query of that run miss."""
    if event_files.is_event_file_run(path):
        return event_files.stamp(path)
    parts = []
    for suffix in ("", "-wal"):
        try:
            stat = os.stat(f"{path / DATABASE_NAME}{suffix}")
        except FileNotFoundError:
            parts += [0, 0]
            continue
        parts += [stat.st_mtime_ns, stat.st_size] if stat.st_size else [0, 0]
    return tuple(parts)


def _query(name: str, what: str, *args: Hashable) -> Any:
    path = run_path(name)
    key = (str(path), _stamp(path), what, args)

    def read() -> Any:
        try:
            return getattr(open_run(path), what)(*args)
        except RunStoreError as exc:    # the same kind (a missing tag stays a key error)
            raise type(exc)(shown(str(exc))) from exc
    return _cache.get(key, read)


def info(name: str) -> RunInfo:
    return _query(name, "info")


def live_info(name: str) -> RunInfo:
    """The run's info read now: not cached, since a killed writer's run changes status
    (to INTERRUPTED) with no change to its files; single-flight, so pages polling together
    share one read."""
    path = run_path(name)

    def read() -> RunInfo:
        try:
            return open_run(path).info()
        except RunStoreError as exc:
            raise type(exc)(shown(str(exc))) from exc
    return _cache.get((str(path), "live_info"), read, keep=False)


def graph_versions(name: str) -> list[int]:
    return _query(name, "graph_versions")


def graph(name: str, version: int | None = None) -> GraphRecord | None:
    path = run_path(name)
    key = (str(path), _stamp(path), "graph", (version,))

    def read() -> Sized:
        try:
            return Sized(open_run(path).graph(version))
        except RunStoreError as exc:
            raise type(exc)(shown(str(exc))) from exc
    return _cache.get(key, read).value


def placements(name: str, graph_version: int | None = None) -> list[PlacementRecord]:
    return _query(name, "placements", graph_version)


def devices(name: str) -> list[DeviceRecord]:
    return _query(name, "devices")


def alerts(name: str) -> list[AlertRecord]:
    return _query(name, "alerts")


def sensitivity_curves(name: str) -> dict:
    return _query(name, "sensitivity_curves")


def prune_stages(name: str) -> list:
    return _query(name, "prune_stages")


def compression(name: str):
    return _query(name, "compression")


def tags(name: str) -> list[str]:
    return _query(name, "tags")


def histogram_tags(name: str) -> list[str]:
    return _query(name, "histogram_tags")


def histograms(name: str, tag: str) -> list:
    return _query(name, "histograms", tag)


def image_tags(name: str) -> list[str]:
    return _query(name, "image_tags")


def images(name: str, tag: str) -> list:
    return _query(name, "images", tag)


def text_tags(name: str) -> list[str]:
    return _query(name, "text_tags")


def texts(name: str, tag: str) -> list:
    return _query(name, "texts", tag)


def scalars(name: str, tag: str) -> tuple[np.ndarray, np.ndarray]:
    return _query(name, "scalars", tag)


def scalar_wall_times(name: str, tag: str) -> np.ndarray:
    return _query(name, "scalar_wall_times", tag)


def scalar_series(name: str, tag: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(steps, values, wall times) of a tag, read once."""
    return _query(name, "scalar_series", tag)


def curve(name: str, tag: str, smoothing: float, max_points: int = MAX_POINTS) -> Curve:
    """The tag's series smoothed and downsampled to `max_points` for drawing (with the kept
    points' wall times), computed once per (run state, tag, smoothing, points) however many
    pages ask together; every value is read once per run state whatever the points."""
    path = run_path(name)
    # The stamp before the read: a commit in between only makes the next request recompute.
    key = (str(path), _stamp(path), "curve", tag, float(smoothing), int(max_points))
    sketch = _block_sketch(name, tag, max_points)
    if sketch is not None:
        return _cache.get(key, lambda: sketch_curve(sketch, smoothing))
    values, keep, steps, walls = _drawn_points(name, tag, max_points)
    return _cache.get(key, lambda: kept_curve(values, keep, steps, smoothing, walls))


def _block_sketch(name: str, tag: str, max_points: int):
    """The tag's curve points from the run store's blocks (viz.scalars.block_sketch), per
    run state and points; None where blocks cannot draw it (a TensorBoard run, a run
    written before blocks, a short or disordered series): every value is read instead."""
    path = run_path(name)
    found = _query_blocks(name, tag)
    if found is None or not drawable_from_blocks(found, max_points):
        return None
    key = (str(path), _stamp(path), "block_sketch", tag, int(max_points))
    return _cache.get(key, lambda: block_sketch(found, max_points))


def _query_blocks(name: str, tag: str):
    """RunReader.scalar_blocks of the tag, per run state (None for a TensorBoard run)."""
    path = run_path(name)
    key = (str(path), _stamp(path), "scalar_blocks", tag)

    def read():
        try:
            with _reads.turn():
                reader = open_run(path)
                return reader.scalar_blocks(tag) if isinstance(reader, RunReader) else None
        except RunStoreError as exc:    # the same kind (a missing tag stays a key error)
            raise type(exc)(shown(str(exc))) from exc
    return _cache.get(key, read)


def _drawn_points(name: str, tag: str, max_points: int) -> tuple[np.ndarray, ...]:
    """(every value, the kept indices, the kept points' steps and wall times) of a tag, per
    run state and points: a run store reads the steps and wall times of the kept rows alone
    (every value came from its index, _curve_values); a TensorBoard run has them all."""
    path = run_path(name)
    key = (str(path), _stamp(path), "drawn_points", tag, int(max_points))
    values, ids_or_steps, walls = _curve_values(name, tag)

    def read() -> tuple[np.ndarray, ...]:
        keep = downsample_indices(values, max_points)
        if walls is not None:
            return values, keep, ids_or_steps[keep], walls[keep]
        try:
            with _reads.turn():
                return (values, keep, *open_run(path).scalar_points(ids_or_steps[keep]))
        except RunStoreError as exc:
            raise type(exc)(shown(str(exc))) from exc
    return _cache.get(key, read)


def _curve_values(name: str, tag: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Every value of a tag, per run state, with the row ids (a run store: read from its
    covering index alone; wall times None) or the steps and wall times (a TensorBoard run,
    whose reader has them all anyway)."""
    path = run_path(name)
    key = (str(path), _stamp(path), "curve_values", tag)

    def read() -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        try:
            with _reads.turn():
                reader = open_run(path)
                if not isinstance(reader, RunReader):
                    steps, values, walls = reader.scalar_series(tag)
                    return values, steps, walls
                ids, values = reader.scalar_values(tag)
                return values, ids, None
        except RunStoreError as exc:    # the same kind (a missing tag stays a key error)
            raise type(exc)(shown(str(exc))) from exc
    return _cache.get(key, read)


def zoomed_curve(name: str, tag: str, smoothing: float, max_points: int, by: str,
                 low: float, high: float) -> Curve:
    """The tag's points in a zoomed x range, downsampled to `max_points` as curve() does the
    whole series (extremes kept), with the points just outside so the line reaches the
    plot's edges, and smoothed as part of the whole series. The range `by` steps, wall
    time (seconds since the epoch) or relative time (seconds since the series' first
    point). A run store reads the range alone (its blocks in the range, or its rows when
    they are few; the smoothing before it comes from the whole view's blocks); a series the
    whole view draws at full resolution already comes back whole."""
    if by not in (STEP, WALL, RELATIVE):
        raise ValueError(f"a zoom goes by step, wall or relative, not {by!r}")
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"a zoom's ends must be finite numbers, got {low!r}, {high!r}")
    low, high = min(low, high), max(low, high)
    whole = curve(name, tag, smoothing, max_points)
    span = series_span(whole)
    if by == RELATIVE:
        by, low, high = WALL, span[0] + low, span[0] + high
    if by == WALL and whole.wall_times is None:
        by = STEP           # a series without wall times is drawn against its steps
    found = _query_blocks(name, tag)
    if found is None or not drawable_from_blocks(found, max_points):
        return _zoomed_from_series(name, tag, smoothing, max_points, by, low, high, whole)
    steps = wall_step_range(found, low, high) if by == WALL else _step_bounds(low, high)
    if steps is None or steps[0] > steps[1]:
        return _empty_curve(smoothing, span)
    path = run_path(name)
    stamp = _stamp(path)
    states = _cache.get((str(path), stamp, "unit_states", tag, float(smoothing)),
                        lambda: unit_states(found, smoothing))
    key = (str(path), stamp, "zoomed_curve", tag, float(smoothing), int(max_points), *steps)

    def read() -> Curve | None:
        try:
            with _reads.turn():
                return _zoomed_part(open_run(path), tag, smoothing, max_points, steps, states,
                                    span)
        except RunStoreError as exc:
            raise type(exc)(shown(str(exc))) from exc
    drawn = _cache.get(key, read)
    if drawn is None:       # a block out of order: every point is read instead
        return _zoomed_from_series(name, tag, smoothing, max_points, by, low, high, whole)
    return drawn


def _zoomed_part(reader: RunReader, tag: str, smoothing: float, max_points: int,
                 steps: tuple[int, int], states, span: tuple[float, float]) -> Curve | None:
    """zoomed_curve's reads, on one reader: the neighbours of the range, its blocks and
    the raw points around them (or every point, when too few blocks lie in it), and the few
    raw points between the last unit before it and its start (for the smoothing; a step
    shared across that boundary counts once)."""
    before, after = reader.scalar_steps_around(tag, *steps)
    first = steps[0] if before is None else before
    last = steps[1] if after is None else after
    inside = reader.scalar_blocks_between(tag, first, last)
    if inside is None:
        return None
    carry, through = smoothing_carry(states, first)
    if first > _STEP_FLOOR:
        gap = reader.scalar_range(tag, _STEP_FLOOR if through is None else through + 1,
                                  first - 1)[1]
        carry = carried(carry, gap, smoothing)
    if drawable_from_blocks(inside, max_points, ZOOM_BLOCKS_PER_BUCKET):
        drawn = sketch_curve(block_sketch(inside, max_points), smoothing, carry)
        return dataclasses.replace(drawn, series_walls=span)
    steps_in, values, walls = reader.scalar_range(tag, first, last)
    return _kept_part(steps_in, values, walls, smoothing, max_points, carry, span)


_STEP_FLOOR = -(2 ** 62)


def _step_bounds(low: float, high: float) -> tuple[int, int]:
    """The whole steps in [low, high], clamped to SQLite's integers."""
    bound = float(-_STEP_FLOOR)
    return (int(math.ceil(min(max(low, -bound), bound))),
            int(math.floor(min(max(high, -bound), bound))))


def _empty_curve(smoothing: float, span: tuple[float, float]) -> Curve:
    nothing = np.zeros(0)
    return Curve(np.zeros(0, dtype=np.int64), nothing, nothing, smoothing, nothing, span)


def _kept_part(steps, values, walls, smoothing, max_points, carry, span) -> Curve:
    """A part of a series drawn as kept_curve draws a whole one, smoothed from `carry`."""
    keep = downsample_indices(values, max_points)
    smoothed = smooth(values, smoothing, carry)[keep] if smoothing > 0 else values[keep]
    return Curve(np.asarray(steps)[keep], values[keep], smoothed, smoothing,
                 None if walls is None else walls[keep], span)


def _zoomed_from_series(name, tag, smoothing, max_points, by, low, high, whole) -> Curve:
    """zoomed_curve from every point of the series (a TensorBoard run, a run written before
    blocks, a short or disordered series): read once per run state, as the downloads are."""
    steps, values, walls = scalar_series(name, tag)
    if values.size <= max_points:
        return whole
    x = walls if by == WALL else steps
    inside = np.flatnonzero((x >= low) & (x <= high))
    span = series_span(whole)
    if not inside.size:
        return _empty_curve(smoothing, span)
    start, stop = max(int(inside[0]) - 1, 0), min(int(inside[-1]) + 2, values.size)
    head = values[:start]
    finite = head[np.isfinite(head)]
    carry = (0.0, 0)
    if smoothing > 0 and finite.size:
        # The running average before the part: the last smoothed value, biased back.
        last = smooth(finite, smoothing)[-1]
        carry = (float(last * (1.0 - smoothing ** finite.size)), int(finite.size))
    return _kept_part(steps[start:stop], values[start:stop], walls[start:stop], smoothing,
                      max_points, carry, span)


class _ReadTurns:
    """One curve read at a time, a page's ahead of the warming's (background()). Two threads
    decoding SQLite rows together take longer than one after the other (1.5 M points: 2.55 s
    against 1.50 s here), since the GIL changes hands at every row; and a page asking while
    the warming reads waits for one read, not for the warming's queue. A read that waited
    WAIT_S (another one stuck) goes ahead anyway, as every read did before."""
    WAIT_S = 30.0

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._busy = False
        self._pages_waiting = 0
        self._behind_waiting = 0
        self._local = threading.local()

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        behind = getattr(self._local, "background", False)
        with self._changed:
            self._pages_waiting += not behind
            self._behind_waiting += behind
            deadline = time.monotonic() + self.WAIT_S
            while self._busy or (behind and self._pages_waiting):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            self._pages_waiting -= not behind
            self._behind_waiting -= behind
            self._busy = True
        try:
            yield
        finally:
            with self._changed:
                self._busy = False
                self._changed.notify_all()

    def waiting(self) -> tuple[int, int]:
        """(page reads, background reads) waiting for a turn now (the tests watch it)."""
        with self._changed:
            return self._pages_waiting, self._behind_waiting

    @contextlib.contextmanager
    def background(self) -> Iterator[None]:
        self._local.background = True
        try:
            yield
        finally:
            self._local.background = False


_reads = _ReadTurns()


def background() -> contextlib.AbstractContextManager:
    """Within it, this thread's curve reads wait while a page's are waiting (the warming's)."""
    return _reads.background()


class Sized:
    """A cached value whose size is estimated from a sample of its nodes: walking a
    10,000-node graph item by item (cache.estimated_bytes) takes seconds, longer than
    reading it. sys.getsizeof, which the estimate uses, asks __sizeof__."""
    __slots__ = ("value", "size")
    SAMPLE = 64

    def __init__(self, value: Any, size: int | None = None) -> None:
        self.value = value
        self.size = _sampled_bytes(value) if size is None else size

    def __sizeof__(self) -> int:
        return self.size


def _sampled_bytes(value: Any) -> int:
    items = getattr(value, "nodes", None)
    if not isinstance(items, tuple) or len(items) <= Sized.SAMPLE:
        return estimated_bytes(value)
    step = len(items) // Sized.SAMPLE
    sample = items[::step][:Sized.SAMPLE]
    return estimated_bytes(sample) * len(items) // len(sample) + 256


def _graph_key(name: str) -> tuple[GraphRecord, tuple]:
    record = graph(name)
    if record is None:
        raise UnknownRunError(f"run {name!r} recorded no graph")
    return record, (str(run_path(name)), record.version)


def last_traced_stats(name: str) -> list:
    """Per-op stats of the run's latest traced step ([] when no step was traced)."""
    step = _query(name, "last_traced_step")
    return [] if step is None else _query(name, "step_stats", step)


def traced_steps(name: str) -> list[int]:
    """Step numbers recorded with per-op stats, ascending (the timeline's step picker)."""
    return [record.step for record in _query(name, "traced_steps")]


def step_trace(name: str, step: int) -> StepTrace:
    """What the timeline of traced step `step` draws: its op stats, its transfers, the cut
    edges of its plan and the run's devices. UnknownStepError when it was not traced."""
    found = {record.step: record for record in _query(name, "traced_steps")}
    if step not in found:
        known = ", ".join(str(s) for s in sorted(found)[-10:]) or "none"
        raise UnknownStepError(f"step {step} of run {name} was not traced (traced steps: "
                               f"{known})")
    record = found[step]
    return StepTrace(name, step, tuple(_query(name, "step_stats", step)),
                     tuple(_query(name, "transfers", step)),
                     tuple(_query(name, "cut_edges", record.plan)), tuple(devices(name)),
                     record.wall_start)


# -- the graph page's hierarchy view (scopes, series, expansion), cached per graph version --


def hierarchy(name: str) -> Hierarchy:
    """Scopes and series of the run's graph (sized like the graph: a few entries per node)."""
    record, key = _graph_key(name)

    def build() -> Sized:
        tree = Sized(record)
        tree.value, tree.size = build_hierarchy(record), tree.size // 2
        return tree
    return _cache.get((*key, "hierarchy"), build).value


def graph_first_view(name: str, partition: bool = False) -> frozenset[str]:
    """The groups the Graph page opens when the address names none: the default expansion,
    or fewer levels of it when its drawing (split by device in the `partition` view, which
    draws each scope once per device) would not fit the window readably (viz.first_view);
    the drawings it measured stay cached for the page."""
    if graph(name) is None:
        return frozenset()
    record, key = _graph_key(name)
    tree = hierarchy(name)

    def zoom_of(expanded: frozenset[str]) -> float:
        return element_fit_zoom(default_elements(name, expanded, partition)[0])
    return _cache.get((*key, "first_view", partition), lambda: first_view(tree, zoom_of))


def default_elements(name: str, expanded: frozenset[str], partition: bool = False
                     ) -> tuple[list, list]:
    """The Graph page's (elements, legend) in its default colours with no step chosen, as
    its draw builds them (the partition view with the run's cut edges)."""
    record = graph(name)
    drawn = view(name, expanded)

    def build() -> tuple[list, list]:
        return graph_elements(drawn, record, placements(name, record.version),
                              DEFAULT_COLOR_MODE, step_facts(None, ()), partition,
                              cut_edges(name) if partition else (), devices(name))
    return graph_elements_for(name, drawn.expanded, DEFAULT_COLOR_MODE, None, partition,
                              build)


def view(name: str, expanded: frozenset[str]) -> HierarchyView:
    """The drawn boxes, leaves and edges for these expanded groups; only the hierarchy's
    own ids reach the key."""
    record, key = _graph_key(name)
    tree = hierarchy(name)
    expanded = frozenset(frozenset(expanded) & tree.groups.keys())
    def build() -> Sized:
        drawn = hierarchy_view(tree, expanded)
        # Its node -> leaf map and drawn items; the graph's edges are the hierarchy's own.
        return Sized(drawn, 160 * len(drawn.rep) + 600 * (len(drawn.nodes) + len(drawn.edges)))
    return _cache.get((*key, expanded, "view"), build).value


def steps(name: str) -> list[StepRecord]:
    return _query(name, "steps")


def plans(name: str) -> list:
    """Every recorded plan (its latest recording): the replay finds a step's graph version."""
    return _query(name, "plans")


def step_stats(name: str, step: int) -> list:
    return _query(name, "step_stats", step)


def transfers(name: str, step: int) -> list:
    return _query(name, "transfers", step)


def cut_edges(name: str) -> list:
    return _query(name, "cut_edges", None)


def tensor_summaries(name: str) -> list:
    return _query(name, "tensor_summaries", None)


def last_traced_step(name: str) -> int | None:
    return _query(name, "last_traced_step")


def graph_elements_for(name: str, expanded: frozenset[str], mode: str, step: int | None,
                       partition: bool, build: Callable[[], Any]) -> Any:
    """The page's element list for one (graph, expansion, colour mode, step, partition),
    built once by `build` and kept while the run does not change."""
    path = run_path(name)
    record, key = _graph_key(name)
    return _cache.get((*key, _stamp(path), frozenset(expanded), mode, step, partition,
                       "elements"), lambda: _sized_elements(build())).value


def _sized_elements(built: tuple[list, list]) -> Sized:
    """An element is a dict of a dozen short fields (about 1.5 KB with its position)."""
    return Sized(built, 1500 * len(built[0]) + 400 * len(built[1]))


# -- the quantization page: comparisons, costs, and its two graphs (both versions of a run) --


def quantization_comparisons(name: str) -> list:
    return _query(name, "quantization_comparisons")


def quantization_comparison(name: str, comparison: str | None = None):
    return _query(name, "quantization_comparison", comparison)


def quantization_costs(name: str) -> list:
    return _query(name, "quantization_costs", None)


def version_hierarchy(name: str, version: int) -> Hierarchy | None:
    """Scopes and series of graph `version` of the run (the Quantization page shows two
    versions of one run); None when the run has no such version."""
    record = graph(name, version)
    if record is None:
        return None

    def build() -> Sized:
        tree = Sized(record)
        tree.value, tree.size = build_hierarchy(record), tree.size // 2
        return tree
    return _cache.get((str(run_path(name)), version, "version_hierarchy"), build).value


def version_first_view(name: str, version: int) -> frozenset[str]:
    """The groups of graph `version` opened when it is first shown, chosen as the Graph
    page's first view is (viz.first_view) from that version's own drawings, which stay
    cached for the page (version_elements, keyed as the Quantization page keys them)."""
    tree = version_hierarchy(name, version)
    if tree is None:
        return frozenset()

    def zoom_of(expanded: frozenset[str]) -> float:
        record, drawn = version_view(name, version, expanded)
        return element_fit_zoom(version_elements(
            name, version, drawn.expanded, lambda: graph_elements(drawn, record, ())[0]))
    return _cache.get((str(run_path(name)), version, "version_first_view"),
                      lambda: first_view(tree, zoom_of))


def version_view(name: str, version: int, expanded: frozenset[str]
                 ) -> tuple[GraphRecord, HierarchyView] | None:
    """Graph `version` of the run and its view for these expanded groups (only the
    version's own group ids reach the key), or None when the run has no such version."""
    tree = version_hierarchy(name, version)
    if tree is None:
        return None
    expanded = frozenset(frozenset(expanded) & tree.groups.keys())

    def build() -> Sized:
        drawn = hierarchy_view(tree, expanded)
        return Sized(drawn, 160 * len(drawn.rep) + 600 * (len(drawn.nodes) + len(drawn.edges)))
    return graph(name, version), _cache.get(
        (str(run_path(name)), version, expanded, "version_view"), build).value


def version_elements(name: str, version: int, expanded: frozenset[str],
                     build: Callable[[], Any]) -> Any:
    """The laid-out elements of graph `version` for these expanded groups (the version's own
    ids, as version_view keys them), built once by `build`: a recorded graph version does
    not change, so neither does its layout."""
    return _cache.get((str(run_path(name)), version, frozenset(expanded),
                       "version_elements"), lambda: _sized_drawing(build())).value


def quantization_drawing(name: str, comparison_seq: int, side: str,
                         expanded: frozenset[str], build: Callable[[], Any]) -> Any:
    """One side of the Quantization page for one comparison and expansion (its elements
    painted by SQNR), built once by `build`. The key is the comparison's row (`seq`), not
    its name: a comparison recorded later under the same name is another row, so it is
    never hidden by this one's drawing."""
    return _cache.get((str(run_path(name)), int(comparison_seq), side, frozenset(expanded),
                       "quantization_drawing"), lambda: _sized_drawing(build())).value


def _sized_drawing(built: Any) -> Sized:
    """A drawing (elements first, then small facts) sized as _sized_elements sizes one."""
    elements = built[0] if isinstance(built, tuple) else built
    return Sized(built, 1500 * len(elements) + 400)


def warm_graphs(limit: int = 3) -> None:
    """Reads and groups the graphs of the newest `limit` healthy runs, so the first visit to
    the Graph page draws at once (TensorBoard, too, loads its logdir when it starts). What
    fails here is left for the page to tell."""
    for name in healthy_run_names()[:limit]:
        try:
            if graph(name) is not None:
                view(name, graph_first_view(name))
        except Exception as exc:  # noqa: BLE001 -- the page reports it when it is asked
            _warm_log.info("not warmed: %s: %.200s", name, exc)
