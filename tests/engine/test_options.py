"""No option silently ignored: every ConfigProto, GPUOptions and RunOptions field is honoured
(a test below shows each at work) or refused with a message naming it; step deadlines
(DeadlineExceededError, and the failed step lets go of what it held); the inter-op gate;
torch's intra-op threads; the GPU memory cap; OOM as ResourceExhaustedError; and
tf.gradients' aggregation_method."""

import gc
import itertools
import weakref
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import engine as tf
from engine import errors
from engine.kernels import registry
from engine.runtime import rendezvous
from engine.runtime.config import _fields
from engine.runtime.executor import OOM_HINT
from engine.runtime.rendezvous import Deadline, Gate, Rendezvous

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"

# TensorFlow's fields, as tensorflow-cpu 2.21 lists them (tf.ConfigProto.DESCRIPTOR.fields).
TF_CONFIG_FIELDS = (
    "device_count", "intra_op_parallelism_threads", "inter_op_parallelism_threads",
    "use_per_session_threads", "session_inter_op_thread_pool", "placement_period",
    "device_filters", "gpu_options", "pluggable_device_options", "allow_soft_placement",
    "log_device_placement", "graph_options", "operation_timeout_in_ms", "rpc_options",
    "cluster_def", "isolate_session_state", "share_cluster_devices_in_session", "experimental")
TF_GPU_FIELDS = (
    "per_process_gpu_memory_fraction", "allow_growth", "allocator_type",
    "deferred_deletion_bytes", "visible_device_list", "polling_active_delay_usecs",
    "polling_inactive_delay_msecs", "force_gpu_compatible", "experimental")
TF_RUN_FIELDS = (
    "trace_level", "timeout_in_ms", "inter_op_thread_pool", "output_partition_graphs",
    "debug_options", "report_tensor_allocations_upon_oom", "experimental")

# Each accepted field and where it is shown at work.
HONOURED = {
    "ConfigProto": {
        "log_device_placement": "test_log_device_placement_prints_the_mapping_and_decisions",
        "allow_soft_placement": "test_allow_soft_placement_falls_back_to_the_cpu",
        "virtual_gpus": "test_virtual_gpus_and_trace_every_n_steps",
        "device_count": "test_devices.py::test_device_count_hides_caps_and_multiplies",
        "inter_op_parallelism_threads": "test_inter_op_threads_gate_the_partitions",
        "intra_op_parallelism_threads": "test_intra_op_threads_set_torch_threads_while_open",
        "gpu_options": "test_gpu_memory_fraction_caps_each_cuda_device",
        "operation_timeout_in_ms": "test_operation_timeout_is_the_default_deadline",
        "trace_every_n_steps": "test_virtual_gpus_and_trace_every_n_steps",
        # Added by the NaN/Inf work (ConfigProto(check_numerics=True)); tested there.
        "check_numerics": "the check_numerics tests",
    },
    "GPUOptions": {
        "allow_growth": "test_gpu_options_are_validated_and_assignable",
        "per_process_gpu_memory_fraction": "test_gpu_memory_fraction_caps_each_cuda_device",
        "visible_device_list":
            "test_devices.py::test_visible_device_list_picks_and_orders_cuda_devices",
    },
    "RunOptions": {
        "trace_level": "test_trace_level_fills_step_stats",
        "timeout_in_ms": "test_deadline_stops_the_step_at_the_next_op",
        "output_partition_graphs": "test_trace_level_fills_step_stats",
        "report_tensor_allocations_upon_oom": "test_oom_report_lists_the_devices_variables",
    },
}


@pytest.fixture
def g():
    graph = tf.Graph()
    with graph.as_default():
        yield graph


# ---- every field: honoured or refused by name ----

@pytest.mark.parametrize("cls, tf_fields", [
    (tf.ConfigProto, TF_CONFIG_FIELDS), (tf.GPUOptions, TF_GPU_FIELDS),
    (tf.RunOptions, TF_RUN_FIELDS)], ids=["ConfigProto", "GPUOptions", "RunOptions"])
