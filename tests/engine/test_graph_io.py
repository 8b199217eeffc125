"""Graph files and GraphDefs: save_graph / load_graph round-trip a training graph exactly
(names, types, inputs, control inputs, devices, attrs with colocation, dtypes, shapes, creation
stacks, collections) and the loaded graph trains to the same numbers; large constants live in
the side .npz; version 1 files still load; import_graph_def (input_map, return_elements, name
scopes); convert_variables_to_constants freezes a trained graph that then runs by tensor names
in a fresh graph and session."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine import errors, graph_json
from engine.graph_def import GraphDef, graph_def_from_json, graph_def_to_json
from engine.graph_schema import GraphFileError

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
CONFIG = {"config": tf.ConfigProto(virtual_gpus=1)}


def _training_graph():
    """A small classifier with an optimizer, a GPU-pinned variable, colocation, a control
    dependency, a set_shape, a large constant, non-finite and complex constants."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        x.set_shape([8, 4])
        labels = tf.placeholder(tf.float32, [8, 3], name="labels")
        with tf.device("/gpu:0"):
            w = tf.Variable(np.random.RandomState(0).uniform(-1, 1, (4, 3)).astype(np.float32),
                            name="w")
        b = tf.Variable(np.zeros(3, np.float32), name="b")
        with tf.name_scope("model"):
            logits = tf.identity(tf.matmul(x, w) + b, name="logits")
        big = tf.constant(np.linspace(0, 1, 3000, dtype=np.float32).reshape(30, 100),
                          name="big")
        odd = tf.constant(np.array([np.nan, np.inf, -np.inf, 1.5], np.float32), name="odd")
        tf.constant(np.array([1 + 2j, -3j], np.complex64), name="cplx")
        loss = tf.reduce_mean(tf.square(logits - labels), name="loss") + \
            0.0 * tf.reduce_sum(big)
        tf.add_to_collection(tf.GraphKeys.LOSSES, loss)
        step = tf.train.get_or_create_global_step()
        train = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=step, name="train")
        with tf.control_dependencies([train]):
            tf.no_op(name="after_train")
        tf.global_variables_initializer()
        tf.add_to_collection("weird", odd)
    return g


def _feeds(graph):
    rng = np.random.RandomState(1)
    return {graph.get_tensor_by_name("x:0"): rng.uniform(-1, 1, (8, 4)).astype(np.float32),
            graph.get_tensor_by_name("labels:0"): rng.uniform(0, 1, (8, 3)).astype(np.float32)}


def _train(graph, steps=5):
    with tf.Session(graph=graph, **CONFIG) as sess:
        sess.run(graph.get_operation_by_name("init"))
        feeds = _feeds(graph)
        for _ in range(steps):
            sess.run(graph.get_collection(tf.GraphKeys.TRAIN_OP)[0], feeds)
        return sess.run(["w:0", "b:0", "loss:0", "global_step:0"], feeds), sess.placement


def _nodes(graph):
    return [graph_json.encode_node(n) for n in graph.as_graph_def().node]


def test_save_and_load_round_trip_every_node_exactly(tmp_path):
    g = _training_graph()
    path = tmp_path / "model.json"
    tf.save_graph(g, path)
    loaded = tf.load_graph(path)
    assert _nodes(loaded) == _nodes(g)
    doc = json.loads(path.read_text())
    assert doc["version"] == 2 and doc["arrays"] == "model.json.npz"
    big = next(n for n in doc["node"] if n["name"] == "big")
    assert big["attr"]["value"]["tensor"] == {"dtype": "float32", "shape": [30, 100],
                                              "array": "t0"}
    assert (tmp_path / "model.json.npz").exists()
    read = loaded.get_operation_by_name("w/read")
    assert read.get_attr("_class") == ["loc:@w"] and read.device == "/device:GPU:0"
    assert loaded.get_tensor_by_name("x:0").shape.as_list() == [8, 4]
    assert loaded.get_operation_by_name("after_train").control_inputs[0].name == "train"
    assert loaded.get_operation_by_name("w").traceback == g.get_operation_by_name("w").traceback
    assert "test_graph_io.py" in loaded.get_operation_by_name("w").traceback[-1]
    odd = loaded.get_operation_by_name("odd").get_attr("value")
    np.testing.assert_array_equal(odd, [np.nan, np.inf, -np.inf, 1.5])
    np.testing.assert_array_equal(loaded.get_operation_by_name("cplx").get_attr("value"),
                                  [1 + 2j, -3j])


