"""Pattern rules of the eightbit pass: rewrites that span several float nodes. MatMul or Conv2D
on a constant weight + BiasAdd of a constant bias [+ Relu] becomes one fused op
(Quantized{MatMul,Conv2D}WithBias[AndRelu]AndRequantize: quint8 activations, qint8 weights, a
float bias, the calibrated output range frozen in), where the registry has the fused ops."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.graph_def import NodeDef
from engine.graph_schema import parse_input
from engine.ops import registry
from engine.passes.quantize_graph import (
    _const,
    _is_float_const,
    _Pass,
    _scalar,
    quantize_input,
    safe_range,
    scaled_input,
)
from engine.passes.rewrite import load_op_registry

FUSED = "QuantizedMatMulWithBiasAndRequantize"
FUSED_RELU = "QuantizedMatMulWithBiasAndReluAndRequantize"
FUSED_CONV = "QuantizedConv2DWithBiasAndRequantize"
FUSED_CONV_RELU = "QuantizedConv2DWithBiasAndReluAndRequantize"


def fused_ops_registered() -> bool:
    load_op_registry()
    return registry.is_registered(FUSED) and registry.is_registered(FUSED_RELU)


def fused_conv_registered() -> bool:
    load_op_registry()
    return registry.is_registered(FUSED_CONV) and registry.is_registered(FUSED_CONV_RELU)


def _only_consumer(p: _Pass, n: NodeDef, op: str) -> NodeDef | None:
    """The one node reading n, if it is an `op` (and n is not an output to keep)."""
    readers = p.rw.consumers(n.name)
    if n.name in p.protected or len(readers) != 1 or p.rw.consumers(f"^{n.name}"):
        return None
    reader = p.rw.node(readers[0][0])
    return reader if reader.op == op and readers[0][1] == 0 else None


def _float32(n: NodeDef) -> bool:
    return n.attr.get("T") is dtypes.float32


def _const_input(p: _Pass, n: NodeDef, slot: int, rank: int) -> NodeDef | None:
    """The float Const feeding input `slot` of n, of the given rank and read by n alone."""
    spelling = n.data_inputs()[slot]
    src = p.rw.node(parse_input(spelling)[0])
    if not _is_float_const(src) or np.asarray(src.attr["value"]).ndim != rank or \
            len(p.rw.consumers(src.name)) != 1:
        return None
    return src


# The fused weights use 7 of qint8's bits ([-64, 64]). On x86 CPUs without VNNI, fbgemm (and
# oneDNN) add adjacent pairs of u8 x s8 products in int16 with saturation; the kernel stays exact
# for 8-bit weights by spreading the pairs that could overflow, which made the 1024-wide bench
# MLP 0.89x float, against 1.50x with 7-bit weights (bench/bench_quantized.py). The declared
# range (max|w| * 127 / 64) keeps the meaning of each level, so the graph is still TF's.
FUSED_WEIGHT_LEVELS = 64


def _qint8_weights(p: _Pass, owner: str, w: NodeDef) -> tuple[str, str, str]:
    """Symmetric qint8 weights (zero point 0, FUSED_WEIGHT_LEVELS levels each side), as the
    fused kernels read b; the float Const goes away."""
    values = np.asarray(w.attr["value"], np.float32)
    top = float(np.max(np.abs(values))) if values.size else 0.0
    top = top or 1.0
    levels = FUSED_WEIGHT_LEVELS
    q = np.clip(np.round(values * np.float32(levels / top)), -levels, levels).astype(np.int8)
    declared = float(np.float32(top * 127.0 / levels))
    names = []
    for suffix, node in (("qint8_const", _const("", q, dtypes.qint8)),
                         ("min", _scalar("", -declared)), ("max", _scalar("", declared))):
        node.name = p.name(f"{w.name}_{suffix}")
        names.append(p.emit(w.name, node, w.device))
    p.rw.remove(w.name)
    return tuple(names)


def _fusable_tail(p: _Pass, head: NodeDef, weight_rank: int):
    """(BiasAdd, Relu or None, last node, weight Const, bias Const) after `head` on a
    constant weight, all float32 NHWC and calibrated at the last node; None where not."""
    bias_add = _only_consumer(p, head, "BiasAdd")
    if bias_add is None or not _float32(bias_add) or \
            bias_add.attr.get("data_format", "NHWC") != "NHWC":
        return None
    weight = _const_input(p, head, 1, weight_rank)
    bias = _const_input(p, bias_add, 1, 1)
    relu = _only_consumer(p, bias_add, "Relu")
    relu = relu if relu is not None and _float32(relu) else None
    last = relu or bias_add
    if weight is None or bias is None or p.range_of(last.name) is None:
        return None
    return bias_add, relu, last, weight, bias


def _output_range(p: _Pass, last: NodeDef, relu: NodeDef | None):
    """quint8 holds no negative value: a fused op without Relu gives qint8 (scale max|range|
    / 127), which Dequantize reads in SCALED mode. Returns (type, lo, hi)."""
    lo, hi = safe_range(*p.range_of(last.name))
    if relu is None:
        top = max(abs(lo), abs(hi))
        return dtypes.qint8, -top, top
    return dtypes.quint8, 0.0, hi


def _fuse(p: _Pass, head: NodeDef, tail, op: str, suffix: str, attrs: dict) -> None:
    """Emits the fused op standing for the last node, its Dequantize under that node's name,
    and removes head, BiasAdd and Relu (the node map keeps the last one)."""
    bias_add, relu, last, weight, bias = tail
    out_type, lo, hi = _output_range(p, last, relu)
    spelling = head.data_inputs()[0]
    scaled = "input_quant_mode" in attrs and scaled_input(p, spelling)
    if scaled:
        attrs = dict(attrs, input_quant_mode="SCALED")
    a = quantize_input(p, head, spelling, scaled)
    b = _qint8_weights(p, head.name, weight)
    origin = last.name
    frozen = [p.emit(origin, _scalar(p.name(f"{origin}_eightbit_frozen_{tag}"), v),
                     last.device) for tag, v in (("min", lo), ("max", hi))]
    attrs = dict(attrs, **({"Toutput": out_type} if "T1" in attrs else {"out_type": out_type}))
    inputs = [a[0], b[0], bias.name, a[1], a[2], b[1], b[2], *frozen]
    fused = p.emit(origin, NodeDef(p.name(f"{head.name}_eightbit_{suffix}"), op,
                                   inputs + [f"^{c}" for c in head.control_inputs()],
                                   attr=attrs), head.device)
    for n in (head, bias_add, relu):
        if n is not None and n is not last:
            p.rw.remove(n.name)
            p.node_map.pop(n.name, None)
        if n is not None:
            p.rewritten.add(n.name)
    mode = "MIN_FIRST" if out_type is dtypes.quint8 else "SCALED"
    node = NodeDef(last.name, "Dequantize", [fused, f"{fused}:1", f"{fused}:2"],
                   attr={"T": out_type, "mode": mode, "narrow_range": False, "axis": -1,
                         "dtype": dtypes.float32})
    p.emit(last.name, node, last.device, replaces=last)


def fused_dense(p: _Pass, mat_mul: NodeDef) -> bool:
    """MatMul(x, const W) + BiasAdd(const b) [+ Relu], calibrated, into one fused op whose
    output takes the last node's name through a Dequantize. Returns whether it rewrote."""
    if mat_mul.op != "MatMul" or not p.ranges or not _float32(mat_mul) or \
            mat_mul.attr.get("transpose_a") or not fused_ops_registered():
        return False
    tail = _fusable_tail(p, mat_mul, 2)
    if tail is None:
        return False
    attrs = {"T1": dtypes.quint8, "T2": dtypes.qint8, "Tbias": dtypes.float32,
             "transpose_a": False, "transpose_b": bool(mat_mul.attr.get("transpose_b")),
             "input_quant_mode": "MIN_FIRST"}
    _fuse(p, mat_mul, tail, FUSED_RELU if tail[1] is not None else FUSED, "fused_mat_mul",
          attrs)
    return True


