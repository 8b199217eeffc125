"""TF1 ref-variable semantics: updates write into the variable's buffer, so reads that run
after an update (ordered by control dependencies, or fetched in the same step) see it, on
one device and across devices. Expected numbers are real TensorFlow's (tensorflow-cpu 2.21,
tf.compat.v1 with v2 behaviour disabled), as cited beside each test."""

import numpy as np
import pytest
import torch

import engine as tf
from engine import errors
from engine.kernels.state import VariableSlot

TWO_CPUS = {"CPU": 2}


@pytest.fixture
def g():
    graph = tf.Graph()
    with graph.as_default():
        yield graph


def _session(devices: str) -> tf.Session:
    if devices == "two_cpus":
        return tf.Session(config=tf.ConfigProto(device_count=TWO_CPUS))
    return tf.Session(config=tf.ConfigProto(virtual_gpus=1))


def test_read_after_update_through_control_dependency(g):
    # TF: 10.0 then 20.0 (the Identity runs after the update and reads the updated buffer).
    v = tf.Variable(0.0, name="v")
    with tf.control_dependencies([tf.assign_add(v, 5.0)]):
        out = tf.identity(v) * 2
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert [sess.run(out), sess.run(out)] == [10.0, 20.0]


def test_update_and_read_fetched_together_both_show_the_update(g):
    # TF: [11.0, 11.0] then [12.0, 12.0] (after two runs of the 5.0 update).
    v = tf.Variable(10.0, name="v")
    inc = tf.assign_add(v, 1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run([inc, v]) == [11.0, 11.0]
        assert sess.run([v, inc]) == [12.0, 12.0]


def test_optimizer_step_and_weights_fetched_together(g):
    # TF: [None, [0.5, 1.0]], then [0.25, 0.5], then [0.125, 0.25].
    w = tf.Variable([1.0, 2.0], name="w")
    train = tf.train.GradientDescentOptimizer(0.25).minimize(tf.reduce_sum(w * w))
    with tf.Session() as sess:
        sess.run(w.initializer)
        seen = [sess.run([train, w])[1].tolist() for _ in range(3)]
    assert seen == [[0.5, 1.0], [0.25, 0.5], [0.125, 0.25]]


def test_read_value_after_update_and_the_const_it_started_from(g):
    # TF: [[2, 3], [1, 2]], then v = [2, 3]; then [[3, 4], [3, 4]].
    c = tf.constant([1.0, 2.0], name="c")
    v = tf.Variable(c, name="v")
    inc = tf.assign_add(v, [1.0, 1.0])
    with tf.control_dependencies([inc]):
        r = v.read_value()
    with tf.Session() as sess:
        sess.run(v.initializer)
        got_r, got_c = sess.run([r, c])
        assert (got_r.tolist(), got_c.tolist()) == ([2.0, 3.0], [1.0, 2.0])
        assert sess.run(v).tolist() == [2.0, 3.0]
        assert [a.tolist() for a in sess.run([r, v])] == [[3.0, 4.0], [3.0, 4.0]]


def test_a_variable_never_aliases_its_feed_or_the_arrays_it_returned(g):
    # TF: the fed array stays [5, 6] while v moves to [6, 7]; a fetched [3, 4] stays.
    v = tf.Variable([1.0, 2.0], name="v")
    ph = tf.placeholder(tf.float32, [2], name="ph")
    assign = tf.assign(v, ph)
    inc = tf.assign_add(v, [1.0, 1.0])
    fed = np.array([5.0, 6.0], np.float32)
    with tf.Session() as sess:
        sess.run(assign, {ph: fed})
        before = sess.run(v)
        sess.run(inc)
        assert fed.tolist() == [5.0, 6.0] and before.tolist() == [5.0, 6.0]
        assert sess.run(v).tolist() == [6.0, 7.0]


def test_two_variables_initialised_from_one_const_stay_apart(g):
    c = tf.constant([1.0, 2.0], name="c")
    a = tf.Variable(c, name="a")
    b = tf.Variable(c, name="b")
    bump = tf.assign_add(a, [10.0, 10.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(bump)
        assert sess.run(b).tolist() == [1.0, 2.0] and sess.run(c).tolist() == [1.0, 2.0]
        sess.run(tf.assign(b, a))   # copies a's values: a later update of a leaves b alone
        sess.run(bump)
        assert sess.run([a, b])[1].tolist() == [11.0, 12.0]


def test_updates_write_into_the_same_buffer(g):
    v = tf.Variable([1.0, 2.0], name="v")
    ops = [tf.assign(v, [3.0, 4.0]), tf.assign_add(v, [1.0, 1.0]),
           tf.assign_sub(v, [0.5, 0.5]),
           tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(v * v))]
    with tf.Session() as sess:
        sess.run(v.initializer)
        slot, = sess._variables.slots()
        buffer = slot.read()
        for op in ops:
            sess.run(op)
            assert slot.read() is buffer
        # 3,4 -> 4,5 -> 3.5,4.5 -> minus 0.5 * 2v = 0, 0
        assert buffer.tolist() == [0.0, 0.0]


def test_slot_updates_from_views_of_its_own_buffer():
    slot = VariableSlot("w", "cpu", tf.float32, tf.TensorShape([2, 2]))
    slot.assign(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    buffer = slot.read()
    slot.assign(buffer.t())
    assert buffer.tolist() == [[1.0, 3.0], [2.0, 4.0]] and slot.read() is buffer
    slot.assign(buffer)
    assert buffer.tolist() == [[1.0, 3.0], [2.0, 4.0]]


def test_assign_from_a_view_of_itself(g):
    # TF: [[1, 3], [2, 4]], then [[2, 5], [5, 8]].
    if not hasattr(tf, "transpose"):
        pytest.skip("tf.transpose comes with the array-ops family")
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(tf.assign(w, tf.transpose(w))).tolist() == [[1.0, 3.0], [2.0, 4.0]]
        assert sess.run(tf.assign_add(w, tf.transpose(w))).tolist() == [[2.0, 5.0],
                                                                         [5.0, 8.0]]


def test_assign_without_shape_validation_replaces_the_buffer(g):
    # TF: [1, 2, 3].
    v = tf.Variable([1.0, 2.0], name="v")
    grow = tf.assign(v, [1.0, 2.0, 3.0], validate_shape=False)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(grow).tolist() == [1.0, 2.0, 3.0]
        assert sess.run(v).tolist() == [1.0, 2.0, 3.0]


def test_update_of_another_size_at_run_time_is_refused(g):
    v = tf.Variable([1.0, 2.0], name="v")
    delta = tf.placeholder(tf.float32, [None], name="delta")
    inc = tf.assign_add(v, delta, name="inc")
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"Parameters and update must be the same size[\s\S]*node inc"):
            sess.run(inc, {delta: [1.0, 2.0, 3.0]})
        assert sess.run(v).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("devices", ["virtual_gpu", "two_cpus"])
@pytest.mark.parametrize("variable_on", ["other", "cpu0"])
def test_read_after_update_across_devices(g, devices, variable_on):
    # TF with device_count={'CPU': 2}, the variable on /cpu:1 read on /cpu:0 and the other
    # way round: 10.0, 20.0, then [11.0, 11.0].
    other = "/gpu:0" if devices == "virtual_gpu" else "/cpu:1"
    var_device, read_device = (other, "/cpu:0") if variable_on == "other" else \
        ("/cpu:0", other)
    with tf.device(var_device):
        v = tf.Variable(0.0, name="v")
        add = tf.assign_add(v, 5.0)
    with tf.device(read_device):
        with tf.control_dependencies([add]):
            out = tf.identity(v) * 2
    inc = tf.assign_add(v, 1.0)
    with _session(devices) as sess:
        sess.run(v.initializer)
        assert [sess.run(out), sess.run(out)] == [10.0, 20.0]
        assert sess.run([inc, v]) == [11.0, 11.0]
        cuts = {(e.src_device[-5:], e.dst_device[-5:])
                for p in sess._plans.values() for e in p.result.cut_edges}
    assert cuts, "the read must cross devices"


def test_two_cpu_devices_from_device_count(g):
    with tf.device("/cpu:1"):
        x = tf.constant(2.0, name="x") * 3.0
    with tf.Session(config=tf.ConfigProto(device_count=TWO_CPUS)) as sess:
        assert [d.name[-5:] for d in sess.list_devices()] == ["CPU:0", "CPU:1"]
        assert sess.run(x) == 6.0
        assert sess.placement.device_of(x.op.name).endswith("CPU:1")


def test_slot_assign_keeps_the_buffers_dtype_and_device():
    slot = VariableSlot("v", "cpu", tf.float32, tf.TensorShape(None))
    slot.assign(torch.tensor([1.0, 2.0]))
    buffer = slot.read()
    slot.assign(torch.tensor([3.0, 4.0], dtype=torch.float64))
    assert slot.read() is buffer and buffer.dtype == torch.float32
    assert buffer.tolist() == [3.0, 4.0]
    slot.assign(torch.tensor([5.0, 6.0, 7.0], dtype=torch.float64))   # a new shape
    assert slot.read().dtype == torch.float32 and slot.read().tolist() == [5.0, 6.0, 7.0]
