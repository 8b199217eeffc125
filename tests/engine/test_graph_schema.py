"""The graph file schema (engine/graph_schema.py), one test per rule: each breaks one rule of a
valid document and checks that loading raises GraphFileError whose message names the file,
the node (index and name) or top-level field, the field inside it, and what is wrong. Also:
the limits and how to raise them, the signature table's completeness, and that every sample
graph and every graph the engine writes passes."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine import errors, graph_schema
from engine.graph_def import graph_def_from_json, graph_def_to_json
from engine.graph_schema import GraphFileError, UnregisteredOpError
from engine.graph_signatures import SIGNATURES, signature
from engine.ops import registry

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"


def _base_doc() -> dict:
    """0 x Placeholder, 1 w Const, 2 dense/MatMul(x, w), 3 split/split_dim, 4 split (Split, 2
    outputs), 5 sum AddN(split, split:1), 6 cat/axis, 7 cat ConcatV2, 8 done NoOp(^sum)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.constant(np.eye(2, dtype=np.float32), name="w")
        y = tf.matmul(x, w, name="dense/MatMul")
        a, b = tf.split(y, 2, axis=1, name="split")
        s = tf.add_n([a, b], name="sum")
        tf.concat([a, b], 1, name="cat")
        with tf.control_dependencies([s]):
            tf.no_op(name="done")
    return json.loads(graph_def_to_json(g.as_graph_def()))


BASE = _base_doc()


def _error(doc, cls=GraphFileError) -> str:
    text = doc if isinstance(doc, (str, bytes)) else json.dumps(doc)
    with pytest.raises(GraphFileError) as info:
        graph_def_from_json(text, "g.json")
    assert type(info.value) is cls
    message = str(info.value)
    assert message.startswith("g.json: ")
    return message


def _with(change) -> dict:
    doc = copy.deepcopy(BASE)
    change(doc)
    return doc


def _node(doc, name) -> dict:
    return next(n for n in doc["node"] if n["name"] == name)


def test_the_base_document_and_every_sample_graph_pass():
    graph_def_from_json(json.dumps(BASE), "g.json")
    for path in sorted(SAMPLES.glob("*.json")):
        tf.load_graph_def(path)


# -- the document ---------------------------------------------------------------------------

def test_not_utf8_names_the_byte(tmp_path):
    path = tmp_path / "g.json"
    path.write_bytes(json.dumps(BASE).encode()[:40] + b"\xff\xfe" + b"rest")
    with pytest.raises(GraphFileError, match=f"^{path}: byte 40: not UTF-8 text \\(invalid start "
                                             "byte\\); a graph file is UTF-8 JSON$"):
        tf.load_graph(path)


def test_bytes_are_read_as_utf8():
    assert len(graph_def_from_json(json.dumps(BASE).encode(), "g.json").node) == 9
    assert _error(b'{"format": "\xff"}') == ("g.json: byte 12: not UTF-8 text (invalid start "
                                              "byte); a graph file is UTF-8 JSON")


