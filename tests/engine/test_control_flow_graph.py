"""The graph side of control flow: NextIteration -> Merge back edges are legal cycles, a real
cycle is still refused; loop graphs import, save and load; the plan picks an executor per
partition; frames are checked as TF checks them; the frame_id:iteration seam of the
rendezvous key."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine.graph_def import NodeDef, topological_order
from engine.runtime import frames
from engine.runtime.executor_api import COMPILED, DYNAMIC, PartitionExecutor, choose_executors


def _loop_graph():
    g = tf.Graph()
    with g.as_default():
        n = tf.placeholder(tf.int32, [], name="n")
        c = tf.constant(2.0, name="c")
        r = tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * c), [0, 1.0])
    return g, n, r


def _node(name, op, inputs=(), **attr):
    return NodeDef(name, op, list(inputs), attr=attr)


def test_back_edges_are_legal_and_order_follows_the_graph():
    g, _, _ = _loop_graph()
    order = [n.name for n in topological_order(g.as_graph_def().node)]
    assert order.index("while/Merge") < order.index("while/NextIteration")
    assert order.index("while/Enter") < order.index("while/Merge")


def test_a_real_cycle_is_still_refused_naming_its_nodes():
    nodes = [_node("a", "Identity", ["c"]), _node("b", "Identity", ["a"]),
             _node("c", "Identity", ["b"]), _node("d", "Identity", ["c"]),
             _node("m", "Merge", ["n", "nx"]), _node("nx", "NextIteration", ["m"]),
             _node("n", "Const")]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Graph contains a cycle through nodes: a, b, c\. Dataflow graphs "
                             r"must be acyclic"):
        topological_order(nodes)
    # a cycle through a Merge that is not a loop's back edge is still a cycle
    with pytest.raises(tf.errors.InvalidArgumentError, match="cycle through nodes: m, x"):
        topological_order([_node("m", "Merge", ["x", "x"]), _node("x", "Identity", ["m"])])


def test_the_cycle_check_stays_linear_on_a_long_loop_chain():
    """A 20000-node chain closed into one loop through a NextIteration is ordered (and the
    same chain closed without one is refused) without recursion limits."""
    chain = [_node("enter", "Enter", ["start"], frame_name="f"), _node("start", "Const"),
             _node("m", "Merge", ["enter", "nxt"])]
    previous = "m"
    for k in range(20000):
        chain.append(_node(f"n{k}", "Identity", [previous]))
        previous = f"n{k}"
    chain.append(_node("nxt", "NextIteration", [previous]))
    assert len(topological_order(chain)) == len(chain)
    chain[-1] = _node("nxt", "Identity", [previous])
    with pytest.raises(tf.errors.InvalidArgumentError, match="cycle through nodes: m, n0, n1"):
        topological_order(chain)


def test_a_loop_graph_round_trips_through_save_and_load(tmp_path):
    g, _, _ = _loop_graph()
    path = tmp_path / "loop.json"
    tf.save_graph(g, path)
    loaded = tf.load_graph(path)
    merge = loaded.get_operation_by_name("while/Merge")
    assert [t.name for t in merge.inputs] == ["while/Enter:0", "while/NextIteration:0"]
    assert loaded.get_operation_by_name("while/Enter").attrs["frame_name"] == \
        "while/while_context"
    with tf.Session(graph=loaded) as sess:
        assert sess.run(["while/Exit:0", "while/Exit_1:0"], {"n:0": 4}) == [4, 16.0]


def test_import_graph_def_of_a_loop_under_a_prefix():
    g, _, _ = _loop_graph()
    target = tf.Graph()
    with target.as_default():
        limit = tf.constant(3, name="limit")
        i, x = tf.import_graph_def(g.as_graph_def(), input_map={"n:0": limit},
                                   return_elements=["while/Exit:0", "while/Exit_1:0"],
                                   name="imported")
        assert i.name == "imported/while/Exit:0"
        with tf.Session() as sess:
            assert sess.run([i, x]) == [3, 8.0]


def test_the_plan_keeps_the_compiled_path_without_control_flow():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        plain = x * 2.0 + 1.0
        looped = tf.while_loop(lambda i: i < 3.0, lambda i: i + x, [0.0])
        with tf.Session() as sess:
            assert sess.run(plain, {x: 1.0}) == 3.0
            assert sess.run(looped, {x: 1.0}) == 3.0
            kinds = sorted(p.kind for plan in sess._plans.values() for p in plan.partitions)
    assert kinds == [COMPILED, DYNAMIC]


def test_partitions_receiving_from_a_dynamic_one_run_dynamically():
    """A dead tensor may cross with a Recv, so every partition downstream of a dynamic one
    is dynamic too; partitions upstream keep the compiled path."""
    def part(*ops, recv_from=None):
        nodes = [_node(f"n{i}", op) for i, op in enumerate(ops)]
        if recv_from:
            nodes.append(NodeDef("r", "_Recv", [], attr={"send_device": recv_from}))
        return nodes
    kinds = choose_executors({"A": part("Add"), "B": part("Switch", recv_from="A"),
                              "C": part("Mul", recv_from="B"), "D": part("Mul", recv_from="C"),
                              "E": part("Mul", recv_from="A")})
    assert kinds == {"A": COMPILED, "B": DYNAMIC, "C": DYNAMIC, "D": DYNAMIC, "E": COMPILED}


def test_both_executors_implement_the_interface():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        plain = x + 1.0
        looped = tf.while_loop(lambda i: i < 3.0, lambda i: i + x, [0.0])
        with tf.Session() as sess:
            sess.run([plain], {x: 1.0})
            sess.run([looped], {x: 1.0})
            executors = [p for plan in sess._plans.values() for p in plan.partitions]
    for executor in executors:
        for attribute in PartitionExecutor.__annotations__:
            assert hasattr(executor, attribute), (executor.kind, attribute)
        assert callable(executor.run) and executor.num_kernels > 0


def test_inputs_from_two_frames_are_refused_with_tfs_message():
    nodes = [_node("start", "Const"), _node("enter", "Enter", ["start"], frame_name="f"),
             _node("outside", "Const"), _node("mix", "Add", ["enter", "outside"])]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="node mix has inputs from different frames. The input node "
                             "(outside|enter) is in frame '(f)?'. The input node (enter|outside) "
                             "is in frame '(f)?'."):
        frames.frames_of(nodes)
    found = frames.frames_of(nodes[:2] + [_node("exit", "Exit", ["enter"]),
                                          _node("after", "Identity", ["exit"])])
    assert found == {"start": "", "enter": "", "exit": "f", "after": ""}


def test_rendezvous_key_carries_frame_and_iteration():
    key = "/job:localhost/replica:0/task:0/device:CPU:0;0000000000000001;" \
          "/job:localhost/replica:0/task:0/device:GPU:0;edge_7_a;0:0"
    assert frames.rendezvous_key_in(key, 0, 0) == key
    frame = frames.frame_instance_id(0, 0, "while/while_context")
    assert frame == frames.frame_instance_id(0, 0, "while/while_context")
    assert frame != frames.frame_instance_id(0, 1, "while/while_context")
    assert frames.rendezvous_key_in(key, frame, 3) == \
        key[:-len("0:0")] + f"{frame}:3"


def test_loop_values_are_freed_after_their_last_use():
    """An iteration's inputs are dropped as each consumer runs, its state when it ends: while
    a 50-iteration loop multiplies a large tensor, at most the newest product and its input
    are alive (a checker watches each output as it is made; CPython frees on the last reference)."""
    import weakref

    class Watch(list):
        def __init__(self):
            super().__init__()
            self.products: list = []
            self.most_alive = 0

        def checker(self, partition):
            def check(index, outputs, inputs):
                if partition.nodes[index].name == "while/mul":
                    self.products.append(weakref.ref(outputs[0]))
                    alive = sum(1 for ref in self.products if ref() is not None)
                    self.most_alive = max(self.most_alive, alive)
            return check
    with tf.Graph().as_default():
        big = tf.placeholder(tf.float32, [100000], name="big")
        r = tf.while_loop(lambda i, x: i < 50, lambda i, x: (i + 1, x * 1.0), [0, big])
        with tf.Session() as sess:
            sess.run(r, {big: np.ones(100000, np.float32)})
            (plan,) = sess._plans.values()
    watch = Watch()
    out = [None, None]
    import torch
    plan.partitions[0].run([torch.ones(100000)], out, None, watch)
    assert int(out[0]) == 50 and len(watch.products) == 50
    assert watch.most_alive <= 2


def test_map_fn_and_scan_graphs_round_trip(tmp_path):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        mapped = tf.map_fn(lambda r: r * 2.0, x)
        scanned = tf.scan(lambda a, r: a + r, x)
    tf.save_graph(g, tmp_path / "functional.json")
    loaded = tf.load_graph(tmp_path / "functional.json")
    with tf.Session(graph=loaded) as sess:
        got = sess.run([mapped.name, scanned.name], {"x:0": [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(got[0], [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(got[1], [1.0, 3.0, 6.0])


def test_a_tensor_inside_a_loop_may_not_be_fed_but_its_result_may():
    with tf.Graph().as_default():
        seen = []
        r = tf.while_loop(lambda i: i < 3,
                          lambda i: seen.append(tf.identity(i, name="mid")) or seen[-1] + 1, [0])
        doubled = r * 2
        with tf.Session() as sess:
            with pytest.raises(ValueError, match="Tensor while/mid:0 may not be fed: it is "
                                                 "computed inside the while loop "
                                                 "'while/while_context'"):
                sess.run(r, {seen[0]: 5})
            assert sess.run(doubled, {r: 10}) == 20
