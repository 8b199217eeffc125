"""Run store benchmark: 100k scalars through RunWriter against a plain SQLite executemany of
the same rows (the peer), and RunReader.scalars() for one 100k-point tag. A script, not a test:
    python bench/bench_record.py [--points N] [--tags K]"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.record import RunReader, RunWriter
from engine.record.store import connect_for_writing, insert_sql


def rows_for(points: int, tags: int) -> list[tuple[str, int, float]]:
    """(tag, step, value): `tags` tags logged at every step, points in all."""
    names = [f"tag{k}" for k in range(tags)]
    return [(names[i % tags], i // tags, 1.0 / (i + 1)) for i in range(points)]


def time_writer(logdir: Path, rows: list[tuple[str, int, float]]) -> tuple[float, float, str]:
    """(seconds in the caller's scalar() calls, seconds until closed, run path)."""
    writer = RunWriter(logdir, "writer")
    start = time.perf_counter()
    for tag, step, value in rows:
        writer.scalar(tag, value, step)
    calls = time.perf_counter() - start
    writer.close()
    return calls, time.perf_counter() - start, writer.path


def time_peer(path: Path, rows: list[tuple[str, int, float]], indexed: bool) -> float:
    """One executemany in one transaction; with `indexed`, into the run store's own scalar
    table and covering index, otherwise into a bare table."""
    conn = connect_for_writing(path)
    if indexed:
        conn.execute("CREATE TABLE scalars (seq INTEGER PRIMARY KEY, wall_time REAL NOT NULL, "
                     "tag_id INTEGER, step INTEGER, value REAL)")
        conn.execute("CREATE INDEX scalars_by_tag ON scalars (tag_id, step, seq, value)")
        sql = insert_sql("scalars")
        ids: dict[str, int] = {}
    else:
        conn.execute("CREATE TABLE scalars (wall_time REAL, tag TEXT, step INTEGER, value REAL)")
    start = time.perf_counter()
    now = time.time()
    if indexed:
        batch = [(seq, now, ids.setdefault(tag, len(ids) + 1), step, value)
                 for seq, (tag, step, value) in enumerate(rows, 1)]
    else:
        batch = [(now, tag, step, value) for tag, step, value in rows]
        sql = "INSERT INTO scalars VALUES (?, ?, ?, ?)"
    conn.execute("BEGIN")
    conn.executemany(sql, batch)
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def time_read(run_path: str, tag: str, repeats: int = 5) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeats):
        start = time.perf_counter()
        steps, _values = RunReader(run_path).scalars(tag)
        best = min(best, time.perf_counter() - start)
        count = len(steps)
    return best, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--tags", type=int, default=1)
    args = parser.parse_args()
    rows = rows_for(args.points, args.tags)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        calls, total, run_path = time_writer(root, rows)
        peer_indexed = time_peer(root / "peer_indexed.sqlite", rows, indexed=True)
        peer_bare = time_peer(root / "peer_bare.sqlite", rows, indexed=False)
        read, count = time_read(run_path, rows[0][0])
    print(f"{args.points} scalars over {args.tags} tag(s)")
    print(f"{'':34}{'seconds':>10}{'us/point':>10}{'vs peer':>9}")
    lines = [
        ("RunWriter.scalar() calls", calls),
        ("RunWriter calls + close (committed)", total),
        ("peer: executemany, same table+index", peer_indexed),
        ("peer: executemany, bare table", peer_bare),
    ]
    for label, seconds in lines:
        ratio = seconds / peer_indexed
        print(f"{label:34}{seconds:10.3f}{seconds / args.points * 1e6:10.2f}{ratio:8.2f}x")
    print(f"RunReader.scalars() for {count} points: best of 5 {read * 1000:.1f} ms")


if __name__ == "__main__":
    main()
