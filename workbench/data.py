"""The workbench's one door to recorded runs: resolves run names inside the log directory
and caches reader queries keyed by the run's database stamp (mtime and size of the SQLite
file and its WAL), so a live run refreshes and a finished one is read once."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import numpy as np

from engine.record import RunReader, list_runs
from engine.record.schema import (
    DATABASE_NAME,
    UNREADABLE,
    DeviceRecord,
    GraphRecord,
    PlacementRecord,
    RunInfo,
)
from viz.layout import layered_layout
from viz.scopes import GraphView, default_expansion, scope_view

CACHE_ENTRIES = 256
Position = tuple[float, float]

_logdir = Path("runs")
_cache: OrderedDict[Hashable, Any] = OrderedDict()
_lock = threading.Lock()


class UnknownRunError(LookupError):
    """A run name that is not a readable run folder directly inside the log directory."""


def set_logdir(logdir: str | os.PathLike) -> None:
    global _logdir
    _logdir = Path(logdir)
    clear_cache()


def logdir() -> Path:
    return _logdir


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def _cached(key: Hashable, compute: Callable[[], Any]) -> Any:
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    value = compute()
    with _lock:
        _cache[key] = value
        while len(_cache) > CACHE_ENTRIES:
            _cache.popitem(last=False)
    return value


def runs() -> list[RunInfo]:
    """Every folder in the log directory (unreadable ones included); none if it is missing."""
    return list_runs(_logdir) if _logdir.is_dir() else []


def readable_run_names() -> list[str]:
    """Readable runs, most recently started first."""
    readable = [info for info in runs() if info.status != UNREADABLE]
    readable.sort(key=lambda info: (-(info.started or 0.0), info.name))
    return [info.name for info in readable]


def run_path(name: str) -> Path:
    """The folder of run `name`; only plain names of folders directly in the log directory
    are accepted, so a query string cannot reach outside it."""
    if not name or name in (".", "..") or "/" in name or os.sep in name:
        raise UnknownRunError(f"not a run name: {name!r}")
    path = _logdir / name
    if not (path / DATABASE_NAME).is_file():
        raise UnknownRunError(f"no run named {name!r} in {_logdir}")
    return path


def _stamp(path: Path) -> tuple:
    parts = []
    for suffix in ("", "-wal"):
        try:
            stat = os.stat(f"{path / DATABASE_NAME}{suffix}")
            parts += [stat.st_mtime_ns, stat.st_size]
        except FileNotFoundError:
            parts += [0, 0]
    return tuple(parts)


def _query(name: str, what: str, *args: Hashable) -> Any:
    path = run_path(name)
    key = (str(path), _stamp(path), what, args)
    return _cached(key, lambda: getattr(RunReader(path), what)(*args))


def info(name: str) -> RunInfo:
    return _query(name, "info")


def graph(name: str, version: int | None = None) -> GraphRecord | None:
    return _query(name, "graph", version)


def placements(name: str, graph_version: int | None = None) -> list[PlacementRecord]:
    return _query(name, "placements", graph_version)


def devices(name: str) -> list[DeviceRecord]:
    return _query(name, "devices")


def tags(name: str) -> list[str]:
    return _query(name, "tags")


def scalars(name: str, tag: str) -> tuple[np.ndarray, np.ndarray]:
    return _query(name, "scalars", tag)


def default_expanded(name: str) -> frozenset[str]:
    """The scopes opened when a graph is first shown (cached per graph version)."""
    record = graph(name)
    if record is None:
        return frozenset()
    return _cached((str(run_path(name)), record.version, "default_expansion"),
                   lambda: default_expansion(record))


def graph_view(name: str, expanded: frozenset[str]) -> tuple[GraphView, dict[str, Position]]:
    """The visible graph for these expanded scopes and its layout. Layouts are cached by
    (run path, graph version, expanded set): a version never changes once recorded."""
    record = graph(name)
    if record is None:
        raise UnknownRunError(f"run {name!r} recorded no graph")
    view = scope_view(record, placements(name, record.version), expanded)
    key = (str(run_path(name)), record.version, view.expanded, "layout")
    positions = _cached(key, lambda: layered_layout(
        [node.name for node in view.nodes], [(edge.src, edge.dst) for edge in view.edges]))
    return view, positions
