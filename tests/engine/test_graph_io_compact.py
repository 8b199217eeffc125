"""The compact graph file (save_graph(..., compact=True) or a .graphz path), read by content
whatever its name, round-tripping a training graph; and the version 2 compact file (a deflated
zip of the document and .npy members, tests/engine/graphz_v2.py), still read: hostile archives
(truncated, zip bombs, path members, extra members, wrong dtype or shape) raise GraphFileError
naming the file, node and field. Version 3's own member: test_graph_io_blob.py."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from graphz_v2 import assert_same_graph_def, members_of, save_v2

import engine as tf
from engine import graph_io, graph_schema
from engine.graph_schema import GraphFileError

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
MLP = SAMPLES / "digits_mlp_frozen.json"


def _graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3), name="w")
        big = tf.constant(np.linspace(0, 1, 3000, dtype=np.float32).reshape(30, 100),
                          name="big")
        tf.constant(np.int8(3), name="scalar")
        tf.identity(tf.matmul(x, w) + tf.reduce_sum(big), name="y")
    return g


def _write(path: Path, members: dict[str, bytes], method=zipfile.ZIP_DEFLATED) -> None:
    with zipfile.ZipFile(path, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)


def _npy(value) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(value), allow_pickle=False)
    return buffer.getvalue()


def test_graphz_path_is_one_compact_file_that_round_trips_and_trains(tmp_path):
    g = _graph()
    path = tmp_path / "g.graphz"
    tf.save_graph(g, path)
    assert path.read_bytes()[:4] == b"PK\x03\x04" and list(tmp_path.iterdir()) == [path]
    members = members_of(path)
    doc = json.loads(members["graph.json"])
    assert doc["arrays"] == "." and set(members) == {"graph.json", "arrays.bin"}
    assert doc["version"] == 3 and len(members["arrays.bin"]) == 3000 * 4
    # Stacks are left out by default in the compact form; stacks=True keeps them.
    assert not any(n.get("stack") for n in doc["node"])
    loaded = tf.load_graph(path)
    want = {n.name: n for n in g.as_graph_def().node}
    for n in loaded.as_graph_def().node:
        assert n.op == want[n.name].op and list(n.input) == list(want[n.name].input)
    big = loaded.get_operation_by_name("big").get_attr("value")
    np.testing.assert_array_equal(big, np.linspace(0, 1, 3000, dtype=np.float32).reshape(30, 100))
    assert loaded.get_operation_by_name("scalar").get_attr("value").shape == ()
    assert len(loaded.get_collection("variables")) == 1
    with tf.Session(graph=loaded) as s:
        s.run(loaded.get_collection("variables")[0].initializer)
        out = s.run("y:0", {"x:0": np.ones((1, 4), np.float32)})
    np.testing.assert_allclose(out, np.ones((1, 4)) @ np.arange(12).reshape(4, 3) + 1500,
                               rtol=1e-5)


def test_compact_is_chosen_by_option_and_read_by_content(tmp_path):
    path, g = tmp_path / "g.json", _graph()
    (tmp_path / "g.json.npz").write_bytes(b"stale")
    tf.save_graph(g, path, compact=True, stacks=True)
    assert not (tmp_path / "g.json.npz").exists()
    doc = json.loads(members_of(path)["graph.json"])
    assert any(n.get("stack") for n in doc["node"])
    assert graph_io.file_format(path) == "compact"
    assert graph_io.graph_file_bytes(path) == path.stat().st_size
    tf.save_graph(_graph(), tmp_path / "plain.graphz", compact=False)
    assert graph_io.file_format(tmp_path / "plain.graphz") == "json"
    assert tf.load_graph_def(tmp_path / "plain.graphz").by_name("big").op == "Const"
    first = path.read_bytes()
    tf.save_graph(g, path, compact=True, stacks=True)
    assert path.read_bytes() == first


def test_a_version_2_compact_file_loads_the_same_trainable_graph(tmp_path):
    g = _graph()
    save_v2(g, tmp_path / "old.graphz")
    assert set(members_of(tmp_path / "old.graphz")) == {"graph.json", "t0.npy"}
    tf.save_graph(g, tmp_path / "new.graphz")
    old, new = (tf.load_graph(tmp_path / n) for n in ("old.graphz", "new.graphz"))
    assert_same_graph_def(old.as_graph_def(), new.as_graph_def())
    assert len(old.get_collection("variables")) == 1


def test_compact_digits_file_is_smaller_and_loads_the_same_graph(tmp_path):
    graph_def = tf.load_graph_def(MLP)
    tf.save_graph(graph_def, tmp_path / "m.graphz")
    shipped = MLP.stat().st_size + (SAMPLES / (MLP.name + ".npz")).stat().st_size
    assert (tmp_path / "m.graphz").stat().st_size < 0.7 * shipped
    back = tf.load_graph_def(tmp_path / "m.graphz")
    for a, b in zip(graph_def.node, back.node):
        assert (a.name, a.op) == (b.name, b.op)
        if a.op == "Const":
            np.testing.assert_array_equal(a.attr["value"], b.attr["value"])


@pytest.fixture
def saved(tmp_path):
    """A version 2 compact file and its members."""
    path = tmp_path / "g.graphz"
    save_v2(_graph(), path)
    return path, members_of(path)


def _error(path) -> str:
    with pytest.raises(GraphFileError) as e:
        tf.load_graph_def(path)
    return str(e.value)


def test_truncated_archives_name_the_file(saved):
    path, _ = saved
    data = path.read_bytes()
    for cut in (len(data) // 3, len(data) - 10, 5):
        path.write_bytes(data[:cut])
        assert str(path) in _error(path)


@pytest.mark.parametrize("name", ["../t0.npy", "/abs.npy", "sub/t0.npy", "a..npy", "x.txt"])
def test_members_with_paths_or_odd_names_are_refused(saved, name):
    path, members = saved
    _write(path, {**members, name: b"x"})
    message = _error(path)
    assert str(path) in message and repr(name) in message


def test_a_member_the_document_does_not_name_is_refused(saved):
    path, members = saved
    _write(path, {**members, "t9.npy": _npy([1, 2])})
    message = _error(path)
    assert "field 'arrays'" in message and "'t9.npy'" in message and "not named" in message


def test_wrong_dtype_or_shape_names_node_and_field(saved):
    path, members = saved
    doc = json.loads(members["graph.json"])
    node = next(n for n in doc["node"] if n["name"] == "big")
    key = node["attr"]["value"]["tensor"]["array"] + ".npy"
    for bad, said in ((np.zeros((30, 100), np.float64), "float64"),
                      (np.zeros((100, 30), np.float32), "[100, 30]")):
        _write(path, {**members, key: _npy(bad)})
        message = _error(path)
        assert "'big'" in message and "['array']" in message and said in message


def test_zip_bombs_are_refused_before_reading_past_the_cap(saved, monkeypatch):
    path, members = saved
    doc = json.loads(members["graph.json"])
    node = next(n for n in doc["node"] if n["name"] == "big")
    key = node["attr"]["value"]["tensor"]["array"] + ".npy"
    # An honest header followed by 50 MB of zeros (deflates to about 50 KB).
    bomb = _npy(np.zeros((30, 100), np.float32)) + bytes(50 << 20)
    _write(path, {**members, key: bomb})
    message = _error(path)
    assert "'big'" in message and "MAX_NPY_HEADER_BYTES" in message
    _write(path, {"graph.json": members["graph.json"] + b" " * (2 << 20)})
    monkeypatch.setattr(graph_schema, "MAX_FILE_BYTES", 1 << 20)
    assert "member 'graph.json'" in _error(path) and "MAX_FILE_BYTES" in _error(path)
    # The whole archive: members' sizes together past the cap, refused before any is read.
    _write(path, members)
    monkeypatch.setattr(graph_schema, "MAX_FILE_BYTES", 5000)
    monkeypatch.setattr(graph_schema, "MAX_SIDE_FILE_BYTES", 1000)
    assert "MAX_FILE_BYTES + MAX_SIDE_FILE_BYTES" in _error(path)


def test_missing_document_stored_side_file_names_and_methods(saved, tmp_path):
    path, members = saved
    _write(path, {k: v for k, v in members.items() if k != "graph.json"})
    assert "'graph.json'" in _error(path)
    doc = json.loads(members["graph.json"])
    doc["arrays"] = "g.json.npz"
    _write(path, {**members, "graph.json": json.dumps(doc).encode()})
    assert "keeps its arrays inside it" in _error(path)
    _write(path, members, method=zipfile.ZIP_STORED)
    assert tf.load_graph_def(path).by_name("big").op == "Const"
    _write(path, members, method=zipfile.ZIP_LZMA)
    assert tf.load_graph_def(path).by_name("big").op == "Const"
    _write(path, members, method=zipfile.ZIP_BZIP2)
    assert "compression method" in _error(path)
    plain = tmp_path / "plain.json"
    plain.write_bytes(json.dumps(doc | {"arrays": "."}).encode())
    assert "plain JSON file" in _error(plain)


def test_fuzzed_compact_files_load_or_raise_a_named_graph_file_error(saved):
    """Byte flips and cuts anywhere in the archive, and members swapped for other members."""
    path, members = saved
    data = path.read_bytes()
    rng = np.random.default_rng(0)
    swaps = [_npy(np.ones(3)), b"\x93NUMPY", members["graph.json"][:50], b"",
             _npy(np.ones((30, 100), np.int64))]
    outcomes = {"loaded": 0, "named": 0}
    for case in range(200):
        if case % 3 == 2:
            key = sorted(members)[rng.integers(len(members))]
            _write(path, {**members, key: swaps[rng.integers(len(swaps))]})
        else:
            damaged = bytearray(data)
            for _ in range(rng.integers(1, 12)):
                damaged[rng.integers(len(damaged))] = rng.integers(256)
            path.write_bytes(bytes(damaged[: rng.integers(4, len(damaged) + 1)]))
        try:
            tf.load_graph(path)
            outcomes["loaded"] += 1
        except GraphFileError as e:
            assert str(e).startswith(f"{path}: ")
            outcomes["named"] += 1
    assert outcomes["named"] > 150
