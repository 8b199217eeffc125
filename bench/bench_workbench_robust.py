"""Hostile and heavy traffic against `workbench serve` (waitress behind the RequestGuard, a
subprocess on 127.0.0.1), beside the same traffic against a peer checkout (--peer PATH, e.g.
the tree before this work) when one is given:

  1. bad web requests tried and how many were answered 5xx (goal 0): every input of every
     callback with hostile values, malformed bodies, bad Host headers, path tricks;
  2. server RSS before and after 300 POSTs of 5 MB (refused with 413), then after 300 POSTs
     of ~1 MB junk expanded-scope lists (inside the limit: each would be a new cache key);
  3. Scalars on a 1,000,000-point run: one request alone on a fresh server, then 20 at once
     on another fresh server, with the server's peak RSS (sampled every 20 ms).

The 1M-point run is written with RunWriter and then filled by one SQLite executemany in the
store's row format (RunWriter.scalar one million times takes minutes).
Usage: python bench/bench_workbench_robust.py [--points N] [--peer PATH] [--skip-oversized]"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil

from engine.record import RunWriter
from engine.record.schema import DEFAULT, GraphRecord, NodeRecord, PlacementRecord, TensorSpec

ROOT = Path(__file__).resolve().parent.parent
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
DISPATCH = "/_dash-update-component"
HUGE = "x" * 100_000
HOSTILE = [None, 5, -1, 3.5, True, 10**30, "", "nope", "..", "../../etc/passwd", "a/b",
           "nul\0byte", HUGE, [], ["nope"], [[1]], [{"a": 1}], {}, {"points": "x"},
           {"points": [{"customdata": [1, 2]}]}, [None, 5, "x"], "😀" * 300]


# The log directory.

def scoped_graph(scopes: int, per_scope: int, pad: int = 0) -> GraphRecord:
    nodes, last = [], None
    for s in range(scopes):
        for i in range(per_scope):
            name = f"block{s}/op{i}"
            attrs = {"pad": [0.0] * pad} if pad and not nodes else {}
            nodes.append(NodeRecord(name, "Identity", (last,) if last else (), "", attrs,
                                    (TensorSpec("float32", (4,)),), ("model.py:1 in build",)))
            last = name
    return GraphRecord(1, tuple(nodes))


def write_graph_run(logdir: Path, name: str, graph: GraphRecord) -> Path:
    placements = [PlacementRecord(n.name, n.op, "", CPU, DEFAULT, "default", "", 1)
                  for n in graph.nodes]
    with RunWriter(logdir, name) as run:
        run.graph(graph)
        run.placements(placements)
        for step in range(100):
            run.scalar("loss", 1.0 / (step + 1), step)
        return Path(run.path)


def write_long_run(logdir: Path, name: str, points: int) -> Path:
    with RunWriter(logdir, name) as run:
        run.scalar("loss", 1.0, 0)
        path = Path(run.path)
    conn = sqlite3.connect(path / "run.sqlite")
    (seq,) = conn.execute("SELECT MAX(seq) FROM scalars").fetchone()
    (tag,) = conn.execute("SELECT id FROM tags WHERE tag = 'loss'").fetchone()
    values = np.random.default_rng(0).normal(size=points).cumsum()
    rows = ((seq + i, 1.7e9 + i, tag, i, float(values[i])) for i in range(1, points))
    with conn:
        conn.executemany("INSERT INTO scalars (seq, wall_time, tag_id, step, value) "
                         "VALUES (?, ?, ?, ?, ?)", rows)
    conn.close()
    return path


def build_logdir(logdir: Path, points: int) -> None:
    write_graph_run(logdir, "graph-run", scoped_graph(20, 10))
    damaged = write_graph_run(logdir, "damaged-run", scoped_graph(5, 4, pad=20_000))
    for blob in (damaged / "blobs").iterdir():
        blob.unlink()
    write_long_run(logdir, "long-run", points)


# The server.

@dataclass
class Server:
    tree: Path
    logdir: Path
    port: int = 0
    process: subprocess.Popen | None = None
    peak_rss: int = 0
    _sampling: bool = False
    _sampler: threading.Thread | None = None
    args: tuple[str, ...] = ()      # more `workbench serve` options

    def __enter__(self) -> Server:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(self.tree)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "workbench", "serve", "--logdir", str(self.logdir),
             "--port", str(self.port), *self.args], cwd=self.tree, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while True:
            try:
                if request(self.port, "GET", "/")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"the server in {self.tree} did not start")
            time.sleep(0.2)
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop_sampling()
        self.process.terminate()
        self.process.wait(30)

    def rss(self) -> int:
        return psutil.Process(self.process.pid).memory_info().rss

    def start_sampling(self) -> None:
        self.peak_rss, self._sampling = self.rss(), True

        def sample():
            while self._sampling:
                self.peak_rss = max(self.peak_rss, self.rss())
                time.sleep(0.02)
        self._sampler = threading.Thread(target=sample, daemon=True)
        self._sampler.start()

    def stop_sampling(self) -> int:
        if self._sampler is not None:
            self._sampling = False
            self._sampler.join()
            self._sampler = None
        return self.peak_rss


def request(port: int, method: str, path: str, body: bytes | None = None,
            headers: dict | None = None, timeout: float = 300) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        try:
            conn.request(method, path, body=body, headers={
                "Host": f"127.0.0.1:{port}", "Content-Type": "application/json",
                **(headers or {})})
        except (ConnectionResetError, BrokenPipeError):
            pass                            # answered and closed before the body was read
        response = conn.getresponse()
        return response.status, response.read()
    except (ConnectionResetError, BrokenPipeError, http.client.HTTPException):
        return 0, b""                       # closed without an answer
    finally:
        conn.close()


# Requests.

def _entry(spelled: str) -> dict:
    component, prop = spelled.rsplit(".", 1)
    return {"id": json.loads(component) if component.startswith("{") else component,
            "property": prop}


def server_callbacks(port: int) -> list[dict]:
    _, body = request(port, "GET", "/_dash-dependencies")
    return [c for c in json.loads(body) if not c.get("clientside_function")]


def callback_body(callback: dict, values: list) -> bytes:
    output = callback["output"]
    multi = output.startswith("..")
    outputs = [_entry(o) for o in (output[2:-2].split("...") if multi else [output])]
    inputs = [{**{"id": i["id"], "property": i["property"]}, "value": value}
              for i, value in zip(callback["inputs"], values)]
    return json.dumps({
        "output": output, "outputs": outputs if multi else outputs[0], "inputs": inputs,
        "state": [{"id": s["id"], "property": s["property"], "value": None}
                  for s in callback["state"]],
        "changedPropIds": [f"{inputs[0]['id']}.{inputs[0]['property']}"] if inputs else [],
    }).encode()


def bad_requests(port: int, seed: int = 0) -> list[tuple[str, str, bytes | None, dict]]:
    """(method, path, body, headers) of every bad request tried."""
    tried = []
    callbacks = server_callbacks(port)
    for callback in callbacks:
        for position in range(len(callback["inputs"])):
            for value in HOSTILE:
                values = [None] * len(callback["inputs"])
                values[position] = value
                tried.append(("POST", DISPATCH, callback_body(callback, values), {}))
    rng = random.Random(seed)
    for _ in range(300):                    # valid bodies with one field broken at random
        body = json.loads(callback_body(rng.choice(callbacks), [None] * 8))
        key = rng.choice(sorted(body))
        body[key] = rng.choice([None, 5, "x", [], {}, [5], [{"id": 5}], HUGE])
        tried.append(("POST", DISPATCH, json.dumps(body).encode(), {}))
    for body in (b"{not json", b"[]", b"null", b"{}", b'{"output": 5}', b"\xff\xfe",
                 b"[" * 100_000 + b"]" * 100_000, b'{"output": "x.children"}'):
        tried.append(("POST", DISPATCH, body, {}))
    tried.append(("POST", DISPATCH, b"{}", {"Content-Type": "text/plain"}))
    tried.append(("GET", DISPATCH, None, {}))
    for host in ("evil.example", "", "127.0.0.1:1", "x" * 5000):
        tried.append(("GET", "/", None, {"Host": host}))
    for path in ("/_dash-component-suites/dash/nope.js", "/_dash-component-suites/../../etc",
                 "/graph?run=../../x", "/graph?run=%00", "/scalars?run=" + "y" * 4000,
                 "/placement?run=nope&run=other", "/nope", "/_dash-layout?x=%ff"):
        tried.append(("GET", path, None, {}))
    return tried


def count_server_errors(port: int) -> tuple[int, int, dict[int, int]]:
    statuses: dict[int, int] = {}
    tried = bad_requests(port)
    for method, path, body, headers in tried:
        status = request(port, method, path, body, headers)[0]
        statuses[status] = statuses.get(status, 0) + 1
    return len(tried), sum(n for s, n in statuses.items() if s >= 500), statuses


def dag_callback(port: int) -> dict:
    (callback,) = [c for c in server_callbacks(port) if "graph-dag-graph.figure" in c["output"]]
    return callback


def memory_after_posts(server: Server, oversized: bool) -> dict[str, str]:
    port = server.port
    shown = {"RSS start": f"{server.rss() / 2**20:.0f} MB"}
    if oversized:
        big, statuses = b"x" * (5 << 20), set()
        for _ in range(300):
            statuses.add(request(port, "POST", DISPATCH, big)[0])
        shown["RSS after 300 x 5 MB"] = f"{server.rss() / 2**20:.0f} MB (answers " \
                                        f"{' '.join(map(str, sorted(statuses)))})"
    callback, rng, statuses, size = dag_callback(port), random.Random(1), set(), 0
    for _ in range(300):
        junk = [f"s{rng.getrandbits(64):x}" for _ in range(45_000)]
        body = callback_body(callback, ["graph-run", junk, ""])
        size = max(size, len(body))
        statuses.add(request(port, "POST", DISPATCH, body)[0])
    shown[f"RSS after 300 x {size / 2**20:.2f} MB scopes"] = \
        f"{server.rss() / 2**20:.0f} MB (answers {' '.join(map(str, sorted(statuses)))})"
    return shown


def scalars_body(port: int) -> bytes:
    (callback,) = [c for c in server_callbacks(port) if c["output"] ==
                   "scalars-curves-div.children"]
    return callback_body(callback, [["long-run"], ["loss"], 0.6, 1])


@dataclass
class Latency:
    alone_s: float = 0.0
    alone_peak_mb: float = 0.0
    together_s: list[float] = field(default_factory=list)
    together_peak_mb: float = 0.0
    statuses: set = field(default_factory=set)


def scalars_latency(tree: Path, logdir: Path, concurrent: int) -> Latency:
    result = Latency()
    with Server(tree, logdir) as server:
        body = scalars_body(server.port)
        server.start_sampling()
        start = time.perf_counter()
        result.statuses.add(request(server.port, "POST", DISPATCH, body)[0])
        result.alone_s = time.perf_counter() - start
        result.alone_peak_mb = server.stop_sampling() / 2**20
    with Server(tree, logdir) as server:
        body = scalars_body(server.port)
        times = [0.0] * concurrent

        def one(index):
            begun = time.perf_counter()
            result.statuses.add(request(server.port, "POST", DISPATCH, body)[0])
            times[index] = time.perf_counter() - begun
        threads = [threading.Thread(target=one, args=(i,)) for i in range(concurrent)]
        server.start_sampling()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        result.together_peak_mb = server.stop_sampling() / 2**20
        result.together_s = times
    return result


def measure(tree: Path, logdir: Path, oversized: bool) -> dict[str, str]:
    shown = {}
    with Server(tree, logdir) as server:
        tried, errors, statuses = count_server_errors(server.port)
        shown["bad requests tried / 5xx"] = f"{tried} / {errors}"
        shown["  statuses"] = " ".join(f"{s}:{n}" for s, n in sorted(statuses.items()))
    with Server(tree, logdir) as server:
        shown.update(memory_after_posts(server, oversized))
    latency = scalars_latency(tree, logdir, 20)
    shown["Scalars 1 request alone"] = (f"{latency.alone_s:.2f} s, peak "
                                        f"{latency.alone_peak_mb:.0f} MB")
    shown["Scalars 20 together: slowest"] = (f"{max(latency.together_s):.2f} s, peak "
                                             f"{latency.together_peak_mb:.0f} MB")
    shown["Scalars 20 together: median"] = f"{statistics.median(latency.together_s):.2f} s"
    shown["Scalars statuses"] = " ".join(str(s) for s in sorted(latency.statuses))
    return shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--peer", type=Path, help="another checkout to measure the same way")
    parser.add_argument("--skip-oversized", action="store_true",
                        help="skip the 300 POSTs of 5 MB (1.5 GB over loopback)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        logdir = Path(scratch) / "logs"
        start = time.perf_counter()
        build_logdir(logdir, args.points)
        print(f"log directory with a {args.points:,}-point run built in "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        trees = {"this tree": ROOT} | ({"peer": args.peer.resolve()} if args.peer else {})
        results = {}
        for label, tree in trees.items():
            print(f"measuring {label} ({tree}) ...", flush=True)
            results[label] = measure(tree, logdir, not args.skip_oversized)
    rows = list(next(iter(results.values())))
    width = max(map(len, rows))
    print(f"\n{'':{width}}  " + "  ".join(f"{label:>34}" for label in results))
    for row in rows:
        print(f"{row:{width}}  " + "  ".join(f"{results[label].get(row, ''):>34}"
                                              for label in results))


if __name__ == "__main__":
    main()
