"""Pattern rules of the eightbit pass: rewrites that span several float nodes. MatMul on a
constant weight [+ BiasAdd of a constant bias] [+ Relu] becomes one fused op
(QuantizedMatMulWithBias[AndRelu]AndRequantize: quint8 activations, qint8 weights, a float
bias, the calibrated output range frozen in), where the registry has the fused ops."""

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
)
from engine.passes.rewrite import load_op_registry

FUSED = "QuantizedMatMulWithBiasAndRequantize"
FUSED_RELU = "QuantizedMatMulWithBiasAndReluAndRequantize"


def fused_ops_registered() -> bool:
    load_op_registry()
    return registry.is_registered(FUSED) and registry.is_registered(FUSED_RELU)


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


def _qint8_weights(p: _Pass, owner: str, w: NodeDef) -> tuple[str, str, str]:
    """Symmetric qint8 weights (scale max|w| / 127, zero point 0), as the fused kernels read
    b; the float Const goes away."""
    values = np.asarray(w.attr["value"], np.float32)
    top = float(np.max(np.abs(values))) if values.size else 0.0
    top = top or 1.0
    q = np.clip(np.round(values * np.float32(127.0 / top)), -127, 127).astype(np.int8)
    names = []
    for suffix, node in (("qint8_const", _const("", q, dtypes.qint8)),
                         ("min", _scalar("", -top)), ("max", _scalar("", top))):
        node.name = p.name(f"{w.name}_{suffix}")
        names.append(p.emit(w.name, node, w.device))
    p.rw.remove(w.name)
    return tuple(names)


def fused_dense(p: _Pass, mat_mul: NodeDef) -> bool:
    """MatMul(x, const W) + BiasAdd(const b) [+ Relu], calibrated, into one fused op whose
    output takes the last node's name through a Dequantize. Returns whether it rewrote."""
    if mat_mul.op != "MatMul" or not p.ranges or not _float32(mat_mul) or \
            mat_mul.attr.get("transpose_a") or not fused_ops_registered():
        return False
    bias_add = _only_consumer(p, mat_mul, "BiasAdd")
    if bias_add is None or not _float32(bias_add) or \
            bias_add.attr.get("data_format", "NHWC") != "NHWC":
        return False
    weight = _const_input(p, mat_mul, 1, 2)
    bias = _const_input(p, bias_add, 1, 1)
    relu = _only_consumer(p, bias_add, "Relu")
    last = relu if relu is not None and _float32(relu) else bias_add
    if weight is None or bias is None:
        return False
    frozen = p.range_of(last.name)
    if frozen is None:
        return False
    # quint8 holds no negative value: a fused op without Relu gives qint8 (scale max|range|
    # / 127), which Dequantize reads in SCALED mode.
    out_type = dtypes.quint8 if last is relu else dtypes.qint8
    lo, hi = safe_range(*frozen)
    if out_type is dtypes.qint8:
        top = max(abs(lo), abs(hi))
        lo, hi = -top, top
    else:
        lo = 0.0
    a = quantize_input(p, mat_mul, mat_mul.data_inputs()[0])
    b = _qint8_weights(p, mat_mul.name, weight)
    origin = last.name
    frozen_names = [p.emit(origin, _scalar(p.name(f"{origin}_eightbit_frozen_{tag}"), v),
                           last.device) for tag, v in (("min", lo), ("max", hi))]
    attrs = {"T1": dtypes.quint8, "T2": dtypes.qint8, "Tbias": dtypes.float32,
             "Toutput": out_type, "transpose_a": False,
             "transpose_b": bool(mat_mul.attr.get("transpose_b")),
             "input_quant_mode": "MIN_FIRST"}
    op = FUSED_RELU if last is relu else FUSED
    inputs = [a[0], b[0], bias.name, a[1], a[2], b[1], b[2], *frozen_names]
    fused = p.emit(origin, NodeDef(p.name(f"{mat_mul.name}_eightbit_fused_mat_mul"), op,
                                   inputs + [f"^{c}" for c in mat_mul.control_inputs()],
                                   attr=attrs), mat_mul.device)
    for n in (mat_mul, bias_add, relu):
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
    return True


PATTERNS = (fused_dense,)
