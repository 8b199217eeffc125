"""A fused chain's route for small batches (engine/kernels/quantized_chain.py): the members'
integer maths on float32 tensors. Every quantized value is a small integer and every partial
sum of a layer's product stays within 2^24 (k * 255 * 128 <= 2^24), so float32 holds each
exactly, and the requantize is fbgemm's own float32 steps: bit for bit what the op-by-op
kernels give, in torch calls of 1-2 us where each fbgemm call costs 15-25 us at any size."""

from __future__ import annotations

import numpy as np
import torch

from engine import dtypes
from engine.kernels import quantized as qk
from engine.kernels import quantized_fbgemm as fbgemm

F32 = np.float32
EXACT_SUM = 2 ** 24            # float32 holds every integer up to it
# A layer's m * k * n up to which float32 GEMM and its four elementwise passes beat fbgemm's
# call: the digits MLP through Session.run (one thread, CPU time) took 56 / 134 / 316 / 585 us
# this way at batch 1 / 256 / 1024 / 2048 against 137 / 222 / 468 / 647 us on fbgemm; its
# first layer at 1024 rows is 2^22.
SMALL_WORK = 1 << 22
LARGE = object()               # the route declines a step: too many rows, fbgemm's turn
_MATMULS = {"QuantizedMatMulWithBiasAndRequantize": False,
            "QuantizedMatMulWithBiasAndReluAndRequantize": True}
_JUST_BELOW_HALF = qk.JUST_BELOW_HALF


def prepare(chain, args, outs: list):
    """(stages, [start, end) members, guards) for the first run of members this route can
    take, from the constants their kernels prepared in a step that ran them all (`outs`);
    None where there is none. It needs a matmul that runs on fbgemm: elsewhere the kernels
    take other paths (the integer one), which this route does not follow. guards: (source,
    tensor, version) of the first member's range inputs from outside, which each step checks."""
    stages, start, previous, guards = [], None, None, []
    for pos, (node, kernel, _) in enumerate(chain.members):
        sources = chain.sources[pos]
        values = [chain.value(s, args, outs) for s in sources]
        stage = _stage(node, kernel, sources, values, previous)
        if stage is None:
            if start is None:
                continue
            break
        if start is None:
            start = pos
            guards = [(s, values[slot], values[slot]._version)
                      for slot, s in enumerate(sources) if slot > 0 and s[0] != "c"]
        stages.append(stage)
        previous = stage[0] if stage[0] != "matmul" else \
            "signed" if stage[1]["signed"] else "unsigned"
        if previous == "float":
            break
    while stages and stages[-1][0] not in ("matmul", "float"):
        stages.pop()
    if not any(kind == "matmul" for kind, _ in stages):
        return None
    return stages, (start, start + len(stages)), guards


def most_rows(stages: list) -> int:
    """The most rows a step may have to take this route (SMALL_WORK a layer)."""
    return min(SMALL_WORK // (facts["k"] * facts["n"]) for kind, facts in stages
               if kind == "matmul")


def _stage(node, kernel, sources, values, previous):
    """(kind, facts) of one member, or None where this route cannot run it after `previous`.
    As in the fbgemm route, only the first member may take range inputs from outside."""
    if previous is not None and not all(s[0] == "c" or (s[0] == "m" and s[2] > 0)
                                        for s in sources[1:]):
        return None
    op = node.op
    if op == "QuantizeV2" and previous is None:
        return _quantize_stage(node, kernel, values)
    if op == "QuantizedReshape" and previous == "quantize" and sources[1][0] == "c":
        return "reshape", {"shape": [int(d) for d in values[1].reshape(-1).tolist()]}
    if op in _MATMULS and not node.attr["transpose_a"] and \
            previous in (None, "quantize", "reshape", "unsigned"):
        return _matmul_stage(node, kernel, values)
    if op == "Dequantize" and previous in ("signed", "unsigned") and \
            node.attr["dtype"] is dtypes.float32:
        return _dequantize_stage(node, kernel, values, previous)
    return None


def _quantize_stage(node, kernel, values):
    """QuantizeV2 into quint8 as its kernel computes it: MIN_FIRST (QUANTIZE_WITH_EIGEN:
    round half away from zero of x * scale, less the offset, clamped) or the one-pass
    SCALED (round half to even of x * factor, clamped). NaN becomes 0 as the kernels'
    x86 cast gives it; inf clamps as the kernels' clamps do."""
    if node.attr["T"] is not dtypes.quint8:
        return None
    known = kernel.range_constants(values[1], values[2])
    if known.cpu_outputs is None:
        return None
    mode = node.attr["mode"]
    if mode == "MIN_FIRST":
        scale, offset, lower, upper = qk._quantize_constants(known.lo, known.hi, dtypes.quint8)
        return "quantize", {"mode": "MIN_FIRST", "scale": float(scale),
                            "offset": float(offset), "bounds": (float(lower), float(upper))}
    if mode == "SCALED" and known.fast is not None:
        return "quantize", {"mode": "SCALED", "scale": float(known.factor)}
    return None


