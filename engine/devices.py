"""Device names and local devices: DeviceSpec parsing, merging and printing (TF_BEHAVIOUR 1.x),
colocation merges (1.10), discovery of the CPU, CUDA and virtual (host-memory) GPUs a session
places on, their preference order (2.5) and the "Device mapping:" printout (2.13)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, fields, replace

_JOB_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_TYPE_RE = _JOB_RE
_NUMBER_RE = re.compile(r"[0-9]+")
_LOCAL_NAME_RE = re.compile(r"([A-Za-z][A-Za-z0-9_]*):([0-9]+)")
_LEGACY_TYPES = {"cpu": "CPU", "CPU": "CPU", "gpu": "GPU", "GPU": "GPU"}
_COMPONENTS = "/job:J, /replica:R, /task:T, /device:TYPE[:ID], /cpu:N or /gpu:N"

GPU_PRIORITY = 210
CPU_PRIORITY = 60
CPU_PRIORITY_WITH_GPUS = 70


class MalformedDeviceError(ValueError):
    """A device string that TensorFlow's C++ parser would reject."""


class IncompatibleDevicesError(ValueError):
    """Two device specs in one colocation group that cannot be merged (rule 1.10)."""


def _malformed(spec: str, why: str) -> MalformedDeviceError:
    return MalformedDeviceError(f"Malformed device specification '{spec}': {why}")


def _number_or_star(spec: str, what: str, text: str) -> int | None:
    if text == "*":
        return None
    if not _NUMBER_RE.fullmatch(text):
        raise _malformed(spec, f"{what} '{text}' must be '*' or a non-negative integer")
    return int(text)


@dataclass(frozen=True)
class DeviceSpec:
    """A possibly partial device name; a field is None when the spec leaves it open."""

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None

    @classmethod
    def parse(cls, spec: str) -> DeviceSpec:
        """The C++ rules (1.2, 1.4): the placer's reading of a node's device string."""
        return _parse_cached(spec)

    @classmethod
    def from_string(cls, spec: str | DeviceSpec) -> DeviceSpec:
        """Python `DeviceSpec.from_string` (1.6): what `tf.device("...")` scopes read.

        Deviations, all for earlier errors: ids must be digits or '*' (TF calls int(), so
        "gpu:-1" would only fail at placement), and '*' for job/replica/task means unset.
        """
        if isinstance(spec, DeviceSpec):
            return spec
        found: dict[str, object] = {}
        for part in spec.split("/"):
            y = part.split(":")
            if len(y) == 2 and y[0] in ("job", "replica", "task"):
                if y[0] == "job":
                    found["job"] = None if y[1] == "*" else y[1]
                else:
                    found[y[0]] = _number_or_star(spec, y[0], y[1])
            elif len(y) in (1, 2) and y[0].upper() in ("CPU", "GPU"):
                _set_type(found, spec, y[0].upper(), y[1] if len(y) == 2 else "*")
            elif len(y) == 3 and y[0] == "device":
                _set_type(found, spec, None if y[1] == "*" else y[1], y[2])
            elif y[0] != "":
                raise ValueError(f"Unknown attribute: '{y[0]}' in '{spec}'")
        return cls(**found)

    def to_string(self) -> str:
        """Rule 1.3: present fields only, in job/replica/task/device order; no id prints '*'."""
        out = ""
        if self.job is not None:
            out += f"/job:{self.job}"
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            out += f"/device:{self.device_type}:{index}"
        return out

    __str__ = to_string

    def merge_from(self, other: DeviceSpec) -> DeviceSpec:
        """Fields set in `other` override this spec's (TF `DeviceSpec.merge_from`)."""
        changes = {f.name: getattr(other, f.name) for f in fields(self)}
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def fill_from(self, outer: DeviceSpec) -> DeviceSpec:
        """Fields unset here come from `outer`: how an enclosing tf.device scope applies (1.7)."""
        return outer.merge_from(self)

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))

    @property
    def has_type(self) -> bool:
        return self.device_type is not None

    def matches(self, device_name: str | DeviceSpec) -> bool:
        """Rule 1.5: every field present in this spec equals the device's field."""
        device = device_name if isinstance(device_name, DeviceSpec) else self.parse(device_name)
        return all(
            getattr(self, f.name) is None or getattr(self, f.name) == getattr(device, f.name)
            for f in fields(self)
        )

    def without_type_and_index(self) -> DeviceSpec:
        """The same task with any device: soft placement's second try (2.8)."""
        return replace(self, device_type=None, device_index=None)


def _set_type(found: dict[str, object], spec: str, device_type: str | None, index: str) -> None:
    # Python rejects a second type component even when both name the same type ("/gpu:0/gpu:1").
    if "device_type" in found:
        raise ValueError(f"Cannot specify multiple device types: {spec}")
    found["device_type"] = device_type
    found["device_index"] = _number_or_star(spec, "device id", index)


