"""`quantize_graph`: TF 1.x's quantize_graph tool as a pass over a GraphDef. Mode "weights"
stores big float constants as quint8 plus their range; mode "eightbit" rewrites MatMul, Conv2D,
BiasAdd, Relu, pooling, ConcatV2 and Reshape into 8-bit chains (QuantizeV2 -> Quantized* ->
Requantize -> Dequantize, TF's node names), then drops redundant Dequantize -> QuantizeV2 pairs.
Before it, batch norms are folded into the convolutions (engine/passes/fold_batch_norms.py);
FakeQuant nodes give their ranges; a fallback range can stand in for RequantizationRange."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from engine import dtypes, errors
from engine.graph_def import GraphDef, NodeDef, tensor_spelling, topological_order
from engine.graph_schema import parse_input
from engine.passes.rewrite import Rewriter, finish, tensor_name

logger = logging.getLogger("engine")

Ranges = dict  # original tensor name "node:0" -> (min, max) of its float values

MODES = ("weights", "eightbit")
# TF's weights mode leaves small constants (shapes, scalars, tiny biases) alone.
WEIGHTS_MIN_ELEMENTS = 16
# Nodes that carry no arithmetic; they are never reported as kept in float.
STRUCTURAL = ("Const", "Placeholder", "PlaceholderWithDefault", "Identity", "NoOp")
# remove_training_nodes: ops that only matter while training.
TRAINING_ONLY = ("Identity", "CheckNumerics", "StopGradient")
F32 = np.float32


@dataclass
class QuantizeResult:
    """`graph_def, node_map = quantize_graph(...)` unpacks the first two fields. node_map: each
    node of the new graph that stands for an original node -> that node's name."""
    graph_def: GraphDef
    node_map: dict[str, str]
    kept_float: dict[str, str] = field(default_factory=dict)
    ranges: Ranges = field(default_factory=dict)
    folded: dict[str, str] = field(default_factory=dict)       # BN / Mul node -> conv/matmul
    fake_quant: Ranges = field(default_factory=dict)           # FakeQuant node -> its range

    def __iter__(self):
        yield self.graph_def
        yield self.node_map


# -- range and value maths (TF: quantize_weight_eightbit, QuantizeV2's range adjustment) -------

def weight_range(values: np.ndarray) -> tuple[float, float]:
    """quantize_weight_eightbit's range: it includes zero and is never empty."""
    lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
    return safe_range(lo, hi)


def safe_range(lo: float, hi: float) -> tuple[float, float]:
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if lo == hi:
        hi = lo + 1.0 if abs(lo) < 1e-6 else (2 * lo if lo > 0 else lo / 2.0)
    return lo, hi


def adjusted_range(lo: float, hi: float, ensure_minimum_range: float = 0.01):
    """The range QuantizeV2 actually uses (engine/kernels/quantized.adjusted_range)."""
    lo = min(0.0, float(F32(lo)))
    eps = F32(max(1.0, max(abs(F32(lo)), abs(F32(hi)))) * F32(ensure_minimum_range))
    hi = max(0.0, max(float(F32(hi)), float(F32(lo) + eps)))
    return float(F32(lo)), float(F32(hi))


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + F32(0.5))


def quantize_quint8(values: np.ndarray, lo: float, hi: float, mode: str) -> np.ndarray:
    """QuantizeV2(values, lo, hi, T=quint8, mode) in NumPy, float32 as TF's kernel computes it
    (the pass must not need torch)."""
    x = np.asarray(values, np.float32)
    if mode == "MIN_COMBINED":
        scale = F32(255.0 / F32(F32(hi) - F32(lo)))
        shifted = (np.clip(x, F32(lo), F32(hi)) - F32(lo)) * scale
        return np.trunc(shifted + F32(0.5)).astype(np.uint8)
    scale = F32(255.0 / F32(F32(hi) - F32(lo)))
    min_scaled = F32(_round_half_away(np.float32(F32(lo) * scale)))
    q = _round_half_away(x * scale) - min_scaled
    return np.clip(q, 0, 255).astype(np.uint8)


# -- node builders -----------------------------------------------------------------------------

def _const(name: str, value: np.ndarray, dtype) -> NodeDef:
    return NodeDef(name, "Const", [], attr={"value": value, "dtype": dtype})


