"""ConfigProto, RunOptions and RunMetadata with TF's field names, as plain Python classes
(no protobuf), plus the step-stats records RunMetadata carries."""

from __future__ import annotations

from dataclasses import dataclass, field


class GPUOptions:
    def __init__(self, allow_growth: bool = False, per_process_gpu_memory_fraction: float = 0.0,
                 visible_device_list: str = ""):
        self.allow_growth = allow_growth
        self.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction
        self.visible_device_list = visible_device_list


class ConfigProto:
    """Session options. `virtual_gpus=N` is ours: the session sees exactly N GPUs, each a
    CUDA device where the machine has one, else a GPU backed by host memory. So is
    `check_numerics=True`: every step checks each op's float outputs and stops at the first
    NaN or Inf, recording an alert that names the op (engine/debug/numerics.py)."""

    def __init__(self, log_device_placement: bool = False, allow_soft_placement: bool = False,
                 virtual_gpus: int | None = None, device_count: dict | None = None,
                 inter_op_parallelism_threads: int = 0, intra_op_parallelism_threads: int = 0,
                 gpu_options: GPUOptions | None = None, check_numerics: bool = False,
                 **unknown):
        if unknown:
            raise TypeError(f"ConfigProto got unknown field(s): {', '.join(sorted(unknown))}. "
                            "Known: log_device_placement, allow_soft_placement, virtual_gpus, "
                            "device_count, inter_op_parallelism_threads, "
                            "intra_op_parallelism_threads, gpu_options, check_numerics")
        if virtual_gpus is not None and (not isinstance(virtual_gpus, int) or virtual_gpus < 0):
            raise ValueError(f"ConfigProto.virtual_gpus must be a non-negative int, got "
                             f"{virtual_gpus!r}")
        self.log_device_placement = bool(log_device_placement)
        self.allow_soft_placement = bool(allow_soft_placement)
        self.virtual_gpus = virtual_gpus
        self.device_count = dict(device_count or {})
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.gpu_options = gpu_options or GPUOptions()
        self.check_numerics = bool(check_numerics)

    def as_dict(self) -> dict:
        return {"log_device_placement": self.log_device_placement,
                "allow_soft_placement": self.allow_soft_placement,
                "virtual_gpus": self.virtual_gpus, "device_count": self.device_count,
                "check_numerics": self.check_numerics}


class RunOptions:
    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    def __init__(self, trace_level: int = 0, output_partition_graphs: bool = False,
                 timeout_in_ms: int = 0):
        if trace_level not in (0, 1, 2, 3):
            raise ValueError(f"RunOptions.trace_level must be one of NO_TRACE, SOFTWARE_TRACE, "
                             f"HARDWARE_TRACE, FULL_TRACE (0-3), got {trace_level!r}")
        self.trace_level = trace_level
        self.output_partition_graphs = output_partition_graphs
        self.timeout_in_ms = timeout_in_ms


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
