"""tf.cond and tf.case: the graph TF1 builds (names, pivots, Switches), that only the taken
branch runs, nesting, and TF's build-time errors. Expected values are what TensorFlow 2.21
(tf.compat.v1, control flow v1) gives for the same programs."""

from __future__ import annotations

import pytest

import engine as tf


def _node_lines(graph) -> list[str]:
    lines = []
    for op in graph.get_operations():
        inputs = [t.name for t in op.inputs] + ["^" + c.name for c in op.control_inputs]
        lines.append(f"{op.name} = {op.type}({', '.join(inputs)})")
    return lines


def test_cond_builds_tf1_graph():
    """The node list TF 2.21 gives for tf.cond(p, lambda: x + y, lambda: x * 2.0) (its Add is
    AddV2): a Switch per outside tensor per branch, colocated with that tensor; constants
    hang off the branch pivot."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        p = tf.placeholder(tf.bool, [], name="p")
        y = tf.constant(3.0, name="y")
        r = tf.cond(p, lambda: x + y, lambda: x * 2.0)
    assert r.name == "cond/Merge:0" and r.shape.as_list() == []
    assert _node_lines(g)[3:] == [
        "cond/Switch = Switch(p:0, p:0)",
        "cond/switch_t = Identity(cond/Switch:1)",
        "cond/switch_f = Identity(cond/Switch:0)",
        "cond/pred_id = Identity(p:0)",
        "cond/add = Add(cond/add/Switch:1, cond/add/Switch_1:1)",
        "cond/add/Switch = Switch(x:0, cond/pred_id:0)",
        "cond/add/Switch_1 = Switch(y:0, cond/pred_id:0)",
        "cond/mul/y = Const(^cond/switch_f)",
        "cond/mul = Mul(cond/mul/Switch:0, cond/mul/y:0)",
        "cond/mul/Switch = Switch(x:0, cond/pred_id:0)",
        "cond/Merge = Merge(cond/mul:0, cond/add:0)",
    ]
    assert g.get_operation_by_name("cond/add/Switch").attrs["_class"] == ["loc:@x"]
    with tf.Session(graph=g) as sess:
        assert sess.run(r, {x: 2.0, p: True}) == 5.0
        assert sess.run(r, {x: 2.0, p: False}) == 4.0


def test_untaken_branch_runs_no_ops_not_even_stateful_ones():
    """TF 2.21: with p=True then p=False, v goes 0 -> 1 -> 11; the result is a RefMerge of
    the two updates' refs (float32_ref), each update fed its variable through a RefSwitch."""
    with tf.Graph().as_default():
        v = tf.Variable(0.0)
        p = tf.placeholder(tf.bool, [])
        r = tf.cond(p, lambda: tf.assign_add(v, 1.0), lambda: tf.assign_add(v, 10.0))
        assert r.op.type == "RefMerge" and r.dtype == tf.float32._as_ref
        switch = tf.get_default_graph().get_operation_by_name("cond/AssignAdd/Switch")
        assert switch.type == "RefSwitch" and switch.outputs[1].dtype == tf.float32._as_ref
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(r, {p: True}) == 1.0
            assert sess.run(r, {p: False}) == 11.0
            assert sess.run(v) == 11.0


def test_an_op_made_outside_the_branches_always_runs():
    """TF's documented warning: an op built before the cond that one branch uses runs
    whichever branch is taken (TF 2.21: the false branch gives -1.0 and v is 1.0)."""
    with tf.Graph().as_default():
        v = tf.Variable(0.0)
        p = tf.placeholder(tf.bool, [])
        outside = tf.assign_add(v, 1.0)
        r = tf.cond(p, lambda: outside + 0.0, lambda: tf.constant(-1.0))
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(r, {p: False}) == -1.0
            assert sess.run(v) == 1.0


