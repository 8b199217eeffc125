"""The u8 x s8 matmul with bias and requantization on fbgemm (torch.ops.quantized.linear /
linear_relu, aten ops): each weight tensor prepacked once and cached, and a guard that keeps
the product exact where fbgemm sums pairs of products in int16 with saturation."""

from __future__ import annotations

import threading
import warnings
import weakref
from dataclasses import dataclass

import torch

ENGINES = ("x86", "fbgemm")
# fbgemm's AVX2 kernels (vpmaddubsw) add the products of adjacent k pairs into an int16 with
# saturation; with VNNI they go straight to int32. A pair is exact while it stays in int16.
INT16_MAX, INT16_MIN = 32767, -32768
U8_MAX = 255

_lock = threading.RLock()      # re-entered when a weight dies during a pack
_probe: list[bool] = []                      # [pairs_saturate], measured once per process
_bias_probe: list = []                      # [bias_fused], measured once per process
_cache: dict[int, _Entry] = {}             # id(weight tensor) -> its prepacked forms


_BUILT_IN = any(e in torch.backends.quantized.supported_engines for e in ENGINES)


def usable() -> bool:
    """fbgemm is built in and the quantized engine torch uses is one that runs it."""
    return _BUILT_IN and torch.backends.quantized.engine in ENGINES


def _quantized(values: torch.Tensor, scale: float, zero_point: int) -> torch.Tensor:
    return torch._make_per_tensor_quantized_tensor(values, scale, zero_point)


def _first_creation_quietly() -> None:
    """torch 2.13 warns, once per process, that creating quint8/qint8 tensors is deprecated
    (Quantizer.cpp; the aten ops themselves do not warn): spend that one warning here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor")
        _quantized(torch.zeros(1, dtype=torch.uint8), 1.0, 0)


def pairs_saturate() -> bool:
    """Whether this CPU's fbgemm clips a pair 255 * 127 + 255 * 127 (64770) to 32767."""
    with _lock:
        if not _probe:
            _first_creation_quietly()
            a = _quantized(torch.full((1, 2), U8_MAX, dtype=torch.uint8), 1.0, 0)
            w = _quantized(torch.full((1, 2), 127, dtype=torch.int8), 1.0, 0)
            packed = torch.ops.quantized.linear_prepack(w, None)
            # Output scale 254: an exact 64770 gives 255, a saturated 32767 gives 129.
            out = torch.ops.quantized.linear(a, packed, 254.0, 0).int_repr()
            _probe.append(int(out[0, 0]) != U8_MAX)
        return _probe[0]


# One layer whose output tells fbgemm's two ways of adding a float bias apart: the accumulator
# 46157 plus bias 0x1.c13d6p-1 / (scale_a * scale_b), times acc_scale / s_out, is 21 when the
# sum is rounded once (a fused multiply-add of bias and 1 / acc_scale onto the accumulator),
# 22 when the bias term is rounded to float32 before the add.
_BIAS_PROBE = {"a": [255, 0, 108, 0, 56, 0], "w": [127, 0, 127, 0, 1, 0],
               "bias": float.fromhex("0x1.c13d6p-1"), "scale_a": 1 / 255, "scale_b": 0.01,
               "scale_out": 0.125, "fused": 21, "separate": 22}


def bias_fused() -> bool | None:
    """How this CPU's fbgemm adds the float bias in its requantize, raw + bias * (1 /
    acc_scale) then times the multiplier: True where the sum is rounded once (its AVX2 /
    AVX-512 code compiled to a fused multiply-add, as measured here), False where the
    product is rounded first, None where the probe gives neither (then no route may stand
    in for fbgemm's requantize)."""
    with _lock:
        if not _bias_probe:
            _first_creation_quietly()
            p = _BIAS_PROBE
            f32 = [float(torch.tensor(p[k], dtype=torch.float32))
                   for k in ("scale_a", "scale_b", "scale_out")]
            w = _quantized(torch.tensor([p["w"]], dtype=torch.int8), f32[1], 0)
            packed = torch.ops.quantized.linear_prepack(
                w, torch.tensor([p["bias"]], dtype=torch.float32))
            a = _quantized(torch.tensor([p["a"]], dtype=torch.uint8), f32[0], 0)
            got = int(linear_op(False)(a, packed, f32[2], 0).int_repr()[0, 0])
            _bias_probe.append(True if got == p["fused"] else False
                               if got == p["separate"] else None)
        return _bias_probe[0]


