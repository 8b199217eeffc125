"""One fused step for a chain of quantized ops (engine/runtime/chains.py finds them): the
members' own kernels called in order, and, once a first step has prepared their constants, a
fast path, bit for bit what the kernels compute: for steps of few rows the float32 route
(quantized_chain_float), else fbgemm's quint8 results handed straight from one op to the
next (no plain views, no signed copies, no per-op range lookups)."""

from __future__ import annotations

import math
import threading
import traceback
from collections.abc import Callable

import torch

from engine import dtypes
from engine.graph_def import NodeDef
from engine.kernels import quantized_chain_float as qfloat
from engine.kernels import quantized_fbgemm as fbgemm
from engine.passes.quantize_graph import scaled_quint8_step

_MATMULS = {"QuantizedMatMulWithBiasAndRequantize": False,
            "QuantizedMatMulWithBiasAndReluAndRequantize": True}
_ATTEMPTS = 4         # steps that may try to prepare the fast path before it is given up


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
        self.fast_members: tuple[int, int] | None = None    # [start, end) of the fast path
        self._fast = None               # args -> result, once prepared
        self._attempts = 0
        self._guards: list | None = None    # the last attempt's range inputs from outside
        self._lock = threading.Lock()

    def __call__(self, *args):
        fast = self._fast
        if fast is not None:
            return fast(args)
        with self._lock:
            outs = self.generic(args)
            if self._fast is None:
                self._attempts += 1
                self._learn(_prepare_routes(self, args, outs))
        return self.result(outs)

    def _learn(self, made) -> None:
        """Installs a prepared fast path once its range inputs from outside it (when it has
        any) were the very same tensors in two steps in a row; run-time ranges never are."""
        if made is not None:
            fast, span, guards = made
            guards = [tensor for _, tensor, _ in guards]
            if not guards or (self._guards is not None and len(guards) == len(self._guards)
                              and all(a is b for a, b in zip(guards, self._guards))):
                self._fast, self.fast_members = fast, span
                return
            self._guards = guards
        if self._attempts >= _ATTEMPTS:
            self._fast = self._plain

    def _plain(self, args):
        return self.result(self.generic(args))

    @property
    def has_fast_path(self) -> bool:
        return self.fast_members is not None

    def result(self, outs: list):
        last = outs[-1]
        return last[0] if self.members[-1][2] == 1 else last

    def value(self, source, args, outs):
        return args[source[1]] if source[0] == "x" else source[1] if source[0] == "c" else \
            outs[source[1]][source[2]]

    def generic(self, args, start: int = 0, outs: list | None = None,
                stop: int | None = None) -> list:
        """Every member's outputs, member by member from `start` to `stop` (earlier ones in
        `outs`)."""
        outs = outs if outs is not None else [None] * len(self.members)
        for pos in range(start, len(self.members) if stop is None else stop):
            node, kernel, count = self.members[pos]
            values = [self.value(s, args, outs) for s in self.sources[pos]]
            try:
                result = kernel(*values)
            except BaseException as e:
                traceback.clear_frames(e.__traceback__)
                raise self.fail(e, node) from e
            outs[pos] = (result,) if count == 1 else tuple(result)
        return outs


def _prepare_routes(chain: QuantizedChain, args, outs: list):
    """The fast path from this step: the float32 route (quantized_chain_float) for steps of
    few rows where it covers a matmul and gives this step's very outputs, with the fbgemm
    route (or the kernels) for larger ones; else the fbgemm route alone."""
    big = _prepare(chain, args, outs)
    small = qfloat.prepare(chain, args, outs)
    if small is None:
        return big
    stages, span, guards = small
    exit_fn = qfloat.exit_of(stages)
    source = chain.value(chain.sources[span[0]][0], args, outs)
    check = qfloat.body(stages, rows=1 << 62)(source)
    if check is None or check is qfloat.LARGE or \
            not _same_values(exit_fn(check)[0], outs[span[1] - 1][0]):
        return big
    large = big[0] if big is not None else chain._plain
    fast = _fast_path(chain, span, guards, qfloat.body(stages, qfloat.most_rows(stages)),
                      exit_fn, large)
    return fast, span, guards + (big[2] if big is not None else [])


def _same_values(ours: torch.Tensor, theirs) -> bool:
    """Bit for bit (a float32 compared as its bits: -0.0 is not 0.0, NaN is NaN)."""
    if not isinstance(theirs, torch.Tensor) or ours.dtype != theirs.dtype or \
            ours.shape != theirs.shape:
        return False
    if ours.dtype == torch.float32:
        return torch.equal(ours.view(torch.int32), theirs.contiguous().view(torch.int32))
    return torch.equal(ours, theirs)


