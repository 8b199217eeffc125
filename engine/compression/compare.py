"""Per-node comparison of a graph with its quantized form: both run on the same feeds, and each
original node is measured against the quantized node standing for it (MSE, max abs error,
SQNR, cosine, histograms); the first node in execution order below a threshold is flagged."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from engine import errors
from engine.graph_def import GraphDef, NodeDef, import_graph_def, topological_order
from engine.graph_schema import parse_input
from engine.record.schema import QuantizationNodeRecord

# Noise power at 1% of the signal's (an error whose RMS is a tenth of the signal's): one
# well-ranged 8-bit tensor gives about 6 dB per bit, 40-50 dB, and a calibrated layer 30 dB
# or more, so a node under 20 dB has lost more than half of its bits to the quantization.
DEFAULT_THRESHOLD_DB = 20.0
DEFAULT_BINS = 30

# A quantized op's outputs 1 and 2 are the float range of its quantized output 0.
_RANGE_OUTPUTS = 3


@dataclass(frozen=True)
class Comparison:
    """compare()'s answer: one record per compared original node, in the original graph's
    execution order, the node flagged (None when all pass) and the nodes not compared."""
    nodes: tuple[QuantizationNodeRecord, ...]
    threshold_db: float
    flagged: str | None
    skipped: dict[str, str] = field(default_factory=dict)   # original node -> why

    def node(self, name: str) -> QuantizationNodeRecord:
        for record in self.nodes:
            if record.original == name:
                return record
        raise KeyError(f"{name!r} was not compared; compared: "
                       f"{', '.join(r.original for r in self.nodes) or 'none'}")


def compare(original: GraphDef, quantized: Any, feeds: Mapping[str, Any],
            threshold_db: float = DEFAULT_THRESHOLD_DB,
            bins: int = DEFAULT_BINS) -> Comparison:
    """Runs `original` and the quantized graph (a QuantizeResult or (graph_def, node_map),
    node_map: quantized node -> the original node it stands for) on `feeds` (placeholder
    name -> value) and compares, for every original node some quantized node stands for,
    the original's output 0 with the quantized graph's value for it, dequantized with its
    min/max where that value is quantized."""
    quantized_def, node_map = quantized
    if not isinstance(original, GraphDef) or not isinstance(quantized_def, GraphDef):
        raise TypeError("compare() expects GraphDefs: the original and (graph_def, node_map)")
    threshold = float(threshold_db)
    checked = check_feeds(original, feeds)
    order = [n for n in topological_order(original.node) if n.output_dtypes]
    standing = _standing_for(quantized_def, node_map)
    chosen, skipped = {}, {}
    for node in order:
        members = standing.get(node.name)
        if not members:
            skipped[node.name] = "no node of the quantized graph stands for it alone"
            continue
        reason = _comparable(node)
        if reason:
            skipped[node.name] = reason
            continue
        source = _representative(quantized_def, members, node)
        if source is None:
            skipped[node.name] = (f"no quantized node standing for it gives a value: "
                                  f"{', '.join(members)}")
            continue
        chosen[node.name] = (members, source)
    draws = _shared_draws(original, quantized_def, node_map)
    original_values = run_graph(original, [f"{name}:0" for name in chosen] + draws, checked)
    shared = {name: original_values[name] for name in draws}
    fetches = [name for _, source in chosen.values() for name in source.fetches()]
    quantized_values = run_graph(quantized_def, list(dict.fromkeys(fetches)),
                                 {**checked, **shared})
    records = []
    position = {n.name: i for i, n in enumerate(order)}
    for name, (members, source) in chosen.items():
        reference = np.asarray(original_values[f"{name}:0"])
        value = _float_value(source, quantized_values)
        if value.shape != reference.shape:
            skipped[name] = (f"the quantized node {source.node!r} gives shape {value.shape}, "
                             f"the original {reference.shape}")
            continue
        records.append(node_record(original.by_name(name), source.node, members,
                                   position[name], reference, value, bins))
    return _flag(records, threshold, skipped)


def node_record(node: NodeDef, compared: str, members: tuple[str, ...], position: int,
                reference: np.ndarray, value: np.ndarray, bins: int) -> QuantizationNodeRecord:
    """The metrics and histograms of one node's two values (same shape)."""
    ref = np.asarray(reference, dtype=np.float64)
    got = np.asarray(value, dtype=np.float64)
    both = np.isfinite(ref) & np.isfinite(got)
    ref, got = ref[both], got[both]
    metrics = error_metrics(ref, got)
    edges = shared_edges(ref, got, bins)
    error_edges = shared_edges(got - ref, got - ref, bins)
    return QuantizationNodeRecord(
        original=node.name, op=node.op, compared=compared, quantized=members,
        position=position, shape=tuple(int(d) for d in np.shape(reference)), **metrics,
        edges=tuple(edges.tolist()), original_counts=_counts(ref, edges),
        quantized_counts=_counts(got, edges), error_edges=tuple(error_edges.tolist()),
        error_counts=_counts(got - ref, error_edges))