def test_every_field_is_honoured_or_refused_by_name(cls, tf_fields):
    honoured = HONOURED[cls.__name__]
    assert set(_fields(cls)) <= set(honoured), "an accepted field without a test"
    for name in tf_fields:
        if name in honoured:
            assert name in _fields(cls)
            continue
        with pytest.raises(ValueError, match=rf"{cls.__name__}\.{name} is a TensorFlow field "
                                             r"this engine does not support"):
            cls(**{name: 1})
        with pytest.raises(AttributeError, match=rf"{cls.__name__}\.{name} is a TensorFlow "
                                                 "field"):
            setattr(cls(), name, 1)


def test_every_honoured_field_names_a_test_that_exists():
    here = Path(__file__).parent
    for where in (w for fields in HONOURED.values() for w in fields.values()):
        if not where.startswith("test_"):
            continue        # tested by another family's module
        module, _, name = where.rpartition("::")
        text = (here / module).read_text() if module else Path(__file__).read_text()
        assert f"def {name}(" in text, where


def test_unknown_fields_are_refused_as_protobuf_does():
    with pytest.raises(ValueError, match='Protocol message ConfigProto has no "foo" field'):
        tf.ConfigProto(foo=1)
    config = tf.ConfigProto()
    with pytest.raises(AttributeError, match='Protocol message ConfigProto has no "foo" field'):
        config.foo = 1
    with pytest.raises(AttributeError, match='Protocol message RunOptions has no "trace"'):
        tf.RunOptions().trace = 3


@pytest.mark.parametrize("make, exc, match", [
    (lambda: tf.ConfigProto(inter_op_parallelism_threads=-1), ValueError,
     r"inter_op_parallelism_threads < 0 \(run every op in the caller's thread\)"),
    (lambda: tf.ConfigProto(intra_op_parallelism_threads=-2), ValueError,
     r"intra_op_parallelism_threads must be >= 0"),
    (lambda: tf.ConfigProto(intra_op_parallelism_threads="4"), TypeError,
     r"intra_op_parallelism_threads must be an int"),
    (lambda: tf.ConfigProto(operation_timeout_in_ms=-1), ValueError,
     r"operation_timeout_in_ms must be >= 0"),
    (lambda: tf.ConfigProto(trace_every_n_steps=-1), ValueError, r"trace_every_n_steps"),
    (lambda: tf.ConfigProto(gpu_options={"allow_growth": True}), TypeError,
     r"gpu_options must be a GPUOptions"),
    (lambda: tf.ConfigProto(device_count=[("GPU", 0)]), TypeError, r"device_count must be"),
    (lambda: tf.RunOptions(timeout_in_ms=-5), ValueError, r"timeout_in_ms must be >= 0"),
    (lambda: tf.RunOptions(trace_level=7), ValueError, r"trace_level must be one of"),
])
def test_bad_values_name_the_field(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


# ---- ConfigProto ----

def test_log_device_placement_prints_the_mapping_and_decisions(g, capsys):
    tf.constant(1.0, name="one") * 2.0
    config = tf.ConfigProto(log_device_placement=True, virtual_gpus=1)
    with tf.Session(config=config) as sess:
        sess.run("mul:0")
    out = capsys.readouterr().out
    assert out.startswith("Device mapping:\n")
    assert "one: (Const): /job:localhost/replica:0/task:0/device:GPU:0" in out


def test_allow_soft_placement_falls_back_to_the_cpu(g):
    with tf.device("/gpu:0"):
        y = tf.constant([1.0]) * 2.0
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Cannot assign a device"):
            sess.run(y)
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        assert sess.run(y).tolist() == [2.0]
        assert sess.placement.device_of(y.op.name) == CPU0


def test_virtual_gpus_and_trace_every_n_steps(g, tmp_path):
    from engine.record import RunReader
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.device("/gpu:1"):
        y = x * 3.0
    config = tf.ConfigProto(virtual_gpus=2, trace_every_n_steps=3)
    with tf.Session(config=config, logdir=str(tmp_path), run_name="r") as sess:
        assert [d.name[-5:] for d in sess.list_devices()] == ["CPU:0", "GPU:0", "GPU:1"]
        for step in range(1, 8):
            trace = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE) if step == 5 else None
            sess.run(y, {x: [1.0, 2.0]}, options=trace)
    reader = RunReader(tmp_path / "r")
    traced = [s.step for s in reader.steps() if reader.step_stats(s.step)]
    assert traced == [1, 4, 5, 7]   # every 3rd from the first, and the one RunOptions asked
    with tf.Session(config=tf.ConfigProto(virtual_gpus=2, trace_every_n_steps=0),
                    logdir=str(tmp_path),
                    run_name="none") as sess:
        for _ in range(3):
            sess.run(y, {x: [1.0, 2.0]})
    reader = RunReader(tmp_path / "none")
    assert len(reader.steps()) == 3
    assert [reader.step_stats(s.step) for s in reader.steps()] == [[], [], []]


