"""RunWriter: records one run into <logdir>/<name>/ for training code and for the engine.
Public calls only validate and enqueue; one background thread turns records into rows and
commits them in batches at step boundaries, on flush(), and every flush_secs."""

from __future__ import annotations

import itertools
import operator
import os
import queue
import threading
import time
import traceback
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.record import store
from engine.record.schema import (
    DATABASE_NAME,
    FINISHED,
    RUNNING,
    CutEdgeRecord,
    DeviceRecord,
    GraphRecord,
    OpStatRecord,
    PartitionRecord,
    PlacementRecord,
    PlanRecord,
    StepRecord,
    TransferRecord,
)

if TYPE_CHECKING:
    from typing_extensions import Self

MAX_BATCH_ROWS = 50_000   # a backlog is committed in slices so one transaction stays bounded
FIRST_SEQ = 2             # seq 1 is the "run started" event written with the database

# Queue opcodes: the first element of every queued tuple.
(_SCALAR, _HISTOGRAM, _TEXT, _CONFIG, _DEVICES, _GRAPH, _PLACEMENTS, _PLAN, _STEP,
 _EXCEPTION, _FLUSH, _CLOSE) = range(12)


class RunWriteError(RuntimeError):
    """A write failed on the background thread; raised by the writer's next call."""


class RunWriter:
    """Writes one run. Safe to call from several threads; never blocks on the database
    except in flush() and close()."""

    def __init__(self, logdir: str | os.PathLike, name: str | None = None, *,
                 config: Mapping[str, Any] | None = None, flush_secs: float = 2.0) -> None:
        if not flush_secs > 0:
            raise ValueError(f"flush_secs must be a positive number of seconds, got {flush_secs}")
        self._config = dict(config or {})
        config_json = _config_json(self._config)
        self._logdir = Path(logdir)
        self._logdir.mkdir(parents=True, exist_ok=True)
        self._path = _make_run_dir(self._logdir, name)
        now = time.time()
        store.create_database(self._path, {
            "name": self._path.name, "started": now, "updated": now, "status": RUNNING,
            "pid": os.getpid(), "process": store.process_identity(), "last_step": None,
            "exception": None,
        }, config_json)
        self._lock = threading.Lock()
        self._next_step: dict[tuple[str, str], int] = {}
        self._closed = False
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._committer = _Committer(self._path, self._queue, float(flush_secs))
        self._committer.start()
        # Closes the run if the writer is dropped or the interpreter exits without close().
        self._finalizer = weakref.finalize(self, _shut_down, self._queue, self._committer, 10.0)

    @property
    def name(self) -> str:
        return self._path.name

    @property
    def path(self) -> str:
        return str(self._path)

    @property
    def logdir(self) -> str:
        return str(self._logdir)

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
        step = self._resolve_step(store.SCALAR, tag, step)
        self._queue.put((_SCALAR, stamp, tag, step, number))

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
        step = self._resolve_step(store.HISTOGRAM, tag, step)
        self._queue.put((_HISTOGRAM, time.time(), tag, step, array, int(bins)))

    def text(self, tag: str, text: str, step: int | None = None) -> None:
        self._check_usable()
        _check_tag(tag)
        if not isinstance(text, str):
            raise TypeError(f"text {tag!r}: text must be a str, got {type(text).__name__}")
        step = self._resolve_step(store.TEXT, tag, step)
        self._queue.put((_TEXT, time.time(), tag, step, text))

    def flush(self) -> None:
        """Blocks until everything queued so far is committed. A no-op once closed."""
        if self._closed:
            return
        self._check_usable()
        done = threading.Event()
        self._queue.put((_FLUSH, done))
        _wait(done, self._committer, None)
        self._raise_background_error()

    def close(self) -> None:
        """Commits everything, marks the run FINISHED and stops the background thread."""
        if self._closed:
            return
        self._closed = True
        if self._finalizer.detach() is not None:
            _shut_down(self._queue, self._committer, None)
        self._raise_background_error()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is not None and not self._closed:
            text = "".join(traceback.format_exception_only(exc_type, exc)).strip()
            self._queue.put((_EXCEPTION, text))
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
        self._queue.put((_CONFIG, time.time(), tuple(map(str, update)), merged))

    def devices(self, records: Sequence[DeviceRecord]) -> None:
        self._check_usable()
        self._queue.put((_DEVICES, time.time(), tuple(records)))

    def graph(self, record: GraphRecord) -> None:
        self._check_usable()
        store.check_record("graph", record, GraphRecord)
        self._queue.put((_GRAPH, time.time(), record))

    def placements(self, records: Sequence[PlacementRecord]) -> None:
        self._check_usable()
        self._queue.put((_PLACEMENTS, time.time(), tuple(records)))

    def plan(self, record: PlanRecord, partitions: Sequence[PartitionRecord],
             cut_edges: Sequence[CutEdgeRecord]) -> None:
        self._check_usable()
        store.check_record("plan", record, PlanRecord)
        self._queue.put((_PLAN, time.time(), record, tuple(partitions), tuple(cut_edges)))

    def step(self, record: StepRecord, op_stats: Sequence[OpStatRecord],
             transfers: Sequence[TransferRecord]) -> None:
        """A step boundary: everything queued so far is committed as soon as the background
        thread reaches it."""
        self._check_usable()
        store.check_record("step", record, StepRecord)
        self._queue.put((_STEP, time.time(), record, tuple(op_stats), tuple(transfers)))

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

    def _resolve_step(self, kind: str, tag: str, step: Any) -> int:
        key = (kind, tag)
        with self._lock:
            resolved = self._next_step.get(key, 0) if step is None else _step_int(tag, step)
            self._next_step[key] = resolved + 1
        return resolved


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


