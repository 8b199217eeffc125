"""The run writer's background thread: owns the write connection, turns queued records
into rows, and commits them at every step boundary, whenever it has caught up with the queue,
on flush() and at least every flush_secs. RunWriter (writer.py) only validates and enqueues,
and at a step boundary waits until the steps before it are durable (committer.wait_durable);
if the thread is not at work then (the OS has it descheduled, say), the caller does the work
itself instead of idling."""

from __future__ import annotations

import collections
import threading
import time
from pathlib import Path

from engine.record import store
from engine.record.schema import (
    DATABASE_NAME,
    FINISHED,
    SCALAR_BLOCK_POINTS,
)

MAX_BATCH_ROWS = 50_000   # a backlog is committed in slices so one transaction stays bounded
_LIVENESS_SLICE_SECS = 0.05   # how often a waiter checks that the thread is still alive
# The heartbeat ("updated", "last_step") rides along with a step's commit at most this often:
# it costs a third of a per-step commit. Readers of an unfinished run take the last step from
# the rows themselves (reader.py), so nothing is understated after a kill.
META_EVERY_SECS = 0.25
# SQLite's automatic checkpoint (every 1000 WAL pages) would land on a step's commit every
# few hundred steps, with two fsyncs: up to 20 ms on the training thread's path, and half
# the cost of the commits overall. The thread checkpoints instead, once a second when it
# is idle, on a connection of its own, so commits (its own or a helping writer's) go on.
CHECKPOINT_SECS = 1.0
FIRST_SEQ = 2             # seq 1 is the "run started" event written with the database

# Queue opcodes: the first element of every queued tuple.
(OP_SCALAR, OP_HISTOGRAM, OP_TEXT, OP_CONFIG, OP_DEVICES, OP_GRAPH, OP_PLACEMENTS, OP_PLAN, OP_STEP,
 OP_EXCEPTION, OP_FLUSH, OP_CLOSE, OP_BUCKETS, OP_EVENT, OP_IMAGE, OP_TENSOR_SUMMARY,
 OP_ALERT, OP_PRUNING, OP_QUANTIZATION, OP_QUANTIZATION_COSTS) = range(20)