def test_file_size_limit_names_the_knob(tmp_path, monkeypatch):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(BASE))
    monkeypatch.setattr(graph_schema, "MAX_FILE_BYTES", 100)
    size = path.stat().st_size
    with pytest.raises(GraphFileError, match=f"g.json: the file is {size:,} bytes, over the limit "
                                             "of 100 \\(engine.graph_schema.MAX_FILE_BYTES; raise "
                                             "it to load this file\\)"):
        tf.load_graph(path)
    with pytest.raises(GraphFileError, match="g.json: the document is .* characters, over the "
                                             "limit of 100"):
        graph_def_from_json(path.read_text(), "g.json")
    monkeypatch.setattr(graph_schema, "MAX_FILE_BYTES", 1 << 20)
    tf.load_graph(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_or_folder_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        with pytest.raises(GraphFileError, match=f"^{path}: not a regular file$"):
            tf.load_graph(path)


def test_invalid_json_and_oversized_integers():
    assert "g.json: not valid JSON (Expecting ',' delimiter" in _error('{"format": 1 2}')
    message = _error('{"format": "engine.graphdef", "version": ' + "9" * 5000 + "}")
    assert message.startswith("g.json: not valid JSON (Exceeds the limit (4300 digits)")


def test_a_key_given_twice():
    text = json.dumps(BASE, separators=(",", ":")).replace('"name":"x",',
                                                           '"name":"x","op":"Const",', 1)
    assert _error(text) == ("g.json: an object holds key 'op' twice (in the object named 'x'); "
                            "each field is given once")


def test_nesting_depth_limit():
    deep = _with(lambda d: _node(d, "done")["attr"].update(x=json.loads("[" * 40 + "]" * 40)))
    assert _error(deep) == ("g.json: node 8 ('done'), field 'attr': holds JSON nested 33 "
                            "containers deep, over the limit of 32 (engine.graph_schema."
                            "MAX_NESTING_DEPTH; raise it to load this file)")
    assert _error("[" * 100_000).startswith("g.json: JSON nested too deeply for the parser, "
                                            "over the limit of 32")


def test_a_lone_surrogate_is_not_utf8():
    doc = _with(lambda d: _node(d, "done")["stack"].append("bad \ud800 text"))
    assert _error(doc) == ("g.json: node 8 ('done'), field 'stack': holds a string with a lone "
                           "surrogate ('bad \\ud800 text'), which is not UTF-8 text")


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format="tf.graphdef"),
     "g.json: field 'format': not an engine.graphdef document"),
    (lambda d: d.update(nodes=[]),
     "g.json: field 'nodes': unknown field (a graph document has format, version, "
     "graph_version, arrays, node, collections)"),
    (lambda d: d.update(version=4),
     "g.json: field 'version': unsupported version 4 (this build reads 1, 2, 3)"),
    (lambda d: d.update(version=True),
     "g.json: field 'version': unsupported version True (this build reads 1, 2, 3)"),
    (lambda d: d.update(graph_version="7"),
     "g.json: field 'graph_version': must be an integer, got str"),
    (lambda d: d.update(graph_version=1 << 64),
     "g.json: field 'graph_version': 18446744073709551616 is outside the int64 range"),
    (lambda d: d.update(node={}), "g.json: field 'node': must be a list, got dict"),
    (lambda d: d.update(arrays="../x.npz"),
     "g.json: field 'arrays': must be the plain name of a .npz file beside the document, got "
     "'../x.npz'"),
    (lambda d: d.update(arrays="x.npz"),
     "g.json: field 'arrays': names side file 'x.npz'; load the document from its file"),
    (lambda d: d.update(collections=[]), "g.json: field 'collections': must be an object"),
    (lambda d: d.update(collections={"losses": {}}),
     "g.json: field 'collections'['losses']: must be a list, got dict"),
    (lambda d: d.update(collections={"losses": [{"tensor": 3}]}),
     "g.json: field 'collections'['losses'][0]['tensor']: must be a name, got int"),
    (lambda d: d.update(collections={"v": [{"variable": {"name": "w", "initial": "x"}}]}),
     "g.json: field 'collections'['v'][0]['variable']['initial']: unknown field"),
    (lambda d: d.update(collections={"v": [{"thing": 1}]}),
     "g.json: field 'collections'['v'][0]: unknown item kind 'thing'"),
])
def test_top_level_fields(change, message):
    assert _error(_with(change)).startswith(message)


def test_collections_naming_missing_nodes_are_named(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(_with(lambda d: d.update(collections={"l": [{"tensor": "x:5"}]}))))
    with pytest.raises(GraphFileError, match="g.json: field 'collections'\\['l'\\]\\[0\\]"
                                             "\\['tensor'\\]: tensor 'x:5' is not in the graph"):
        tf.load_graph(path)


# -- one node's fields ------------------------------------------------------------------------