def _wait(done: threading.Event, thread: threading.Thread, timeout: float | None) -> None:
    """Waits for the background thread to signal, giving up if it died."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not done.wait(0.05):
        if not thread.is_alive():
            return
        if deadline is not None and time.monotonic() > deadline:
            return


def _shut_down(items: queue.SimpleQueue, thread: _Committer, timeout: float | None) -> None:
    if not thread.is_alive():
        return
    done = threading.Event()
    items.put((_CLOSE, done))
    if threading.current_thread() is not thread:
        _wait(done, thread, timeout)


class _Committer(threading.Thread):
    """Owns the write connection. Rows wait in memory until a commit point: a step record,
    a summary step larger than any before (the previous step is complete), flush(), or
    flush_secs since the last commit. Commit points are honoured once the queue is drained
    (or the batch is large), so a backlog costs one transaction, not one per step."""

    def __init__(self, run_dir: Path, items: queue.SimpleQueue, flush_secs: float) -> None:
        super().__init__(name=f"RunWriter {run_dir.name}", daemon=True)
        self.run_dir = run_dir
        self.items = items
        # Pending rows wait at most flush_secs, and never so long that the heartbeat goes stale.
        self.commit_secs = min(flush_secs, store.HEARTBEAT_SECS)
        self.conn = store.connect_for_writing(run_dir / DATABASE_NAME)
        self.error: BaseException | None = None
        self.stopped = False
        self._error_lock = threading.Lock()
        self._seq = FIRST_SEQ
        self._tag_ids: dict[tuple[str, str], int] = {}
        self._new_tags: list[tuple[int, str, str]] = []
        self._pending: dict[str, list[tuple]] = {table: [] for table in store.TABLES}
        self._sql = {table: store.insert_sql(table) for table in store.TABLES}
        self._pending_rows = 0
        self._meta: dict[str, str] = {}   # key -> JSON, upserted with the next commit
        self._commit_due = False
        self._last_commit = time.monotonic()
        self._max_summary_step: int | None = None
        self._last_step: int | None = None
        self._handlers = {
            _SCALAR: self._scalar, _HISTOGRAM: self._histogram, _TEXT: self._text,
            _CONFIG: self._config, _DEVICES: self._devices, _GRAPH: self._graph,
            _PLACEMENTS: self._placements, _PLAN: self._plan, _STEP: self._step,
            _EXCEPTION: self._exception,
        }

    def take_error(self) -> BaseException | None:
        if self.error is None:
            return None
        with self._error_lock:
            error, self.error = self.error, None
        return error

    def run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 -- it must reach the user's next call
            self._fail(exc)
        finally:
            self.stopped = True
            self.conn.close()

    def _fail(self, exc: BaseException) -> None:
        with self._error_lock:
            if self.error is None:
                self.error = exc

    def _loop(self) -> None:
        while True:
            period = self.commit_secs if self._pending_rows else store.HEARTBEAT_SECS
            timeout = self._last_commit + period - time.monotonic()
            try:
                item = self.items.get(timeout=max(timeout, 0.0))
            except queue.Empty:
                self._commit()
                continue
            opcode = item[0]
            if opcode == _FLUSH:
                self._commit()
                item[1].set()
                continue
            if opcode == _CLOSE:
                try:
                    self._finish()
                finally:
                    # close() returns only once the database file is released.
                    self.conn.close()
                    item[1].set()
                return
            try:
                self._handlers[opcode](item)
            except Exception as exc:  # noqa: BLE001 -- one bad record must not stop the run
                self._fail(exc)
            if self._pending_rows and (
                    (self._commit_due
                     and (self.items.empty() or self._pending_rows >= MAX_BATCH_ROWS))
                    or time.monotonic() - self._last_commit >= self.commit_secs):
                self._commit()

    def _commit(self) -> None:
        self._meta["updated"] = store.to_json(time.time())
        self._meta["last_step"] = store.to_json(self._last_step)
        try:
            self.conn.execute("BEGIN")
            if self._new_tags:
                self.conn.executemany(store.TAG_INSERT, self._new_tags)
            for table, rows in self._pending.items():
                if rows:
                    self.conn.executemany(self._sql[table], rows)
            self.conn.executemany(store.META_UPSERT, self._meta.items())
            self.conn.execute("COMMIT")
            self._new_tags.clear()
            self._meta.clear()
        except Exception as exc:  # noqa: BLE001 -- reported on the user's next call
            self._rollback()
            self._fail(exc)
        finally:
            for rows in self._pending.values():
                rows.clear()
            self._pending_rows = 0
            self._commit_due = False
            self._last_commit = time.monotonic()

    def _rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def _finish(self) -> None:
        detail = "run finished"
        exception = self._meta.get("exception")
        if exception is not None:
            detail += " with an exception: " + store.from_json(exception)
        self._add({"run_events": [(self._next_seq(), time.time(), "run", detail)]})
        self._meta["status"] = store.to_json(FINISHED)
        self._meta["finished"] = store.to_json(time.time())
        self._commit()
        # Fold the WAL back into the database so a finished run is one self-contained file.
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _next_seq(self) -> int:
        seq = self._seq
        self._seq += 1
        return seq

    def _add(self, rows_by_table: dict[str, list[tuple]]) -> None:
        """Rows of one record become pending together (or not at all, if encoding failed)."""
        for table, rows in rows_by_table.items():
            self._pending[table].extend(rows)
            self._pending_rows += len(rows)

    def _tag_id(self, kind: str, tag: str) -> int:
        key = (kind, tag)
        tag_id = self._tag_ids.get(key)
        if tag_id is None:
            tag_id = self._tag_ids[key] = len(self._tag_ids) + 1
            self._new_tags.append((tag_id, kind, tag))
        return tag_id

    def _note_summary_step(self, step: int) -> None:
        if self._max_summary_step is None or step > self._max_summary_step:
            if self._max_summary_step is not None:
                self._commit_due = True
            self._max_summary_step = step
        self._note_step(step)

    def _note_step(self, step: int) -> None:
        if self._last_step is None or step > self._last_step:
            self._last_step = step

    def _scalar(self, item: tuple) -> None:
        # The hot path (one call per logged scalar), so the helpers are inlined.
        _, wall_time, tag, step, value = item
        top = self._max_summary_step
        if top is None or step > top:
            self._note_summary_step(step)
        tag_id = self._tag_ids.get((store.SCALAR, tag)) or self._tag_id(store.SCALAR, tag)
        seq = self._seq
        self._seq = seq + 1
        self._pending["scalars"].append((seq, wall_time, tag_id, step, value))
        self._pending_rows += 1

    def _histogram(self, item: tuple) -> None:
        _, wall_time, tag, step, values, bins = item
        row = store.histogram_row(self.run_dir, self._next_seq(), wall_time,
                                  self._tag_id(store.HISTOGRAM, tag), step, values, bins)
        self._note_summary_step(step)
        self._add({"histograms": [row]})

    def _text(self, item: tuple) -> None:
        _, wall_time, tag, step, text = item
        row = store.text_row(self.run_dir, self._next_seq(), wall_time,
                             self._tag_id(store.TEXT, tag), step, text)
        self._note_summary_step(step)
        self._add({"texts": [row]})

    def _config(self, item: tuple) -> None:
        _, wall_time, keys, merged = item
        self._meta["config"] = merged
        detail = "config updated: " + ", ".join(keys)
        self._add({"run_events": [(self._next_seq(), wall_time, "run", detail)]})
        self._commit_due = True

    def _exception(self, item: tuple) -> None:
        self._meta["exception"] = store.to_json(item[1])

    def _devices(self, item: tuple) -> None:
        _, wall_time, records = item
        self._add(store.device_rows(self._next_seq, wall_time, records))
        self._commit_due = True

    def _graph(self, item: tuple) -> None:
        _, wall_time, record = item
        self._add(store.graph_rows(self.run_dir, self._next_seq, wall_time, record))
        self._commit_due = True

    def _placements(self, item: tuple) -> None:
        _, wall_time, records = item
        self._add(store.placement_rows(self._next_seq, wall_time, records))
        self._commit_due = True

    def _plan(self, item: tuple) -> None:
        _, wall_time, record, partitions, cut_edges = item
        self._add(store.plan_rows(self.run_dir, self._next_seq, wall_time, record, partitions,
                                  cut_edges))
        self._commit_due = True

    def _step(self, item: tuple) -> None:
        _, wall_time, record, op_stats, transfers = item
        self._add(store.step_rows(self._next_seq, wall_time, record, op_stats, transfers))
        self._note_step(record.step)
        self._commit_due = True