@functools.lru_cache(maxsize=4096)
def _parse_cached(spec: str) -> DeviceSpec:
    if spec in ("", "/"):
        return DeviceSpec()
    if not spec.startswith("/"):
        local = _LOCAL_NAME_RE.fullmatch(spec)
        if local is None:
            raise _malformed(spec, "a name without a leading '/' must be exactly TYPE:N")
        # C++ keeps "gpu:0" lower-case (matching nothing); we read it as Python scopes do.
        device_type = _LEGACY_TYPES.get(local.group(1), local.group(1))
        return DeviceSpec(device_type=device_type, device_index=int(local.group(2)))
    found: dict[str, object] = {}
    for part in spec[1:].split("/"):
        key, colon, value = part.partition(":")
        if not colon or key not in ("job", "replica", "task", "device", *_LEGACY_TYPES):
            raise _malformed(spec, f"unknown component '/{part}' (expected {_COMPONENTS})")
        if key == "job":
            if value != "*" and not _JOB_RE.fullmatch(value):
                raise _malformed(spec, f"job name '{value}' must be '*' or a letter followed "
                                 "by letters, digits or '_'")
            found["job"] = None if value == "*" else value
        elif key in ("replica", "task"):
            found[key] = _number_or_star(spec, key, value)
        elif key == "device":
            type_text, colon, index = value.partition(":")
            if type_text != "*" and not _TYPE_RE.fullmatch(type_text):
                raise _malformed(spec, f"device type '{type_text}' must be '*' or a letter "
                                 "followed by letters, digits or '_'")
            found["device_type"] = None if type_text == "*" else type_text
            found["device_index"] = _number_or_star(spec, "device id", index if colon else "*")
        else:
            found["device_type"] = _LEGACY_TYPES[key]
            found["device_index"] = _number_or_star(spec, "device id", value)
    return DeviceSpec(**found)


def canonical_name(spec: str) -> str:
    """The rule-1.3 form of a C++-parsable spec ("" when nothing is specified)."""
    return DeviceSpec.parse(spec).to_string()


def merge_colocation_specs(
    a: DeviceSpec, b: DeviceSpec, allow_soft_placement: bool
) -> DeviceSpec:
    """Rule 1.10 (C++ MergeDevNames with `a` as target): the spec a colocation group keeps.

    Fields merge in order, so an error message shows `a` with b's earlier fields already in.
    """
    merged = a
    for field, label in (("job", "jobs"), ("replica", "replicas"), ("task", "tasks")):
        theirs, ours = getattr(b, field), getattr(merged, field)
        if theirs is not None and ours is not None and theirs != ours:
            raise _incompatible(label, merged, b)
        if theirs is not None:
            merged = replace(merged, **{field: theirs})
    if b.device_type is not None:
        if merged.device_type is not None and merged.device_type != b.device_type:
            if not allow_soft_placement:
                raise _incompatible("types", merged, b)
            # Soft placement gives up on the type (and so the id) and stops merging here.
            return merged.without_type_and_index()
        merged = replace(merged, device_type=b.device_type)
    if b.device_index is not None:
        if merged.device_index is not None and merged.device_index != b.device_index:
            if not allow_soft_placement:
                raise _incompatible("ids", merged, b)
            return replace(merged, device_index=None)
        merged = replace(merged, device_index=b.device_index)
    return merged


def _incompatible(label: str, a: DeviceSpec, b: DeviceSpec) -> IncompatibleDevicesError:
    message = f"Cannot merge devices with incompatible {label}: '{a}' and '{b}'"
    return IncompatibleDevicesError(message)


@dataclass(frozen=True)
class Device:
    """A concrete local device the session can place on."""

    name: str
    device_type: str
    index: int
    torch_device: str
    virtual: bool
    physical_desc: str
    priority: int
    incarnation: int = 1

    @property
    def spec(self) -> DeviceSpec:
        return DeviceSpec.parse(self.name)


