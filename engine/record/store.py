"""The run store's on-disk format: SQLite tables (DDL), how each record becomes rows, JSON and
side-file (blob) encoding, connections for the writer and readers, and the process identity
that lets a reader tell a live writer from a dead one. No engine imports."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.record.schema import (
    DATABASE_NAME,
    SCALAR_BLOCK_FIELDS,
    SCALAR_BLOCK_POINTS,
    SCHEMA_VERSION,
    AlertRecord,
    CompressionRecord,
    CutEdgeRecord,
    DeviceRecord,
    GraphRecord,
    NodeRecord,
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
    TensorSummaryRecord,
    TransferRecord,
)

BLOB_DIR = "blobs"
BLOB_THRESHOLD = 64 * 1024     # payloads larger than this go to <run>/blobs/<id>.npy
HEARTBEAT_SECS = 5.0           # an idle writer still commits its heartbeat this often
STALE_SECS = 30.0              # an unclosed run silent for longer than this is INTERRUPTED
BUSY_TIMEOUT_SECS = 10.0

# Kinds: tags of different kinds live in one table; events() reports these kinds.
SCALAR, HISTOGRAM, TEXT, IMAGE = "scalar", "histogram", "text", "image"

# Every table except meta and tags has seq (the run-wide order, also the rowid) and wall_time.
# Children of a plan (partitions, cut_edges) or of a step (op_stats, transfers) point at the
# seq of the parent row they came with, so a reused plan id or step number stays unambiguous.
# Tables and indexes are grouped by the schema version that added them: a new database runs
# every version's statements, and upgrade() runs the versions an older database lacks.
TABLES_BY_VERSION: dict[int, dict[str, tuple[str, ...]]] = {
    1: {
        "run_events": ("kind", "detail"),
        "scalars": ("tag_id", "step", "value"),
        "histograms": ("tag_id", "step", "min", "max", "sum", "count", "edges", "counts",
                       "blob"),
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
        "transfers": ("step_seq", "step", "key", "tensor", "src_device", "dst_device",
                      "bytes"),
    },
    2: {
        # pixels: the uint8 (height, width, channels) bytes inline, or NULL and a side file.
        "images": ("tag_id", "step", "height", "width", "channels", "pixels", "blob"),
        "tensor_summaries": ("node", "step", "dtype", "shape", "count", "min", "max", "mean",
                             "std", "nan_count", "neg_inf_count", "pos_inf_count"),
        # inputs / output: TensorSummaryRecord fields as JSON; stack: JSON list of frames.
        "alerts": ("step", "node", "op", "device", "kind", "message", "inputs", "output",
                   "stack"),
    },
    3: {
        # Pruning: a layer's accuracy versus sparsity; prune-retrain stages and, per stage,
        # each layer's sparsity (stage_seq: the parent stage row); the compression figures
        # (per_layer: JSON {layer: [dense values, nonzero values]}).
        "prune_sensitivity": ("layer", "sparsity", "accuracy"),
        "prune_stages": ("stage", "step", "pruned_accuracy", "accuracy"),
        "prune_layers": ("stage_seq", "stage", "layer", "target", "sparsity"),
        "prune_compression": ("dense_values", "stored_values", "dense_bytes", "sparse_bytes",
                              "baseline_accuracy", "accuracy", "per_layer"),
        # skipped: JSON {original node: why}. A node row points at its comparison's seq; its
        # quantized and shape are JSON lists, its histograms little-endian float64 bytes
        # (edges and counts of both outputs, then the error's), or NULL and a side file.
        "quantization_comparisons": ("name", "original_graph_version",
                                     "quantized_graph_version", "threshold_db", "flagged",
                                     "num_nodes", "skipped"),
        "quantization_nodes": ("comparison_seq", "position", "original", "op", "compared",
                               "quantized", "shape", "mse", "max_abs_error", "sqnr_db",
                               "cosine", "flagged", "bins", "histograms", "blob"),
        "quantization_costs": ("model", "variant", "accuracy", "file_bytes", "bytes_ratio",
                               "batch1_us", "batch256_us", "batch1_speedup",
                               "batch256_speedup"),
    },
    5: {
        # Every SCALAR_BLOCK_POINTS consecutive points of a scalar tag, summarised (body:
        # SCALAR_BLOCK_FIELDS as little-endian float64) in the transaction that commits the
        # block's last point; first_seq and last_seq are the seqs of its first and last rows.
        "scalar_blocks": ("tag_id", "first_seq", "last_seq", "body"),
    },
}
# Columns a later version added to an earlier version's table (ALTER TABLE ... ADD COLUMN;
# an older row reads the new column as NULL).
COLUMNS_BY_VERSION: dict[int, dict[str, tuple[str, ...]]] = {
    # shape: JSON list of a string tensor's dimensions, its body then the JSON list of its
    # strings in row-major order; NULL for one string (body the string itself).
    4: {"texts": ("shape",)},
}


def _columns_now() -> dict[str, tuple[str, ...]]:
    """Each table's columns in the current version, the added ones last (as ALTER left them)."""
    tables = {table: columns for added in TABLES_BY_VERSION.values()
              for table, columns in added.items()}
    for added in COLUMNS_BY_VERSION.values():
        for table, columns in added.items():
            tables[table] += columns
    return tables


