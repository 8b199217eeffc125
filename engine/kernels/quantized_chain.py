"""One fused step for a chain of quantized ops (engine/runtime/chains.py finds them): the
members' own kernels called in order, and, once a first step has prepared their constants, a
fast path that hands fbgemm's quint8 results straight from one op to the next (no plain
views, no signed copies, no per-op range lookups), bit for bit what the kernels compute."""

from __future__ import annotations

import math
import threading
import traceback
from collections.abc import Callable

import torch

from engine import dtypes
from engine.graph_def import NodeDef
from engine.kernels import quantized_fbgemm as fbgemm
from engine.passes.quantize_graph import scaled_quint8_step

_MATMULS = {"QuantizedMatMulWithBiasAndRequantize": False,
            "QuantizedMatMulWithBiasAndReluAndRequantize": True}
_ATTEMPTS = 3         # steps that may try to prepare the fast path before it is given up


class QuantizedChain:
    """Runs `members` (node, kernel, output count) as one step. `sources[m][slot]` says where
    member m's input comes from: ("x", k) the chain's k-th argument, ("c", value) a Const,
    ("m", p, s) member p's output s. Returns the last member's outputs as its kernel does.
    `fail(error, node)` turns a member's failure into the error that names that member."""

    def __init__(self, members: list[tuple[NodeDef, Callable, int]], sources: list[list],
                 fail: Callable):
        self.members = members
        self.sources = sources
        self.fail = fail
        self.nodes = [m[0] for m in members]
        self._fast = None               # the fast path, or _NO_FAST_PATH
        self._attempts = 0
        self._lock = threading.Lock()
        if not _stage_kind(members[0][0], sources[0], None):
            self._fast = _NO_FAST_PATH

    def __call__(self, *args):
        fast = self._fast
        if fast is not None:
            done = fast(args)
            if done is not None:
                return done
            return self._result(self.generic(args))
        with self._lock:
            outs = self.generic(args)
            if self._fast is None:
                self._attempts += 1
                made = _prepare(self, args, outs)
                if made is not None or self._attempts >= _ATTEMPTS:
                    self._fast = made if made is not None else _NO_FAST_PATH
        return self._result(outs)

    @property
    def has_fast_path(self) -> bool:
        return self._fast is not None and self._fast is not _NO_FAST_PATH

    def _result(self, outs: list):
        last = outs[-1]
        return last[0] if self.members[-1][2] == 1 else last

    def generic(self, args, start: int = 0, outs: list | None = None) -> list:
        """Every member's outputs, member by member from `start` (earlier ones in `outs`)."""
        outs = outs if outs is not None else [None] * len(self.members)
        for pos in range(start, len(self.members)):
            node, kernel, count = self.members[pos]
            values = [args[s[1]] if s[0] == "x" else s[1] if s[0] == "c" else outs[s[1]][s[2]]
                      for s in self.sources[pos]]
            try:
                result = kernel(*values)
            except BaseException as e:
                traceback.clear_frames(e.__traceback__)
                raise self.fail(e, node) from e
            outs[pos] = (result,) if count == 1 else tuple(result)
        return outs


def _NO_FAST_PATH(args):  # noqa: N802 - a sentinel that is also a valid fast path
    return None


def _stage_kind(node: NodeDef, sources: list, previous) -> str | None:
    """Whether a member can take part in the fast path (its range inputs Consts or the fast
    previous member's outputs): "quantize", "matmul", "dequantize" or None."""
    side = sources[1:]
    fixed = all(s[0] == "c" or (previous is not None and s[0] == "m" and s[2] > 0)
                for s in side)
    if not fixed:
        return None
    if node.op == "QuantizeV2" and previous is None and node.attr["T"] is dtypes.quint8 and \
            node.attr["mode"] == "SCALED" and node.attr["round_mode"] == "HALF_TO_EVEN" and \
            not node.attr.get("narrow_range"):
        return "quantize"
    if node.op in _MATMULS and not node.attr["transpose_a"] and \
            (previous is None or previous in ("quantize", "matmul")):
        return "matmul"
    if node.op == "Dequantize" and previous == "signed":
        return "dequantize"
    return None