def safe_activation_max(w_nk: torch.Tensor) -> int:
    """The largest a value for which no adjacent pair w[j, 2p] * a + w[j, 2p+1] * a' leaves
    int16, for every output j: a >= 0, so the positive and negative parts bound the pair."""
    pairs = _pair_view(w_nk)
    top = int(pairs.clamp(min=0).sum(-1).max()) if pairs.numel() else 0
    bottom = int(pairs.clamp(max=0).sum(-1).min()) if pairs.numel() else 0
    limits = [U8_MAX]
    if top > 0:
        limits.append(INT16_MAX // top)
    if bottom < 0:
        limits.append(INT16_MIN // bottom)
    return min(limits)


def _pair_view(w_nk: torch.Tensor) -> torch.Tensor:
    """[n, k/2, 2] int32 pairs along k (an odd k pads one zero)."""
    w = w_nk.to(torch.int32)
    if w.shape[1] % 2:
        w = torch.cat([w, torch.zeros((w.shape[0], 1), dtype=torch.int32)], dim=1)
    return w.reshape(w.shape[0], -1, 2)


def spread_columns(w_nk: torch.Tensor) -> torch.Tensor:
    """A k' index (k <= k' <= 2k, -1 for a zero column) that gives each row of an unsafe pair
    a zero partner: one u8 value times one s8 weight, at most 255 * 128, never saturates."""
    pairs = _pair_view(w_nk)
    unsafe = (pairs.clamp(min=0).sum(-1).amax(0) * U8_MAX > INT16_MAX) | \
        (pairs.clamp(max=0).sum(-1).amin(0) * U8_MAX < INT16_MIN)
    index = []
    k = w_nk.shape[1]
    for p, bad in enumerate(unsafe.tolist()):
        rows = [r for r in (2 * p, 2 * p + 1) if r < k]
        index.extend([rows[0], -1, *rows[1:], -1] if bad else rows)
    return torch.tensor(index, dtype=torch.long)


@dataclass
class _Entry:
    """One weight tensor's prepacked forms, valid while both tensors live and key matches
    (an id alone could name a newer tensor in a dead one's memory)."""
    ref: weakref.ref
    bias_ref: weakref.ref
    key: tuple
    packed: object
    safe_max: int
    w_nk: torch.Tensor | None = None   # kept only where some a could saturate a pair
    spread: tuple | None = None        # (column index, packed spread weights), made on need


def _tensor_key(t: torch.Tensor) -> tuple:
    return (t._version, t.data_ptr(), tuple(t.shape), t.dtype)


def _forget(weight_id: int):
    def callback(_ref, lock=_lock, cache=_cache) -> None:    # bound: at exit globals go
        with lock:
            cache.pop(weight_id, None)
    return callback


class Product:
    """One fused op's weights on fbgemm: b (qint8 as int8, [k, n], or [n, k] when
    transpose_b) with scale_b, and the float32 bias fbgemm adds."""

    def __init__(self, b: torch.Tensor, transpose_b: bool, scale_b: float,
                 bias: torch.Tensor, bias_source: torch.Tensor):
        key = (_tensor_key(b), transpose_b, scale_b, _tensor_key(bias_source),
               tuple(bias.tolist()) if bias is not bias_source else None)
        with _lock:
            entry = _cache.get(id(b))
            if entry is None or entry.ref() is not b or entry.bias_ref() is not bias_source \
                    or entry.key != key:
                entry = self._pack(b, transpose_b, scale_b, bias, bias_source, key)
                _cache[id(b)] = entry
        self.entry, self.scale_b, self.bias = entry, scale_b, bias

    @staticmethod
    def _pack(b, transpose_b, scale_b, bias, bias_source, key) -> _Entry:
        saturates = pairs_saturate()
        w_nk = (b if transpose_b else b.t()).contiguous()
        packed = torch.ops.quantized.linear_prepack(_quantized(w_nk, scale_b, 0), bias)
        safe = safe_activation_max(w_nk) if saturates else U8_MAX
        return _Entry(weakref.ref(b, _forget(id(b))), weakref.ref(bias_source), key, packed,
                      safe, w_nk if safe < U8_MAX else None)

    def _spread(self):
        entry = self.entry
        with _lock:
            if entry.spread is None:
                entry.spread = self._packed_spread(entry)
        return entry.spread

    def _packed_spread(self, entry: _Entry) -> tuple:
        """(a's column index, packed weights): a zero weight column's partner in a is the
        column before it again (any value times 0 adds nothing)."""
        index = spread_columns(entry.w_nk)
        padded = torch.cat([entry.w_nk, torch.zeros((entry.w_nk.shape[0], 1),
                                                    dtype=torch.int8)], dim=1)
        w = padded[:, index].contiguous()
        a_index = index.clone()
        a_index[index < 0] = index[torch.nonzero(index < 0).reshape(-1) - 1]
        return a_index, torch.ops.quantized.linear_prepack(_quantized(w, self.scale_b, 0),
                                                           self.bias)

    def run(self, a: torch.Tensor, scale_a: float, zero_a: int, scale_out: float,
            zero_out: int, relu: bool) -> torch.Tensor:
        """u8 [m, k] -> u8 [m, n]: clamp(rint((acc + bias / (s_a s_b)) * s_a s_b / s_out) +
        zero_out), acc = sum (a - zero_a) b in int32, exact (no pair saturates). The plain
        result carries the quint8 it views (as_quint8 hands that one to the next fused op)."""
        entry = self.entry
        packed = entry.packed
        if entry.safe_max < U8_MAX and a.numel() and int(a.max()) > entry.safe_max:
            index, packed = self._spread()
            a = a.index_select(1, index)
        out = linear_op(relu)(as_quint8(a, scale_a, zero_a), packed, scale_out, zero_out)
        plain = fresh_plain_uint8(out)
        plain._engine_quint8 = (out, scale_out, zero_out)
        return plain


    def step(self, scale_a: float, zero_a: int, scale_out: float, zero_out: int, relu: bool,
             signed: bool, extra: tuple):
        """run for a with no pair to spread, as one closure over everything fixed: a ->
        (out, *extra), out the plain uint8 result (signed: the int8 signed_view). None where
        some a could saturate a pair (run checks a's values each step)."""
        if self.entry.safe_max < U8_MAX:
            return None
        packed, op, empty, u8 = self.entry.packed, linear_op(relu), torch.empty, torch.uint8
        made_key, wrap, xor, i8 = (scale_out, zero_out), _quantized, torch.bitwise_xor, torch.int8

        def fast(a: torch.Tensor) -> tuple:
            made = getattr(a, "_engine_quint8", None)
            q = made[0] if made is not None and made[1] == scale_a and made[2] == zero_a \
                else wrap(a.contiguous(), scale_a, zero_a)
            out = op(q, packed, scale_out, zero_out)
            plain = empty(0, dtype=u8).set_(out.untyped_storage(), 0, out.shape)
            if signed:
                plain = xor(plain, 128).view(i8)
            plain._engine_quint8 = (out, *made_key)
            return plain, *extra
        return fast


_LINEAR: dict[bool, object] = {}


def linear_op(relu: bool):
    """quantized::linear[_relu]'s one overload, called directly: the overload packet's
    __call__ looks for Python dispatch on every call, 20-40 us a call here (bench_quantized),
    and the overload's own __call__ (a torchbind op: it takes packed params) still walks its
    arguments for FakeScriptObjects, which only tracing makes; its C++ operator (_op) is the
    same kernel without that walk."""
    op = _LINEAR.get(relu)
    if op is None:
        overload = (torch.ops.quantized.linear_relu if relu else
                    torch.ops.quantized.linear).default
        op = _LINEAR[relu] = getattr(overload, "_op", overload)
    return op


def signed_view(plain: torch.Tensor) -> torch.Tensor:
    """A Product's uint8 result with zero point 128 as the qint8 values it stands for
    (u - 128 is u ^ 128 read as int8); it carries the quint8 so that a Dequantize can let
    torch dequantize it in one call (see dequantize_made)."""
    signed = torch.bitwise_xor(plain, 128).view(torch.int8)
    signed._engine_quint8 = plain._engine_quint8
    return signed


def dequantize_made(q: torch.Tensor, scale: float) -> torch.Tensor | None:
    """q's float32 values (q * scale, q int8) through torch's dequantize of the quint8 that
    q came from, where q is a signed_view with that scale; else None. Bit for bit q * scale:
    torch computes fma(scale, u, -128 * scale) (or (u - 128) * scale), and -128 * scale is
    exact for a scale in [2^-100, 2^100], so both round the exact scale * (u - 128) once."""
    made = getattr(q, "_engine_quint8", None)
    if made is None or made[2] != 128 or made[1] != scale or q.dtype != torch.int8 or \
            not 2.0 ** -100 <= scale <= 2.0 ** 100:
        return None
    return made[0].dequantize()


def as_quint8(a: torch.Tensor, scale: float, zero_point: int) -> torch.Tensor:
    """a (plain uint8) as a quint8 tensor: the one an fbgemm op made it from, where a is that
    op's output as it came (same object, so the same storage and shape) and the scale and
    zero point agree; else a new wrapper."""
    made = getattr(a, "_engine_quint8", None)
    if made is not None and made[1] == scale and made[2] == zero_point:
        return made[0]
    return _quantized(a.contiguous(), scale, zero_point)


def plain_uint8(q: torch.Tensor) -> torch.Tensor:
    """A quint8 tensor's values as a plain uint8 tensor on the same storage (int_repr copies,
    one element at a time: 9x slower at 256x1024)."""
    return plain_integers(q)


_PLAIN = {torch.quint8: torch.uint8, torch.qint8: torch.int8, torch.qint32: torch.int32}


def fresh_plain_uint8(q: torch.Tensor) -> torch.Tensor:
    """plain_uint8 of a CPU quint8 tensor an op just made (contiguous, offset 0), in two
    torch calls instead of six."""
    return torch.empty(0, dtype=torch.uint8).set_(q.untyped_storage(), 0, q.shape)


def plain_integers(q: torch.Tensor) -> torch.Tensor:
    """A quint8/qint8/qint32 tensor's stored integers as a plain tensor on the same storage."""
    return torch.empty(0, dtype=_PLAIN[q.dtype], device=q.device).set_(
        q.untyped_storage(), q.storage_offset(), q.shape, q.stride())


_quiet: list[bool] = []


def quantize_ready() -> bool:
    """torch.quantize_per_tensor may be used: its once-a-process warning already spent."""
    if not _quiet:
        with _lock:
            if not _quiet:
                _first_creation_quietly()
                _quiet.append(True)
    return True


def cached_weight_ids() -> set[int]:
    """The ids of the weight tensors that hold a prepacked form."""
    with _lock:
        return set(_cache)
