"""NumPy references of TF's quantized integer maths, written from TF's op documentation
(gen_array_ops.quantize_v2 / dequantize docstrings) and kernel definitions
(core/kernels/quantization_utils.h: FloatToQuantized, QuantizedToFloat, the Eigen
QUANTIZE/DEQUANTIZE macros, RequantizeManyInNewRange, QuantizationRangeForMultiplication).
TF evaluates its tensor conversions in float32 and its scalar helpers in double: so do these."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np

F32 = np.float32
LIMITS = {"quint8": (0, 255), "qint8": (-128, 127), "qint32": (-(2 ** 31), 2 ** 31 - 1)}
NP = {"quint8": np.uint8, "qint8": np.int8, "qint32": np.int32}
BITS = {"quint8": 8, "qint8": 8, "qint32": 32}


def round_away(x):
    """std::round / Eigen round(): halves away from zero."""
    x = np.asarray(x, np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def cast_int(x, t: str) -> np.ndarray:
    """float -> int32 as x86 converts (out of range: INT_MIN), then to the storage type."""
    x = np.asarray(x, np.float64)
    bad = (x >= 2.0 ** 31) | (x < -(2.0 ** 31))
    return np.where(bad, -(2 ** 31), np.trunc(x)).astype(np.int64).astype(NP[t])


def quantize_range(lo, hi, ensure=0.01):
    """QuantizeV2's range adjustment: include 0, span at least ensure_minimum_range."""
    lo2 = min(0.0, lo)
    eps = max(1.0, max(abs(lo), abs(hi))) * ensure
    return F32(lo2), F32(max(0.0, max(hi, lo2 + eps)))


def quantize_v2(x, lo, hi, t, mode="MIN_COMBINED", half_to_even=False, narrow=False):
    x = np.asarray(x, F32)
    lo, hi = quantize_range(float(F32(lo)), float(F32(hi)))
    low, high = LIMITS[t]
    if mode == "MIN_COMBINED":
        scale = F32((high - low) / F32(hi - lo))
        shifted = (np.clip(x, lo, hi) - lo).astype(F32) * scale
        if low < 0:
            return cast_int(round_away(shifted - F32((high - low + 1) / 2)), t), lo, hi
        return cast_int(shifted + F32(0.5), t), lo, hi
    if mode == "MIN_FIRST":
        return quantize_min_first(x, lo, hi, t), lo, hi
    low += 1 if narrow else 0
    from_min = F32(low) / lo if low * lo > 0 else F32(np.finfo(F32).max)
    from_max = F32(high) / hi if high * hi > 0 else F32(np.finfo(F32).max)
    scale = F32(min(from_min, from_max))
    lo, hi = F32(low / scale), F32(high / scale)
    scaled = (np.clip(x, lo, hi) * scale).astype(F32)
    rounded = np.round(scaled) if half_to_even else round_away(scaled)
    return cast_int(rounded, t), lo, hi


def quantize_min_first(x, lo, hi, t):
    """The doc's MIN_FIRST: round(x * s) - round(min * s) + lowest, clamped; s = (n-1)/range."""
    n = 1 << BITS[t]
    low, high = LIMITS[t]
    scale = F32((n - 1.0) / F32(F32(hi) - F32(lo)))
    q = round_away((np.asarray(x, F32) * scale).astype(F32)) - \
        (F32(round_away(F32(lo) * scale)) - F32(low))
    q = np.clip(q.astype(F32), max(F32(low), F32(-2.147483648e9)),
                min(F32(high), F32(2.147483520e9)))
    return cast_int(q, t)


def dequantize(q, lo, hi, t, mode="MIN_COMBINED", narrow=False):
    q = np.asarray(q)
    low, high = LIMITS[t]
    if mode == "MIN_COMBINED":
        scale = F32(F32(hi - lo) / F32(high - low))
        half = F32((high - low + 1) / 2) if low < 0 else F32(0)
        return ((q.astype(F32) + half) * scale + F32(lo)).astype(F32)
    if mode == "MIN_FIRST":
        return dequantize_min_first(q, lo, hi, t)
    nlow = low + (1 if narrow else 0)
    scale = F32(hi / high) if low == 0 else max(F32(F32(lo) / nlow), F32(F32(hi) / high))
    return (q.astype(F32) * scale).astype(F32)


def dequantize_min_first(q, lo, hi, t):
    n = 1 << BITS[t]
    scale = F32(F32(F32(hi) - F32(lo)) / (n - 1.0))
    rounded = F32(round_away(F32(lo) / scale)) * scale
    return (F32(rounded - F32(LIMITS[t][0]) * scale) + np.asarray(q).astype(F32) * scale
            ).astype(F32)


def zero_point(lo, hi, t) -> int:
    """FloatToQuantizedUnclamped(0.0, lo, hi): the integer that stands for 0.0."""
    n = 1 << BITS[t]
    scale = n / (float(F32(hi) - F32(lo)) * (n / (n - 1.0)))
    return int(-round_away(lo * scale) + LIMITS[t][0])


def product_range(ra, rb, ta="quint8", tb="quint8"):
    level = [F32(F32(r[1]) - F32(r[0])) / F32(LIMITS[t][1] - LIMITS[t][0])
             for r, t in ((ra, ta), (rb, tb))]
    quantum = F32(level[0] * level[1])
    return F32(quantum * F32(-(2 ** 31))), F32(quantum * F32(2 ** 31 - 1))