def wait_for(done: threading.Event, thread: threading.Thread, timeout: float | None) -> None:
    """Waits for the background thread to signal, giving up if it died."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not done.wait(_LIVENESS_SLICE_SECS):
        if not thread.is_alive():
            return
        if deadline is not None and time.monotonic() > deadline:
            return


def shut_down(thread: Committer, timeout: float | None) -> None:
    if not thread.is_alive():
        return
    done = threading.Event()
    thread.put((OP_CLOSE, done))
    if threading.current_thread() is not thread:
        wait_for(done, thread, timeout)


class Committer(threading.Thread):
    """Owns the write connection. Rows are committed at every step boundary (a step record,
    a summary step larger than any before: the previous step is complete) whatever the queue
    still holds, as soon as the queue is drained, on flush(), and at least every flush_secs
    under a stream that never drains. `durable` counts the queued items whose rows are
    committed; the writer waits on it at step boundaries, so a killed process loses at most
    the step in flight while commits overlap the next step's work."""

    def __init__(self, run_dir: Path, flush_secs: float) -> None:
        super().__init__(name=f"RunWriter {run_dir.name}", daemon=True)
        self.run_dir = run_dir
        self.items: collections.deque = collections.deque()
        self.wake = threading.Event()     # set by put()
        # Whoever turns items into rows holds this: the thread, or a writer that found the
        # thread idle at a step boundary (so one connection, one order, one seq counter).
        self._work = threading.Lock()
        # Pending rows wait at most flush_secs, and never so long that the heartbeat goes stale.
        self.commit_secs = min(flush_secs, store.HEARTBEAT_SECS)
        self.conn = store.connect_for_writing(run_dir / DATABASE_NAME, autocheckpoint=False)
        self._checkpointer = store.connect_for_writing(run_dir / DATABASE_NAME,
                                                       autocheckpoint=False)
        self._commits_since_checkpoint = 0
        self._last_checkpoint = time.monotonic()
        self.error: BaseException | None = None
        self.stopped = False
        self._error_lock = threading.Lock()
        self._seq = FIRST_SEQ
        self._tag_ids: dict[tuple[str, str], int] = {}
        # Per scalar tag id, the (seq, step, value, wall_time) points of its unfinished block:
        # the block's row joins the pending rows with its last point, so they commit together.
        self._open_blocks: dict[int, list[tuple]] = {}
        self._new_tags: list[tuple[int, str, str]] = []
        self._pending: dict[str, list[tuple]] = {table: [] for table in store.TABLES}
        self._sql = {table: store.insert_sql(table) for table in store.TABLES}
        self._pending_rows = 0
        self._meta: dict[str, str] = {}   # key -> JSON, upserted with the next commit
        self._commit_due = False
        self._dirty = False            # rows or meta wait for a commit
        self._last_commit = time.monotonic()
        self._last_meta = self._last_commit
        self._taken = 0                # items taken from the queue
        self.durable = 0               # of those, the ones whose rows are committed
        self._durable_changed = threading.Condition()
        self._waiters = 0
        self._max_summary_step: int | None = None
        self._last_step: int | None = None
        self._handlers = {
            OP_SCALAR: self._scalar, OP_HISTOGRAM: self._histogram, OP_TEXT: self._text,
            OP_CONFIG: self._config, OP_DEVICES: self._devices, OP_GRAPH: self._graph,
            OP_PLACEMENTS: self._placements, OP_PLAN: self._plan, OP_STEP: self._step,
            OP_EXCEPTION: self._exception, OP_BUCKETS: self._buckets, OP_EVENT: self._event,
            OP_IMAGE: self._image, OP_TENSOR_SUMMARY: self._tensor_summary,
            OP_ALERT: self._alert, OP_PRUNING: self._pruning,
            OP_QUANTIZATION: self._quantization, OP_QUANTIZATION_COSTS: self._quantization_costs,
        }

    def put(self, item: tuple) -> None:
        """Queues one record (RunWriter calls it under its lock, so puts are ordered)."""
        self.items.append(item)
        self.wake.set()

    def wait_durable(self, count: int) -> None:
        """Blocks until the first `count` queued items are committed (or the thread died:
        the writer's next call reports why). If the thread is not at work, the caller turns
        the items into rows and commits them itself, rather than wait to be scheduled."""
        if self.durable >= count:
            return
        if self._work.acquire(blocking=False):
            try:
                if not self.stopped:
                    self._drain(until=count)
            finally:
                self._work.release()
            if self.durable >= count:
                return
        with self._durable_changed:
            self._waiters += 1
            try:
                while self.durable < count and self.is_alive():
                    self._durable_changed.wait(_LIVENESS_SLICE_SECS)
            finally:
                self._waiters -= 1

    def _mark_durable(self) -> None:
        self.durable = self._taken
        if self._waiters:
            with self._durable_changed:
                self._durable_changed.notify_all()

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
            with self._work:      # a helping writer may be mid-commit
                self.stopped = True
                self._checkpointer.close()
                self.conn.close()

    def _fail(self, exc: BaseException) -> None:
        with self._error_lock:
            if self.error is None:
                self.error = exc

    def _loop(self) -> None:
        while True:
            period = self.commit_secs if self._dirty else store.HEARTBEAT_SECS
            self.wake.wait(max(self._last_commit + period - time.monotonic(), 0.0))
            self.wake.clear()
            with self._work:
                if self._drain(until=None):
                    return
                period = self.commit_secs if self._dirty else store.HEARTBEAT_SECS
                if time.monotonic() - self._last_commit >= period:
                    self._commit(heartbeat=True)
            self._checkpoint_if_due()

    def _checkpoint_if_due(self) -> None:
        """Folds the WAL into the database (PASSIVE: it never waits for readers or the
        writer) once a second while records keep coming."""
        now = time.monotonic()
        if self._commits_since_checkpoint and now - self._last_checkpoint >= CHECKPOINT_SECS:
            self._commits_since_checkpoint = 0
            self._last_checkpoint = now
            try:
                self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except Exception as exc:  # noqa: BLE001 -- reported on the user's next call
                self._fail(exc)

    def _drain(self, until: int | None) -> bool:
        """Turns queued items into rows and commits them, holding self._work: all of them
        (the thread; True once it has closed the run), or until the first `until` are
        durable (a writer helping; it leaves close() to the thread)."""
        items = self.items
        while items:
            opcode = items[0][0]
            if opcode == OP_CLOSE and until is not None:
                return False
            item = items.popleft()
            self._taken += 1
            if opcode == OP_FLUSH:
                self._commit(heartbeat=True)
                item[1].set()
            elif opcode == OP_CLOSE:
                self._close(item[1])
                return True
            else:
                self._handle(item)
            if until is not None and self._taken >= until:
                if self._dirty:
                    self._commit()
                return False
        return False

    def _handle(self, item: tuple) -> None:
        try:
            self._handlers[item[0]](item)
        except Exception as exc:  # noqa: BLE001 -- one bad record must not stop the run
            self._fail(exc)
        if not self._dirty:
            self._mark_durable()
        elif (self._commit_due or not self.items or self._pending_rows >= MAX_BATCH_ROWS
              or time.monotonic() - self._last_commit >= self.commit_secs):
            self._commit()

    def _close(self, done: threading.Event) -> None:
        try:
            self._checkpointer.close()
            self._finish()
        finally:
            # close() returns only once the database file is released.
            self.conn.close()
            self._mark_durable()
            done.set()

    def _commit(self, heartbeat: bool = False) -> None:
        # A commit per step is the price of durability, so the Python around it is kept lean:
        # numbers are written as JSON by repr, and only tables holding rows are visited.
        now = time.monotonic()
        if heartbeat or self._meta or now - self._last_meta >= META_EVERY_SECS:
            self._meta["updated"] = repr(time.time())
            self._meta["last_step"] = "null" if self._last_step is None else str(self._last_step)
            self._last_meta = now
        conn = self.conn
        try:
            conn.execute("BEGIN")
            if self._new_tags:
                conn.executemany(store.TAG_INSERT, self._new_tags)
            for table, rows in self._pending.items():
                if rows:
                    conn.executemany(self._sql[table], rows)
                    rows.clear()
            if self._meta:
                conn.executemany(store.META_UPSERT, self._meta.items())
            conn.execute("COMMIT")
            self._commits_since_checkpoint += 1
            self._new_tags.clear()
            self._meta.clear()
        except Exception as exc:  # noqa: BLE001 -- reported on the user's next call
            self._rollback()
            self._fail(exc)
            for rows in self._pending.values():
                rows.clear()
            # Those blocks' rows are lost: no block may describe them. The tags' rows then
            # disagree with their blocks and readers draw them from the rows.
            self._open_blocks.clear()
        finally:
            self._pending_rows = 0
            self._commit_due = False
            self._dirty = False
            self._last_commit = time.monotonic()
            self._mark_durable()   # a failed commit is reported; waiting on it would hang

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
        self._dirty = True

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
        self._dirty = True
        block = self._open_blocks.get(tag_id)
        if block is None:
            block = self._open_blocks[tag_id] = []
        block.append((seq, step, value, wall_time))
        if len(block) == SCALAR_BLOCK_POINTS:
            self._close_block(tag_id, block, wall_time)

    def _close_block(self, tag_id: int, block: list[tuple], wall_time: float) -> None:
        try:
            row = store.scalar_block_row(self._next_seq(), wall_time, tag_id, block)
        finally:
            block.clear()
        self._pending["scalar_blocks"].append(row)
        self._pending_rows += 1

    def _histogram(self, item: tuple) -> None:
        _, wall_time, tag, step, values, bins = item
        row = store.histogram_row(self.run_dir, self._next_seq(), wall_time,
                                  self._tag_id(store.HISTOGRAM, tag), step, values, bins)
        self._note_summary_step(step)
        self._add({"histograms": [row]})

    def _buckets(self, item: tuple) -> None:
        _, wall_time, tag, step, edges, counts, stats = item
        row = store.bucket_row(self.run_dir, self._next_seq(), wall_time,
                               self._tag_id(store.HISTOGRAM, tag), step, edges, counts, stats)
        self._note_summary_step(step)
        self._add({"histograms": [row]})

    def _event(self, item: tuple) -> None:
        _, wall_time, detail = item
        self._add({"run_events": [(self._next_seq(), wall_time, "run", detail)]})
        self._commit_due = True

    def _image(self, item: tuple) -> None:
        _, wall_time, tag, step, pixels = item
        row = store.image_row(self.run_dir, self._next_seq(), wall_time,
                              self._tag_id(store.IMAGE, tag), step, pixels)
        self._note_summary_step(step)
        self._add({"images": [row]})

    def _tensor_summary(self, item: tuple) -> None:
        _, wall_time, node, step, values = item
        record = store.tensor_summary(node, step, values)
        self._note_summary_step(step)
        self._add({"tensor_summaries": [store.tensor_summary_row(self._next_seq(), wall_time,
                                                                 record)]})

    def _alert(self, item: tuple) -> None:
        _, wall_time, record = item
        self._add({"alerts": [store.alert_row(self._next_seq(), wall_time, record)]})
        self._note_step(record.step)
        self._commit_due = True

    def _pruning(self, item: tuple) -> None:
        # item: (OP_PRUNING, wall_time, encoder, payload); encoder is a store.*_rows function.
        _, wall_time, encoder, payload = item
        self._add(encoder(self._next_seq, wall_time, payload))
        self._commit_due = True

    def _text(self, item: tuple) -> None:
        _, wall_time, tag, step, cells, shape = item
        row = store.text_row(self.run_dir, self._next_seq(), wall_time,
                             self._tag_id(store.TEXT, tag), step, cells, shape)
        self._note_summary_step(step)
        self._add({"texts": [row]})

    def _config(self, item: tuple) -> None:
        _, wall_time, keys, merged = item
        self._meta["config"] = merged
        self._dirty = True
        detail = "config updated: " + ", ".join(keys)
        self._add({"run_events": [(self._next_seq(), wall_time, "run", detail)]})
        self._commit_due = True

    def _exception(self, item: tuple) -> None:
        self._meta["exception"] = store.to_json(item[1])
        self._dirty = True

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

    def _quantization(self, item: tuple) -> None:
        _, wall_time, record = item
        self._add(store.quantization_rows(self.run_dir, self._next_seq, wall_time, record))
        self._commit_due = True

    def _quantization_costs(self, item: tuple) -> None:
        _, wall_time, records = item
        self._add(store.quantization_cost_rows(self._next_seq, wall_time, records))
        self._commit_due = True
