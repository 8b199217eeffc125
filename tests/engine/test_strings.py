"""String tensors: tf.string, constants from str/bytes fetched as bytes (object arrays for
arrays, as TF returns them), string feeds, Identity, JSON graph round trip, and placement
rule 2.12 (string ops run on the CPU)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine.graph_def import graph_def_from_json, graph_def_to_json

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def test_string_dtype_names_and_conversions():
    assert tf.string.name == "string" and str(tf.string) == "<dtype: 'string'>"
    assert tf.as_dtype("string") is tf.string and tf.as_dtype("DT_STRING") is tf.string
    assert tf.as_dtype(np.object_) is tf.string
    assert tf.as_dtype(np.bytes_) is tf.string and tf.as_dtype(np.str_) is tf.string
    assert tf.string.as_numpy_dtype is np.object_ and tf.string.size == 0
    assert not tf.string.is_floating and not tf.string.is_differentiable


def test_constant_from_str_is_fetched_as_bytes(graph):
    hello = tf.constant("Hello")
    assert hello.dtype is tf.string and hello.shape.as_list() == []
    with tf.Session() as sess:
        value = sess.run(hello)
    assert value == b"Hello" and isinstance(value, bytes)


def test_string_arrays_are_object_arrays_of_bytes(graph):
    words = tf.constant([["a", b"bc"], ["\u00fc", "d"]])
    filled = tf.constant("x", shape=[3])
    with tf.Session() as sess:
        got, got_filled = sess.run([words, filled])
    assert got.dtype == object and got.shape == (2, 2)
    assert got.tolist() == [[b"a", b"bc"], ["\u00fc".encode(), b"d"]]
    assert got_filled.tolist() == [b"x", b"x", b"x"]
    assert tf.constant(np.array(["p", "qq"])).dtype is tf.string


def test_string_placeholder_fed_with_str_and_bytes_through_identity(graph):
    p = tf.placeholder(tf.string, shape=[None])
    out = tf.identity(p)
    with tf.Session() as sess:
        got = sess.run(out, {p: ["x", b"y"]})
        scalar = tf.placeholder("string")
        assert sess.run(tf.identity(scalar), {scalar: "\u00fc"}) == "\u00fc".encode()
    assert got.dtype == object and got.tolist() == [b"x", b"y"]


def test_fetch_results_do_not_alias_the_constant(graph):
    words = tf.constant(["a", "b"])
    with tf.Session() as sess:
        first = sess.run(words)
        first[0] = b"changed"
        assert sess.run(words).tolist() == [b"a", b"b"]


def test_non_strings_are_refused_with_tf_wording(graph):
    with pytest.raises(TypeError, match="Expected string, but got 1 of type 'int'."):
        tf.constant(1, dtype=tf.string)
    with pytest.raises(TypeError, match="Expected string, but got 1 of type 'int'."):
        tf.constant(["a", 1])
    p = tf.placeholder(tf.string)
    with tf.Session() as sess, pytest.raises(TypeError, match="Placeholder:0' of dtype string"):
        sess.run(p, {p: 3})
    q = tf.placeholder(tf.string, shape=[2])
    with tf.Session() as sess, pytest.raises(ValueError, match="Cannot feed value of shape"):
        sess.run(q, {q: ["a"]})


def test_string_ops_are_placed_on_the_cpu(graph):
    """Rule 2.12: strings live in host memory, so even with GPUs present string ops run on
    the CPU; the float op next to them still takes the GPU."""
    s = tf.identity(tf.constant("Hello"), name="s")
    f = tf.add(tf.constant(1.0), 2.0, name="f")
    with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
        assert sess.run([s, f]) == [b"Hello", 3.0]
        placed = sess.placement.as_dict()
    assert placed["s"] == CPU0 and placed["Const"] == CPU0
    assert placed["f"].endswith("GPU:0")


def test_string_op_explicitly_on_gpu_needs_soft_placement(graph):
    with tf.device("/gpu:0"):
        s = tf.identity(tf.constant("Hello"), name="s")
    with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Cannot assign a device for operation s: Could not satisfy "
                                 "explicit device specification '/device:GPU:0' because no "
                                 "supported kernel for GPU devices is available"):
            sess.run(s)
    soft = tf.ConfigProto(virtual_gpus=1, allow_soft_placement=True)
    with tf.Session(config=soft) as sess:
        assert sess.run(s) == b"Hello"
        assert sess.placement.as_dict()["s"] == CPU0


def test_string_constants_round_trip_through_json(graph):
    tf.constant(["plain", "\u00fc"], name="text")
    tf.constant(b"\xff\x00raw", name="raw")
    restored = graph_def_from_json(graph_def_to_json(graph.as_graph_def()))
    assert restored.by_name("text").attr["value"].tolist() == [b"plain", "\u00fc".encode()]
    assert restored.by_name("raw").attr["value"][()] == b"\xff\x00raw"
    assert restored.by_name("raw").attr["dtype"] is tf.string


def test_recorded_session_records_a_graph_with_string_constants(graph, tmp_path):
    s = tf.identity(tf.constant("Hello"), name="s")
    with tf.Session(logdir=str(tmp_path), run_name="strings") as sess:
        assert sess.run(s) == b"Hello"
    from engine.record import RunReader
    recorded = {n.name: n for n in RunReader(tmp_path / "strings").graph().nodes}
    assert recorded["Const"].attrs["value"]["tensor"]["values"] == ["Hello"]
    assert recorded["s"].outputs[0].dtype == "string"
