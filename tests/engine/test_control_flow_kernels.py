"""Kernels of the control-flow primitives and the TensorArray family, on CPU and on a virtual
GPU (the harness pins every op of the graph to the runner's device). Expected numbers are
what TensorFlow 2.21 (tf.compat.v1, control flow v1) gives for the same programs."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_harness import covers, mark_executed

import engine as tf
from engine.ops import control_flow_ops as cfo


@covers("Switch", "Merge")
def test_switch_routes_data_and_merge_takes_the_live_input(runner):
    with runner.scope():
        x = tf.placeholder(tf.float32, [2], name="x")
        p = tf.placeholder(tf.bool, [], name="p")
        out_false, out_true = cfo.switch(x, p)
        merged = cfo.merge([out_false * 2.0, out_true + 1.0])
    assert out_true.shape.as_list() == [2] and merged.value_index.shape.as_list() == []
    value, index = runner.run([merged.output, merged.value_index], {x: [1.0, 2.0], p: True})
    np.testing.assert_array_equal(value, [2.0, 3.0])
    assert index == 1
    value, index = runner.run([merged.output, merged.value_index], {x: [1.0, 2.0], p: False})
    np.testing.assert_array_equal(value, [2.0, 4.0])
    assert index == 0


@covers("Switch")
def test_fetching_the_untaken_switch_output_has_no_value(runner):
    """TF 2.21: InvalidArgumentError 'Retval[0] does not have value'; an op on the dead
    output, run as a target, runs nothing and returns None."""
    with runner.scope():
        x = tf.placeholder(tf.float32, [], name="x")
        p = tf.placeholder(tf.bool, [], name="p")
        out_false, out_true = cfo.switch(x, p)
        after = tf.add(out_true, 1.0, name="a")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Retval\[0\] does not have value"):
        runner.run(out_false, {x: 2.0, p: True})
    assert runner.run(after, {x: 2.0, p: True}) == 3.0
    assert runner.run([after.op], {x: 2.0, p: False}) == [None]


def test_switch_checks_its_predicate_at_build_and_run_time():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with pytest.raises(ValueError, match=r"Shape must be rank 0 but is rank 1 for 'Switch'"):
            cfo.switch(x, tf.placeholder(tf.bool, [2]))
        with pytest.raises(TypeError, match="Input 'pred' of 'Switch' Op has type float32"):
            cfo.switch(x, tf.placeholder(tf.float32, []))
        with pytest.raises(TypeError, match=r"have types \[float32, int32\] that don't all"):
            cfo.merge([x, tf.placeholder(tf.int32, [2])])
        assert cfo.merge([x, tf.placeholder(tf.float32, [3])]).output.shape.as_list() == [None]
        assert cfo.merge([x, tf.placeholder(tf.float32, [2, 2])]).output.shape.ndims is None
        unknown = tf.placeholder(tf.bool)
        switched = cfo.switch(x, unknown)[1]
        with tf.Session() as sess, pytest.raises(
                tf.errors.InvalidArgumentError,
                match=r"The second input must be a scalar, but it has shape \[2\]"):
            sess.run(switched, {x: [1.0, 2.0], unknown: [True, False]})


@covers("RefSwitch", "RefMerge", "Identity")
def test_ref_switch_and_ref_merge_forward_a_variable(runner):
    with runner.scope():
        v = tf.Variable(np.float32(3.0))
        p = tf.placeholder(tf.bool, [], name="p")
        out_false, out_true = cfo.switch(v._ref(), p)
        assert out_true.dtype == tf.float32._as_ref
        merged = cfo.merge([out_false, out_true])
        assert merged.output.op.type == "RefMerge"
        read = tf.identity(merged.output)
    runner.run(v.initializer)
    assert runner.run(read, {p: True}) == 3.0
    assert runner.run(read, {p: False}) == 3.0


def _count_loop():
    """i = 0; while i < n: i += 1, built from the primitives as TF's while_loop builds it."""
    n = tf.placeholder(tf.int32, [], name="n")
    entered = cfo.enter(tf.constant(0), "frame", use_input_shape=False)
    limit = cfo.enter(n, "frame", is_constant=True)
    merged = cfo.merge([entered, entered]).output
    go = cfo.loop_cond(tf.less(merged, limit))
    out_false, out_true = cfo.switch(merged, go)
    body = tf.identity(out_true)
    with tf.control_dependencies([body]):
        one = tf.constant(1, name="one")
    merged.op._update_input(1, cfo.next_iteration(body + one))
    return n, cfo.exit(out_false)


