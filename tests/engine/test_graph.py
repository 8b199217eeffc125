"""Graph construction: TF naming, scopes, device merging, control deps, colocation, creation
sites, build-time errors, and the GraphDef JSON round trip."""

import json

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.graph_def import graph_def_from_json, graph_def_to_json, import_graph_def


@pytest.fixture
def g():
    graph = tf.Graph()
    with graph.as_default():
        yield graph


def test_unique_names_follow_tf(g):
    a = tf.constant(1.0, name="a")
    a1 = tf.constant(2.0, name="a")
    a2 = tf.constant(3.0, name="a")
    assert [a.op.name, a1.op.name, a2.op.name] == ["a", "a_1", "a_2"]
    assert a.name == "a:0"
    s = a + a1
    s2 = tf.add(a, a1)
    assert s.op.name == "add" and s.op.type == "Add"
    # Names are unique case-insensitively, so "Add" after "add" becomes Add_1.
    assert s2.op.name == "Add_1"


def test_operator_names_and_helper_constants(g):
    x = tf.placeholder(tf.float32, [3], name="x")
    y = x * 2.0
    assert y.op.name == "mul" and y.op.inputs[1].op.name == "mul/y"
    z = 1.0 - x
    assert z.op.type == "Sub" and z.op.inputs[0].op.name == "sub/x"


def test_name_scopes_nest_and_uniquify(g):
    with tf.name_scope("layer"):
        a = tf.constant(1.0, name="w")
        with tf.name_scope("inner"):
            b = tf.constant(1.0, name="w")
    with tf.name_scope("layer"):
        c = tf.constant(1.0, name="w")
    with tf.name_scope("layer/"):
        d = tf.constant(1.0, name="x")
    assert [a.op.name, b.op.name, c.op.name, d.op.name] == [
        "layer/w", "layer/inner/w", "layer_1/w", "layer/x"]


def test_invalid_scope_name(g):
    with pytest.raises(ValueError, match="not a valid scope name"):
        with tf.name_scope("bad name!"):
            pass


def test_device_scopes_merge_inner_wins(g):
    # TF_BEHAVIOUR 1.7's chain.
    with tf.device("/device:GPU:0"):
        a = tf.constant(1.0)
        with tf.device("/job:worker"):
            b = tf.constant(1.0)
            with tf.device("/device:CPU:0"):
                c = tf.constant(1.0)
                with tf.device("/job:ps"):
                    d = tf.constant(1.0)
    assert a.device == "/device:GPU:0"
    assert b.device == "/job:worker/device:GPU:0"
    assert c.device == "/job:worker/device:CPU:0"
    assert d.device == "/job:ps/device:CPU:0"


def test_device_none_and_function_scopes(g):
    with tf.device("/gpu:1"):
        with tf.device(None):
            a = tf.constant(1.0)
        with tf.device(lambda op: "/cpu:0" if op.type == "Const" else "/gpu:0"):
            b = tf.constant(1.0)
            c = tf.identity(b)
    assert a.device == ""
    assert b.device == "/device:CPU:0" and c.device == "/device:GPU:0"


def test_legacy_device_names_are_normalised(g):
    with tf.device("/gpu:1"):
        a = tf.constant(1.0)
    assert a.device == "/device:GPU:1"


def test_control_dependencies(g):
    a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    with tf.control_dependencies([a]):
        c = tf.identity(b, name="c")
        d = tf.identity(a, name="d")   # a is already a data input: no duplicate control edge
        with tf.control_dependencies(None):
            e = tf.identity(b, name="e")
    assert c.op.control_inputs == [a.op]
    assert d.op.control_inputs == []
    assert e.op.control_inputs == []


def test_colocate_with_copies_device_and_class(g):
    with tf.device("/gpu:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/cpu:0"):
        with tf.colocate_with(v.op):
            r = tf.identity(v, name="r")
    assert r.op.attrs["_class"] == ["loc:@v"]
    assert r.device == "/device:GPU:0"   # the device stack is cleared inside colocate_with
    assert v.value().op.attrs["_class"] == ["loc:@v"]


def test_variable_structure_matches_tf(g):
    v = tf.Variable([1.0, 2.0], name="v")
    names = sorted(op.name for op in g.get_operations())
    assert names == ["v", "v/Assign", "v/initial_value", "v/read"]
    assert v.op.type == "VariableV2" and v.dtype.name == "float32_ref"
    assert v.name == "v:0" and v.shape.as_list() == [2]
    assert v in tf.global_variables() and v in tf.trainable_variables()


def test_ops_remember_their_creation_site(g):
    a = tf.constant(1.0)
    site = a.op.traceback[-1]
    assert "test_graph.py" in site and "test_ops_remember_their_creation_site" in site


