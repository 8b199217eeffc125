"""Version 3 compact graph files: the document plus one "arrays.bin" member holding every array
back to back (LZMA), each tensor naming its [offset, byte length] span. Every sample graph reads
back as the same GraphDef; hostile spans (out of bounds, overlapping, unnamed bytes, wrong
length for the shape, dtypes that are not raw numbers), truncated or damaged members and
decompression bombs raise GraphFileError naming the file, node and field, and the reader never
reads the member past what the document's spans ask for."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from graphz_v2 import assert_same_graph_def, members_of

import engine as tf
from engine import graph_io, graph_json, graph_schema
from engine.graph_schema import GraphFileError

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
SAMPLE_FILES = sorted(p.name for p in SAMPLES.glob("*.json"))


def _graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3), name="w")
        big = tf.constant(np.linspace(0, 1, 3000, dtype=np.float32).reshape(30, 100),
                          name="big")
        ints = tf.constant(np.arange(-20, 20, dtype=np.int64), name="ints")
        total = tf.reduce_sum(big) + tf.cast(tf.reduce_sum(ints), tf.float32)
        tf.identity(tf.matmul(x, w) + total, name="y")
    return g


def _write(path: Path, members: dict, method=zipfile.ZIP_LZMA) -> None:
    with zipfile.ZipFile(path, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data if isinstance(data, bytes) else json.dumps(data).encode())


def _node(doc: dict, name: str) -> dict:
    return next(n for n in doc["node"] if n["name"] == name)


def _span(doc: dict, name: str) -> list:
    return _node(doc, name)["attr"]["value"]["tensor"]["array"]


def _error(path) -> str:
    with pytest.raises(GraphFileError) as e:
        tf.load_graph_def(path)
    message = str(e.value)
    assert message.startswith(f"{path}: ")
    return message


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "g.graphz"
    tf.save_graph(_graph(), path)
    members = members_of(path)
    return path, json.loads(members["graph.json"]), members["arrays.bin"]


# -- the layout -----------------------------------------------------------------------------

def test_one_lzma_blob_of_little_endian_arrays_named_by_spans(saved):
    path, doc, blob = saved
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
    assert [i.filename for i in infos] == ["graph.json", "arrays.bin"]
    assert all(i.compress_type == zipfile.ZIP_LZMA for i in infos)
    assert doc["version"] == graph_json.COMPACT_VERSION and doc["arrays"] == "."
    big = np.linspace(0, 1, 3000, dtype=np.float32).reshape(30, 100)
    ints = np.arange(-20, 20, dtype=np.int64)
    assert _span(doc, "big") == [0, big.nbytes]
    assert _span(doc, "ints") == [big.nbytes, ints.nbytes]
    assert blob == big.astype("<f4").tobytes() + ints.astype("<i8").tobytes()
    # 12 values stay inline; the variable's initial value is the only other tensor.
    assert "values" in _node(doc, "w/initial_value")["attr"]["value"]["tensor"]


def test_the_document_leaves_out_empty_defaulted_fields_only(saved, tmp_path):
    _, doc, _ = saved
    placeholder = _node(doc, "x")
    assert "input" not in placeholder and "device" not in placeholder
    assert not any("stack" in n for n in doc["node"])
    assert all(n.get(k) for n in doc["node"] for k in ("input", "device", "attr", "stack",
                                                        "output_dtypes", "output_shapes")
               if k in n)
    # The JSON form is unchanged: version 2, every field on every node.
    tf.save_graph(_graph(), tmp_path / "g.json")
    plain = json.loads((tmp_path / "g.json").read_text())
    assert plain["version"] == 2 and all(set(n) == set(graph_json.NODE_FIELDS)
                                         for n in plain["node"])


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_every_sample_graph_reads_back_as_the_same_graph_def(name, tmp_path):
    original = tf.load_graph_def(SAMPLES / name)
    for stacks in (True, False):
        path = tmp_path / f"{name}.{stacks}.graphz"
        tf.save_graph(original, path, stacks=stacks)
        want = original if stacks else graph_io.without_stacks(original)
        assert_same_graph_def(tf.load_graph_def(path), graph_io.without_stacks(want)
                              if not stacks else want)
        tf.save_graph(original, tmp_path / "again.graphz", stacks=stacks)
        assert (tmp_path / "again.graphz").read_bytes() == path.read_bytes()


def test_a_training_graph_keeps_its_collections_and_trains(tmp_path):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        w = tf.Variable(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8), name="w")
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))
        tf.train.AdamOptimizer(0.1).minimize(loss,
                                             global_step=tf.train.get_or_create_global_step())
    tf.save_graph(g, tmp_path / "t.graphz")
    back = tf.load_graph(tmp_path / "t.graphz")
    for key in ("variables", "trainable_variables", "train_op", "global_step"):
        assert [v.name for v in back.get_collection(key)] == \
            [v.name for v in g.get_collection(key)]
    assert_same_graph_def(tf.load_graph_def(tmp_path / "t.graphz"),
                          graph_io.without_stacks(g.as_graph_def()))
    (weights,) = back.get_collection("trainable_variables")
    with tf.Session(graph=back) as s:
        s.run([v.initializer for v in back.get_collection("variables")])
        s.run(back.get_collection("train_op"), {"x:0": np.ones((2, 8), np.float32)})
        after = s.run(weights)
    assert not np.array_equal(after, np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8))


def test_a_graph_without_large_constants_has_no_blob(tmp_path):
    tf.save_graph(tf.load_graph_def(SAMPLES / "classic_add.json"), tmp_path / "a.graphz")
    members = members_of(tmp_path / "a.graphz")
    assert list(members) == ["graph.json"] and json.loads(members["graph.json"])["arrays"] is None
    assert [n.name for n in tf.load_graph_def(tmp_path / "a.graphz").node] == ["a", "b", "add"]


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_calibrated_eightbit_files_are_at_most_0_27_of_the_float_file(model):
    """Issue 9's goal, both graphs in the compact form (what bench_quantize_costs measures)."""
    from engine.compression.calibration import calibrate
    from engine.compression.evaluate import file_bytes
    from engine.compression.job import load_dataset
    from engine.passes.quantize_graph import quantize_graph
    float_graph = tf.load_graph_def(SAMPLES / f"digits_{model}_frozen.json")
    images = load_dataset("digits").train_images[:10]
    ranges = calibrate(float_graph, {"images": images})
    quantized = quantize_graph(float_graph, "eightbit", calibration=ranges,
                               output_names=["probabilities"]).graph_def
    sizes = [file_bytes(g, strip_stacks=True, compact=True) for g in (float_graph, quantized)]
    assert sizes[1] <= 0.27 * sizes[0]