@covers("Enter", "Merge", "LoopCond", "Switch", "NextIteration", "Exit")
def test_a_loop_from_the_primitives_counts(runner):
    with runner.scope():
        n, out = _count_loop()
    assert runner.run(out, {n: 5}) == 5
    assert runner.run(out, {n: 0}) == 0


@covers("RefEnter", "RefExit", "RefNextIteration", "RefMerge")
def test_ref_twins_of_enter_exit_next_iteration_forward_refs(runner):
    """A variable's ref travels beside a counter through RefEnter, RefMerge,
    RefNextIteration (twice) and RefExit; a read of the loop's result sees the variable."""
    with runner.scope():
        v = tf.Variable(np.float32(7.0), name="v")
        n = tf.placeholder(tf.int32, [], name="n")
        entered = cfo.enter(v._ref(), "ref_frame")
        assert entered.op.type == "RefEnter" and entered.dtype.is_ref
        counter = cfo.enter(tf.constant(0), "ref_frame", use_input_shape=False)
        limit = cfo.enter(n, "ref_frame", is_constant=True)
        merged = cfo.merge([entered, entered]).output
        count = cfo.merge([counter, counter]).output
        assert merged.op.type == "RefMerge"
        go = cfo.loop_cond(tf.less(count, limit))
        ref_false, ref_true = cfo.switch(merged, go)
        count_false, count_true = cfo.switch(count, go)
        nxt = cfo.next_iteration(ref_true)
        assert nxt.op.type == "RefNextIteration"
        merged.op._update_input(1, nxt)
        with tf.control_dependencies([count_true]):
            one = tf.constant(1, name="one")
        count.op._update_input(1, cfo.next_iteration(count_true + one))
        result = cfo.exit(ref_false)
        assert result.op.type == "RefExit"
        read = tf.identity(result)
    runner.run(v.initializer)
    assert runner.run(read, {n: 2}) == 7.0


@covers("ControlTrigger")
def test_control_trigger_runs_even_when_its_control_input_is_dead(runner):
    with runner.scope():
        x = tf.placeholder(tf.float32, [], name="x")
        p = tf.placeholder(tf.bool, [], name="p")
        v = tf.Variable(np.float32(0.0))
        dead_or_alive = cfo.switch(x, p)[1]
        with tf.control_dependencies([dead_or_alive]):
            trigger = cfo.control_trigger()
        with tf.control_dependencies([trigger]):
            bump = tf.assign_add(v, 1.0)
    runner.run(v.initializer)
    runner.run(bump, {x: 1.0, p: False})
    assert runner.run(v.value()) == 1.0


