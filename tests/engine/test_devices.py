"""Device names (TF_BEHAVIOUR 1.1-1.10), colocation merges, local discovery, preference order
and the "Device mapping:" printout."""

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.devices import (
    Device,
    DeviceSpec,
    IncompatibleDevicesError,
    MalformedDeviceError,
    canonical_name,
    device_mapping_text,
    discover_devices,
    merge_colocation_specs,
    sort_by_preference,
)

LOCAL = "/job:localhost/replica:0/task:0"


@pytest.fixture
def no_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


# ---- C++ parsing (1.2) and printing (1.3) ----

@pytest.mark.parametrize(
    "spec, expected",
    [
        ("/job:worker/replica:1/task:2/device:GPU:3", "/job:worker/replica:1/task:2/device:GPU:3"),
        ("/gpu:1", "/device:GPU:1"),
        ("/GPU:1", "/device:GPU:1"),
        ("/cpu:0", "/device:CPU:0"),
        ("/CPU:0", "/device:CPU:0"),
        ("/gpu:*", "/device:GPU:*"),
        ("/device:GPU:*", "/device:GPU:*"),
        ("/device:GPU", "/device:GPU:*"),
        ("/job:ps/device:GPU:*", "/job:ps/device:GPU:*"),
        ("/job:*", ""),
        ("/job:*/replica:*/task:*/device:*", ""),
        ("", ""),
        ("/", ""),
        ("/device:GPU:1/task:2/job:ps/replica:0", "/job:ps/replica:0/task:2/device:GPU:1"),
        ("/job:a/job:b_2", "/job:b_2"),
        ("/gpu:0/cpu:1", "/device:CPU:1"),
        ("/device:GPU:0/device:GPU:*", "/device:GPU:*"),
        ("/replica:007", "/replica:7"),
        ("/device:TPU_X:4", "/device:TPU_X:4"),
        (f"{LOCAL}/cpu:0", f"{LOCAL}/device:CPU:0"),
        ("CPU:0", "/device:CPU:0"),
        ("gpu:3", "/device:GPU:3"),
        ("/device:CPU:0", "/device:CPU:0"),
    ],
)
def test_parse_and_print(spec, expected):
    assert DeviceSpec.parse(spec).to_string() == expected
    assert str(DeviceSpec.parse(spec)) == expected
    assert canonical_name(spec) == expected


def test_parse_fields():
    spec = DeviceSpec.parse("/task:3/job:ps/gpu:2")
    assert spec == DeviceSpec(job="ps", task=3, device_type="GPU", device_index=2)
    assert spec.replica is None
    assert DeviceSpec.parse("/device:GPU:*") == DeviceSpec(device_type="GPU")
    assert DeviceSpec.parse("/device:*:1") == DeviceSpec(device_index=1)
    assert DeviceSpec.parse("/device:*:1").to_string() == ""


def test_device_aliases_parse_to_the_same_spec():
    full = DeviceSpec.parse(f"{LOCAL}/device:CPU:0")
    assert DeviceSpec.parse(f"{LOCAL}/cpu:0") == full
    assert hash(DeviceSpec.parse(f"{LOCAL}/cpu:0")) == hash(full)
    for local in ("CPU:0", "/device:CPU:0", "/cpu:0"):
        assert DeviceSpec.parse(local).matches(full)
        assert DeviceSpec.parse(local) == DeviceSpec(device_type="CPU", device_index=0)


@pytest.mark.parametrize(
    "spec, culprit",
    [
        ("/gpu:x", "device id 'x'"),
        ("/job:1abc", "job name '1abc'"),
        ("/device:GPU:-1", "device id '-1'"),
        ("/foo:1", "unknown component '/foo:1'"),
        ("gpu:0/extra", "exactly TYPE:N"),
        ("/job:a/", "unknown component '/'"),
        ("//", "unknown component '/'"),
        ("/job:", "job name ''"),
        ("/job:a-b", "job name 'a-b'"),
        ("/replica:1x", "replica '1x'"),
        ("/task:", "task ''"),
        ("/device:GPU:1:2", "device id '1:2'"),
        ("/device:1GPU:0", "device type '1GPU'"),
        ("/device:", "device type ''"),
        ("/Gpu:0", "unknown component '/Gpu:0'"),
        ("/cpu", "unknown component '/cpu'"),
        ("job:ps", "exactly TYPE:N"),
        ("CPU:", "exactly TYPE:N"),
    ],
)
def test_malformed(spec, culprit):
    with pytest.raises(MalformedDeviceError) as info:
        DeviceSpec.parse(spec)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert message.startswith(f"Malformed device specification '{spec}': ")
    assert culprit in message


