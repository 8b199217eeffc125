"""What a quantized graph costs and gains: accuracy on held-out data (fed in batches, argmax
against the labels) and the bytes of the graph file save_graph writes (.json plus its .npz, or
the one compact file)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from engine import errors
from engine.graph_def import GraphDef


def accuracy(graph_def: GraphDef, images: np.ndarray, labels: np.ndarray,
             input_name: str = "images", output_name: str = "probabilities",
             batch_size: int = 256, progress=None) -> float:
    """The fraction of `images` whose argmax over `output_name` equals the label."""
    from engine.graph import Graph
    from engine.graph_def import import_graph_def
    from engine.runtime.session import Session

    if len(images) != len(labels):
        raise errors.InvalidArgumentError(None, None, f"accuracy: {len(images)} images but "
                                                      f"{len(labels)} labels")
    if not len(images):
        raise errors.InvalidArgumentError(None, None, "accuracy: no images to evaluate")
    graph = Graph()
    import_graph_def(graph_def, name="", graph=graph)
    correct = 0
    with Session(graph=graph) as session:
        for start in range(0, len(images), batch_size):
            batch = images[start:start + batch_size]
            out = session.run(f"{output_name}:0", {f"{input_name}:0": batch})
            correct += int(np.sum(np.asarray(out).argmax(-1) == labels[start:start + batch_size]))
            if progress is not None:
                progress(min(start + batch_size, len(images)), len(images))
    return correct / len(images)


def without_stacks(graph_def: GraphDef) -> GraphDef:
    """The graph with every node's creation stack dropped (what it does, not where it was
    written): for files meant to be small."""
    from engine.graph_io import without_stacks as drop
    return drop(graph_def)


def file_bytes(graph_def: GraphDef, strip_stacks: bool = False, compact: bool = False) -> int:
    """The bytes save_graph writes for the graph: as JSON, the JSON and its side .npz (whose
    name the JSON holds), if any; `compact`, the one compact file. Creation stacks are kept
    unless `strip_stacks`, in both forms, so the two compare like for like."""
    from engine.graph_io import graph_file_bytes, save_graph

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "graph.json"
        save_graph(graph_def, path, compact=compact, stacks=not strip_stacks)
        return graph_file_bytes(path)


def constant_bytes(graph_def: GraphDef) -> int:
    """The bytes of the constants' values (the weights), as stored in memory."""
    return int(sum(np.asarray(n.attr["value"]).nbytes for n in graph_def.node
                   if n.op == "Const" and "value" in n.attr))