def _scalar(name: str, value: float) -> NodeDef:
    return _const(name, np.asarray(value, np.float32), dtypes.float32)


def _safe_suffix(spelling: str) -> str:
    """TF's unique_node_name_from_input."""
    return spelling.replace(":", "__port__").replace("^", "__hat__")


def _float_attrs(mode: str) -> dict:
    return {"T": dtypes.quint8, "mode": mode, "narrow_range": False, "axis": -1,
            "dtype": dtypes.float32}


class _Pass:
    """One rewrite: `emit` adds a node standing for an original one; the rules call it."""

    def __init__(self, graph_def: GraphDef, ranges: Ranges | None,
                 fallback: tuple[float, float] | None = None):
        self.rw = Rewriter(graph_def)
        self.ranges = dict(ranges or {})
        self.fallback = fallback
        self.fallback_nodes: tuple[str, str] | None = None
        self.used: Ranges = {}
        self.node_map: dict[str, str] = {n.name: n.name for n in graph_def.node}
        self.kept_float: dict[str, str] = {}
        self.weights: dict[str, tuple[str, str, str]] = {}
        self.rewritten: set[str] = set()      # original nodes a pattern rule already took
        self.protected: set[str] = set()      # the outputs: never folded into another node

    def emit(self, origin: str, node: NodeDef, device: str = "",
             replaces: NodeDef | None = None) -> str:
        """Adds `node` standing for node `origin`; with `replaces`, it takes that node's place
        and name, and its creation stack (inserted nodes carry none of their own)."""
        node.device = node.device or device
        node.meta = {"quantized_from": origin}
        if replaces is not None:
            node.meta["stack"] = tuple(replaces.meta.get("stack", ()))
            self.rw.replace(replaces.name, node)
        else:
            self.rw.add(node)
        self.node_map[node.name] = origin
        return node.name

    def name(self, base: str) -> str:
        return self.rw.unique_name(base)

    def range_of(self, spelling: str) -> tuple[float, float] | None:
        key = tensor_name(spelling)
        if key not in self.ranges:
            return None
        lo, hi = safe_range(*map(float, self.ranges[key]))
        self.used[key] = (lo, hi)
        return lo, hi

    def dtype_of(self, spelling: str):
        src, index = parse_input(spelling)
        produced = self.rw.node(src).output_dtypes
        return produced[index] if index < len(produced) else None


# -- weights mode ------------------------------------------------------------------------------

def _quantize_const(p: _Pass, n: NodeDef, mode: str) -> None:
    """A float Const becomes <n>_quint8_const, <n>_min, <n>_max and a Dequantize named n."""
    values = np.asarray(n.attr["value"], np.float32)
    lo, hi = adjusted_range(*weight_range(values))
    q = quantize_quint8(values, lo, hi, mode)
    names = []
    for suffix, node in (("quint8_const", _const("", q, dtypes.quint8)),
                         ("min", _scalar("", lo)), ("max", _scalar("", hi))):
        node.name = p.name(f"{n.name}_{suffix}")
        names.append(p.emit(n.name, node, n.device))
    p.emit(n.name, NodeDef(n.name, "Dequantize", names, attr=_float_attrs(mode)), n.device,
           replaces=n)
    p.weights[n.name] = tuple(names)


def _is_float_const(n: NodeDef) -> bool:
    return n.op == "Const" and n.attr.get("dtype") is dtypes.float32


def _weights(p: _Pass) -> None:
    for n in p.rw.nodes():
        if _is_float_const(n) and np.asarray(n.attr["value"]).size >= WEIGHTS_MIN_ELEMENTS:
            _quantize_const(p, n, "MIN_COMBINED")


# -- eightbit mode: inputs and outputs of a quantized op ---------------------------------------

