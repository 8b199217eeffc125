"""Hypothesis fuzzing of graph files (fixed seed, bounded examples): structural mutations of valid
documents (the frozen digits MLP with its side .npz, and a small training graph built here) —
fields dropped or replaced by arbitrary JSON, wrong types, huge numbers, deep nesting, duplicate
names and keys, bad inputs, cycles, non-UTF-8 bytes, damaged side files — either load, and the
graph then holds exactly the document's nodes, or raise exactly GraphFileError whose message
starts with the file and says where (node and field, top-level field, or byte)."""

from __future__ import annotations

import copy
import io
import json
import re
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine as tf
from engine.graph_schema import GraphFileError

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
FUZZ = settings(derandomize=True, max_examples=200, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# Where a message may point, after the file: a node's field (or a node that is not an object),
# a top-level field, a byte, a place in the JSON text, a key given twice, a limit on the text.
LOCATED = re.compile(r"node \d+( \(.*?\))?(, fields? '|: a node is an object)|field '|"
                     r"byte \d+: |not valid JSON \(.*(line|digits)|an object holds key |"
                     r"JSON nested too deeply|the file is \d")


def _training_files() -> tuple[dict, bytes]:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        big = tf.constant(np.linspace(0, 1, 1200, dtype=np.float32).reshape(40, 30), name="big")
        parts = tf.split(tf.matmul(x, w), 2, axis=1)
        loss = tf.reduce_sum(tf.add_n(parts)) + tf.reduce_sum(big)
        tf.add_to_collection(tf.GraphKeys.LOSSES, loss)
        tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tempfile.TemporaryDirectory() as tmp:
        tf.save_graph(g, Path(tmp) / "g.json")
        return (json.loads((Path(tmp) / "g.json").read_text()),
                (Path(tmp) / "g.json.npz").read_bytes())


def _sample_files(name: str) -> tuple[dict, bytes]:
    """A sample graph, its side file renamed to be g.json's (the name every case is written
    under)."""
    doc = json.loads((SAMPLES / name).read_text())
    doc["arrays"] = "g.json.npz"
    return doc, (SAMPLES / f"{name}.npz").read_bytes()


BASES = [_sample_files("digits_mlp_frozen.json"), _training_files()]

scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
           | st.sampled_from(["NaN", "Infinity", "^", "x:9", "loc:@gone", "float32", "\ud800"]))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                           max_leaves=12)
encoded_attrs = st.one_of(
    st.builds(lambda d: {"dtype": d}, st.text(max_size=10) | st.sampled_from(["qint8", "int4"])),
    st.builds(lambda s: {"shape": s}, st.lists(st.integers(-3, 1 << 65) | st.none(),
                                               max_size=300)),
    st.builds(lambda d, s, v: {"tensor": {"dtype": d, "shape": s, "values": v}},
              st.sampled_from(["float32", "int8", "bool", "string", "complex64", "uint64"]),
              st.lists(st.integers(0, 1 << 40), max_size=3), st.lists(scalars, max_size=6)),
    st.builds(lambda k: {"float": k}, st.text(max_size=9)))


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list) and len(node) <= 16:
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


@st.composite
def tree_mutations(draw) -> tuple[bytes, bytes]:
    """1-3 values anywhere in the tree dropped, replaced, wrapped, or nested deeply."""
    doc, side = BASES[draw(st.integers(0, len(BASES) - 1))]
    doc = copy.deepcopy(doc)
    deep = None
    for _ in range(draw(st.integers(1, 3))):
        every = [p for p in _paths(doc) if p]
        path = every[draw(st.integers(0, len(every) - 1))]
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["drop", "json", "attr", "wrap", "huge", "deep"]))
        if action == "drop":
            del parent[path[-1]]
        elif action == "json":
            parent[path[-1]] = draw(json_values)
        elif action == "attr":
            parent[path[-1]] = draw(encoded_attrs)
        elif action == "wrap":
            parent[path[-1]] = [parent[path[-1]]]
        elif action == "huge":
            parent[path[-1]] = draw(st.integers(1 << 63, 1 << 70)
                                    | st.integers(max_value=-(1 << 63) - 1))
        else:
            parent[path[-1]] = "@@deep@@"
            deep = draw(st.integers(20, 5000))
    text = json.dumps(doc)
    if deep is not None:
        text = text.replace('"@@deep@@"', "[" * deep + "]" * deep)
    return text.encode(), side