def error_metrics(reference: np.ndarray, value: np.ndarray) -> dict[str, float]:
    """MSE, max abs error, SQNR (dB) and cosine similarity of two equal-length float64 vectors.
    Without NaN: SQNR is +inf when they agree exactly, -inf when only the reference is all
    zeros; cosine is 1 when both are all zeros and 0 when only one is."""
    error = value - reference
    if reference.size == 0:
        return {"mse": 0.0, "max_abs_error": 0.0, "sqnr_db": math.inf, "cosine": 1.0}
    noise = float(np.sum(error * error))
    signal = float(np.sum(reference * reference))
    if noise == 0.0:
        sqnr = math.inf
    elif signal == 0.0:
        sqnr = -math.inf
    else:
        sqnr = 10.0 * math.log10(signal / noise)
    norms = math.sqrt(signal) * float(np.linalg.norm(value))
    if noise == 0.0:
        cosine = 1.0 if signal > 0.0 or not np.any(value) else 0.0
    elif norms == 0.0:
        cosine = 1.0 if signal == 0.0 and not np.any(value) else 0.0
    else:
        cosine = min(1.0, max(-1.0, float(reference @ value) / norms))
    return {"mse": noise / reference.size, "max_abs_error": float(np.max(np.abs(error))),
            "sqnr_db": sqnr, "cosine": cosine}


def shared_edges(a: np.ndarray, b: np.ndarray, bins: int) -> np.ndarray:
    """bins + 1 edges spanning both arrays (a unit-wide span around a single value)."""
    values = np.concatenate([np.ravel(a), np.ravel(b)])
    if values.size == 0:
        return np.linspace(0.0, 1.0, bins + 1)
    low, high = float(values.min()), float(values.max())
    if low == high:
        low, high = low - 0.5, high + 0.5
    return np.linspace(low, high, bins + 1)


def _counts(values: np.ndarray, edges: np.ndarray) -> tuple[float, ...]:
    return tuple(float(c) for c in np.histogram(values, bins=edges)[0])


def _flag(records: list[QuantizationNodeRecord], threshold: float,
          skipped: dict[str, str]) -> Comparison:
    flagged = next((r.original for r in records if r.sqnr_db < threshold), None)
    if flagged is not None:
        records = [replace(r, flagged=True) if r.original == flagged else r for r in records]
    return Comparison(tuple(records), threshold, flagged, skipped)


def _shared_draws(original: GraphDef, quantized: GraphDef,
                  node_map: Mapping[str, str]) -> list[str]:
    """Outputs of the stateful (random) nodes both graphs share: the quantized run is fed the
    original run's values for them, so a dropout mask or a noise draw is not counted as error."""
    from engine.ops import registry
    names = []
    for node in original.node:
        plain = all(not d.is_resource and not d.name.endswith("_ref")
                    for d in node.output_dtypes)
        if (node.output_dtypes and plain and registry.get_op_def(node.op).stateful
                and node.op not in ("Placeholder", "PlaceholderWithDefault")
                and node.name in quantized and node_map.get(node.name) == node.name):
            names += [f"{node.name}:{i}" for i in range(len(node.output_dtypes))]
    return names


# -- which quantized node stands for an original one ------------------------------------

def _standing_for(quantized: GraphDef, node_map: Mapping[str, str]) -> dict[str, tuple]:
    """original node -> the quantized nodes mapped to it, in the quantized graph's order."""
    groups: dict[str, list[str]] = {}
    for node in quantized.node:
        source = node_map.get(node.name)
        if source is not None:
            groups.setdefault(source, []).append(node.name)
    return {source: tuple(names) for source, names in groups.items()}


@dataclass(frozen=True)
class _Source:
    """Where the quantized graph's value for an original node comes from: a node's output 0,
    with the tensors holding its range when that output is quantized."""
    node: str
    dtype: str = ""            # the quantized dtype's name; "" for a float (or int) output
    range: tuple[str, str] | None = None
    mode: str = "MIN_FIRST"

    def fetches(self) -> list[str]:
        return [f"{self.node}:0", *(self.range or ())]