@pytest.mark.parametrize("build, match", [
    (lambda: tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5])),
     r"Dimensions must be equal, but are 3 and 4 for 'MatMul' \(op: 'MatMul'\) with input "
     r"shapes: \[2,3\], \[4,5\]"),
    (lambda: tf.add(tf.zeros([2]), tf.zeros([3])),
     r"Dimensions must be equal, but are 2 and 3 for 'Add'"),
    (lambda: tf.reshape(tf.zeros([2, 3]), [4]), r"Cannot reshape a tensor with 6 elements"),
    (lambda: tf.matmul(tf.zeros([2]), tf.zeros([2, 2])), r"Shape must be rank 2 but is rank 1"),
])
def test_build_time_shape_errors_are_value_errors(g, build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_dtype_mismatch_is_type_error(g):
    with pytest.raises(TypeError, match="does not match type float32"):
        tf.add(tf.constant(1.0), tf.constant(1))


def test_static_shapes_inferred(g):
    x = tf.placeholder(tf.float32, [None, 4])
    w = tf.zeros([4, 3])
    y = tf.nn.softmax(tf.matmul(x, w) + tf.zeros([3]))
    assert y.shape.as_list() == [None, 3]
    assert tf.reduce_sum(y, 1).shape.as_list() == [None]
    assert tf.reduce_mean(y, keepdims=True).shape.as_list() == [1, 1]
    assert tf.reshape(x, [-1, 2]).shape.as_list() == [None, 2]


def test_malformed_device_name_raises(g):
    with pytest.raises(ValueError, match="gpu:x"):
        with tf.device("/gpu:x"):
            pass


def test_graph_element_from_other_graph():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.constant(1.0)
    with pytest.raises(ValueError, match="is not an element of this graph"):
        g2.as_graph_element(a)


def test_json_round_trip_preserves_structure_and_values(g):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    with tf.device("/cpu:0"):
        y = tf.matmul(x, tf.constant(np.eye(2, dtype=np.float32), name="w"), name="y")
    with tf.control_dependencies([y]):
        tf.no_op(name="done")
    text = graph_def_to_json(g.as_graph_def())
    doc = json.loads(text)
    assert doc["format"] == "engine.graphdef" and doc["version"] == 2
    parsed = graph_def_from_json(text)
    assert [n.name for n in parsed.node] == [n.name for n in g.as_graph_def().node]
    g2 = tf.Graph()
    with g2.as_default():
        import_graph_def(parsed, name="copy")
        y2 = g2.get_tensor_by_name("copy/y:0")
        assert y2.op.device == "/device:CPU:0"
        assert g2.get_operation_by_name("copy/done").control_inputs[0].name == "copy/y"
        with tf.Session(graph=g2) as s:
            out = s.run(y2, {"copy/x:0": [[1.0, 2.0]]})
    np.testing.assert_allclose(out, [[1.0, 2.0]])


def _doc(nodes):
    return json.dumps({"format": "engine.graphdef", "version": 1, "node": nodes})


def test_import_rejects_cycles_naming_the_nodes():
    text = _doc([{"name": "a", "op": "Identity", "input": ["b"], "attr": {}},
                 {"name": "b", "op": "Identity", "input": ["a"], "attr": {}},
                 {"name": "c", "op": "Identity", "input": ["b"], "attr": {}}])
    with pytest.raises(errors.InvalidArgumentError, match="cycle through nodes: a, b\\."):
        import_graph_def(graph_def_from_json(text, "loop.json"), graph=tf.Graph())


def test_import_rejects_unknown_ops_naming_the_node():
    text = _doc([{"name": "weird", "op": "FrobnicateV9", "input": [], "attr": {}}])
    with pytest.raises(errors.NotFoundError, match="node 0 \\('weird'\\), field 'op': Op type "
                                                   "not registered 'FrobnicateV9'"):
        import_graph_def(graph_def_from_json(text), graph=tf.Graph())


def test_json_errors_name_file_and_field():
    with pytest.raises(ValueError, match="g.json: not valid JSON"):
        graph_def_from_json("{", "g.json")
    with pytest.raises(ValueError, match="g.json: node 0, field 'name': missing"):
        graph_def_from_json(_doc([{"op": "Const"}]), "g.json")
    with pytest.raises(ValueError, match="field 'version'"):
        graph_def_from_json(json.dumps({"format": "engine.graphdef", "version": 99}), "g.json")


def test_graph_text_form(g):
    a = tf.constant(1.0, name="a")
    with tf.device("/cpu:0"):
        tf.identity(a, name="b")
    assert g.as_graph_def().to_text() == (
        "a = Const()\nb = Identity(a) @ /device:CPU:0\n")


def test_cycles_are_named_without_the_nodes_downstream_of_them():
    """Two cycles (a<->b and a self loop) behind and beside a 5,000-node chain: the error names
    exactly the cycles' members (Tarjan's SCCs; the old pairwise rescan hung at 2,000)."""
    from engine.graph_def import NodeDef, topological_order
    nodes = [NodeDef("a", "NoOp", ["^b"]), NodeDef("b", "NoOp", ["^a"])]
    previous = "b"
    for i in range(5000):
        nodes.append(NodeDef(f"c{i}", "NoOp", [f"^{previous}"]))
        previous = f"c{i}"
    nodes += [NodeDef("loop", "NoOp", ["^loop", "^c10"]), NodeDef("after", "NoOp", ["^loop"])]
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"cycle through nodes: a, b, loop\. Dataflow"):
        topological_order(nodes)