def _probe_neg(monkeypatch, probe):
    """Replaces the Neg kernels (CPU and GPU) with `probe(node, ctx, x) -> tensor`."""
    def factory(node, ctx):
        return lambda x: probe(node, ctx, x)
    monkeypatch.setitem(registry._KERNELS, "Neg", [
        registry.KernelDef("Neg", t, {}, factory) for t in ("CPU", "GPU")])


def test_inter_op_threads_gate_the_partitions(g, monkeypatch):
    """With one inter-op thread, no two partitions run kernels at once, yet a step whose
    partitions wait on each other (CPU -> GPU:0 -> CPU -> GPU:1) still completes, because a
    partition waiting on a Recv gives its turn away."""
    free_slots = []
    holder = {}

    def probe(node, ctx, x):
        free_slots.append(holder["sess"]._gate._slots._value)
        return torch.neg(x)
    _probe_neg(monkeypatch, probe)
    x = tf.placeholder(tf.float32, [2], name="x")
    y = x
    for device in ("/cpu:0", "/gpu:0", "/cpu:0", "/gpu:1"):
        with tf.device(device):
            y = tf.negative(y)
    config = tf.ConfigProto(virtual_gpus=2, inter_op_parallelism_threads=1)
    with tf.Session(config=config) as sess:
        holder["sess"] = sess
        assert sess.run(y, {x: [1.0, 2.0]}).tolist() == [1.0, 2.0]
        assert len(next(iter(sess._plans.values())).partitions) == 3
    assert free_slots == [0, 0, 0, 0]


def test_intra_op_threads_set_torch_threads_while_open(g):
    before = torch.get_num_threads()
    wanted = 1 if before != 1 else 2
    config = tf.ConfigProto()
    config.intra_op_parallelism_threads = wanted   # assigned after construction, as in TF
    with tf.Session(config=config) as sess:
        assert torch.get_num_threads() == wanted
        assert sess.run(tf.constant(2.0) * 2.0) == 4.0
    assert torch.get_num_threads() == before


def test_gpu_options_are_validated_and_assignable():
    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True
    config.gpu_options.per_process_gpu_memory_fraction = 0.4
    assert config.as_dict()["gpu_options"] == {
        "allow_growth": True, "per_process_gpu_memory_fraction": 0.4, "visible_device_list": ""}
    with pytest.raises(ValueError, match=r"per_process_gpu_memory_fraction must be a number "
                                         r"in \[0, 1\]"):
        config.gpu_options.per_process_gpu_memory_fraction = 1.5
    with pytest.raises(TypeError, match="visible_device_list must be a string"):
        tf.GPUOptions(visible_device_list=[0])


def test_gpu_memory_fraction_caps_each_cuda_device(monkeypatch):
    props = SimpleNamespace(name="Fake", major=9, minor=0, pci_domain_id=0, pci_bus_id=0,
                            pci_device_id=0)
    caps = {0: 1.0, 1: 1.0}
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda k: props)
    monkeypatch.setattr(torch.cuda, "get_per_process_memory_fraction", lambda i: caps[i])
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction",
                        lambda f, i: caps.__setitem__(i, f))
    options = tf.GPUOptions(per_process_gpu_memory_fraction=0.25, visible_device_list="1")
    with tf.Graph().as_default():
        sess = tf.Session(config=tf.ConfigProto(gpu_options=options))
        assert [d.torch_device for d in sess.list_devices()] == ["cpu", "cuda:1"]
        assert caps == {0: 1.0, 1: 0.25}
        sess.close()
    assert caps == {0: 1.0, 1: 1.0}