@pytest.mark.parametrize("change, message", [
    (lambda d: d["node"].append([]), "g.json: node 9: a node is an object, got list"),
    (lambda d: _node(d, "sum").update(inputs=["x"]),
     "g.json: node 5 ('sum'), field 'inputs': unknown field (a node has name, op, input, "
     "device, attr, output_dtypes, output_shapes, stack)"),
    (lambda d: _node(d, "sum").pop("name"),
     "g.json: node 5, field 'name': missing (every node has a string 'name')"),
    (lambda d: _node(d, "sum").update(name=5), "g.json: node 5, field 'name': must be a string"),
    (lambda d: _node(d, "sum").update(name=""),
     "g.json: node 5 (''), field 'name': a node name is letters, digits and _ . - / > (not "
     "starting with _ - / >), as in TF"),
    (lambda d: _node(d, "sum").update(name="_sum"),
     "g.json: node 5 ('_sum'), field 'name': a node name"),
    (lambda d: _node(d, "sum").update(name="a b"),
     "g.json: node 5 ('a b'), field 'name': a node name"),
    (lambda d: _node(d, "sum").update(op=""), "g.json: node 5 ('sum'), field 'op': is empty"),
    (lambda d: _node(d, "sum").update(input="split"),
     "g.json: node 5 ('sum'), field 'input': must be a list, got str"),
    (lambda d: _node(d, "sum")["input"].append(7),
     "g.json: node 5 ('sum'), field 'input'[2]: must be a string, got 7"),
    (lambda d: _node(d, "sum")["input"].append("split:x"),
     "g.json: node 5 ('sum'), field 'input'[2]: 'split:x' is not \"node\", \"node:N\" or "
     "\"^node\""),
    (lambda d: _node(d, "sum").update(device=0),
     "g.json: node 5 ('sum'), field 'device': must be a string, got int"),
    (lambda d: _node(d, "sum").update(device="/gpu:zero"),
     "g.json: node 5 ('sum'), field 'device': Malformed device specification '/gpu:zero'"),
    (lambda d: _node(d, "sum").update(attr=[]),
     "g.json: node 5 ('sum'), field 'attr': must be an object, got list"),
    (lambda d: _node(d, "sum")["attr"].update({"9T": 1}),
     "g.json: node 5 ('sum'), field 'attr'['9T']: an attr name is letters, digits and _"),
    (lambda d: _node(d, "sum").update(output_dtypes="float32"),
     "g.json: node 5 ('sum'), field 'output_dtypes': must be a list, got str"),
    (lambda d: _node(d, "sum").update(output_dtypes=["float99"]),
     "g.json: node 5 ('sum'), field 'output_dtypes'[0]: unknown dtype 'float99'"),
    (lambda d: _node(d, "sum").update(output_shapes=[[2, -2]]),
     "g.json: node 5 ('sum'), field 'output_shapes'[0][1]: a dim is an int >= 0, or -1 or null "
     "for unknown, got -2"),
    (lambda d: _node(d, "sum").update(stack=[1]),
     "g.json: node 5 ('sum'), field 'stack'[0]: must be a string, got 1"),
])
def test_node_fields(change, message):
    assert _error(_with(change)).startswith(message)


def test_tf_accepts_relative_looking_names():
    """TF 2.21's import_graph_def accepts "../../x" and refuses "" and "_x" (checked with
    tensorflow-cpu 2.21); so do we."""
    doc = _with(lambda d: _node(d, "done").update(name="../../x"))
    assert graph_def_from_json(json.dumps(doc)).node[8].name == "../../x"


