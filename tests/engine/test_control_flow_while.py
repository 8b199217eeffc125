"""tf.while_loop and what is built on it (TensorArray loops, map_fn, scan, foldl, foldr) on the
dynamic executor: the graph TF1 builds, results, iteration frames, parallel_iterations, step
stats per iteration, errors and deadlines inside loops, loops on a virtual GPU. Expected
values are what TensorFlow 2.21 (tf.compat.v1, control flow v1) gives for the same programs."""

from __future__ import annotations

import collections
import itertools

import numpy as np
import pytest
from kernel_harness import covers

import engine as tf
from engine.runtime import rendezvous


def _inputs(op) -> list[str]:
    return [t.name for t in op.inputs] + ["^" + c.name for c in op.control_inputs]


def _run(fetches, feeds=None, config=None, **kwargs):
    with tf.Session(config=config) as sess:
        return sess.run(fetches, feeds, **kwargs)


def test_while_loop_builds_tf1_graph():
    """The node list TF 2.21 gives (its Add is AddV2): Enter per loop variable, Merge with
    the NextIteration back edge, LoopCond, Switch colocated with its Merge, an Identity into
    the body, constants controlled by the body pivot, a constant Enter for `c` and `n`."""
    g = tf.Graph()
    with g.as_default():
        n = tf.placeholder(tf.int32, [], name="n")
        c = tf.constant(2.0, name="c")
        i, x = tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * c),
                             [tf.constant(0, name="i0"), tf.constant(1.0, name="x0")])
    got = {op.name: (op.type, _inputs(op)) for op in g.get_operations()}
    assert got["while/Enter"] == ("Enter", ["i0:0"])
    assert got["while/Merge"] == ("Merge", ["while/Enter:0", "while/NextIteration:0"])
    assert got["while/Less"] == ("Less", ["while/Merge:0", "while/Less/Enter:0"])
    assert got["while/Less/Enter"] == ("Enter", ["n:0"])
    assert got["while/LoopCond"] == ("LoopCond", ["while/Less:0"])
    assert got["while/Switch_1"] == ("Switch", ["while/Merge_1:0", "while/LoopCond:0"])
    assert got["while/Identity"] == ("Identity", ["while/Switch:1"])
    assert got["while/add/y"] == ("Const", ["^while/Identity"])
    assert got["while/mul"] == ("Mul", ["while/Identity_1:0", "while/mul/Enter:0"])
    assert got["while/NextIteration_1"] == ("NextIteration", ["while/mul:0"])
    assert got["while/Exit_1"] == ("Exit", ["while/Switch_1:0"])
    enter = g.get_operation_by_name("while/Enter")
    assert (enter.attrs["frame_name"], enter.attrs["is_constant"],
            enter.attrs["parallel_iterations"]) == ("while/while_context", False, 10)
    assert g.get_operation_by_name("while/mul/Enter").attrs["is_constant"] is True
    assert g.get_operation_by_name("while/Switch").attrs["_class"] == ["loc:@while/Merge"]
    assert (i.name, x.name) == ("while/Exit:0", "while/Exit_1:0")
    with tf.Session(graph=g) as sess:
        assert sess.run([i, x], {n: 5}) == [5, 32.0]     # TF 2.21: [5, 32.0]
        assert sess.run([i, x], {n: 0}) == [0, 1.0]


def test_counting_and_maximum_iterations():
    """TF 2.21: counting to 10 gives 10; maximum_iterations=3 stops it at 3."""
    with tf.Graph().as_default():
        count = tf.while_loop(lambda i: i < 10, lambda i: i + 1, [0])
        bounded = tf.while_loop(lambda i: i < 10, lambda i: i + 1, [0], maximum_iterations=3)
        g = tf.get_default_graph()
        assert g.get_operation_by_name("while_1/iteration_counter").type == "Const"
        assert g.get_operation_by_name("while_1/LogicalAnd").type == "LogicalAnd"
        assert _run([count, bounded]) == [10, 3]


@pytest.mark.parametrize("parallel_iterations", [1, 10])
def test_parallel_iterations_do_not_change_results(parallel_iterations):
    """TF 2.21 gives (10, 285) for the sum of i*i below 10, with 1 and with 10."""
    with tf.Graph().as_default():
        r = tf.while_loop(lambda i, a: i < 10, lambda i, a: (i + 1, a + i * i), [0, 0],
                          parallel_iterations=parallel_iterations)
        assert tuple(_run(r)) == (10, 285)