def _matmul_stage(node, kernel, values):
    """A fused matmul's fbgemm maths: acc = sum (u - zero_a) w exactly, then
    rint(fl(x * multiplier)) clamped, x = acc + bias * rcp, where rcp is the float32 of
    1.0 / acc_scale in double and multiplier = acc_scale / s_out in float32 (torch's qlinear);
    x is rounded to float32 once where fbgemm fuses that multiply-add (bias_terms says how)."""
    fused = kernel.fused_constants(values[0], values[1], values[2], tuple(values[3:]))
    how = fbgemm.bias_fused()
    if not fused.on_fbgemm or fused.fast is None or how is None:
        return None
    k = fused.k
    b = values[1].t() if node.attr["transpose_b"] else values[1]
    if b.dim() != 2 or b.shape[0] != k or k * 255 * 128 > EXACT_SUM:
        return None
    acc_scale = F32(fused.scales.acc_scale)
    multiplier = F32(acc_scale / F32(fused.s_out))
    signed = node.attr["Toutput"] is dtypes.qint8
    relu = _MATMULS[node.op]
    bounds = ((0.0 if relu else -128.0), 127.0) if signed else (0.0, 255.0)
    exact = bias_terms(fused.bias_f.to(torch.float32).numpy(), F32(1.0 / float(acc_scale)),
                       how, k * 255 * 128)
    # fbgemm's float -> int32 conversion overflows to INT_MIN (then 0) at 2^31, where a clamp
    # would give 255; and a fused sum of a tiny bias alone must round to 0 (multiplier < 1)
    top = float(np.abs(exact).max()) if exact is not None and exact.size else 0.0
    if exact is None or not 0 < multiplier < 1 or \
            (k * 255 * 128 + top) * float(multiplier) >= 2.0 ** 30:
        return None
    bias = exact
    if exact.dtype == np.float64:
        single = float32_terms(exact, acc_range(b, int(fused.scales.zero_a)), multiplier, bounds)
        bias = single if single is not None else exact
    return "matmul", {"weights": b.to(torch.float32).contiguous(),
                      "bias": torch.from_numpy(bias), "multiplier": float(multiplier),
                      "bounds": bounds, "k": k, "n": int(b.shape[1]),
                      "zero_a": int(fused.scales.zero_a), "signed": signed,
                      "out_range": fused.out_range}


_ODD_GRID = 2.0 ** 27


def acc_range(w_kn: torch.Tensor, zero_a: int) -> tuple[np.ndarray, np.ndarray]:
    """Each column's least and greatest sum (u - zero_a) w over u in [0, 255]."""
    w = w_kn.to(torch.int64).numpy()
    ends = np.stack([w * (255 - zero_a), w * -zero_a])
    return ends.min(0).sum(0), ends.max(0).sum(0)


def float32_terms(exact: np.ndarray, accs: tuple, multiplier: F32,
                  bounds: tuple) -> np.ndarray | None:
    """float32 terms c with clamp(rint(fl32(fl32(acc + c) * multiplier))) the level that the
    exact sum acc + P + q gives, for every integer acc each column can reach; None where some
    column has none among round32(P + q) and its two neighbours. Both sides are non-decreasing
    step functions of acc, so they agree everywhere where every level starts at the same acc:
    a bisection finds those starts. Two float32 adds cost less than a double one (about 1 us
    against 5 at one row, 4 against 17 at 256)."""
    lo, hi = bounds
    first, last = accs
    want = _level_starts(lambda acc, j: _exact_levels(acc, exact[j], multiplier, lo, hi),
                         first, last, lo, hi)
    guess = exact.astype(np.float32)
    out = guess.copy()
    settled = np.zeros(exact.size, bool)
    for c in (guess, np.nextafter(guess, F32(np.inf)), np.nextafter(guess, F32(-np.inf))):
        got = _level_starts(lambda acc, j, c=c: _single_levels(acc, c[j], multiplier, lo, hi),
                            first, last, lo, hi)
        fits = ~settled & np.all(got == want, axis=1)
        out[fits], settled[fits] = c[fits], True
    return out if settled.all() and exact.size else None