def quantize_input(p: _Pass, owner: NodeDef, spelling: str) -> tuple[str, str, str]:
    """TF's eightbitize_input_to_node: QuantizeV2(x, min, max) named
    <owner>_eightbit_quantize_<x>, its range from Min/Max reductions at run time or, with
    calibration, from two Consts. Returns the (value, min, max) spellings."""
    prefix = f"{owner.name}_eightbit"
    suffix = _safe_suffix(spelling)
    calibrated = p.range_of(spelling)
    if calibrated is not None:
        lo = p.emit(owner.name, _scalar(p.name(f"{prefix}_min_{suffix}"), calibrated[0]),
                    owner.device)
        hi = p.emit(owner.name, _scalar(p.name(f"{prefix}_max_{suffix}"), calibrated[1]),
                    owner.device)
    else:
        lo, hi = _runtime_range(p, owner, spelling, prefix, suffix)
    attrs = {"T": dtypes.quint8, "mode": "MIN_FIRST", "round_mode": "HALF_AWAY_FROM_ZERO",
             "narrow_range": False, "axis": -1, "ensure_minimum_range": 0.01}
    q = p.emit(owner.name, NodeDef(p.name(f"{prefix}_quantize_{suffix}"), "QuantizeV2",
                                   [spelling, lo, hi], attr=attrs), owner.device)
    return q, f"{q}:1", f"{q}:2"


def _common_dims(p: _Pass, owner: NodeDef, prefix: str) -> tuple[str, str]:
    names = (f"{prefix}_reshape_dims", f"{prefix}_reduction_dims")
    for name, value in zip(names, (-1, 0)):
        if name not in p.rw:
            p.emit(owner.name, _const(name, np.asarray([value], np.int32), dtypes.int32),
                   owner.device)
    return names


def _runtime_range(p: _Pass, owner: NodeDef, spelling: str, prefix: str,
                   suffix: str) -> tuple[str, str]:
    reshape_dims, reduction_dims = _common_dims(p, owner, prefix)
    flat = p.emit(owner.name, NodeDef(p.name(f"{prefix}_reshape_{suffix}"), "Reshape",
                                      [spelling, reshape_dims],
                                      attr={"T": dtypes.float32, "Tshape": dtypes.int32}),
                  owner.device)
    out = []
    for op, tag in (("Min", "min"), ("Max", "max")):
        out.append(p.emit(owner.name, NodeDef(p.name(f"{prefix}_{tag}_{suffix}"), op,
                                              [flat, reduction_dims],
                                              attr={"T": dtypes.float32, "Tidx": dtypes.int32,
                                                    "keep_dims": False}), owner.device))
    return out[0], out[1]


def quantize_down(p: _Pass, owner: NodeDef, q32: str) -> str:
    """qint32 -> quint8: Requantize to the range RequantizationRange finds at run time, or to
    the calibrated range of the original float output (two Consts)."""
    prefix = f"{owner.name}_eightbit"
    calibrated = p.range_of(owner.name)
    if calibrated is not None:
        lo = p.emit(owner.name, _scalar(p.name(f"{prefix}_requant_range_min"), calibrated[0]),
                    owner.device)
        hi = p.emit(owner.name, _scalar(p.name(f"{prefix}_requant_range_max"), calibrated[1]),
                    owner.device)
        wanted = [lo, hi]
    elif p.fallback is not None:
        wanted = list(_fallback_consts(p, owner))
    else:
        rr = p.emit(owner.name, NodeDef(p.name(f"{prefix}_requant_range"),
                                        "RequantizationRange", [q32, f"{q32}:1", f"{q32}:2"],
                                        attr={"Tinput": dtypes.qint32}), owner.device)
        wanted = [rr, f"{rr}:1"]
    return p.emit(owner.name, NodeDef(p.name(f"{prefix}_requantize"), "Requantize",
                                      [q32, f"{q32}:1", f"{q32}:2", *wanted],
                                      attr={"Tinput": dtypes.qint32,
                                            "out_type": dtypes.quint8}), owner.device)


def _fallback_consts(p: _Pass, owner: NodeDef) -> tuple[str, str]:
    """TF's fallback_quantization_min_value / _max_value: two Consts every Requantize shares."""
    if p.fallback_nodes is None:
        names = []
        for tag, value in zip(("min", "max"), p.fallback):
            node = _scalar(p.name(f"fallback_quantization_{tag}_value"), value)
            names.append(p.emit(owner.name, node))
        p.fallback_nodes = (names[0], names[1])
    return p.fallback_nodes


def dequantize_as(p: _Pass, original: NodeDef, q8: str) -> None:
    """The Dequantize that takes the original node's name, so float consumers keep reading
    it; it carries the original's creation stack."""
    node = NodeDef(original.name, "Dequantize", [q8, f"{q8}:1", f"{q8}:2"],
                   attr=_float_attrs("MIN_FIRST"))
    p.emit(original.name, node, original.device, replaces=original)