def _iteration_overlap(parallel_iterations: int) -> bool:
    """Whether iteration 1's counter Merge ran before iteration 0's slow chain ended."""
    with tf.Graph().as_default():
        def body(i, x):
            for _ in range(6):
                x = tf.identity(x, name="chain")
            return i + 1, x
        tf.while_loop(lambda i, x: i < 3, body, [0, 0.0],
                      parallel_iterations=parallel_iterations)
        with tf.Session() as sess:
            metadata = tf.RunMetadata()
            sess.run(["while/Exit:0", "while/Exit_1:0"], options=tf.RunOptions(trace_level=3),
                     run_metadata=metadata)
        order = [ns.node_name for d in metadata.step_stats.dev_stats for ns in d.node_stats]
    merges = [k for k, name in enumerate(order) if name == "while/Merge"]
    last_of_first_iteration = order.index("while/chain_5")
    return merges[1] < last_of_first_iteration


def test_parallel_iterations_bounds_the_iterations_in_flight():
    assert _iteration_overlap(10)
    assert not _iteration_overlap(1)


def test_stateful_op_in_the_body_runs_once_per_iteration():
    """TF 2.21: five iterations with an assign_add under control_dependencies give (5, 5.0)."""
    with tf.Graph().as_default():
        v = tf.Variable(0.0)

        def body(i):
            with tf.control_dependencies([tf.assign_add(v, 1.0)]):
                return i + 1
        r = tf.while_loop(lambda i: i < 5, body, [0])
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(r) == 5
            assert sess.run(v) == 5.0


def test_external_control_dependency_is_honoured_once_per_iteration():
    """A control input from outside the loop comes in through an Identity the loop enters
    (TF's _AddOpInternal), so the body still waits for it."""
    with tf.Graph().as_default():
        v = tf.Variable(0.0)
        outside = tf.assign_add(v, 100.0)

        def body(i):
            with tf.control_dependencies([outside]):
                return i + 1
        r = tf.while_loop(lambda i: i < 3, body, [0])
        add = tf.get_default_graph().get_operation_by_name("while/add")
        assert [c.type for c in add.control_inputs] == ["Identity"]
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(r) == 3
            assert sess.run(v) == 100.0


def test_nested_loops_with_a_cond_inside():
    """TF 2.21 gives (3, 6.0); the inner loop's frame is while/while/while_context and x
    enters it through a constant Enter of each frame."""
    with tf.Graph().as_default():
        x = tf.constant(1.0, name="x")

        def outer_body(i, acc):
            j = tf.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + x), [0, acc])
            return i + 1, tf.cond(i > 1, lambda: j[1] * 2.0, lambda: j[1])
        r = tf.while_loop(lambda i, a: i < 3, outer_body, [0, 0.0])
        g = tf.get_default_graph()
        outer_enter = g.get_operation_by_name("while/while/add_1/Enter")
        inner_enter = g.get_operation_by_name("while/while/add_1/Enter_1")
        assert outer_enter.attrs["frame_name"] == "while/while_context"
        assert inner_enter.attrs["frame_name"] == "while/while/while_context"
        assert _inputs(inner_enter) == ["while/while/add_1/Enter:0"]
        assert tuple(_run(r)) == (3, 6.0)


def test_cond_inside_a_loop_runs_its_branch_per_iteration():
    with tf.Graph().as_default():
        v = tf.Variable(0.0)

        def body(i):
            bumped = tf.cond(tf.equal(i % 2, 1), lambda: tf.assign_add(v, 1.0),
                             lambda: tf.identity(v._ref()))
            with tf.control_dependencies([bumped]):
                return i + 1
        r = tf.while_loop(lambda i: i < 7, body, [0])
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(r) == 7
            assert sess.run(v) == 3.0         # iterations 1, 3 and 5


def test_nested_structures_of_loop_variables():
    Pair = collections.namedtuple("Pair", ["count", "total"])
    with tf.Graph().as_default():
        start = Pair(tf.constant(0), {"sum": tf.constant(0.0), "prod": tf.constant(1.0)})

        def body(count, total):
            f = tf.cast(count + 1, tf.float32)
            return Pair(count + 1, {"sum": total["sum"] + f, "prod": total["prod"] * f})
        r = tf.while_loop(lambda count, total: count < 4, body, start)
        assert isinstance(r, Pair)
        assert _run(r) == Pair(4, {"sum": 10.0, "prod": 24.0})


