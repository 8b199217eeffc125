"""ConfigProto, GPUOptions, RunOptions and RunMetadata with TF's field names, as plain Python
classes (no protobuf), plus the step-stats records RunMetadata carries. Like protobuf
messages they refuse unknown fields, at construction and on assignment; every field they
accept is honoured by the Session (see each class) or refused with a message naming it."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field


class _Message:
    """Fields are the keyword parameters of the subclass's __init__; `_TF_ONLY` lists
    TensorFlow's fields of the same message that this engine does not support."""

    _TF_ONLY: dict[str, str] = {}

    def __setattr__(self, name: str, value) -> None:
        if name not in _fields(type(self)):
            raise AttributeError(_no_field(type(self), name))
        object.__setattr__(self, name, self._check(name, value))

    def _check(self, name: str, value):
        return value

    @classmethod
    def _refuse(cls, unknown: dict) -> None:
        if unknown:
            raise ValueError(_no_field(cls, sorted(unknown)[0]))

    def __repr__(self) -> str:
        values = ", ".join(f"{f}={getattr(self, f)!r}" for f in _fields(type(self)))
        return f"{type(self).__name__}({values})"


@functools.cache
def _fields(cls) -> tuple[str, ...]:
    params = inspect.signature(cls.__init__).parameters.values()
    return tuple(p.name for p in params
                 if p.name != "self" and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _no_field(cls, name: str) -> str:
    if name in cls._TF_ONLY:
        return (f"{cls.__name__}.{name} is a TensorFlow field this engine does not support "
                f"({cls._TF_ONLY[name]}); remove it.")
    return (f'Protocol message {cls.__name__} has no "{name}" field. Known fields: '
            f"{', '.join(_fields(cls))}")


def _int_field(cls_name: str, name: str, value, minimum: int | None = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{cls_name}.{name} must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{cls_name}.{name} must be >= {minimum}, got {value}")
    return value


class GPUOptions(_Message):
    """Honoured on CUDA devices. `visible_device_list` ("1,0") picks and orders the CUDA
    devices the session calls GPU:0, GPU:1, ...; `per_process_gpu_memory_fraction` caps
    torch's caching allocator on each of them (a process-wide torch setting: the last
    session that sets it wins); `allow_growth`: memory is taken as needed, as torch always
    does (TF without it would map the whole budget at session start, we do not)."""

    _TF_ONLY = {
        "allocator_type": "torch's caching allocator is the only allocator",
        "deferred_deletion_bytes": "torch's caching allocator manages freeing",
        "polling_active_delay_usecs": "no GPU event polling thread",
        "polling_inactive_delay_msecs": "no GPU event polling thread",
        "force_gpu_compatible": "host tensors are not pinned",
        "experimental": "no experimental GPU options",
    }

    def __init__(self, allow_growth: bool = False, per_process_gpu_memory_fraction: float = 0.0,
                 visible_device_list: str = "", **unknown):
        self._refuse(unknown)
        self.allow_growth = allow_growth
        self.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction
        self.visible_device_list = visible_device_list

    def _check(self, name: str, value):
        if name == "allow_growth":
            return bool(value)
        if name == "per_process_gpu_memory_fraction":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not 0.0 <= value <= 1.0:
                raise ValueError(f"GPUOptions.per_process_gpu_memory_fraction must be a number "
                                 f"in [0, 1] (0: no cap), got {value!r}; fractions above 1 "
                                 "(unified-memory oversubscription) are not supported")
            return float(value)
        if not isinstance(value, str):
            raise TypeError(f"GPUOptions.visible_device_list must be a string such as '0,1', "
                            f"got {value!r}")
        return value

    def as_dict(self) -> dict:
        return {f: getattr(self, f) for f in _fields(GPUOptions)}


class ConfigProto(_Message):
    """Session options.
    - `virtual_gpus=N` is ours: the session sees exactly N GPUs, each a CUDA device where the
      machine has one, else a GPU backed by host memory.
    - `device_count`: {'GPU': n} keeps at most n GPUs (0 hides them); {'CPU': k} makes k CPU
      devices (CPU:0 .. CPU:k-1), all in host memory, as TF does.
    - `inter_op_parallelism_threads`: at most that many of a session's partitions run kernels
      at once (0: one thread per partition); `intra_op_parallelism_threads`: torch's thread
      count (process-wide in torch: set while the session is open, restored at close).
    - `operation_timeout_in_ms`: the deadline of every step whose RunOptions set none.
    - `trace_every_n_steps` is ours: with a logdir, per-op stats are recorded on the first
      step and every Nth one after it (None: 100; 0: only on steps whose RunOptions ask).
    - `check_numerics=True` is ours: every step checks each op's float outputs and stops at
      the first NaN or Inf, recording an alert that names the op (engine/debug/numerics.py)."""

    _TF_ONLY = {
        "use_per_session_threads": "each session already owns its partition threads",
        "session_inter_op_thread_pool": "each session owns one partition pool",
        "placement_period": "placement is recomputed only when the graph changes",
        "device_filters": "no remote devices to filter",
        "pluggable_device_options": "no pluggable devices",
        "graph_options": "no Grappler or graph optimizer options",
        "rpc_options": "the in-process target has no RPC layer",
        "cluster_def": "the in-process target has no cluster",
        "isolate_session_state": "sessions never share variables",
        "share_cluster_devices_in_session": "the in-process target has no cluster",
        "experimental": "no experimental session options",
    }

    def __init__(self, log_device_placement: bool = False, allow_soft_placement: bool = False,
                 virtual_gpus: int | None = None, device_count: dict | None = None,
                 inter_op_parallelism_threads: int = 0, intra_op_parallelism_threads: int = 0,
                 gpu_options: GPUOptions | None = None, operation_timeout_in_ms: int = 0,
                 trace_every_n_steps: int | None = None, check_numerics: bool = False,
                 **unknown):
        self._refuse(unknown)
        self.log_device_placement = log_device_placement
        self.allow_soft_placement = allow_soft_placement
        self.virtual_gpus = virtual_gpus
        self.device_count = device_count
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.gpu_options = gpu_options
        self.operation_timeout_in_ms = operation_timeout_in_ms
        self.trace_every_n_steps = trace_every_n_steps
        self.check_numerics = check_numerics

    def _check(self, name: str, value):
        if name in ("log_device_placement", "allow_soft_placement", "check_numerics"):
            return bool(value)
        if name == "virtual_gpus":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                raise ValueError(f"ConfigProto.virtual_gpus must be a non-negative int, got "
                                 f"{value!r}")
            return value
        if name == "device_count":
            if value is not None and not isinstance(value, dict):
                raise TypeError(f"ConfigProto.device_count must be a dict such as "
                                f"{{'GPU': 0}}, got {value!r}")
            return dict(value or {})
        if name == "inter_op_parallelism_threads" and isinstance(value, int) and value < 0:
            raise ValueError("ConfigProto.inter_op_parallelism_threads < 0 (run every op in "
                             "the caller's thread) is not supported: partitions run on their "
                             "own threads; 1 runs one partition at a time")
        if name in ("inter_op_parallelism_threads", "intra_op_parallelism_threads",
                    "operation_timeout_in_ms"):
            return _int_field("ConfigProto", name, value)
        if name == "gpu_options":
            if value is not None and not isinstance(value, GPUOptions):
                raise TypeError(f"ConfigProto.gpu_options must be a GPUOptions, got {value!r}")
            return value or GPUOptions()
        if name == "trace_every_n_steps":
            return None if value is None else _int_field("ConfigProto", name, value)
        return value

    def as_dict(self) -> dict:
        out = {f: getattr(self, f) for f in _fields(ConfigProto)}
        out["gpu_options"] = self.gpu_options.as_dict()
        return out


class RunOptions(_Message):
    """Per-step options: `trace_level` > NO_TRACE records per-op stats into RunMetadata (and
    the run store); `timeout_in_ms` is the step's deadline (DeadlineExceededError past it);
    `output_partition_graphs` fills RunMetadata.partition_graphs;
    `report_tensor_allocations_upon_oom` lists the variables held on the device in an OOM
    error instead of TF's hint."""

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    _TF_ONLY = {
        "inter_op_thread_pool": "each session owns one partition pool",
        "debug_options": "tfdbg watches are not supported through RunOptions",
        "experimental": "no experimental run options",
    }

    def __init__(self, trace_level: int = 0, output_partition_graphs: bool = False,
                 timeout_in_ms: int = 0, report_tensor_allocations_upon_oom: bool = False,
                 **unknown):
        self._refuse(unknown)
        self.trace_level = trace_level
        self.output_partition_graphs = output_partition_graphs
        self.timeout_in_ms = timeout_in_ms
        self.report_tensor_allocations_upon_oom = report_tensor_allocations_upon_oom

    def _check(self, name: str, value):
        if name == "trace_level" and value not in (0, 1, 2, 3):
            raise ValueError(f"RunOptions.trace_level must be one of NO_TRACE, SOFTWARE_TRACE, "
                             f"HARDWARE_TRACE, FULL_TRACE (0-3), got {value!r}")
        if name == "timeout_in_ms":
            return _int_field("RunOptions", name, value)
        if name in ("output_partition_graphs", "report_tensor_allocations_upon_oom"):
            return bool(value)
        return value


@dataclass
class NodeOutput:
    slot: int
    total_bytes: int


@dataclass
class NodeExecStats:
    """TF's NodeExecStats fields (microseconds)."""
    node_name: str
    all_start_micros: int
    op_start_rel_micros: int
    op_end_rel_micros: int
    all_end_rel_micros: int
    timeline_label: str
    thread_id: int
    output: list[NodeOutput] = field(default_factory=list)
    op: str = ""


@dataclass
class DeviceStepStats:
    device: str
    node_stats: list[NodeExecStats] = field(default_factory=list)


@dataclass
class StepStats:
    dev_stats: list[DeviceStepStats] = field(default_factory=list)


class RunMetadata:
    def __init__(self):
        self.step_stats = StepStats()
        self.partition_graphs: list = []      # engine.graph_def.GraphDef per device
        self.cost_graph = None

    def Clear(self) -> None:  # noqa: N802 - protobuf's spelling
        self.__init__()