@pytest.mark.parametrize("change, message", [
    (lambda d: _node(d, "x")["attr"].update(extra={"dtype": 5}),
     "node 0 ('x'), field 'attr'['extra']['dtype']: a dtype is a name such as \"float32\", got "
     "int"),
    (lambda d: _node(d, "x")["attr"].update(extra={"dtype": "float99"}),
     "node 0 ('x'), field 'attr'['extra']['dtype']: unknown dtype 'float99'"),
    (lambda d: _node(d, "x")["attr"].update(dtype={"dtype": "float32_ref"}),
     "node 0 ('x'), field 'attr'['dtype']['dtype']: AttrValue must not have reference type value "
     "of float32_ref (as in TF)"),
    (lambda d: _node(d, "x")["attr"].update(extra=1 << 63),
     "node 0 ('x'), field 'attr'['extra']: 9223372036854775808 is outside the int64 range"),
    (lambda d: _node(d, "x")["attr"].update(extra=[1, -(1 << 63) - 1]),
     "node 0 ('x'), field 'attr'['extra'][1]: -9223372036854775809 is outside the int64 range"),
    (lambda d: _node(d, "x")["attr"].update(extra=[[1]]),
     "node 0 ('x'), field 'attr'['extra'][0]: attr lists hold values, not further lists"),
    (lambda d: _node(d, "x")["attr"].update(extra={"a": 1, "b": 2}),
     "node 0 ('x'), field 'attr'['extra']: an encoded attr is a single-key object (dtype, shape, "
     "float or tensor), got an object with keys ['a', 'b']"),
    (lambda d: _node(d, "x")["attr"].update(extra={"func": "f"}),
     "node 0 ('x'), field 'attr'['extra']: unknown attr encoding 'func'"),
    (lambda d: _node(d, "x")["attr"].update(extra={"float": "inf"}),
     "node 0 ('x'), field 'attr'['extra']['float']: must be one of ['-Infinity', 'Infinity', "
     "'NaN'], got 'inf'"),
    (lambda d: _node(d, "x")["attr"].update(extra={"float": []}),
     "node 0 ('x'), field 'attr'['extra']['float']: must be one of ['-Infinity', 'Infinity', "
     "'NaN'], got []"),
    (lambda d: _node(d, "x")["attr"]["shape"].update(shape=[None] * 255),
     "node 0 ('x'), field 'attr'['shape']['shape']: a shape has at most 254 dims (TF's limit), "
     "this one has 255"),
    (lambda d: _node(d, "x")["attr"]["shape"].update(shape=[2, 1.5]),
     "node 0 ('x'), field 'attr'['shape']['shape'][1]: a dim is an int >= 0, or -1 or null for "
     "unknown, got 1.5"),
    (lambda d: _node(d, "x")["attr"]["shape"].update(shape={"dims": []}),
     "node 0 ('x'), field 'attr'['shape']['shape']: a shape is null or a list of dims, got dict"),
])
def test_attr_encodings(change, message):
    assert f"g.json: {message}" in _error(_with(change))


def test_minus_one_is_an_unknown_dim_as_in_tf():
    doc = _with(lambda d: _node(d, "x")["attr"]["shape"].update(shape=[-1, 2]))
    assert graph_def_from_json(json.dumps(doc)).node[0].attr["shape"].as_list() == [None, 2]


def _tensor(doc, name="w") -> dict:
    return _node(doc, name)["attr"]["value"]["tensor"]


T = "g.json: node 1 ('w'), field 'attr'['value']['tensor']"


@pytest.mark.parametrize("change, message", [
    (lambda d: _node(d, "w")["attr"]["value"].update(tensor=[1.0]),
     f"{T}: a tensor is an object, got list"),
    (lambda d: _tensor(d).update(shape=[2, -1]),
     f"{T}['shape']: a tensor's shape is a list of ints >= 0, got [2, -1]"),
    (lambda d: _tensor(d).update(shape=[1] * 65),
     f"{T}['shape']: a constant has at most 64 dims (numpy's limit), this one has 65"),
    (lambda d: _tensor(d).update(order="C"),
     f"{T}['order']: unknown field (a tensor has dtype, shape and values or array)"),
    (lambda d: _tensor(d).pop("values"), f"{T}: a tensor has 'values' or 'array'; this one has "
                                         "neither"),
    (lambda d: _tensor(d).update(array="t0"), f"{T}: a tensor has 'values' or 'array', not both"),
    (lambda d: _tensor(d).update(values=[1.0, 0.0, 0.0]),
     f"{T}['values']: must be a list of 4 numbers for shape [2, 2], got 3 items"),
    (lambda d: _tensor(d).update(values=[1.0, 0.0, "1", 1.0]),
     f"{T}['values'][2]: holds '1', not a number (dtype float32)"),
    (lambda d: _tensor(d).update(values=[1.0, 0.0, None, 1.0]),
     f"{T}['values'][2]: holds None, not a number (dtype float32)"),
    (lambda d: _tensor(d).update(values=[1.0, 0.0, 0.0, 10 ** 400]),
     f"{T}['values'][3]: 10000000000"),
    (lambda d: _tensor(d).update(dtype="int8", values=[1, 0, 300, 1]),
     f"{T}['values'][2]: 300 does not fit int8"),
    (lambda d: _tensor(d).update(dtype="int32", values=[1, 0, 0.5, 1]),
     f"{T}['values'][2]: holds 0.5, not an integer (dtype int32)"),
    (lambda d: _tensor(d).update(dtype="bool", values=[True, False, 0, True]),
     f"{T}['values'][2]: holds 0, not true or false (dtype bool)"),
    (lambda d: _tensor(d).update(dtype="string", values=["a", "b", {"base64": "!!"}, "c"]),
     f"{T}['values'][2]: not valid base64"),
    (lambda d: _tensor(d).update(dtype="string", values=["a", "b", 3, "c"]),
     f"{T}['values'][2]: a string element is text or {{\"base64\": ...}}, got 3"),
    (lambda d: _tensor(d).update(dtype="qint8"),
     f"{T}['values'][0]: holds 1.0, not an integer (dtype qint8)"),
    (lambda d: _tensor(d).update(array="t0", values=None),
     f"{T}: a tensor has 'values' or 'array', not both"),
])
def test_tensors(change, message):
    assert _error(_with(change)).startswith(message)


