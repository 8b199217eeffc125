"""Placement against TF_BEHAVIOUR section 2: preference order, explicit specs, colocation,
the generator and metadata heuristics, soft placement, the log format and the errors."""

import pytest

import engine as tf
from engine import errors
from engine.devices import discover_devices
from engine.passes.place import place
from engine.record.schema import COLOCATED, CONSUMERS, DEFAULT, EXPLICIT, PREASSIGNED, SOFT_FALLBACK

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"


@pytest.fixture
def g():
    graph = tf.Graph()
    with graph.as_default():
        yield graph


def placed(graph, gpus=2, soft=False, previous=None):
    return place(graph.as_graph_def(), discover_devices(gpus), soft, previous)


def test_example1_log_lines(capsys):
    g = tf.Graph()
    with g.as_default():
        a = tf.constant([1.0, 2.0, 3.0], shape=[3], name="a")
        b = tf.constant([1.0, 2.0, 3.0], shape=[3], name="b")
        c = a + b
        with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
            out = sess.run(c)
    assert out.tolist() == [2.0, 4.0, 6.0]
    lines = capsys.readouterr().out.splitlines()
    assert f"add: (Add): {CPU0}" in lines
    assert f"a: (Const): {CPU0}" in lines and f"b: (Const): {CPU0}" in lines
    # Non-generators are placed (and logged) before generators (rule 2.7).
    assert lines.index(f"add: (Add): {CPU0}") < lines.index(f"a: (Const): {CPU0}")


def test_unconstrained_float_op_prefers_first_gpu(g):
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.negative(x, name="y")
    p = placed(g)
    assert p.device_of("y") == GPU0
    assert p.decisions["y"].reason == DEFAULT
    # The placeholder (a generator) follows its only consumer.
    assert p.device_of("x") == GPU0 and p.decisions["x"].reason == CONSUMERS
    del y


def test_without_gpus_everything_is_on_cpu(g):
    tf.negative(tf.placeholder(tf.float32, [2]))
    assert set(placed(g, gpus=0).as_dict().values()) == {CPU0}


def test_explicit_specs_are_honoured(g):
    with tf.device("/cpu:0"):
        a = tf.constant(1.0, name="a")
    with tf.device("/gpu:1"):
        tf.identity(a, name="b")
    p = placed(g)
    assert p.device_of("a") == CPU0 and p.decisions["a"].reason == EXPLICIT
    assert p.device_of("b") == GPU1 and p.decisions["b"].reason == EXPLICIT
    assert p.decisions["b"].log_line == f"b: (Identity): {GPU1}"


def test_partial_spec_fills_in_best_device(g):
    with tf.device("/job:localhost"):
        tf.negative(tf.constant(1.0), name="n")
    assert placed(g).device_of("n") == GPU0


def test_variable_is_colocated_with_assign_and_read(g):
    with tf.device("/gpu:1"):
        v = tf.Variable([1.0], name="v")
    with tf.device("/cpu:0"):
        tf.assign_add(v, [2.0], name="bump")   # ref input: pinned with the variable (rule 2.4)
    p = placed(g)
    for name in ("v", "v/Assign", "v/read", "bump"):
        assert p.device_of(name) == GPU1, name
    assert any("Ignoring device specification /device:CPU:0 for node 'bump'" in note
               for note in p.notes)


def test_colocated_group_without_spec_is_reported_as_colocated(g):
    tf.Variable([1.0], name="v")
    p = placed(g)
    assert p.device_of("v") == p.device_of("v/read") == GPU0
    assert p.decisions["v/read"].reason == COLOCATED
    assert "v" in p.decisions["v/read"].detail


def test_int32_variable_has_no_gpu_kernel_so_default_is_cpu(g):
    tf.Variable(3, name="counter")
    p = placed(g)
    assert p.device_of("counter") == CPU0
    assert p.device_of("counter/read") == CPU0


