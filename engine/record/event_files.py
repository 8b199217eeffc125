"""EventFileReader: a folder of TensorBoard event files (torch.utils.tensorboard, tensorboardX,
TensorFlow) read through the same typed queries as RunReader, returning the same records.
Files are parsed once per change of their size or mtime (a small memo), never unpickled."""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.record import store
from engine.record.reader import (
    RunFolderReader,
    RunReaderUsageError,
    RunStoreError,
    RunStoreKeyError,
)
from engine.record.schema import (
    DAMAGED,
    DATABASE_NAME,
    FINISHED,
    RUNNING,
    UNREADABLE,
    AlertRecord,
    CutEdgeRecord,
    DeviceRecord,
    GraphRecord,
    HistogramRecord,
    ImageRecord,
    OpStatRecord,
    PartitionRecord,
    PlacementRecord,
    PlanRecord,
    RunInfo,
    StepRecord,
    TensorSummaryRecord,
    TextRecord,
    TransferRecord,
)

if TYPE_CHECKING:

    from engine.record.event_decode import EncodedImage

# The parser: decoding is the tensorboard package's (its compiled protos and tensor_util, the
# code TensorBoard's own loaders run, maintained with TensorBoard); the TFRecord framing is
# engine/record/tfrecord.py with the crc32c package, because tensorboard's reader (without
# TensorFlow installed) checks CRC-32C in pure Python: on a 300k-record file its framing
# alone takes ~7x ours, its EventAccumulator ~5x our whole load (bench/bench_event_files.py).
# tests/engine/record/test_event_files.py checks that both framings yield the same records
# and stop at the same damage.
EVENT_FILE_MARK = "tfevents"       # TensorBoard's test: the file name contains it
FORMAT = "tensorboard"             # RunInfo.config["format"] of an event-file run
MEMO_RUNS = 8                      # parsed runs kept (a parsed 300k-point run is ~10 MB)
MEMO_INFOS = 4096                  # listing entries kept (each a few hundred bytes)
INSTALL_HINT = "pip install 'tfworkbench[tensorboard]'"


def event_files_in(run_dir: str | os.PathLike) -> list[Path]:
    """The event files directly in run_dir, by name (TensorBoard reads them in that order:
    the name starts with the time the file was opened)."""
    folder = Path(run_dir)
    return sorted((entry for entry in folder.iterdir()
                   if EVENT_FILE_MARK in entry.name and entry.is_file()), key=lambda p: p.name)


def is_event_file_run(path: str | os.PathLike) -> bool:
    """A folder that is not a run store and holds at least one event file."""
    folder = Path(path)
    try:
        return (folder.is_dir() and not (folder / DATABASE_NAME).exists()
                and any(EVENT_FILE_MARK in entry.name for entry in folder.iterdir()))
    except OSError:
        return False


def stamp(run_dir: str | os.PathLike) -> tuple:
    """What changes when the run does: each event file's name, mtime and size."""
    parts = []
    for path in event_files_in(run_dir):
        try:
            stat = path.stat()
        except OSError:
            continue
        parts.append((path.name, stat.st_mtime_ns, stat.st_size))
    return tuple(parts)


@dataclass(frozen=True)
class Series:
    """One scalar tag: steps, values and wall times in step order (ties as written)."""
    steps: np.ndarray
    values: np.ndarray
    wall_times: np.ndarray
    seqs: np.ndarray