def test_tensor_size_limits_name_the_node_field_and_knob(monkeypatch):
    huge = _with(lambda d: _tensor(d).update(shape=[1 << 20, 1 << 20], values=None))
    assert _error(huge) == (f"{T}['shape']: shape [1048576, 1048576] is 1,099,511,627,776 "
                            "elements, over the limit of 268,435,456 (engine.graph_schema."
                            "MAX_TENSOR_ELEMENTS; raise it to load this file)")
    monkeypatch.setattr(graph_schema, "MAX_TENSOR_BYTES", 15)
    assert _error(BASE) == (f"{T}['shape']: shape [2, 2] of float32 is 16 bytes, over the limit "
                            "of 15 (engine.graph_schema.MAX_TENSOR_BYTES; raise it to load this "
                            "file)")


def test_side_arrays_together_have_a_limit(tmp_path, monkeypatch):
    g = tf.Graph()
    with g.as_default():
        tf.constant(np.zeros((40, 30), np.float32), name="a")
        tf.constant(np.ones((40, 30), np.float32), name="b")
    tf.save_graph(g, tmp_path / "g.json")
    monkeypatch.setattr(graph_schema, "MAX_SIDE_FILE_BYTES", 6000)
    with pytest.raises(GraphFileError, match="g.json: node 1 \\('b'\\), field 'attr'\\['value'\\]"
                                             "\\['tensor'\\]\\['array'\\]: the side arrays read so "
                                             "far are 9,600 bytes, over the limit of 6,000 "
                                             "\\(engine.graph_schema.MAX_SIDE_FILE_BYTES"):
        tf.load_graph(tmp_path / "g.json")


# -- rules across a node's fields, other nodes and the op registry ---------------------------