def test_example3_error_without_soft_placement(g):
    with tf.device("/gpu:0"):
        tf.Variable(5, name="v")
    with pytest.raises(errors.InvalidArgumentError) as info:
        placed(g, gpus=1)
    text = str(info.value)
    assert text.startswith("Cannot assign a device for operation v: Could not satisfy explicit "
                           "device specification '/device:GPU:0' because no supported kernel "
                           "for GPU devices is available.")
    assert "Colocation members and user-requested devices:" in text
    for member in ("v (VariableV2) /device:GPU:0", "v/Assign (Assign) /device:GPU:0",
                   "v/read (Identity) /device:GPU:0"):
        assert member in text
    assert "device='GPU'; dtype in [DT_HALF, DT_FLOAT, DT_DOUBLE, DT_INT64]" in text
    assert "[[node v (defined at" in text


def test_example3_soft_placement_moves_group_to_cpu(g, capsys):
    with tf.device("/gpu:0"):
        v = tf.Variable(5, name="v")
    config = tf.ConfigProto(log_device_placement=True, allow_soft_placement=True, virtual_gpus=1)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(v) == 5
        decisions = sess.placement.decisions
    out = capsys.readouterr().out
    for name, op in (("v", "VariableV2"), ("v/Assign", "Assign"), ("v/read", "Identity")):
        assert f"{name}: ({op}): {CPU0}" in out
        assert decisions[name].reason == SOFT_FALLBACK
        assert "no GPU kernel for VariableV2 with dtype=int32" in decisions[name].detail


def test_unknown_device_error_lists_available_devices(g):
    with tf.device("/gpu:3"):
        tf.negative(tf.constant(1.0), name="n")
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Operation was explicitly assigned to /device:GPU:3 but available "
                             r"devices are \[ /job:localhost/replica:0/task:0/device:CPU:0, "
                             r"/job:localhost/replica:0/task:0/device:GPU:0, "
                             r"/job:localhost/replica:0/task:0/device:GPU:1 \]"):
        placed(g)


def test_soft_placement_for_missing_device_takes_best_of_task(g):
    with tf.device("/gpu:3"):
        tf.negative(tf.constant(1.0), name="n")
    p = placed(g, soft=True)
    assert p.device_of("n") == GPU0
    assert p.decisions["n"].reason == SOFT_FALLBACK
    assert "no such device" in p.decisions["n"].detail


def test_incompatible_colocation_ids(g):
    with tf.device("/gpu:0"):
        a = tf.constant(1.0, name="a")
    with tf.colocate_with(a.op):
        b = tf.identity(a, name="b")
    b.op.device = "/device:GPU:1"
    with pytest.raises(errors.InvalidArgumentError,
                       match="Cannot colocate nodes a and b: Cannot merge devices with "
                             "incompatible ids"):
        placed(g)
    p = placed(g, soft=True)
    assert p.device_of("a") == p.device_of("b") == GPU0


def test_malformed_spec_in_graph_is_invalid_argument(g):
    op = tf.negative(tf.constant(1.0), name="n").op
    op.device = "/gpu:banana"
    with pytest.raises(errors.InvalidArgumentError, match="Malformed device specification "
                                                          "'/gpu:banana'"):
        placed(g)


def test_shape_op_follows_its_input(g):
    with tf.device("/gpu:1"):
        x = tf.negative(tf.constant([1.0, 2.0]), name="x")
    tf.shape(x, name="s")
    p = placed(g)
    assert p.device_of("s") == GPU1


def test_previous_assignments_are_kept(g):
    v = tf.Variable([1.0], name="v")
    first = placed(g)
    with tf.device("/gpu:1"):
        tf.identity(v, name="late")
    second = placed(g, previous=first.as_dict())
    assert second.device_of("v") == first.device_of("v")
    assert second.decisions["v"].reason == PREASSIGNED
    assert second.device_of("late") == GPU1


def test_device_mapping_printed_with_virtual_gpus(capsys):
    with tf.Session(graph=tf.Graph(),
                    config=tf.ConfigProto(log_device_placement=True, virtual_gpus=2)):
        pass
    out = capsys.readouterr().out
    assert out.startswith("Device mapping:\n")
    assert f"{GPU1} -> device: 1, name: virtual GPU (host memory)" in out