@dataclass(frozen=True)
class EventFileRun:
    """Everything one parse of a run's event files found. `seq` numbers count records
    across the files in reading order, so events() can interleave kinds as written."""
    files: tuple[str, ...]
    scalars: dict[str, Series]
    histograms: dict[str, tuple[HistogramRecord, ...]]
    texts: dict[str, tuple[TextRecord, ...]]
    images: dict[str, tuple[EncodedImage, ...]]
    graph: GraphRecord | None
    started: float | None
    updated: float | None
    last_step: int | None
    records: int
    newest_mtime: float
    problems: tuple[str, ...] = ()
    seqs: dict[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # values of plugins not read, by
                                                           # plugin (pr_curves, hparams, ...)


class EventFileReader(RunFolderReader):
    """Read-only view of one folder of event files, with RunReader's queries. Queries of
    what event files cannot hold (placements, plans, steps' op stats) answer empty."""

    def __init__(self, run_dir: str | os.PathLike) -> None:
        self._dir = Path(run_dir)
        self._closed = False
        try:
            found = is_event_file_run(self._dir) and bool(event_files_in(self._dir))
        except OSError as exc:
            raise RunStoreError(f"{self._dir}: cannot read: {exc}") from exc
        if not found:
            raise RunStoreError(f"{self._dir}: no TensorBoard event files (no file whose name "
                                f"contains {EVENT_FILE_MARK!r})")


    # Run and summaries.

    def info(self) -> RunInfo:
        return _info(self._dir, self._loaded())

    def damage(self) -> str | None:
        problems = self._loaded().problems
        if not problems:
            return None
        more = f"; {len(problems)} event files damaged" if len(problems) > 1 else ""
        return problems[0] + more

    def tags(self) -> list[str]:
        return sorted(self._loaded().scalars)

    def histogram_tags(self) -> list[str]:
        return sorted(self._loaded().histograms)

    def text_tags(self) -> list[str]:
        return sorted(self._loaded().texts)

    def image_tags(self) -> list[str]:
        return sorted(self._loaded().images)

    def scalars(self, tag: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps int64, values float64) in step order (ties in the order written)."""
        series = self._series(tag)
        return series.steps.copy(), series.values.copy()

    def scalar_wall_times(self, tag: str) -> np.ndarray:
        return self._series(tag).wall_times.copy()

    def scalar_series(self, tag: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(steps, values, wall times) in step order, as RunReader.scalar_series."""
        series = self._series(tag)
        return series.steps.copy(), series.values.copy(), series.wall_times.copy()

    def histograms(self, tag: str) -> list[HistogramRecord]:
        return list(self._tagged(self._loaded().histograms, "histogram", tag))

    def texts(self, tag: str) -> list[TextRecord]:
        return list(self._tagged(self._loaded().texts, "text", tag))

    def images(self, tag: str) -> list[ImageRecord]:
        """Every image of the tag in step order, decoded to uint8 (height, width, channels)."""
        from engine.record.event_decode import DecodeError, decode_image

        records = []
        for image in self._tagged(self._loaded().images, "image", tag):
            try:
                pixels = decode_image(image)
            except DecodeError as exc:
                raise RunStoreError(f"{self._dir}: {exc}") from exc
            height, width, channels = pixels.shape
            records.append(ImageRecord(tag, image.step, image.wall_time, height, width,
                                       channels, pixels))
        return records

    def tensor_summary_nodes(self) -> list[str]:
        return []

    def tensor_summaries(self, node: str | None = None) -> list[TensorSummaryRecord]:
        return []

    def alerts(self) -> list[AlertRecord]:
        return []

    # Pruning records have no event-file form.

    def sensitivity_curves(self) -> dict:
        return {}

    def prune_stages(self) -> list:
        return []

    def compression(self) -> None:
        return None

    def quantization_comparisons(self) -> list:
        return []

    def quantization_comparison(self, name: str | None = None):
        raise RunStoreKeyError(f"{self._dir}: TensorBoard event files hold no quantization "
                               f"comparison {name!r}")

    def quantization_costs(self, model: str | None = None) -> list:
        return []

    # Engine records: only the graph has a counterpart in event files.

    def devices(self) -> list[DeviceRecord]:
        return []

    def graph_versions(self) -> list[int]:
        return [] if self._loaded().graph is None else [0]

    def graph(self, version: int | None = None) -> GraphRecord | None:
        """The last graph the files hold (version 0), or None."""
        graph = self._loaded().graph
        return graph if version in (None, 0) else None

    def placements(self, graph_version: int | None = None) -> list[PlacementRecord]:
        return []

    def plans(self) -> list[PlanRecord]:
        return []

    def partitions(self, plan: int | None = None) -> list[PartitionRecord]:
        return []

    def cut_edges(self, plan: int | None = None) -> list[CutEdgeRecord]:
        return []

    def steps(self) -> list[StepRecord]:
        return []

    def last_traced_step(self) -> int | None:
        return None

    def traced_steps(self) -> list[StepRecord]:
        return []

    def step_stats(self, step: int) -> list[OpStatRecord]:
        raise RunStoreKeyError(f"no step {step} in run {self._dir}; TensorBoard event files "
                               "record no steps' op stats")

    def transfers(self, step: int) -> list[TransferRecord]:
        raise RunStoreKeyError(f"no step {step} in run {self._dir}; TensorBoard event files "
                               "record no transfers")

    def events(self, after_seq: int = 0, limit: int = 1000) -> list[tuple[int, float, str, str]]:
        """(seq, wall_time, kind, summary) in the order the records were read."""
        if limit < 0:
            raise RunReaderUsageError(f"limit must be >= 0, got {limit}")
        return _events(self._loaded(), after_seq, limit)

    # Internals.

    def _loaded(self) -> EventFileRun:
        if self._closed:
            raise RunReaderUsageError(f"EventFileReader {self._dir} is closed")
        return load(self._dir)

    def _series(self, tag: str) -> Series:
        return self._tagged(self._loaded().scalars, "scalar", tag)

    def _tagged(self, by_tag: dict[str, Any], kind: str, tag: str) -> Any:
        if tag not in by_tag:
            raise RunStoreKeyError(f"no {kind} tag {tag!r} in run {self._dir}; known {kind} "
                                   f"tags: {sorted(by_tag)}")
        return by_tag[tag]


def listed(run_dir: Path) -> RunInfo:
    """The run's listing entry, never raising: UNREADABLE when no event could be read (or
    the parser is not installed), DAMAGED when a file stops early; `error` names the file
    relative to the log directory and what is wrong."""
    try:
        key = stamp(run_dir)
    except OSError as exc:
        return _unreadable(run_dir, f"cannot read: {exc}")
    with _lock:
        memo = _infos.get(str(run_dir))
    if memo is not None and memo[0] == key and memo[1].status != RUNNING:
        return memo[1]
    try:
        info = _info(run_dir, load(run_dir))
    except RunStoreError as exc:
        return _unreadable(run_dir, str(exc))
    with _lock:
        _infos[str(run_dir)] = (key, info)
        while len(_infos) > MEMO_INFOS:
            _infos.popitem(last=False)
    return info


def _unreadable(run_dir: Path, reason: str) -> RunInfo:
    return RunInfo(name=run_dir.name, path=str(run_dir), status=UNREADABLE,
                   config={"format": FORMAT}, error=reason)


def load(run_dir: str | os.PathLike) -> EventFileRun:
    """The parse of run_dir's event files: from the memo while no file changed. Raises
    RunStoreError when the folder cannot be listed or the parser is not installed."""
    folder = Path(run_dir)
    try:
        key = stamp(folder)
    except OSError as exc:
        raise RunStoreError(f"{folder}: cannot read: {exc}") from exc
    with _lock:
        memo = _runs.get(str(folder))
        if memo is not None and memo[0] == key:
            _runs.move_to_end(str(folder))
            return memo[1]
    loaded = _parse(folder)
    with _lock:
        _runs[str(folder)] = (key, loaded)
        while len(_runs) > MEMO_RUNS:
            _runs.popitem(last=False)
    return loaded


_lock = threading.Lock()
_runs: OrderedDict[str, tuple[tuple, EventFileRun]] = OrderedDict()
_infos: OrderedDict[str, tuple[tuple, RunInfo]] = OrderedDict()


def clear_memo() -> None:
    with _lock:
        _runs.clear()
        _infos.clear()


def _info(run_dir: Path, loaded: EventFileRun) -> RunInfo:
    status = FINISHED
    if loaded.problems:
        status = DAMAGED if loaded.records else UNREADABLE
    elif time.time() - loaded.newest_mtime < store.STALE_SECS:
        status = RUNNING
    return RunInfo(
        name=run_dir.name, path=str(run_dir), status=status, started=loaded.started,
        updated=loaded.updated,
        num_steps=0 if loaded.last_step is None else loaded.last_step + 1,
        tags=tuple(sorted(loaded.scalars)),
        config={"format": FORMAT, "event_files": list(loaded.files),
                "skipped_values": dict(loaded.skipped)},
        error=loaded.problems[0] if loaded.problems else None)


def _parse(folder: Path) -> EventFileRun:
    try:
        from engine.record.event_loader import EventLoader
    except ImportError as exc:
        raise RunStoreError(f"{folder}: reading TensorBoard event files needs the "
                            f"{exc.name or 'tensorboard'} package ({INSTALL_HINT})") from exc
    try:
        files = event_files_in(folder)
    except OSError as exc:
        raise RunStoreError(f"{folder}: cannot read: {exc}") from exc
    loader = EventLoader(folder.name)
    newest = 0.0
    for path in files:
        try:
            newest = max(newest, path.stat().st_mtime)
        except OSError:
            pass
        loader.read_file(path, time.time() - newest < store.STALE_SECS)
    return loader.result(tuple(path.name for path in files), newest)


def _events(loaded: EventFileRun, after_seq: int, limit: int) -> list[tuple]:
    found: list[tuple[int, float, str, str]] = []
    for tag, series in loaded.scalars.items():
        chosen = np.nonzero(series.seqs > after_seq)[0]
        for i in chosen[np.argsort(series.seqs[chosen])][:limit].tolist():
            found.append((int(series.seqs[i]), float(series.wall_times[i]), "scalar",
                          f"{tag} = {series.values[i]:.6g} at step {int(series.steps[i])}"))
    for kind, by_tag in (("histogram", loaded.histograms), ("text", loaded.texts),
                         ("image", loaded.images)):
        for tag, records in by_tag.items():
            for seq, record in zip(loaded.seqs.get((kind, tag), ()), records):
                if seq > after_seq:
                    found.append((seq, record.wall_time, kind, f"{tag} at step {record.step}"))
    graph = loaded.graph
    if graph is not None and graph.seq > after_seq:
        found.append((graph.seq, graph.wall_time, "graph",
                      f"graph version 0: {len(graph.nodes)} nodes"))
    found.sort()
    return found[:limit]