TABLES: dict[str, tuple[str, ...]] = _columns_now()

# The covering index on scalars (tag_id, step, seq, value) lets scalars(tag) read 100k points
# in step order straight from the index without a sort.
INDEXES_BY_VERSION: dict[int, tuple[str, ...]] = {
    1: (
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
    ),
    2: (
        "CREATE INDEX images_by_tag ON images (tag_id, step)",
        "CREATE INDEX tensor_summaries_by_node ON tensor_summaries (node, step)",
        "CREATE INDEX alerts_by_step ON alerts (step)",
    ),
    3: (
        "CREATE INDEX prune_sensitivity_by_layer ON prune_sensitivity (layer, sparsity)",
        "CREATE INDEX prune_layers_by_stage ON prune_layers (stage_seq)",
        "CREATE INDEX quantization_nodes_by_comparison ON quantization_nodes "
        "(comparison_seq, position)",
        "CREATE INDEX quantization_costs_by_model ON quantization_costs (model)",
    ),
    5: ("CREATE INDEX scalar_blocks_by_tag ON scalar_blocks (tag_id, last_seq)",),
}


META_UPSERT = ("INSERT INTO meta (key, value) VALUES (?, ?) "
               "ON CONFLICT (key) DO UPDATE SET value = excluded.value")   # in place
TAG_INSERT = "INSERT OR IGNORE INTO tags (id, kind, tag) VALUES (?, ?, ?)"


def version_statements(version: int) -> list[str]:
    """The DDL that schema `version` added."""
    statements = []
    for table, columns in TABLES_BY_VERSION.get(version, {}).items():
        body = ", ".join(("seq INTEGER PRIMARY KEY", "wall_time REAL NOT NULL") + columns)
        statements.append(f"CREATE TABLE {table} ({body})")
    for table, columns in COLUMNS_BY_VERSION.get(version, {}).items():
        statements += [f"ALTER TABLE {table} ADD COLUMN {column}" for column in columns]
    return statements + list(INDEXES_BY_VERSION.get(version, ()))


def _ddl() -> list[str]:
    statements = [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ("CREATE TABLE tags (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, tag TEXT NOT NULL, "
         "UNIQUE (kind, tag))"),
    ]
    for version in range(1, SCHEMA_VERSION + 1):
        statements.extend(version_statements(version))
    return statements


def upgrade(conn: sqlite3.Connection, from_version: int) -> None:
    """Adds what the versions after from_version added, in one transaction."""
    conn.execute("BEGIN")
    for version in range(from_version + 1, SCHEMA_VERSION + 1):
        for statement in version_statements(version):
            conn.execute(statement)
    conn.execute(META_UPSERT, ("schema_version", to_json(SCHEMA_VERSION)))
    conn.execute("COMMIT")


def insert_sql(table: str) -> str:
    columns = ("seq", "wall_time") + TABLES[table]
    marks = ", ".join("?" * len(columns))
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"




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