def test_shape_invariants():
    """TF 2.21's messages; with a less specific invariant the shape may grow."""
    with tf.Graph().as_default():
        start = tf.constant([0])
        with pytest.raises(ValueError, match=r"Input tensor 'Const:0' enters the loop with shape "
                                             r"\(1,\), but has shape \(2,\) after one "
                                             r"iteration\. To allow the shape to vary"):
            tf.while_loop(lambda i: tf.size(i) < 3, lambda i: tf.concat([i, i], 0), [start])
        with pytest.raises(ValueError, match=r"The shape invariant specified for Const:0 is not "
                                             r"compatible with the initial shape of the loop "
                                             r"variable. It enters the loop with shape \(1,\), "
                                             r"but the specified shape invariant is \(2,\)."):
            tf.while_loop(lambda i: tf.size(i) < 3, lambda i: i, [start],
                          shape_invariants=[tf.TensorShape([2])])
        grown = tf.while_loop(lambda i: tf.size(i) < 5, lambda i: tf.concat([i, i + 1], 0),
                              [start], shape_invariants=[tf.TensorShape([None])])
        assert grown.shape.as_list() == [None]
        np.testing.assert_array_equal(_run(grown), [0, 1, 1, 2, 1, 2, 2, 3])


def test_loop_build_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="The two structures don't have the same nested "
                                             "structure"):
            tf.while_loop(lambda i: i < 3, lambda i: (i, i), [0])
        with pytest.raises(TypeError, match="'cond' must be callable."):
            tf.while_loop(True, lambda i: i, [0])
        with pytest.raises(ValueError, match="'loop_vars' must be provided."):
            tf.while_loop(lambda: True, lambda: 1, [])
        inside = []
        tf.while_loop(lambda i: i < 3, lambda i: inside.append(i + 1) or inside[-1], [0])
        with pytest.raises(ValueError, match=r"Cannot use 'while_2/add' as input to 'mul' "
                                             r"because 'while_2/add' is in a while loop"):
            tf.multiply(inside[0], 2, name="mul")


def test_fetching_a_tensor_inside_a_loop_is_refused():
    with tf.Graph().as_default():
        body_values = []
        tf.while_loop(lambda i: i < 3,
                      lambda i: body_values.append(tf.identity(i, name="seen")) or i + 1, [0])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Cannot fetch 'while/seen:0': it is computed inside the while "
                                 "loop 'while/while_context', once per iteration"):
            _run(body_values[0])


def test_step_stats_record_every_iteration():
    """TF 2.21 traces (n=4): Merge, Less, LoopCond, Switch 5 times; Identity, add,
    NextIteration 4 times; Enter, Less/Enter, Exit once. (TF also lists its in-loop Consts;
    this engine binds constants once and records no stats for them.)"""
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        loop = tf.while_loop(lambda i: i < n, lambda i: i + 1, [0], name="counted")
        with tf.Session() as sess:
            metadata = tf.RunMetadata()
            assert sess.run(loop, {n: 4}, options=tf.RunOptions(trace_level=3),
                            run_metadata=metadata) == 4
    counts = collections.Counter(ns.node_name for d in metadata.step_stats.dev_stats
                                 for ns in d.node_stats)
    assert {k: v for k, v in counts.items() if k.startswith("counted")} == {
        "counted/Enter": 1, "counted/Exit": 1, "counted/Identity": 4, "counted/Less": 5,
        "counted/Less/Enter": 1, "counted/LoopCond": 5, "counted/Merge": 5,
        "counted/NextIteration": 4, "counted/Switch": 5, "counted/add": 4}


def test_an_error_inside_a_loop_names_the_node_and_its_creation_site():
    """TF 2.21: InvalidArgumentError at node 'while/CheckNumerics': 'bad value : Tensor had
    Inf values' (the third iteration divides by zero)."""
    with tf.Graph().as_default():
        def body(i, x):
            return i + 1, tf.check_numerics(x / tf.cast(2 - i, tf.float32), "bad value")
        r = tf.while_loop(lambda i, x: i < 5, body, [0, 1.0])
        with pytest.raises(tf.errors.InvalidArgumentError) as caught:
            _run(r)
    text = str(caught.value)
    assert text.startswith("bad value : Tensor had Inf values")
    assert "[[node while/CheckNumerics (defined at " in text
    assert "test_control_flow_while.py" in text
    assert caught.value.node_def.name == "while/CheckNumerics"