@covers("Assert")
def test_assert_passes_or_fails_with_tf_text(runner):
    with runner.scope():
        x = tf.placeholder(tf.int32, [3], name="x")
        ok = tf.placeholder(tf.bool, [], name="ok")
        check = tf.Assert(ok, [x], summarize=2)
        with tf.control_dependencies([check]):
            y = tf.identity(x)
    np.testing.assert_array_equal(runner.run(y, {x: [1, 2, 3], ok: True}), [1, 2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"assertion failed: \[1 2\.\.\.\]"):
        runner.run(y, {x: [1, 2, 3], ok: False})
    mark_executed("Assert")


@covers("TensorArrayV3", "TensorArrayWriteV3", "TensorArrayGatherV3")
def test_tensor_array_write_then_stack(runner):
    """TF 2.21: writes of [1,2], [3,4], [5,6] stack to [[1,2],[3,4],[5,6]], size 3."""
    with runner.scope():
        ta = tf.TensorArray(tf.float32, size=3)
        ta = ta.write(0, [1.0, 2.0]).write(1, [3.0, 4.0]).write(2, [5.0, 6.0])
        stacked = ta.stack()
    assert stacked.shape.as_list() == [3, 2]
    np.testing.assert_array_equal(runner.run(stacked), [[1, 2], [3, 4], [5, 6]])


@covers("TensorArrayScatterV3", "TensorArrayReadV3", "TensorArrayConcatV3",
        "TensorArrayGatherV3")
def test_tensor_array_unstack_scatter_gather_read_concat(runner):
    """TF 2.21: unstack + gather([2, 0]) gives [[5,6],[1,2]]; scatter([2,0,1], [[1],[2],[3]])
    reads 2.0 at 0 and concatenates to [2,3,1]."""
    with runner.scope():
        unstacked = tf.TensorArray(tf.float32, size=3).unstack([[1.0, 2.0], [3.0, 4.0],
                                                               [5.0, 6.0]])
        gathered = unstacked.gather([2, 0])
        scattered = tf.TensorArray(tf.float32, size=3, clear_after_read=False).scatter(
            [2, 0, 1], [[1.0], [2.0], [3.0]])
        first, joined = scattered.read(0), scattered.concat()
    np.testing.assert_array_equal(runner.run(gathered), [[5, 6], [1, 2]])
    got_first, got_joined = runner.run([first, joined])
    np.testing.assert_array_equal(got_first, [2.0])
    np.testing.assert_array_equal(got_joined, [2.0, 3.0, 1.0])


@covers("TensorArraySplitV3", "TensorArraySizeV3", "TensorArrayCloseV3")
def test_tensor_array_split_size_close(runner):
    """TF 2.21: split([1..6], [1, 2, 3]) (infer_shape=False) reads [2,3] and [4,5,6]."""
    with runner.scope():
        ta = tf.TensorArray(tf.float32, size=3, infer_shape=False, dynamic_size=True)
        ta = ta.split([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1, 2, 3])
        second, third, size = ta.read(1), ta.read(2), ta.size()
        with tf.control_dependencies([second, third]):
            closed = ta.close()
    got = runner.run([second, third, size])
    np.testing.assert_array_equal(got[0], [2.0, 3.0])
    np.testing.assert_array_equal(got[1], [4.0, 5.0, 6.0])
    assert got[2] == 3
    assert size.dtype == tf.int32
    runner.run(closed)


def test_tensor_array_errors_use_tf_text():
    with tf.Graph().as_default(), tf.Session() as sess:
        twice = tf.TensorArray(tf.float32, size=2).write(0, 1.0).write(0, 2.0)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Could not write to TensorArray index 0 because it has "
                                 "already been written to."):
            sess.run(twice.stack())
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Tried to write to index 5 but array is not resizeable and "
                                 "size is: 2"):
            sess.run(tf.TensorArray(tf.float32, size=2).write(5, 1.0).flow)
        once = tf.TensorArray(tf.float32, size=2).write(0, 1.0)
        first = once.read(0)
        with tf.control_dependencies([first]):
            again = once.read(0)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Could not read index 0 twice because it was cleared after a "
                                 "previous read"):
            sess.run(again)
        ragged = tf.TensorArray(tf.float32, size=3).split([1.0, 2.0, 3.0], [1, 2, 0])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"value shape is \[2\] which is incompatible with the "
                                 r"TensorArray's inferred element shape: \[1\]"):
            sess.run(ragged.flow)
        with pytest.raises(ValueError, match="TensorArray dtype is float32 but Op is trying to "
                                             "write dtype int32"):
            tf.TensorArray(tf.float32, size=1).write(0, tf.constant(1))
