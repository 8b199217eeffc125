"""Hostile graph files: N seeded mutations of the sample graphs and a saved training graph (JSON
tree, graph structure, raw bytes, side .npz, limits; and compact files, version 2 and 3:
damaged archives, zip bombs, path and unnamed members, wrong dtypes, a mutated document inside,
and version 3's arrays.bin spans out of bounds, overlapping, leaving bytes unnamed, of the
wrong length or dtype, truncated or followed by a decompression bomb) each loaded with
engine.load_graph in a worker process under a time limit, counted as loaded / named errors
(GraphFileError naming the file) / unnamed errors / crash-class (any other exception) / hangs;
then the time to report a 2-node cycle behind chains of 1,000 to 64,000 nodes, and loads of
two sample graphs.
A script, not a test:
    python bench/bench_graph_fuzz.py [--files N] [--seed S] [--timeout SECONDS]
        [--peer PATH]          (also run the same cases against another checkout, e.g. main)
        [--engine-root PATH]   (run against that checkout's engine only)"""

from __future__ import annotations

import argparse
import collections
import copy
import gc
import io
import json
import multiprocessing
import pickle
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_graphs"
BASES = ("digits_mlp_frozen.json", "digits_cnn_frozen.json", "mlp_train.json",
         "classic_add.json")
JUNK = [None, 0, -1, 2.5, 10 ** 30, -(10 ** 30), True, "", "x", "^", "a:b", "w:99", "\ud800",
        [], {}, [1, 2], [[1]], {"a": 1}, "NaN", float("nan"), {"dtype": "bogus"},
        {"dtype": "qint8"}, {"tensor": {}}, {"shape": [-2]}, {"shape": [None] * 300},
        {"tensor": {"dtype": "float32", "shape": [2], "values": [1]}},
        {"tensor": {"dtype": "float32", "shape": [1 << 40], "values": None}},
        {"tensor": {"dtype": "int8", "shape": [1], "values": [300]}},
        {"tensor": {"dtype": "float32", "shape": [3], "array": "t9"}},
        {"tensor": {"dtype": "string", "shape": [1], "values": [{"base64": "!!"}]}},
        {"float": "huge"}, {"variable": {"name": "nope"}}, {"operation": 5}]
OPS = ["MatMul", "Const", "Assign", "ApplyAdam", "NoSuchOp", "Identity", "AddN", "ConcatV2",
       "Split", "Unpack", "Placeholder", "NoOp", "Conv2D", "Reshape", "Fill"]


# -- the cases ------------------------------------------------------------------------------

def training_graph_files(folder: Path) -> tuple[bytes, bytes]:
    import engine as tf
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        with tf.device("/gpu:0"):
            w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        big = tf.constant(np.ones((40, 30), np.float32), name="big")
        loss = tf.reduce_sum(tf.matmul(x, w)) + tf.reduce_sum(big)
        tf.add_to_collection(tf.GraphKeys.LOSSES, loss)
        tf.train.AdamOptimizer(0.1).minimize(loss,
                                             global_step=tf.train.get_or_create_global_step())
    tf.save_graph(g, folder / "train.json")
    return (folder / "train.json").read_bytes(), (folder / "train.json.npz").read_bytes()


def load_bases(folder: Path) -> list[tuple[dict, bytes | None]]:
    bases = []
    for name in BASES:
        doc = json.loads((SAMPLES / name).read_text())
        side = SAMPLES / f"{name}.npz"
        if doc.get("arrays"):
            doc["arrays"] = "g.json.npz"       # every case is written as g.json
        bases.append((doc, side.read_bytes() if side.exists() else None))
    text, side = training_graph_files(folder)
    doc = json.loads(text)
    doc["arrays"] = "g.json.npz"
    bases.append((doc, side))
    return bases


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list) and len(node) <= 64:
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


def mutate_tree(doc: dict, rng) -> dict:
    """Drops, replaces, wraps or duplicates 1-3 values anywhere in the JSON tree."""
    doc = copy.deepcopy(doc)
    every = [p for p in paths(doc) if p]
    for _ in range(rng.integers(1, 4)):
        path = every[rng.integers(len(every))]
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            value = parent[path[-1]]
            action = rng.integers(6)
            if action == 0:
                del parent[path[-1]]
            elif action == 1:
                parent[path[-1]] = copy.deepcopy(JUNK[rng.integers(len(JUNK))])
            elif action == 2:
                parent[path[-1]] = [value]
            elif action == 3:
                parent[path[-1]] = {"extra": value}
            elif action == 4 and isinstance(parent, list):
                parent.append(copy.deepcopy(value))
            else:
                parent[path[-1]] = nested(int(rng.integers(20, 3000)))
        except (KeyError, IndexError, TypeError):
            continue
    return doc