def test_operation_timeout_is_the_default_deadline(g):
    y = _slow_chain()
    with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=1)) as sess:
        with pytest.raises(errors.DeadlineExceededError,
                           match="Timed out waiting for notification"):
            sess.run(y)
        # RunOptions.timeout_in_ms overrides the session's.
        roomy = tf.RunOptions(timeout_in_ms=600_000)
        assert sess.run(y, options=roomy).shape == (300, 300)


def _slow_chain():
    """Twenty 300x300 matmuls: far more than a millisecond of work on any CPU."""
    rng = np.random.RandomState(0)
    y = tf.constant(rng.rand(300, 300).astype(np.float32) / 300)
    w = tf.constant(np.eye(300, dtype=np.float32))
    for _ in range(20):
        y = tf.matmul(y, w)
    return y


# ---- RunOptions ----

def test_trace_level_fills_step_stats(g):
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.device("/gpu:0"):
        y = tf.negative(x, name="y")
    with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
        md = tf.RunMetadata()
        sess.run(y, {x: [1.0, 2.0]}, run_metadata=md)
        assert md.step_stats.dev_stats == [] and md.partition_graphs == []
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE,
                                output_partition_graphs=True)
        sess.run(y, {x: [1.0, 2.0]}, options=options, run_metadata=md)
    nodes = {s.node_name for d in md.step_stats.dev_stats for s in d.node_stats}
    assert "y" in nodes and len(md.partition_graphs) == 2


@pytest.fixture
def fake_clock(monkeypatch):
    """Each reading of the deadline's clock is one second after the previous one."""
    monkeypatch.setattr(rendezvous, "_clock", itertools.count().__next__)


def test_deadline_stops_the_step_at_the_next_op(g, fake_clock, monkeypatch):
    outputs = []

    def probe(node, ctx, x):
        y = torch.neg(x)
        outputs.append(weakref.ref(y))
        return y
    _probe_neg(monkeypatch, probe)
    x = tf.placeholder(tf.float32, [2], name="x")
    y = x
    for k in range(5):
        y = tf.negative(y, name=f"n{k}")
    with tf.Session() as sess:
        # The deadline is read at 0 s (1.5 s left), after n0 at 1 s, after n1 at 2 s: late.
        with pytest.raises(errors.DeadlineExceededError) as info:
            sess.run(y, {x: [1.0, 2.0]}, options=tf.RunOptions(timeout_in_ms=1500))
        assert "Timed out waiting for notification" in str(info.value)
        assert "[[node n1 " in str(info.value)
        gc.collect()
        # The failed step let go of its tensors, though its error is still alive.
        assert len(outputs) == 2 and all(ref() is None for ref in outputs)
        assert sess.run(y, {x: [1.0, 2.0]}).tolist() == [-1.0, -2.0]


def test_deadline_across_partitions_cancels_every_partition(g, fake_clock):
    x = tf.placeholder(tf.float32, [2], name="x")
    y = x
    for device in ("/cpu:0", "/gpu:0", "/cpu:0", "/gpu:0"):
        with tf.device(device):
            y = tf.negative(y * 1.0)
    with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(y, {x: [1.0, 2.0]}, options=tf.RunOptions(timeout_in_ms=2500))
        assert sess.run(y, {x: [1.0, 2.0]}).tolist() == [1.0, 2.0]


def test_recv_waiting_past_the_deadline_raises_and_keeps_the_gate_balanced(fake_clock):
    gate = Gate(1)
    deadline = Deadline(1500)
    rdv = Rendezvous(deadline, gate)
    with gate.held(deadline):
        with pytest.raises(errors.DeadlineExceededError, match="deadline of 1500 ms"):
            rdv.recv("never-sent")
        assert gate.free_slots() == 1    # a failed partition gives its turn back at once
    assert gate.free_slots() == 1


def test_waiting_for_a_gate_slot_honours_the_deadline(fake_clock):
    gate = Gate(1)
    with gate.held(None):
        with pytest.raises(errors.DeadlineExceededError, match="deadline of 1500 ms"):
            with gate.held(Deadline(1500)):
                pass
        assert gate.free_slots() == 0
    assert gate.free_slots() == 1


