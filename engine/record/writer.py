"""RunWriter: records one run into <logdir>/<name>/ for training code and for the engine.
Public calls only validate and enqueue; the background Committer (committer.py) turns
records into rows and commits them. At a step boundary a call first waits until everything
queued before it is committed, so a killed process loses at most the step in flight."""

from __future__ import annotations

import itertools
import logging
import operator
import os
import threading
import time
import traceback
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.record import store
from engine.record.committer import (
    OP_ALERT,
    OP_BUCKETS,
    OP_CONFIG,
    OP_DEVICES,
    OP_EVENT,
    OP_EXCEPTION,
    OP_FLUSH,
    OP_GRAPH,
    OP_HISTOGRAM,
    OP_IMAGE,
    OP_PLACEMENTS,
    OP_PLAN,
    OP_PRUNING,
    OP_QUANTIZATION,
    OP_QUANTIZATION_COSTS,
    OP_SCALAR,
    OP_STEP,
    OP_TENSOR_SUMMARY,
    OP_TEXT,
    Committer,
    shut_down,
    wait_for,
)
from engine.record.schema import (
    DATABASE_NAME,
    RUNNING,
    SCHEMA_VERSION,
    AlertRecord,
    CompressionRecord,
    CutEdgeRecord,
    DeviceRecord,
    GraphRecord,
    OpStatRecord,
    PartitionRecord,
    PlacementRecord,
    PlanRecord,
    PruneStageRecord,
    QuantizationComparisonRecord,
    QuantizationCostRecord,
    QuantizationNodeRecord,
    SensitivityPoint,
    StepRecord,
    TransferRecord,
)
from engine.record.text_values import string_tensor

if TYPE_CHECKING:
    from typing_extensions import Self

logger = logging.getLogger("engine.record")

class RunWriteError(RuntimeError):
    """A write failed on the background thread; raised by the writer's next call."""