def _exact_levels(acc, c64, multiplier, lo, hi):
    """fbgemm's level for integer acc (float64 array) with the exact term P + q (float64):
    acc + P + q is exact in double and rounds to float32 as acc + p does (bias_terms) wherever
    it is at least 0.5 in size; below, acc + P is 0 and |p - P| < 0.5 gives level 0 (with
    multiplier < 1), as it does here."""
    x = (acc + c64).astype(np.float32)
    y = np.where(np.abs(acc + c64) < 0.5, F32(0.0), x * multiplier)
    return np.clip(np.rint(y), lo, hi)


def _single_levels(acc, c32, multiplier, lo, hi):
    x = acc.astype(np.float32) + c32
    return np.clip(np.rint(x * multiplier), lo, hi)


def _level_starts(levels, first, last, lo, hi) -> np.ndarray:
    """[columns, levels above lo]: the least acc in [first, last + 1] (per column) whose level
    is at least that level (last + 1: none is)."""
    n = first.size
    wanted = np.arange(lo + 1, hi + 1, dtype=np.float64)[None, :].repeat(n, 0)
    cols = np.arange(n)[:, None].repeat(wanted.shape[1], 1)
    below = np.repeat(first[:, None] - 1, wanted.shape[1], 1).astype(np.float64)
    above = np.repeat(last[:, None] + 1, wanted.shape[1], 1).astype(np.float64)
    while np.any(above - below > 1):
        mid = np.floor((below + above) / 2)
        reached = levels(mid, cols) >= wanted
        above = np.where(reached, mid, above)
        below = np.where(reached, below, mid)
    return above.astype(np.int64)


def bias_terms(bias: np.ndarray, rcp: F32, fused: bool, acc_max: int) -> np.ndarray | None:
    """What the route adds to the exact accumulator so that one float32 rounding of the sum
    is fbgemm's x. Unfused: fl32(bias * rcp) (float32). Fused: x = round32(acc + p), p =
    bias * rcp exactly (a double holds the product of two float32); p = P + q with P the
    nearest integer and q rounded to odd on the 2^-27 grid (the neighbour with an odd last
    bit where it is not on it) leaves every comparison with the multiples of 2^-25 as it
    was, so acc + P + q rounds to float32 as acc + p does wherever |acc + p| >= 0.5 (acc + P
    not 0); and P + q, and acc + P + q for |acc + P| < 2^25, are exact in double. Returns
    float64 P + q then; None where |P| + acc_max could reach 2^25."""
    if not fused:
        terms = (bias * rcp).astype(np.float32)
        return terms if np.all(np.isfinite(terms)) else None
    p = bias.astype(np.float64) * float(rcp)
    if not np.all(np.isfinite(p)):
        return None
    whole = np.rint(p)
    if float(np.abs(whole).max(initial=0.0)) + acc_max + 1 >= 2.0 ** 25:
        return None
    scaled = (p - whole) * _ODD_GRID
    kept = np.trunc(scaled)
    kept = np.where((kept != scaled) & (kept % 2 == 0), kept + np.sign(scaled), kept)
    return whole + kept / _ODD_GRID


def _dequantize_stage(node, kernel, values, previous):
    """Dequantize as its kernel computes it: SCALED qint8 v * scale (the one rounding torch's
    dequantize of fbgemm's quint8 also makes), MIN_FIRST quint8 base + u * scale."""
    lo, hi, scale = kernel.range_constants(values[1], values[2])
    mode, t = node.attr["mode"], node.attr["T"]
    if previous == "signed" and mode == "SCALED" and t is dtypes.qint8 and scale is not None \
            and np.isfinite(scale):
        return "float", {"scale": float(scale), "base": None}
    if previous == "unsigned" and mode == "MIN_FIRST" and t is dtypes.quint8:
        base, step = qk._dequantize_constants(float(lo), float(hi), dtypes.quint8)
        return "float", {"scale": float(step), "base": float(base)}
    return None


def body(stages: list, rows: int):
    """The route from member start's input (at most `rows` rows, else LARGE) to the last
    stage's float32 values (None: the kernels must run, as for a wrong shape). A matmul
    leaves its integers as they are (signed ones in [-128, 127]); the next one takes off its
    own zero point, so every value a GEMM reads is within 255."""
    f32, u8, tensor = torch.float32, torch.uint8, torch.Tensor
    matmuls = [facts for kind, facts in stages if kind == "matmul"]
    k0 = matmuls[0]["k"]
    steps, previous = [], None
    for kind, facts in stages:
        if kind == "quantize":
            steps.append(_quantize_step(facts))
        elif kind == "reshape":
            steps.append(_reshape_step(facts["shape"]))
        elif kind == "matmul":
            steps.append(_matmul_step(facts, checks=previous in ("quantize", "reshape"),
                                      converted=previous is None))
        else:
            steps.append(_dequantize_step(facts))
        previous = kind
    limit = rows * k0

    if stages[0][0] == "quantize":
        def accepts(x):
            if not isinstance(x, tensor) or x.dtype is not f32 or not x.is_cpu or \
                    x.numel() == 0:
                return None
            return x if x.numel() <= limit else LARGE
    else:
        zero = matmuls[0]["zero_a"]

        def accepts(x):
            if not isinstance(x, tensor) or x.dtype is not u8 or not x.is_cpu or \
                    x.dim() != 2 or x.shape[0] == 0 or x.shape[1] != k0:
                return None
            if x.shape[0] > rows:
                return LARGE
            y = x.to(f32)
            return y.sub_(zero) if zero else y

    def body(x):
        y = accepts(x)
        if y is None or y is LARGE:
            return y
        for step in steps:
            y = step(y)
            if y is None:
                return None
        return y
    return body