def test_loaded_graph_keeps_collections_and_trains_to_the_same_numbers(tmp_path):
    g = _training_graph()
    tf.save_graph(g, tmp_path / "model.json")
    loaded = tf.load_graph(tmp_path / "model.json")
    for key in ("variables", "trainable_variables", "train_op", "losses", "global_step",
                "weird"):
        want = [getattr(i, "name", i) for i in g.get_collection(key)]
        assert [getattr(i, "name", i) for i in loaded.get_collection(key)] == want, key
    trainable = loaded.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)
    assert all(v in loaded.get_collection(tf.GraphKeys.GLOBAL_VARIABLES) for v in trainable)
    assert tf.train.get_global_step(loaded).name == "global_step:0"
    with loaded.as_default():
        assert [v.name for v in tf.trainable_variables()] == ["w:0", "b:0"]
    want, _ = _train(g)
    got, placement = _train(loaded)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert placement.device_of("w/Adam").endswith("GPU:0")
    assert placement.device_of("train/update_w/ApplyAdam").endswith("GPU:0")


def test_a_loaded_graph_can_grow_and_train_further(tmp_path):
    g = _training_graph()
    tf.save_graph(g, tmp_path / "model.json")
    loaded = tf.load_graph(tmp_path / "model.json")
    with loaded.as_default():
        w = loaded.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)[0]
        doubled = tf.multiply(w, 2.0, name="doubled")
        assert tf.no_op(name="after_train").name == "after_train_1"
    with tf.Session(graph=loaded, **CONFIG) as sess:
        sess.run("init")
        np.testing.assert_allclose(sess.run(doubled), 2 * sess.run(w))


def test_side_file_only_when_needed_and_stale_one_removed(tmp_path):
    path = tmp_path / "small.json"
    (tmp_path / "small.json.npz").write_bytes(b"stale")
    g = tf.Graph()
    with g.as_default():
        tf.constant([1.0, 2.0], name="c")
    tf.save_graph(g, path)
    assert not (tmp_path / "small.json.npz").exists()
    assert json.loads(path.read_text())["arrays"] is None
    assert [op.name for op in tf.load_graph(path).get_operations()] == ["c"]


def test_version_one_files_still_load(tmp_path):
    g = tf.load_graph(SAMPLES / "classic_add.json")
    with tf.Session(graph=g) as sess:
        assert sess.run("add:0").tolist() == [2.0, 4.0, 6.0]
    doc = json.loads((SAMPLES / "classic_add.json").read_text())
    assert doc["version"] == 1


def test_string_form_elides_only_very_large_constants():
    g = tf.Graph()
    with g.as_default():
        tf.constant(np.zeros(3000, np.float32), name="mid")
        tf.constant(np.zeros(70000, np.float32), name="huge")
    doc = json.loads(graph_def_to_json(g.as_graph_def()))
    mid, huge = (n["attr"]["value"]["tensor"] for n in doc["node"])
    assert len(mid["values"]) == 3000 and huge["values"] is None
    with pytest.raises(GraphFileError, match=r"g.json: node 1 \('huge'\), field 'attr'\['value'\]"
                                             r"\['tensor'\]\['values'\]: null: the tensor was "
                                             "too large to inline \\(save graphs with "
                                             "engine.save_graph"):
        graph_def_from_json(json.dumps(doc), "g.json")
    doc["node"].pop()
    parsed = graph_def_from_json(json.dumps(doc), "g.json")
    np.testing.assert_array_equal(parsed.by_name("mid").attr["value"], np.zeros(3000))


# ---- import_graph_def ----

def _inference_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), name="w")
        y = tf.identity(tf.matmul(x, w), name="output")
        with tf.control_dependencies([y]):
            tf.no_op(name="done")
    return g


def test_import_under_a_unique_scope_with_remapped_colocation():
    gd = _inference_graph().as_graph_def()
    with tf.Graph().as_default() as g:
        assert tf.import_graph_def(gd) is None
        out, done, w = tf.import_graph_def(gd, return_elements=["output:0", "done", "w"])
        assert (out.name, done.name, w.name) == ("import_1/output:0", "import_1/done",
                                                 "import_1/w")
        assert g.get_operation_by_name("import_1/w/read").get_attr("_class") == \
            ["loc:@import_1/w"]
        with tf.name_scope("outer"):
            assert tf.import_graph_def(gd, return_elements=["output:0"])[0].name == \
                "outer/import/output:0"
        tf.import_graph_def(gd, name="")
        tf.import_graph_def(gd, name="")
        # Names already taken are made unique, as TF does (`w_1`, `w/read_1`).
        assert g.get_operation_by_name("w/read_1").get_attr("_class") == ["loc:@w_1"]


