"""The run store's on-disk format: SQLite tables (DDL), connections for the writer and for
readers, JSON and side-file (blob) encoding, and the process identity that lets a reader tell a
live writer from a dead one. Shared by writer.py and reader.py; no engine imports."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from engine.record.schema import DATABASE_NAME, SCHEMA_VERSION

BLOB_DIR = "blobs"
BLOB_THRESHOLD = 64 * 1024     # payloads larger than this go to <run>/blobs/<id>.npy
HEARTBEAT_SECS = 5.0           # an idle writer still commits its heartbeat this often
STALE_SECS = 30.0              # an unclosed run silent for longer than this is INTERRUPTED
BUSY_TIMEOUT_SECS = 10.0

# Kinds: tags of different kinds live in one table; events() reports these kinds.
SCALAR, HISTOGRAM, TEXT = "scalar", "histogram", "text"

# Every table except meta and tags has seq (the run-wide order, also the rowid) and wall_time.
# Children of a plan (partitions, cut_edges) or of a step (op_stats, transfers) point at the
# seq of the parent row they came with, so a reused plan id or step number stays unambiguous.
TABLES: dict[str, tuple[str, ...]] = {
    "run_events": ("kind", "detail"),
    "scalars": ("tag_id", "step", "value"),
    "histograms": ("tag_id", "step", "min", "max", "sum", "count", "edges", "counts", "blob"),
    "texts": ("tag_id", "step", "body", "blob"),
    "devices": ("name", "device_type", "idx", "physical", "virtual"),
    "graphs": ("version", "num_nodes", "body", "blob"),
    "placements": ("graph_version", "node", "op", "requested", "assigned", "reason",
                   "detail", "log_line"),
    "plans": ("plan", "graph_version", "fetches", "feeds", "targets", "devices",
              "num_partitions", "num_cut_edges"),
    "partitions": ("plan_seq", "plan", "device", "num_nodes", "body", "blob"),
    "cut_edges": ("plan_seq", "plan", "tensor", "src_device", "dst_device", "send_node",
                  "recv_node", "key", "dtype", "shape", "consumers", "bytes"),
    "steps": ("step", "plan", "wall_start", "duration_us", "num_ops", "bytes_moved"),
    "op_stats": ("step_seq", "step", "node", "op", "device", "start_us", "end_us",
                 "output_bytes", "thread"),
    "transfers": ("step_seq", "step", "key", "tensor", "src_device", "dst_device", "bytes"),
}

# The covering index on scalars (tag_id, step, seq, value) lets scalars(tag) read 100k points
# in step order straight from the index without a sort.
_INDEXES = (
    "CREATE INDEX scalars_by_tag ON scalars (tag_id, step, seq, value)",
    "CREATE INDEX histograms_by_tag ON histograms (tag_id, step)",
    "CREATE INDEX texts_by_tag ON texts (tag_id, step)",
    "CREATE INDEX graphs_by_version ON graphs (version)",
    "CREATE INDEX placements_by_node ON placements (node, graph_version)",
    "CREATE INDEX plans_by_plan ON plans (plan)",
    "CREATE INDEX partitions_by_plan ON partitions (plan_seq)",
    "CREATE INDEX cut_edges_by_plan ON cut_edges (plan_seq)",
    "CREATE INDEX steps_by_step ON steps (step)",
    "CREATE INDEX steps_by_plan ON steps (plan)",
    "CREATE INDEX op_stats_by_step ON op_stats (step_seq)",
    "CREATE INDEX transfers_by_step ON transfers (step_seq)",
)


def _ddl() -> list[str]:
    statements = [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ("CREATE TABLE tags (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, tag TEXT NOT NULL, "
         "UNIQUE (kind, tag))"),
    ]
    for table, columns in TABLES.items():
        body = ", ".join(("seq INTEGER PRIMARY KEY", "wall_time REAL NOT NULL") + columns)
        statements.append(f"CREATE TABLE {table} ({body})")
    statements.extend(_INDEXES)
    return statements


def insert_sql(table: str) -> str:
    columns = ("seq", "wall_time") + TABLES[table]
    marks = ", ".join("?" * len(columns))
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"


META_UPSERT = "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"
TAG_INSERT = "INSERT OR IGNORE INTO tags (id, kind, tag) VALUES (?, ?, ?)"


def create_database(run_dir: Path, meta: dict[str, Any], config_json: str) -> None:
    """Builds the schema, the initial meta and the "run started" event (seq 1) under a
    temporary name and renames it into place, so a reader never finds a run.sqlite without
    its tables and meta."""
    final = run_dir / DATABASE_NAME
    scratch = run_dir / (DATABASE_NAME + ".init")
    conn = sqlite3.connect(scratch, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for statement in _ddl():
            conn.execute(statement)
        rows = [(key, to_json(value)) for key, value in meta.items()]
        rows += [("schema_version", to_json(SCHEMA_VERSION)), ("config", config_json)]
        conn.executemany(META_UPSERT, rows)
        conn.execute(insert_sql("run_events"), (1, meta["started"], "run", "run started"))
        conn.execute("COMMIT")
    finally:
        conn.close()
    os.replace(scratch, final)


def connect_for_writing(db_path: Path) -> sqlite3.Connection:
    """Autocommit connection (the writer issues BEGIN/COMMIT itself), WAL so readers in other
    processes never block it; synchronous=NORMAL survives a killed process."""
    conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False,
                           timeout=BUSY_TIMEOUT_SECS)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def connect_read_only(db_path: Path) -> sqlite3.Connection:
    uri = db_path.resolve().as_uri() + "?mode=ro"
    return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_SECS)


def _json_default(value: Any) -> Any:
    # numpy and torch scalars/arrays both offer tolist(); paths become their text.
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def to_json(value: Any) -> str:
    return json.dumps(value, default=_json_default, separators=(",", ":"))


def from_json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def blob_path(run_dir: Path, blob_id: str) -> Path:
    return run_dir / BLOB_DIR / f"{blob_id}.npy"


def write_blob(run_dir: Path, blob_id: str, array: np.ndarray) -> None:
    """Written (and renamed into place) before the row that names it is committed, so a
    committed row never points at a missing or half-written file."""
    path = blob_path(run_dir, blob_id)
    path.parent.mkdir(exist_ok=True)
    scratch = path.with_suffix(".tmp")
    with open(scratch, "wb") as handle:
        np.save(handle, array, allow_pickle=False)
    os.replace(scratch, path)


def read_blob(run_dir: Path, blob_id: str) -> np.ndarray:
    return np.load(blob_path(run_dir, blob_id), allow_pickle=False)


def pack_text(run_dir: Path, blob_id: str, text: str,
              preview: int = 0) -> tuple[str | None, str | None]:
    """(body, blob): the text inline, or its first `preview` characters (None for 0) and the
    id of the side file holding all of it."""
    data = text.encode("utf-8")
    if len(data) <= BLOB_THRESHOLD:
        return text, None
    write_blob(run_dir, blob_id, np.frombuffer(data, dtype=np.uint8))
    return (text[:preview] if preview else None), blob_id


def process_identity() -> str:
    """Host plus PID namespace: a pid means the same process only inside the same namespace
    (two containers may share a host name)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()}|{namespace}"


def pid_alive(pid: int) -> bool | None:
    """None when this platform cannot tell (on Windows os.kill would terminate the process)."""
    if os.name != "posix":
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