@pytest.mark.parametrize("change, message", [
    (lambda d: _node(d, "cat").update(name="sum"),
     "g.json: node 7 ('sum'), field 'name': duplicate node name: node 5 is also named 'sum'"),
    (lambda d: _node(d, "cat").update(name="SUM"),
     "g.json: node 7 ('SUM'), field 'name': 'SUM' differs only in case from node 5 ('sum'); node "
     "names are unique ignoring case here, as tf.Graph's are, so import would rename one of "
     "them"),
    (lambda d: _node(d, "dense/MatMul")["input"].__setitem__(0, "nope"),
     "g.json: node 2 ('dense/MatMul'), field 'input'[0]: 'nope' names node 'nope', which is not "
     "in the file"),
    (lambda d: _node(d, "done")["input"].append("^nope"),
     "g.json: node 8 ('done'), field 'input'[1]: '^nope' names node 'nope', which is not in the "
     "file"),
    (lambda d: _node(d, "dense/MatMul")["input"].__setitem__(1, "x:3"),
     "g.json: node 2 ('dense/MatMul'), field 'input'[1]: 'x:3' names output 3 of 'x', which has "
     "1 output"),
    (lambda d: _node(d, "sum")["input"].__setitem__(1, "split:2"),
     "g.json: node 5 ('sum'), field 'input'[1]: 'split:2' names output 2 of 'split', which has "
     "2 outputs"),
    (lambda d: _node(d, "sum")["input"].insert(0, "^x"),
     "g.json: node 5 ('sum'), field 'input'[1]: data input 'split' follows control input '^x'; "
     "control inputs come after the data inputs, as in TF"),
    (lambda d: _node(d, "dense/MatMul")["input"].pop(),
     "g.json: node 2 ('dense/MatMul'), field 'input': a MatMul takes 2 data inputs (a, b), got "
     "1"),
    (lambda d: _node(d, "sum")["attr"].update(N=3),
     "g.json: node 5 ('sum'), field 'input': an AddN takes 3 data inputs (inputs*N), got 2"),
    (lambda d: _node(d, "cat")["input"].insert(0, "split"),
     "g.json: node 7 ('cat'), field 'input': a ConcatV2 takes 3 data inputs (values*N, axis), "
     "got 4"),
    (lambda d: _node(d, "cat")["attr"].update(N=1),
     "g.json: node 7 ('cat'), field 'attr'['N']: a ConcatV2's attr 'N' has minimum value 2, "
     "got 1"),
    (lambda d: _node(d, "dense/MatMul")["attr"].pop("T"),
     "g.json: node 2 ('dense/MatMul'), field 'attr': missing attr 'T' (type), which a MatMul "
     "requires (MatMul: a, b -> product | transpose_a=bool, transpose_b=bool, T:type, "
     "grad_a=bool, grad_b=bool)"),
    (lambda d: _node(d, "w")["attr"].pop("value"),
     "g.json: node 1 ('w'), field 'attr': missing attr 'value' (tensor), which a Const requires"),
    (lambda d: _node(d, "x")["attr"].pop("dtype"),
     "g.json: node 0 ('x'), field 'attr': missing attr 'dtype' (type), which a Placeholder "
     "requires"),
    (lambda d: _node(d, "dense/MatMul")["attr"].update(T=3),
     "g.json: node 2 ('dense/MatMul'), field 'attr'['T']: a MatMul's attr 'T' is a dtype "
     "({\"dtype\": \"float32\"}), got 3"),
    (lambda d: _node(d, "dense/MatMul")["attr"].update(transpose_a=1),
     "g.json: node 2 ('dense/MatMul'), field 'attr'['transpose_a']: a MatMul's attr "
     "'transpose_a' is true or false, got 1"),
    (lambda d: _node(d, "split")["attr"].update(num_split=2.0),
     "g.json: node 4 ('split'), field 'attr'['num_split']: a Split's attr 'num_split' is an "
     "integer, got 2.0"),
    (lambda d: _node(d, "split")["attr"].update(num_split=1 << 20),
     "g.json: node 4 ('split'), field 'attr': a Split with these attrs has 1,048,576 outputs, "
     "over the limit of 65,536 (engine.graph_schema.MAX_NODE_OUTPUTS"),
    (lambda d: _node(d, "x")["attr"].update(shape={"dtype": "float32"}),
     "g.json: node 0 ('x'), field 'attr'['shape']: a Placeholder's attr 'shape' is a shape "
     "({\"shape\": [2, null]}), got dtype float32"),
    (lambda d: _node(d, "w")["attr"].update(dtype={"dtype": "int32"}),
     "g.json: node 1 ('w'), field 'attr'['value']: the value is float32 but attr 'dtype' says "
     "int32"),
    (lambda d: _node(d, "split").update(output_dtypes=["float32"]),
     "g.json: node 4 ('split'), field 'output_dtypes': lists 1 outputs, a Split with these "
     "attrs has 2"),
    (lambda d: _node(d, "split").update(output_shapes=[None] * 3),
     "g.json: node 4 ('split'), field 'output_shapes': lists 3 outputs, a Split with these "
     "attrs has 2"),
    (lambda d: _node(d, "sum")["attr"].update(_class="loc:@x"),
     "g.json: node 5 ('sum'), field 'attr'['_class']: must be a list of \"loc:@<node>\" "
     "strings"),
    (lambda d: _node(d, "sum")["attr"].update(_class=None),
     "g.json: node 5 ('sum'), field 'attr'['_class']: must be a list of \"loc:@<node>\" "
     "strings"),
    (lambda d: _node(d, "sum")["attr"].update(_class=["x"]),
     "g.json: node 5 ('sum'), field 'attr'['_class'][0]: must be a \"loc:@<node>\" string, got "
     "'x'"),
    (lambda d: _node(d, "sum")["attr"].update(_class=["loc:@gone"]),
     "g.json: node 5 ('sum'), field 'attr'['_class'][0]: colocation with 'gone', which is not a "
     "node of the file"),
])
def test_rules_across_nodes(change, message):
    assert _error(_with(change)).startswith(message)