def test_import_with_input_map_replaces_the_placeholder():
    gd = _inference_graph().as_graph_def()
    with tf.Graph().as_default() as g:
        z = tf.constant([[1.0, 1.0]], name="z")
        out, = tf.import_graph_def(gd, input_map={"x": z}, return_elements=["output:0"])
        assert out.shape.as_list() == [1, 2]
        with tf.Session(graph=g) as sess:
            sess.run("import/w/Assign")
            np.testing.assert_array_equal(sess.run(out), [[4.0, 6.0]])


def test_import_errors_use_tensorflow_wording():
    gd = _inference_graph().as_graph_def()
    with tf.Graph().as_default():
        z = tf.constant([[1.0, 1.0]], name="z")
        with pytest.raises(ValueError, match="Attempted to map inputs that were not found in "
                                             "graph_def: \\[nope:0\\]"):
            tf.import_graph_def(gd, input_map={"nope:0": z})
        with pytest.raises(ValueError, match="Requested return tensor 'nope:0' not found in "
                                             "graph def"):
            tf.import_graph_def(gd, return_elements=["nope:0"])
        with pytest.raises(ValueError, match="Invalid return output 5 of node 'output', "
                                             "which has 1 output\\(s\\)"):
            tf.import_graph_def(gd, return_elements=["output:5"])
        with pytest.raises(ValueError, match="Input 0 of node MatMul was passed int32 from "
                                             "Const:0 incompatible with expected float32."):
            tf.import_graph_def(gd, input_map={"x:0": tf.constant([[1, 2]])})
        with pytest.raises(TypeError, match="input_map must be a dictionary"):
            tf.import_graph_def(gd, input_map=[z])
        with pytest.raises(TypeError, match="graph_def must be a GraphDef proto."):
            tf.import_graph_def("not a graph")


def test_tensor_and_operation_lookup_by_name():
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(_inference_graph().as_graph_def())
    assert g.get_tensor_by_name("import/output:0").op.type == "Identity"
    assert g.get_operation_by_name("import/done").type == "NoOp"
    with pytest.raises(KeyError, match="exists but only has 1 outputs"):
        g.get_tensor_by_name("import/output:3")
    with pytest.raises(KeyError, match="refers to an Operation not in the graph"):
        g.get_operation_by_name("nope")


# ---- freezing ----

def _trained_session():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable(np.array([[1.0], [1.0]], np.float32), name="w")
        b = tf.Variable(np.float32(0.0), name="b")
        tf.Variable(np.float32(7.0), name="unused")
        out = tf.add(tf.matmul(x, w), b, name="output")
        loss = tf.reduce_mean(tf.square(out - 3.0))
        train = tf.train.MomentumOptimizer(0.1, 0.5).minimize(loss)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g)
    sess.run(init)
    for _ in range(5):
        sess.run(train, {x: [[1.0, 2.0], [0.5, -1.0]]})
    return sess


def test_frozen_graph_runs_by_tensor_names_in_a_fresh_graph(tmp_path):
    sess = _trained_session()
    probe = np.array([[2.0, -1.0]], np.float32)
    want = sess.run("output:0", {"x:0": probe})
    frozen = tf.graph_util.convert_variables_to_constants(sess, sess.graph.as_graph_def(),
                                                          ["output"])
    sess.close()
    assert isinstance(frozen, GraphDef)
    assert [(n.name, n.op) for n in frozen.node] == [
        ("x", "Placeholder"), ("w", "Const"), ("w/read", "Identity"), ("b", "Const"),
        ("b/read", "Identity"), ("MatMul", "MatMul"), ("output", "Add")]
    tf.save_graph(frozen, tmp_path / "frozen.json")
    for graph_def in (frozen, tf.load_graph_def(tmp_path / "frozen.json")):
        with tf.Graph().as_default() as g:
            tf.import_graph_def(graph_def)
            with tf.Session(graph=g) as fresh:
                got = fresh.run("import/output:0", {"import/x:0": probe})
        np.testing.assert_array_equal(got, want)
    with tf.Session(graph=tf.load_graph(tmp_path / "frozen.json")) as fresh:
        np.testing.assert_array_equal(fresh.run("output:0", {"x:0": probe}), want)


