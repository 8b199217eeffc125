"""`calibrate`: runs the float graph over real samples and records the min and max of every
tensor the eightbit pass can take a range for (quantize_graph.calibration_tensors)."""

from __future__ import annotations

import numpy as np

from engine import errors
from engine.graph_def import GraphDef
from engine.passes.quantize_graph import Ranges, calibration_tensors

PLACEHOLDERS = ("Placeholder", "PlaceholderWithDefault")


def _fail(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, f"calibrate: {message}")


def check_samples(graph_def: GraphDef, samples: dict) -> int:
    """Refuses samples for unknown placeholders, or of the wrong dtype or shape, naming the
    placeholder; returns how many samples there are (the arrays' common first dimension)."""
    if not isinstance(samples, dict) or not samples:
        raise _fail("samples must be a non-empty dict of placeholder name -> array")
    placeholders = {n.name: n for n in graph_def.node if n.op in PLACEHOLDERS}
    counts = set()
    for name, value in samples.items():
        key = name[:-2] if isinstance(name, str) and name.endswith(":0") else name
        if key not in placeholders:
            raise _fail(f"no placeholder named {name!r} in the graph (its placeholders: "
                        f"{', '.join(sorted(placeholders)) or 'none'})")
        node = placeholders[key]
        array = np.asarray(value)
        want = node.attr["dtype"]
        if array.dtype != want.numpy_dtype:
            raise _fail(f"placeholder '{key}' expects {want.name} samples, got {array.dtype} "
                        f"(convert them with .astype(np.{want.numpy_dtype}))")
        shape = node.attr.get("shape")
        dims = None if shape is None or shape.dims is None else list(shape.dims)
        if dims is not None and (array.ndim != len(dims) or any(
                d is not None and d != s for d, s in zip(dims, array.shape))):
            shown = "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"
            raise _fail(f"placeholder '{key}' expects samples of shape {shown}, got "
                        f"{list(array.shape)}")
        if array.ndim == 0:
            raise _fail(f"placeholder '{key}': samples need a first (batch) dimension")
        counts.add(array.shape[0])
    if len(counts) != 1:
        raise _fail(f"the sample arrays hold different numbers of samples: {sorted(counts)}")
    return counts.pop()


def calibrate(graph_def: GraphDef, samples: dict, batch_size: int = 256,
              tensors: list[str] | None = None, progress=None) -> Ranges:
    """(min, max) of each tensor the eightbit pass can use (default
    calibration_tensors(graph_def)) over all the samples, fed in batches of `batch_size`.
    `progress(done, total)`, if given, is called after each batch."""
    from engine.graph import Graph
    from engine.graph_def import import_graph_def
    from engine.runtime.session import Session

    total = check_samples(graph_def, samples)
    if batch_size < 1:
        raise _fail(f"batch_size must be at least 1, got {batch_size}")
    wanted = calibration_tensors(graph_def) if tensors is None else list(tensors)
    feeds = {k if k.endswith(":0") else f"{k}:0": np.asarray(v) for k, v in samples.items()}
    fetch = [t for t in wanted if t not in feeds]
    ranges: Ranges = {t: (float(np.min(v)), float(np.max(v))) for t, v in feeds.items()
                      if t in wanted}
    if not fetch:
        return ranges
    graph = Graph()
    import_graph_def(graph_def, name="", graph=graph)
    with Session(graph=graph) as session:
        for start in range(0, total, batch_size):
            batch = {k: v[start:start + batch_size] for k, v in feeds.items()}
            for name, value in zip(fetch, session.run(fetch, batch)):
                value = np.asarray(value)
                if value.size == 0:
                    continue
                lo, hi = float(value.min()), float(value.max())
                old = ranges.get(name)
                ranges[name] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
            if progress is not None:
                progress(min(start + batch_size, total), total)
    return ranges
