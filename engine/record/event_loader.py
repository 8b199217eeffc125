"""One parse of a run's event files: TFRecord framing (engine.record.tfrecord), each record
an Event proto of the tensorboard package, its summary values sorted into scalars,
histograms, text and images by plugin, the last graph kept. Importing it needs tensorboard."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError as ProtoDecodeError
from tensorboard.compat.proto import event_pb2, graph_pb2, meta_graph_pb2

from engine.record import event_decode as decode
from engine.record.event_files import EventFileRun, Series
from engine.record.tfrecord import RecordFile

# Summary-value plugins we read; the others (pr_curves, hparams, audio, ...) are counted.
_TENSOR_PLUGINS = (decode.SCALARS, decode.HISTOGRAMS, decode.IMAGES, decode.TEXT)


class EventLoader:
    """Feed it the run's files in order with read_file(); result() gives the parse."""

    def __init__(self, run_name: str) -> None:
        self._run = run_name
        self._scalars: dict[str, tuple[list, list, list, list]] = defaultdict(
            lambda: ([], [], [], []))
        self._by_kind: dict[str, dict[str, list]] = {
            kind: defaultdict(list) for kind in ("histogram", "text", "image")}
        # TF2 writers send a tag's plugin metadata with its first value only.
        self._plugins: dict[str, str] = {}
        self._graph: tuple[bytes, int, float, bool] | None = None
        self._seq = 0
        self._started: float | None = None
        self._updated: float | None = None
        self._last_step: int | None = None
        self._problems: list[str] = []
        self._skipped: dict[str, int] = defaultdict(int)

    def read_file(self, path: Path, recent: bool) -> None:
        """Reads every whole record of the file. A file that ends inside a record is being
        written when `recent` (TensorBoard reads up to there and waits), damaged otherwise."""
        shown = f"{self._run}/{path.name}"
        try:
            records = RecordFile(path)
        except OSError as exc:
            self._problems.append(f"{shown}: cannot read ({exc.strerror or exc})")
            return
        bad_values: list[str] = []
        parse = event_pb2.Event.FromString
        scalars = self._scalars
        seq, low, high, last = self._seq, self._started, self._updated, self._last_step
        for offset, record in records:
            try:
                event = parse(record)
            except ProtoDecodeError as exc:
                self._problems.append(
                    f"{shown}: the record at byte {offset} is not an Event ({exc}); "
                    f"{records.records_read} records before it were read, the remaining "
                    f"{records.size - offset} bytes are skipped")
                break
            seq += 1
            wall = event.wall_time
            if low is None or wall < low:
                low = wall
            if high is None or wall > high:
                high = wall
            try:
                if event.WhichOneof("what") != "summary":
                    self._other(event, seq, wall)
                    continue
                step = event.step
                if last is None or step > last:
                    last = step
                # Inline for the common case, a scalar of TF1's form (torch, tensorboardX).
                for value in event.summary.value:
                    if value.WhichOneof("value") == "simple_value":
                        steps, values, walls, seqs = scalars[value.tag]
                        steps.append(step)
                        values.append(value.simple_value)
                        walls.append(wall)
                        seqs.append(seq)
                    else:
                        self._value(value, seq, step, wall)
            except decode.DecodeError as exc:
                bad_values.append(f"{shown}: the record at byte {offset} holds a bad value: "
                                  f"{exc}")
        else:
            self._check_end(records, shown, recent)
        self._seq, self._started, self._updated, self._last_step = seq, low, high, last
        if bad_values:
            more = f" ({len(bad_values)} such records)" if len(bad_values) > 1 else ""
            self._problems.append(bad_values[0] + more)

    def _check_end(self, records: RecordFile, shown: str, recent: bool) -> None:
        problem = records.problem
        if problem is not None and not (problem.truncated and recent):
            self._problems.append(
                f"{shown}: the record at byte {problem.offset} {problem.reason}; "
                f"{problem.records_read} records before it were read, the remaining "
                f"{problem.size - problem.offset} bytes are skipped")

    def result(self, files: tuple[str, ...], newest_mtime: float) -> EventFileRun:
        graph = self._graph_record()
        seqs = {(kind, tag): tuple(seq for seq, _ in _by_step(pairs))
                for kind, by_tag in self._by_kind.items() for tag, pairs in by_tag.items()}
        records = {kind: {tag: tuple(record for _, record in _by_step(pairs))
                          for tag, pairs in by_tag.items()}
                   for kind, by_tag in self._by_kind.items()}
        return EventFileRun(
            files=files, scalars={tag: _series(columns) for tag, columns in self._scalars.items()},
            histograms=records["histogram"], texts=records["text"], images=records["image"],
            graph=graph, started=self._started, updated=self._updated,
            last_step=self._last_step, records=self._seq, newest_mtime=newest_mtime,
            problems=tuple(self._problems), seqs=seqs, skipped=dict(self._skipped))

    def _other(self, event: Any, seq: int, wall: float) -> None:
        what = event.WhichOneof("what")
        if what == "graph_def":
            self._graph = (event.graph_def, seq, wall, False)
        elif what == "meta_graph_def" and (self._graph is None or self._graph[3]):
            self._graph = (event.meta_graph_def, seq, wall, True)

    def _value(self, value: Any, seq: int, step: int, wall: float) -> None:
        kind = value.WhichOneof("value")
        tag = value.tag
        if kind == "histo":
            self._add("histogram", tag, seq, decode.legacy_histogram(tag, step, wall,
                                                                     value.histo))
        elif kind == "image":
            self._add("image", tag, seq, decode.EncodedImage(tag, step, wall,
                                                             value.image.encoded_image_string))
        elif kind == "tensor":
            self._tensor(value, seq, tag, step, wall)
        else:
            self._skipped[kind or "empty"] += 1

    def _tensor(self, value: Any, seq: int, tag: str, step: int, wall: float) -> None:
        plugin = value.metadata.plugin_data.plugin_name if value.HasField("metadata") else ""
        if plugin:
            self._plugins[tag] = plugin
        plugin = self._plugins.get(tag, "")
        tensor = value.tensor
        if plugin == decode.SCALARS:
            steps, values, walls, seqs = self._scalars[tag]
            number = decode.tensor_scalar(tensor)
            steps.append(step)
            values.append(number)
            walls.append(wall)
            seqs.append(seq)
        elif plugin == decode.HISTOGRAMS:
            self._add("histogram", tag, seq, decode.tensor_histogram(tag, step, wall, tensor))
        elif plugin == decode.IMAGES:
            for image in decode.tensor_images(tag, step, wall, tensor):
                self._add("image", image.tag, seq, image)
        elif plugin == decode.TEXT:
            self._add("text", tag, seq, decode.tensor_text(tag, step, wall, tensor))
        else:
            self._skipped[plugin or "tensor without a plugin"] += 1

    def _add(self, kind: str, tag: str, seq: int, record: Any) -> None:
        self._by_kind[kind][tag].append((seq, record))

    def _graph_record(self):
        if self._graph is None:
            return None
        data, seq, wall, meta = self._graph
        try:
            graph_def = (meta_graph_pb2.MetaGraphDef.FromString(data).graph_def if meta
                         else graph_pb2.GraphDef.FromString(data))
        except ProtoDecodeError as exc:
            self._problems.append(f"{self._run}: the graph recorded at wall time {wall:.3f} "
                                  f"is not a GraphDef ({exc})")
            return None
        return decode.graph_record(graph_def, seq, wall)


def _by_step(pairs: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    return sorted(pairs, key=lambda pair: pair[1].step)


def _series(columns: tuple[list, list, list, list]) -> Series:
    steps = np.asarray(columns[0], dtype=np.int64)
    order = np.argsort(steps, kind="stable")
    return Series(steps[order], np.asarray(columns[1], dtype=np.float64)[order],
                  np.asarray(columns[2], dtype=np.float64)[order],
                  np.asarray(columns[3], dtype=np.int64)[order])
