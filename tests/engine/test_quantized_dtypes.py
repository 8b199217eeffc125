"""Quantized dtypes as TF represents them: plain integer values (quint8 is uint8 underneath)
carried by constants, feeds, fetches, plumbing ops, variables, checkpoints, graph files and
cross-device transfers; refused by arithmetic at build time. TF 2.21 figures are cited."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import engine as tf
from engine import dtypes
from engine.kernels import registry

PLAIN = {tf.quint8: np.uint8, tf.qint8: np.int8, tf.quint16: np.uint16, tf.qint16: np.int16,
         tf.qint32: np.int32}


def test_quantized_types_name_their_plain_integers():
    # TF 2.21: tf.quint8.as_numpy_dtype is dtype([('quint8', 'u1')]); enums 12, 11, 13, 16, 15.
    assert tf.quint8.as_numpy_dtype == np.dtype([("quint8", "u1")])
    assert tf.qint32.as_numpy_dtype == np.dtype([("qint32", "<i4")])
    assert tf.as_dtype(tf.quint8.as_numpy_dtype) is tf.quint8
    assert [tf.quint8.size, tf.qint32.size] == [1, 4]
    assert tf.quint8.is_quantized and not tf.quint8.is_integer
    for qtype, plain in PLAIN.items():
        assert qtype.numpy_dtype == plain
        assert tf.as_dtype(qtype.name) is qtype and tf.as_dtype(qtype.proto_name) is qtype


def test_torch_and_numpy_integers_map_back_to_plain_types():
    # TF 2.21: tf.as_dtype(np.uint8) is tf.uint8.
    assert tf.as_dtype(torch.uint8) is tf.uint8
    assert tf.as_dtype(torch.int8) is tf.int8
    assert tf.as_dtype(torch.int32) is tf.int32
    assert tf.as_dtype(np.uint8) is tf.uint8
    assert tf.as_dtype(np.int32) is tf.int32
    assert tf.constant(np.array([1], np.uint8)).dtype is tf.uint8


def test_generic_kernels_do_not_claim_quantized_types():
    assert not set(registry.ALL_TYPES) & set(dtypes.QUANTIZED)
    assert set(dtypes.QUANTIZED) <= set(registry.WITH_QUANTIZED)


def test_constant_feed_and_fetch_give_plain_integers():
    # TF 2.21: tf.constant(np.array([1, 200], np.uint8), dtype=tf.quint8) is
    # Tensor("Const:0", shape=(2,), dtype=quint8); sess.run gives array([1, 200], dtype=uint8).
    with tf.Graph().as_default():
        c = tf.constant(np.array([1, 200], np.uint8), dtype=tf.quint8)
        assert c.dtype is tf.quint8 and c.shape.as_list() == [2]
        p = tf.placeholder(tf.quint8, [None])
        with tf.Session() as sess:
            got = sess.run(c)
            fed = sess.run(p, {p: np.array([3, 4], np.uint8)})
            listed = sess.run(p, {p: [5, 6]})
    assert got.dtype == np.uint8 and got.tolist() == [1, 200]
    assert fed.dtype == np.uint8 and fed.tolist() == [3, 4]
    assert listed.dtype == np.uint8 and listed.tolist() == [5, 6]


def test_float_values_are_refused_for_a_quantized_constant():
    # TF 2.21: "Expected quint8, but got 1.5 of type 'float'."
    with tf.Graph().as_default(), pytest.raises(TypeError, match="Expected quint8, got"):
        tf.constant([1.5], dtype=tf.quint8)


@pytest.mark.parametrize("make", [lambda c: tf.add(c, c), lambda c: tf.matmul(c, c),
                                  lambda c: tf.negative(c)])
def test_arithmetic_refuses_quantized_inputs_at_build_time(make):
    # TF 2.21 for tf.add: "Value passed to parameter 'x' has DataType quint8 not in list of
    # allowed values: bfloat16, float16, float32, float64, uint8, ..., complex128".
    with tf.Graph().as_default():
        c = tf.constant(np.array([[1, 2], [3, 4]], np.uint8), dtype=tf.quint8)
        with pytest.raises(TypeError, match=r"of op '\w+' .*DataType quint8 not in list of "
                                            r"allowed values: bfloat16, float16, .*uint8"):
            make(c)


def test_plumbing_ops_carry_quantized_values(runner):
    with runner.scope():
        c = tf.constant(np.array([1, 200], np.uint8), dtype=tf.quint8)
        outs = [tf.identity(c), tf.reshape(c, [2, 1]), tf.concat([c, c], 0)]
    assert [o.dtype for o in outs] == [tf.quint8] * 3
    ident, reshaped, joined = runner.run(outs)
    assert ident.tolist() == [1, 200]
    assert reshaped.tolist() == [[1], [200]]
    assert joined.tolist() == [1, 200, 1, 200]


def test_cast_to_and_from_quantized_converts_the_integers():
    # TF 2.21: tf.cast([1.5, 2.7, -1.0, 300.0], tf.quint8) -> [1, 2, 255, 44] (C conversion
    # through int, wrapping); quint8 [1, 2] -> float32 [1., 2.]; qint8 -> int8 keeps values.
    with tf.Graph().as_default():
        f = tf.cast(tf.constant([1.5, 2.7, -1.0, 300.0]), tf.quint8)
        q = tf.constant(np.array([1, 2], np.uint8), dtype=tf.quint8)
        back = tf.cast(q, tf.float32)
        s8 = tf.cast(tf.constant(np.array([-3, 2], np.int8), dtype=tf.qint8), tf.int8)
        assert (f.dtype, back.dtype, s8.dtype) == (tf.quint8, tf.float32, tf.int8)
        with tf.Session() as sess:
            got = sess.run([f, back, s8])
    assert got[0].tolist() == [1, 2, 255, 44]
    assert got[1].dtype == np.float32 and got[1].tolist() == [1.0, 2.0]
    assert got[2].tolist() == [-3, 2]


def test_variable_and_checkpoint_round_trip_keep_the_quantized_dtype(tmp_path):
    prefix = str(tmp_path / "q")
    with tf.Graph().as_default():
        v = tf.Variable(tf.constant(np.array([5, 250], np.uint8), dtype=tf.quint8), name="w")
        w32 = tf.Variable(tf.constant(np.array([-7, 1 << 30], np.int32), dtype=tf.qint32),
                          name="acc")
        assert v.dtype.base_dtype is tf.quint8
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, prefix)
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            got, acc = sess.run([v, w32])
    assert got.dtype == np.uint8 and got.tolist() == [5, 250]
    assert acc.tolist() == [-7, 1 << 30]
    reader = tf.train.NewCheckpointReader(prefix)
    assert reader.get_variable_to_dtype_map() == {"acc": tf.qint32, "w": tf.quint8}
    assert reader.get_tensor("w").tolist() == [5, 250]


def _quantized_graph() -> tf.Graph:
    graph = tf.Graph()
    with graph.as_default():
        c = tf.constant(np.arange(12, dtype=np.int8).reshape(3, 4), dtype=tf.qint8, name="c")
        tf.reshape(c, [4, 3], name="out")
    return graph


def test_graph_files_keep_quantized_constants(tmp_path):
    path = tmp_path / "q.json"
    tf.save_graph(_quantized_graph(), path)
    loaded = tf.load_graph(path)
    out = loaded.get_tensor_by_name("out:0")
    assert out.dtype is tf.qint8
    assert loaded.get_operation_by_name("c").get_attr("dtype") is tf.qint8
    with tf.Session(graph=loaded) as sess:
        got = sess.run(out)
    assert got.dtype == np.int8 and got.tolist() == np.arange(12).reshape(4, 3).tolist()


def test_import_graph_def_keeps_quantized_constants():
    graph_def = _quantized_graph().as_graph_def()
    with tf.Graph().as_default() as g:
        out, = tf.import_graph_def(graph_def, return_elements=["out:0"], name="imp")
        assert out.dtype is tf.qint8
        with tf.Session(graph=g) as sess:
            assert sess.run(out).tolist() == np.arange(12).reshape(4, 3).tolist()


def test_quantized_values_cross_devices():
    with tf.Graph().as_default() as g:
        with tf.device("/cpu:0"):
            c = tf.constant(np.array([7, 255], np.uint8), dtype=tf.quint8)
        with tf.device("/gpu:0"):
            moved = tf.reshape(c, [2, 1])
        with tf.device("/cpu:0"):
            back = tf.identity(moved)
        with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=1)) as sess:
            got = sess.run(back)
            placement = sess.placement.as_dict()
    assert placement[moved.op.name].endswith("GPU:0")
    assert got.dtype == np.uint8 and got.tolist() == [[7], [255]]


def test_graph_files_carry_quantized_ops(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2, 2], name="x")
        qx = tf.quantize(x, 0.0, 1.0, tf.quint8)
        w = tf.constant(np.array([[1, 2], [3, 4]], np.uint8), dtype=tf.quint8)
        mm = tf.raw_ops.QuantizedMatMul(a=qx.output, b=w, min_a=qx.output_min,
                                        max_a=qx.output_max, min_b=0.0, max_b=1.0)
        tf.dequantize(mm.out, mm.min_out, mm.max_out, mode="MIN_FIRST", name="y")
    path = tmp_path / "mm.json"
    tf.save_graph(graph, path)
    feed = np.array([[0.0, 1.0], [0.5, 0.25]], np.float32)
    results = []
    for g in (graph, tf.load_graph(path)):
        with tf.Session(graph=g) as sess:
            results.append(sess.run("y:0", {"x:0": feed}))
    np.testing.assert_array_equal(results[0], results[1])