# -- hostile spans ---------------------------------------------------------------------------

@pytest.mark.parametrize("span, said", [
    ([0, 11996], "takes 12,000"), ([400, 12000], "past the end"),
    ([1 << 40, 12000], "past the end"), ("t0", "[offset, byte length]"),
    ([0], "[offset, byte length]"), ([True, 12000], "[offset, byte length]"),
    ([-1, 12000], "[offset, byte length]"), ([0.0, 12000], "[offset, byte length]"),
    ([0, 12000, 1], "[offset, byte length]")])
def test_a_bad_span_names_the_node_and_field(saved, span, said):
    path, doc, blob = saved
    _node(doc, "big")["attr"]["value"]["tensor"]["array"] = span
    _write(path, {"graph.json": doc, "arrays.bin": blob})
    message = _error(path)
    assert "node" in message and "('big')" in message and "['array']" in message
    assert said in message


def test_dtype_or_shape_that_does_not_match_the_span_length(saved):
    path, doc, blob = saved
    for field, value in (("dtype", "float64"), ("shape", [30, 101]), ("dtype", "int8")):
        edited = json.loads(json.dumps(doc))
        tensor = _node(edited, "big")["attr"]["value"]["tensor"]
        tensor[field] = value
        _node(edited, "big")["attr"]["dtype"] = {"dtype": tensor["dtype"]}
        _write(path, {"graph.json": edited, "arrays.bin": blob})
        message = _error(path)
        assert "('big')" in message and "['array']" in message and "12,000 bytes" in message


