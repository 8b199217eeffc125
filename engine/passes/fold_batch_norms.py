"""`fold_batch_norms`: TF graph_transforms' fold_old_batch_norms and fold_batch_norms as one
pass over a frozen GraphDef. Conv2D / DepthwiseConv2dNative / MatMul on constant weights,
optionally + BiasAdd of a constant bias, followed by an inference-mode FusedBatchNorm[V2,V3] or
by Mul with a constant, becomes the same op on pre-scaled weights plus one BiasAdd, so the
quantizer sees no BN."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from engine import dtypes, errors
from engine.graph_def import GraphDef, NodeDef
from engine.graph_schema import parse_input
from engine.passes.rewrite import Rewriter, finish

logger = logging.getLogger("engine")

BATCH_NORMS = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
LINEAR = ("Conv2D", "DepthwiseConv2dNative", "MatMul")
# FusedBatchNorm inputs after x, in order.
BN_INPUTS = ("scale", "offset", "mean", "variance")


@dataclass
class FoldResult:
    """`graph_def, node_map = fold_batch_norms(...)` unpacks the first two fields. node_map:
    each node of the new graph that computes what an original node did -> that node (the
    folded BiasAdd stands for the batch norm or Mul it replaced; the rescaled weights, the
    Conv2D / MatMul reading them and the offset Consts stand for none, so a per-node
    comparison does not hold their new values against the old). folded: each folded BN /
    Mul node -> the Conv2D or MatMul it went into. skipped: node -> why it stayed."""
    graph_def: GraphDef
    node_map: dict[str, str]
    folded: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def __iter__(self):
        yield self.graph_def
        yield self.node_map


@dataclass
class _Match:
    """One foldable chain: linear op (with its weights Const), optional BiasAdd, the node
    whose output the folded BiasAdd takes over, and the per-channel scale and offset."""
    linear: NodeDef
    weights: NodeDef
    bias_add: NodeDef | None
    bias: np.ndarray | None
    tail: NodeDef
    scale: np.ndarray
    offset: np.ndarray


class Skip(Exception):
    """A chain that cannot be folded; the message says which piece and why."""


def _float_const(rw: Rewriter, spelling: str, what: str) -> np.ndarray:
    src = rw.producer(spelling)
    if src.op != "Const":
        raise Skip(f"its {what} comes from {src.op} node '{src.name}', not a Const")
    if src.attr.get("dtype") is not dtypes.float32:
        raise Skip(f"its {what} Const '{src.name}' is not float32")
    return np.asarray(src.attr["value"], np.float32)


def _only_reader(rw: Rewriter, n: NodeDef, protected: set[str]) -> None:
    """n feeds exactly one data input and nothing else (so folding cannot change another
    reader), and it is not an output to keep."""
    if n.name in protected:
        raise Skip(f"'{n.name}' is an output of the graph")
    readers = [c for c, _ in rw.consumers(n.name)]
    others = [f"{n.name}:{i}" for i in range(1, len(n.output_dtypes))]
    if len(readers) != 1 or any(rw.consumers(o) for o in others) or \
            rw.consumers(f"^{n.name}"):
        raise Skip(f"'{n.name}' ({n.op}) has other readers")


def _batch_norm_factors(rw: Rewriter, bn: NodeDef) -> tuple[np.ndarray, np.ndarray]:
    """TF's GetScaleAndOffsetValues: scale = gamma / sqrt(variance + epsilon), offset =
    beta - mean * scale (float32, as TF computes it)."""
    if bn.attr.get("is_training", True):
        raise Skip("it is in training mode (is_training=True): its statistics come from "
                   "each batch")
    if bn.attr.get("T") is not dtypes.float32:
        raise Skip("only float32 batch norms are folded")
    values = {k: _float_const(rw, s, k) for k, s in zip(BN_INPUTS, bn.data_inputs()[1:5])}
    width = values["scale"].shape
    bad = [k for k, v in values.items() if v.ndim != 1 or v.shape != width]
    if bad:
        raise Skip(f"its {', '.join(bad)} input(s) are not vectors of the scale's shape "
                   f"{list(width)}")
    eps = np.float32(bn.attr.get("epsilon", 1e-4))
    scale = (np.float32(1.0) / np.sqrt(values["variance"] + eps)) * values["scale"]
    return scale.astype(np.float32), (values["offset"] - values["mean"] * scale)


def _mul_factors(rw: Rewriter, mul: NodeDef, channels: int,
                 data_format: str) -> tuple[str, np.ndarray]:
    """(the non-constant input, the per-channel factor) of Mul(x, Const) or Mul(Const, x)."""
    a, b = mul.data_inputs()[:2]
    for x, c in ((a, b), (b, a)):
        if rw.producer(c).op == "Const" and rw.producer(x).op != "Const":
            factor = _float_const(rw, c, "factor")
            break
    else:
        raise Skip("neither of its inputs is a Const (or both are)")
    if factor.size == 1:
        return x, np.full(channels, factor.reshape(()), np.float32)
    if data_format != "NHWC" or factor.shape[-1] != channels or factor.size != channels:
        raise Skip(f"its factor of shape {list(factor.shape)} does not scale each of the "
                   f"{channels} output channels (a [{channels}] vector or a scalar)")
    return x, factor.reshape(channels)


def _channels(linear: NodeDef, weights: np.ndarray) -> int:
    if linear.op == "MatMul":
        return weights.shape[0] if linear.attr.get("transpose_b") else weights.shape[1]
    if linear.op == "DepthwiseConv2dNative":
        # [height, width, in, multiplier]: output channel c * multiplier + m.
        return weights.shape[2] * weights.shape[3]
    return weights.shape[3]


def _linear_below(rw: Rewriter, spelling: str, protected: set[str]):
    """(linear op, its weights Const, BiasAdd or None, bias or None) feeding `spelling`."""
    if parse_input(spelling)[1] != 0:
        raise Skip(f"it reads output {parse_input(spelling)[1]} of its producer")
    node = rw.producer(spelling)
    bias_add, bias = None, None
    if node.op == "BiasAdd":
        _only_reader(rw, node, protected)
        bias_add, bias = node, _float_const(rw, node.data_inputs()[1], "bias")
        node = rw.producer(node.data_inputs()[0])
    if node.op not in LINEAR:
        raise Skip(f"its input comes from {node.op} node '{node.name}', not Conv2D, "
                   "DepthwiseConv2dNative or MatMul [+ BiasAdd]")
    if node.attr.get("T") is not dtypes.float32:
        raise Skip(f"'{node.name}' is not float32")
    _only_reader(rw, node, protected)
    weights = rw.producer(node.data_inputs()[1])
    _float_const(rw, node.data_inputs()[1], f"'{node.name}' weights")
    return node, weights, bias_add, bias


def _match(rw: Rewriter, n: NodeDef, protected: set[str]) -> _Match:
    if n.op in BATCH_NORMS:
        if any(rw.consumers(f"{n.name}:{i}") for i in range(1, 6)):
            raise Skip("its batch mean / variance outputs are read")
        linear, weights, bias_add, bias = _linear_below(rw, n.data_inputs()[0], protected)
        if linear.op == "MatMul":
            raise Skip("a batch norm after MatMul reads a 4-D input; only Conv2D and "
                       "DepthwiseConv2dNative are folded into it")
        if n.attr.get("data_format", "NHWC") != linear.attr.get("data_format", "NHWC"):
            raise Skip("its data_format differs from the convolution's")
        scale, offset = _batch_norm_factors(rw, n)
    else:
        if n.attr.get("T") is not dtypes.float32:
            raise Skip("only float32 Mul nodes are folded")
        first = rw.producer(n.data_inputs()[0])
        x = n.data_inputs()[1] if first.op == "Const" else n.data_inputs()[0]
        linear, weights, bias_add, bias = _linear_below(rw, x, protected)
        channels = _channels(linear, np.asarray(weights.attr["value"]))
        _, scale = _mul_factors(rw, n, channels, linear.attr.get("data_format", "NHWC"))
        offset = np.zeros_like(scale)
    channels = _channels(linear, np.asarray(weights.attr["value"]))
    if scale.shape != (channels,) or (bias is not None and bias.shape != (channels,)):
        raise Skip(f"its {scale.shape[0]} channels do not match the {channels} output channels "
                   f"of '{linear.name}'")
    return _Match(linear, weights, bias_add, bias, n, scale, offset)


def _scaled_weights(m: _Match) -> np.ndarray:
    w = np.asarray(m.weights.attr["value"], np.float32)
    if m.linear.op == "MatMul" and m.linear.attr.get("transpose_b"):
        return (w * m.scale[:, None]).astype(np.float32)
    if m.linear.op == "DepthwiseConv2dNative":
        return (w * m.scale.reshape(w.shape[2], w.shape[3])).astype(np.float32)
    return (w * m.scale).astype(np.float32)


def _fold(rw: Rewriter, m: _Match, node_map: dict[str, str]) -> None:
    """The linear op reads the scaled weights (the weights Const keeps its name when nothing
    else reads it, as TF does); a BiasAdd named as the tail node adds the folded offset."""
    scaled = _scaled_weights(m)
    shared = len(rw.consumers(m.weights.name)) > 1
    name = rw.unique_name(f"{m.weights.name}_bn_folded") if shared else m.weights.name
    weights = NodeDef(name, "Const", [], m.weights.device,
                      {"value": scaled, "dtype": dtypes.float32})
    if shared:
        rw.add(weights)
    else:
        rw.replace(m.weights.name, weights)
    for changed in (name, m.linear.name):
        node_map.pop(changed, None)
    rw.edit(m.linear.name).input[1] = name
    bias = m.offset if m.bias is None else (m.bias * m.scale + m.offset)
    offset_name = rw.unique_name(f"{m.linear.name}_bn_offset")
    rw.add(NodeDef(offset_name, "Const", [], m.linear.device,
                   {"value": bias.astype(np.float32), "dtype": dtypes.float32}))
    controls = [f"^{c}" for c in m.tail.control_inputs()]
    if m.bias_add is not None:
        controls += [f"^{c}" for c in m.bias_add.control_inputs()]
        rw.remove(m.bias_add.name)
    attrs = {"T": dtypes.float32, "data_format": m.linear.attr.get("data_format", "NHWC")}
    bias_add = NodeDef(m.tail.name, "BiasAdd", [m.linear.name, offset_name, *controls],
                       m.tail.device, attrs, meta={"stack": m.tail.meta.get("stack", ())})
    rw.replace(m.tail.name, bias_add)
    node_map[m.tail.name] = m.tail.name


def _worth_reporting(rw: Rewriter, n: NodeDef) -> bool:
    """Every batch norm left unfolded is reported; a Mul only when it reads a Conv2D /
    MatMul [+ BiasAdd] (Muls elsewhere were never candidates)."""
    if n.op in BATCH_NORMS:
        return True
    return any(rw.producer(s).op in LINEAR + ("BiasAdd",) for s in n.data_inputs()[:2])


def _candidates(rw: Rewriter) -> list[NodeDef]:
    return [n for n in rw.nodes() if n.op in BATCH_NORMS or n.op == "Mul"]


def fold_batch_norms(graph_def: GraphDef, output_names: list[str] | None = None
                     ) -> FoldResult:
    """The graph with every foldable batch norm (and Mul by a constant) folded into the
    Conv2D / DepthwiseConv2dNative / MatMul before it. A chain with a piece that is not
    constant (or is read by another node, or is an output in `output_names`) is left as it
    was and listed in `skipped` with the reason. The input GraphDef is not changed."""
    missing = [o for o in output_names or () if o not in graph_def]
    if missing:
        raise errors.NotFoundError(None, None, f"fold_batch_norms: output node(s) {missing} "
                                               "are not in the graph")
    rw = Rewriter(graph_def)
    node_map = {n.name: n.name for n in graph_def.node}
    protected = set(output_names or ())
    folded, skipped = {}, {}
    for n in _candidates(rw):
        if n.name not in rw:
            continue
        try:
            m = _match(rw, rw.node(n.name), protected)
        except Skip as why:
            if _worth_reporting(rw, n):
                skipped[n.name] = str(why)
                logger.info("fold_batch_norms: not folding %s (%s): %s", n.name, n.op, why)
            continue
        _fold(rw, m, node_map)
        folded[n.name] = m.linear.name
    outputs = list(output_names) if output_names else _readless(graph_def)
    rw.keep_only_needed(outputs)
    result = finish(rw)
    kept = {n.name: node_map[n.name] for n in result.node if n.name in node_map}
    return FoldResult(result, kept, folded, skipped)


def _readless(graph_def: GraphDef) -> list[str]:
    read = {parse_input(s.lstrip("^"))[0] for n in graph_def.node for s in n.input}
    return [n.name for n in graph_def.node if n.name not in read]