# -- eightbit mode: one rule per op type ---------------------------------------------------------

def _core(p: _Pass, n: NodeDef, op: str, tag: str, inputs: list, attrs: dict) -> str:
    """The quantized op standing for n; it takes over n's control inputs."""
    controls = [f"^{c}" for c in n.control_inputs()]
    return p.emit(n.name, NodeDef(p.name(f"{n.name}_eightbit_{tag}"), op, inputs + controls,
                                  attr=attrs), n.device)


def _two_input_rule(op: str, tag: str, attrs_of: Callable[[NodeDef], dict], requantize=True):
    def rule(p: _Pass, n: NodeDef) -> None:
        a, b = (quantize_input(p, n, s) for s in n.data_inputs()[:2])
        q = _core(p, n, op, tag, [a[0], b[0], a[1], a[2], b[1], b[2]], attrs_of(n))
        dequantize_as(p, n, quantize_down(p, n, q) if requantize else q)
    return rule


def _one_input_rule(op: str, attrs_of: Callable[[NodeDef], dict]):
    def rule(p: _Pass, n: NodeDef) -> None:
        x = quantize_input(p, n, n.data_inputs()[0])
        dequantize_as(p, n, _core(p, n, op, "quantized", list(x), attrs_of(n)))
    return rule


def _reshape_rule(p: _Pass, n: NodeDef) -> None:
    value, shape = n.data_inputs()[:2]
    x = quantize_input(p, n, value)
    attrs = {"T": dtypes.quint8, "Tshape": n.attr.get("Tshape", dtypes.int32)}
    dequantize_as(p, n, _core(p, n, "QuantizedReshape", "quantized", [x[0], shape, x[1], x[2]],
                              attrs))


def _concat_rule(p: _Pass, n: NodeDef) -> None:
    *values, axis = n.data_inputs()
    qs = [quantize_input(p, n, v) for v in values]
    inputs = [axis] + [q[0] for q in qs] + [q[1] for q in qs] + [q[2] for q in qs]
    dequantize_as(p, n, _core(p, n, "QuantizedConcat", "quantized", inputs,
                              {"N": len(values), "T": dtypes.quint8}))


def _mat_mul_attrs(n: NodeDef) -> dict:
    return {"T1": dtypes.quint8, "T2": dtypes.quint8, "Toutput": dtypes.qint32,
            "transpose_a": bool(n.attr.get("transpose_a")),
            "transpose_b": bool(n.attr.get("transpose_b")), "Tactivation": dtypes.quint8}


def _conv_attrs(n: NodeDef) -> dict:
    return {"Tinput": dtypes.quint8, "Tfilter": dtypes.quint8, "out_type": dtypes.qint32,
            "strides": list(n.attr["strides"]), "padding": n.attr["padding"],
            "dilations": list(n.attr.get("dilations", [1, 1, 1, 1]))}


def _pool_attrs(n: NodeDef) -> dict:
    return {"T": dtypes.quint8, "ksize": list(n.attr["ksize"]),
            "strides": list(n.attr["strides"]), "padding": n.attr["padding"]}


def _relu_attrs(n: NodeDef) -> dict:
    return {"Tinput": dtypes.quint8, "out_type": dtypes.quint8}


RULES: dict[str, Callable[[_Pass, NodeDef], None]] = {
    "MatMul": _two_input_rule("QuantizedMatMul", "quantized_mat_mul", _mat_mul_attrs),
    "Conv2D": _two_input_rule("QuantizedConv2D", "quantized_conv", _conv_attrs),
    "BiasAdd": _two_input_rule("QuantizedBiasAdd", "quantized_bias_add",
                               lambda n: {"T1": dtypes.quint8, "T2": dtypes.quint8,
                                          "out_type": dtypes.qint32}),
    "Relu": _one_input_rule("QuantizedRelu", _relu_attrs),
    "Relu6": _one_input_rule("QuantizedRelu6", _relu_attrs),
    "MaxPool": _one_input_rule("QuantizedMaxPool", _pool_attrs),
    "AvgPool": _one_input_rule("QuantizedAvgPool", _pool_attrs),
    "Reshape": _reshape_rule,
    "ConcatV2": _concat_rule,
}
# The inputs of each rule's op that it quantizes (its float weights become quint8 Consts).
QUANTIZED_SLOTS = {"MatMul": (0, 1), "Conv2D": (0, 1), "BiasAdd": (0, 1), "Relu": (0,),
                   "Relu6": (0,), "MaxPool": (0,), "AvgPool": (0,), "Reshape": (0,)}