def nested(depth: int) -> str:
    """A marker that `dump` replaces with JSON nested `depth` lists deep (json.dumps would
    recurse that deep)."""
    return f"@@deep{depth}@@"


def dump(doc) -> bytes:
    return re.sub(r'"@@deep(\d+)@@"', lambda m: "[" * int(m[1]) + "1" + "]" * int(m[1]),
                  json.dumps(doc)).encode()


def mutate_graph(doc: dict, rng) -> dict:
    """Well-formed JSON, broken graph: op types, inputs, names, attrs, dtypes, cycles."""
    doc = copy.deepcopy(doc)
    nodes = doc["node"]
    node = nodes[rng.integers(len(nodes))]
    other = nodes[rng.integers(len(nodes))]
    choice = rng.integers(14)
    if choice == 0:
        node["op"] = OPS[rng.integers(len(OPS))]
    elif choice == 1:
        node["input"] = node["input"] + [f"{other['name']}:{rng.integers(0, 4)}"]
    elif choice == 2:
        other["input"] = other["input"] + [f"^{node['name']}"]
        node["input"] = node["input"] + [f"^{other['name']}"]
    elif choice == 3:
        nodes.append(copy.deepcopy(node))
    elif choice == 4:
        node["name"] = [node["name"].upper(), "bad name!", "", "_x", "../../x"][rng.integers(5)]
    elif choice == 5:
        node["output_dtypes"] = ["int32"] * len(node.get("output_dtypes", []))
    elif choice == 6:
        node["attr"]["_class"] = [f"loc:@{other['name']}_gone"]
    elif choice == 7 and node["attr"]:
        del node["attr"][sorted(node["attr"])[rng.integers(len(node["attr"]))]]
    elif choice == 8 and node["attr"]:
        key = sorted(node["attr"])[rng.integers(len(node["attr"]))]
        node["attr"][key] = copy.deepcopy(JUNK[rng.integers(len(JUNK))])
    elif choice == 9:
        node["input"] = [f"^{other['name']}"] + node["input"]
    elif choice == 10:
        node["device"] = ["/gpu:zero", "/job:1x", "/device:GPU:" + "9" * 5000, "cpu"][
            rng.integers(4)]
    elif choice == 11:
        node["input"] = node["input"][:-1] if node["input"] else ["nowhere"]
    elif choice == 12:
        node["attr"]["N"] = int(rng.choice([0, 1, 3, 1 << 40]))
    else:
        node["attr"]["num_split"] = int(rng.choice([1, 3, 1 << 20]))
    return doc


def mutate_text(text: str, rng) -> bytes:
    data = bytearray(text.encode("utf-8"))
    choice = rng.integers(6)
    if choice == 0:
        return bytes(data[: rng.integers(len(data))])
    if choice == 1:
        for _ in range(rng.integers(1, 8)):
            data[rng.integers(len(data))] = rng.integers(32, 127)
        return bytes(data)
    if choice == 2:
        at = rng.integers(len(data))
        return bytes(data[:at]) + bytes([0xFF, 0xFE, 0xC3]) + bytes(data[at:])
    if choice == 3:
        return b"\xef\xbb\xbf" + bytes(data)
    if choice == 4:
        return text.replace('"op":', '"op":"NoOp","op":', 1).encode()
    return text.replace('"graph_version": ', '"graph_version": ' + "7" * 6000, 1).encode()


def mutate_side(side: bytes, rng) -> bytes:
    choice = rng.integers(6)
    if choice == 0:
        return side[: rng.integers(len(side))]
    if choice == 1:
        data = bytearray(side)
        for _ in range(rng.integers(1, 20)):
            data[rng.integers(len(data))] = rng.integers(256)
        return bytes(data)
    buf = io.BytesIO()
    if choice == 2:
        np.savez(buf, t0=np.ones((40, 30), np.float64))
    elif choice == 3:
        np.savez(buf, t0=np.array([{"boom": 1}], dtype=object))
    elif choice == 4:
        buf.write(pickle.dumps({"t0": np.ones((40, 30), np.float32)}))
    else:
        np.savez(buf, other=np.ones(3))
    return buf.getvalue()


