"""Damaged and hostile graph files: several hundred seeded mutations of a saved training graph
(its JSON tree, its text, and its side .npz) either load or raise GraphFileError whose message
names the file, never anything else (no KeyError, AttributeError, TypeError...) and never
unpickle. (tests/engine/test_graph_schema_fuzz.py fuzzes with hypothesis, rule by rule.)"""

from __future__ import annotations

import copy
import io
import json
import pickle

import numpy as np
import pytest

import engine as tf
from engine.graph_schema import GraphFileError

JUNK = [None, 0, -1, 2.5, 10 ** 30, True, "", "x", "^", "a:b", "w:99", [], {}, [1, 2],
        [[1]], {"a": 1}, "NaN", {"dtype": "bogus"}, {"tensor": {}}, {"shape": [-1]},
        {"tensor": {"dtype": "float32", "shape": [2], "values": [1]}},
        {"tensor": {"dtype": "float32", "shape": [3], "array": "t9"}},
        {"tensor": {"dtype": "string", "shape": [1], "values": [{"base64": "!!"}]}},
        {"float": "huge"}, {"variable": {"name": "nope"}}, {"operation": 5}]
CASES = 300


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        with tf.device("/gpu:0"):
            w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        big = tf.constant(np.ones((40, 30), np.float32), name="big")
        loss = tf.reduce_sum(tf.matmul(x, w)) + tf.reduce_sum(big)
        tf.add_to_collection(tf.GraphKeys.LOSSES, loss)
        tf.train.AdamOptimizer(0.1).minimize(loss, global_step=tf.train.get_or_create_global_step())
    folder = tmp_path_factory.mktemp("saved")
    tf.save_graph(g, folder / "g.json")
    return json.loads((folder / "g.json").read_text()), (folder / "g.json.npz").read_bytes()


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _mutate_tree(doc, rng):
    doc = copy.deepcopy(doc)
    paths = [p for p in _paths(doc) if p]
    for _ in range(rng.integers(1, 4)):
        path = paths[rng.integers(len(paths))]
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            action = rng.integers(4)
            if action == 0:
                del parent[path[-1]]
            elif action == 1:
                parent[path[-1]] = copy.deepcopy(JUNK[rng.integers(len(JUNK))])
            elif action == 2:
                parent[path[-1]] = [parent[path[-1]]]
            elif isinstance(parent, list):
                parent.append(copy.deepcopy(parent[path[-1]]))
            else:
                parent[path[-1]] = {"extra": parent[path[-1]]}
        except (KeyError, IndexError, TypeError):
            continue
    return doc


def _mutate_graph(doc, rng):
    """Mutations that keep the JSON well-formed but break the graph: op types, inputs,
    duplicate and dangling names."""
    doc = copy.deepcopy(doc)
    nodes = doc["node"]
    node = nodes[rng.integers(len(nodes))]
    other = nodes[rng.integers(len(nodes))]
    choice = rng.integers(7)
    if choice == 0:
        node["op"] = ["MatMul", "Const", "Assign", "ApplyAdam", "NoSuchOp", "Identity"][
            rng.integers(6)]
    elif choice == 1:
        node["input"] = node["input"] + [f"{other['name']}:{rng.integers(0, 3)}"]
    elif choice == 2:
        other["input"] = other["input"] + [node["name"]]
        node["input"] = node["input"] + [f"^{other['name']}"]
    elif choice == 3:
        nodes.append(copy.deepcopy(node))
    elif choice == 4:
        node["name"] = node["name"].upper() if rng.integers(2) else "bad name!"
    elif choice == 5:
        node["output_dtypes"] = ["int32"] * len(node["output_dtypes"])
    else:
        node["attr"]["_class"] = [f"loc:@{other['name']}_gone"]
    return doc


def _mutate_text(text: str, rng) -> str:
    data = bytearray(text.encode("utf-8"))
    choice = rng.integers(3)
    if choice == 0:
        return data[: rng.integers(len(data))].decode("utf-8", "replace")
    for _ in range(rng.integers(1, 8)):
        data[rng.integers(len(data))] = rng.integers(32, 127)
    if choice == 2:
        data += b"\xff\xfe"
    return bytes(data).decode("utf-8", "replace") if choice == 1 else bytes(data).hex()


def _mutate_side(side: bytes, rng) -> bytes:
    choice = rng.integers(5)
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
        np.savez(buf, t0=np.array([{"boom": 1}], dtype=object))   # would need pickle
    else:
        buf.write(pickle.dumps({"t0": np.ones((40, 30), np.float32)}))
    return buf.getvalue()


def _check(path, outcome) -> None:
    """Anything but GraphFileError propagates and fails the test."""
    try:
        tf.load_graph(path)
    except GraphFileError as e:
        assert str(e).startswith(f"{path}: "), f"{outcome}: unnamed location: {e}"


@pytest.mark.parametrize("kind", ["tree", "graph", "text", "side"])
def test_mutated_files_fail_only_with_a_located_value_error(saved, tmp_path, kind):
    doc, side = saved
    rng = np.random.default_rng(["tree", "graph", "text", "side"].index(kind))
    for case in range(CASES // 4):
        folder = tmp_path / f"{kind}{case}"
        folder.mkdir()
        path = folder / "g.json"
        text = json.dumps(doc)
        side_bytes = side
        if kind == "tree":
            text = json.dumps(_mutate_tree(doc, rng))
        elif kind == "graph":
            text = json.dumps(_mutate_graph(doc, rng))
        elif kind == "text":
            text = _mutate_text(text, rng)
        else:
            side_bytes = _mutate_side(side, rng)
        path.write_text(text)
        (folder / "g.json.npz").write_bytes(side_bytes)
        _check(path, f"{kind} case {case}")


def test_hostile_side_file_names_and_missing_side_file(saved, tmp_path):
    doc, _ = saved
    for name in ("../g.json.npz", "/etc/passwd", "sub/x.npz", ".hidden.npz", "x.txt", 5):
        path = tmp_path / "g.json"
        path.write_text(json.dumps({**doc, "arrays": name}))
        with pytest.raises(GraphFileError, match="field 'arrays': must be the plain name of a "
                                                 ".npz"):
            tf.load_graph(path)
    path.write_text(json.dumps(doc))
    with pytest.raises(GraphFileError, match="g.json: field 'arrays': cannot read its side file "
                                             ".*g.json.npz \\(FileNotFoundError"):
        tf.load_graph(path)


def test_object_arrays_are_refused_without_unpickling(saved, tmp_path):
    doc, _ = saved
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    buf = io.BytesIO()
    np.savez(buf, t0=np.array([{"boom": 1}] * 1200, dtype=object).reshape(40, 30))
    (tmp_path / "g.json.npz").write_bytes(buf.getvalue())
    with pytest.raises(GraphFileError, match=r"g.json: node 5 \('big'\), field 'attr'\['value'\]"
                                             r"\['tensor'\]\['array'\]: side array 't0' in "
                                             "g.json.npz is object"):
        tf.load_graph(path)
