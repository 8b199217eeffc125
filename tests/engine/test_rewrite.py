"""engine/passes/rewrite.py: unique names, the consumer index, copy-on-write edits, rewiring,
pruning to outputs, and verify() refusing hostile edits with the node and field named."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.graph_def import GraphDef, NodeDef
from engine.passes.rewrite import Rewriter, finish, tensor_name, verify


def small_graph() -> GraphDef:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.constant(np.ones((3, 2), np.float32), name="w")
        y = tf.matmul(x, w, name="y")
        tf.nn.relu(y, name="r")
        tf.identity(y, name="i")
    return g.as_graph_def()


def snapshot(gd: GraphDef):
    return [(n.name, n.op, list(n.input), dict(n.attr).keys(), n.output_dtypes) for n in gd.node]


def test_tensor_name_spellings():
    assert tensor_name("a") == "a:0"
    assert tensor_name("a:2") == "a:2"
    with pytest.raises(ValueError):
        tensor_name("^a")


def test_unique_names_avoid_existing_and_reserved_ones_ignoring_case():
    rw = Rewriter(small_graph())
    assert rw.unique_name("y") == "y_1"
    assert rw.unique_name("y") == "y_2"
    assert rw.unique_name("Y") == "Y_3"
    assert rw.unique_name("fresh") == "fresh"
    assert rw.unique_name("fresh") == "fresh_1"


def test_consumer_index_lists_node_and_slot():
    rw = Rewriter(small_graph())
    assert rw.consumers("y") == [("r", 0), ("i", 0)]
    assert rw.consumers("y:0") == rw.consumers("y")
    assert rw.consumers("x") == [("y", 0)]
    assert rw.consumers("r") == []


def rebuilt_consumers(rw: Rewriter, spelling: str) -> list[tuple[str, int]]:
    """The consumers as a full scan of the rewriter's nodes finds them, in node order."""
    key = spelling if spelling.startswith("^") else tensor_name(spelling)
    return [(n.name, slot) for n in rw.nodes() for slot, s in enumerate(n.input)
            if (s if s.startswith("^") else tensor_name(s)) == key]


def chain_graph(length: int) -> GraphDef:
    g = tf.Graph()
    with g.as_default():
        h = tf.placeholder(tf.float32, [None, 2], name="x")
        for i in range(length):
            h = tf.nn.relu(tf.identity(h, name=f"id_{i}"), name=f"relu_{i}")
    return g.as_graph_def()


def test_the_kept_consumer_index_equals_a_full_scan_after_random_edits():
    rng = np.random.default_rng(0)
    rw = Rewriter(chain_graph(30))
    for step in range(400):
        names = [n.name for n in rw.nodes()]
        name = names[rng.integers(len(names))]
        action = rng.integers(5)
        if action == 0 and rw.node(name).input:
            slot = int(rng.integers(len(rw.node(name).input)))
            rw.edit(name).input[slot] = names[rng.integers(len(names))]
        elif action == 1:
            rw.edit(name).input.append("^" + names[rng.integers(len(names))])
        elif action == 2:
            rw.add(NodeDef(rw.unique_name("extra"), "Identity", [name], "", {}, (), ()))
        elif action == 3 and name != "x":
            rw.remove(name)
        else:
            rw.rewire(name, names[rng.integers(len(names))])
        probe = names[rng.integers(len(names))]
        assert rw.consumers(probe) == rebuilt_consumers(rw, probe), step
        assert rw.consumers("^" + probe) == rebuilt_consumers(rw, "^" + probe), step


def test_a_replaced_node_is_indexed_by_its_new_inputs_only():
    rw = Rewriter(small_graph())
    rw.replace("r", NodeDef("r", "Relu", ["x"], "", {}, (), ()))
    assert rw.consumers("y") == [("i", 0)]
    assert rw.consumers("x") == [("y", 0), ("r", 0)]


def test_rewiring_every_node_of_a_long_chain_reads_each_input_a_bounded_number_of_times(
        monkeypatch):
    """A rewire reindexes only the nodes it edited: rebuilding the whole index after each one
    made quantize_graph quadratic (a 1,562-node graph took minutes)."""
    import engine.passes.rewrite as rewrite
    calls = {"n": 0}
    spelled = rewrite.tensor_name

    def counting(spelling):
        calls["n"] += 1
        return spelled(spelling)

    monkeypatch.setattr(rewrite, "tensor_name", counting)
    rw = Rewriter(chain_graph(400))
    inputs = sum(len(n.input) for n in rw.nodes())
    for i in range(400):
        rw.rewire(f"id_{i}", f"id_{i}")
    assert calls["n"] < 4 * inputs + 2 * 400