# Which of a quantized op's inputs hold the range of its quantized input at a slot.
_RANGE_SLOTS = {
    **{op: {0: (2, 3), 1: (4, 5)}
       for op in ("QuantizedMatMul", "QuantizedConv2D", "QuantizedBiasAdd")},
    **{op: {0: (1, 2)} for op in ("Dequantize", "Requantize", "RequantizationRange",
                                  "QuantizedRelu", "QuantizedRelu6", "QuantizedMaxPool",
                                  "QuantizedAvgPool", "QuantizeDownAndShrinkRange")},
    "QuantizedReshape": {0: (2, 3)},
    # (a, b, bias, min_a, max_a, min_b, max_b, min_freezed_output, max_freezed_output)
    **{op: {0: (3, 4), 1: (5, 6)} for op in ("QuantizedMatMulWithBiasAndRequantize",
                                             "QuantizedMatMulWithBiasAndReluAndRequantize",
                                             "QuantizedConv2DWithBiasAndRequantize",
                                             "QuantizedConv2DWithBiasAndReluAndRequantize")},
}
# The fused ops read their qint8 weights and write a qint8 output symmetrically (TF's SCALED
# Dequantize mode: zero is 0, the scale max|range| / 127).
_SCALED_OPS = ("QuantizedMatMulWithBiasAndRequantize",
               "QuantizedMatMulWithBiasAndReluAndRequantize",
               "QuantizedConv2DWithBiasAndRequantize",
               "QuantizedConv2DWithBiasAndReluAndRequantize")


def _mode(node: NodeDef, default: str = "MIN_FIRST") -> str:
    return node.attr.get("mode", "SCALED" if node.op in _SCALED_OPS else default)


def _representative(quantized: GraphDef, members: tuple[str, ...],
                    original: NodeDef) -> _Source | None:
    """The member whose output leaves the group (read by a node standing for another original
    node, or by none): the value the quantized graph gives for the original node. Among
    several, the last in the graph's order whose value can be read as floats (a quantized
    one with its range) and whose static shape agrees with the original's."""
    group = set(members)
    readers: dict[str, list[tuple[NodeDef, int]]] = {}
    for node in quantized.node:
        for slot, spelling in enumerate(node.input):
            producer, index = parse_input(spelling)
            if index == 0:
                readers.setdefault(producer, []).append((node, slot))
    read_inside = {m for m in members
                   if any(r.name in group and r.name != m for r, _ in readers.get(m, ()))}
    sources = {m: _source(quantized.by_name(m), readers.get(m, ())) for m in members}
    readable = [m for m in members if sources[m] is not None]
    for pool in ([m for m in readable if m not in read_inside], readable):
        fitting = [m for m in pool if _shapes_agree(quantized.by_name(m), original)]
        if fitting or pool:
            return sources[(fitting or pool)[-1]]
    return None


def _source(node: NodeDef, readers: list[tuple[NodeDef, int]]) -> _Source | None:
    if not node.output_dtypes:
        return None
    dtype = node.output_dtypes[0]
    if not dtype.is_quantized:
        return _Source(node.name) if dtype.is_floating or dtype.is_integer else None
    outputs = node.output_dtypes
    mode = _mode(node)
    if len(outputs) >= _RANGE_OUTPUTS and all(d.is_floating for d in outputs[1:3]):
        return _Source(node.name, dtype.name, (f"{node.name}:1", f"{node.name}:2"), mode)
    for reader, slot in readers:    # a quantized constant: its range is its reader's input
        slots = _RANGE_SLOTS.get(reader.op, {}).get(slot)
        if slots is not None and max(slots) < len(reader.input):
            low, high = (_tensor(reader.input[i]) for i in slots)
            return _Source(node.name, dtype.name, (low, high), _mode(reader, mode))
    return None


def _tensor(spelling: str) -> str:
    name, index = parse_input(spelling)
    return f"{name}:{index}"


def _shapes_agree(node: NodeDef, original: NodeDef) -> bool:
    def dims(n: NodeDef):
        shape = n.output_shapes[0] if n.output_shapes else None
        return None if shape is None or shape.rank is None else shape.as_list()
    mine, theirs = dims(node), dims(original)
    if mine is None or theirs is None:
        return True
    return len(mine) == len(theirs) and all(
        a is None or b is None or a == b for a, b in zip(mine, theirs))


def _comparable(node: NodeDef) -> str | None:
    dtype = node.output_dtypes[0]
    if dtype.is_floating or dtype.is_integer or dtype.is_quantized:
        return None
    return f"its output is {dtype.name}, not a number"