def test_canonical_name_rejects_malformed():
    with pytest.raises(MalformedDeviceError):
        canonical_name("/gpu:x")


# ---- Python from_string (1.6) ----

@pytest.mark.parametrize(
    "spec, expected",
    [
        ("/job:worker/replica:1/task:2/gpu:3", "/job:worker/replica:1/task:2/device:GPU:3"),
        ("/job:worker/replica:1/task:2/device:CPU:0", "/job:worker/replica:1/task:2/device:CPU:0"),
        ("gpu", "/device:GPU:*"),
        ("Cpu:1", "/device:CPU:1"),
        ("GPU:*", "/device:GPU:*"),
        ("/device:GPU:*", "/device:GPU:*"),
        ("/device:XLA_CPU:0", "/device:XLA_CPU:0"),
        ("device:gpu:0", "/device:gpu:0"),
        ("/task:1/job:ps", "/job:ps/task:1"),
        ("/job:*", ""),
        ("", ""),
        ("/", ""),
        ("//job:ps//", "/job:ps"),
    ],
)
def test_from_string(spec, expected):
    assert DeviceSpec.from_string(spec).to_string() == expected


def test_from_string_is_lax_where_python_is():
    # Python keeps any job text; the C++ parser rejects it later, at placement.
    spec = DeviceSpec.from_string("/job:1abc")
    assert spec.job == "1abc"
    with pytest.raises(MalformedDeviceError):
        DeviceSpec.parse(spec.to_string())
    assert DeviceSpec.from_string(spec) is spec


@pytest.mark.parametrize("spec", ["/device:CPU:0/gpu:1", "/gpu:0/gpu:1", "cpu/device:GPU:0"])
def test_from_string_multiple_types(spec):
    with pytest.raises(ValueError) as info:
        DeviceSpec.from_string(spec)
    assert str(info.value) == f"Cannot specify multiple device types: {spec}"


@pytest.mark.parametrize(
    "spec, attribute",
    [("/job:ps/foo:1", "foo"), ("device:GPU", "device"), ("/job:a:b", "job"), ("/tpu:0", "tpu")],
)
def test_from_string_unknown_attribute(spec, attribute):
    with pytest.raises(ValueError) as info:
        DeviceSpec.from_string(spec)
    assert str(info.value) == f"Unknown attribute: '{attribute}' in '{spec}'"


@pytest.mark.parametrize("spec", ["/gpu:x", "/replica:r", "/device:GPU:-1"])
def test_from_string_bad_numbers(spec):
    with pytest.raises(MalformedDeviceError):
        DeviceSpec.from_string(spec)


# ---- merging, matching, soft placement ----

def test_nested_scope_chain_rule_1_7():
    def apply_scopes(scopes_outer_to_inner):
        op = DeviceSpec()
        for scope in reversed(scopes_outer_to_inner):
            op = op.fill_from(DeviceSpec.from_string(scope))
        return op.to_string()

    chain = ["/device:GPU:0", "/job:worker"]
    assert apply_scopes(chain) == "/job:worker/device:GPU:0"
    chain.append("/device:CPU:0")
    assert apply_scopes(chain) == "/job:worker/device:CPU:0"
    chain.append("/job:ps")
    assert apply_scopes(chain) == "/job:ps/device:CPU:0"


def test_merge_from_overrides_per_field():
    base = DeviceSpec.parse("/job:worker/task:1/device:GPU:0")
    merged = base.merge_from(DeviceSpec.parse("/task:2/device:CPU:*"))
    # The index is its own field: a type-only override keeps the old index (TF merge_from).
    assert merged.to_string() == "/job:worker/task:2/device:CPU:0"
    assert base.to_string() == "/job:worker/task:1/device:GPU:0"
    assert DeviceSpec.parse("/job:a").fill_from(DeviceSpec.parse("/job:b/task:1")).to_string() \
        == "/job:a/task:1"


def test_matches_rule_1_5():
    gpu1 = f"{LOCAL}/device:GPU:1"
    assert DeviceSpec.parse("/job:localhost/device:GPU:*").matches(gpu1)
    assert DeviceSpec.parse("/gpu:1").matches(gpu1)
    assert DeviceSpec().matches(gpu1)
    assert not DeviceSpec.parse("/gpu:0").matches(gpu1)
    assert not DeviceSpec.parse("/job:worker").matches(gpu1)
    assert not DeviceSpec.parse("/device:CPU:*").matches(gpu1)
    # A field the device name leaves open does not satisfy a spec that sets it.
    assert not DeviceSpec.parse("/task:0").matches("/device:GPU:1")
    assert DeviceSpec.parse("/task:0").matches(DeviceSpec.parse(gpu1))