def test_check_numerics_config_names_the_op_inside_the_loop():
    with tf.Graph().as_default():
        def body(i, x):
            return i + 1, x / tf.cast(2 - i, tf.float32)
        r = tf.while_loop(lambda i, x: i < 5, body, [0, 1.0])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"while/truediv:0 : Tensor had Inf values"):
            _run(r, config=tf.ConfigProto(check_numerics=True))


def test_deadline_stops_a_loop_that_would_run_for_long(monkeypatch):
    """RunOptions(timeout_in_ms) holds inside a loop: the deadline is checked after every
    node. The clock advances 1 ms per look, so 50 ms pass after about 50 nodes, long before
    the 100000 iterations end (were the deadline ignored, the run would finish instead)."""
    ticks = itertools.count()
    monkeypatch.setattr(rendezvous, "_clock", lambda: next(ticks) * 0.001)
    with tf.Graph().as_default():
        long_loop = tf.while_loop(lambda i: i < 100000, lambda i: i + 1, [0])
        with tf.Session() as sess, pytest.raises(tf.errors.DeadlineExceededError,
                                                 match="deadline of 50 ms") as caught:
            sess.run(long_loop, options=tf.RunOptions(timeout_in_ms=50))
    assert caught.value.node_def.name.startswith("while/")
    assert next(ticks) < 200


def test_tensor_array_in_a_loop_and_dynamic_size():
    """TF 2.21: writing fill([i+1], i) for i < 4 into a dynamic TensorArray concatenates to
    [0 1 1 2 2 2 3 3 3 3], size 4."""
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False)
        _, ta = tf.while_loop(
            lambda i, t: i < 4,
            lambda i, t: (i + 1, t.write(i, tf.fill(tf.expand_dims(i + 1, 0),
                                                    tf.cast(i, tf.float32)))), [0, ta])
        assert isinstance(ta, tf.TensorArray)
        got, size = _run([ta.concat(), ta.size()])
        np.testing.assert_array_equal(got, [0, 1, 1, 2, 2, 2, 3, 3, 3, 3])
        assert size == 4


def test_map_fn_builds_tf1_graph_and_maps():
    """TF 2.21: map_fn(x * 2) over [1, 2, 3] gives [2, 4, 6] through map/TensorArray (the
    elements, unstacked), a loop bounded by maximum_iterations, reads and writes inside it
    (the write colocated with the value it writes) and map/TensorArrayStack."""
    g = tf.Graph()
    with g.as_default():
        elems = tf.constant([1.0, 2.0, 3.0], name="elems")
        r = tf.map_fn(lambda x: x * 2.0, elems)
    assert r.name == "map/TensorArrayStack/TensorArrayGatherV3:0"
    assert r.shape.as_list() == [3]
    read = g.get_operation_by_name("map/while/TensorArrayReadV3")
    assert _inputs(read) == ["map/while/TensorArrayReadV3/Enter:0", "map/while/Identity_1:0",
                             "map/while/TensorArrayReadV3/Enter_1:0"]
    assert g.get_operation_by_name("map/while/TensorArrayReadV3/Enter").attrs["T"] == \
        tf.resource
    write = g.get_operation_by_name("map/while/TensorArrayWrite/TensorArrayWriteV3")
    assert write.attrs["_class"] == ["loc:@map/while/mul"]
    assert g.get_operation_by_name("map/while/maximum_iterations").type == "Const"
    with g.as_default():
        np.testing.assert_array_equal(_run(r), [2.0, 4.0, 6.0])


def test_map_fn_over_structures_and_with_dtype():
    with tf.Graph().as_default():
        a = tf.constant([1.0, 2.0, 3.0])
        b = tf.constant([4.0, 5.0, 6.0])
        both = tf.map_fn(lambda ab: (ab[0] + ab[1], ab[0] * ab[1]), (a, b))
        lengths = tf.map_fn(lambda x: tf.cast(tf.reduce_sum(x), tf.int32),
                            tf.constant([[1.0, 2.0], [3.0, 4.0]]), dtype=tf.int32)
        got_sum, got_prod = _run(both)
        np.testing.assert_array_equal(got_sum, [5, 7, 9])
        np.testing.assert_array_equal(got_prod, [4, 10, 18])
        np.testing.assert_array_equal(_run(lengths), [3, 7])


