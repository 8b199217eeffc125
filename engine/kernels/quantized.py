"""Integer kernels for the quantized ops, following TF's quantization_utils.h: the scalar
helpers in double precision as TF's are, the tensor conversions in float32 as TF's Eigen
macros are, and products as exact int8 x int8 -> int32 matmuls (int8_matmul). The fused
MatMul + bias (+ Relu) + requantize ops run on fbgemm on the CPU (quantized_fbgemm)."""

from __future__ import annotations

import functools
import math
import operator
import weakref
from dataclasses import dataclass

import numpy as np
import torch

from engine import dtypes, errors
from engine.kernels import quantized_fbgemm as fbgemm
from engine.kernels import quantized_pool
from engine.kernels.registry import kernel
from engine.ops import windows
from engine.passes.quantize_graph import (
    one_pass_scaled_max,  # noqa: F401 - the bench and tests reach it here
    scaled_quint8_step,
    step_with_reciprocal,
)

F32 = np.float32
LIMITS = {dtypes.quint8: (0, 255), dtypes.qint8: (-128, 127), dtypes.quint16: (0, 65535),
          dtypes.qint16: (-32768, 32767), dtypes.qint32: (-(1 << 31), (1 << 31) - 1)}
Q8 = (dtypes.quint8, dtypes.qint8)
Q32 = (dtypes.qint32,)
ALL_Q = dtypes.QUANTIZED
# torch._int_mm's shape limits off the CPU (the CPU kernel takes any shape).
_MM_MIN_ROWS, _MM_MULTIPLE = 17, 8