def test_nested_conds():
    """TF 2.21: x in (1, 3, 7) gives (0, 30, 700)."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        r = tf.cond(x > 2.0, lambda: tf.cond(x > 5.0, lambda: x * 100.0, lambda: x * 10.0),
                    lambda: x - 1.0)
        inner = tf.get_default_graph().get_operation_by_name("cond/cond/Merge")
        assert inner.type == "Merge"
        with tf.Session() as sess:
            assert [sess.run(r, {x: a}) for a in (1.0, 3.0, 7.0)] == [0.0, 30.0, 700.0]


def test_cond_returns_structures_and_unpacks_singletons():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        pair = tf.cond(p, lambda: {"a": tf.constant(1), "b": (tf.constant(2.0),)},
                       lambda: {"a": tf.constant(3), "b": (tf.constant(4.0),)})
        single = tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)])
        strict = tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)], strict=True)
        passthrough = tf.cond(p, lambda: p, lambda: tf.logical_not(p))
        assert isinstance(single, tf.Tensor) and isinstance(strict, list)
        with tf.Session() as sess:
            assert sess.run(pair, {p: False}) == {"a": 3, "b": (4.0,)}
            assert sess.run([single, strict[0]], {p: True}) == [1, 1]
            assert sess.run(passthrough, {p: True}) and sess.run(passthrough, {p: False})


def test_cond_with_an_operation_result_runs_it_in_the_taken_branch():
    with tf.Graph().as_default():
        v = tf.Variable(0.0)
        p = tf.placeholder(tf.bool, [])
        r = tf.cond(p, lambda: tf.group(tf.assign_add(v, 5.0)), lambda: tf.no_op())
        with tf.Session() as sess:
            sess.run(v.initializer)
            sess.run(r, {p: True})
            sess.run(r, {p: False})
            assert sess.run(v) == 5.0


def test_cond_build_errors_are_tfs():
    with tf.Graph().as_default():
        p = tf.constant(True)
        with pytest.raises(TypeError, match="'pred' must not be a Python bool."):
            tf.cond(True, lambda: 1.0, lambda: 2.0)
        with pytest.raises(ValueError, match="Outputs of 'true_fn' and 'false_fn' must have the "
                                             "same type\\(s\\). Received float32 from 'true_fn' "
                                             "and int32 from 'false_fn'."):
            tf.cond(p, lambda: 1.0, lambda: 1)
        with pytest.raises(ValueError, match="The two structures don't have the same nested "
                                             "structure."):
            tf.cond(p, lambda: (1.0, 2.0), lambda: 1.0)
        with pytest.raises(ValueError, match="'true_fn' must have a return value."):
            tf.cond(p, lambda: None, lambda: 1.0)
        with pytest.raises(TypeError, match="'false_fn' must be callable."):
            tf.cond(p, lambda: 1.0, 2.0)


def test_case_picks_the_first_true_predicate():
    """TF 2.21: x in (-5, 0.5, 3) gives (-1, 0, 1); with no default and no true predicate
    the Assert fails with 'Input error: None of conditions evaluated as True:' and the
    predicates [0 0]; exclusive=True with two true predicates fails likewise."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        r = tf.case([(x < 0.0, lambda: -1.0), (x < 1.0, lambda: 0.0)], default=lambda: 1.0)
        no_default = tf.case([(x < 0.0, lambda: tf.constant(-1.0)),
                              (x < 1.0, lambda: tf.constant(0.0))])
        exclusive = tf.case([(x < 0.0, lambda: -1.0), (x < 1.0, lambda: 0.0)],
                            default=lambda: 2.0, exclusive=True)
        with tf.Session() as sess:
            assert [sess.run(r, {x: a}) for a in (-5.0, 0.5, 3.0)] == [-1.0, 0.0, 1.0]
            assert sess.run(no_default, {x: 0.5}) == 0.0
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"assertion failed: \[Input error: None of conditions "
                                     r"evaluated as True:\] \[0 0\]"):
                sess.run(no_default, {x: 3.0})
            assert sess.run(exclusive, {x: 0.5}) == 0.0
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"assertion failed: \[Input error: exclusive=True: more "
                                     r"than 1 conditions \(Less(_\d+)?:0, Less(_\d+)?:0\) "
                                     r"evaluated as True:\] \[1 1\]"):
                sess.run(exclusive, {x: -3.0})
        with pytest.raises(TypeError, match="must be a 2-tuple"):
            tf.case([x < 0.0], default=lambda: 1.0)


def test_cond_across_devices_sends_dead_tensors():
    """The predicate on CPU, each branch on its own virtual GPU: the untaken branch's
    partition receives dead values and runs nothing; the Merge on CPU takes the live one."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        p = tf.placeholder(tf.bool, [], name="p")

        def on(device, fn):
            def branch():
                with tf.device(device):
                    return fn()
            return branch
        r = tf.cond(p, on("/gpu:0", lambda: x * 3.0), on("/gpu:1", lambda: x - 3.0))
        with tf.Session(config=tf.ConfigProto(virtual_gpus=2)) as sess:
            metadata = tf.RunMetadata()
            assert sess.run(r, {x: 5.0, p: True}, options=tf.RunOptions(trace_level=3),
                            run_metadata=metadata) == 15.0
            ran = {ns.node_name for d in metadata.step_stats.dev_stats for ns in d.node_stats}
            assert "cond/mul" in ran and "cond/sub" not in ran
            assert sess.run(r, {x: 5.0, p: False}) == 2.0
            kinds = sorted(part.kind for part in next(iter(sess._plans.values())).partitions)
            assert kinds == ["dynamic", "dynamic", "dynamic"]