def quantized_slots(n: NodeDef) -> tuple[int, ...]:
    if n.op == "ConcatV2":
        return tuple(range(len(n.data_inputs()) - 1))
    return QUANTIZED_SLOTS.get(n.op, ())


def why_float(n: NodeDef) -> str | None:
    """None when a rule can rewrite n; otherwise the reason it stays float."""
    if n.op not in RULES:
        return f"{n.op} has no quantized form in quantize_graph's eightbit mode"
    dtype = n.attr.get("T")
    if dtype is not dtypes.float32:
        return f"{n.op} on {getattr(dtype, 'name', dtype)}: only float32 ops are quantized"
    if n.attr.get("data_format", "NHWC") != "NHWC":
        return f"{n.op} with data_format {n.attr['data_format']}: quantized ops are NHWC only"
    if n.op == "Conv2D" and list(n.attr.get("dilations", [1, 1, 1, 1])) != [1, 1, 1, 1]:
        return "Conv2D with dilations: QuantizedConv2D takes none"
    if n.op == "Conv2D" and n.attr.get("padding") == "EXPLICIT":
        return "Conv2D with explicit padding: QuantizedConv2D takes SAME or VALID"
    if n.op in ("MaxPool", "AvgPool") and n.attr.get("padding") == "EXPLICIT":
        return f"{n.op} with explicit padding"
    return None


# -- eightbit mode: the pass --------------------------------------------------------------------

def _remove_training_nodes(p: _Pass, protected: set[str]) -> None:
    """TF's graph_util.remove_training_nodes: Identity-like nodes are bypassed."""
    for n in p.rw.nodes():
        if n.op in TRAINING_ONLY and n.name not in protected and not n.control_inputs():
            p.rw.rewire(n.name, n.input[0])
            for consumer, slot in p.rw.consumers(f"^{n.name}"):
                p.rw.edit(consumer).input[slot] = f"^{parse_input(n.input[0])[0]}"
            p.rw.remove(n.name)
            del p.node_map[n.name]


def _quantize_weights_of(p: _Pass, n: NodeDef) -> None:
    """quantize_weight_eightbit for the float Consts a quantized input reads."""
    for slot in quantized_slots(n):
        src = parse_input(n.data_inputs()[slot])[0]
        if src not in p.weights and _is_float_const(p.rw.node(src)):
            _quantize_const(p, p.rw.node(src), "MIN_FIRST")


def remove_redundant_quantization(p: _Pass) -> int:
    """A QuantizeV2 reading a Dequantize of the same type is bypassed: its consumers read the
    Dequantize's quantized input and range instead (TF's remove_redundant_quantization).
    Returns how many were bypassed; dead nodes go later."""
    bypassed = 0
    for n in p.rw.nodes():
        if n.op != "QuantizeV2" or n.name not in p.rw:
            continue
        source = p.rw.producer(n.input[0])
        if source.op != "Dequantize" or source.attr.get("T") is not n.attr.get("T") or \
                parse_input(n.input[0])[1] != 0:
            continue
        for index in range(3):
            p.rw.rewire(tensor_spelling(n.name, index), source.input[index])
        bypassed += 1
    return bypassed


def _eightbit(p: _Pass, outputs: list[str], fuse: bool) -> None:
    """Pattern rules (engine/passes/quantize_patterns.py: fused ops spanning several nodes)
    are tried first at each node, then the one-op rules."""
    from engine.passes.quantize_patterns import PATTERNS

    _remove_training_nodes(p, set(outputs))
    p.protected = set(outputs)
    for n in topological_order(p.rw.nodes()):
        if n.op in STRUCTURAL or n.name in p.rewritten or n.name not in p.rw:
            continue
        if fuse and any(pattern(p, p.rw.node(n.name)) for pattern in PATTERNS):
            continue
        reason = why_float(n)
        if reason is None:
            _quantize_weights_of(p, n)
            RULES[n.op](p, p.rw.node(n.name))
        elif any(d.is_floating for d in n.output_dtypes):
            reason = p.kept_float.setdefault(n.name, reason)
            logger.info("quantize_graph: keeping %s (%s) in float: %s", n.name, n.op, reason)
    removed = remove_redundant_quantization(p)
    logger.info("quantize_graph: removed %d redundant Dequantize -> QuantizeV2 pairs", removed)