# torch calls are cheapest with tensor operands (a Python number is wrapped into a tensor on
# every call: 2-3 us against 1-1.5 us at one row) and hardtanh_ (clamp_ with two Python bounds
# takes twice as long); every operand below is float32, so the arithmetic is the same.

def _scalar(value: float) -> torch.Tensor:
    return torch.tensor(value, dtype=torch.float32)


def _quantize_step(facts: dict):
    scale, clamp = _scalar(facts["scale"]), torch.nn.functional.hardtanh_
    if facts["mode"] == "SCALED":
        return lambda x: clamp((x * scale).round_().nan_to_num_(0.0), 0.0, 255.0)
    offset, (lower, upper) = facts["offset"], facts["bounds"]
    half = _scalar(_JUST_BELOW_HALF)
    if offset == 0 and lower == 0:
        # floor(y + 0.49999997) is round half away from zero wherever it is >= 0 (quantized.
        # JUST_BELOW_HALF); below 0 both clamp to 0
        return lambda x: clamp((x * scale).add_(half).floor_().nan_to_num_(0.0), 0.0, upper)
    offset = _scalar(offset)

    def step(x):
        y = x * scale
        return clamp(y.abs().add_(half).floor_().copysign_(y).sub_(offset).nan_to_num_(0.0),
                     lower, upper)
    return step


def _reshape_step(shape: list):
    def step(y):                     # y is the quantize's own fresh tensor: view suffices
        try:
            return y.view(*shape)
        except RuntimeError:
            return None              # the kernel raises TF's message
    return step


def _matmul_step(facts: dict, checks: bool, converted: bool):
    """One layer on its input's float32 integers. The first after a quantize `checks` that
    its input is [m > 0, k] (the kernels raise TF's errors otherwise); a head from a uint8
    input took off the zero point already (`converted`)."""
    mm, w, bias, clamp = torch.mm, facts["weights"], facts["bias"], \
        torch.nn.functional.hardtanh_
    multiplier = _scalar(facts["multiplier"])
    (lo, hi), k = facts["bounds"], facts["k"]
    zero = None if converted or not facts["zero_a"] else _scalar(facts["zero_a"])
    add, f32 = torch.add, torch.float32

    if bias.dtype == torch.float64:       # acc + P + q in double (exact), rounded once
        def layer(a):
            if zero is not None:
                a = a.sub_(zero)
            return clamp(add(mm(a, w), bias).to(f32).mul_(multiplier), lo, hi).round_()
    else:
        def layer(a):
            if zero is not None:
                a = a.sub_(zero)
            return clamp(mm(a, w).add_(bias).mul_(multiplier), lo, hi).round_()
    if not checks:
        return layer

    def first(a):
        if a.dim() != 2 or a.shape[0] == 0 or a.shape[1] != k:
            return None
        return layer(a)
    return first


def _dequantize_step(facts: dict):
    scale, base = _scalar(facts["scale"]), facts["base"]
    if not base:
        # 0 + y * scale: the one rounding of the product (fused or not, adding an exact 0
        # changes nothing), and a layer's -0.0 (it rounds (-0.5, 0) so) comes out +0.0, as the
        # kernels' integer 0 does
        zero, addcmul = _scalar(0.0), torch.addcmul
        return lambda y: addcmul(zero, y, scale)
    base = _scalar(base)
    return lambda y: y.mul_(scale).add_(base)


def exit_of(stages: list):
    """The last stage's values as its member returns them: a Dequantize's float32; a matmul's
    plain uint8 (qint8: int8) with its output range tensors."""
    kind, facts = stages[-1]
    if kind == "float":
        return lambda y: (y,)
    dtype = torch.int8 if facts["signed"] else torch.uint8
    ranges = facts["out_range"]
    return lambda y: (y.to(dtype), *ranges)