def claim_database(run_dir: Path) -> bool:
    """Whether this writer now owns run_dir's database: the folder holds no run and the
    scratch file create_database builds in was created exclusively here."""
    final = run_dir / DATABASE_NAME
    if final.exists():
        return False
    scratch = run_dir / (DATABASE_NAME + ".init")
    try:
        os.close(os.open(scratch, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    if final.exists():          # another writer finished its database between the checks
        scratch.unlink()
        return False
    return True


def connect_for_writing(db_path: Path, autocheckpoint: bool = True) -> sqlite3.Connection:
    """Autocommit connection (the writer issues BEGIN/COMMIT itself), WAL so readers in other
    processes never block it; synchronous=NORMAL survives a killed process. Without
    autocheckpoint the caller folds the WAL back itself (committer.py says why)."""
    conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False,
                           timeout=BUSY_TIMEOUT_SECS)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    if not autocheckpoint:
        conn.execute("PRAGMA wal_autocheckpoint=0")
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


# Records to rows. Each encoder returns {table: rows}; `next_seq` hands out the run-wide order,
# parents first, so children can name their parent's seq.

SeqSource = Callable[[], int]


def check_record(call: str, record: Any, expected: type) -> None:
    if not isinstance(record, expected):
        raise TypeError(f"{call}() expects {expected.__name__} records, "
                        f"got {type(record).__name__}")


_EXACT_STEPS = 2 ** 53      # float64 holds every integer step up to this


def scalar_blocks(steps: np.ndarray, values: np.ndarray, walls: np.ndarray) -> np.ndarray:
    """The (n, SCALAR_BLOCK_FIELDS) float64 summaries of the whole blocks of
    SCALAR_BLOCK_POINTS consecutive points in these arrays (in the order written); points
    after the last whole block are left out."""
    size = SCALAR_BLOCK_POINTS
    n = len(values) // size
    # Steps as float64: exact below 2**53, and a block with a larger one is not `ordered`
    # (the reader then draws the tag from its rows).
    s = np.asarray(steps[:n * size], dtype=np.float64).reshape(n, size)
    v = np.asarray(values[:n * size], dtype=np.float64).reshape(n, size)
    w = np.asarray(walls[:n * size], dtype=np.float64).reshape(n, size)
    finite = np.isfinite(v)
    rows = np.arange(n)
    low = np.where(finite, v, np.inf).argmin(axis=1)      # the first of equal ones
    high = np.where(finite, v, -np.inf).argmax(axis=1)
    none = ~finite.any(axis=1)
    low[none] = high[none] = 0
    ordered = (np.diff(s, axis=1) >= 0).all(axis=1) & (np.abs(s) < _EXACT_STEPS).all(axis=1)
    columns = (
        s[:, 0], s[:, -1], np.full(n, size), finite.sum(axis=1),
        np.where(finite, v, 0.0).sum(axis=1),
        v[rows, low], low, s[rows, low], w[rows, low],
        v[rows, high], high, s[rows, high], w[rows, high],
        v[:, 0], w[:, 0], v[:, -1], w[:, -1], ordered)
    return np.stack([np.asarray(c, dtype=np.float64) for c in columns], axis=1).reshape(
        n, len(SCALAR_BLOCK_FIELDS))


def scalar_block_row(seq: int, wall_time: float, tag_id: int,
                     points: Sequence[tuple[int, int, float, float]]) -> tuple:
    """The scalar_blocks row of one block's (seq, step, value, wall_time) points."""
    seqs, steps, values, walls = zip(*points)
    body = scalar_blocks(np.array(steps, dtype=np.float64), np.array(values, dtype=np.float64),
                         np.array(walls, dtype=np.float64))
    return (seq, wall_time, tag_id, seqs[0], seqs[-1], body.astype("<f8").tobytes())


def histogram_row(run_dir: Path, seq: int, wall_time: float, tag_id: int, step: int,
                  values: np.ndarray, bins: int) -> tuple:
    """Buckets over the finite values; min, max and sum over all, so NaN/Inf show there."""
    finite = values[np.isfinite(values)]
    if finite.size:
        counts, edges = np.histogram(finite, bins=bins)
    else:
        counts, edges = np.zeros(bins), np.linspace(0.0, 1.0, bins + 1)
    if values.size:
        low, high, total = float(values.min()), float(values.max()), float(values.sum())
    else:
        low, high, total = float("nan"), float("nan"), 0.0
    return bucket_row(run_dir, seq, wall_time, tag_id, step, edges, counts,
                      (low, high, total, int(values.size)))


def bucket_row(run_dir: Path, seq: int, wall_time: float, tag_id: int, step: int,
               edges: np.ndarray, counts: np.ndarray,
               stats: tuple[float, float, float, int]) -> tuple:
    """A histograms row from buckets; stats are (min, max, sum, count)."""
    edges, counts = edges.astype("<f8"), counts.astype("<f8")
    low, high, total, count = stats
    edge_bytes, count_bytes, blob = edges.tobytes(), counts.tobytes(), None
    if len(edge_bytes) + len(count_bytes) > BLOB_THRESHOLD:
        blob = f"{seq}-histogram"
        write_blob(run_dir, blob, np.concatenate([edges, counts]))
        edge_bytes = count_bytes = None
    return (seq, wall_time, tag_id, step, low, high, total, count, edge_bytes, count_bytes,
            blob)


def text_row(run_dir: Path, seq: int, wall_time: float, tag_id: int, step: int,
             cells: tuple[str, ...], shape: tuple[int, ...]) -> tuple:
    """One string (shape ()) as itself; a string tensor as the JSON list of its cells with
    its shape beside it."""
    text, encoded_shape = (cells[0], None) if shape == () else (to_json(cells), to_json(shape))
    # The inline preview lets events() summarise a large text without its side file.
    body, blob = pack_text(run_dir, f"{seq}-text", text, preview=200)
    return (seq, wall_time, tag_id, step, body, blob, encoded_shape)


def device_rows(next_seq: SeqSource, wall_time: float,
                records: Sequence[DeviceRecord]) -> dict[str, list[tuple]]:
    rows = []
    for r in records:
        check_record("devices", r, DeviceRecord)
        rows.append((next_seq(), wall_time, r.name, r.device_type, r.index, r.physical,
                     int(r.virtual)))
    return {"devices": rows}


def graph_rows(run_dir: Path, next_seq: SeqSource, wall_time: float,
               record: GraphRecord) -> dict[str, list[tuple]]:
    seq = next_seq()
    body, blob = pack_text(run_dir, f"{seq}-graph", nodes_json(record.nodes))
    return {"graphs": [(seq, wall_time, record.version, len(record.nodes), body, blob)]}


def nodes_json(nodes: Sequence[NodeRecord]) -> str:
    parts = []
    for node in nodes:
        check_record("graph", node, NodeRecord)
        encoded = {
            "name": node.name, "op": node.op, "inputs": list(node.inputs),
            "device": node.device, "attrs": node.attrs,
            "outputs": [[spec.dtype, None if spec.shape is None else list(spec.shape)]
                        for spec in node.outputs],
            "stack": list(node.stack),
        }
        try:
            parts.append(to_json(encoded))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"graph node {node.name!r}: attrs must be JSON-safe: {exc}") from None
    return "[" + ",".join(parts) + "]"


