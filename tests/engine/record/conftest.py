"""Shared fixtures for the run store tests: a log directory and one sample of every engine
record type, small enough to compare field by field."""

from __future__ import annotations

import dataclasses
import time
from types import SimpleNamespace

import pytest

from engine.record.schema import (
    COLOCATED,
    DEFAULT,
    EXPLICIT,
    CutEdgeRecord,
    DeviceRecord,
    GraphRecord,
    NodeRecord,
    OpStatRecord,
    PartitionRecord,
    PlacementRecord,
    PlanRecord,
    StepRecord,
    TensorSpec,
    TransferRecord,
)

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
KEY = f"{CPU};0000000000000001;{GPU};edge_3_x;0:0"


@pytest.fixture
def logdir(tmp_path):
    return tmp_path / "logs"


@pytest.fixture
def samples():
    """Record factories, as a fixture so test modules need not import this conftest."""
    return SimpleNamespace(
        devices=sample_devices, graph=sample_graph, placements=sample_placements,
        plan=sample_plan, step=sample_step, without_stamps=without_stamps,
        CPU=CPU, GPU=GPU, KEY=KEY)


def without_stamps(record):
    """The record with the fields the writer fills (seq, wall_time) reset."""
    fields = {f.name for f in dataclasses.fields(record)}
    stamps = {k: v for k, v in (("seq", 0), ("wall_time", 0.0)) if k in fields}
    return dataclasses.replace(record, **stamps)


def sample_devices():
    return [DeviceRecord(CPU, "CPU", 0, "host CPU", False),
            DeviceRecord(GPU, "GPU", 0, "virtual GPU backed by host memory", True)]


def sample_graph(version=1):
    nodes = (
        NodeRecord("x", "Placeholder", (), "", {"dtype": "float32", "shape": [None, 3]},
                   (TensorSpec("float32", (None, 3)),), ("train.py:10 in build",)),
        NodeRecord("w", "VariableV2", (), "/device:GPU:0", {"dtype": "float32"},
                   (TensorSpec("float32_ref", (3, 2)),), ("train.py:11 in build",)),
        NodeRecord("y", "MatMul", ("x", "w", "^init"), "", {"transpose_a": False},
                   (TensorSpec("float32", None),), ("train.py:12 in build", "lib.py:3 in mm")),
    )
    return GraphRecord(version, nodes)


def sample_placements(version=1):
    return [
        PlacementRecord("x", "Placeholder", "", CPU, DEFAULT, "highest priority device",
                        f"x: (Placeholder): {CPU}", version),
        PlacementRecord("w", "VariableV2", "/device:GPU:0", GPU, EXPLICIT, "requested",
                        f"w: (VariableV2): {GPU}", version),
        PlacementRecord("y", "MatMul", "", GPU, COLOCATED, "with w",
                        f"y: (MatMul): {GPU}", version),
    ]


def sample_plan(plan=0, version=1):
    record = PlanRecord(plan, version, ("y:0",), ("x:0",), (), (CPU, GPU))
    partitions = [PartitionRecord(plan, CPU, ("x", "send_x")),
                  PartitionRecord(plan, GPU, ("recv_x", "w", "y"))]
    edges = [CutEdgeRecord(plan, "x:0", CPU, GPU, "send_x", "recv_x", KEY, "float32",
                           (None, 3), ("y",), 0)]
    return record, partitions, edges


def sample_step(step=0, plan=0, ops=3, moved=48):
    record = StepRecord(step, plan, time.time(), 125.0, ops, moved)
    stats = [OpStatRecord(step, f"op{i}", "MatMul", GPU, 10.0 * i, 10.0 * i + 5, 24, i % 2)
             for i in range(ops)]
    transfers = [TransferRecord(step, KEY, "x:0", CPU, GPU, moved)]
    return record, stats, transfers