def fused_conv(p: _Pass, conv: NodeDef) -> bool:
    """Conv2D(x, const filter) + BiasAdd(const b) [+ Relu], calibrated, NHWC, SAME or VALID,
    into QuantizedConv2DWithBias[AndRelu]AndRequantize. Its quint8 input is read with zero
    point 0 (TF's oneDNN conv), so the input's calibrated range must not go below 0."""
    if conv.op != "Conv2D" or not p.ranges or not _float32(conv) or \
            conv.attr.get("data_format", "NHWC") != "NHWC" or \
            conv.attr.get("padding") not in ("SAME", "VALID") or not fused_conv_registered():
        return False
    seen = p.range_of(conv.data_inputs()[0])
    if seen is None or seen[0] < 0:
        return False
    tail = _fusable_tail(p, conv, 4)
    if tail is None:
        return False
    attrs = {"Tinput": dtypes.quint8, "Tfilter": dtypes.qint8, "Tbias": dtypes.float32,
             "strides": list(conv.attr["strides"]), "padding": conv.attr["padding"],
             "dilations": list(conv.attr.get("dilations", [1, 1, 1, 1])), "padding_list": []}
    _fuse(p, conv, tail, FUSED_CONV_RELU if tail[1] is not None else FUSED_CONV,
          "fused_conv", attrs)
    return True


PATTERNS = (fused_dense, fused_conv)