def _float_value(source: _Source, values: Mapping[str, Any]) -> np.ndarray:
    raw = np.asarray(values[f"{source.node}:0"])
    if source.range is None:
        return raw
    low, high = (float(values[name]) for name in source.range)
    return dequantized(raw, low, high, source.dtype, source.mode)


def dequantized(q: np.ndarray, low: float, high: float, dtype: str,
                mode: str = "MIN_FIRST") -> np.ndarray:
    """TensorFlow's Dequantize of integer values q with their range, in float32 as its
    kernel does it: MIN_FIRST (QuantizedToFloat, what the quantized ops' outputs mean),
    MIN_COMBINED or SCALED."""
    from engine import dtypes as engine_dtypes
    from engine.kernels import quantized as kernels
    quantized_type = getattr(engine_dtypes, dtype)
    lowest, highest = kernels.LIMITS[quantized_type]
    values = torch.from_numpy(np.ascontiguousarray(q).astype(np.int64))
    if mode == "MIN_FIRST":
        return kernels.dequantize_eigen(values, low, high, quantized_type).numpy()
    f32 = np.float32
    ints = values.numpy().astype(f32)
    if mode == "MIN_COMBINED":
        scale = f32(f32(f32(high) - f32(low)) / (f32(highest) - f32(lowest)))
        half = f32((highest - lowest + 1) / 2.0) if lowest < 0 else f32(0.0)
        return (ints + half) * scale + f32(low)
    scale = f32(f32(high) / f32(highest)) if lowest == 0 else \
        max(f32(f32(low) / f32(lowest)), f32(f32(high) / f32(highest)))
    return ints * scale


# -- running a GraphDef -------------------------------------------------------------------

def check_feeds(graph_def: GraphDef, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """feeds keyed "name:0", checked against the graph's placeholders before either graph
    runs, with the Session's and TensorFlow's words: every key names a Placeholder (or
    PlaceholderWithDefault), every Placeholder is fed, and each value has the placeholder's
    dtype kind (TypeError) and a shape its static shape allows (ValueError)."""
    if not isinstance(feeds, Mapping):
        raise TypeError(f"feeds must be a dict of placeholder name -> value, "
                        f"got {type(feeds).__name__}")
    placeholders = {n.name: n for n in graph_def.node
                    if n.op in ("Placeholder", "PlaceholderWithDefault")}
    checked = {}
    for key, value in feeds.items():
        name, index = parse_input(str(key))
        node = placeholders.get(name)
        if node is None or index != 0:
            raise errors.InvalidArgumentError(
                None, None, f"feed {key!r} names no placeholder of the graph; its placeholders: "
                f"{', '.join(sorted(placeholders)) or 'none'}")
        checked[f"{name}:0"] = _checked_value(node, value)
    missing = [n for n in placeholders.values()
               if n.op == "Placeholder" and f"{n.name}:0" not in checked]
    if missing:
        node = missing[0]
        raise errors.InvalidArgumentError(
            None, None, f"You must feed a value for placeholder tensor '{node.name}' with "
            f"dtype {node.output_dtypes[0].tf_string} and shape {_shape_text(node)}")
    return checked


def _checked_value(node: NodeDef, value: Any) -> np.ndarray:
    dtype = node.output_dtypes[0]
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise errors.InvalidArgumentError(
            None, None, f"placeholder {node.name!r}: the fed value is not an array: {exc}"
        ) from None
    kind_ok = array.dtype.kind in ("f" if dtype.is_floating else "biu") or (
        dtype.is_floating and array.dtype.kind in "iu")
    if not kind_ok:     # the Session's words (engine/runtime/fetches.py)
        raise TypeError(f"Cannot feed value of type {array.dtype} for Tensor '{node.name}:0' "
                        f"of dtype {dtype.name}")
    shape = node.output_shapes[0] if node.output_shapes else None
    if shape is not None and not shape.is_compatible_with(array.shape):
        raise ValueError(f"Cannot feed value of shape {array.shape} for Tensor "
                         f"'{node.name}:0', which has shape '{shape}'")
    return array.astype(dtype.numpy_dtype, copy=False)


def _shape_text(node: NodeDef) -> str:
    shape = node.output_shapes[0] if node.output_shapes else None
    if shape is None or shape.rank is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


def run_graph(graph_def: GraphDef, fetches: list[str],
              feeds: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """fetch name -> value from one Session.run of graph_def in a fresh Graph."""
    from engine.graph import Graph
    from engine.runtime.session import Session
    if not fetches:
        return {}
    graph = Graph()
    import_graph_def(graph_def, name="", graph=graph)
    with Session(graph=graph) as session:
        values = session.run(list(fetches), dict(feeds))
    return dict(zip(fetches, values))