@st.composite
def graph_mutations(draw) -> tuple[bytes, bytes]:
    """Well-formed JSON, broken graphs: duplicate names, bad inputs, cycles, attrs, ops."""
    doc, side = BASES[draw(st.integers(0, len(BASES) - 1))]
    doc = copy.deepcopy(doc)
    nodes = doc["node"]
    node = nodes[draw(st.integers(0, len(nodes) - 1))]
    other = nodes[draw(st.integers(0, len(nodes) - 1))]
    action = draw(st.sampled_from(["duplicate", "case", "input", "control", "cycle", "attr",
                                   "retype", "op", "name", "order", "drop_input"]))
    if action == "duplicate":
        nodes.append(copy.deepcopy(node))
    elif action == "case":
        node["name"] = other["name"].upper()
    elif action == "input":
        node["input"].append(f"{other['name']}:{draw(st.integers(0, 1 << 64))}")
    elif action == "control":
        node["input"].append("^" + draw(st.sampled_from([other["name"], "gone", ""])))
    elif action == "cycle":
        other["input"].append(f"^{node['name']}")
        node["input"].append(f"^{other['name']}")
    elif action == "attr" and node["attr"]:
        del node["attr"][draw(st.sampled_from(sorted(node["attr"])))]
    elif action == "retype" and node["attr"]:
        node["attr"][draw(st.sampled_from(sorted(node["attr"])))] = draw(json_values |
                                                                        encoded_attrs)
    elif action == "op":
        node["op"] = draw(st.sampled_from(["MatMul", "AddN", "ConcatV2", "Split", "Unpack",
                                           "Const", "NoOp", "Frob", "Identity", "Assign"]))
    elif action == "name":
        node["name"] = draw(st.text(max_size=6) | st.sampled_from(["", "_x", "../../x", "a b"]))
    elif action == "order":
        node["input"].insert(0, f"^{other['name']}")
    elif node["input"]:
        node["input"].pop(draw(st.integers(0, len(node["input"]) - 1)))
    return json.dumps(doc).encode(), side


@st.composite
def byte_mutations(draw) -> tuple[bytes, bytes]:
    """Raw bytes: truncated, non-UTF-8, BOM, a key given twice; or a damaged side file."""
    doc, side = BASES[draw(st.integers(0, len(BASES) - 1))]
    data = json.dumps(doc, separators=(",", ":")).encode()
    action = draw(st.sampled_from(["truncate", "bytes", "bom", "twice", "side", "side_dtype"]))
    at = draw(st.integers(0, len(data) - 1))
    if action == "truncate":
        data = data[:at]
    elif action == "bytes":
        data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
    elif action == "bom":
        data = b"\xef\xbb\xbf" + data
    elif action == "twice":
        data = data.replace(b'"op":', b'"op":"NoOp","op":', 1)
    elif action == "side":
        side = side[:draw(st.integers(0, len(side)))] + draw(st.binary(max_size=8))
    else:
        buf = io.BytesIO()
        np.savez(buf, t0=np.zeros(draw(st.integers(0, 2000)), draw(st.sampled_from(
            [np.float64, np.int8, np.float32]))))
        side = buf.getvalue()
    return data, side


def _check(case: tuple[bytes, bytes]) -> None:
    data, side = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g.json"
        path.write_bytes(data)
        (Path(tmp) / "g.json.npz").write_bytes(side)
        try:
            graph = tf.load_graph(path)
        except GraphFileError as e:
            message = str(e)
            assert message.startswith(f"{path}: "), message
            assert LOCATED.match(message, len(str(path)) + 2), message
            return
    doc = json.loads(data.decode("utf-8"))
    nodes = doc.get("node", [])
    assert len(graph.get_operations()) == len(nodes)
    assert {op.name: op.type for op in graph.get_operations()} == {n["name"]: n["op"]
                                                                   for n in nodes}


@FUZZ
@given(tree_mutations())
def test_tree_mutations_load_or_raise_a_located_graph_file_error(case):
    _check(case)


@FUZZ
@given(graph_mutations())
def test_graph_mutations_load_or_raise_a_located_graph_file_error(case):
    _check(case)


@FUZZ
@given(byte_mutations())
def test_byte_mutations_load_or_raise_a_located_graph_file_error(case):
    _check(case)


def test_the_unmutated_bases_load_and_run():
    for doc, side in BASES:
        _check((json.dumps(doc).encode(), side))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g.json"
        path.write_text(json.dumps(BASES[0][0]))
        (Path(tmp) / "g.json.npz").write_bytes(BASES[0][1])
        graph = tf.load_graph(path)
    with tf.Session(graph=graph) as sess:
        probs = sess.run("probabilities:0", {"images:0": np.zeros((2, 8, 8, 1), np.float32)})
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
