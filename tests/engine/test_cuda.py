"""Real CUDA: the core ops' kernels on a GPU against the CPU, CPU<->GPU cuts both ways (each
receiving kernel sees tensors on its own device), a variable on the GPU updated in place and
read across the cut, GPU memory options, an out-of-memory as ResourceExhaustedError, and the
demo's MLP training across a CUDA GPU, a virtual one and the CPU. Marked `cuda`: skipped
where torch sees no GPU (tests/conftest.py)."""

import numpy as np
import pytest
import torch

import engine as tf
from engine import errors
from engine.kernels import registry

pytestmark = pytest.mark.cuda

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU_ONLY = {"GPU": 0}


def _core_ops(x, w, labels):
    """The ops every tutorial program uses, forward and backward."""
    h = tf.matmul(x, w)
    outs = [h, h + 1.0, h - 1.0, h * 2.0, h / 3.0, tf.maximum(h, 0.5), tf.square(h),
            tf.exp(-tf.abs(h)), tf.log(tf.abs(h) + 1.0), tf.sqrt(tf.abs(h)), tf.sigmoid(h),
            tf.tanh(h), tf.nn.relu(h), tf.nn.softmax(h), tf.nn.log_softmax(h), tf.reduce_sum(h, 1),
            tf.reduce_mean(h, 0), tf.reduce_max(h, 1)]
    hidden = tf.nn.relu(h)
    logits = tf.sigmoid(hidden) + tf.tanh(hidden)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels,
                                                                      logits=logits))
    return outs + [loss] + tf.gradients(loss, [w])


def _run_core_ops(config, x_val, w_val, labels_val):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 6])
        labels = tf.placeholder(tf.float32, [None, 5])
        with tf.device("/gpu:0"):
            w = tf.constant(w_val)
            outs = _core_ops(x, w, labels)
        with tf.Session(config=config) as sess:
            got = sess.run(outs, {x: x_val, labels: labels_val})
            placed = {sess.placement.device_of(t.op.name) for t in outs}
            devices = {d.name: d.torch_device for d in sess.list_devices()}
            on = {t.op.type: devices[sess.placement.device_of(t.op.name)] for t in outs}
    return got, {devices[p] for p in placed}, on


def test_core_op_kernels_on_the_gpu_match_the_cpu():
    rng = np.random.RandomState(0)
    x_val = rng.randn(16, 6).astype(np.float32)
    w_val = rng.randn(6, 5).astype(np.float32)
    labels_val = np.eye(5, dtype=np.float32)[rng.randint(0, 5, 16)]
    on_gpu, _, by_type = _run_core_ops(tf.ConfigProto(allow_soft_placement=True),
                                       x_val, w_val, labels_val)
    on_cpu, cpu_devices, _ = _run_core_ops(
        tf.ConfigProto(allow_soft_placement=True, device_count=CPU_ONLY),
        x_val, w_val, labels_val)
    assert cpu_devices == {"cpu"}
    for op_type in ("MatMul", "Add", "Mul", "Sigmoid", "Tanh", "Relu", "Softmax", "Mean"):
        assert by_type[op_type] == "cuda:0", op_type
    for i, (a, b) in enumerate(zip(on_gpu, on_cpu)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"output {i}")


def test_cuts_deliver_on_the_receiving_device_both_ways(monkeypatch):
    seen = []

    def probe(node, ctx):
        def run(x):
            seen.append((ctx.device.device_type, x.device.type))
            return torch.neg(x)
        return run
    monkeypatch.setitem(registry._KERNELS, "Neg", [
        registry.KernelDef("Neg", t, {}, probe) for t in ("CPU", "GPU")])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        y = x
        for device in ("/gpu:0", "/cpu:0", "/gpu:0", "/cpu:0"):
            with tf.device(device):
                y = tf.negative(y * 2.0)
        with tf.Session() as sess:
            got = sess.run(y, {x: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(got, [16.0, 32.0, 48.0])
    assert seen == [("GPU", "cuda"), ("CPU", "cpu"), ("GPU", "cuda"), ("CPU", "cpu")]


def test_variable_on_the_gpu_is_updated_in_place_and_read_across_the_cut():
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            v = tf.Variable(0.0, name="v")
            add = tf.assign_add(v, 5.0)
            w = tf.Variable([1.0, 2.0], name="w")
            train = tf.train.GradientDescentOptimizer(0.25).minimize(tf.reduce_sum(w * w))
        with tf.device("/cpu:0"):
            with tf.control_dependencies([add]):
                out = tf.identity(v) * 2
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert [sess.run(out), sess.run(out)] == [10.0, 20.0]   # TF's numbers
            slot = next(s for s in sess._variables.slots() if s.name == "w")
            buffer = slot.read()
            assert buffer.is_cuda
            seen = [sess.run([train, w])[1].tolist() for _ in range(2)]
            assert slot.read() is buffer
    assert seen == [[0.5, 1.0], [0.25, 0.5]]


def test_memory_fraction_caps_the_gpu_and_oom_names_the_node():
    if not hasattr(torch.cuda, "get_per_process_memory_fraction"):
        pytest.skip("this torch cannot report the cap it was given")
    before = torch.cuda.get_per_process_memory_fraction(0)
    total = torch.cuda.get_device_properties(0).total_memory
    rows = int(total * 0.05) // (4 * 1024) + 1          # a 5%-of-the-GPU float32 tensor
    options = tf.GPUOptions(per_process_gpu_memory_fraction=0.01, allow_growth=True)
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            big = tf.fill([rows, 1024], 1.0, name="big")
        with tf.Session(config=tf.ConfigProto(gpu_options=options)) as sess:
            assert torch.cuda.get_per_process_memory_fraction(0) == 0.01
            with pytest.raises(errors.ResourceExhaustedError) as info:
                sess.run(big.op)
    assert torch.cuda.get_per_process_memory_fraction(0) == before
    text = str(info.value)
    assert text.startswith(f"OOM when running big on {GPU0}: ")
    assert "Hint: If you want to see a list of allocated tensors when OOM happens" in text


def test_a_tensor_larger_than_the_gpu_is_resource_exhausted():
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            huge = tf.fill([1 << 20, 1 << 18], 1.0, name="huge")   # 1 TiB of float32
        with tf.Session() as sess:
            with pytest.raises(errors.ResourceExhaustedError, match=r"OOM when running huge"):
                sess.run(huge.op)
            assert sess.run(tf.constant(2.0) * 3.0) == 6.0   # the session still works


def test_visible_device_list_and_device_count():
    with tf.Graph().as_default():
        config = tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="0"))
        with tf.Session(config=config) as sess:
            gpus = [d for d in sess.list_devices() if d.device_type == "GPU"]
            assert [(d.torch_device, d.virtual) for d in gpus] == [("cuda:0", False)]
        with tf.Session(config=tf.ConfigProto(device_count=CPU_ONLY)) as sess:
            assert [d.device_type for d in sess.list_devices()] == ["CPU"]


def test_demo_trains_across_a_cuda_gpu_a_virtual_gpu_and_the_cpu(tmp_path):
    from engine.record import RunReader
    from workbench.demo import train_mlp
    path, accuracy = train_mlp(str(tmp_path), "cuda-demo", 0.5, steps=150)
    assert accuracy > 0.85
    reader = RunReader(path)
    kinds = {d.name[-5:]: d.virtual for d in reader.devices()}
    assert kinds == {"CPU:0": False, "GPU:0": False, "GPU:1": True}
    steps = reader.steps()
    train = [s.bytes_moved for s in steps if s.plan == steps[1].plan]
    assert len(train) == 150 and min(train) > 0     # every training step crossed the cuts