def placement_rows(next_seq: SeqSource, wall_time: float,
                   records: Sequence[PlacementRecord]) -> dict[str, list[tuple]]:
    rows = []
    for r in records:
        check_record("placements", r, PlacementRecord)
        rows.append((next_seq(), wall_time, r.graph_version, r.node, r.op, r.requested,
                     r.assigned, r.reason, r.detail, r.log_line))
    return {"placements": rows}


def plan_rows(run_dir: Path, next_seq: SeqSource, wall_time: float, record: PlanRecord,
              partitions: Sequence[PartitionRecord],
              cut_edges: Sequence[CutEdgeRecord]) -> dict[str, list[tuple]]:
    plan_seq = next_seq()
    plan = (plan_seq, wall_time, record.plan, record.graph_version, to_json(record.fetches),
            to_json(record.feeds), to_json(record.targets), to_json(record.devices),
            len(partitions), len(cut_edges))
    partition_rows = []
    for p in partitions:
        check_record("plan", p, PartitionRecord)
        seq = next_seq()
        body, blob = pack_text(run_dir, f"{seq}-partition", to_json(p.nodes))
        partition_rows.append((seq, wall_time, plan_seq, p.plan, p.device, len(p.nodes),
                               body, blob))
    edge_rows = []
    for e in cut_edges:
        check_record("plan", e, CutEdgeRecord)
        edge_rows.append((next_seq(), wall_time, plan_seq, e.plan, e.tensor, e.src_device,
                          e.dst_device, e.send_node, e.recv_node, e.key, e.dtype,
                          to_json(e.shape), to_json(e.consumers), e.bytes))
    return {"plans": [plan], "partitions": partition_rows, "cut_edges": edge_rows}


