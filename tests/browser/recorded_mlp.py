"""Writes realistic runs with RunWriter for the workbench tests: a small MLP graph with
scopes layer1/, layer2/, loss/, gradients/, train/, placed on CPU:0 and two virtual GPUs
(cut edges between them, one soft fallback), a plan with partitions, steps and a loss curve.
RecordedRuns says what the tests may rely on, so a fixture that records the real demo
instead only has to fill the same fields."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.record import RunWriter
from engine.record.schema import (
    COLOCATED,
    CONSUMERS,
    DEFAULT,
    EXPLICIT,
    SOFT_FALLBACK,
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
)

PREFIX = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0, GPU1 = PREFIX + "CPU:0", PREFIX + "GPU:0", PREFIX + "GPU:1"
DEVICES = (
    DeviceRecord(CPU0, "CPU", 0, "host CPU", False),
    DeviceRecord(GPU0, "GPU", 0, "virtual GPU backed by host memory", True),
    DeviceRecord(GPU1, "GPU", 1, "virtual GPU backed by host memory", True),
)
STACK = ("train_mlp.py:41 in <module>", "train_mlp.py:18 in build_model")
LOSS_STEPS = 50


@dataclass(frozen=True)
class RecordedRuns:
    logdir: Path
    run: str                   # has a graph, placements, a soft fallback and a "loss" curve
    runs: tuple[str, ...]      # every readable run
    unreadable: str            # a folder that is not a run store
    node: str                  # an op node to click on the graph page
    node_op: str
    node_device: str           # its assigned device's short label, as the inspector shows it
    soft_fallback_node: str


# name, op, inputs, requested device, assigned device, reason, dtype, shape
MLP_NODES = (
    ("x", "Placeholder", (), "/device:CPU:0", CPU0, EXPLICIT, "float32", (None, 64)),
    ("labels", "Placeholder", (), "/device:CPU:0", CPU0, EXPLICIT, "float32", (None, 10)),
    ("layer1/weights", "VariableV2", (), "/device:CPU:0", CPU0, EXPLICIT, "float32_ref", (64, 32)),
    ("layer1/weights/initial_value", "Const", (), "", CPU0, COLOCATED, "float32", (64, 32)),
    ("layer1/weights/Assign", "Assign", ("layer1/weights", "layer1/weights/initial_value"),
     "/device:CPU:0", CPU0, COLOCATED, "float32_ref", (64, 32)),
    ("layer1/weights/read", "Identity", ("layer1/weights",), "", CPU0, COLOCATED, "float32",
     (64, 32)),
    ("layer1/MatMul", "MatMul", ("x", "layer1/weights/read"), "/device:GPU:0", GPU0, EXPLICIT,
     "float32", (None, 32)),
    ("layer1/Relu", "Relu", ("layer1/MatMul",), "/device:GPU:0", GPU0, EXPLICIT, "float32",
     (None, 32)),
    ("layer2/weights", "VariableV2", (), "/device:GPU:1", GPU1, EXPLICIT, "float32_ref", (32, 10)),
    ("layer2/weights/read", "Identity", ("layer2/weights",), "", GPU1, COLOCATED, "float32",
     (32, 10)),
    ("layer2/MatMul", "MatMul", ("layer1/Relu", "layer2/weights/read"), "/device:GPU:1", GPU1,
     EXPLICIT, "float32", (None, 10)),
    ("layer2/step_count", "VariableV2", (), "/device:GPU:1", CPU0, SOFT_FALLBACK, "int32_ref", ()),
    ("loss/sub", "Sub", ("layer2/MatMul", "labels"), "", GPU0, DEFAULT, "float32", (None, 10)),
    ("loss/Square", "Square", ("loss/sub",), "", GPU0, DEFAULT, "float32", (None, 10)),
    ("loss/Const", "Const", (), "", GPU0, CONSUMERS, "int32", (2,)),
    ("loss/Mean", "Mean", ("loss/Square", "loss/Const"), "", GPU0, DEFAULT, "float32", ()),
    ("gradients/Fill", "Fill", (), "", GPU0, CONSUMERS, "float32", ()),
    ("gradients/loss/Mean_grad/Tile", "Tile", ("gradients/Fill",), "", GPU0, DEFAULT, "float32",
     (None, 10)),
    ("gradients/loss/Square_grad/Mul", "Mul", ("gradients/loss/Mean_grad/Tile", "loss/sub"), "",
     GPU0, DEFAULT, "float32", (None, 10)),
    ("gradients/layer2/MatMul_grad/MatMul", "MatMul",
     ("gradients/loss/Square_grad/Mul", "layer2/weights/read"), "", GPU0, DEFAULT, "float32",
     (None, 32)),
    ("gradients/layer2/MatMul_grad/MatMul_1", "MatMul",
     ("layer1/Relu", "gradients/loss/Square_grad/Mul"), "", GPU0, DEFAULT, "float32", (32, 10)),
    ("gradients/layer1/Relu_grad/ReluGrad", "ReluGrad",
     ("gradients/layer2/MatMul_grad/MatMul", "layer1/Relu"), "", GPU0, DEFAULT, "float32",
     (None, 32)),
    ("gradients/layer1/MatMul_grad/MatMul_1", "MatMul",
     ("x", "gradients/layer1/Relu_grad/ReluGrad"), "", GPU0, DEFAULT, "float32", (64, 32)),
    ("train/learning_rate", "Const", (), "", CPU0, CONSUMERS, "float32", ()),
    ("train/update_layer1/weights/ApplyGradientDescent", "ApplyGradientDescent",
     ("layer1/weights", "train/learning_rate", "gradients/layer1/MatMul_grad/MatMul_1"), "",
     CPU0, COLOCATED, "float32_ref", (64, 32)),
    ("train/update_layer2/weights/ApplyGradientDescent", "ApplyGradientDescent",
     ("layer2/weights", "train/learning_rate", "gradients/layer2/MatMul_grad/MatMul_1"), "",
     GPU1, COLOCATED, "float32_ref", (32, 10)),
    ("train/step_count/AssignAdd", "AssignAdd", ("layer2/step_count",), "", CPU0, COLOCATED,
     "int32_ref", ()),
    ("train", "NoOp", ("^train/update_layer1/weights/ApplyGradientDescent",
                       "^train/update_layer2/weights/ApplyGradientDescent",
                       "^train/step_count/AssignAdd"), "", GPU0, DEFAULT, "", None),
)


def _detail(reason: str, requested: str, assigned: str) -> str:
    if reason == SOFT_FALLBACK:
        return (f"no GPU kernel for VariableV2 with dtype int32; allow_soft_placement moved it "
                f"from {requested} to {assigned}")
    return {EXPLICIT: f"requested {requested}", COLOCATED: "colocated with its variable",
            CONSUMERS: "placed with all of its consumers",
            DEFAULT: "highest-priority device with a kernel"}[reason]


def mlp_graph() -> tuple[GraphRecord, list[PlacementRecord]]:
    nodes, placements = [], []
    for name, op, inputs, requested, assigned, reason, dtype, shape in MLP_NODES:
        outputs = () if op == "NoOp" else (TensorSpec(dtype, shape),)
        nodes.append(NodeRecord(name, op, inputs, requested, {"T": dtype} if dtype else {},
                                outputs, STACK))
        placements.append(PlacementRecord(
            name, op, requested, assigned, reason, _detail(reason, requested, assigned),
            f"{name}: ({op}): {assigned}", graph_version=1))
    return GraphRecord(1, tuple(nodes)), placements


def _cuts(graph: GraphRecord, devices: dict[str, str]) -> list[CutEdgeRecord]:
    cuts = []
    for node in graph.nodes:
        for spelled in node.inputs:
            src = spelled.lstrip("^").split(":")[0]
            if devices[src] == devices[node.name]:
                continue
            edge = len(cuts)
            tensor = spelled if spelled.startswith("^") else f"{src}:0"
            key = f"{devices[src]};0000000000000001;{devices[node.name]};edge_{edge}_{src};0:0"
            cuts.append(CutEdgeRecord(1, tensor, devices[src], devices[node.name],
                                      f"{src}/_{2 * edge}", f"{src}/_{2 * edge + 1}", key,
                                      "float32", None, (node.name,), 4096))
    return cuts


def write_mlp_run(logdir: Path, name: str, learning_rate: float, seed: int) -> str:
    graph, placements = mlp_graph()
    devices = {p.node: p.assigned for p in placements}
    cuts = _cuts(graph, devices)
    partitions = [PartitionRecord(1, device, tuple(n for n, d in devices.items() if d == device))
                  for device in (CPU0, GPU0, GPU1)]
    rng = np.random.RandomState(seed)
    with RunWriter(logdir, name, config={"model": "mlp", "learning_rate": learning_rate}) as run:
        run.devices(DEVICES)
        run.graph(graph)
        run.placements(placements)
        run.plan(PlanRecord(1, 1, ("loss/Mean:0",), ("x:0", "labels:0"), ("train",),
                            (CPU0, GPU0, GPU1)), partitions, cuts)
        for step in range(LOSS_STEPS):
            stats = [OpStatRecord(step, n.name, n.op, devices[n.name], 10.0 * i, 10.0 * i + 8,
                                  256) for i, n in enumerate(graph.nodes)]
            run.step(StepRecord(step, 1, 1.7e9 + step, 400.0, len(stats), 4096 * len(cuts)),
                     stats, [])
            loss = 2.3 * np.exp(-learning_rate * step / 4) + 0.1 + 0.05 * rng.rand()
            run.scalar("loss", float(loss), step)
        path = run.path
    return Path(path).name


def write_unreadable(logdir: Path, name: str = "broken-run") -> str:
    folder = logdir / name
    folder.mkdir(parents=True)
    (folder / "run.sqlite").write_bytes(b"this is not a database")
    return name


def record_sample_runs(logdir: Path) -> RecordedRuns:
    first = write_mlp_run(logdir, "mlp-lr0.5", 0.5, seed=1)
    second = write_mlp_run(logdir, "mlp-lr0.1", 0.1, seed=2)
    return RecordedRuns(logdir=logdir, run=first, runs=(first, second),
                        unreadable=write_unreadable(logdir), node="layer1/MatMul",
                        node_op="MatMul", node_device="GPU:0",
                        soft_fallback_node="layer2/step_count")


@dataclass(frozen=True)
class DamagedRuns:
    logdir: Path
    missing_graph: str         # its graph's side file is gone: listed damaged, no graph
    missing_file: str          # the side file's name, as messages give it
    bad_scalars: str           # a scalar row holds text: listed finished, the curve fails


def write_damaged_runs(logdir: Path) -> DamagedRuns:
    """Two MLP runs damaged after recording, beside whatever runs logdir holds already; the
    one with the missing graph is the newest, so a page asked for no run meets it first."""
    bad_scalars = Path(logdir) / write_mlp_run(logdir, "bad-scalars", 0.3, seed=3)
    conn = sqlite3.connect(bad_scalars / "run.sqlite")
    with conn:
        conn.execute("UPDATE scalars SET value = 'not a number' WHERE step = 3")
    conn.close()
    graph, placements = mlp_graph()
    big = NodeRecord("constants/table", "Const", (), "", {"value": [0.5] * 20_000},
                     (TensorSpec("float32", (20_000,)),), STACK)
    with RunWriter(logdir, "damaged-graph") as run:
        run.devices(DEVICES)
        run.graph(GraphRecord(1, graph.nodes + (big,)))
        run.placements(placements)
        for step in range(LOSS_STEPS):
            run.scalar("loss", 1.0 / (step + 1), step)
        missing_graph = Path(run.path)
    (blob,) = (missing_graph / "blobs").iterdir()
    blob.unlink()
    return DamagedRuns(Path(logdir), missing_graph.name, blob.name, bad_scalars.name)