def test_only_raw_numeric_dtypes_come_from_the_blob(saved):
    path, doc, blob = saved
    for dtype, said in (("string", "always inline"), ("bfloat16", "no numpy form"),
                        ("resource", "no numpy form")):
        edited = json.loads(json.dumps(doc))
        _node(edited, "big")["attr"]["value"]["tensor"]["dtype"] = dtype
        _write(path, {"graph.json": edited, "arrays.bin": blob})
        message = _error(path)
        assert "('big')" in message and said in message
    reader = graph_io.BlobArrays.__new__(graph_io.BlobArrays)
    with pytest.raises(GraphFileError, match="cannot be read from raw bytes"):
        reader([0, 16], np.dtype(object), [2], "g.graphz: node 0 ('c'), field 'x'")


def test_overlapping_spans_name_both_nodes(saved):
    path, doc, blob = saved
    _node(doc, "ints")["attr"]["value"]["tensor"]["array"] = [0, 320]
    _write(path, {"graph.json": doc, "arrays.bin": blob[:12000]})
    message = _error(path)
    assert "overlaps bytes 0-320" in message and "('big')" in message and "('ints')" in message


def test_bytes_no_span_names_are_refused(saved):
    path, doc, blob = saved
    _write(path, {"graph.json": doc, "arrays.bin": blob + bytes(8)})
    message = _error(path)
    assert "field 'arrays'" in message and "bytes 12,320 to 12,328" in message
    assert "not named" in message
    # A gap between the spans: ints moved 8 bytes on, the blob 8 bytes longer.
    _node(doc, "ints")["attr"]["value"]["tensor"]["array"] = [12008, 320]
    _write(path, {"graph.json": doc, "arrays.bin": blob[:12000] + bytes(8) + blob[12000:]})
    assert "bytes 12,000 to 12,008" in _error(path)


def test_members_that_do_not_belong_to_the_version(saved):
    path, doc, blob = saved
    _write(path, {"graph.json": doc, "arrays.bin": blob, "t0.npy": b"x"})
    assert "'t0.npy'" in _error(path) and "not named" in _error(path)
    _write(path, {"graph.json": doc})
    message = _error(path)
    assert "('big')" in message and "does not hold" in message and "arrays.bin" in message
    old = dict(doc, version=2)
    _write(path, {"graph.json": old, "arrays.bin": blob})
    assert "('big')" in _error(path)
    _write(path, {"graph.json": dict(doc, arrays=None), "arrays.bin": blob})
    assert "refers to a side array" in _error(path)


def test_a_truncated_or_damaged_blob_names_the_node(saved):
    path, doc, blob = saved
    _write(path, {"graph.json": doc, "arrays.bin": blob[:12100]})
    message = _error(path)
    assert "('ints')" in message and "past the end of member 'arrays.bin'" in message
    # Bytes flipped inside the compressed member: an LZMA or CRC error at the node reading it.
    _write(path, {"graph.json": doc, "arrays.bin": blob})
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("arrays.bin")
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + 9
    for i in range(start + 20, start + info.compress_size - 8, 7):
        data[i] ^= 0x55
    path.write_bytes(bytes(data))
    message = _error(path)
    assert "arrays.bin" in message and "node" in message