def test_an_unregistered_op_is_also_a_not_found_error():
    doc = _with(lambda d: _node(d, "sum").update(op="FrobnicateV9"))
    message = _error(doc, UnregisteredOpError)
    assert message.startswith("g.json: node 5 ('sum'), field 'op': Op type not registered "
                              "'FrobnicateV9' in this engine")
    assert issubclass(UnregisteredOpError, errors.NotFoundError)
    assert UnregisteredOpError(None, None, "m").error_code == errors.NOT_FOUND


def test_a_cycle_is_named_by_its_members_at_the_first_of_them():
    def loop(d):
        _node(d, "dense/MatMul")["input"][0] = "sum"
    assert _error(_with(loop)) == (
        "g.json: node 2 ('dense/MatMul'), field 'input': Graph contains a cycle through nodes: "
        "dense/MatMul, split, sum. Dataflow graphs must be acyclic; remove one of these inputs.")


def test_graph_file_error_is_an_invalid_argument_and_a_value_error():
    e = GraphFileError(None, None, "g.json: field 'node': must be a list")
    assert isinstance(e, errors.InvalidArgumentError) and isinstance(e, ValueError)
    assert e.error_code == errors.INVALID_ARGUMENT and e.message == str(e)


# -- what import still finds, named the same way --------------------------------------------

def test_import_names_the_node_for_what_only_shape_inference_sees():
    def column(d):
        _tensor(d).update(shape=[3, 1], values=[1.0, 2.0, 3.0])
        _node(d, "w")["output_shapes"] = [[3, 1]]
    doc = _with(column)
    with pytest.raises(GraphFileError, match="g.json: node 2 \\('dense/MatMul'\\), fields "
                                             "'input' and 'attr': cannot import a MatMul with "
                                             "these inputs and attrs \\(ValueError: Dimensions "
                                             "must be equal"):
        tf.import_graph_def(graph_def_from_json(json.dumps(doc), "g.json"), graph=tf.Graph())
    doc = _with(lambda d: _node(d, "sum").update(output_dtypes=["int32"]))
    with pytest.raises(GraphFileError, match="g.json: node 5 \\('sum'\\), field 'output_dtypes': "
                                             "says \\['int32'\\] but an AddN with these inputs "
                                             "and attrs gives \\['float32'\\]"):
        tf.import_graph_def(graph_def_from_json(json.dumps(doc), "g.json"), graph=tf.Graph())


# -- the signature table --------------------------------------------------------------------

def test_every_registered_op_type_has_a_signature():
    """Completeness is explicit: an op type registered without an entry in
    engine/graph_signatures.py fails here (its files would get no arity or attr checks)."""
    graph_schema._register_every_op()
    assert sorted(set(registry.registered_op_types()) - set(SIGNATURES)) == []


def test_every_counting_attr_is_a_required_int_or_type_list():
    for op in SIGNATURES:
        sig = signature(op)
        for _, count in sig.inputs + sig.outputs:
            if count is not None:
                assert sig.attrs[count].kind in ("int", "list(type)"), op
                assert sig.attrs[count].required, op


def test_every_node_the_engine_writes_passes(tmp_path):
    """A training graph with an optimizer, variables, colocation, summaries-free control flow,
    strings and every attr kind round-trips through the checks."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w = tf.Variable(np.ones((4, 3), np.float32), name="w")
        h = tf.nn.relu(tf.matmul(x, w))
        parts = tf.unstack(tf.reshape(h, [-1, 3, 1]), axis=1)
        y = tf.concat(parts, 1) + tf.add_n(parts)
        img = tf.reshape(tf.tile(y, [1, 4]), [-1, 4, 3, 1])
        pooled = tf.nn.max_pool(img, [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
        sizes = tf.cast(tf.stack(tf.shape_n([x, y])), tf.float32)
        loss = tf.reduce_mean(tf.square(pooled)) + tf.reduce_sum(sizes)
        tf.constant(["text", "more"], name="words")
        tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    tf.save_graph(g, tmp_path / "g.json")
    assert len(tf.load_graph(tmp_path / "g.json").get_operations()) == len(g.get_operations())