def default_outputs(graph_def: GraphDef) -> list[str]:
    """The nodes nothing reads: what a frozen graph is run for."""
    read = {parse_input(s)[0] for n in graph_def.node for s in n.input}
    return [n.name for n in graph_def.node if n.name not in read]


FAKE_QUANTS = ("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxArgs")


def fake_quant_range(graph_def: GraphDef, n: NodeDef) -> tuple[float, float] | None:
    """The [min, max] a FakeQuantWithMinMaxArgs (attrs) or ...Vars (two Consts, as in a frozen
    graph, read directly or through Identity nodes) quantizes its input to; None for a Vars
    node whose range is not constant."""
    if n.op == "FakeQuantWithMinMaxArgs":
        return float(n.attr.get("min", -6.0)), float(n.attr.get("max", 6.0))
    bounds = [_through_identities(graph_def, s) for s in n.data_inputs()[1:3]]
    if any(b.op != "Const" for b in bounds):
        return None
    return tuple(float(np.asarray(b.attr["value"]).reshape(-1)[0]) for b in bounds)


def _through_identities(graph_def: GraphDef, spelling: str) -> NodeDef:
    """The node behind a chain of Identity nodes (a frozen variable's `<v>/read`)."""
    node = graph_def.by_name(parse_input(spelling)[0])
    while node.op in TRAINING_ONLY and node.input:
        node = graph_def.by_name(parse_input(node.input[0])[0])
    return node


def _take_fake_quant_ranges(p: _Pass, graph_def: GraphDef, protected: set[str]) -> Ranges:
    """TF's quantize_graph merged a FakeQuantWithMinMaxVars into the op before it (Requantize
    and the final Dequantize used the FakeQuant's min/max inputs; the Dequantize took its
    name). Here each FakeQuant's range becomes the calibrated range of the tensor it reads and
    of its own output, and the node becomes an Identity (bypassed like one), so the 8-bit
    chain itself does the quantizing. Returns FakeQuant node -> range."""
    taken: Ranges = {}
    for n in graph_def.node:
        if n.op not in FAKE_QUANTS:
            continue
        found = fake_quant_range(graph_def, n)
        if found is None:
            p.kept_float[n.name] = "its min/max inputs are not Consts (freeze the graph first)"
            continue
        source = tensor_name(n.data_inputs()[0])
        p.ranges[source] = p.ranges[f"{n.name}:0"] = taken[n.name] = found
        inputs = [n.input[0], *(s for s in n.input if s.startswith("^"))]
        identity = NodeDef(n.name, "Identity", inputs, n.device, {"T": dtypes.float32})
        p.emit(n.name, identity, n.device, replaces=n)
    return taken


def check_fallback_range(mode: str, fallback_range) -> tuple[float, float] | None:
    """TF's GraphRewriter checks, in its words."""
    if fallback_range is None:
        return None
    lo, hi = (float(v) for v in fallback_range)
    if not lo < hi:
        raise errors.InvalidArgumentError(None, None, f"quantize_graph: Invalid "
                                                      f"fallback_quantization_range: [{lo},{hi}]"
                                                      " (min must be below max)")
    if mode != "eightbit":
        raise errors.InvalidArgumentError(None, None, "quantize_graph: "
                                                      "fallback_quantization_range can only be "
                                                      "specified in eightbit mode")
    return lo, hi


def _fold_first(graph_def: GraphDef, outputs: list[str], calibration: Ranges | None):
    """fold_batch_norms' result and the calibration without the ranges folding made stale
    (each folded Conv2D / MatMul now outputs scaled values)."""
    from engine.passes.fold_batch_norms import fold_batch_norms as fold

    result = fold(graph_def, outputs)
    stale = {f"{linear}:0" for linear in result.folded.values()}
    kept = {k: v for k, v in (calibration or {}).items() if tensor_name(k) not in stale}
    if calibration and len(kept) < len(calibration):
        logger.info("quantize_graph: %d calibrated range(s) of folded ops found at run time "
                    "instead", len(calibration) - len(kept))
    return result, kept