def test_properties_and_without_type():
    spec = DeviceSpec.parse("/job:ps/task:1/gpu:1")
    assert not spec.is_empty and spec.has_type
    assert DeviceSpec.parse("/").is_empty
    assert not DeviceSpec.parse("/job:ps").has_type
    assert spec.without_type_and_index().to_string() == "/job:ps/task:1"
    with pytest.raises(AttributeError):
        spec.job = "x"


# ---- colocation merges (1.10) ----

def _merge(a, b, soft=False):
    return merge_colocation_specs(DeviceSpec.parse(a), DeviceSpec.parse(b), soft).to_string()


def test_merge_compatible():
    assert _merge("/job:w/device:GPU:*", "/task:1/gpu:0") == "/job:w/task:1/device:GPU:0"
    assert _merge("", "/cpu:0") == "/device:CPU:0"
    assert _merge("/gpu:1", "") == "/device:GPU:1"


@pytest.mark.parametrize(
    "a, b, message",
    [
        ("/job:a", "/job:b", "incompatible jobs: '/job:a' and '/job:b'"),
        ("/replica:0", "/replica:1", "incompatible replicas: '/replica:0' and '/replica:1'"),
        ("/job:a/task:0", "/task:1", "incompatible tasks: '/job:a/task:0' and '/task:1'"),
        # b's job is merged in before the type check, so the message shows it on both sides.
        (
            "/gpu:0",
            "/job:w/cpu:0",
            "incompatible types: '/job:w/device:GPU:0' and '/job:w/device:CPU:0'",
        ),
        ("/gpu:0", "/gpu:1", "incompatible ids: '/device:GPU:0' and '/device:GPU:1'"),
    ],
)
def test_merge_incompatible(a, b, message):
    with pytest.raises(IncompatibleDevicesError) as info:
        _merge(a, b)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == f"Cannot merge devices with {message}"


def test_soft_placement_relaxes_only_type_and_id():
    assert _merge("/job:w/gpu:0", "/task:2/cpu:0", soft=True) == "/job:w/task:2"
    # A type conflict drops the id too, and b's id is not merged in afterwards.
    merged = merge_colocation_specs(DeviceSpec.parse("/gpu:0"), DeviceSpec.parse("/cpu:1"), True)
    assert merged == DeviceSpec()
    assert _merge("/gpu:0", "/task:2/gpu:1", soft=True) == "/task:2/device:GPU:*"
    with pytest.raises(IncompatibleDevicesError, match="incompatible jobs"):
        _merge("/job:a/gpu:0", "/job:b/gpu:0", soft=True)
    with pytest.raises(IncompatibleDevicesError, match="incompatible tasks"):
        _merge("/task:0", "/task:1", soft=True)


# ---- local devices ----

def test_discover_cpu_only(no_cuda):
    devices = discover_devices()
    assert devices == [Device(f"{LOCAL}/device:CPU:0", "CPU", 0, "cpu", False, "", 60, 1)]
    assert devices[0].spec == DeviceSpec.parse(f"{LOCAL}/cpu:0")
    assert device_mapping_text(devices) == "Device mapping: no known devices.\n"


def test_discover_virtual_gpus(no_cuda):
    devices = discover_devices(virtual_gpus=2, job="worker", task=3)
    names = [d.name for d in devices]
    prefix = "/job:worker/replica:0/task:3/device:"
    assert names == [prefix + t for t in ("CPU:0", "GPU:0", "GPU:1")]
    cpu, gpu0, gpu1 = devices
    assert (cpu.priority, gpu0.priority, gpu1.priority) == (70, 210, 210)
    assert (gpu1.device_type, gpu1.index, gpu1.torch_device) == ("GPU", 1, "cpu")
    assert gpu1.virtual and not gpu0.physical_desc.startswith("device: 1")
    assert gpu1.incarnation == 1
    assert gpu1.spec == DeviceSpec("worker", 0, 3, "GPU", 1)
    assert device_mapping_text(devices) == (
        "Device mapping:\n"
        "/job:worker/replica:0/task:3/device:GPU:0 -> device: 0, name: virtual GPU (host memory)\n"
        "/job:worker/replica:0/task:3/device:GPU:1 -> device: 1, name: virtual GPU (host memory)\n"
    )
    assert [d.name for d in discover_devices(virtual_gpus=0)] == [f"{LOCAL}/device:CPU:0"]


