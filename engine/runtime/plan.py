"""An execution plan for one (fetches, feeds, targets, graph version) signature: prune,
partition and compile once; `run` executes the partitions (concurrently when there are
several, through a rendezvous) and returns the fetched values."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from engine import errors
from engine.graph_def import GraphDef
from engine.kernels.registry import KernelContext
from engine.passes.partition import PartitionResult, partition
from engine.passes.prune import ClientGraph, prune
from engine.runtime.executor import CompiledPartition
from engine.runtime.rendezvous import Rendezvous

_plan_ids = itertools.count(1)


@dataclass
class PlanKey:
    fetches: tuple[str, ...]
    feeds: tuple[str, ...]
    targets: tuple[str, ...]
    graph_version: int

    def as_tuple(self) -> tuple:
        return (self.fetches, self.feeds, self.targets, self.graph_version)


class Plan:
    def __init__(self, key: PlanKey, graph_def: GraphDef, placement: dict[str, str],
                 devices_by_name: dict, client_device: str, variables):
        self.id = next(_plan_ids)
        self.key = key
        self.client: ClientGraph = prune(graph_def, placement, list(key.feeds),
                                         list(key.fetches), list(key.targets), client_device)
        self.result: PartitionResult = partition(self.client)
        ordered = sorted(self.result.partitions, key=lambda d: (d != client_device, d))
        self.partitions = [
            CompiledPartition(devices_by_name[d], self.result.partitions[d],
                              KernelContext(devices_by_name[d], devices_by_name[d].torch_device,
                                            variables),
                              f"plan {self.id} {d}")
            for d in ordered]
        self.num_ops = sum(len(p.nodes) for p in self.partitions)

    def partition_graphs(self) -> list[GraphDef]:
        return [GraphDef(p.nodes, self.key.graph_version) for p in self.partitions]

    def run(self, feeds: list, pool: ThreadPoolExecutor | None, stats: list | None) -> list:
        out = [None] * len(self.key.fetches)
        if len(self.partitions) == 1:
            self.partitions[0].run(feeds, out, None, stats)
            return out
        rendezvous = Rendezvous()
        futures = [pool.submit(_run_one, p, feeds, out, rendezvous, stats)
                   for p in self.partitions[1:]]
        failures = []
        try:
            _run_one(self.partitions[0], feeds, out, rendezvous, stats)
        except BaseException as e:  # noqa: BLE001 - collected and re-raised below
            failures.append(e)
        for f in futures:
            try:
                f.result()
            except BaseException as e:  # noqa: BLE001
                failures.append(e)
        if failures:
            raise _first_cause(failures)
        return out


def _run_one(part: CompiledPartition, feeds, out, rendezvous: Rendezvous, stats) -> None:
    try:
        part.run(feeds, out, rendezvous, stats)
    except BaseException as e:
        rendezvous.abort(e)
        raise


def _first_cause(failures: list[BaseException]) -> BaseException:
    """The partition that really failed, not the ones cancelled because of it (TF 4.5)."""
    for e in failures:
        if not isinstance(e, errors.CancelledError):
            return e
    return failures[0]