def test_edits_are_copy_on_write():
    gd = small_graph()
    before = snapshot(gd)
    original_r = gd.by_name("r")
    rw = Rewriter(gd)
    rw.edit("r").input[0] = "x"
    rw.edit("r").attr["extra"] = 1
    rw.remove("i")
    rw.add(NodeDef("z", "Relu", ["y"], attr={"T": tf.float32}))
    assert snapshot(gd) == before
    assert original_r.input == ["y"] and "extra" not in original_r.attr
    assert rw.node("r").input == ["x"] and rw.node("r") is not original_r


def test_rewire_moves_every_consumer_but_the_excluded():
    rw = Rewriter(small_graph())
    rw.add(NodeDef("y2", "Relu", ["y"], attr={"T": tf.float32}))
    assert rw.rewire("y", "y2", exclude=["y2"]) == 2
    assert rw.node("r").input == ["y2"] and rw.node("i").input == ["y2"]
    assert rw.consumers("y") == [("y2", 0)]
    out = finish(rw)
    assert [n.name for n in out.node][-3:] == ["y2", "r", "i"]     # topological order


def test_replace_keeps_the_name_and_the_consumers():
    rw = Rewriter(small_graph())
    old = rw.node("y")
    rw.add(NodeDef("y_mm", "MatMul", list(old.input), attr=dict(old.attr)))
    rw.replace("y", NodeDef("y", "Relu", ["y_mm"], attr={"T": tf.float32}))
    out = finish(rw)
    assert out.by_name("y").op == "Relu"
    assert out.by_name("r").input == ["y"]


def test_verify_refuses_a_saved_shape_the_edit_made_stale():
    gd = hostile(lambda rw: rw.replace("y", NodeDef("y", "Relu", ["x"],
                                                     attr={"T": tf.float32})))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"\('r'\), field 'output_shapes'\[0\]: says \(\?, 2\), the op "
                             r"gives \(\?, 3\)"):
        verify(gd)


def test_keep_only_needed_drops_what_no_output_reads():
    rw = Rewriter(small_graph())
    dropped = rw.keep_only_needed(["r"])
    assert sorted(dropped) == ["i"]
    assert [n.name for n in rw.result().node] == ["x", "w", "y", "r"]


def test_finish_fills_in_dtypes_and_shapes_of_new_nodes():
    rw = Rewriter(small_graph())
    rw.add(NodeDef("n", "Relu", ["y"], attr={"T": tf.float32}))
    n = finish(rw).by_name("n")
    assert n.output_dtypes == (tf.float32,)
    assert n.output_shapes[0].as_list() == [None, 2]


def test_add_refuses_a_taken_name():
    rw = Rewriter(small_graph())
    with pytest.raises(errors.InvalidArgumentError, match="'r': the name is taken"):
        rw.add(NodeDef("r", "Relu", ["y"], attr={"T": tf.float32}))


def hostile(edit) -> GraphDef:
    rw = Rewriter(small_graph())
    edit(rw)
    return rw.result()


def test_verify_accepts_the_original():
    inferred = verify(small_graph())
    assert inferred["y"][0] == (tf.float32,)


def test_verify_refuses_a_dangling_input():
    gd = hostile(lambda rw: rw.edit("r").input.__setitem__(0, "gone"))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"node 'r', field 'input' \[0\]: 'gone' names node 'gone', which "
                             r"is not in the graph"):
        verify(gd)


def test_verify_refuses_an_output_index_out_of_range():
    gd = hostile(lambda rw: rw.edit("r").input.__setitem__(0, "y:3"))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"node 'r', field 'input' \[0\]: 'y:3' asks for output 3 of 'y', "
                             r"which has 1 output"):
        verify(gd)


def test_verify_refuses_a_duplicate_name():
    gd = small_graph()
    twin = NodeDef("R", "Relu", ["y"], attr={"T": tf.float32}, output_dtypes=(tf.float32,))
    with pytest.raises(errors.InvalidArgumentError,
                       match="node 'R', field 'name': duplicate node name"):
        verify(GraphDef(gd.node + [twin]))


def test_verify_refuses_a_cycle_naming_its_nodes():
    def loop(rw):
        rw.edit("y").input[0] = "r"
    with pytest.raises(errors.InvalidArgumentError, match="cycle through nodes: r, y"):
        verify(hostile(loop))


def test_verify_refuses_an_edge_of_the_wrong_dtype():
    def int_input(rw):
        rw.add(NodeDef("k", "Const", [], attr={"value": np.ones((3, 2), np.int32),
                                               "dtype": tf.int32}))
        rw.edit("y").input[1] = "k"
    with pytest.raises(errors.InvalidArgumentError, match=r"'y'.*int32"):
        verify(hostile(int_input))


def test_verify_refuses_a_quantized_op_fed_float():
    def bad(rw):
        rw.add(NodeDef("q", "QuantizedRelu", ["x", "w", "w"],
                       attr={"Tinput": tf.quint8, "out_type": tf.quint8}))
    with pytest.raises(errors.InvalidArgumentError, match="'q'"):
        verify(hostile(bad))