def step_rows(next_seq: SeqSource, wall_time: float, record: StepRecord,
              op_stats: Sequence[OpStatRecord],
              transfers: Sequence[TransferRecord]) -> dict[str, list[tuple]]:
    step_seq = next_seq()
    step = (step_seq, wall_time, record.step, record.plan, record.wall_start,
            record.duration_us, record.num_ops, record.bytes_moved)
    stat_rows = []
    for s in op_stats:
        check_record("step", s, OpStatRecord)
        stat_rows.append((next_seq(), wall_time, step_seq, s.step, s.node, s.op, s.device,
                          s.start_us, s.end_us, s.output_bytes, s.thread))
    transfer_rows = []
    for t in transfers:
        check_record("step", t, TransferRecord)
        transfer_rows.append((next_seq(), wall_time, step_seq, t.step, t.key, t.tensor,
                              t.src_device, t.dst_device, t.bytes))
    return {"steps": [step], "op_stats": stat_rows, "transfers": transfer_rows}


def image_row(run_dir: Path, seq: int, wall_time: float, tag_id: int, step: int,
              pixels: np.ndarray) -> tuple:
    """pixels: uint8 (height, width, channels); inline up to BLOB_THRESHOLD bytes."""
    height, width, channels = pixels.shape
    data, blob = pixels.tobytes(), None
    if len(data) > BLOB_THRESHOLD:
        blob = f"{seq}-image"
        write_blob(run_dir, blob, pixels)
        data = None
    return (seq, wall_time, tag_id, step, height, width, channels, data, blob)


def tensor_summary(node: str, step: int, values: np.ndarray) -> TensorSummaryRecord:
    """Statistics of an array: min, max, mean and std over its finite elements."""
    real = values.astype(np.float64, copy=False) if values.dtype.kind in "biuf" else None
    if real is None:
        raise TypeError(f"tensor summary {node!r}: values must be real numbers, got dtype "
                        f"{values.dtype}")
    finite = real[np.isfinite(real)]
    nan = float("nan")
    stats = (float(finite.min()), float(finite.max()), float(finite.mean()),
             float(finite.std())) if finite.size else (nan, nan, nan, nan)
    return TensorSummaryRecord(
        node, step, values.dtype.name, tuple(int(d) for d in values.shape), int(values.size),
        *stats, nan_count=int(np.isnan(real).sum()),
        neg_inf_count=int(np.isneginf(real).sum()), pos_inf_count=int(np.isposinf(real).sum()))


def tensor_summary_row(seq: int, wall_time: float, r: TensorSummaryRecord) -> tuple:
    return (seq, wall_time, r.node, r.step, r.dtype, to_json(r.shape), r.count, r.min, r.max,
            r.mean, r.std, r.nan_count, r.neg_inf_count, r.pos_inf_count)


def summary_json(r: TensorSummaryRecord | None) -> dict | None:
    if r is None:
        return None
    fields = ("node", "step", "dtype", "shape", "count", "min", "max", "mean", "std",
              "nan_count", "neg_inf_count", "pos_inf_count")
    # NaN is not JSON: a statistic with no finite values is written as null.
    return {k: (None if isinstance(v, float) and v != v else v)
            for k, v in ((k, getattr(r, k)) for k in fields)}


def alert_row(seq: int, wall_time: float, r: AlertRecord) -> tuple:
    check_record("alert", r, AlertRecord)
    for summary in r.inputs + ((r.output,) if r.output is not None else ()):
        check_record("alert", summary, TensorSummaryRecord)
    return (seq, wall_time, r.step, r.node, r.op, r.device, r.kind, r.message,
            to_json([summary_json(i) for i in r.inputs]), to_json(summary_json(r.output)),
            to_json(list(r.stack)))