def zipped(members: dict[str, bytes], method: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buf.getvalue()


def compact_archive(doc: dict, side: bytes | None, members: dict | None = None,
                    method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """The compact graph file of a base: its document (arrays: ".") and the side .npz's
    members as the archive's own; `members` replaces or adds members."""
    doc = dict(doc, arrays="." if side is not None else None)
    out = {"graph.json": dump(doc)}
    if side is not None:
        with zipfile.ZipFile(io.BytesIO(side)) as npz:
            out.update({i.filename: npz.read(i) for i in npz.infolist()})
    out.update(members or {})
    return zipped(out, method)


def npy(value) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(value), allow_pickle=False)
    return buf.getvalue()


def mutate_compact(doc: dict, side: bytes | None, rng) -> bytes:
    """A compact file with damaged bytes, hostile members, or a mutated document inside."""
    choice = rng.integers(10)
    if choice == 0:
        data = compact_archive(doc, side)
        return data[: rng.integers(4, len(data))]
    if choice == 1:
        data = bytearray(compact_archive(doc, side))
        for _ in range(rng.integers(1, 20)):
            data[rng.integers(len(data))] = rng.integers(256)
        return bytes(data)
    if choice == 2:
        name = ["../t0.npy", "/etc/t0.npy", "a/t0.npy", "t0.npy/..", "x.txt", ".."][
            rng.integers(6)]
        return compact_archive(doc, side, {name: npy([1.0])})
    if choice == 3:
        return compact_archive(doc, side, {"t99.npy": npy(np.ones(3))})
    if choice == 4:
        return compact_archive(doc, side, {"t0.npy": npy(np.ones((40, 30), np.float64))})
    if choice == 5:
        # An honest header, then 32 MB of zeros: a member far larger than it declares.
        return compact_archive(doc, side, {"t0.npy": npy(np.ones((40, 30), np.float32)) +
                                           bytes(32 << 20)})
    if choice == 6:
        buf = io.BytesIO()
        buf.write(pickle.dumps({"t0": np.ones((40, 30), np.float32)}))
        return compact_archive(doc, side, {"t0.npy": buf.getvalue()})
    if choice == 7:
        return compact_archive(mutate_tree(doc, rng), side)
    if choice == 8:
        return compact_archive(mutate_graph(doc, rng), side,
                               method=(zipfile.ZIP_STORED, zipfile.ZIP_BZIP2)[rng.integers(2)])
    return compact_archive(doc, side, {"graph.json": mutate_text(json.dumps(doc), rng)})


def tensors(doc: dict) -> list[dict]:
    """Every {"tensor": ...} body of the document's attrs that names an array, in node order."""
    found = []
    for node in doc["node"]:
        for value in node.get("attr", {}).values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict) and isinstance(item.get("tensor"), dict) and \
                        "array" in item["tensor"]:
                    found.append(item["tensor"])
    return found


def blob_parts(doc: dict, side: bytes | None) -> tuple[dict, bytes]:
    """The version 3 document of a base (each side array's key replaced by its span) and its
    arrays.bin."""
    doc = copy.deepcopy(dict(doc, version=3, arrays="." if side is not None else None))
    if side is None:
        return doc, b""
    with zipfile.ZipFile(io.BytesIO(side)) as npz:
        arrays = {i.filename[:-4]: np.lib.format.read_array(npz.open(i), allow_pickle=False)
                  for i in npz.infolist()}
    blob = bytearray()
    for tensor in tensors(doc):
        value = arrays[tensor["array"]]
        data = value.astype(value.dtype.newbyteorder("<")).tobytes()
        tensor["array"] = [len(blob), len(data)]
        blob += data
    return doc, bytes(blob)


def blob_archive(doc: dict, blob: bytes, members: dict | None = None,
                 method: int = zipfile.ZIP_LZMA) -> bytes:
    out = {"graph.json": dump(doc)}
    if blob:
        out["arrays.bin"] = blob
    out.update(members or {})
    return zipped(out, method)


SPAN_JUNK = ["t0", [0], [True, 4], [-1, 4], [0.5, 4], [0, 4, 4], None, {"offset": 0},
             [1 << 62, 4], [0, 1 << 62]]