def quantized_matmul(a, b, ra, rb, ta="quint8", tb="quint8"):
    a = np.asarray(a, np.int64) - zero_point(*ra, ta)
    b = np.asarray(b, np.int64) - zero_point(*rb, tb)
    return (a @ b).astype(np.int32), product_range(ra, rb, ta, tb)


def requantize_32_to_u8(q, rin, rout):
    """RequantizeManyInNewRange<qint32, quint8>: 16-bit fixed point in int64."""
    shift = 16
    span_in, span_out = F32(F32(rin[1]) - F32(rin[0])), F32(F32(rout[1]) - F32(rout[0]))
    recip = F32(255.0 / span_out)
    rezero = F32((F32(rin[0]) + F32(rin[1])) / 2.0)
    scale_fp = int(255.0 * (1 << shift) * float(span_in) / float(span_out))
    in_off = int(float(rezero) * float(recip) * (1 << shift))
    out_off = int(round_away((1 << shift) * (float(F32(rout[0])) * 255.0) / float(span_out)))
    fp = ((np.asarray(q, np.int64) * scale_fp) >> 32) + in_off - out_off + (1 << (shift - 1))
    return np.clip(fp >> shift, 0, 255).astype(np.uint8)


def requantize_float(q, rin, rout, tin, tout):
    """The generic path: dequantize (MIN_FIRST maths) then quantize, in float32."""
    return quantize_min_first(dequantize_min_first(q, *rin, tin), *rout, tout)


def quantized_to_float(v: int, lo: float, hi: float, t: str) -> float:
    """QuantizedToFloat (double precision, the minimum rounded to a whole quantum)."""
    n = 1 << BITS[t]
    scale = float(F32(hi) - F32(lo)) * (n / (n - 1.0)) / n
    rounded = float(F32(round_away(F32(lo) / F32(scale))) * F32(scale))
    return float(F32(rounded + (v - LIMITS[t][0]) * scale))


def used_range(q, lo, hi, t="qint32"):
    q = np.asarray(q)
    return (min(0.0, quantized_to_float(int(q.min()), lo, hi, t)),
            quantized_to_float(int(q.max()), lo, hi, t))


def float_to_quantized(value, lo, hi, t) -> int:
    n = 1 << BITS[t]
    scale = n / (float(F32(hi) - F32(lo)) * (n / (n - 1.0)))
    q = round_away(value * scale) - round_away(lo * scale) + LIMITS[t][0]
    return int(np.clip(q, *LIMITS[t]))


def bias_add(x, bias, rx, rb):
    top = F32(max(rx[1], -rx[0], rb[1], -rb[0]) * (1 << 17))
    rout = (-top, top)
    zero = float_to_quantized(0.0, *rout, "qint32")
    xs = requantize_float(x, rx, rout, "quint8", "qint32").astype(np.int64)
    bs = requantize_float(bias, rb, rout, "quint8", "qint32").astype(np.int64)
    return (xs + bs + zero).astype(np.int32), rout


def windows_nhwc(x, k, stride, padding, pad_value):
    """[N, OH, OW, kh, kw, C] windows; SAME puts the odd padding after, as TF does."""
    n, h, w, c = x.shape
    pads = []
    for size, kk, s in ((h, k[0], stride[0]), (w, k[1], stride[1])):
        if padding == "VALID":
            out = (size - kk) // s + 1
            pads.append((out, 0))
        else:
            out = -(-size // s)
            total = max((out - 1) * s + kk - size, 0)
            pads.append((out, total // 2))
    (oh, top), (ow, left) = pads
    big = np.full((n, h + k[0] + oh * stride[0], w + k[1] + ow * stride[1], c), pad_value,
                  dtype=np.int64)
    big[:, top:top + h, left:left + w] = x
    valid = np.zeros(big.shape[:3], bool)
    valid[:, top:top + h, left:left + w] = True
    out = np.empty((n, oh, ow, k[0], k[1], c), np.int64)
    mask = np.empty((n, oh, ow, k[0], k[1]), bool)
    for i in range(oh):
        for j in range(ow):
            r, s = i * stride[0], j * stride[1]
            out[:, i, j] = big[:, r:r + k[0], s:s + k[1]]
            mask[:, i, j] = valid[:, r:r + k[0], s:s + k[1]]
    return out, mask


def max_pool(x, k, stride, padding):
    win, _ = windows_nhwc(np.asarray(x, np.int64), k, stride, padding, -1)
    return win.max(axis=(3, 4)).astype(np.uint8)


def avg_pool(x, k, stride, padding):
    """int32 window sums over the valid pixels, divided (truncating) by their count."""
    win, mask = windows_nhwc(np.asarray(x, np.int64), k, stride, padding, 0)
    return (win.sum(axis=(3, 4)) // mask.sum(axis=(3, 4))[..., None]).astype(np.uint8)


def conv2d(x, f, rx, rf, stride, padding):
    zx, zf = zero_point(*rx, "quint8"), zero_point(*rf, "quint8")
    win, _ = windows_nhwc(np.asarray(x, np.int64), f.shape[:2], (stride, stride), padding, zx)
    cols = win - zx
    out = np.einsum("nijabc,abck->nijk", cols, np.asarray(f, np.int64) - zf)
    return out.astype(np.int32), product_range(rx, rf)


DATA = pathlib.Path(__file__).parent / "data"


def tf_reference(name: str):
    """(data/make_<name>_reference.py as a module, the .npz it wrote from TF 2.21): the
    cases' inputs come from the script, TF's outputs from the file."""
    spec = importlib.util.spec_from_file_location(f"make_{name}_reference",
                                                  DATA / f"make_{name}_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, np.load(DATA / f"{name}_tf_reference.npz")