def test_a_member_shorter_than_its_header_says(saved, monkeypatch):
    """A stream that ends early (header size larger than the data) is named, not a crash."""
    path, doc, blob = saved
    _write(path, {"graph.json": doc, "arrays.bin": blob})

    class Short:
        def __init__(self, data: bytes):
            self.data = data

        def read(self, n: int) -> bytes:
            out, self.data = self.data[:n], self.data[n:]
            return out

    monkeypatch.setattr(graph_io.CompactFile, "blob_stream", lambda self: Short(blob[:5000]))
    message = _error(path)
    assert "('big')" in message and "ends at byte 5,000" in message and "truncated" in message


def test_a_decompression_bomb_is_refused_without_reading_past_the_spans(saved, monkeypatch):
    path, doc, blob = saved
    _write(path, {"graph.json": doc, "arrays.bin": blob + bytes(16 << 20)})
    assert path.stat().st_size < 100_000
    read = []
    opened = graph_io.CompactFile.blob_stream

    def counted(self):
        stream = opened(self)
        real = stream.read

        def read_some(n: int = -1) -> bytes:
            assert 0 < n <= graph_io._READ_STEP
            data = real(n)
            read.append(len(data))
            return data
        stream.read = read_some
        return stream
    monkeypatch.setattr(graph_io.CompactFile, "blob_stream", counted)
    message = _error(path)
    assert "not named by any tensor" in message and "12,320" in message
    assert sum(read) == len(blob)
    # The document member is read in bounded steps too, and no further than MAX_FILE_BYTES.
    _write(path, {"graph.json": json.dumps(doc).encode() + b" " * (4 << 20),
                  "arrays.bin": blob})
    monkeypatch.setattr(graph_schema, "MAX_FILE_BYTES", 1 << 20)
    message = _error(path)
    assert "member 'graph.json'" in message and "MAX_FILE_BYTES" in message


def test_stepped_reads_ask_the_member_for_at_most_one_step():
    class Member:
        asked: list = []

        def read(self, n):
            self.asked.append(n)
            return b"x" * n

        def close(self):
            pass
    member = Member()
    assert len(graph_io._Stepped(member).read(10_000)) == 10_000
    assert max(member.asked) == graph_io._READ_STEP
    with pytest.raises(ValueError):
        graph_io._Stepped(member).read()


def test_fuzzed_version_3_files_load_or_raise_a_named_graph_file_error(saved):
    path, doc, blob = saved
    data = path.read_bytes()
    rng = np.random.default_rng(1)
    named = 0
    for _ in range(150):
        damaged = bytearray(data)
        for _ in range(rng.integers(1, 12)):
            damaged[rng.integers(len(damaged))] = rng.integers(256)
        path.write_bytes(bytes(damaged[: rng.integers(4, len(damaged) + 1)]))
        try:
            tf.load_graph(path)
        except GraphFileError as e:
            assert str(e).startswith(f"{path}: ")
            named += 1
    assert named > 100


def test_large_members_are_deflated_and_either_method_reads(tmp_path, monkeypatch):
    """Above COMPACT_LZMA_MAX_BYTES a member is deflated (LZMA writes about 15x slower)."""
    monkeypatch.setattr(graph_io, "COMPACT_LZMA_MAX_BYTES", 5000)
    path = tmp_path / "g.graphz"
    tf.save_graph(_graph(), path)
    with zipfile.ZipFile(path) as z:
        methods = {i.filename: i.compress_type for i in z.infolist()}
    assert methods == {"graph.json": zipfile.ZIP_LZMA, "arrays.bin": zipfile.ZIP_DEFLATED}
    np.testing.assert_array_equal(tf.load_graph_def(path).by_name("ints").attr["value"],
                                  np.arange(-20, 20))
    # COMPACT_METHOD is read at each save: deflate throughout opens in Info-ZIP unzip too.
    monkeypatch.setattr(graph_io, "COMPACT_METHOD", zipfile.ZIP_DEFLATED)
    tf.save_graph(_graph(), path)
    with zipfile.ZipFile(path) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED}
    assert tf.load_graph_def(path).by_name("big").attr["value"].shape == (30, 100)
