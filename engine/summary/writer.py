"""tf.summary.FileWriter and FileWriterCache: summaries, graphs, run metadata and session logs go
into the run store with the run folder at `logdir`; a FileWriter given a graph attaches its
run to it, so a Session on that graph without a logdir records its steps there too."""

from __future__ import annotations

import json
import logging
import os
import threading
import weakref
from pathlib import Path

import numpy as np

from engine.graph import Graph, get_default_graph
from engine.graph_def import GraphDef
from engine.record import RunWriter
from engine.runtime import recording
from engine.summary import proto

logger = logging.getLogger("engine")

# graph -> the RunWriter of the FileWriter that was given it (the latest one wins).
_attached: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_attached_lock = threading.Lock()


def attached_run_writer(graph: Graph) -> RunWriter | None:
    """The open RunWriter a FileWriter attached to `graph`, if any."""
    writer = _attached.get(graph)
    return None if writer is None or writer.closed else writer


class FileWriter:
    """Writes summaries into the run folder `logdir` (created if needed; it may already hold
    checkpoints). A logdir that already holds a run gets a fresh sibling `logdir-1`, ...
    (logged): runs are never appended to, unlike TensorBoard's event files. max_queue and
    filename_suffix are accepted for TF's signature and have no effect (the run writer's
    queue is unbounded and there are no event files)."""

    def __init__(self, logdir, graph: Graph | GraphDef | None = None, max_queue: int = 10,
                 flush_secs: float = 120, graph_def: GraphDef | None = None,
                 filename_suffix: str | None = None, session=None):
        if session is not None:
            raise ValueError("FileWriter(session=...) writes through a TF2 summary writer "
                             "resource, which this engine does not have; pass a logdir")
        self._logdir = os.fspath(logdir)
        self._flush_secs = float(flush_secs)
        self._warned_closed = False
        self._run = self._open()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def _open(self) -> RunWriter:
        folder = Path(os.path.abspath(self._logdir))
        return RunWriter(folder.parent, folder.name, exist_ok=True, flush_secs=self._flush_secs,
                         config={"kind": "tf.summary.FileWriter", "logdir": self._logdir})

    @property
    def run_writer(self) -> RunWriter:
        """The RunWriter behind this FileWriter (training code may log through it too)."""
        return self._run

    def get_logdir(self) -> str:
        """The run folder actually written: `logdir`, or its sibling when that held a run."""
        return self._run.path

    # -- adding --------------------------------------------------------------------------

    def add_summary(self, summary, global_step: int | None = None) -> None:
        """`summary`: a Summary, or the bytes a summary op returned from Session.run."""
        if self._usable():
            if not isinstance(summary, proto.Summary):
                summary = proto.Summary.FromString(_as_bytes(summary))
            for value in summary.value:
                _write_value(self._run, value, _step(global_step))

    def add_graph(self, graph: Graph | GraphDef | None, global_step: int | None = None,
                  graph_def: GraphDef | None = None) -> None:
        if not self._usable():
            return
        if isinstance(graph, Graph):
            with _attached_lock:
                _attached[graph] = self._run
            graph_def = graph.as_graph_def()
        elif isinstance(graph, GraphDef):
            graph_def = graph
        elif graph is not None or not isinstance(graph_def, GraphDef):
            raise TypeError(f"add_graph expects a tf.Graph or GraphDef, got "
                            f"{type(graph if graph is not None else graph_def).__name__}")
        self._run.graph(recording.graph_record(graph_def))

    def add_run_metadata(self, run_metadata, tag: str, global_step: int | None = None) -> None:
        """Kept as the text tag `run_metadata/<tag>`: the step stats as JSON, one entry per
        device with its nodes' names, ops and times."""
        if not self._usable():
            return
        devices = [{"device": d.device, "node_stats": [
            {"node_name": n.node_name, "op": n.op, "all_start_micros": n.all_start_micros,
             "all_end_rel_micros": n.all_end_rel_micros, "timeline_label": n.timeline_label}
            for n in d.node_stats]} for d in run_metadata.step_stats.dev_stats]
        self._run.text(f"run_metadata/{tag}", json.dumps({"step_stats": devices}),
                       _step(global_step))

    def add_session_log(self, session_log: proto.SessionLog,
                        global_step: int | None = None) -> None:
        if not self._usable():
            return
        parts = [f"session log {session_log.status_name}"]
        if global_step is not None:
            parts.append(f"at step {int(global_step)}")
        if session_log.checkpoint_path:
            parts.append(f"checkpoint {session_log.checkpoint_path}")
        if session_log.msg:
            parts.append(session_log.msg)
        self._run.log_event(" ".join(parts))

    # -- lifecycle -----------------------------------------------------------------------

    def flush(self) -> None:
        if not self._run.closed:
            self._run.flush()

    def close(self) -> None:
        self._run.close()

    def reopen(self) -> None:
        """After close(): a fresh run (the old folder holds one, so this is `logdir-1`, ...)."""
        if self._run.closed:
            self._run = self._open()
            self._warned_closed = False

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def _usable(self) -> bool:
        if not self._run.closed:
            return True
        if not self._warned_closed:
            logger.warning("Attempting to use a closed FileWriter. The operation will be a "
                           "noop unless the FileWriter is explicitly reopened.")
            self._warned_closed = True
        return False

    def __repr__(self) -> str:
        return f"FileWriter({self._run.path!r})"


class FileWriterCache:
    """One FileWriter per logdir, shared by the hooks and user code of one process."""

    _cache: dict[str, FileWriter] = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir) -> FileWriter:
        key = os.path.abspath(os.fspath(logdir))
        with FileWriterCache._lock:
            writer = FileWriterCache._cache.get(key)
            if writer is None:
                writer = FileWriterCache._cache[key] = FileWriter(logdir,
                                                                  graph=get_default_graph())
            return writer

    @staticmethod
    def clear() -> None:
        """Closes and forgets every cached writer."""
        with FileWriterCache._lock:
            writers = list(FileWriterCache._cache.values())
            FileWriterCache._cache.clear()
        for writer in writers:
            writer.close()


def _write_value(run: RunWriter, value: proto.Summary.Value, step: int | None) -> None:
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        run.scalar(value.tag, value.simple_value, step)
    elif kind == "histo":
        histo = value.histo
        if histo.num == 0:
            return     # an empty tensor's histogram has no buckets to draw
        edges, counts = histo.edges_and_counts()
        run.histogram_from_buckets(value.tag, edges, counts, step, min=histo.min,
                                   max=histo.max, sum=histo.sum, count=int(histo.num))
    elif kind == "image":
        run.image(value.tag, value.image.pixels(), step)
    elif kind == "tensor":
        plugin = value.metadata.plugin_data.plugin_name if value.metadata else ""
        if plugin == "text" or value.tensor.dtype == object:
            run.text(value.tag, value.tensor, step)     # its shape kept: a table
        else:
            run.tensor_summary(value.tag, value.tensor, step)
    else:
        raise ValueError(f"Summary.Value {value.tag!r} has no value (set simple_value, histo, "
                         "image or tensor)")


def _as_bytes(summary) -> bytes:
    if isinstance(summary, np.ndarray) and summary.dtype == object and summary.ndim == 0:
        summary = summary[()]
    if isinstance(summary, (bytes, bytearray)):
        return bytes(summary)
    raise TypeError(f"add_summary expects a Summary or the bytes a summary op returned, got "
                    f"{type(summary).__name__}")


def _step(global_step) -> int | None:
    return None if global_step is None else int(global_step)
