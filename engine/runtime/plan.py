"""An execution plan for one (fetches, feeds, targets, graph version) signature: the plan as
data (a PlanSpec, engine/runtime/plan_spec.py: pruned graph, partitions, executor kinds) and
each partition's executor built from it once (compiled, or dynamic where there is control
flow: engine/runtime/executor_api.py); `run` executes the partitions (concurrently when there
are several, through a rendezvous, under the step's deadline and the session's inter-op gate)
and returns the fetched values."""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass

from engine import errors
from engine.graph_def import GraphDef
from engine.kernels.registry import KernelContext
from engine.passes.partition import PartitionResult
from engine.passes.prune import ClientGraph
from engine.runtime.executor_api import PartitionExecutor, make_executor
from engine.runtime.partition_threads import PartitionThreads
from engine.runtime.plan_spec import PlanKey, PlanSpec
from engine.runtime.rendezvous import Deadline, Gate, Rendezvous

__all__ = ["Plan", "PlanKey", "PlanSpec", "StepControl"]

_plan_ids = itertools.count(1)


class Plan:
    def __init__(self, key: PlanKey, graph_def: GraphDef, placement: dict[str, str],
                 devices_by_name: dict, client_device: str, variables):
        self._start(PlanSpec.build(key, graph_def, placement, client_device), devices_by_name,
                    variables)

    @classmethod
    def from_spec(cls, spec: PlanSpec, devices_by_name: dict, variables) -> Plan:
        """The plan that runs `spec` (built here, or decoded by PlanSpec.from_json) on these
        devices, with these variables."""
        plan = cls.__new__(cls)
        plan._start(spec, devices_by_name, variables)
        return plan

    def _start(self, spec: PlanSpec, devices_by_name: dict, variables) -> None:
        self.id = next(_plan_ids)
        self.spec = spec
        self.key = spec.key
        self.client: ClientGraph = spec.client
        self.result: PartitionResult = spec.result()
        peers = {name: d.torch_device for name, d in devices_by_name.items()}
        self.partitions: list[PartitionExecutor] = [
            make_executor(spec.executors[d], devices_by_name[d], nodes,
                          KernelContext(devices_by_name[d], devices_by_name[d].torch_device,
                                        variables),
                          f"plan {self.id} {d}", peers)
            for d, nodes in spec.partitions.items()]
        self.num_ops = sum(len(p.nodes) for p in self.partitions)
        self.num_kernels = sum(p.num_kernels for p in self.partitions)

    def partition_graphs(self) -> list[GraphDef]:
        return [GraphDef(p.nodes, self.key.graph_version) for p in self.partitions]

    def run(self, feeds: list, pool: PartitionThreads | None, stats: list | None,
            control: StepControl | None = None) -> list:
        """Runs one step. `control` (optional) carries the deadline and gate in and the bytes
        that crossed devices out."""
        control = control or StepControl()
        out = [None] * len(self.key.fetches)
        if len(self.partitions) == 1:
            with _gate_slot(control):
                self.partitions[0].run(feeds, out, None, stats, control.deadline)
            return out
        rendezvous = Rendezvous(control.deadline, control.gate, control.step_id)
        futures = [pool.submit(_run_one, p, feeds, out, rendezvous, stats, control)
                   for p in self.partitions[1:]]
        failures = []
        try:
            _run_one(self.partitions[0], feeds, out, rendezvous, stats, control)
        except BaseException as e:  # noqa: BLE001 - collected and re-raised below
            failures.append(e)
        for f in futures:
            try:
                f.result()
            except BaseException as e:  # noqa: BLE001
                failures.append(e)
        control.bytes_moved = rendezvous.bytes_sent
        if failures:
            raise _first_cause(failures)
        return out


@dataclass
class StepControl:
    deadline: Deadline | None = None
    gate: Gate | None = None
    bytes_moved: int = 0
    step_id: int = 0          # the session's step counter; the rendezvous serves this step


def _run_one(part: PartitionExecutor, feeds, out, rendezvous: Rendezvous, stats,
             control: StepControl) -> None:
    try:
        with _gate_slot(control):
            part.run(feeds, out, rendezvous, stats, control.deadline)
    except BaseException as e:
        rendezvous.abort(e)
        raise


def _gate_slot(control: StepControl):
    if control.gate is None:
        return contextlib.nullcontext()
    return control.gate.held(control.deadline)


def _first_cause(failures: list[BaseException]) -> BaseException:
    """The partition that really failed, not the ones cancelled because of it (TF 4.5)."""
    for e in failures:
        if not isinstance(e, errors.CancelledError):
            return e
    return failures[0]