def mutate_blob(doc: dict, side: bytes | None, rng) -> bytes:
    """A version 3 compact file with hostile spans, a damaged arrays.bin or a mutated
    document."""
    doc, blob = blob_parts(doc, side)
    spans = tensors(doc)
    choice = rng.integers(12)
    if not spans and choice < 8:
        choice = 8 + rng.integers(4)
    tensor = spans[rng.integers(len(spans))] if spans else None
    if choice == 0:
        tensor["array"] = [tensor["array"][0] + int(rng.integers(1, 1 << 20)),
                           tensor["array"][1]]
    elif choice == 1:
        tensor["array"] = [tensor["array"][0], tensor["array"][1] + int(rng.integers(-8, 9))]
    elif choice == 2:
        tensor["array"] = [0, tensor["array"][1]]
        other = spans[rng.integers(len(spans))]
        other["array"] = [max(0, tensor["array"][1] // 2), other["array"][1]]
    elif choice == 3:
        return blob_archive(doc, blob + bytes(int(rng.integers(1, 64))))
    elif choice == 4:
        tensor["array"] = copy.deepcopy(SPAN_JUNK[rng.integers(len(SPAN_JUNK))])
    elif choice == 5:
        tensor["dtype"] = ["string", "bfloat16", "resource", "float64", "int8", "qint8",
                           "bool", "complex128"][rng.integers(8)]
    elif choice == 6:
        return blob_archive(doc, blob[: rng.integers(len(blob))])
    elif choice == 7:
        # A decompression bomb: 32 MB of zeros after the spans (LZMA: about 5 KB).
        return blob_archive(doc, blob + bytes(32 << 20))
    elif choice == 8:
        data = bytearray(blob_archive(doc, blob))
        for _ in range(rng.integers(1, 20)):
            data[rng.integers(len(data))] = rng.integers(256)
        return bytes(data[: rng.integers(4, len(data) + 1)])
    elif choice == 9:
        return blob_archive(mutate_tree(doc, rng), blob)
    elif choice == 10:
        return blob_archive(mutate_graph(doc, rng), blob, method=(
            zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2)[rng.integers(3)])
    else:
        return blob_archive(doc, blob, {"graph.json": mutate_text(json.dumps(doc), rng)})
    return blob_archive(doc, blob)


def make_case(bases, rng) -> tuple[str, bytes, bytes | None]:
    doc, side = bases[rng.integers(len(bases))]
    kind = ["tree", "graph", "text", "side", "compact", "blob"][rng.integers(6)]
    text = json.dumps(doc)
    if kind == "compact":
        return kind, mutate_compact(doc, side, rng), None
    if kind == "blob":
        return kind, mutate_blob(doc, side, rng), None
    if kind == "tree":
        return kind, dump(mutate_tree(doc, rng)), side
    if kind == "graph":
        return kind, json.dumps(mutate_graph(doc, rng)).encode(), side
    if kind == "text":
        return kind, mutate_text(text, rng), side
    if side is None:
        return "graph", json.dumps(mutate_graph(doc, rng)).encode(), side
    return kind, text.encode(), mutate_side(side, rng)


# -- the worker -----------------------------------------------------------------------------

def worker(conn, engine_root: str) -> None:
    sys.path.insert(0, engine_root)
    import engine as tf
    from engine import errors
    try:
        from engine.graph_schema import GraphFileError
    except ImportError:        # a checkout from before the schema: its ValueErrors count
        GraphFileError = ValueError  # noqa: N806
    conn.send("ready")
    while True:
        path = conn.recv()
        if path is None:
            return
        conn.send(classify(tf, errors, GraphFileError, path))


# After the file, a named error says where: a node or field, a byte, a place in the JSON text.
LOCATED = re.compile(r"node |field |byte \d|line \d+ column|digits|twice|nested|the file is|"
                     r"not a regular file|collection|member |compact graph file")


def classify(tf, errors, named_class, path: str) -> tuple[str, str, str]:
    try:
        graph = tf.load_graph(path)
        graph.as_graph_def()
        return "loaded", "", ""
    except Exception as e:  # noqa: BLE001 - the point is to see what escapes
        message = str(e)
        where = message[len(path) + 2:]
        if isinstance(e, named_class) and message.startswith(f"{path}: ") and \
                LOCATED.search(where):
            return "named", type(e).__name__, where[:160]
        if isinstance(e, (ValueError, errors.OpError)):
            return "unnamed", type(e).__name__, message[:160]
        return "crash", type(e).__name__, message[:160]


class Worker:
    def __init__(self, engine_root: str):
        self.engine_root = engine_root
        self.start()

    def start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=worker, args=(child, self.engine_root), daemon=True)
        self.process.start()
        self.conn.recv()

    def load(self, path: str, timeout: float):
        self.conn.send(path)
        if self.conn.poll(timeout):
            try:
                return self.conn.recv()
            except EOFError:
                self.start()
                return "crash", "worker died", ""
        self.process.kill()
        self.process.join()
        self.start()
        return "hang", "", ""

    def close(self) -> None:
        self.conn.send(None)
        self.process.join(5)


def fuzz(args) -> None:
    rng = np.random.default_rng(args.seed)
    counts: collections.Counter = collections.Counter()
    kinds: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    examples: dict[tuple[str, str], str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bases = load_bases(folder)
        runner = Worker(args.engine_root)
        start = time.perf_counter()
        for case in range(args.files):
            family, text, side = make_case(bases, rng)
            path = folder / f"case{case}" / "g.json"
            path.parent.mkdir()
            path.write_bytes(text)
            if side is not None:
                (path.parent / "g.json.npz").write_bytes(side)
            outcome, error, message = runner.load(str(path), args.timeout)
            counts[outcome] += 1
            kinds[outcome][f"{family}: {error}"] += 1
            examples.setdefault((outcome, error), message)
            for f in path.parent.iterdir():
                f.unlink()
            path.parent.rmdir()
        elapsed = time.perf_counter() - start
        runner.close()
    print(f"engine: {args.engine_root}  seed {args.seed}  per-file limit {args.timeout:g} s")
    print(f"tried {args.files}  loaded fine {counts['loaded']}  named errors {counts['named']}  "
          f"unnamed errors {counts['unnamed']}  crash-class {counts['crash']}  "
          f"hangs {counts['hang']}  ({elapsed:.1f} s)")
    for outcome in ("crash", "unnamed", "hang"):
        for key, n in kinds[outcome].most_common(8):
            error = key.split(": ", 1)[1]
            print(f"  {outcome:8s} {n:5d}  {key}  e.g. {examples.get((outcome, error), '')[:90]}")
    named = collections.Counter()
    for key, n in kinds["named"].items():
        named[key.split(": ", 1)[1]] += n
    print("  named errors by class: " + ", ".join(f"{e} {n}" for e, n in named.most_common()))


# -- cycles and load time -------------------------------------------------------------------

def cycle_document(chain: int) -> str:
    """A 2-node cycle (a <-> b) with a chain of `chain` NoOps behind it."""
    nodes = [{"name": "a", "op": "NoOp", "input": ["^b"]},
             {"name": "b", "op": "NoOp", "input": ["^a"]}]
    previous = "b"
    for i in range(chain):
        nodes.append({"name": f"c{i}", "op": "NoOp", "input": [f"^{previous}"]})
        previous = f"c{i}"
    return json.dumps({"format": "engine.graphdef", "version": 2, "node": nodes})


def time_cycles(repeats: int = 3) -> None:
    """Best of `repeats` (after a warm-up) from the document's text to the error."""
    import engine as tf
    from engine import errors
    from engine.graph_def import graph_def_from_json, import_graph_def

    def report(text: str) -> str:
        try:
            import_graph_def(graph_def_from_json(text, "cycle.json"), graph=tf.Graph())
        except (errors.OpError, ValueError) as e:
            return str(e)
        return "no error"
    report(cycle_document(10))
    seconds = {}
    for chain in (1000, 1600, 8000, 64000):
        text = cycle_document(chain)
        times = []
        for _ in range(repeats):
            gc.collect()     # each timing starts from the same heap, not the last one's garbage
            start = time.perf_counter()
            message = report(text)
            times.append(time.perf_counter() - start)
        seconds[chain] = min(times)
        print(f"cycle behind a chain of {chain:,} nodes: reported in {seconds[chain]:.3f} s "
              f"({seconds[chain] / chain * 1e6:.1f} us a node): {message[:100]}")
    print(f"  8,000 / 1,000 time ratio {seconds[8000] / seconds[1000]:.1f} (linear: 8); "
          f"64,000 / 1,000 {seconds[64000] / seconds[1000]:.0f} (linear: 64, quadratic: 4096)")


def time_load(repeats: int = 50) -> None:
    import engine as tf
    for name in ("digits_cnn_frozen.json", "mlp_train.json"):
        path = SAMPLES / name
        tf.load_graph(path)
        best = {}
        for fn in (tf.load_graph, tf.load_graph_def):
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                fn(path)
                times.append(time.perf_counter() - start)
            best[fn.__name__] = min(times) * 1e3
        print(f"{name}: load_graph {best['load_graph']:.2f} ms, load_graph_def "
              f"{best['load_graph_def']:.2f} ms (best of {repeats})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--engine-root", default=str(ROOT))
    parser.add_argument("--peer", help="a checkout whose engine is run first, as the peer")
    parser.add_argument("--skip-fuzz", action="store_true")
    args = parser.parse_args()
    if args.peer:
        rest = [a for a in sys.argv[1:] if a not in ("--peer", args.peer)]
        print(f"== peer: {args.peer}", flush=True)
        subprocess.run([sys.executable, __file__, *rest, "--engine-root", args.peer], check=True)
        print(f"== this checkout: {args.engine_root}", flush=True)
    sys.path.insert(0, args.engine_root)
    if not args.skip_fuzz:
        fuzz(args)
    time_cycles()
    time_load()


if __name__ == "__main__":
    main()