def invalid(node, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(node, None, message)


# -- scalar helpers (TF: FloatToQuantizedUnclamped, QuantizedToFloat, ...) -----------------

def round_away(value: float) -> float:
    """std::round: halves away from zero (Python's round goes to even)."""
    return float(np.sign(value) * np.floor(abs(value) + 0.5)) if value == value else value


def _steps(dtype: dtypes.DType) -> int:
    return 1 << (dtype.size * 8)


def float_to_quantized_unclamped(value: float, lo: float, hi: float, dtype) -> int:
    lowest = LIMITS[dtype][0]
    if lo == hi:
        return lowest
    steps = _steps(dtype)
    scale = steps / (float(F32(hi) - F32(lo)) * (steps / (steps - 1.0)))
    return int(round_away(value * scale) - round_away(lo * scale) + lowest)


def float_to_quantized(value: float, lo: float, hi: float, dtype) -> int:
    low, high = LIMITS[dtype]
    return min(max(float_to_quantized_unclamped(value, lo, hi, dtype), low), high)


def quantized_to_float(value: int, lo: float, hi: float, dtype) -> float:
    if lo == hi:
        return lo
    steps = _steps(dtype)
    scale = float(F32(hi) - F32(lo)) * (steps / (steps - 1.0)) / steps
    scale32 = F32(scale)
    min_rounded = float(F32(round_away(float(F32(lo) / scale32))) * scale32)
    return float(F32(min_rounded + (value - LIMITS[dtype][0]) * scale))


def product_range(a_range, b_range, ta, tb, tout) -> tuple[float, float]:
    """QuantizationRangeForMultiplication: one quantum of a times one of b, scaled to tout."""
    def level(lo, hi, dtype):
        low, high = LIMITS[dtype]
        return F32(F32(hi) - F32(lo)) / F32(high - low)
    quantum = level(*a_range, ta) * level(*b_range, tb)
    low, high = LIMITS[tout]
    return float(quantum * F32(low)), float(quantum * F32(high))


# -- tensor conversions (TF: QUANTIZE_WITH_EIGEN, DEQUANTIZE_WITH_EIGEN) -----------------

# The largest float32 below 0.5. trunc(x + copysign(it, x)) is round-half-away-from-zero
# for every float32 x: a tie n + 0.5 sums to n + 1 - 2^-25, which rounds up to n + 1, and
# anything below a tie stays below n + 1 (0.49999997 + 0.49999997 is exact; with plain 0.5
# that sum would round up to 1). Checked on whole binades in tests/engine.
JUST_BELOW_HALF = float(np.nextafter(F32(0.5), F32(0.0)))


def round_half_away(x: torch.Tensor) -> torch.Tensor:
    """Eigen's round() on float32 (torch.round breaks ties to even, TF away from zero), as
    copysign(floor(|x| + 0.49999997), x): the same sums negated, and floor, unlike trunc, is
    vectorized on the CPU. A new tensor, worked in place."""
    return x.abs().add_(_scalar(JUST_BELOW_HALF, x.device)).floor_().copysign_(x)


def to_integers(x: torch.Tensor, dtype: dtypes.DType) -> torch.Tensor:
    """A float32 -> int32 cast as x86 does it (out of range gives INT_MIN), then to dtype."""
    wide = x.to(torch.float64)
    bad = (wide >= 2.0 ** 31) | (wide < -(2.0 ** 31)) | torch.isnan(wide)
    ints = torch.where(bad, torch.full_like(wide, -(2.0 ** 31)), torch.trunc(wide))
    return ints.to(torch.int64).to(dtype.torch_dtype)


def _scalar(value: float, device) -> torch.Tensor:
    return torch.tensor(float(value), dtype=torch.float32, device=device)


@functools.lru_cache(maxsize=1024)      # calibrated graphs ask for the same ranges each step
def _quantize_constants(lo: float, hi: float, dtype) -> tuple[F32, F32, F32, F32]:
    """FloatToQuantizedStruct's scale, and the offset and bounds QUANTIZE_WITH_EIGEN uses."""
    steps = _steps(dtype)
    low, high = LIMITS[dtype]
    scale = F32(0.0) if lo == hi else F32((steps - 1.0) / F32(F32(hi) - F32(lo)))
    min_scaled = F32(round_away(float(F32(lo) * scale)))
    lower, upper = max(F32(low), F32(-2.147483648e09)), min(F32(high), F32(2.147483520e09))
    return scale, F32(min_scaled - F32(low)), lower, upper


def quantize_eigen(x: torch.Tensor, lo: float, hi: float, dtype) -> torch.Tensor:
    """FloatToQuantizedStruct + QUANTIZE_WITH_EIGEN, in float32."""
    scale, offset, lower, upper = _quantize_constants(float(lo), float(hi), dtype)
    if offset == 0 and dtype is dtypes.quint8 and _quantizes_per_tensor(x):
        return _quantize_from_zero_cpu(x, float(scale))
    scaled = x.to(torch.float32) * _scalar(scale, x.device)
    if offset == 0 and lower == 0 and dtype.size < 4:
        return narrow_integers(round_nonnegative_clamped(scaled, float(upper)), dtype)
    # Python-number bounds: torch's clamp with tensor bounds is 12x slower on the CPU.
    q = round_half_away(scaled).sub_(float(offset)).clamp_(float(lower), float(upper))
    if dtype.size < 4:      # clamped into the type: only NaN is left to cast as x86 does
        return narrow_integers(q, dtype)
    return to_integers(q, dtype)


def _quantizes_per_tensor(x: torch.Tensor) -> bool:
    """narrow_integers will take x's device through quantize_per_tensor (fbgemm's Quantize)."""
    return x.is_cpu and fbgemm.quantize_ready()


def _quantize_from_zero_cpu(x: torch.Tensor, scale: float) -> torch.Tensor:
    """QUANTIZE_WITH_EIGEN into quint8 for a range starting at 0 (offset 0), on the CPU, in
    four float passes and the narrowing one: floor(x * scale + 0.49999997) is
    round_half_away wherever the result is >= 0, and below 0 both clamp to 0; the clamp is
    quantize_per_tensor's own (inf and huge values to 255, as TF's clamp gives them)."""
    rounded = torch.mul(x.to(torch.float32), scale).add_(JUST_BELOW_HALF).floor_()
    # NaN as x86's cast gives it (INT_MIN, low bits 0); inf becomes float32's largest
    q = torch.quantize_per_tensor(rounded.nan_to_num_(0.0), 1.0, 0, torch.quint8)
    return fbgemm.plain_integers(q)


def round_nonnegative_clamped(scaled: torch.Tensor, upper: float) -> torch.Tensor:
    """clamp(round_half_away(scaled), 0, upper), in place, for an integer upper: round is
    monotonic and fixes 0 and upper, so clamping first changes nothing, and on [0, upper]
    floor(x + 0.49999997) is round_half_away (see JUST_BELOW_HALF). NaN stays NaN."""
    return scaled.add_(JUST_BELOW_HALF).clamp_(JUST_BELOW_HALF, upper + 0.5).floor_()


def narrow_integers(q: torch.Tensor, dtype: dtypes.DType) -> torch.Tensor:
    """Integer-valued float32 already inside an 8/16-bit dtype's range (or NaN, which x86's
    cast makes INT_MIN, whose low bits are 0) as that dtype. 8-bit on the CPU goes through
    quantize_per_tensor with scale 1 (exact on integers; 4x faster than .to(torch.uint8))."""
    q = q.nan_to_num_(0.0)
    if q.device.type == "cpu" and dtype in Q8 and fbgemm.quantize_ready():
        qtype = torch.quint8 if dtype is dtypes.quint8 else torch.qint8
        return fbgemm.plain_integers(torch.quantize_per_tensor(q, 1.0, 0, qtype))
    return q.to(dtype.torch_dtype)


@functools.lru_cache(maxsize=1024)
def _dequantize_constants(lo: float, hi: float, dtype) -> tuple[F32, F32]:
    """QuantizedToFloatStruct's (base, scale): value = base + q * scale."""
    steps = _steps(dtype)
    low = F32(LIMITS[dtype][0])
    scale = F32(F32(F32(hi) - F32(lo)) / (steps - 1.0))
    min_rounded = F32(lo) if lo == hi else F32(F32(round_away(float(F32(lo) / scale))) * scale)
    return F32(min_rounded - F32(low * scale)), scale


def dequantize_eigen(q: torch.Tensor, lo: float, hi: float, dtype) -> torch.Tensor:
    """QuantizedToFloatStruct + DEQUANTIZE_WITH_EIGEN, in float32."""
    base, scale = _dequantize_constants(float(lo), float(hi), dtype)
    return _scalar(base, q.device) + q.to(torch.float32) * _scalar(scale, q.device)


def requantize_eigen(q, in_range, out_range, tin, tout) -> torch.Tensor:
    return quantize_eigen(dequantize_eigen(q, *in_range, tin), *out_range, tout)


def requantize_32_to_8(q: torch.Tensor, in_range, out_range) -> torch.Tensor:
    """TF's fixed-point qint32 -> quint8 path (RequantizeManyInNewRangeUsingEigen)."""
    shift = 16
    (lo_in, hi_in), (lo_out, hi_out) = in_range, out_range
    in_span, out_span = F32(F32(hi_in) - F32(lo_in)), F32(F32(hi_out) - F32(lo_out))
    recip = F32(0.0) if out_span == 0 else F32(255.0 / out_span)
    rezero = F32((F32(lo_in) + F32(hi_in)) / 2.0)
    scale_fp = 0 if out_span == 0 else int(255.0 * (1 << shift) * float(in_span) /
                                           float(out_span))
    in_offset_fp = int(float(rezero) * float(recip) * (1 << shift))
    out_offset_fp = 0 if out_span == 0 else _lround((1 << shift) * (float(lo_out) * 255.0) /
                                                    float(out_span))
    wide = q.to(torch.int64) * scale_fp
    fp = (wide >> 32) + (in_offset_fp - out_offset_fp + (1 << (shift - 1)))
    return (fp >> shift).clamp(0, 255).to(torch.uint8)


def _lround(value: float) -> int:
    return int(round_away(value))


def requantize(q, in_range, out_range, tin, tout) -> torch.Tensor:
    if tin is dtypes.qint32 and tout is dtypes.quint8:
        return requantize_32_to_8(q, in_range, out_range)
    return requantize_eigen(q, in_range, out_range, tin, tout)


# -- integer products ------------------------------------------------------------------

def _centered(x: torch.Tensor, offset: int):
    """(x8, c) with x - offset == x8 + c and x8 int8, for quint8 or qint8 x."""
    if x.dtype == torch.uint8:
        return (x.to(torch.int16) - 128).to(torch.int8), 128 - offset
    return x, -offset


# The CPU's exact int8 product: "int_mm" (torch._int_mm, integer arithmetic; a scalar loop
# on CPUs without VNNI, 270-570 ms at 256x1024x1024 on an AVX2 laptop) or the opt-in
# "float32_gemm" (the same integers through float32 GEMM in exact blocks: bit-exact, but float
# arithmetic standing in for integer, so never chosen by itself). fbgemm cannot give the int32
# product: torch.ops.quantized.linear requantizes it to 8 bits. The fused ops' fast path is
# quantized_fbgemm.
CPU_INT8_BACKENDS = ("int_mm", "float32_gemm")
CPU_INT8_BACKEND = "int_mm"
# Products of int8 values are at most 2^14, so a float32 GEMM over at most 1024 of them sums
# integers of at most 2^24, every one of which float32 holds exactly: the result is exact.
FLOAT32_GEMM_K = 1024


def float32_gemm_matmul(a8: torch.Tensor, b8: torch.Tensor) -> torch.Tensor:
    """The exact int8 product on float32 GEMM, in blocks of FLOAT32_GEMM_K along k, summed
    in int32 (the opt-in "float32_gemm" backend)."""
    out = None
    for start in range(0, a8.shape[1], FLOAT32_GEMM_K):
        stop = start + FLOAT32_GEMM_K
        part = torch.mm(a8[:, start:stop].to(torch.float32),
                        b8[start:stop].to(torch.float32)).to(torch.int32)
        out = part if out is None else out + part
    return out


def cpu_int8_backend() -> str:
    if CPU_INT8_BACKEND not in CPU_INT8_BACKENDS:
        raise ValueError(f"engine.kernels.quantized.CPU_INT8_BACKEND is "
                         f"{CPU_INT8_BACKEND!r}; choose one of {CPU_INT8_BACKENDS}")
    return CPU_INT8_BACKEND


def row_major(x: torch.Tensor) -> torch.Tensor:
    """x with the strides of a fresh row-major matrix. .contiguous() is not enough: a [1, k]
    view of a [k, 1] tensor has strides (1, 1) and counts as contiguous, and torch._int_mm on
    the CPU reads such a matrix with leading dimension 1, which gives a wrong product."""
    if x.stride() == (x.shape[1], 1):
        return x
    return x.clone(memory_format=torch.contiguous_format)


def int8_matmul(a8: torch.Tensor, b8: torch.Tensor, pad: bool | None = None,
                backend: str | None = None) -> torch.Tensor:
    """int8 x int8 -> int32 product, exact. On CUDA torch._int_mm, which wants more than 16
    rows and k, n multiples of 8: zero rows and columns pad other shapes. On the CPU the
    backend given, else CPU_INT8_BACKEND."""
    m, k = a8.shape
    n = b8.shape[1]
    if m == 0 or n == 0 or k == 0:
        return torch.zeros((m, n), dtype=torch.int32, device=a8.device)
    if not (a8.device.type != "cpu" if pad is None else pad):
        if (backend or cpu_int8_backend()) == "float32_gemm":
            return float32_gemm_matmul(a8, b8)
        return torch._int_mm(row_major(a8), row_major(b8))
    rows = max(m, _MM_MIN_ROWS)
    inner = -(-max(k, 16) // _MM_MULTIPLE) * _MM_MULTIPLE
    cols = -(-n // _MM_MULTIPLE) * _MM_MULTIPLE
    a_pad = torch.zeros((rows, inner), dtype=torch.int8, device=a8.device)
    b_pad = torch.zeros((inner, cols), dtype=torch.int8, device=a8.device)
    a_pad[:m, :k] = a8
    b_pad[:k, :n] = b8
    return torch._int_mm(a_pad, b_pad)[:m, :n]


def wide_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """An exact int32 product of operands wider than int8, on float64 (whose 53-bit
    mantissa holds every partial sum of products below 2^31 over fewer than 2^22 terms)."""
    return torch.mm(a.to(torch.float64), b.to(torch.float64)).to(torch.int64).to(torch.int32)


def offset_matmul(a: torch.Tensor, b: torch.Tensor, offset_a: int, offset_b: int,
                  backend: str | None = None) -> torch.Tensor:
    """sum_k (a - offset_a)(b - offset_b) in int32, as TF's gemmlowp call computes it: one
    int8 matmul plus the row/column-sum corrections of the two offsets."""
    a8, ca = _centered(a, offset_a)
    b8, cb = _centered(b, offset_b)
    k = a8.shape[1]
    out = int8_matmul(a8, b8, backend=backend)
    if ca:
        out = out + ca * b8.to(torch.int32).sum(0, keepdim=True, dtype=torch.int32)
    if cb:
        out = out + cb * a8.to(torch.int32).sum(1, keepdim=True, dtype=torch.int32)
    if ca and cb:
        out = out + ca * cb * k
    return out.to(torch.int32)


# -- kernels ---------------------------------------------------------------------------

def _range(t) -> float:
    if t.numel() == 1:
        return float(t.item())
    return float(t.reshape(-1)[0]) if t.numel() else 0.0


def _outputs(values: torch.Tensor, lo: float, hi: float):
    return values, _scalar(lo, values.device), _scalar(hi, values.device)


def adjusted_range(node, lo: float, hi: float) -> tuple[float, float]:
    """QuantizeV2's range: it always holds zero and spans at least ensure_minimum_range."""
    if hi < lo:
        raise invalid(node, "input_max_range must be larger than input_min_range.")
    return _adjusted_range(lo, hi, float(node.attr.get("ensure_minimum_range", 0.01)))


@functools.lru_cache(maxsize=1024)
def _adjusted_range(lo: float, hi: float, ensure_minimum_range: float) -> tuple[float, float]:
    min_range = min(0.0, float(F32(lo)))
    epsilon = F32(max(1.0, max(abs(F32(lo)), abs(F32(hi)))) * F32(ensure_minimum_range))
    max_range = max(0.0, max(float(F32(hi)), float(F32(min_range) + epsilon)))
    return float(F32(min_range)), float(F32(max_range))


def _quantize_min_combined(x, lo, hi, dtype):
    low, high = LIMITS[dtype]
    scale = F32((float(high) - float(low)) / F32(F32(hi) - F32(lo)))
    shifted = (x.clamp(lo, hi) - _scalar(lo, x.device)) * _scalar(scale, x.device)
    if low < 0:
        half = F32((high - low + 1) / 2.0)
        return to_integers(round_half_away(shifted - _scalar(half, x.device)), dtype)
    return to_integers(shifted + _scalar(0.5, x.device), dtype)


def _scaled_factor(node, lo: float, hi: float, dtype) -> tuple[F32, int, int]:
    low, high = LIMITS[dtype]
    low += 1 if node.attr.get("narrow_range") else 0
    biggest = F32(np.finfo(np.float32).max)
    from_min = F32(F32(low) / F32(lo)) if F32(low) * F32(lo) > 0 else biggest
    from_max = F32(F32(high) / F32(hi)) if F32(high) * F32(hi) > 0 else biggest
    return min(from_min, from_max), low, high


def _scaled_constants(node, lo: float, hi: float, dtype) -> tuple[F32, float, float]:
    """SCALED's factor and the output range it gives: (factor, low / factor, high / factor)."""
    scale, low, high = _scaled_factor(node, lo, hi, dtype)
    return scale, float(F32(F32(low) / scale)), float(F32(F32(high) / scale))


def _quantize_scaled(node, x, scale: F32, lo: float, hi: float, dtype) -> torch.Tensor:
    low = LIMITS[dtype][0] + (1 if node.attr.get("narrow_range") else 0)
    if dtype is dtypes.quint8 and low == 0 and node.attr.get("round_mode") == "HALF_TO_EVEN":
        fast = _quantize_scaled_half_even_cpu(x, float(scale))
        if fast is not None:
            return fast
    scaled = x.clamp(lo, hi) * _scalar(scale, x.device)
    rounded = torch.round(scaled) if node.attr.get("round_mode") == "HALF_TO_EVEN" else \
        round_half_away(scaled)
    # x was clamped into the type's range: only NaN is left to cast as x86 does
    return narrow_integers(rounded, dtype) if dtype.size < 4 else to_integers(rounded, dtype)


# Torch-free (the pass picks the one-pass max with them): engine/passes/quantize_graph.py.
_step_with_reciprocal = step_with_reciprocal


def _quantize_scaled_half_even_cpu(x: torch.Tensor, factor: float) -> torch.Tensor | None:
    """SCALED + HALF_TO_EVEN into quint8 (lowest level 0) in one pass of quantize_per_tensor:
    round half to even of float32 x * factor, clamped into [0, 255], is what fbgemm computes
    with the step whose reciprocal is factor; clamping x into [0, 255 / factor] first, as TF
    does, changes nothing (the product is monotonic, and both ends clamp). NaN (quantize_per_
    tensor makes it 255, TF 0) and a missing step leave it to the general path (None); a sum
    that is NaN finds any NaN (and +inf beside -inf, which the general path also takes). The
    result carries its quint8 (with that step), which a fused consumer whose scale is the
    step takes without a copy (scaled_quint8_step prefers that step)."""
    step = scaled_quint8_step(factor)
    if step is None or not _quantizes_per_tensor(x):
        return None
    x = (x if x.dtype is torch.float32 else x.to(torch.float32)).contiguous()
    if x.numel() and math.isnan(float(x.sum())):
        return None
    q = torch.quantize_per_tensor(x, step, 0, torch.quint8)
    plain = fbgemm.fresh_plain_uint8(q)
    plain._engine_quint8 = (q, step, 0)
    return plain


@dataclass
class _QuantizeRange:
    """One QuantizeV2 node's range work, while its range inputs stay the same tensors: the
    adjusted range, SCALED's factor, and the output range (the same CPU tensors each step,
    as a Const's value is shared: a consumer's memo then knows them by identity)."""
    lo: float
    hi: float
    factor: F32 | None
    out_lo: float
    out_hi: float
    cpu_outputs: tuple | None = None
    fast: object = None          # _one_pass_step's closure, where the node can take it

    def outputs(self, values: torch.Tensor) -> tuple:
        if not values.is_cpu:
            return _outputs(values, self.out_lo, self.out_hi)[1:]
        if self.cpu_outputs is None:
            self.cpu_outputs = _outputs(values, self.out_lo, self.out_hi)[1:]
        return self.cpu_outputs


def _one_pass_step(known: _QuantizeRange):
    """_quantize_scaled_half_even_cpu for one node's fixed range as one closure: x ->
    (values, min, max), or None where x is not a float32 CPU tensor or holds a NaN (then the
    general path runs). None if the factor has no one-pass step."""
    step = scaled_quint8_step(float(known.factor))
    if step is None or not fbgemm.quantize_ready():
        return None
    outputs = known.outputs(torch.zeros(0))
    f32, u8, quint8 = torch.float32, torch.uint8, torch.quint8
    quantize, empty, isnan = torch.quantize_per_tensor, torch.empty, math.isnan

    def fast(x: torch.Tensor):
        if x.dtype is not f32 or not x.is_cpu:
            return None
        x = x.contiguous()
        if x.numel() and isnan(float(x.sum())):
            return None
        q = quantize(x, step, 0, quint8)
        plain = empty(0, dtype=u8).set_(q.untyped_storage(), 0, q.shape)
        plain._engine_quint8 = (q, step, 0)
        return plain, *outputs
    return fast


@kernel("QuantizeV2", CPU={"T": ALL_Q}, GPU={"T": ALL_Q},
        host_memory=("min_range", "max_range", "output_min", "output_max"))
def quantize_v2(node, ctx):
    dtype, mode = node.attr["T"], node.attr["mode"]
    if node.attr["round_mode"] == "HALF_TO_EVEN" and mode != "SCALED":
        raise invalid(node, f"Round mode 'HALF_TO_EVEN' only supported for mode 'SCALED', "
                            f"but mode is '{mode}'.")
    same = _SameInputs()

    one_pass = mode == "SCALED" and dtype is dtypes.quint8 and \
        node.attr["round_mode"] == "HALF_TO_EVEN" and not node.attr.get("narrow_range")

    def constants(min_range, max_range) -> _QuantizeRange:
        known = same.get((min_range, max_range))
        if known is None:
            lo, hi = adjusted_range(node, _range(min_range), _range(max_range))
            known = _QuantizeRange(lo, hi, None, lo, hi) if mode != "SCALED" else \
                _QuantizeRange(lo, hi, *_scaled_constants(node, lo, hi, dtype))
            if one_pass:
                known.fast = _one_pass_step(known)
            same.put((min_range, max_range), known)
        return known

    def run(x, min_range, max_range):
        known = constants(min_range, max_range)
        if known.fast is not None:
            done = known.fast(x)
            if done is not None:
                return done
        x = x if x.dtype is torch.float32 else x.to(torch.float32)
        if mode == "MIN_COMBINED":
            values = _quantize_min_combined(x, known.lo, known.hi, dtype)
        elif mode == "MIN_FIRST":
            values = quantize_eigen(x, known.lo, known.hi, dtype)
        else:
            values = _quantize_scaled(node, x, known.factor, known.out_lo, known.out_hi, dtype)
        return values, *known.outputs(values)
    run.range_constants = constants       # a fused chain (quantized_chain) reads them once
    return run


@kernel("Dequantize", CPU={"T": ALL_Q}, GPU={"T": ALL_Q},
        host_memory=("min_range", "max_range"))
def dequantize(node, ctx):
    dtype, mode, out = node.attr["T"], node.attr["mode"], node.attr["dtype"]
    low, high = LIMITS[dtype]

    memo = _StepMemo(repeats_only=True)     # weights mode: the same Const every step
    same = _SameInputs()

    def range_constants(min_range, max_range) -> tuple:
        """(lo, hi, SCALED float32's scale or None) for these range tensors."""
        known = same.get((min_range, max_range))
        if known is None:
            lo, hi = _range(min_range), _range(max_range)
            known = (lo, hi, float(scaled_scale(lo, hi)) if mode == "SCALED" and
                     out is dtypes.float32 else None)
            same.put((min_range, max_range), known)
        return known

    def run(q, min_range, max_range):
        lo, hi, scale = range_constants(min_range, max_range)
        if scale is not None:
            made = fbgemm.dequantize_made(q, scale)
            if made is not None:
                return made
        return memo.get((q,), (lo, hi), lambda: values(q, lo, hi))

    def scaled_scale(lo, hi) -> F32:
        narrow_low = low + (1 if node.attr.get("narrow_range") else 0)
        return F32(F32(hi) / F32(high)) if low == 0 else \
            max(F32(F32(lo) / F32(narrow_low)), F32(F32(hi) / F32(high)))

    def values(q, lo, hi):
        if mode == "MIN_COMBINED":
            scale = F32(F32(F32(hi) - F32(lo)) / (F32(high) - F32(low)))
            half = F32((high - low + 1) / 2.0) if low < 0 else F32(0.0)
            value = (q.to(torch.float32) + _scalar(half, q.device)) * _scalar(scale, q.device) \
                + _scalar(lo, q.device)
        elif mode == "MIN_FIRST":
            value = dequantize_eigen(q, lo, hi, dtype)
        else:
            value = q.to(torch.float32) * _scalar(scaled_scale(lo, hi), q.device)
        return value.to(out.torch_dtype)
    run.range_constants = range_constants
    return run


@kernel("QuantizedMatMul", CPU={"T1": Q8, "T2": Q8, "Toutput": Q32},
        GPU={"T1": Q8, "T2": Q8, "Toutput": Q32},
        host_memory=("min_a", "max_a", "min_b", "max_b", "min_out", "max_out"))
def quantized_mat_mul(node, ctx):
    ta, tb = node.attr["T1"], node.attr["T2"]
    trans_a, trans_b = node.attr["transpose_a"], node.attr["transpose_b"]

    def run(a, b, min_a, max_a, min_b, max_b):
        ra, rb = (_range(min_a), _range(max_a)), (_range(min_b), _range(max_b))
        a = a.t() if trans_a else a
        b = b.t() if trans_b else b
        if a.shape[1] != b.shape[0]:
            raise invalid(node, f"Matrix size-incompatible: In[0]: {list(a.shape)}, In[1]: "
                                f"{list(b.shape)}")
        offset_a = float_to_quantized_unclamped(0.0, *ra, ta)
        offset_b = float_to_quantized_unclamped(0.0, *rb, tb)
        return _outputs(offset_matmul(a, b, offset_a, offset_b),
                        *product_range(ra, rb, ta, tb, dtypes.qint32))
    return run


@kernel("Requantize", CPU={"Tinput": Q32, "out_type": Q8}, GPU={"Tinput": Q32, "out_type": Q8},
        host_memory=("input_min", "input_max", "requested_output_min",
                     "requested_output_max", "output_min", "output_max"))
def requantize_kernel(node, ctx):
    tin, tout = node.attr["Tinput"], node.attr["out_type"]

    def run(q, in_min, in_max, out_min, out_max):
        lo, hi = _range(out_min), _range(out_max)
        if lo > 0.0:
            raise invalid(node, f"requested_output_min must be <= 0, but got {lo:g}")
        values = requantize(q, (_range(in_min), _range(in_max)), (lo, hi), tin, tout)
        return _outputs(values, lo, hi)
    return run


def used_range(q: torch.Tensor, lo: float, hi: float, dtype) -> tuple[float, float]:
    """The float range the values actually use, its minimum clamped to at most zero."""
    low, high = LIMITS[dtype]
    smallest = int(q.min()) if q.numel() else high
    largest = int(q.max()) if q.numel() else low
    return (min(0.0, quantized_to_float(smallest, lo, hi, dtype)),
            quantized_to_float(largest, lo, hi, dtype))


@kernel("RequantizationRange", CPU={"Tinput": Q32}, GPU={"Tinput": Q32},
        host_memory=("input_min", "input_max", "output_min", "output_max"))
def requantization_range(node, ctx):
    def run(q, in_min, in_max):
        lo, hi = used_range(q, _range(in_min), _range(in_max), node.attr["Tinput"])
        return _scalar(lo, q.device), _scalar(hi, q.device)
    return run


@kernel("QuantizeDownAndShrinkRange", CPU={"Tinput": Q32, "out_type": Q8},
        GPU={"Tinput": Q32, "out_type": Q8},
        host_memory=("input_min", "input_max", "output_min", "output_max"))
def quantize_down_and_shrink_range(node, ctx):
    tin, tout = node.attr["Tinput"], node.attr["out_type"]

    def run(q, in_min, in_max):
        in_range = (_range(in_min), _range(in_max))
        lo, hi = used_range(q, *in_range, tin)
        return _outputs(requantize(q, in_range, (lo, hi), tin, tout), lo, hi)
    return run


def _relu(node, upper: float | None):
    dtype = node.attr["Tinput"]
    if node.attr["out_type"] is not dtype:
        raise invalid(node, f"{node.op} writes its input type: out_type "
                            f"{node.attr['out_type'].name} must be {dtype.name}")

    def run(q, min_features, max_features):
        lo, hi = _range(min_features), _range(max_features)
        out = q.clamp(min=float_to_quantized(0.0, lo, hi, dtype))
        if upper is not None:
            out = out.clamp(max=float_to_quantized(upper, lo, hi, dtype))
        return _outputs(out, lo, hi)
    return run


_RELU_TYPES = {"Tinput": (dtypes.quint8, dtypes.qint32), "out_type": (dtypes.quint8,
                                                                      dtypes.qint32)}
_RANGE_IO = ("min_features", "max_features", "min_activations", "max_activations")


@kernel("QuantizedRelu", CPU=_RELU_TYPES, GPU=_RELU_TYPES, host_memory=_RANGE_IO)
def quantized_relu(node, ctx):
    return _relu(node, None)


@kernel("QuantizedRelu6", CPU=_RELU_TYPES, GPU=_RELU_TYPES, host_memory=_RANGE_IO)
def quantized_relu6(node, ctx):
    return _relu(node, 6.0)


def add_range(in_range, bias_range) -> tuple[float, float]:
    """GetOutputMinAndMaxForQuantizedAdd: symmetric, the widest input range times 2^17."""
    (lo, hi), (blo, bhi) = in_range, bias_range
    top = F32(max(F32(hi), max(-F32(lo), max(F32(bhi), -F32(blo)))) * F32(1 << 17))
    return float(-top), float(top)


_BIAS_TYPES = {"T1": (dtypes.quint8,), "T2": (dtypes.quint8,), "out_type": Q32}


@kernel("QuantizedBiasAdd", CPU=_BIAS_TYPES, GPU=_BIAS_TYPES,
        host_memory=("min_input", "max_input", "min_bias", "max_bias", "min_out", "max_out"))
def quantized_bias_add(node, ctx):
    tin, tbias, tout = node.attr["T1"], node.attr["T2"], node.attr["out_type"]

    def run(x, bias, min_input, max_input, min_bias, max_bias):
        in_range, bias_range = (_range(min_input), _range(max_input)), \
            (_range(min_bias), _range(max_bias))
        if x.dim() < 2 or bias.dim() != 1 or x.shape[-1] != bias.shape[0]:
            raise invalid(node, f"Must provide as many biases as the last dimension of the "
                                f"input tensor: {list(bias.shape)} vs. {list(x.shape)}")
        lo, hi = add_range(in_range, bias_range)
        zero = float_to_quantized(0.0, lo, hi, tout)
        total = requantize_eigen(x, in_range, (lo, hi), tin, tout)
        shifted = requantize_eigen(bias, bias_range, (lo, hi), tbias, tout)
        return _outputs((total + (shifted + zero)).to(torch.int32), lo, hi)
    return run


def _padded_windows(x, window, k_hw, dilation, pad_value):
    """[N, OH, OW, C, kh, kw] windows of an NHWC tensor; SAME pads with pad_value, the odd
    pixel after, as TF does."""
    (_, top, bottom), (_, left, right) = window.output_and_pads(list(x.shape[1:3]), k_hw)
    if top or bottom or left or right:
        padded = torch.full((x.shape[0], x.shape[1] + top + bottom, x.shape[2] + left + right,
                             x.shape[3]), pad_value, dtype=x.dtype, device=x.device)
        padded[:, top:top + x.shape[1], left:left + x.shape[2]] = x
        x = padded
    (sh, sw), (dh, dw) = window.strides, dilation
    span_h, span_w = (k_hw[0] - 1) * dh + 1, (k_hw[1] - 1) * dw + 1
    patches = x.unfold(1, span_h, sh).unfold(2, span_w, sw)
    return patches[..., ::dh, ::dw]


def _columns(patches: torch.Tensor):
    """im2col: [N*OH*OW, kh*kw*C] rows (the filter's HWIO order) and the (N, OH, OW) grid."""
    grid = tuple(patches.shape[:3])
    return patches.permute(0, 1, 2, 4, 5, 3).reshape(grid[0] * grid[1] * grid[2], -1), grid


_POOL_IO = ("min_input", "max_input", "min_output", "max_output")


def _pool_setup(node, x):
    window = windows.window_of(node.attr, node.op, dilations=False)
    k_hw = (int(node.attr["ksize"][1]), int(node.attr["ksize"][2]))
    try:
        window.output_and_pads(list(x.shape[1:3]), k_hw)
    except ValueError as e:
        raise invalid(node, str(e)) from None
    return window, k_hw


@kernel("QuantizedMaxPool", CPU={"T": (dtypes.quint8,)}, GPU={"T": (dtypes.quint8,)},
        host_memory=_POOL_IO)
def quantized_max_pool(node, ctx):
    def run(x, min_input, max_input):
        out = quantized_pool.max_pool(x, *_pool_setup(node, x))
        return _outputs(out, _range(min_input), _range(max_input))
    return run


@kernel("QuantizedAvgPool", CPU={"T": (dtypes.quint8,)}, GPU={"T": (dtypes.quint8,)},
        host_memory=_POOL_IO)
def quantized_avg_pool(node, ctx):
    def run(x, min_input, max_input):
        out = quantized_pool.avg_pool(x, *_pool_setup(node, x))
        return _outputs(out, _range(min_input), _range(max_input))
    return run


_CONV_TYPES = {"Tinput": (dtypes.quint8,), "Tfilter": (dtypes.quint8,), "out_type": Q32}


@kernel("QuantizedConv2D", CPU=_CONV_TYPES, GPU=_CONV_TYPES,
        host_memory=("min_input", "max_input", "min_filter", "max_filter", "min_output",
                     "max_output"))
def quantized_conv2d(node, ctx):
    tin, tfilter = node.attr["Tinput"], node.attr["Tfilter"]
    window = windows.window_of(node.attr, node.op)

    def run(x, f, min_input, max_input, min_filter, max_filter):
        in_range, f_range = (_range(min_input), _range(max_input)), \
            (_range(min_filter), _range(max_filter))
        if x.dim() != 4 or f.dim() != 4 or x.shape[3] != f.shape[2]:
            raise invalid(node, f"input and filter must have the same depth: "
                                f"{list(x.shape)} vs. {list(f.shape)}")
        offset_in = float_to_quantized_unclamped(0.0, *in_range, tin)
        offset_f = float_to_quantized_unclamped(0.0, *f_range, tfilter)
        k_hw = (int(f.shape[0]), int(f.shape[1]))
        try:
            window.output_and_pads(list(x.shape[1:3]), k_hw)
        except ValueError as e:
            raise invalid(node, str(e)) from None
        low, high = LIMITS[tin]
        weights = f.reshape(-1, f.shape[3])
        # Padding contributes (pad - offset) = 0, as TF pads with the input's zero point; a
        # range without 0 puts that point outside the type, so such inputs take the wide path.
        if low <= offset_in <= high:
            cols, grid = _columns(_padded_windows(x, window, k_hw, window.dilations, offset_in))
            out = offset_matmul(cols, weights, offset_in, offset_f)
        else:
            shifted = x.to(torch.int32) - offset_in
            cols, grid = _columns(_padded_windows(shifted, window, k_hw, window.dilations, 0))
            out = wide_matmul(cols, weights.to(torch.int32) - offset_f)
        return _outputs(out.reshape(*grid, f.shape[3]),
                        *product_range(in_range, f_range, tin, tfilter, dtypes.qint32))
    return run


@kernel("QuantizedConcat", CPU={"T": (dtypes.quint8, dtypes.qint32)},
        GPU={"T": (dtypes.quint8, dtypes.qint32)},
        host_memory=("concat_dim", "input_mins", "input_maxes", "output_min", "output_max"))
def quantized_concat(node, ctx):
    n, dtype = node.attr["N"], node.attr["T"]

    def run(axis, *rest):
        values, mins, maxes = rest[:n], rest[n:2 * n], rest[2 * n:]
        ranges = [(_range(lo), _range(hi)) for lo, hi in zip(mins, maxes)]
        lo, hi = min(0.0, min(r[0] for r in ranges)), max(r[1] for r in ranges)
        if LIMITS[dtype][0] < 0:     # signed: a range symmetric around zero, as TF picks
            hi = max(abs(lo), abs(hi))
            lo = -hi
        parts = [v if r == (lo, hi) else requantize_eigen(v, r, (lo, hi), dtype, dtype)
                 for v, r in zip(values, ranges)]
        dim = int(axis)
        rank = parts[0].dim()
        if not -rank <= dim < rank:
            raise invalid(node, f"Expected concat_dim in the range [{-rank}, {rank}), but got "
                                f"{dim}")
        return _outputs(torch.cat(parts, dim), lo, hi)
    return run


@kernel("QuantizedReshape", CPU={"T": ALL_Q}, GPU={"T": ALL_Q},
        host_memory=("shape", "input_min", "input_max", "output_min", "output_max"))
def quantized_reshape(node, ctx):
    def run(x, shape, input_min, input_max):
        wanted = [int(d) for d in shape.reshape(-1).tolist()]
        try:
            out = x.reshape(wanted)
        except RuntimeError:
            raise invalid(node, f"Input to reshape is a tensor with {x.numel()} values, but "
                                f"the requested shape is {wanted}") from None
        if _is_range_scalar(input_min, out) and _is_range_scalar(input_max, out):
            return out, input_min, input_max    # the same values: kept by identity downstream
        return _outputs(out, _range(input_min), _range(input_max))
    return run


def _is_range_scalar(t: torch.Tensor, beside: torch.Tensor) -> bool:
    """t is what _outputs would make for it beside `beside`: a float32 scalar on its device."""
    return t.dim() == 0 and t.dtype is torch.float32 and t.device == beside.device


# -- fused MatMul + bias (+ Relu) (+ requantize): TF's oneDNN ops (mkl_qmatmul_op.cc) ----

FUSED_IO = ("min_a", "max_a", "min_b", "max_b", "min_freezed_output", "max_freezed_output",
            "min_out", "max_out")
_FUSED_8 = {"T1": (dtypes.quint8,), "T2": (dtypes.qint8,), "Tbias": (dtypes.float32,
                                                                    dtypes.qint32),
            "Toutput": Q8}
_FUSED_32 = dict(_FUSED_8, Toutput=Q32)


@dataclass(frozen=True)
class FusedScales:
    """a = scale_a * (q_a - zero_a) (MIN_FIRST: (max-min)/255 and the integer zero point
    TF's QuantizedMatMul uses; SCALED: max|range|/255, zero 0); b = scale_b * q_b with
    scale_b = max|range|/127; acc_scale = scale_a * scale_b in float32, as fbgemm forms it."""
    scale_a: F32
    zero_a: int
    scale_b: F32
    acc_scale: F32


def fused_scales(node, a_range, b_range) -> FusedScales:
    mode = node.attr.get("input_quant_mode", "MIN_FIRST")
    lo, hi = F32(a_range[0]), F32(a_range[1])
    if mode == "MIN_FIRST" and not hi > lo:
        raise invalid(node, f"max_a ({float(hi):g}) must be larger than min_a "
                            f"({float(lo):g}) for input_quant_mode MIN_FIRST")
    if mode != "MIN_FIRST" and lo == 0 and hi == 0:
        raise invalid(node, "the range of a is empty: min_a and max_a are both 0")
    if F32(b_range[0]) == 0 and F32(b_range[1]) == 0:
        raise invalid(node, "the range of b is empty: min_b and max_b are both 0")
    return _fused_scales(mode, float(lo), float(hi), float(F32(b_range[0])),
                         float(F32(b_range[1])))


@functools.lru_cache(maxsize=1024)      # calibrated graphs ask for the same ranges each step
def _fused_scales(mode: str, lo: float, hi: float, lo_b: float, hi_b: float) -> FusedScales:
    lo, hi = F32(lo), F32(hi)
    if mode == "MIN_FIRST":
        scale_a = F32(F32(hi - lo) / F32(255.0))
        zero_a = float_to_quantized_unclamped(0.0, float(lo), float(hi), dtypes.quint8)
    else:
        scale_a, zero_a = F32(max(abs(lo), abs(hi)) / F32(255.0)), 0
    scale_b = F32(max(abs(F32(lo_b)), abs(F32(hi_b))) / F32(127.0))
    return FusedScales(scale_a, zero_a, scale_b, F32(scale_a * scale_b))


def output_scale(node, lo: float, hi: float, tout) -> F32:
    """The requantized output's step: max|freezed range| over 255 (quint8) or 127 (qint8)."""
    top = max(abs(F32(lo)), abs(F32(hi)))
    if top == 0 or not np.isfinite(top):
        raise invalid(node, f"min_freezed_output and max_freezed_output ({lo:g}, {hi:g}) must "
                            "give a finite, non-empty output range")
    return F32(top / F32(255.0 if tout is dtypes.quint8 else 127.0))


def _fused_operands(node, a, b, bias):
    a = a.t() if node.attr["transpose_a"] else a
    b_kn = b.t() if node.attr["transpose_b"] else b
    if a.dim() != 2 or b_kn.dim() != 2 or a.shape[1] != b_kn.shape[0]:
        raise invalid(node, f"Matrix size-incompatible: In[0]: {list(a.shape)}, In[1]: "
                            f"{list(b_kn.shape)}")
    if bias.dim() != 1 or bias.shape[0] != b_kn.shape[1]:
        raise invalid(node, f"Must provide as many biases as the columns of the product: "
                            f"bias {list(bias.shape)} vs. product [{a.shape[0]}, "
                            f"{b_kn.shape[1]}]")
    return a, b_kn


def float_bias(bias: torch.Tensor, scales: FusedScales) -> torch.Tensor:
    """The float32 bias fbgemm adds: a qint32 bias is in accumulator units (times acc_scale)."""
    if bias.dtype == torch.int32:
        return bias.to(torch.float32) * _scalar(scales.acc_scale, bias.device)
    return bias.to(torch.float32)


def accumulate(acc: torch.Tensor, bias_f: torch.Tensor, scales: FusedScales) -> torch.Tensor:
    """fbgemm's float step: float32(acc) + bias / acc_scale, in float32."""
    return acc.to(torch.float32) + bias_f / _scalar(scales.acc_scale, acc.device)


def requantized_integer(a, b_kn, bias_f, scales: FusedScales, s_out: F32, tout,
                        relu: bool) -> torch.Tensor:
    """The integer path (CUDA, a virtual GPU, no fbgemm): the int32 accumulator from
    offset_matmul, then fbgemm's requantization step for step, so both paths agree bit for
    bit: rint-half-even(accumulate * float32(acc_scale / s_out)), clamped to the type."""
    acc = offset_matmul(a, b_kn, scales.zero_a, 0)
    scaled = accumulate(acc, bias_f, scales) * _scalar(F32(scales.acc_scale / s_out), acc.device)
    low, high = LIMITS[tout]
    return torch.round(scaled.clamp(0 if relu else low, high)).to(tout.torch_dtype)


def _fbgemm_static(ctx, b_kn, scales: FusedScales) -> bool:
    """The fused op runs on fbgemm wherever a is a non-empty CPU tensor."""
    return ctx.device.device_type == "CPU" and fbgemm.usable() and \
        0 <= scales.zero_a <= 255 and min(b_kn.shape[0], b_kn.shape[1]) > 0


@dataclass
class _Fused:
    """One fused node's per-step constants (from its weights and ranges)."""
    scales: FusedScales
    s_out: F32
    bias_f: torch.Tensor
    out_range: tuple
    k: int
    on_fbgemm: bool
    product: object = None      # fbgemm.Product, packed on the first step fbgemm can take
    fast: object = None         # its step closure (Product.step), where it has one


def _fused_requantize(node, ctx, relu: bool):
    tout = node.attr["Toutput"]
    transpose_a, transpose_b = node.attr["transpose_a"], node.attr["transpose_b"]
    zero_out = 0 if tout is dtypes.quint8 else 128   # qint8 rides as quint8 + 128
    memo, same = _StepMemo(), _SameInputs()

    def prepare(a, b, bias, ranges) -> _Fused:
        _, b_kn = _fused_operands(node, a, b, bias)
        scales = fused_scales(node, ranges[0:2], ranges[2:4])
        lo, hi = ranges[4:6]
        return _Fused(scales, output_scale(node, lo, hi, tout), float_bias(bias, scales),
                      _outputs(a, lo, hi)[1:], int(b_kn.shape[0]),
                      _fbgemm_static(ctx, b_kn, scales))

    def constants(a, b, bias, range_tensors) -> _Fused:
        inputs = (b, bias, *range_tensors)
        fused = same.get(inputs)
        if fused is None:
            ranges = tuple(_range(t) for t in range_tensors)
            fused = memo.get((b, bias), ranges, lambda: prepare(a, b, bias, ranges))
            same.put(inputs, fused)
        return fused

    def run(a, b, bias, *range_tensors):
        fused = constants(a, b, bias, range_tensors)
        a_mk = a.t() if transpose_a else a
        if a_mk.dim() != 2 or a_mk.shape[1] != fused.k:
            _fused_operands(node, a, b, bias)           # raises TF's message
        if fused.fast is not None and a_mk.is_cpu and a_mk.shape[0] > 0:
            return fused.fast(a_mk)
        if fused.on_fbgemm and a_mk.is_cpu and a_mk.shape[0] > 0:
            product = fused.product
            if product is None:
                product = fused.product = fbgemm.Product(
                    b, transpose_b, float(fused.scales.scale_b), fused.bias_f, bias)
                fused.fast = product.step(float(fused.scales.scale_a), fused.scales.zero_a,
                                          float(fused.s_out), zero_out, relu,
                                          tout is dtypes.qint8, fused.out_range)
            out = product.run(a_mk, float(fused.scales.scale_a), fused.scales.zero_a,
                              float(fused.s_out), zero_out, relu)
            if tout is dtypes.qint8:
                out = fbgemm.signed_view(out)
        else:
            _, b_kn = _fused_operands(node, a, b, bias)
            out = requantized_integer(a_mk, b_kn, fused.bias_f, fused.scales, fused.s_out,
                                      tout, relu)
        return out, *fused.out_range
    run.fused_constants = constants
    return run


_VERSION = operator.attrgetter("_version")


class _SameInputs:
    """The value made from the last step's inputs while the very same tensors come back
    unchanged (identity and version): a calibrated graph's Consts, and the range tensors an
    upstream kernel hands on from its own memo, so a steady step reads no range with
    .item(). It holds the last inputs (an id cannot be reused while they live): weights and
    scalar ranges, never an activation. The checks run in C (map over operator.is_ and an
    attrgetter): between fbgemm calls that flush the caches, every Python line costs."""

    def __init__(self):
        self.entry = None        # (tensors, versions, value): one atomic store

    def get(self, tensors: tuple):
        entry = self.entry
        if entry is None or not all(map(operator.is_, entry[0], tensors)) or \
                tuple(map(_VERSION, tensors)) != entry[1]:
            return None
        return entry[2]

    def put(self, tensors: tuple, value) -> None:
        self.entry = (tensors, tuple(map(_VERSION, tensors)), value)


class _StepMemo:
    """One node's per-step work, kept while the same tensors (by identity and version) and
    ranges come back, as a calibrated graph's constants do every step. With repeats_only the
    value is kept only once a key has come twice, so a step's fresh activations are never held.
    A kept tensor is shared between steps as a Const's value is: kernels never write their
    inputs, and fetches copy."""

    def __init__(self, repeats_only: bool = False):
        self.entry, self.repeats_only = None, repeats_only   # (key, value): one atomic store

    def get(self, tensors: tuple, ranges: tuple, make):
        versions = (tuple(t._version for t in tensors), ranges)
        entry = self.entry
        same = entry is not None and entry[0][1] == versions and \
            all(r() is t for r, t in zip(entry[0][0], tensors))
        if same and entry[1] is not None:
            return entry[1]
        value = make()
        key = (tuple(weakref.ref(t) for t in tensors), versions)
        self.entry = (key, value if same or not self.repeats_only else None)
        return value


@kernel("QuantizedMatMulWithBiasAndRequantize", CPU=_FUSED_8, GPU=_FUSED_8,
        host_memory=FUSED_IO)
def quantized_mat_mul_with_bias_and_requantize(node, ctx):
    return _fused_requantize(node, ctx, relu=False)


@kernel("QuantizedMatMulWithBiasAndReluAndRequantize", CPU=_FUSED_8, GPU=_FUSED_8,
        host_memory=FUSED_IO)
def quantized_mat_mul_with_bias_and_relu_and_requantize(node, ctx):
    return _fused_requantize(node, ctx, relu=True)


def mkl_product_range(a_range, b_range) -> tuple[float, float]:
    """MklQuantizationRangeForMultiplication<quint8, qint8, qint32>: qint8's level counts
    254 steps (its range is taken as symmetric, [-127, 127])."""
    level_a = F32(F32(F32(a_range[1]) - F32(a_range[0])) / F32(255.0))
    level_b = F32(F32(F32(b_range[1]) - F32(b_range[0])) / F32(254.0))
    quantum = F32(level_a * level_b)
    return float(F32(quantum * F32(-(1 << 31)))), float(F32(quantum * F32((1 << 31) - 1)))


def _fused_int32(node, relu: bool):
    def run(a, b, bias, min_a, max_a, min_b, max_b):
        a_mk, b_kn = _fused_operands(node, a, b, bias)
        ra, rb = (_range(min_a), _range(max_a)), (_range(min_b), _range(max_b))
        scales = fused_scales(node, ra, rb)
        out = with_int32_bias(offset_matmul(a_mk, b_kn, scales.zero_a, 0), bias, scales)
        return _outputs(out.clamp(min=0) if relu else out, *mkl_product_range(ra, rb))
    return run


def with_int32_bias(acc: torch.Tensor, bias: torch.Tensor | None,
                    scales: FusedScales) -> torch.Tensor:
    """The qint32 output of a fused op with bias: a qint32 bias adds as it is; a float bias
    adds as bias / acc_scale accumulator units in float32, rounded half to even (fbgemm's
    step; TF 2.21's oneDNN conv gives the same integers while |acc| stays below 2^24)."""
    if bias is None:
        return acc
    if bias.dtype == torch.int32:
        return acc + bias
    low, high = LIMITS[dtypes.qint32]
    total = accumulate(acc, bias.to(torch.float32), scales).to(torch.float64)
    return torch.round(total.clamp(low, high)).to(torch.int32)


@kernel("QuantizedMatMulWithBias", CPU=_FUSED_32, GPU=_FUSED_32,
        host_memory=FUSED_IO[:4] + FUSED_IO[6:])
def quantized_mat_mul_with_bias(node, ctx):
    return _fused_int32(node, relu=False)


@kernel("QuantizedMatMulWithBiasAndRelu", CPU=_FUSED_32, GPU=_FUSED_32,
        host_memory=FUSED_IO[:4] + FUSED_IO[6:])
def quantized_mat_mul_with_bias_and_relu(node, ctx):
    return _fused_int32(node, relu=True)
