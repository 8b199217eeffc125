"""RunReader and list_runs: typed, read-only queries over a run folder written by RunWriter.
Every query opens its own short read-only connection, so a reader holds nothing open between
calls and works while a writer is live (WAL) or after the writing process was killed."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import errno
import functools
import itertools
import json
import math
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.record import store
from engine.record.schema import (
    BLOCK,
    DAMAGED,
    DATABASE_NAME,
    FINISHED,
    INTERRUPTED,
    RUNNING,
    SCALAR_BLOCK_FIELDS,
    SCHEMA_VERSION,
    UNREADABLE,
    AlertRecord,
    CompressionRecord,
    CutEdgeRecord,
    DeviceRecord,
    GraphRecord,
    HistogramRecord,
    ImageRecord,
    LayerSparsityRecord,
    NodeRecord,
    OpStatRecord,
    PartitionRecord,
    PlacementRecord,
    PlanRecord,
    PruneStageRecord,
    QuantizationComparisonRecord,
    QuantizationCostRecord,
    QuantizationNodeRecord,
    RunInfo,
    ScalarBlocks,
    SensitivityPoint,
    StepRecord,
    TensorSpec,
    TensorSummaryRecord,
    TextRecord,
    TransferRecord,
)

if TYPE_CHECKING:
    from typing_extensions import Self

    from engine.record.event_files import EventFileReader


class RunStoreError(ValueError):
    """A folder is not a run store this reader can read, or a record in it is damaged; the
    message names the path and what is wrong."""


class RunStoreKeyError(RunStoreError, KeyError):
    """The run has no such tag, step, ...: a lookup miss, not damage (still a KeyError, as a
    mapping's miss is)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class RunReaderUsageError(ValueError):
    """The caller asked something malformed (a negative limit, a closed reader)."""


def _damage_is_a_store_error(query):
    """A damaged row (bad JSON or UTF-8, a missing field, a wrong type) is the run's fault,
    never the caller's: whatever decoding it trips over, the query raises RunStoreError naming
    the database and what was wrong."""
    @functools.wraps(query)
    def guarded(self, *args, **kwargs):
        try:
            return query(self, *args, **kwargs)
        except (RunStoreError, RunReaderUsageError):
            raise
        except OSError as exc:      # a file vanished or may not be read mid-query
            raise RunStoreError(f"{self._db}: cannot read in {query.__name__}() "
                                f"({type(exc).__name__}: {exc})") from exc
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raise RunStoreError(f"{self._db}: damaged record in {query.__name__}() "
                                f"({type(exc).__name__}: {exc})") from exc
    return guarded


class RunFolderReader:
    """What every reader of a run folder shares (RunReader, event_files.EventFileReader):
    its name and path, close, and use as a context manager."""

    _dir: Path
    _closed: bool

    @property
    def name(self) -> str:
        return self._dir.name

    @property
    def path(self) -> str:
        return str(self._dir)

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self._dir)!r})"


