"""The kernel registry: torch implementations keyed by (op type, device type) with dtype
constraints on attrs. Placement asks it "can this node run on that device type?"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from engine import dtypes


@dataclass(frozen=True)
class Constant:
    """A factory result meaning "this node's output is this fixed tensor"; the executor binds
    it once per plan instead of calling a kernel every step."""
    value: object


@dataclass
class KernelContext:
    """What a kernel factory may use: the device it runs on and the session's resources."""
    device: object               # engine.devices.Device
    torch_device: object         # torch.device
    variables: object            # engine.kernels.state.VariableStore


@dataclass(frozen=True)
class KernelDef:
    op: str
    device_type: str
    constraints: dict            # attr name -> tuple of allowed DTypes
    factory: Callable            # factory(node_def, KernelContext) -> callable | Constant
    host_memory: tuple[str, ...] = field(default=())

    def matches(self, node) -> bool:
        if self.device_type != "CPU" and _holds_strings(node):
            return False      # rule 2.12: strings live in host memory, so string ops run on CPU
        for attr, allowed in self.constraints.items():
            value = node.attr.get(attr)
            if value is None:
                continue
            values = value if isinstance(value, (list, tuple)) else [value]
            if any(getattr(v, "base_dtype", v) not in allowed for v in values):
                return False
        return True

    def describe(self) -> str:
        parts = [f"device='{self.device_type}'"]
        for attr, allowed in sorted(self.constraints.items()):
            parts.append(f"{attr} in [{', '.join(d.proto_name for d in allowed)}]")
        return "; ".join(parts)


def _holds_strings(node) -> bool:
    values = list(getattr(node, "output_dtypes", ()))
    for value in node.attr.values():
        values.extend(value if isinstance(value, (list, tuple)) else [value])
    return any(isinstance(v, dtypes.DType) and v.is_string for v in values)


_KERNELS: dict[str, list[KernelDef]] = {}


def kernel(op_type: str, *, CPU=None, GPU=None, host_memory=()):  # noqa: N803 - device names
    """Registers a factory for op_type. CPU=/GPU= give the attr constraints per device type
    ({} for "any dtype"); a device type left as None gets no kernel."""
    def decorate(factory):
        for device_type, constraints in (("CPU", CPU), ("GPU", GPU)):
            if constraints is None:
                continue
            frozen = {k: tuple(v) for k, v in constraints.items()}
            _KERNELS.setdefault(op_type, []).append(
                KernelDef(op_type, device_type, frozen, factory, tuple(host_memory)))
        return factory
    return decorate


def find_kernel(node, device_type: str) -> KernelDef | None:
    for k in _KERNELS.get(node.op, ()):
        if k.device_type == device_type and k.matches(node):
            return k
    return None


def supported_device_types(node, device_types) -> list[str]:
    """Rule 2.1: ops unknown to the registry count as supported everywhere."""
    if node.op not in _KERNELS:
        return list(device_types)
    return [t for t in device_types if find_kernel(node, t) is not None]


def registered_kernels_text(op_type: str) -> str:
    kernels = _KERNELS.get(op_type, ())
    if not kernels:
        return "  <no registered kernels>\n"
    return "".join(f"  {k.describe()}\n" for k in kernels)


def kernel_op_types() -> list[str]:
    return sorted(_KERNELS)


def kernels_for(op_type: str) -> list[KernelDef]:
    return list(_KERNELS.get(op_type, ()))


# dtype families used by the kernel modules.
# Quantized types are held as plain integers but only the kernels that move values without
# reading them (TF's TF_CALL_QUANTIZED_TYPES registrations) claim them: WITH_QUANTIZED.
ALL_TYPES = tuple(d for d in dtypes.ALL if d.numpy_dtype is not None and not d.is_quantized)
QUANTIZED_TYPES = dtypes.QUANTIZED
WITH_QUANTIZED = ALL_TYPES + QUANTIZED_TYPES
CPU_REAL = dtypes.REAL_NUMERIC
CPU_NUMERIC = dtypes.NUMERIC
CPU_FLOAT = dtypes.FLOATS
GPU_FLOAT = (dtypes.float16, dtypes.float32, dtypes.float64)
# TF registers GPU math for floats and int64; int32 only with host memory (rule 2.12).
GPU_REAL = GPU_FLOAT + (dtypes.int64, dtypes.int32)
# A Variable on GPU holds half, float, double or int64, never int32 (rule 2.1).
GPU_VARIABLE = GPU_FLOAT + (dtypes.int64,)
INDEX_TYPES = (dtypes.int32, dtypes.int64)