def test_scan_foldl_foldr():
    """TF 2.21 over [1, 2, 3]: scan(+) [1 3 6], reversed [6 5 3]; foldl(a*10+x) 123, foldr
    321; foldl(a-x, initializer=100) 94; scan with an initializer [11 13 16]."""
    with tf.Graph().as_default():
        elems = tf.constant([1.0, 2.0, 3.0])
        got = _run([tf.scan(lambda a, x: a + x, elems),
                    tf.scan(lambda a, x: a + x, elems, reverse=True),
                    tf.foldl(lambda a, x: a * 10 + x, elems),
                    tf.foldr(lambda a, x: a * 10 + x, elems),
                    tf.foldl(lambda a, x: a - x, elems, initializer=100.0),
                    tf.scan(lambda a, x: a + x, elems, initializer=10.0)])
        np.testing.assert_array_equal(got[0], [1, 3, 6])
        np.testing.assert_array_equal(got[1], [6, 5, 3])
        assert (got[2], got[3], got[4]) == (123.0, 321.0, 94.0)
        np.testing.assert_array_equal(got[5], [11, 13, 16])


@covers("Enter", "Merge", "Switch", "LoopCond", "NextIteration", "Exit", "TensorArrayV3",
        "TensorArrayReadV3", "TensorArrayWriteV3", "TensorArrayScatterV3",
        "TensorArrayGatherV3")
def test_loops_run_on_a_virtual_gpu(runner):
    """The whole loop under tf.device: every node (Enters, Merges, the TensorArray ops) is
    placed on the runner's device and the results are the CPU's."""
    with runner.scope():
        n = tf.placeholder(tf.int32, [], name="n")
        i, x = tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 2.0), [0, 1.0])
        mapped = tf.map_fn(lambda v: v * v, tf.constant([1.0, 2.0, 3.0]))
    assert runner.run([i, x], {n: 3}) == [3, 8.0]
    np.testing.assert_array_equal(runner.run(mapped), [1.0, 4.0, 9.0])


def test_a_loop_on_an_untaken_branch_is_dead_and_runs_nothing():
    """TF's 'while loop on the untaken branch of a conditional': the dead Enter kills the
    loop's Merge, the dead Exits reach the outer Merge once the frame is done."""
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        n = tf.placeholder(tf.int32, [])
        v = tf.Variable(0.0)

        def looped():
            def body(i):
                with tf.control_dependencies([tf.assign_add(v, 1.0)]):
                    return i + 1
            return tf.while_loop(lambda i: i < n, body, [0])
        r = tf.cond(p, looped, lambda: tf.constant(-1))
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(r, {p: True, n: 4}) == 4
            assert sess.run(r, {p: False, n: 4}) == -1
            assert sess.run(v) == 4.0


def test_a_tensor_array_written_in_either_branch():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        ta = tf.TensorArray(tf.float32, 2)
        written = tf.cond(p, lambda: ta.write(0, 1.0).write(1, 2.0),
                          lambda: ta.write(0, 5.0).write(1, 6.0))
        assert isinstance(written, tf.TensorArray)
        stacked = written.stack()
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(stacked, {p: True}), [1.0, 2.0])
            np.testing.assert_array_equal(sess.run(stacked, {p: False}), [5.0, 6.0])


def test_concurrent_steps_of_one_loop_plan_keep_their_own_frames():
    import threading
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        v = tf.Variable(0.0)

        def body(i, total):
            with tf.control_dependencies([tf.assign_add(v, 1.0, use_locking=True)]):
                return i + 1, total + tf.cast(i, tf.float32)
        r = tf.while_loop(lambda i, total: i < n, body, [0, 0.0])
        results: dict = {}
        with tf.Session() as sess:
            sess.run(v.initializer)

            def steps(k):
                results[k] = {tuple(sess.run(r, {n: k})) for _ in range(15)}
            threads = [threading.Thread(target=steps, args=(k,)) for k in (3, 7, 11)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sess.run(v) == 15 * (3 + 7 + 11)
    assert results == {k: {(k, k * (k - 1) / 2)} for k in (3, 7, 11)}