def test_discover_mixes_real_and_virtual(monkeypatch):
    import torch

    props = SimpleNamespace(name="Fake H1", major=9, minor=0, pci_domain_id=0, pci_bus_id=0x1b,
                            pci_device_id=0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda k: props)
    real, virtual = discover_devices(virtual_gpus=2)[1:]
    assert (real.torch_device, real.virtual) == ("cuda:0", False)
    assert real.physical_desc == (
        "device: 0, name: Fake H1, pci bus id: 0000:1b:00.0, compute capability: 9.0"
    )
    assert (virtual.torch_device, virtual.virtual) == ("cpu", True)
    assert [d.name[-5:] for d in discover_devices()] == ["CPU:0", "GPU:0"]


@pytest.mark.parametrize(
    "kwargs, field",
    [({"virtual_gpus": -1}, "virtual_gpus"), ({"job": "1abc"}, "job"), ({"task": -1}, "task")],
)
def test_discover_rejects_bad_arguments(kwargs, field):
    with pytest.raises(ValueError, match=field):
        discover_devices(**kwargs)


def test_sort_by_preference_plain_string_order(no_cuda):
    devices = discover_devices(virtual_gpus=11)
    ordered = [d.name.rsplit("/", 1)[1] for d in sort_by_preference(list(reversed(devices)))]
    assert ordered[:4] == ["device:GPU:0", "device:GPU:1", "device:GPU:10", "device:GPU:2"]
    assert ordered[-1] == "device:CPU:0"
    # A lower-priority type loses even against a "smaller" name.
    cpu_a = Device("/job:a/replica:0/task:0/device:CPU:0", "CPU", 0, "cpu", False, "", 70)
    gpu_z = Device("/job:z/replica:0/task:0/device:GPU:0", "GPU", 0, "cpu", True, "x", 210)
    assert sort_by_preference([cpu_a, gpu_z]) == [gpu_z, cpu_a]