class RunWriter:
    """Writes one run. Safe to call from several threads. Never blocks on the database except
    in flush() and close(), and at a step boundary (a step record, or the first record of a
    summary step larger than any before) while the rows queued before it are not yet
    committed: the commit of one step overlaps the next step's work, and a writer that falls
    behind holds training back by at most a step instead of losing a backlog to a kill."""

    def __init__(self, logdir: str | os.PathLike, name: str | None = None, *,
                 config: Mapping[str, Any] | None = None, flush_secs: float = 2.0,
                 exist_ok: bool = False) -> None:
        """Records into <logdir>/<name> (a fresh run-<date>-<time> when name is None). With
        exist_ok the folder may already exist and hold other files (checkpoints, say); if
        it already holds a run, the first free sibling <name>-1, <name>-2, ... is used
        instead, with a warning that names it."""
        if not flush_secs > 0:
            raise ValueError(f"flush_secs must be a positive number of seconds, got {flush_secs}")
        self._config = dict(config or {})
        config_json = _config_json(self._config)
        self._logdir = Path(logdir)
        self._logdir.mkdir(parents=True, exist_ok=True)
        if exist_ok and name is not None:
            self._path = _claim_run_dir(self._logdir, name)
        else:
            self._path = _make_run_dir(self._logdir, name)
        now = time.time()
        store.create_database(self._path, {
            "name": self._path.name, "started": now, "updated": now, "status": RUNNING,
            "pid": os.getpid(), "process": store.process_identity(), "last_step": None,
            "exception": None,
        }, config_json)
        self._lock = threading.Lock()     # orders puts, so a count of them names a prefix
        self._puts = 0                     # items queued so far
        self._top_summary_step: int | None = None
        self._next_step: dict[tuple[str, str], int] = {}
        self._closed = False
        self._committer = Committer(self._path, float(flush_secs))
        self._committer.start()
        # Closes the run if the writer is dropped or the interpreter exits without close().
        self._finalizer = weakref.finalize(self, shut_down, self._committer, 10.0)

    @property
    def name(self) -> str:
        return self._path.name

    @property
    def path(self) -> str:
        return str(self._path)

    @property
    def logdir(self) -> str:
        return str(self._logdir)

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"RunWriter({str(self._path)!r}, {state})"

    # Training-code API.

    def scalar(self, tag: str, value: Any, step: int | None = None,
               wall_time: float | None = None) -> None:
        self._check_usable()
        _check_tag(tag)
        number = _real(tag, value)
        stamp = time.time() if wall_time is None else _wall_time(tag, wall_time)
        self._put_summary(store.SCALAR, tag, step, lambda step: (
            OP_SCALAR, stamp, tag, step, number))

    def histogram(self, tag: str, values: Any, step: int | None = None, bins: int = 30) -> None:
        """Buckets are computed over the finite values; min, max and sum over all of them,
        so a NaN or Inf shows there; count is the number of values."""
        self._check_usable()
        _check_tag(tag)
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)):
            raise TypeError(f"histogram {tag!r}: bins must be an int, got {type(bins).__name__}")
        if bins < 1:
            raise ValueError(f"histogram {tag!r}: bins must be at least 1, got {bins}")
        array = _float_array(tag, values)
        self._put_summary(store.HISTOGRAM, tag, step, lambda step: (
            OP_HISTOGRAM, time.time(), tag, step, array, int(bins)))

    def histogram_from_buckets(self, tag: str, edges: Any, counts: Any,
                               step: int | None = None, *, min: float | None = None,  # noqa: A002
                               max: float | None = None, sum: float | None = None,  # noqa: A002
                               count: int | None = None) -> None:
        """A histogram bucketed already (a tf.summary.histogram's): len(counts) + 1 edges.
        min and max default to the outer edges, count to the counts' total, sum to the
        bucket centres weighted by their counts."""
        self._check_usable()
        _check_tag(tag)
        edge_array = _float_array(tag, edges)
        count_array = _float_array(tag, counts)
        if count_array.size == 0 or edge_array.size != count_array.size + 1:
            raise ValueError(f"histogram {tag!r}: needs at least one bucket and one more edge "
                             f"than counts, got {edge_array.size} edges and "
                             f"{count_array.size} counts")
        if np.any(np.diff(edge_array) < 0):
            raise ValueError(f"histogram {tag!r}: edges must not decrease")
        centres = (edge_array[:-1] + edge_array[1:]) / 2
        stats = (float(edge_array[0]) if min is None else float(min),
                 float(edge_array[-1]) if max is None else float(max),
                 float(centres @ count_array) if sum is None else float(sum),
                 int(count_array.sum()) if count is None else int(count))
        self._put_summary(store.HISTOGRAM, tag, step, lambda step: (
            OP_BUCKETS, time.time(), tag, step, edge_array, count_array, stats))

    def image(self, tag: str, image: Any, step: int | None = None) -> None:
        """One image: uint8 (height, width) or (height, width, 1|3|4), or floats in [0, 1]
        (scaled to 0..255). Images above the blob threshold go to a side file."""
        self._check_usable()
        _check_tag(tag)
        pixels = _image_array(tag, image)
        self._put_summary(store.IMAGE, tag, step, lambda step: (
            OP_IMAGE, time.time(), tag, step, pixels))

    def tensor_summary(self, node: str, values: Any, step: int | None = None) -> None:
        """Statistics of a tensor at a step (dtype, shape, min, max, mean, std over the finite
        values, NaN and Inf counts); `node` names the tensor ("Log:0") or the summary."""
        self._check_usable()
        _check_tag(node)
        array = _real_array(f"tensor summary {node!r}", values)
        self._put_summary("tensor_summary", node, step, lambda step: (
            OP_TENSOR_SUMMARY, time.time(), node, step, array))

    def log_event(self, detail: str) -> None:
        """A line in the run's event log (a session log, a note from training code)."""
        self._check_usable()
        if not isinstance(detail, str) or not detail:
            raise TypeError(f"log_event expects a non-empty str, got {detail!r}")
        self._put((OP_EVENT, time.time(), detail))

    def text(self, tag: str, text: Any, step: int | None = None) -> None:
        """A text summary, markdown: one string, or a string tensor as tf.summary.text takes
        (a list of str is one column, a list of rows a table, a numpy array of strings any
        shape); the Text page draws a tensor as TensorBoard does, a table of cells."""
        self._check_usable()
        _check_tag(tag)
        cells, shape = string_tensor(tag, text)
        self._put_summary(store.TEXT, tag, step, lambda step: (
            OP_TEXT, time.time(), tag, step, cells, shape))

    def flush(self) -> None:
        """Blocks until everything queued so far is committed. A no-op once closed."""
        if self._closed:
            return
        self._check_usable()
        done = threading.Event()
        self._put((OP_FLUSH, done))
        wait_for(done, self._committer, None)
        self._raise_background_error()

    def close(self) -> None:
        """Commits everything, marks the run FINISHED and stops the background thread."""
        if self._closed:
            return
        self._closed = True
        if self._finalizer.detach() is not None:
            shut_down(self._committer, None)
        self._raise_background_error()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is not None and not self._closed:
            text = "".join(traceback.format_exception_only(exc_type, exc)).strip()
            self._put((OP_EXCEPTION, text))
        self.close()

    # Engine-facing API: records from engine.record.schema; the writer fills seq/wall_time.

    def set_config(self, config: Mapping[str, Any]) -> None:
        """Merged (top-level keys) into the run's config."""
        self._check_usable()
        if not isinstance(config, Mapping):
            raise TypeError(f"set_config expects a dict, got {type(config).__name__}")
        update = dict(config)
        _config_json(update)
        with self._lock:
            self._config.update(update)
            merged = _config_json(self._config)
        self._put((OP_CONFIG, time.time(), tuple(map(str, update)), merged))

    def devices(self, records: Sequence[DeviceRecord]) -> None:
        self._check_usable()
        self._put((OP_DEVICES, time.time(), tuple(records)))

    def graph(self, record: GraphRecord) -> None:
        self._check_usable()
        store.check_record("graph", record, GraphRecord)
        self._put((OP_GRAPH, time.time(), record))

    def add_graph(self, graph: Any) -> None:
        """Records a tf.Graph or GraphDef (or a GraphRecord) as the run's graph without
        running it: the Graph page shows it, with the devices it requests."""
        if not isinstance(graph, GraphRecord):
            # The engine's graph types, imported only when asked (the store needs none).
            from engine.graph_def import GraphDef
            from engine.runtime.recording import graph_record
            if not isinstance(graph, GraphDef):
                if not callable(getattr(graph, "as_graph_def", None)):
                    raise TypeError(f"add_graph expects a tf.Graph, GraphDef or GraphRecord, "
                                    f"got {type(graph).__name__}")
                graph = graph.as_graph_def()
            graph = graph_record(graph)
        self.graph(graph)

    def placements(self, records: Sequence[PlacementRecord]) -> None:
        self._check_usable()
        self._put((OP_PLACEMENTS, time.time(), tuple(records)))

    def plan(self, record: PlanRecord, partitions: Sequence[PartitionRecord],
             cut_edges: Sequence[CutEdgeRecord]) -> None:
        self._check_usable()
        store.check_record("plan", record, PlanRecord)
        self._put((OP_PLAN, time.time(), record, tuple(partitions), tuple(cut_edges)))

    def step(self, record: StepRecord, op_stats: Sequence[OpStatRecord],
             transfers: Sequence[TransferRecord]) -> None:
        """A step boundary: everything queued so far is committed as soon as the background
        thread reaches it."""
        self._check_usable()
        store.check_record("step", record, StepRecord)
        self._put((OP_STEP, time.time(), record, tuple(op_stats), tuple(transfers)),
                  boundary=True)

    def alert(self, record: AlertRecord) -> None:
        """A NaN/Inf alert; committed as soon as the background thread reaches it."""
        self._check_usable()
        store.check_record("alert", record, AlertRecord)
        self._put((OP_ALERT, time.time(), record))

    # Pruning (engine/compression/pruning.py's results).

    def sensitivity(self, points: Sequence[SensitivityPoint]) -> None:
        """Points of the per-layer sensitivity curves (accuracy versus sparsity)."""
        self._check_usable()
        points = tuple(points)
        for point in points:
            store.check_record("sensitivity", point, SensitivityPoint)
        self._put((OP_PRUNING, time.time(), store.sensitivity_rows, points))

    def prune_stage(self, record: PruneStageRecord) -> None:
        """One prune-retrain stage with each layer's sparsity after it."""
        self._check_usable()
        store.check_record("prune_stage", record, PruneStageRecord)
        self._put((OP_PRUNING, time.time(), store.prune_stage_rows, record))

    def compression(self, record: CompressionRecord) -> None:
        """The pruned model's compression figures (the last one recorded is the run's)."""
        self._check_usable()
        store.check_record("compression", record, CompressionRecord)
        self._put((OP_PRUNING, time.time(), store.compression_rows, record))

    def quantization_comparison(self, record: QuantizationComparisonRecord) -> None:
        """A per-node comparison of an original graph with its quantized form (both graphs
        recorded with graph() first, as the versions the record names)."""
        self._check_usable()
        store.check_record("quantization_comparison", record, QuantizationComparisonRecord)
        for node in record.nodes:   # a bad record is refused here, not on the thread
            store.check_record("quantization_comparison", node, QuantizationNodeRecord)
            store.quantization_histograms(node)
        self._put((OP_QUANTIZATION, time.time(), record))

    def quantization_costs(self, records: Sequence[QuantizationCostRecord]) -> None:
        """Rows of the quantization cost table (accuracy, file size, inference time)."""
        self._check_usable()
        records = tuple(records)
        for record in records:
            store.check_record("quantization_costs", record, QuantizationCostRecord)
        self._put((OP_QUANTIZATION_COSTS, time.time(), records))

    # Internals.

    def _check_usable(self) -> None:
        if self._closed:
            raise ValueError(f"RunWriter {self._path} is closed")
        self._raise_background_error()

    def _raise_background_error(self) -> None:
        error = self._committer.take_error()
        if error is not None:
            raise RunWriteError(
                f"RunWriter {self._path}: a background write failed: "
                f"{type(error).__name__}: {error}") from error
        if self._committer.stopped and not self._closed:
            raise RunWriteError(f"RunWriter {self._path}: the background writer has stopped")

    def _put(self, item: tuple, *, boundary: bool = False) -> None:
        with self._lock:
            before = self._puts
            self._puts = before + 1
            self._committer.put(item)
        if boundary:
            self._committer.wait_durable(before)

    def _put_summary(self, kind: str, tag: str, step: Any, make_item) -> None:
        """Resolves the step (the tag's next one when None) and queues make_item(step); the
        first record of a summary step larger than any before is a step boundary."""
        key = (kind, tag)
        given = None if step is None else _step_int(tag, step)
        with self._lock:
            resolved = self._next_step.get(key, 0) if given is None else given
            self._next_step[key] = resolved + 1
            top = self._top_summary_step
            boundary = top is not None and resolved > top
            if top is None or resolved > top:
                self._top_summary_step = resolved
            before = self._puts
            self._puts = before + 1
            self._committer.put(make_item(resolved))
        if boundary:
            self._committer.wait_durable(before)