def test_freezing_whitelist_blacklist_and_unknown_outputs():
    sess = _trained_session()
    gd = sess.graph.as_graph_def()
    ops = lambda g: {n.name: n.op for n in g.node}  # noqa: E731
    only_w = tf.graph_util.convert_variables_to_constants(sess, gd, ["output"],
                                                          variable_names_whitelist=["w"])
    assert (ops(only_w)["w"], ops(only_w)["b"]) == ("Const", "VariableV2")
    not_w = tf.graph_util.convert_variables_to_constants(sess, gd, ["output"],
                                                         variable_names_blacklist=["w"])
    assert (ops(not_w)["w"], ops(not_w)["b"]) == ("VariableV2", "Const")
    assert "unused" not in ops(not_w)
    with pytest.raises(ValueError, match="nope is not in graph"):
        tf.graph_util.convert_variables_to_constants(sess, gd, ["nope"])
    # The graph's own GraphDef is untouched.
    assert {n.name: n.op for n in sess.graph.as_graph_def().node}["w"] == "VariableV2"
    sess.close()


def test_extract_sub_graph_follows_control_inputs():
    gd = _inference_graph().as_graph_def()
    sub = tf.graph_util.extract_sub_graph(gd, ["done"])
    assert [n.name for n in sub.node] == ["x", "w", "w/read", "MatMul", "output", "done"]
    with pytest.raises(TypeError, match="dest_nodes must be a list."):
        tf.graph_util.extract_sub_graph(gd, "done")


def test_missing_graph_file_is_not_found(tmp_path):
    with pytest.raises(errors.NotFoundError, match="nope.json: no such graph file"):
        tf.load_graph(tmp_path / "nope.json")


@pytest.mark.parametrize("value", [
    True, 3, -2.5, "text", None, float("nan"), float("-inf"), [1, 2], ["loc:@a", "loc:@b"],
    tf.float16, tf.int64, tf.TensorShape(None), tf.TensorShape([2, None]),
    [tf.float32, tf.int32], [tf.TensorShape([1]), tf.TensorShape(None)],
    np.array([[1, 2], [3, 4]], np.int64), np.array([2 ** 62, -(2 ** 62)], np.int64),
    np.array([0.1, 65504.0], np.float16), np.array([True, False]), np.array([], np.float32),
    np.array(3.5, np.float64), np.array([1 + 2j, np.nan - 1j], np.complex128),
    np.array([b"hi", b"\xff\x00", "caf\u00e9".encode()], dtype=object),
    np.arange(5000, dtype=np.int32).reshape(50, 100),
])
def test_every_attr_kind_round_trips_through_the_schema(value):
    arrays = graph_json.ArrayStore()
    encoded = json.loads(json.dumps(graph_json.encode_attr(value, arrays, "n"),
                                    allow_nan=False))
    side = lambda key, dtype, shape, where: arrays.arrays[key]  # noqa: E731
    decoded = graph_json.decode_attr(encoded, "n", side)
    if isinstance(value, np.ndarray):
        assert decoded.dtype == value.dtype and decoded.shape == value.shape
        np.testing.assert_array_equal(decoded, value)
    elif isinstance(value, float) and np.isnan(value):
        assert np.isnan(decoded)
    else:
        assert decoded == value and type(decoded) is type(value)


def test_a_restored_variable_has_every_field_a_built_one_has(tmp_path):
    g = tf.Graph()
    with g.as_default():
        built = tf.Variable(np.ones(2, np.float32), name="v")
    tf.save_graph(g, tmp_path / "v.json")
    restored = tf.load_graph(tmp_path / "v.json").get_collection(tf.GraphKeys.GLOBAL_VARIABLES)[0]
    assert set(vars(built)) <= set(vars(restored))
    assert (restored.name, restored.initializer.name, restored.value().name,
            restored.initial_value.name, restored.trainable) == \
        ("v:0", "v/Assign", "v/read:0", "v/initial_value:0", True)


def test_saved_files_get_the_permissions_of_any_new_file(tmp_path):
    with tf.Graph().as_default() as g:
        tf.constant(np.arange(5000, dtype=np.float32), name="big")
    tf.save_graph(g, str(tmp_path / "g.json"))
    plain = tmp_path / "plain"
    plain.write_text("x")
    for name in ("g.json", "g.json.npz"):
        assert (tmp_path / name).stat().st_mode == plain.stat().st_mode