def test_module_import_does_not_import_torch():
    path = Path(__file__).resolve().parents[2] / "engine" / "devices.py"
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('devices_alone', {str(path)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "sys.modules['devices_alone'] = module\n"
        "spec.loader.exec_module(module)\n"
        "module.DeviceSpec.parse('/job:ps/gpu:0')\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"
    assert re.fullmatch(r"\s*", result.stderr)


# ---- ConfigProto.device_count and GPUOptions.visible_device_list ----

def test_device_count_hides_caps_and_multiplies(no_cuda):
    def names(**kwargs):
        return [d.name[len(LOCAL) + 8:] for d in discover_devices(**kwargs)]
    assert names(virtual_gpus=2, device_count={"GPU": 0}) == ["CPU:0"]
    assert names(virtual_gpus=2, device_count={"GPU": 1}) == ["CPU:0", "GPU:0"]
    assert names(virtual_gpus=1, device_count={"GPU": 5}) == ["CPU:0", "GPU:0"]
    assert names(device_count={"CPU": 3}) == ["CPU:0", "CPU:1", "CPU:2"]
    cpus = discover_devices(device_count={"CPU": 2})
    assert [(d.index, d.torch_device, d.priority) for d in cpus] == [(0, "cpu", 60),
                                                                    (1, "cpu", 60)]


@pytest.mark.parametrize("device_count, match", [
    ({"TPU": 1}, "device_count has key 'TPU'"),
    ({"gpu": 0}, "device_count has key 'gpu'"),
    ({"GPU": -1}, r"device_count\['GPU'\] must be an int >= 0"),
    ({"GPU": 1.5}, r"device_count\['GPU'\] must be an int >= 0"),
])
def test_device_count_rejects_unknown_types_and_bad_counts(device_count, match):
    with pytest.raises(ValueError, match=match):
        discover_devices(device_count=device_count)


def test_device_count_without_a_cpu_is_tfs_not_found():
    from engine import errors
    with pytest.raises(errors.NotFoundError, match="No CPU devices are available in this "
                                                   "process"):
        discover_devices(device_count={"CPU": 0})


def test_session_honours_device_count_for_virtual_gpus(no_cuda):
    import engine as tf
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            y = tf.constant([1.0, 2.0]) * 2.0
        config = tf.ConfigProto(virtual_gpus=2, device_count={"GPU": 0},
                                allow_soft_placement=True)
        with tf.Session(config=config) as sess:
            assert [d.name[-5:] for d in sess.list_devices()] == ["CPU:0"]
            assert sess.run(y).tolist() == [2.0, 4.0]
            assert sess.placement.device_of(y.op.name).endswith("CPU:0")


@pytest.fixture
def two_fake_cuda_devices(monkeypatch):
    import torch

    props = [SimpleNamespace(name=f"Fake H{k}", major=9, minor=0, pci_domain_id=0,
                             pci_bus_id=k, pci_device_id=0) for k in range(2)]
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda k: props[k])


def test_visible_device_list_picks_and_orders_cuda_devices(two_fake_cuda_devices):
    gpus = discover_devices(visible_device_list="1")[1:]
    assert [(d.name[-5:], d.torch_device) for d in gpus] == [("GPU:0", "cuda:1")]
    assert gpus[0].physical_desc.startswith("device: 1, name: Fake H1")
    gpus = discover_devices(visible_device_list="1,0")[1:]
    assert [d.torch_device for d in gpus] == ["cuda:1", "cuda:0"]
    gpus = discover_devices(virtual_gpus=2, visible_device_list="1")[1:]
    assert [(d.torch_device, d.virtual) for d in gpus] == [("cuda:1", False), ("cpu", True)]


@pytest.mark.parametrize("visible, match", [
    ("x", "Could not parse entry in 'visible_device_list': 'x'. visible_device_list = x"),
    ("2", "'visible_device_list' listed an invalid Device id '2' but visible device count "
          "is 2"),
    ("0,0", "visible_device_list contained a duplicate entry: 0,0"),
])
def test_visible_device_list_errors_are_tfs(two_fake_cuda_devices, visible, match):
    from engine import errors
    with pytest.raises(errors.InvalidArgumentError, match=match):
        discover_devices(visible_device_list=visible)


# ---- every cut delivers its tensor on the receiving device ----
# A GPU mapped to torch's meta device holds tensors that are visibly not on the CPU, so a
# Recv that forgets to move its tensor hands a meta tensor to the receiving kernel.

@pytest.fixture
def meta_gpu(monkeypatch):
    """A session whose GPU:0 keeps its tensors on torch's meta device, and a probe that
    records the device of every tensor a Neg kernel receives (CPU and GPU alike)."""
    import dataclasses

    import torch

    from engine.kernels import registry
    from engine.runtime import session as session_module

    real_discover = session_module.discover_devices

    def discover(*args, **kwargs):
        return [dataclasses.replace(d, torch_device="meta") if d.device_type == "GPU" else d
                for d in real_discover(*args, **kwargs)]

    seen = []

    def probe(node, ctx):
        def run(x):
            seen.append((ctx.device.device_type, x.device, torch.device(ctx.torch_device)))
            return torch.neg(x)
        return run

    monkeypatch.setattr(session_module, "discover_devices", discover)
    monkeypatch.setitem(registry._KERNELS, "Neg", [
        registry.KernelDef("Neg", t, {}, probe) for t in ("CPU", "GPU")])
    return seen


def test_cpu_to_gpu_cut_delivers_on_the_gpu(meta_gpu):
    import engine as tf
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device("/gpu:0"):
            y = tf.negative(x * 2.0, name="y")
        with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
            sess.run(y.op, {x: [1.0, 2.0]})
    assert [(t, got.type) for t, got, _ in meta_gpu] == [("GPU", "meta")]


def test_gpu_to_cpu_cut_delivers_on_the_cpu(meta_gpu):
    import engine as tf
    from engine import errors
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            c = tf.constant([1.0, 2.0], name="c") * 2.0
        with tf.device("/cpu:0"):
            y = tf.negative(c, name="y")
        with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
            # A meta tensor has no data to copy: the Recv's move onto the CPU is what fails,
            # so no CPU kernel ever sees a tensor from the GPU's memory.
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"Cannot copy out of meta tensor[\s\S]*= _Recv\["
                                     r".*send_device=\S*GPU:0"):
                sess.run(y.op)
    assert meta_gpu == []


def test_data_and_control_cuts_deliver_on_the_receiving_device(meta_gpu):
    """A data edge and a control edge into the GPU: each Neg sees its own device's tensors."""
    import engine as tf
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device("/cpu:0"):
            a = tf.negative(x, name="a")
        with tf.device("/gpu:0"):
            with tf.control_dependencies([a]):
                b = tf.negative(a * 3.0, name="b")
        with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
            sess.run(b.op, {x: [1.0, 2.0]})
            (plan,) = sess._plans.values()
            kinds = {e.tensor.startswith("^") for e in plan.result.cut_edges}
    assert kinds == {True, False}
    assert sorted((t, got.type) for t, got, _ in meta_gpu) == [("CPU", "cpu"), ("GPU", "meta")]
    assert all(got == want for _, got, want in meta_gpu)