def upgrade_run(run_dir: str | os.PathLike) -> int:
    """Brings a run folder written by an older schema version up to SCHEMA_VERSION (adding
    the tables it lacks; nothing is rewritten) and returns the version it now has. Readers
    never need this: they read an older run's missing tables as empty."""
    db = Path(run_dir) / DATABASE_NAME
    if not db.is_file():
        raise FileNotFoundError(f"{run_dir}: not a run store (no {DATABASE_NAME})")
    conn = store.connect_for_writing(db)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = store.from_json(row[0]) if row else None
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise ValueError(f"{db}: schema version {version!r} cannot be upgraded by this "
                             f"build (it writes version {SCHEMA_VERSION})")
        if version < SCHEMA_VERSION:
            store.upgrade(conn, version)
    finally:
        conn.close()
    return SCHEMA_VERSION


def _make_run_dir(logdir: Path, name: str | None) -> Path:
    """mkdir is the atomic claim on a name, so two writers never share a folder."""
    if name is not None:
        _check_run_name(name)
        path = logdir / name
        try:
            path.mkdir()
        except FileExistsError:
            raise FileExistsError(
                f"run folder {path} already exists; choose another name or pass name=None "
                "for a fresh one") from None
        return path
    base = time.strftime("run-%Y%m%d-%H%M%S")
    for attempt in itertools.count():
        path = logdir / (base if attempt == 0 else f"{base}-{attempt}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise AssertionError("unreachable")


def _claim_run_dir(logdir: Path, name: str) -> Path:
    """<logdir>/<name>, existing or not, unless it holds a run: then the first free sibling
    <name>-1, <name>-2, .... The claim is an exclusively created scratch database, so two
    writers never take one folder."""
    _check_run_name(name)
    for attempt in itertools.count():
        path = logdir / (name if attempt == 0 else f"{name}-{attempt}")
        path.mkdir(exist_ok=True)
        if store.claim_database(path):
            if attempt:
                logger.warning("run folder %s already holds a run; recording into %s instead",
                               logdir / name, path)
            return path
    raise AssertionError("unreachable")


def _check_run_name(name: Any) -> None:
    if not isinstance(name, str):
        raise TypeError(f"run name must be a str, got {type(name).__name__}")
    separators = {os.sep, os.altsep} - {None}
    if name in ("", ".", "..") or any(sep in name for sep in separators):
        raise ValueError(f"run name must be one folder name, got {name!r}")


def _check_tag(tag: Any) -> None:
    if not isinstance(tag, str):
        raise TypeError(f"tag must be a str, got {type(tag).__name__} {tag!r}")
    if not tag:
        raise ValueError("tag must be a non-empty str, got ''")


def _real(tag: str, value: Any) -> float:
    if type(value) is float:
        return value
    if isinstance(value, (str, bytes, complex, np.complexfloating)):
        raise TypeError(f"scalar {tag!r}: value must be a real number, "
                        f"got {type(value).__name__} {value!r}")
    if isinstance(value, np.ndarray):
        if value.size != 1 or value.dtype.kind not in "biuf":
            raise ValueError(f"scalar {tag!r}: value must be one real number, got an array "
                             f"of shape {value.shape} and dtype {value.dtype}")
        return float(value.reshape(()))
    try:
        return float(value)
    except TypeError as exc:
        raise TypeError(f"scalar {tag!r}: value must be a real number, "
                        f"got {type(value).__name__}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 -- torch raises RuntimeError for several elements
        raise ValueError(f"scalar {tag!r}: value must be one real number: {exc}") from None


def _wall_time(tag: str, wall_time: Any) -> float:
    if isinstance(wall_time, (bool, str, bytes)):
        raise TypeError(f"scalar {tag!r}: wall_time must be seconds since the epoch")
    try:
        return float(wall_time)
    except (TypeError, ValueError):
        raise TypeError(f"scalar {tag!r}: wall_time must be seconds since the epoch, "
                        f"got {type(wall_time).__name__}") from None


def _step_int(tag: str, step: Any) -> int:
    if isinstance(step, bool):
        raise TypeError(f"{tag!r}: step must be an int, got bool")
    try:
        return operator.index(step)
    except TypeError:
        raise TypeError(f"{tag!r}: step must be an int, got {type(step).__name__}") from None


def _float_array(tag: str, values: Any) -> np.ndarray:
    """A private float64 copy taken now: the caller may update its tensor after the call."""
    if hasattr(values, "detach"):  # a torch tensor, without importing torch
        values = values.detach().cpu()
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"histogram {tag!r}: values must be numbers: {exc}") from None
    if array.dtype.kind not in "biuf":
        raise TypeError(f"histogram {tag!r}: values must be real numbers, got dtype "
                        f"{array.dtype}")
    return np.array(array, dtype=np.float64).ravel()


def _real_array(what: str, values: Any) -> np.ndarray:
    """A private copy taken now, its dtype kept (bool, int or float)."""
    if hasattr(values, "detach"):  # a torch tensor, without importing torch
        values = values.detach().cpu()
        if str(values.dtype) == "torch.bfloat16":
            values = values.float()
    try:
        array = np.array(values)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}: values must be numbers: {exc}") from None
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{what}: values must be real numbers, got dtype {array.dtype}")
    return array


def _image_array(tag: str, image: Any) -> np.ndarray:
    array = _real_array(f"image {tag!r}", image)
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim != 3 or array.shape[2] not in (1, 3, 4) or 0 in array.shape:
        raise ValueError(f"image {tag!r}: expected (height, width) or (height, width, 1|3|4) "
                         f"pixels, got shape {array.shape}")
    if array.dtype == np.uint8:
        return np.ascontiguousarray(array)
    if array.dtype.kind == "f" and np.all((array >= 0) & (array <= 1)):
        return np.round(array * 255).astype(np.uint8)
    raise TypeError(f"image {tag!r}: pixels must be uint8, or floats in [0, 1]; got "
                    f"{array.dtype} values in [{array.min()}, {array.max()}]")


def _config_json(config: dict) -> str:
    try:
        return store.to_json(config)
    except (TypeError, ValueError):
        for key, value in config.items():
            try:
                store.to_json(value)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"config key {key!r}: {exc}") from None
        raise