class RunReader(RunFolderReader):
    """Read-only view of one run folder. Cheap to create; safe to share between threads."""

    def __init__(self, run_dir: str | os.PathLike) -> None:
        self._locate(run_dir)
        with self._connect() as conn:
            _check_version(self._db, _read_meta(self._db, conn))

    def _locate(self, run_dir: str | os.PathLike) -> None:
        """The folder and its database, refused unless both exist (no connection yet)."""
        self._dir = Path(run_dir)
        self._db = self._dir / DATABASE_NAME
        self._closed = False
        try:
            if not self._dir.is_dir():
                raise RunStoreError(f"{self._dir}: not a run store (no such folder)")
            if not self._db.is_file():
                raise RunStoreError(f"{self._dir}: not a run store (no {DATABASE_NAME})")
        except OSError as exc:     # e.g. PermissionError on a folder we may not enter
            raise RunStoreError(f"{self._dir}: cannot read: {exc}") from exc

    # Run and summaries.

    def info(self) -> RunInfo:
        with self._connect() as conn:
            return self._info(conn, _read_meta(self._db, conn))

    def _info(self, conn: sqlite3.Connection, meta: dict[str, Any]) -> RunInfo:
        tags = _tags(conn, store.SCALAR)
        last_step = meta.get("last_step")
        status = _status(meta, time.time())
        if status != FINISHED:   # the heartbeat may lag the rows of a live or killed run
            last_step = _latest(last_step, _last_recorded_step(conn))
        return RunInfo(
            name=self._dir.name, path=str(self._dir), status=status,
            started=meta.get("started"), updated=meta.get("updated"),
            num_steps=0 if last_step is None else last_step + 1, tags=tuple(tags),
            config=meta.get("config") or {}, exception=meta.get("exception"))

    def tags(self) -> list[str]:
        with self._connect() as conn:
            return _tags(conn, store.SCALAR)

    def histogram_tags(self) -> list[str]:
        with self._connect() as conn:
            return _tags(conn, store.HISTOGRAM)

    def text_tags(self) -> list[str]:
        with self._connect() as conn:
            return _tags(conn, store.TEXT)

    def scalars(self, tag: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps int64, values float64) in step order (ties in the order written)."""
        with self._connect() as conn:
            tag_id = self._tag_id(conn, store.SCALAR, tag)
            rows = conn.execute("SELECT step, value FROM scalars WHERE tag_id = ? "
                                "ORDER BY step, seq", (tag_id,))
            # Straight from the cursor into one array: no list of a million row tuples.
            # SQLite stores NaN as NULL; the float64 field turns None back into NaN.
            points = np.fromiter(rows, dtype=_SCALAR_ROW)
        return points["step"].copy(), points["value"].copy()

    def scalar_series(self, tag: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(steps int64, values float64, wall times float64) in step order: one read where
        a page needs all three (cheaper than scalars() and scalar_wall_times())."""
        with self._connect() as conn:
            tag_id = self._tag_id(conn, store.SCALAR, tag)
            rows = conn.execute("SELECT step, value, wall_time FROM scalars WHERE tag_id = ? "
                                "ORDER BY step, seq", (tag_id,))
            points = np.fromiter(rows, dtype=_SCALAR_SERIES_ROW)
        return points["step"].copy(), points["value"].copy(), points["wall_time"].copy()

    def scalar_values(self, tag: str) -> tuple[np.ndarray, np.ndarray]:
        """(row ids int64, values float64) in step order: the least a drawn curve needs of
        every point, read from the covering index alone (no table row is visited, which
        makes it about twice as fast as scalar_series). scalar_points(ids) gives the steps
        and wall times of the rows a downsampled curve keeps. RunReader only."""
        with self._connect() as conn:
            tag_id = self._tag_id(conn, store.SCALAR, tag)
            rows = conn.execute("SELECT seq, value FROM scalars WHERE tag_id = ? "
                                "ORDER BY step, seq", (tag_id,))
            # One flat float64 run of seq, value, seq, ... (a third cheaper than filling a
            # structured array row by row); seqs below 2**53 are exact in float64, and a
            # NULL (NaN as SQLite stores it) turns back into NaN.
            flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.float64)
        points = flat.reshape(-1, 2)
        return points[:, 0].astype(np.int64), points[:, 1].copy()

    def scalar_points(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(steps int64, wall times float64) of the scalar rows with these ids (from
        scalar_values), in the order given. Rows are never changed once written, so this
        may run in a later transaction than the read that found the ids."""
        wanted = np.asarray(ids, dtype=np.int64)
        found: dict[int, tuple[int, float]] = {}
        with self._connect() as conn:
            for start in range(0, wanted.size, _IDS_PER_QUERY):
                chunk = wanted[start:start + _IDS_PER_QUERY].tolist()
                marks = ",".join("?" * len(chunk))
                found.update((seq, (step, wall)) for seq, step, wall in conn.execute(
                    f"SELECT seq, step, wall_time FROM scalars WHERE seq IN ({marks})", chunk))
        missing = [seq for seq in wanted.tolist() if seq not in found]
        if missing:
            raise RunStoreKeyError(f"no scalar row {missing[0]} in run {self._dir} "
                                   f"({len(missing)} of {wanted.size} asked are missing)")
        pairs = [found[seq] for seq in wanted.tolist()]
        return (np.fromiter((step for step, _ in pairs), np.int64, len(pairs)),
                np.fromiter((wall for _, wall in pairs), np.float64, len(pairs)))

    def scalar_blocks(self, tag: str, first_step: int | None = None,
                      last_step: int | None = None) -> ScalarBlocks | None:
        """The tag's points with steps in [first_step, last_step] (all when None) as the
        writer's blocks lying wholly in that range plus the raw points around them: a few
        thousand rows to read for a million points. None when the blocks cannot stand for
        the rows: a run written before blocks (schema version < 5) or a tag without one
        (fewer than SCALAR_BLOCK_POINTS points), a tag whose steps go back (the order
        written is then not the step order), or rows that no block and no edge accounts for
        (a failed commit, rows written by another program). RunReader only."""
        low = _STEP_MIN if first_step is None else max(int(first_step), _STEP_MIN)
        high = _STEP_MAX if last_step is None else min(int(last_step), _STEP_MAX)
        with self._connect() as conn:
            tag_id = self._tag_id(conn, store.SCALAR, tag)
            if not _has_table(conn, "scalar_blocks") or low > high:
                return None
            rows = conn.execute("SELECT first_seq, last_seq, body FROM scalar_blocks "
                                "WHERE tag_id = ? ORDER BY last_seq", (tag_id,)).fetchall()
            blocks = _block_array(rows)
            if not rows or not _blocks_in_step_order(blocks):
                return None
            inside = np.flatnonzero((blocks[:, BLOCK["first_step"]] >= low)
                                    & (blocks[:, BLOCK["last_step"]] <= high))
            if inside.size:     # in step order, so the blocks inside are one run of them
                first_seq, last_seq = rows[inside[0]][0], rows[inside[-1]][1]
                head_high = int(blocks[inside[0], BLOCK["first_step"]])
                tail_low = int(blocks[inside[-1], BLOCK["last_step"]])
            else:
                # Every row in the range is in the head; the tail (seq > _SEQ_MAX) is empty.
                first_seq, last_seq, head_high, tail_low = _SEQ_MAX, _SEQ_MAX, high, high
            head, tail = _head_and_tail(conn, tag_id, (low, high), (first_seq, last_seq),
                                        (head_high, tail_low))
            # The rows the parts must add up to: one pass over the tag's index entries, no
            # row decoded (a tenth of reading the values).
            if first_step is None and last_step is None:
                counting = ("", (tag_id,))
            else:
                counting = (" AND step BETWEEN ? AND ?", (tag_id, low, high))
            (count,) = conn.execute("SELECT COUNT(*) FROM scalars WHERE tag_id = ?"
                                    + counting[0], counting[1]).fetchone()
        found = ScalarBlocks(head, blocks[inside], tail)
        return found if found.count == count else None

    def scalar_range(self, tag: str, first_step: int, last_step: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(steps, values, wall times) of the tag's points with steps in [first_step,
        last_step], in step order: a range scan of the tag's index, no other row read (a
        zoomed curve's points). RunReader only."""
        low, high = max(int(first_step), _STEP_MIN), min(int(last_step), _STEP_MAX)
        with self._connect() as conn:
            tag_id = self._tag_id(conn, store.SCALAR, tag)
            return _scalar_rows(conn, "step BETWEEN ? AND ?", (tag_id, low, high))

    def scalar_steps_around(self, tag: str, first_step: int, last_step: int
                            ) -> tuple[int | None, int | None]:
        """The tag's last step below first_step and its first above last_step (None where
        there is none): the neighbours a zoomed curve draws to, so its line reaches the
        plot's edges. Two index probes. RunReader only."""
        low, high = max(int(first_step), _STEP_MIN), min(int(last_step), _STEP_MAX)
        with self._connect() as conn:
            tag_id = self._tag_id(conn, store.SCALAR, tag)
            (before,) = conn.execute("SELECT MAX(step) FROM scalars WHERE tag_id = ? AND "
                                     "step < ?", (tag_id, low)).fetchone()
            (after,) = conn.execute("SELECT MIN(step) FROM scalars WHERE tag_id = ? AND "
                                    "step > ?", (tag_id, high)).fetchone()
        return before, after

    def scalar_blocks_between(self, tag: str, first_step: int, last_step: int
                              ) -> ScalarBlocks | None:
        """scalar_blocks(tag, first_step, last_step) for a zoom: only the blocks between the
        range's first and last rows are read (two index probes find their seqs), and the
        rows are not counted again, so its cost follows the range, not the tag. For a tag
        that scalar_blocks(tag) draws (the caller checks that first: every block in step
        order, every row accounted for); None where a block read is out of order or there
        are no blocks. RunReader only."""
        low, high = max(int(first_step), _STEP_MIN), min(int(last_step), _STEP_MAX)
        empty = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
        with self._connect() as conn:
            tag_id = self._tag_id(conn, store.SCALAR, tag)
            if not _has_table(conn, "scalar_blocks"):
                return None
            first = conn.execute("SELECT seq FROM scalars WHERE tag_id = ? AND step >= ? "
                                 "ORDER BY step, seq LIMIT 1", (tag_id, low)).fetchone()
            last = conn.execute("SELECT seq FROM scalars WHERE tag_id = ? AND step <= ? "
                                "ORDER BY step DESC, seq DESC LIMIT 1", (tag_id, high)).fetchone()
            if first is None or last is None or low > high or first[0] > last[0]:
                return ScalarBlocks(empty, np.zeros((0, len(SCALAR_BLOCK_FIELDS))), empty)
            rows = conn.execute("SELECT first_seq, last_seq, body FROM scalar_blocks "
                                "WHERE tag_id = ? AND last_seq BETWEEN ? AND ? AND first_seq "
                                ">= ? ORDER BY last_seq",
                                (tag_id, first[0], last[0], first[0])).fetchall()
            blocks = _block_array(rows)
            if rows and not _blocks_in_step_order(blocks):
                return None
            if rows:
                first_seq, last_seq = rows[0][0], rows[-1][1]
                head_high = int(blocks[0, BLOCK["first_step"]])
                tail_low = int(blocks[-1, BLOCK["last_step"]])
            else:
                first_seq, last_seq, head_high, tail_low = _SEQ_MAX, _SEQ_MAX, high, high
            head, tail = _head_and_tail(conn, tag_id, (low, high), (first_seq, last_seq),
                                        (head_high, tail_low))
        return ScalarBlocks(head, blocks, tail)

    def scalar_wall_times(self, tag: str) -> np.ndarray:
        with self._connect() as conn:
            tag_id = self._tag_id(conn, store.SCALAR, tag)
            rows = conn.execute("SELECT wall_time FROM scalars WHERE tag_id = ? "
                                "ORDER BY step, seq", (tag_id,)).fetchall()
        return np.fromiter((row[0] for row in rows), dtype=np.float64, count=len(rows))

    def histograms(self, tag: str) -> list[HistogramRecord]:
        with self._connect() as conn:
            tag_id = self._tag_id(conn, store.HISTOGRAM, tag)
            rows = conn.execute(
                "SELECT step, wall_time, min, max, sum, count, edges, counts, blob "
                "FROM histograms WHERE tag_id = ? ORDER BY step, seq", (tag_id,)).fetchall()
        return [self._histogram(tag, row) for row in rows]

    def texts(self, tag: str) -> list[TextRecord]:
        """Every text of the tag in step order, each a string tensor with its shape (a run
        written before texts had shapes reads as single strings, shape ())."""
        with self._connect() as conn:
            tag_id = self._tag_id(conn, store.TEXT, tag)
            shape = "shape" if _has_column(conn, "texts", "shape") else "NULL"
            rows = conn.execute(f"SELECT step, wall_time, body, blob, {shape} FROM texts "
                                "WHERE tag_id = ? ORDER BY step, seq", (tag_id,)).fetchall()
        return [self._text(tag, row) for row in rows]

    def image_tags(self) -> list[str]:
        with self._connect() as conn:
            return _tags(conn, store.IMAGE)

    def images(self, tag: str) -> list[ImageRecord]:
        """Every image of the tag in step order, pixels as uint8 (height, width, channels)."""
        with self._connect() as conn:
            tag_id = self._tag_id(conn, store.IMAGE, tag)
            rows = conn.execute(
                "SELECT step, wall_time, height, width, channels, pixels, blob FROM images "
                "WHERE tag_id = ? ORDER BY step, seq", (tag_id,)).fetchall()
        return [ImageRecord(tag, step, wall, h, w, c, self._pixels(h, w, c, data, blob))
                for step, wall, h, w, c, data, blob in rows]

    def tensor_summary_nodes(self) -> list[str]:
        """The tensors (or summary tags) that have statistics, by name."""
        with self._connect() as conn:
            if not _has_table(conn, "tensor_summaries"):
                return []
            rows = conn.execute("SELECT DISTINCT node FROM tensor_summaries ORDER BY node")
            return [row[0] for row in rows]

    def tensor_summaries(self, node: str | None = None) -> list[TensorSummaryRecord]:
        """Statistics of one tensor (every tensor when None) in step order."""
        where, params = ("", ()) if node is None else ("WHERE node = ? ", (node,))
        with self._connect() as conn:
            if not _has_table(conn, "tensor_summaries"):
                return []
            rows = conn.execute(
                "SELECT node, step, dtype, shape, count, min, max, mean, std, nan_count, "
                f"neg_inf_count, pos_inf_count, wall_time FROM tensor_summaries {where}"
                "ORDER BY step, seq", params).fetchall()
        return [_tensor_summary(row) for row in rows]

    def alerts(self) -> list[AlertRecord]:
        """Every NaN/Inf alert, in the order they were raised."""
        with self._connect() as conn:
            if not _has_table(conn, "alerts"):
                return []
            rows = conn.execute(
                "SELECT step, node, op, device, kind, message, inputs, output, stack, seq, "
                "wall_time FROM alerts ORDER BY seq").fetchall()
        return [_alert(row) for row in rows]

    # Pruning (schema version 3; an older run has none).

    def sensitivity_curves(self) -> dict[str, list[SensitivityPoint]]:
        """Each layer's sensitivity curve, points by sparsity; layers in recording order."""
        with self._connect() as conn:
            if not _has_table(conn, "prune_sensitivity"):
                return {}
            rows = conn.execute(
                "SELECT layer, sparsity, accuracy, seq, wall_time FROM prune_sensitivity "
                "ORDER BY seq").fetchall()
        curves: dict[str, list[SensitivityPoint]] = {}
        for row in rows:
            curves.setdefault(row[0], []).append(SensitivityPoint(*row))
        return {layer: sorted(points, key=lambda p: (p.sparsity, p.seq))
                for layer, points in curves.items()}

    def prune_stages(self) -> list[PruneStageRecord]:
        """The prune-retrain stages in stage order, each with its layers' sparsity."""
        with self._connect() as conn:
            if not _has_table(conn, "prune_stages"):
                return []
            stages = conn.execute(
                "SELECT seq, stage, step, pruned_accuracy, accuracy, wall_time FROM "
                "prune_stages ORDER BY stage, seq").fetchall()
            layers: dict[int, list[LayerSparsityRecord]] = {}
            for stage_seq, layer, target, sparsity in conn.execute(
                    "SELECT stage_seq, layer, target, sparsity FROM prune_layers ORDER BY seq"):
                layers.setdefault(stage_seq, []).append(
                    LayerSparsityRecord(layer, target, sparsity))
        return [PruneStageRecord(stage, step, pruned, acc, tuple(layers.get(seq, ())), seq,
                                 wall) for seq, stage, step, pruned, acc, wall in stages]

    def compression(self) -> CompressionRecord | None:
        """The last compression figures recorded, or None."""
        with self._connect() as conn:
            if not _has_table(conn, "prune_compression"):
                return None
            row = conn.execute(
                "SELECT dense_values, stored_values, dense_bytes, sparse_bytes, "
                "baseline_accuracy, accuracy, per_layer, seq, wall_time FROM prune_compression "
                "ORDER BY seq DESC LIMIT 1").fetchone()
        if row is None:
            return None
        per_layer = {k: tuple(v) for k, v in json.loads(row[6]).items()}
        return CompressionRecord(*row[:6], per_layer, row[7], row[8])

    def quantization_comparisons(self) -> list[QuantizationComparisonRecord]:
        """Every recorded comparison, oldest first, without its nodes (see
        quantization_nodes): name, graph versions, threshold, flagged node, skipped nodes."""
        with self._connect() as conn:
            if not _has_table(conn, "quantization_comparisons"):
                return []
            rows = conn.execute(
                "SELECT name, original_graph_version, quantized_graph_version, threshold_db, "
                "flagged, skipped, seq, wall_time FROM quantization_comparisons "
                "ORDER BY seq").fetchall()
        return [QuantizationComparisonRecord(name, original, quantized, threshold, flagged,
                                             (), json.loads(skipped), seq, wall)
                for name, original, quantized, threshold, flagged, skipped, seq, wall in rows]

    def quantization_comparison(self, name: str | None = None) -> QuantizationComparisonRecord:
        """The latest comparison recorded under `name` (the latest of all when None), with
        its nodes in the original graph's execution order."""
        found = [c for c in self.quantization_comparisons() if name is None or c.name == name]
        if not found:
            known = ", ".join(repr(c.name) for c in self.quantization_comparisons()) or "none"
            raise RunStoreKeyError(f"{self._dir.name}: no quantization comparison "
                                   f"{name!r}; recorded: {known}")
        chosen = found[-1]
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT position, original, op, compared, quantized, shape, mse, "
                "max_abs_error, sqnr_db, cosine, flagged, bins, histograms, blob "
                "FROM quantization_nodes WHERE comparison_seq = ? ORDER BY position, seq",
                (chosen.seq,)).fetchall()
        return dataclasses.replace(chosen, nodes=tuple(self._quantization_node(r)
                                                       for r in rows))

    def quantization_costs(self, model: str | None = None) -> list[QuantizationCostRecord]:
        """The cost table's rows (one model's when given), in the order recorded."""
        where, params = ("", ()) if model is None else ("WHERE model = ? ", (model,))
        with self._connect() as conn:
            if not _has_table(conn, "quantization_costs"):
                return []
            rows = conn.execute(
                "SELECT model, variant, accuracy, file_bytes, bytes_ratio, batch1_us, "
                "batch256_us, batch1_speedup, batch256_speedup, seq, wall_time "
                f"FROM quantization_costs {where}ORDER BY seq", params).fetchall()
        return [QuantizationCostRecord(*row) for row in rows]

    def damage(self) -> str | None:
        """What is damaged in this run, in words (the file, relative to the log directory, and
        what is wrong), or None. Cheap enough for every listing: each side file a row names is
        stat'ed and its .npy header read (the file must be as long as the header promises).
        Rows are not decoded: a damaged row is found by the query that reads it."""
        with self._connect() as conn:
            return self._damage(_named_side_files(conn))

    def _damage(self, named: list[tuple[str, int, Any]]) -> str | None:
        """damage() of the (table, seq, side file) rows read already."""
        problems = []
        for table, seq, blob in named:
            problem = self._side_file_problem(blob)
            if problem:
                problems.append(f"{problem} (named by {table} row {seq})")
        if not problems:
            return None
        more = f"; {len(problems)} of {len(named)} side files damaged" if len(problems) > 1 else ""
        return problems[0] + more

    def _listing(self, conn: sqlite3.Connection,
                 meta: dict[str, Any]) -> tuple[RunInfo, list[tuple[str, int, Any]]]:
        """info() and the rows naming side files, on the listing's one connection."""
        return self._info(conn, meta), _named_side_files(conn)

    # Engine records.

    def devices(self) -> list[DeviceRecord]:
        """The latest record for each device name."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT name, device_type, idx, physical, virtual FROM devices WHERE seq IN "
                "(SELECT MAX(seq) FROM devices GROUP BY name) ORDER BY seq").fetchall()
        return [DeviceRecord(name, kind, index, physical, bool(virtual))
                for name, kind, index, physical, virtual in rows]

    def graph_versions(self) -> list[int]:
        with self._connect() as conn:
            rows = conn.execute("SELECT DISTINCT version FROM graphs ORDER BY version")
            return [row[0] for row in rows]

    def graph(self, version: int | None = None) -> GraphRecord | None:
        """The given version (its latest recording), the highest version when None; None
        when there is no such graph."""
        query = "SELECT seq, wall_time, version, body, blob FROM graphs "
        with self._connect() as conn:
            if version is None:
                row = conn.execute(query + "ORDER BY version DESC, seq DESC LIMIT 1").fetchone()
            else:
                row = conn.execute(query + "WHERE version = ? ORDER BY seq DESC LIMIT 1",
                                   (version,)).fetchone()
        if row is None:
            return None
        seq, wall_time, found, body, blob = row
        nodes = tuple(_node(item) for item in json.loads(self._unpack_text(body, blob)))
        return GraphRecord(found, nodes, seq, wall_time)

    def placements(self, graph_version: int | None = None) -> list[PlacementRecord]:
        """The latest decision per node among those recorded for graph versions up to
        graph_version (all versions when None): graphs only grow, so a node placed for an
        earlier version keeps that placement until it is placed again."""
        where, params = ("", ()) if graph_version is None else (
            "WHERE graph_version <= ?", (graph_version,))
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT node, op, requested, assigned, reason, detail, log_line, graph_version,"
                " seq, wall_time FROM placements WHERE seq IN (SELECT MAX(seq) FROM placements "
                f"{where} GROUP BY node) ORDER BY seq", params).fetchall()
        return [PlacementRecord(*row) for row in rows]

    def plans(self) -> list[PlanRecord]:
        """The latest recording of each plan id, by plan id."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT plan, graph_version, fetches, feeds, targets, devices, seq, wall_time "
                "FROM plans WHERE seq IN (SELECT MAX(seq) FROM plans GROUP BY plan) "
                "ORDER BY plan").fetchall()
        return [PlanRecord(plan, version, *(tuple(json.loads(v)) for v in lists), seq, wall)
                for plan, version, *lists, seq, wall in rows]

    def partitions(self, plan: int | None = None) -> list[PartitionRecord]:
        where, params = _latest_plans(plan)
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT plan, device, body, blob FROM partitions WHERE plan_seq IN ({where}) "
                "ORDER BY plan_seq, seq", params).fetchall()
        return [PartitionRecord(p, device, tuple(json.loads(self._unpack_text(body, blob))))
                for p, device, body, blob in rows]

    def cut_edges(self, plan: int | None = None) -> list[CutEdgeRecord]:
        """bytes: what moved for the edge's key in the latest traced step of its plan (the
        recorded value when no step of the plan was traced)."""
        where, params = _latest_plans(plan)
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT plan, tensor, src_device, dst_device, send_node, recv_node, key, dtype,"
                f" shape, consumers, bytes FROM cut_edges WHERE plan_seq IN ({where}) "
                "ORDER BY plan_seq, seq", params).fetchall()
            moved = {p: _bytes_by_key(conn, p) for p in {row[0] for row in rows}}
        edges = []
        for p, tensor, src, dst, send, recv, key, dtype, shape, consumers, recorded in rows:
            shape = json.loads(shape)
            by_key = moved[p]
            edges.append(CutEdgeRecord(
                p, tensor, src, dst, send, recv, key, dtype,
                None if shape is None else tuple(shape), tuple(json.loads(consumers)),
                recorded if by_key is None else by_key.get(key, 0)))
        return edges

    def steps(self) -> list[StepRecord]:
        with self._connect() as conn:
            rows = conn.execute("SELECT step, plan, wall_start, duration_us, num_ops, "
                                "bytes_moved, seq FROM steps ORDER BY seq").fetchall()
        return [StepRecord(*row) for row in rows]

    def last_traced_step(self) -> int | None:
        """The step number of the latest step recorded with per-op stats (None: none was)."""
        with self._connect() as conn:
            row = conn.execute("SELECT step FROM op_stats ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else row[0]

    def traced_steps(self) -> list[StepRecord]:
        """The steps recorded with per-op stats, by step number (the latest recording of a
        number when it repeats)."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT step, plan, wall_start, duration_us, num_ops, bytes_moved, seq FROM steps "
                "WHERE seq IN (SELECT MAX(seq) FROM steps GROUP BY step) AND EXISTS "
                "(SELECT 1 FROM op_stats WHERE step_seq = steps.seq) ORDER BY step").fetchall()
        return [StepRecord(*row) for row in rows]

    def step_stats(self, step: int) -> list[OpStatRecord]:
        """Op stats of the latest recorded step with this number."""
        with self._connect() as conn:
            step_seq = self._step_seq(conn, step)
            rows = conn.execute("SELECT step, node, op, device, start_us, end_us, output_bytes,"
                                " thread FROM op_stats WHERE step_seq = ? ORDER BY seq",
                                (step_seq,)).fetchall()
        return [OpStatRecord(*row) for row in rows]

    def transfers(self, step: int) -> list[TransferRecord]:
        with self._connect() as conn:
            step_seq = self._step_seq(conn, step)
            rows = conn.execute("SELECT step, key, tensor, src_device, dst_device, bytes "
                                "FROM transfers WHERE step_seq = ? ORDER BY seq",
                                (step_seq,)).fetchall()
        return [TransferRecord(*row) for row in rows]

    def events(self, after_seq: int = 0, limit: int = 1000) -> list[tuple[int, float, str, str]]:
        """(seq, wall_time, kind, summary) in seq order. Rows that arrive as parts of a plan
        (partitions, cut edges) or of a step (op stats, transfers) are summarised in that
        plan's or step's event rather than listed one by one."""
        if limit < 0:
            raise RunReaderUsageError(f"limit must be >= 0, got {limit}")
        found: list[tuple[int, float, str, str]] = []
        with self._connect() as conn:
            for kind, (query, summary) in _EVENT_QUERIES.items():
                if kind in _ADDED_EVENT_TABLES and not _has_table(conn,
                                                                  _ADDED_EVENT_TABLES[kind]):
                    continue
                if kind == "text" and not _has_column(conn, "texts", "shape"):
                    query = _TEXT_EVENTS_BEFORE_SHAPES
                for row in conn.execute(query, (after_seq, limit)):
                    found.append((row[0], row[1], kind, summary(row[2:])))
        found.sort()
        return found[:limit]

    # Internals.

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise RunReaderUsageError(f"RunReader {self._dir} is closed")
        try:
            conn = store.connect_read_only(self._db)
        except sqlite3.Error as exc:
            raise RunStoreError(f"{self._db}: cannot open: {exc}") from exc
        try:
            # One read transaction per query: a consistent snapshot while the writer commits.
            conn.execute("BEGIN")
            yield conn
        except sqlite3.Error as exc:
            raise RunStoreError(f"{self._db}: {exc}") from exc
        finally:
            conn.close()

    def _tag_id(self, conn: sqlite3.Connection, kind: str, tag: str) -> int:
        row = conn.execute("SELECT id FROM tags WHERE kind = ? AND tag = ?", (kind, tag))
        found = row.fetchone()
        if found is None:
            raise RunStoreKeyError(f"no {kind} tag {tag!r} in run {self._dir}; known {kind} tags: "
                           f"{_tags(conn, kind)}")
        return found[0]

    def _step_seq(self, conn: sqlite3.Connection, step: int) -> int:
        row = conn.execute("SELECT MAX(seq) FROM steps WHERE step = ?", (step,)).fetchone()
        if row[0] is None:
            low, high = conn.execute("SELECT MIN(step), MAX(step) FROM steps").fetchone()
            known = "none" if low is None else f"{low}..{high}"
            raise RunStoreKeyError(f"no step {step} in run {self._dir}; recorded steps: {known}")
        return row[0]

    def _shown(self, path: Path) -> str:
        """path relative to the log directory (the run folder's parent), for messages."""
        return os.path.join(self._dir.name, os.path.relpath(path, self._dir))

    def _side_file_problem(self, blob_id: Any) -> str | None:
        """What is wrong with the side file a row names, or None when it is whole."""
        if not isinstance(blob_id, str) or not _BLOB_ID.fullmatch(blob_id):
            return f"{self._shown(self._db)}: a row names side file {blob_id!r}, not a " \
                   "side-file name"
        path = store.blob_path(self._dir, blob_id)
        try:
            with open(path, "rb") as handle:
                problem = _npy_problem(handle, os.fstat(handle.fileno()).st_size)
        except FileNotFoundError:
            problem = "side file missing"
        except OSError as exc:
            problem = f"cannot read side file: {exc.strerror or exc}"
        return None if problem is None else f"{self._shown(path)}: {problem}"

    def _blob(self, blob_id: str) -> np.ndarray:
        if not isinstance(blob_id, str) or not _BLOB_ID.fullmatch(blob_id):
            raise RunStoreError(f"{self._db}: a row names side file {blob_id!r}, not a "
                                "side-file name")
        try:
            return store.read_blob(self._dir, blob_id)
        except (OSError, ValueError) as exc:
            path = store.blob_path(self._dir, blob_id)
            raise RunStoreError(f"{path}: cannot read side file: {exc}") from exc

    def _unpack_text(self, body: str | None, blob: str | None) -> str:
        if blob is None:
            return body or ""
        try:
            return self._blob(blob).tobytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            path = store.blob_path(self._dir, blob)
            raise RunStoreError(f"{path}: side file is not UTF-8 text ({exc})") from exc

    def _text(self, tag: str, row: tuple) -> TextRecord:
        step, wall, body, blob, shape = row
        text = self._unpack_text(body, blob)
        if shape is None:
            return TextRecord(tag, step, wall, (text,))
        cells = json.loads(text)
        if not isinstance(cells, list) or not all(isinstance(cell, str) for cell in cells):
            raise RunStoreError(f"{self._db}: text {tag!r} at step {step}: its cells are not "
                                "a list of strings")
        return TextRecord(tag, step, wall, tuple(cells), tuple(json.loads(shape)))

    def _pixels(self, height: int, width: int, channels: int, data: bytes | None,
                blob: str | None) -> np.ndarray:
        if blob is not None:
            return self._blob(blob)
        return np.frombuffer(data, dtype=np.uint8).reshape(height, width, channels)

    def _quantization_node(self, row: tuple) -> QuantizationNodeRecord:
        (position, original, op, compared, quantized, shape, mse, max_abs, sqnr, cosine,
         flagged, bins, data, blob) = row
        values = np.frombuffer(data, dtype="<f8") if blob is None else self._blob(blob)
        edges, original_counts, quantized_counts, error_edges, error_counts = \
            store.split_quantization_histograms(values, bins)
        return QuantizationNodeRecord(
            original, op, compared, tuple(json.loads(quantized)), position,
            tuple(json.loads(shape)), mse, max_abs, sqnr, cosine, edges, original_counts,
            quantized_counts, error_edges, error_counts, bool(flagged))

    def _histogram(self, tag: str, row: tuple) -> HistogramRecord:
        step, wall_time, low, high, total, count, edge_bytes, count_bytes, blob = row
        if blob is None:
            edges = np.frombuffer(edge_bytes, dtype="<f8")
            counts = np.frombuffer(count_bytes, dtype="<f8")
        else:
            packed = self._blob(blob)
            edges, counts = np.split(packed, [(packed.size + 1) // 2])
        return HistogramRecord(tag, step, wall_time, tuple(edges.tolist()),
                               tuple(counts.tolist()), _nan(low), _nan(high), _nan(total), count)


# Every query, so no damaged row escapes as a decoding error.
_QUERIES = ("info", "damage", "tags", "histogram_tags", "text_tags", "scalars",
            "scalar_wall_times", "scalar_series", "histograms", "texts", "image_tags", "images",
            "tensor_summary_nodes", "tensor_summaries", "alerts", "devices", "graph_versions",
            "quantization_comparisons", "quantization_comparison", "quantization_costs",
            "graph", "placements", "plans", "partitions", "cut_edges", "steps",
            "last_traced_step", "traced_steps", "step_stats", "transfers", "events")
# And RunReader's own: the listing's steps (list_runs reads event-file runs otherwise) and
# the curve reads (the workbench reads event-file runs' scalars with scalar_series).
for _name in (*_QUERIES, "_listing", "_damage", "scalar_values", "scalar_points",
              "scalar_blocks", "scalar_blocks_between", "scalar_range",
              "scalar_steps_around"):
    setattr(RunReader, _name, _damage_is_a_store_error(getattr(RunReader, _name)))
_PRUNING_QUERIES = ("sensitivity_curves", "prune_stages", "compression")
for _name in _PRUNING_QUERIES:
    setattr(RunReader, _name, _damage_is_a_store_error(getattr(RunReader, _name)))


def list_runs(logdir: str | os.PathLike, cache: ListingCache | None = None) -> list[RunInfo]:
    """Every subfolder of logdir, by name, never raising for one of them: a folder that is
    not a run store it can open is UNREADABLE, one that opens but has a damaged side file or
    database is DAMAGED (whatever its writer's status was); `error` says which file (relative
    to logdir) and what is wrong. With a cache, a folder whose files did not change since the
    last listing through it is not read again."""
    root = Path(logdir)
    if not root.is_dir():
        raise FileNotFoundError(errno.ENOENT, "log directory does not exist", str(root))
    children = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.name)
    kept: list[RunInfo | None] = [None] * len(children)
    if cache is not None:
        cache.keep_only(children)
        # Unchanged folders first, in this thread: a few stats each, where handing each to
        # the pool cost more than the stats (a refresh of 500 runs takes half the time).
        kept = [cache.lookup(child, _folder_stamp(child)) for child in children]
    missing = [child for child, info in zip(children, kept) if info is None]
    if len(missing) < _PARALLEL_LISTING:
        read = [_listed(child, root, cache) for child in missing]
    else:
        # SQLite lets go of the GIL while it opens and reads, so a few threads overlap the
        # runs' file reads (a logdir of hundreds of runs lists about twice as fast).
        with concurrent.futures.ThreadPoolExecutor(_LISTING_THREADS) as pool:
            read = list(pool.map(lambda child: _listed(child, root, cache), missing))
    fresh = iter(read)
    return [info if info is not None else next(fresh) for info in kept]


_PARALLEL_LISTING = 16
_LISTING_THREADS = 4


class ListingCache:
    """What list_runs read of each run folder, kept while the folder is unchanged: the same
    database and WAL (inode, mtime, size, mode), side-file folder and each side file its rows
    name. A refresh of unchanged runs then costs a few stats per run. A RUNNING run is never
    kept (it turns INTERRUPTED by time alone), nor a folder of TensorBoard event files.
    Safe to share between threads; `reads` counts folders read from disk."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[tuple, tuple, RunInfo]] = {}
        self._lock = threading.Lock()
        self.reads = 0

    def lookup(self, child: Path, stamp: tuple) -> RunInfo | None:
        with self._lock:
            entry = self._entries.get(str(child))
        if entry is None or entry[0] != stamp:
            return None
        side_files, info = entry[1], entry[2]
        if any(_file_stamp(path) != seen for path, seen in side_files):
            return None
        return info

    def store(self, child: Path, stamp: tuple, side_files: tuple, info: RunInfo) -> None:
        with self._lock:
            self.reads += 1
            if info.status == RUNNING:
                self._entries.pop(str(child), None)
            else:
                self._entries[str(child)] = (stamp, side_files, info)

    def keep_only(self, children: list[Path]) -> None:
        """Forget folders no longer listed (the cache stays the size of the log directory)."""
        names = {str(child) for child in children}
        with self._lock:
            for gone in self._entries.keys() - names:
                del self._entries[gone]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _file_stamp(path: Path) -> tuple | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size, stat.st_mode


def _folder_stamp(child: Path) -> tuple:
    """What changes when a run folder's listing can: the folder's own mode (not its mtime:
    a reader's -shm file touches that), the database, a non-empty WAL (the first reader of
    a closed run may leave an empty one) and the side-file folder."""
    folder = _file_stamp(child)
    wal = _file_stamp(child / f"{DATABASE_NAME}-wal")
    return (None if folder is None else folder[::3], _file_stamp(child / DATABASE_NAME),
            wal if wal is not None and wal[2] else None,
            _file_stamp(child / store.BLOB_DIR))


def open_run(run_dir: str | os.PathLike) -> RunReader | EventFileReader:
    """The reader for a run folder: EventFileReader for a folder of TensorBoard event files
    (and no run store), RunReader otherwise. Both answer the same queries."""
    from engine.record import event_files  # it builds on this module's errors

    if event_files.is_event_file_run(run_dir):
        return event_files.EventFileReader(run_dir)
    return RunReader(run_dir)


def _listed(child: Path, root: Path, cache: ListingCache | None = None) -> RunInfo:
    from engine.record import event_files  # it builds on this module's errors

    if event_files.is_event_file_run(child):
        return event_files.listed(child)
    if cache is None:
        return _read_listing(child, root)[0]
    stamp = _folder_stamp(child)      # before the read: a change during it is seen next time
    info = cache.lookup(child, stamp)
    if info is None:
        info, side_files = _read_listing(child, root)
        cache.store(child, stamp, side_files, info)
    return info


def _read_listing(child: Path, root: Path) -> tuple[RunInfo, tuple]:
    """The folder's RunInfo from one connection, and the (path, stamp) of each side file its
    rows name. One broken folder must not hide the others: whatever it raises becomes its
    reason (UNREADABLE while it cannot be opened as a run store, DAMAGED after)."""
    reader = RunReader.__new__(RunReader)
    opened = False
    try:
        reader._locate(child)
        with reader._connect() as conn:
            meta = _read_meta(reader._db, conn)
            _check_version(reader._db, meta)
            opened = True
            info, named = reader._listing(conn, meta)
        side_files = tuple((path, _file_stamp(path)) for path in
                           {store.blob_path(child, blob) for _t, _s, blob in named
                            if isinstance(blob, str) and _BLOB_ID.fullmatch(blob)})
        damage = reader._damage(named)
    except Exception as exc:  # noqa: BLE001
        corrupt = not opened and _sqlite_says_corrupt(exc)
        status = DAMAGED if opened or corrupt else UNREADABLE
        return RunInfo(name=child.name, path=str(child), status=status,
                       error=_reason(exc, root)), ()
    if damage is not None:
        info = dataclasses.replace(info, status=DAMAGED, error=damage)
    return info, side_files


def _sqlite_says_corrupt(exc: BaseException) -> bool:
    """SQLITE_CORRUPT ("database disk image is malformed": a run store whose database was
    truncated or overwritten) somewhere in the chain, as opposed to SQLITE_NOTADB (the file
    was never a database) or a folder that is not a run store."""
    while exc is not None:
        if isinstance(exc, sqlite3.DatabaseError) and \
                getattr(exc, "sqlite_errorcode", 0) & 0xFF == _SQLITE_CORRUPT:
            return True
        exc = exc.__cause__
    return False


_SQLITE_CORRUPT = 11


def _reason(exc: Exception, root: Path) -> str:
    """The exception in words with paths relative to the log directory (a listing is shown
    to people who need not see where the server keeps its files)."""
    text = str(exc) if isinstance(exc, RunStoreError) else f"{type(exc).__name__}: {exc}"
    for prefix in {str(root), str(root.resolve())} - {"."}:
        text = text.replace(prefix + os.sep, "")
    return text


_SCALAR_ROW = np.dtype([("step", np.int64), ("value", np.float64)])
_STEP_MIN, _STEP_MAX = -(2 ** 63), 2 ** 63 - 1      # SQLite's integers
_SEQ_MAX = 2 ** 63 - 1


def _block_array(rows: list[tuple]) -> np.ndarray:
    """scalar_blocks rows' bodies as one (n, fields) float64 array; a body of another size
    is damage."""
    size = 8 * len(SCALAR_BLOCK_FIELDS)
    bodies = [body for _, _, body in rows]
    sizes = np.fromiter(map(len, bodies), dtype=np.int64, count=len(bodies))
    wrong = np.flatnonzero(sizes != size)
    if wrong.size:
        first_seq, last_seq, body = rows[wrong[0]]
        raise ValueError(f"scalar block of rows {first_seq}..{last_seq} holds {len(body)} "
                         f"bytes, not {size}")
    return np.frombuffer(b"".join(bodies), dtype="<f8").reshape(len(rows),
                                                                len(SCALAR_BLOCK_FIELDS))


def _blocks_in_step_order(blocks: np.ndarray) -> bool:
    """Whether the order written is the step order: every block's steps never decrease,
    and no block starts below where the one before ended."""
    first, last = blocks[:, BLOCK["first_step"]], blocks[:, BLOCK["last_step"]]
    return bool((blocks[:, BLOCK["ordered"]] == 1.0).all() and (first[1:] >= last[:-1]).all())


def _head_and_tail(conn, tag_id: int, steps: tuple, seqs: tuple, inner: tuple):
    """The raw rows of a step range outside its whole blocks: those before the first block
    (steps[0] up to inner[0], seq below seqs[0]) and after the last (inner[1] up to steps[1],
    seq above seqs[1])."""
    head = _scalar_rows(conn, "step BETWEEN ? AND ? AND seq < ?",
                        (tag_id, steps[0], inner[0], seqs[0]))
    tail = _scalar_rows(conn, "step BETWEEN ? AND ? AND seq > ?",
                        (tag_id, inner[1], steps[1], seqs[1]))
    return head, tail


def _scalar_rows(conn: sqlite3.Connection, where: str, params: tuple
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(steps, values, wall times) of one tag's rows matching `where`, in step order."""
    rows = conn.execute(f"SELECT step, value, wall_time FROM scalars WHERE tag_id = ? AND "
                        f"{where} ORDER BY step, seq", params)
    points = np.fromiter(rows, dtype=_SCALAR_SERIES_ROW)
    return points["step"].copy(), points["value"].copy(), points["wall_time"].copy()
_IDS_PER_QUERY = 900          # under SQLite's oldest limit of 999 bound parameters
_SCALAR_SERIES_ROW = np.dtype([("step", np.int64), ("value", np.float64),
                               ("wall_time", np.float64)])

# Tables whose rows may name a side file (a `blob` column), and what the writer names one
# ("<seq>-<kind>"): a row naming anything else, such as "../x", is damage, never a path.
_BLOB_TABLES = ("graphs", "partitions", "histograms", "texts", "images", "quantization_nodes")
_BLOB_ID = re.compile(r"[0-9A-Za-z_-]{1,100}")
_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0}


def _npy_problem(handle, size: int) -> str | None:
    """What is wrong with an open .npy file of `size` bytes, from its header alone."""
    try:
        version = np.lib.format.read_magic(handle)
        read_header = _NPY_HEADERS.get(version)
        if read_header is None:
            return f"not a .npy file this reader understands (format version {version})"
        shape, _fortran, dtype = read_header(handle)
    except (ValueError, SyntaxError, TypeError, EOFError) as exc:
        return f"not a .npy file ({exc})"
    if dtype.hasobject:
        return "holds Python objects (it cannot be read without pickle)"
    expected = handle.tell() + math.prod(shape) * dtype.itemsize
    if size < expected:
        return f"truncated: {size} bytes, its header promises {expected}"
    return None


def _named_side_files(conn: sqlite3.Connection) -> list[tuple[str, int, Any]]:
    """(table, seq, side file id) of every row that names a side file."""
    present = {row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    return [(table, seq, blob) for table in _BLOB_TABLES if table in present
            for seq, blob in conn.execute(
                f"SELECT seq, blob FROM {table} WHERE blob IS NOT NULL")]


def _read_meta(db: Path, conn: sqlite3.Connection) -> dict[str, Any]:
    try:
        rows = conn.execute("SELECT key, value FROM meta").fetchall()
    except sqlite3.OperationalError as exc:
        raise RunStoreError(f"{db}: not a run store ({exc})") from exc
    try:
        return {key: json.loads(value) for key, value in rows}
    except (TypeError, ValueError) as exc:
        raise RunStoreError(f"{db}: unreadable meta table: {exc}") from exc


def _check_version(db: Path, meta: dict[str, Any]) -> None:
    version = meta.get("schema_version")
    if not isinstance(version, int):
        raise RunStoreError(f"{db}: not a run store (no schema_version in its meta table)")
    if version > SCHEMA_VERSION:
        raise RunStoreError(
            f"{db}: written with run store schema version {version}, newer than this reader "
            f"understands ({SCHEMA_VERSION}); upgrade tfworkbench to read it")


def _status(meta: dict[str, Any], now: float) -> str:
    if meta.get("status") == FINISHED:
        return FINISHED
    pid = meta.get("pid")
    same_host = meta.get("process") == store.process_identity()
    if same_host and isinstance(pid, int) and store.pid_alive(pid) is False:
        return INTERRUPTED
    updated = meta.get("updated")
    if not isinstance(updated, (int, float)) or now - updated > store.STALE_SECS:
        return INTERRUPTED
    return RUNNING


def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    """False for the tables a run written by an older schema version lacks."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                       (table,)).fetchone()
    return row is not None


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    """False for the columns a run written by an older schema version lacks."""
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def _tensor_summary(row: tuple) -> TensorSummaryRecord:
    node, step, dtype, shape, count, low, high, mean, std, nan, neg, pos, wall = row
    return TensorSummaryRecord(node, step, dtype, tuple(json.loads(shape)), count, _nan(low),
                               _nan(high), _nan(mean), _nan(std), nan, neg, pos, wall)


def _summary_from_json(doc: dict | None) -> TensorSummaryRecord | None:
    if doc is None:
        return None
    floats = {k: _nan(doc[k]) for k in ("min", "max", "mean", "std")}
    return TensorSummaryRecord(**{**doc, **floats, "shape": tuple(doc["shape"])})


def _alert(row: tuple) -> AlertRecord:
    step, node, op, device, kind, message, inputs, output, stack, seq, wall = row
    return AlertRecord(step, node, op, device, kind, message,
                       tuple(_summary_from_json(i) for i in json.loads(inputs)),
                       _summary_from_json(json.loads(output)), tuple(json.loads(stack)),
                       seq, wall)


_TABLE_OF_TAG_KIND = {store.SCALAR: "scalars", store.HISTOGRAM: "histograms",
                      store.TEXT: "texts", store.IMAGE: "images"}


def _last_recorded_step(conn: sqlite3.Connection) -> int | None:
    """The largest step any row holds: one indexed lookup per tag, plus the step tables."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    found = [conn.execute(f"SELECT MAX(step) FROM {table}").fetchone()[0]
             for table in ("steps", "alerts", "tensor_summaries") if table in tables]
    for tag_id, kind in conn.execute("SELECT id, kind FROM tags").fetchall():
        table = _TABLE_OF_TAG_KIND.get(kind)
        if table in tables:
            found.append(conn.execute(f"SELECT MAX(step) FROM {table} WHERE tag_id = ?",
                                      (tag_id,)).fetchone()[0])
    return _latest(*found)


def _latest(*steps: Any) -> int | None:
    return max((s for s in steps if isinstance(s, int) and not isinstance(s, bool)),
               default=None)


def _tags(conn: sqlite3.Connection, kind: str) -> list[str]:
    rows = conn.execute("SELECT tag FROM tags WHERE kind = ? ORDER BY tag", (kind,))
    return [row[0] for row in rows]


def _latest_plans(plan: int | None) -> tuple[str, tuple]:
    """Subquery for the seq of the latest recording of each plan (or of one plan)."""
    if plan is None:
        return "SELECT MAX(seq) FROM plans GROUP BY plan", ()
    return "SELECT MAX(seq) FROM plans WHERE plan = ?", (plan,)


def _bytes_by_key(conn: sqlite3.Connection, plan: int) -> dict[str, int] | None:
    # The latest traced step: untraced steps record no transfers.
    row = conn.execute("SELECT seq FROM steps WHERE plan = ? AND EXISTS (SELECT 1 FROM "
                       "transfers WHERE step_seq = steps.seq) ORDER BY seq DESC LIMIT 1",
                       (plan,)).fetchone()
    if row is None:
        return None
    rows = conn.execute("SELECT key, SUM(bytes) FROM transfers WHERE step_seq = ? "
                        "GROUP BY key", (row[0],))
    return dict(rows.fetchall())


def _node(item: dict[str, Any]) -> NodeRecord:
    outputs = tuple(TensorSpec(dtype, None if shape is None else tuple(shape))
                    for dtype, shape in item["outputs"])
    return NodeRecord(item["name"], item["op"], tuple(item["inputs"]), item["device"],
                      item["attrs"], outputs, tuple(item["stack"]))


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value


def _number(value: float | None) -> str:
    return "nan" if value is None else f"{value:.6g}"


def _first_line(text: str, width: int = 80) -> str:
    line = text.split("\n", 1)[0]
    return line if len(line) <= width and line == text else line[:width] + "..."


def _event_query(columns: str, source: str, alias: str = "") -> str:
    """Reads one table from after_seq onwards, at most `limit` rows, in seq (rowid) order."""
    seq = f"{alias}.seq" if alias else "seq"
    return f"SELECT {columns} FROM {source} WHERE {seq} > ? ORDER BY {seq} LIMIT ?"


_Summary = Callable[[tuple], str]
_EVENT_QUERIES: dict[str, tuple[str, _Summary]] = {
    "run": (_event_query("seq, wall_time, detail", "run_events"), lambda r: r[0]),
    "scalar": (
        _event_query("s.seq, s.wall_time, t.tag, s.step, s.value",
                     "scalars s JOIN tags t ON t.id = s.tag_id", "s"),
        lambda r: f"{r[0]} = {_number(r[2])} at step {r[1]}"),
    "histogram": (
        _event_query("h.seq, h.wall_time, t.tag, h.step, h.count, h.min, h.max",
                     "histograms h JOIN tags t ON t.id = h.tag_id", "h"),
        lambda r: f"{r[0]} at step {r[1]}: {r[2]} values in "
                  f"[{_number(r[3])}, {_number(r[4])}]"),
    "text": (
        _event_query("x.seq, x.wall_time, t.tag, x.step, substr(x.body, 1, 200), x.shape",
                     "texts x JOIN tags t ON t.id = x.tag_id", "x"),
        lambda r: f"{r[0]} at step {r[1]}: " + (
            _first_line(r[2] or "") if r[3] is None
            else f"string tensor {json.loads(r[3])}")),
    "device": (
        _event_query("seq, wall_time, name, device_type, virtual", "devices"),
        lambda r: f"device {r[0]} ({r[1]}{', virtual' if r[2] else ''})"),
    "graph": (
        _event_query("seq, wall_time, version, num_nodes", "graphs"),
        lambda r: f"graph version {r[0]}: {r[1]} nodes"),
    "placement": (
        _event_query("seq, wall_time, node, op, assigned, reason", "placements"),
        lambda r: f"{r[0]} ({r[1]}) placed on {r[2]} [{r[3]}]"),
    "plan": (
        _event_query("seq, wall_time, plan, graph_version, num_partitions, num_cut_edges",
                     "plans"),
        lambda r: f"plan {r[0]} for graph version {r[1]}: {r[2]} partitions, "
                  f"{r[3]} cut edges"),
    "step": (
        _event_query("s.seq, s.wall_time, s.step, s.plan, s.num_ops, s.duration_us, "
                     "s.bytes_moved, (SELECT COUNT(*) FROM transfers x "
                     "WHERE x.step_seq = s.seq)", "steps s", "s"),
        lambda r: f"step {r[0]} (plan {r[1]}): {r[2]} ops in {r[3] / 1000:.3g} ms, "
                  f"{r[5]} transfers, {r[4]} bytes moved"),
    "image": (
        _event_query("i.seq, i.wall_time, t.tag, i.step, i.height, i.width, i.channels",
                     "images i JOIN tags t ON t.id = i.tag_id", "i"),
        lambda r: f"{r[0]} at step {r[1]}: {r[3]}x{r[2]} image, {r[4]} channels"),
    "tensor_summary": (
        _event_query("seq, wall_time, node, step, dtype, shape, min, max, nan_count, "
                     "neg_inf_count + pos_inf_count", "tensor_summaries"),
        lambda r: f"{r[0]} at step {r[1]}: {r[2]} {r[3]} in [{_number(r[4])}, "
                  f"{_number(r[5])}], {r[6]} NaN, {r[7]} Inf"),
    "alert": (
        _event_query("seq, wall_time, kind, node, op, device, step, message", "alerts"),
        lambda r: f"{r[0]} in {r[1]} ({r[2]}) on {r[3]} at step {r[4]}: "
                  f"{_first_line(r[5])}"),
    "quantization": (
        _event_query("seq, wall_time, name, num_nodes, threshold_db, flagged",
                     "quantization_comparisons"),
        lambda r: f"quantization comparison {r[0]!r}: {r[1]} nodes, "
                  + (f"first below {_number(r[2])} dB: {r[3]}" if r[3] else
                     f"none below {_number(r[2])} dB")),
}
# A run of schema version 3 or older has no texts.shape: every text is one string.
_TEXT_EVENTS_BEFORE_SHAPES = _event_query(
    "x.seq, x.wall_time, t.tag, x.step, substr(x.body, 1, 200), NULL",
    "texts x JOIN tags t ON t.id = x.tag_id", "x")
# Event kinds whose table a run of an older schema version may lack.
_ADDED_EVENT_TABLES = {"image": "images", "tensor_summary": "tensor_summaries",
                       "alert": "alerts", "quantization": "quantization_comparisons"}
