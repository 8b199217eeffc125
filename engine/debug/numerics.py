"""ConfigProto(check_numerics=True): a checker sees every float output as its op ends; the first
op (in schedule order, by end time across partitions) whose output holds a NaN or Inf stops
the step, becomes an alert (inputs' statistics, creation site) and the error that names it."""

from __future__ import annotations

import dataclasses
import threading
import time
import traceback
from dataclasses import dataclass

import torch

from engine import dtypes, errors
from engine.graph import Graph
from engine.graph_def import NodeDef
from engine.kernels.debug import bad_values
from engine.record.schema import INF, NAN, NAN_AND_INF, AlertRecord, TensorSummaryRecord
from engine.runtime.executor import describe_failure

_KINDS = {"NaN": NAN, "Inf": INF, "Inf and NaN": NAN_AND_INF}


@dataclass
class Finding:
    """One op whose output held a NaN or Inf, as its partition saw it."""
    end_ns: int                          # perf_counter_ns when the check ran
    node: NodeDef
    device: str
    kind: str
    inputs: list[TensorSummaryRecord | None]
    output: TensorSummaryRecord
    error: errors.InvalidArgumentError


class CheckedStepStats(list):
    """The step-stats list of a checked step (partitions append their records to it as to
    any list) plus the findings of every partition."""

    def __init__(self):
        super().__init__()
        self.findings: list[Finding] = []
        self._lock = threading.Lock()

    def checker(self, partition):
        """chk(index, outputs, inputs) for one partition's checked step function."""
        def chk(index: int, outputs: tuple, inputs: tuple) -> None:
            for slot, value in enumerate(outputs):
                tensor = _tensor(value)
                if tensor is None or not tensor.is_floating_point():
                    continue
                found = bad_values(tensor)
                if found is not None:
                    self._stop(partition, partition.nodes[index], slot, found, tensor, inputs)
        return chk

    def _stop(self, partition, node: NodeDef, slot: int, found: str, output, inputs):
        end = time.perf_counter_ns()
        text = (f"{node.name}:{slot} : Tensor had {found} values (found by "
                f"ConfigProto(check_numerics=True) in the output of op '{node.name}' "
                f"({node.op}) on {partition.device.name})")
        error = errors.InvalidArgumentError(node, None, describe_failure(node, text))
        error._engine_node = node.name       # already names its node: not wrapped again
        finding = Finding(end, node, partition.device.name, _KINDS[found],
                          [_summary(f"input {i}", v) for i, v in enumerate(inputs)],
                          _summary(f"{node.name}:{slot}", output), error)
        with self._lock:
            self.findings.append(finding)
        raise error

    def first(self) -> Finding | None:
        return min(self.findings, key=lambda f: f.end_ns) if self.findings else None


def failure(stats, error: BaseException, step: int,
            graph: Graph) -> tuple[AlertRecord, BaseException] | None:
    """For a checked step that raised `error`: the alert of its first NaN/Inf and the error
    to raise (the finding's, unless another op failed for a reason of its own)."""
    first = stats.first() if isinstance(stats, CheckedStepStats) else None
    if first is None:
        return None
    # As in the executor: a raised error must not keep the step's tensors alive.
    for f in stats.findings:
        traceback.clear_frames(f.error.__traceback__)
    own = any(error is f.error for f in stats.findings) or isinstance(
        error, errors.CancelledError)
    return alert_record(first, step, graph), (first.error if own else error)


def alert_record(finding: Finding, step: int, graph: Graph) -> AlertRecord:
    names = _input_names(finding.node, graph)
    inputs = tuple(dataclasses.replace(s, node=name, step=step)
                   for s, name in zip(finding.inputs, names) if s is not None)
    message = str(finding.error).split("\n", 1)[0]
    return AlertRecord(step, finding.node.name, finding.node.op, finding.device, finding.kind,
                       message, inputs, dataclasses.replace(finding.output, step=step),
                       tuple(finding.node.meta.get("stack", ())))


def _input_names(node: NodeDef, graph: Graph) -> list[str]:
    """The graph's names for the node's inputs (the partition sees Recv and Arg nodes)."""
    try:
        return [t.name for t in graph.get_operation_by_name(node.name).inputs]
    except KeyError:
        return list(node.data_inputs())


def _tensor(value) -> torch.Tensor | None:
    read = getattr(value, "read", None)      # a variable's ref: its current value
    value = read() if read is not None else value
    return value if isinstance(value, torch.Tensor) else None


def _summary(name: str, value) -> TensorSummaryRecord | None:
    """Statistics computed on the tensor's own device; None for non-numeric values."""
    tensor = _tensor(value)
    if tensor is None or tensor.is_complex():
        return None
    x = tensor.detach().double()
    finite = x[torch.isfinite(x)]
    nan = float("nan")
    stats = (finite.min().item(), finite.max().item(), finite.mean().item(),
             finite.std(unbiased=False).item()) if finite.numel() else (nan, nan, nan, nan)
    return TensorSummaryRecord(
        name, 0, dtypes.as_dtype(tensor.dtype).name, tuple(tensor.shape), tensor.numel(),
        *stats, nan_count=int(torch.isnan(x).sum()), neg_inf_count=int(torch.isneginf(x).sum()),
        pos_inf_count=int(torch.isposinf(x).sum()))
