"""Small recorded graphs for the viz tests, built from schema records only (a uniquely
named module so test files can import it; conftest only wraps it in fixtures)."""

from __future__ import annotations

from engine.record.schema import (
    DEFAULT,
    EXPLICIT,
    SOFT_FALLBACK,
    GraphRecord,
    NodeRecord,
    PlacementRecord,
    TensorSpec,
)

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"


def make_node(name: str, op: str, inputs: tuple[str, ...] = (), device: str = "",
              shape: tuple | None = (None, 4), dtype: str = "float32") -> NodeRecord:
    return NodeRecord(name=name, op=op, inputs=inputs, device=device, attrs={"T": dtype},
                      outputs=(TensorSpec(dtype, shape),), stack=(f"model.py:1 in build_{op}",))


def placed(node: NodeRecord, device: str, reason: str = DEFAULT,
           detail: str = "") -> PlacementRecord:
    return PlacementRecord(node=node.name, op=node.op, requested=node.device, assigned=device,
                           reason=reason, detail=detail,
                           log_line=f"{node.name}: ({node.op}): {device}")


def mlp_records() -> tuple[GraphRecord, list[PlacementRecord]]:
    """x -> layer1 (CPU) -> layer2 (GPU:0) -> loss (GPU:1), with a soft fallback."""
    nodes = [
        make_node("x", "Placeholder"),
        make_node("layer1/weights", "VariableV2", shape=(4, 4)),
        make_node("layer1/weights/read", "Identity", ("layer1/weights",), shape=(4, 4)),
        make_node("layer1/MatMul", "MatMul", ("x", "layer1/weights/read")),
        make_node("layer1/Relu", "Relu", ("layer1/MatMul",)),
        make_node("layer2/weights", "VariableV2", device="/device:GPU:3", shape=(4, 4)),
        make_node("layer2/MatMul", "MatMul", ("layer1/Relu", "layer2/weights")),
        make_node("layer2/Relu", "Relu", ("layer2/MatMul", "^layer1/Relu")),
        make_node("loss/Square", "Square", ("layer2/Relu",)),
        make_node("loss/Mean", "Mean", ("loss/Square",), shape=()),
    ]
    devices = {"x": CPU0, "layer1/weights": CPU0, "layer1/weights/read": CPU0,
               "layer1/MatMul": CPU0, "layer1/Relu": CPU0, "layer2/weights": GPU0,
               "layer2/MatMul": GPU0, "layer2/Relu": GPU0, "loss/Square": GPU1,
               "loss/Mean": GPU1}
    placements = []
    for node in nodes:
        if node.name == "layer2/weights":
            placements.append(placed(node, GPU0, SOFT_FALLBACK, "no device GPU:3; moved to GPU:0"))
        else:
            reason = EXPLICIT if node.device else DEFAULT
            placements.append(placed(node, devices[node.name], reason))
    return GraphRecord(version=1, nodes=tuple(nodes)), placements