def discover_devices(
    virtual_gpus: int | None = None, job: str = "localhost", replica: int = 0, task: int = 0,
    *, device_count: dict | None = None, visible_device_list: str = "",
) -> list[Device]:
    """CPU:0 plus GPUs: one per visible CUDA device, or exactly `virtual_gpus`, real where
    CUDA has one. `device_count` (ConfigProto's) caps the GPUs ({'GPU': 0} hides them) and
    sets the number of CPU devices; `visible_device_list` ("1,0") picks and orders the CUDA
    devices that become GPU:0, GPU:1, ...

    A virtual GPU keeps its tensors in host memory, so GPU placement can be exercised (and
    recorded) on a machine without CUDA.
    """
    if virtual_gpus is not None and virtual_gpus < 0:
        raise ValueError(f"virtual_gpus must be None or >= 0, got {virtual_gpus}")
    if not _JOB_RE.fullmatch(job):
        raise ValueError(f"job must be a letter followed by letters, digits or '_', got {job!r}")
    if replica < 0 or task < 0:
        raise ValueError(f"replica and task must be >= 0, got replica={replica}, task={task}")
    import torch  # lazily: parsing device names must not pay for (or require) torch

    cpu_count, gpu_limit = _device_counts(device_count or {})
    cuda_ids = _visible_cuda_ids(visible_device_list, torch.cuda.device_count())
    gpu_count = len(cuda_ids) if virtual_gpus is None else virtual_gpus
    if gpu_limit is not None:
        gpu_count = min(gpu_count, gpu_limit)
    prefix = f"/job:{job}/replica:{replica}/task:{task}/device:"
    cpu_priority = CPU_PRIORITY_WITH_GPUS if gpu_count else CPU_PRIORITY
    devices = [Device(f"{prefix}CPU:{k}", "CPU", k, "cpu", False, "", cpu_priority)
               for k in range(cpu_count)]
    for k in range(gpu_count):
        real = k < len(cuda_ids)
        desc = _cuda_desc(torch, cuda_ids[k]) if real else \
            f"device: {k}, name: virtual GPU (host memory)"
        torch_device = f"cuda:{cuda_ids[k]}" if real else "cpu"
        devices.append(
            Device(f"{prefix}GPU:{k}", "GPU", k, torch_device, not real, desc, GPU_PRIORITY)
        )
    return devices


def _device_counts(device_count: dict) -> tuple[int, int | None]:
    """ConfigProto.device_count as (CPU devices, GPU cap or None)."""
    for key, value in device_count.items():
        if key not in ("CPU", "GPU"):
            raise ValueError(f"ConfigProto.device_count has key {key!r}: the device types are "
                             "'CPU' and 'GPU'")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"ConfigProto.device_count[{key!r}] must be an int >= 0, got "
                             f"{value!r}")
    cpus = device_count.get("CPU", 1)
    if cpus == 0:
        from engine import errors  # lazily: see _visible_cuda_ids
        raise errors.NotFoundError(None, None, "No CPU devices are available in this process "
                                               "(ConfigProto.device_count['CPU'] is 0)")
    return cpus, device_count.get("GPU")


def _visible_cuda_ids(visible_device_list: str, cuda_count: int) -> list[int]:
    """TF's parsing of GPUOptions.visible_device_list (its error messages too)."""
    if not visible_device_list:
        return list(range(cuda_count))
    from engine import errors  # lazily: this module must import without the engine's torch
    ids = []
    for entry in visible_device_list.split(","):
        if not _NUMBER_RE.fullmatch(entry.strip()):
            raise errors.InvalidArgumentError(
                None, None, f"Could not parse entry in 'visible_device_list': '{entry}'. "
                            f"visible_device_list = {visible_device_list}")
        k = int(entry)
        if k >= cuda_count:
            raise errors.InvalidArgumentError(
                None, None, f"'visible_device_list' listed an invalid Device id '{k}' but "
                            f"visible device count is {cuda_count}")
        if k in ids:
            raise errors.InvalidArgumentError(
                None, None, f"visible_device_list contained a duplicate entry: "
                            f"{visible_device_list}")
        ids.append(k)
    return ids


def _cuda_desc(torch, cuda_id: int) -> str:
    """TF's GPU description: "device: k, name: ..., pci bus id: ..., compute capability: M.m"
    (k is the CUDA device's own id, as TF prints the platform id)."""
    props = torch.cuda.get_device_properties(cuda_id)
    domain, bus, slot = (getattr(props, f"pci_{a}_id", 0) for a in ("domain", "bus", "device"))
    bus = f"{domain:04x}:{bus:02x}:{slot:02x}.0"
    return (f"device: {cuda_id}, name: {props.name}, pci bus id: {bus}, "
            f"compute capability: {props.major}.{props.minor}")


def sort_by_preference(devices: list[Device]) -> list[Device]:
    """Rule 2.5: priority descending, then full name in plain string order (GPU:10 < GPU:2)."""
    return sorted(devices, key=lambda d: (-d.priority, d.name))


def device_mapping_text(devices: list[Device]) -> str:
    """Rule 2.13's session-creation printout; devices without a description are left out."""
    lines = "".join(f"{d.name} -> {d.physical_desc}\n" for d in devices if d.physical_desc)
    return f"Device mapping:\n{lines}" if lines else "Device mapping: no known devices.\n"