def quantize_graph(graph_def: GraphDef, mode: str = "eightbit", calibration: Ranges | None = None,
                   output_names: list[str] | None = None, *, fuse: bool = True,
                   fold_batch_norms: bool = True,
                   fallback_range: tuple[float, float] | None = None) -> QuantizeResult:
    """The quantized twin of a (frozen) float graph. `calibration`: tensor name "node:0" ->
    (min, max) of its float values (engine.compression.calibrate); with it the ranges are
    Consts and no RequantizationRange or Min/Max reduction is left. `output_names`: the
    nodes to keep (default: the ones nothing reads). `fuse`: with calibration, MatMul
    [+ BiasAdd] [+ Relu] on constant weights becomes one fused 8-bit op where the registry has
    it (engine/passes/quantize_patterns.py). `fold_batch_norms` (eightbit mode): inference
    batch norms and Muls by a constant after Conv2D / MatMul are folded into the weights
    first (TF's graph_transforms fold_old_batch_norms / fold_batch_norms), else they stay in
    float and split the 8-bit chain. `fallback_range` (TF's --quantized_fallback_min/max):
    every Requantize without a calibrated range uses this fixed one instead of a
    RequantizationRange at run time. FakeQuantWithMinMaxVars/Args nodes give their ranges to
    the tensors they read. The input GraphDef is not changed."""
    if mode not in MODES:
        raise errors.InvalidArgumentError(None, None, f"quantize_graph: mode {mode!r} is not "
                                                      f"one of {', '.join(MODES)}")
    fallback = check_fallback_range(mode, fallback_range)
    outputs = list(output_names) if output_names else default_outputs(graph_def)
    missing = [o for o in outputs if o not in graph_def]
    if missing:
        raise errors.NotFoundError(None, None, f"quantize_graph: output node(s) {missing} are "
                                               "not in the graph")
    folded, fold_map, source = {}, {}, graph_def
    if mode == "eightbit" and fold_batch_norms:
        fold_result, calibration = _fold_first(graph_def, outputs, calibration)
        source, fold_map, folded = fold_result.graph_def, fold_result.node_map, \
            fold_result.folded
    p = _Pass(source, calibration if mode == "eightbit" else None, fallback)
    taken: Ranges = {}
    if mode == "weights":
        _weights(p)
    else:
        taken = _take_fake_quant_ranges(p, source, set(outputs))
        _eightbit(p, outputs, fuse)
    p.rw.keep_only_needed(outputs)
    result = finish(p.rw)
    node_map = {n.name: p.node_map[n.name] for n in result.node}
    if folded:
        node_map = {k: fold_map[v] for k, v in node_map.items() if v in fold_map}
    kept = {k: v for k, v in p.kept_float.items() if k in node_map}
    return QuantizeResult(result, node_map, kept, dict(p.used), folded, taken)


def calibration_tensors(graph_def: GraphDef, fold_batch_norms: bool = True) -> list[str]:
    """The float tensors whose ranges the eightbit pass can use ("node:0", spelled as the pass
    sees them after Identity nodes are bypassed): each rewritten op's inputs and output.
    With `fold_batch_norms` (quantize_graph's default) they are those of the folded graph
    whose values folding leaves as they were (a folded batch norm's output is its BiasAdd's,
    so it is listed; the folded convolution's own output is not)."""
    stale: set[str] = set()
    if fold_batch_norms:
        from engine.passes.fold_batch_norms import fold_batch_norms as fold

        folded = fold(graph_def)
        stale = {f"{linear}:0" for linear in folded.folded.values()}
        graph_def = folded.graph_def
    by_name = {n.name: n for n in graph_def.node}

    def through_identities(spelling: str) -> str:
        src, index = parse_input(spelling)
        while by_name[src].op in TRAINING_ONLY and not by_name[src].control_inputs():
            src, index = parse_input(by_name[src].input[0])
        return f"{src}:{index}"
    wanted: dict[str, None] = {}
    for n in graph_def.node:
        if n.op in STRUCTURAL or why_float(n) is not None:
            continue
        inputs = n.data_inputs()
        for slot in quantized_slots(n):
            key = through_identities(inputs[slot])
            if not _is_float_const(by_name[parse_input(key)[0]]):
                wanted[key] = None
        wanted[f"{n.name}:0"] = None
    return [t for t in wanted if t not in stale]