def _prepare(chain: QuantizedChain, args, outs: list):
    """The fast path, from the constants the kernels prepared in a step that ran them (None
    while they are not ready: fbgemm packs a weight on the first step it runs). It covers the
    longest prefix of members it can; the others run their kernels on what the prefix's last
    member would have returned."""
    stages: list = []            # per fast member: (kind, k, its arguments)
    exits: list = []             # per fast member: carrier -> that member's own outputs
    previous, carrier = None, None        # carrier: (scale, zero point) of the quint8 handed on
    for pos, (node, kernel, _) in enumerate(chain.members):
        kind = _stage_kind(node, chain.sources[pos], previous)
        if kind is None:
            break
        values = [args[s[1]] if s[0] == "x" else s[1] if s[0] == "c" else outs[s[1]][s[2]]
                  for s in chain.sources[pos]]
        if kind == "quantize":
            known = kernel.range_constants(values[1], values[2])
            step = scaled_quint8_step(float(known.factor))
            if known.fast is None or step is None or known.cpu_outputs is None:
                break
            stages.append(("quantize", None, step))
            exits.append(_quantize_exit(step, known.cpu_outputs))
            carrier, previous = (step, 0), "quantize"
        elif kind == "matmul":
            fused = kernel.fused_constants(values[0], values[1], values[2], tuple(values[3:]))
            if fused.on_fbgemm and fused.product is None:
                return None                 # not packed yet: a step with m = 0 ran it
            if fused.fast is None:
                break
            signed = node.attr["Toutput"] is dtypes.qint8
            scale_a, zero_a = float(fused.scales.scale_a), fused.scales.zero_a
            scale_out, zero_out = float(fused.s_out), 128 if signed else 0
            stages.append(("matmul", fused.k, fbgemm.linear_op(_MATMULS[node.op]),
                           fused.product.entry.packed, scale_a, zero_a, scale_out, zero_out,
                           pos > 0 and carrier != (scale_a, zero_a)))
            exits.append(_matmul_exit(signed, scale_out, zero_out, fused.out_range))
            carrier, previous = (scale_out, zero_out), "signed" if signed else "matmul"
        else:
            _, _, scale = kernel.range_constants(values[1], values[2])
            if scale is None or carrier != (scale, 128) or not 2.0 ** -100 <= scale <= 2.0 ** 100:
                break
            stages.append(("dequantize", None))
            exits.append(lambda value: (value,))
            previous = "float"
    return _finish(chain, stages, exits) if stages else _NO_FAST_PATH


def _finish(chain: QuantizedChain, stages: list, exits: list):
    head_source = chain.sources[0][0]
    head = stages[0]
    if head[0] == "quantize":
        k = stages[1][1] if len(stages) > 1 else None
        head_fn = _quantize_head(head[2], k)
    else:
        head_fn = _matmul_head(*head[2:-1], head[1])
    middle = [_middle(stage) for stage in stages[1:]]
    last = len(stages) - 1
    exit_fn = exits[last]
    rest = last + 1 < len(chain.members)
    single = chain.members[-1][2] == 1

    def fast(args):
        value = head_fn(args[head_source[1]] if head_source[0] == "x" else head_source[1])
        if value is None:
            return None
        for step in middle:
            value = step(value)
        outs = exit_fn(value)
        if not rest:
            return outs[0] if single else outs
        done = [None] * len(chain.members)
        done[last] = outs
        done = chain.generic(args, last + 1, done)[-1]
        return done[0] if single else done
    return fast


def _quantize_head(step: float, k: int | None):
    """QuantizeV2's one-pass path (quantized._one_pass_step) up to the quint8 it makes; None
    where the kernels would take another path (not a float32 CPU tensor, a NaN) or the
    following matmul would not take its fast one (not [m > 0, k])."""
    f32, quint8, quantize, isnan = torch.float32, torch.quint8, torch.quantize_per_tensor, \
        math.isnan

    def head(x):
        if not isinstance(x, torch.Tensor) or x.dtype is not f32 or not x.is_cpu:
            return None
        if k is not None and (x.dim() != 2 or x.shape[0] == 0 or x.shape[1] != k):
            return None
        x = x.contiguous()
        if x.numel() and isnan(float(x.sum())):
            return None
        return quantize(x, step, 0, quint8)
    return head


def _matmul_head(op, packed, scale_a, zero_a, scale_out, zero_out, k: int):
    """quantized._fused_requantize's fast path for a plain quint8 `a` from outside."""
    u8, wrap = torch.uint8, fbgemm._quantized

    def head(a):
        if not isinstance(a, torch.Tensor) or a.dtype is not u8 or not a.is_cpu or \
                a.dim() != 2 or a.shape[0] == 0 or a.shape[1] != k:
            return None
        made = getattr(a, "_engine_quint8", None)
        q = made[0] if made is not None and made[1] == scale_a and made[2] == zero_a \
            else wrap(a.contiguous(), scale_a, zero_a)
        return op(q, packed, scale_out, zero_out)
    return head


def _middle(stage: tuple):
    if stage[0] == "dequantize":
        return torch.Tensor.dequantize
    _, _, op, packed, scale_a, zero_a, scale_out, zero_out, rewrap = stage
    if not rewrap:
        return lambda q: op(q, packed, scale_out, zero_out)
    wrap, plain = fbgemm._quantized, fbgemm.fresh_plain_uint8
    return lambda q: op(wrap(plain(q), scale_a, zero_a), packed, scale_out, zero_out)


def _quantize_exit(step: float, ranges: tuple):
    """The quint8 as QuantizeV2 returns it: the plain uint8 view that carries it."""
    def exit_(q):
        plain = fbgemm.fresh_plain_uint8(q)
        plain._engine_quint8 = (q, step, 0)
        return (plain, *ranges)
    return exit_


def _matmul_exit(signed: bool, scale_out: float, zero_out: int, ranges: tuple):
    """fbgemm.Product.step's result: the plain uint8 view (signed: its int8 twin)."""
    xor, i8 = torch.bitwise_xor, torch.int8

    def exit_(out):
        plain = fbgemm.fresh_plain_uint8(out)
        if signed:
            plain = xor(plain, 128).view(i8)
        plain._engine_quint8 = (out, scale_out, zero_out)
        return (plain, *ranges)
    return exit_