def test_real_deadline_on_a_long_step(g):
    y = _slow_chain()
    with tf.Session() as sess:
        with pytest.raises(errors.DeadlineExceededError, match="deadline of 1 ms"):
            sess.run(y, options=tf.RunOptions(timeout_in_ms=1))


def _oom_graph(monkeypatch):
    def probe(node, ctx, x):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
    _probe_neg(monkeypatch, probe)
    v = tf.Variable([1.0, 2.0], name="v")
    return v, tf.negative(v * 2.0, name="y")


def test_out_of_memory_is_resource_exhausted_naming_the_node(g, monkeypatch):
    v, y = _oom_graph(monkeypatch)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(errors.ResourceExhaustedError) as info:
            sess.run(y)
    text = str(info.value)
    assert text.startswith(f"OOM when running y on {CPU0}: CUDA out of memory. Tried to "
                           "allocate 20.00 GiB\n\t [[node y (defined at")
    assert OOM_HINT in text and info.value.node_def.name == "y"


def test_oom_report_lists_the_devices_variables(g, monkeypatch):
    v, y = _oom_graph(monkeypatch)
    with tf.Session() as sess:
        sess.run(v.initializer)
        options = tf.RunOptions(report_tensor_allocations_upon_oom=True)
        with pytest.raises(errors.ResourceExhaustedError) as info:
            sess.run(y, options=options)
    text = str(info.value)
    assert "Hint:" not in text
    assert f"Current allocation summary for {CPU0}: variables 8 bytes\n  v: [2] float32, " \
           "8 bytes" in text


# ---- tf.gradients(aggregation_method=...) ----

def _three_term_graph(shape):
    x = tf.placeholder(tf.float32, shape, name="x")
    return x, tf.exp(x) + tf.square(x) + x * 3.0


@pytest.mark.parametrize("method", [7, "foo", True])
def test_unknown_aggregation_method_is_refused(g, method):
    x, y = _three_term_graph([3])
    with pytest.raises(ValueError, match=rf"Invalid `aggregation_method` specified {method}\. "
                                         r"Accepted values are \[0, 1, 2\]\."):
        tf.gradients(y, x, aggregation_method=method)


def test_aggregation_methods_build_tfs_sums_and_agree(g):
    # TF: ADD_N -> gradients/AddN; EXPERIMENTAL_TREE -> gradients_1/x_gradient_sum/AddN and
    # AddN_1 (the result); EXPERIMENTAL_ACCUMULATE_N (TF_BEHAVIOUR 6.5, TF 1.x) one
    # order-free sum for more than two terms of known shape, else the tree.
    M = tf.AggregationMethod
    x, y = _three_term_graph([3])
    add_n, tree, acc = (tf.gradients(y, x, aggregation_method=m)[0]
                        for m in (M.ADD_N, M.EXPERIMENTAL_TREE, M.EXPERIMENTAL_ACCUMULATE_N))
    assert add_n.name == "gradients/AddN:0" and len(add_n.op.inputs) == 3
    assert tree.name == "gradients_1/x_gradient_sum/AddN_1:0"
    assert [t.op.name for t in tree.op.inputs][0] == "gradients_1/x_gradient_sum/AddN"
    assert acc.name == "gradients_2/AccumulateN:0" and len(acc.op.inputs) == 3
    x_val = np.array([0.1, 0.2, 0.3], np.float32)
    with tf.Session() as sess:
        got = sess.run([add_n, tree, acc], {x: x_val})
    for value in got:
        np.testing.assert_allclose(value, np.exp(x_val) + 2 * x_val + 3.0, rtol=1e-6)


def test_accumulate_n_falls_back_to_the_tree(g):
    M = tf.AggregationMethod
    x, y = _three_term_graph([None])       # shape not fully known
    unknown = tf.gradients(y, x, aggregation_method=M.EXPERIMENTAL_ACCUMULATE_N)[0]
    assert unknown.op.name == "gradients/x_gradient_sum/AddN_1"
    z = tf.placeholder(tf.float32, [2], name="z")
    two = tf.gradients(tf.exp(z) * z, z, aggregation_method=M.EXPERIMENTAL_ACCUMULATE_N)[0]
    assert two.op.name == "gradients_1/z_gradient_sum/AddN"