def _stage_kind(node: NodeDef, sources: list, previous) -> str | None:
    """Whether a member can take part in the fast path: "quantize", "matmul", "dequantize" or
    None. The first fast member (previous None) may take any range inputs (the fast path
    checks each step that they are the tensors it was made from); the others take Consts or
    the previous fast member's outputs."""
    if previous is not None and not all(s[0] == "c" or (s[0] == "m" and s[2] > 0)
                                        for s in sources[1:]):
        return None
    if node.op == "QuantizeV2" and previous is None and node.attr["T"] is dtypes.quint8 and \
            node.attr["mode"] == "SCALED" and node.attr["round_mode"] == "HALF_TO_EVEN" and \
            not node.attr.get("narrow_range"):
        return "quantize"
    if node.op in _MATMULS and not node.attr["transpose_a"] and \
            previous in (None, "quantize", "matmul"):
        return "matmul"
    if node.op == "Dequantize" and previous == "signed":
        return "dequantize"
    return None


def _prepare(chain: QuantizedChain, args, outs: list):
    """(fast path, its [start, end) members, the range tensors it checks each step) from the
    constants the kernels prepared in a step that ran them all; None where there is none (or
    not yet: fbgemm packs a weight on the first step it runs). It covers the first run of
    members it can; the members before and after it run their kernels (those after on what
    its last member would have returned)."""
    stages: list = []            # per fast member: (kind, k, its arguments)
    exits: list = []             # per fast member: carrier -> that member's own outputs
    previous, carrier, start = None, None, None   # carrier: (scale, zero) of the quint8 passed
    for pos, (node, kernel, _) in enumerate(chain.members):
        kind = _stage_kind(node, chain.sources[pos], previous)
        if kind is None:
            if start is None:
                continue
            break
        values = [chain.value(s, args, outs) for s in chain.sources[pos]]
        if kind == "quantize":
            known = kernel.range_constants(values[1], values[2])
            step = scaled_quint8_step(float(known.factor))
            if known.fast is None or step is None or known.cpu_outputs is None:
                continue
            stages.append(("quantize", None, step))
            exits.append(_quantize_exit(step, known.cpu_outputs))
            carrier, previous = (step, 0), "quantize"
        elif kind == "matmul":
            fused = kernel.fused_constants(values[0], values[1], values[2], tuple(values[3:]))
            if fused.on_fbgemm and fused.product is None:
                return None                 # not packed yet: a step with m = 0 ran it
            if fused.fast is None:
                if start is None:
                    continue
                break
            signed = node.attr["Toutput"] is dtypes.qint8
            scale_a, zero_a = float(fused.scales.scale_a), fused.scales.zero_a
            scale_out, zero_out = float(fused.s_out), 128 if signed else 0
            stages.append(("matmul", fused.k, fbgemm.linear_op(_MATMULS[node.op]),
                           fused.product.entry.packed, scale_a, zero_a, scale_out, zero_out,
                           start is not None and carrier != (scale_a, zero_a)))
            exits.append(_matmul_exit(signed, scale_out, zero_out, fused.out_range))
            carrier, previous = (scale_out, zero_out), "signed" if signed else "matmul"
        else:
            _, _, scale = kernel.range_constants(values[1], values[2])
            if scale is None or carrier != (scale, 128) or not 2.0 ** -100 <= scale <= 2.0 ** 100:
                break
            stages.append(("dequantize", None))
            exits.append(lambda value: (value,))
            previous = "float"
        if start is None:
            start = pos
            guards = [(s, values[slot], values[slot]._version)
                      for slot, s in enumerate(chain.sources[pos]) if slot > 0 and s[0] != "c"]
    if start is None:
        return None
    span = (start, start + len(stages))
    return _fast_path(chain, span, guards, _fbgemm_body(stages), exits[-1]), span, guards


def _fbgemm_body(stages: list):
    """The fbgemm route: the first stage from member start's input, the rest on what the one
    before made."""
    head = stages[0]
    if head[0] == "quantize":
        head_fn = _quantize_head(head[2], stages[1][1] if len(stages) > 1 else None)
    else:
        head_fn = _matmul_head(*head[2:-1], head[1])
    middle = [_middle(stage) for stage in stages[1:]]

    def body(x):
        value = head_fn(x)
        if value is None:
            return None
        for step in middle:
            value = step(value)
        return value
    return body


def _fast_path(chain: QuantizedChain, span: tuple[int, int], guards: list, body: Callable,
               exit_fn: Callable, large: Callable | None = None):
    """args -> the chain's result: the members before span's start by their kernels, then
    `body` from member start's input (None: the kernels instead; qfloat.LARGE: `large` takes
    the whole step), its values through `exit_fn` as member end - 1's outputs, then the
    members after it by their kernels."""
    start, last = span[0], span[1] - 1
    count = len(chain.members)
    rest = last + 1 < count
    single = chain.members[-1][2] == 1
    source, generic, value_of = chain.sources[start][0], chain.generic, chain.value
    declined = qfloat.LARGE

    def fast(args):
        outs = generic(args, 0, None, start) if start else None
        for guard, tensor, version in guards:
            seen = value_of(guard, args, outs)
            if seen is not tensor or seen._version != version:
                return chain.result(generic(args, start, outs))
        value = body(value_of(source, args, outs))
        if value is None:
            return chain.result(generic(args, start, outs))
        if value is declined:
            return large(args)
        done = exit_fn(value)
        if not rest:
            return done[0] if single else done
        outs = outs or [None] * count
        outs[last] = done
        return chain.result(generic(args, last + 1, outs))
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