def sensitivity_rows(next_seq: SeqSource, wall_time: float,
                     points: Sequence[SensitivityPoint]) -> dict[str, list[tuple]]:
    rows = []
    for p in points:
        check_record("sensitivity", p, SensitivityPoint)
        rows.append((next_seq(), wall_time, p.layer, float(p.sparsity), float(p.accuracy)))
    return {"prune_sensitivity": rows}


def prune_stage_rows(next_seq: SeqSource, wall_time: float,
                     record: PruneStageRecord) -> dict[str, list[tuple]]:
    check_record("prune_stage", record, PruneStageRecord)
    stage_seq = next_seq()
    stage = (stage_seq, wall_time, record.stage, record.step, float(record.pruned_accuracy),
             float(record.accuracy))
    layers = [(next_seq(), wall_time, stage_seq, record.stage, layer.layer,
               float(layer.target), float(layer.sparsity)) for layer in record.layers]
    return {"prune_stages": [stage], "prune_layers": layers}


def compression_rows(next_seq: SeqSource, wall_time: float,
                     record: CompressionRecord) -> dict[str, list[tuple]]:
    check_record("compression", record, CompressionRecord)
    per_layer = {str(k): [int(v[0]), int(v[1])] for k, v in record.per_layer.items()}
    return {"prune_compression": [(
        next_seq(), wall_time, int(record.dense_values), int(record.stored_values),
        int(record.dense_bytes), int(record.sparse_bytes), float(record.baseline_accuracy),
        float(record.accuracy), to_json(per_layer))]}


def quantization_rows(run_dir: Path, next_seq: SeqSource, wall_time: float,
                      record: QuantizationComparisonRecord) -> dict[str, list[tuple]]:
    """The comparison's row, then one per node pointing at it."""
    check_record("quantization_comparison", record, QuantizationComparisonRecord)
    parent = next_seq()
    rows = [(parent, wall_time, record.name, record.original_graph_version,
             record.quantized_graph_version, record.threshold_db, record.flagged,
             len(record.nodes), to_json(dict(record.skipped)))]
    node_rows = []
    for node in record.nodes:
        check_record("quantization_comparison", node, QuantizationNodeRecord)
        seq = next_seq()
        data, bins = quantization_histograms(node)
        blob = None
        if len(data) > BLOB_THRESHOLD:
            blob = f"{seq}-quantization"
            write_blob(run_dir, blob, np.frombuffer(data, dtype="<f8"))
            data = None
        node_rows.append((seq, wall_time, parent, node.position, node.original, node.op,
                          node.compared, to_json(list(node.quantized)),
                          to_json(list(node.shape)), node.mse, node.max_abs_error,
                          node.sqnr_db, node.cosine, int(node.flagged), bins, data, blob))
    return {"quantization_comparisons": rows, "quantization_nodes": node_rows}


def quantization_histograms(node: QuantizationNodeRecord) -> tuple[bytes, int]:
    """(bytes, bins): edges, original counts, quantized counts, error edges, error counts."""
    bins = len(node.original_counts)
    parts = (node.edges, node.original_counts, node.quantized_counts, node.error_edges,
             node.error_counts)
    expected = (bins + 1, bins, bins, bins + 1, bins)
    if tuple(len(p) for p in parts) != expected:
        raise ValueError(f"quantization node {node.original!r}: histograms need {bins + 1} "
                         f"edges for {bins} counts, got lengths "
                         f"{tuple(len(p) for p in parts)}")
    return np.concatenate([np.asarray(p, "<f8") for p in parts]).tobytes(), bins


def split_quantization_histograms(values: np.ndarray, bins: int) -> tuple[tuple, ...]:
    """quantization_histograms' five parts back from their float64 values."""
    cuts = np.cumsum([bins + 1, bins, bins, bins + 1])
    return tuple(tuple(part.tolist()) for part in np.split(values, cuts))


def quantization_cost_rows(next_seq: SeqSource, wall_time: float,
                           records: Sequence[QuantizationCostRecord]) -> dict[str, list[tuple]]:
    rows = []
    for r in records:
        check_record("quantization_costs", r, QuantizationCostRecord)
        rows.append((next_seq(), wall_time, r.model, r.variant, r.accuracy, r.file_bytes,
                     r.bytes_ratio, r.batch1_us, r.batch256_us, r.batch1_speedup,
                     r.batch256_speedup))
    return {"quantization_costs": rows}
