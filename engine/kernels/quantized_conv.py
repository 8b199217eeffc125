"""TF 2.21's fused quantized Conv2D kernels. QuantizedConv2D[WithBias][AndRelu]AndRequantize
(8-bit out): on the CPU through fbgemm (torch.ops.quantized.conv2d / conv2d_relu, aten ops,
each filter prepacked once and cached), elsewhere an exact int32 im2col product with fbgemm's
requantization step for step. QuantizedConv2DWithBias[AndRelu] and QuantizedConv2DAndRelu
(qint32 out): the exact int32 im2col product everywhere (fbgemm only gives 8-bit results),
with the range of TF's oneDNN kernel (MklQuantizationRangeForMultiplication)."""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass

import torch

from engine import dtypes
from engine.kernels import quantized as qk
from engine.kernels import quantized_fbgemm as fbgemm
from engine.kernels.registry import kernel
from engine.ops import windows

TYPES = {"Tinput": (dtypes.quint8,), "Tfilter": (dtypes.qint8,),
         "Tbias": (dtypes.float32, dtypes.qint32), "out_type": qk.Q8}
IO = ("min_input", "max_input", "min_filter", "max_filter", "min_freezed_output",
      "max_freezed_output", "min_output", "max_output")
INT32_TYPES = {"Tinput": (dtypes.quint8,), "Tfilter": (dtypes.qint8,),
               "out_type": (dtypes.qint32,)}
INT32_IO = ("min_input", "max_input", "min_filter", "max_filter", "min_output", "max_output")
# The "x86" engine prepacks convolutions for oneDNN on VNNI CPUs, whose rounding is not
# fbgemm's; the packs are made under "fbgemm" so every CPU computes the same integers.
PACK_ENGINE = "fbgemm"

_cache: dict[int, _Entry] = {}       # id(filter tensor) -> its prepacked form
_BUILT_IN = PACK_ENGINE in torch.backends.quantized.supported_engines   # 80 us to ask


def usable() -> bool:
    return _BUILT_IN


@dataclass(frozen=True)
class Geometry:
    """Strides, symmetric pads and dilations as torch's conv2d_prepack takes them, and the
    explicit NHWC pad (left, right, top, bottom) applied first where TF's SAME is uneven."""
    strides: tuple
    pads: tuple
    dilations: tuple
    extra: tuple | None


def geometry(window, in_hw, k_hw) -> Geometry:
    (_, top, bottom), (_, left, right) = window.output_and_pads(in_hw, k_hw)
    if top == bottom and left == right:
        return Geometry(window.strides, (top, left), window.dilations, None)
    return Geometry(window.strides, (0, 0), window.dilations, (0, 0, left, right, top, bottom))


@dataclass
class _Entry:
    ref: weakref.ref
    bias_ref: weakref.ref
    key: tuple
    packed: object
    safe_max: int       # the largest input value whose adjacent pairs cannot leave int16


def safe_input_max(f_hwio: torch.Tensor) -> int:
    """An input bound under which no two products of one output channel, wherever fbgemm's
    im2col puts them side by side, leave int16: the two largest positive (negative) weights
    of the channel bound any pair (fbgemm's AVX2 kernels without VNNI saturate pairs)."""
    if not fbgemm.pairs_saturate() or f_hwio.numel() == 0:
        return fbgemm.U8_MAX
    w = f_hwio.reshape(-1, f_hwio.shape[-1]).to(torch.int32)
    two = min(2, w.shape[0])
    top = int(w.clamp(min=0).topk(two, dim=0).values.sum(0).max())
    bottom = int((-w.clamp(max=0)).topk(two, dim=0).values.sum(0).max())
    limits = [fbgemm.U8_MAX]
    limits += [fbgemm.INT16_MAX // top] if top else []
    limits += [-fbgemm.INT16_MIN // bottom] if bottom else []
    return min(limits)


@contextlib.contextmanager
def _packing_engine():
    before = torch.backends.quantized.engine
    torch.backends.quantized.engine = PACK_ENGINE
    try:
        yield
    finally:
        torch.backends.quantized.engine = before


def _forget(filter_id: int):
    def callback(_ref, lock=fbgemm._lock, cache=_cache) -> None:
        with lock:
            cache.pop(filter_id, None)
    return callback


def prepacked(f: torch.Tensor, scale_f: float, bias_f: torch.Tensor, bias: torch.Tensor,
              geo: Geometry) -> _Entry:
    """The filter's fbgemm pack (OIHW qint8, zero point 0, the float bias inside), made once
    per filter tensor, bias and geometry."""
    key = (fbgemm._tensor_key(f), scale_f, fbgemm._tensor_key(bias),
           tuple(bias_f.tolist()) if bias_f is not bias else None, geo)
    with fbgemm._lock:
        entry = _cache.get(id(f))
        if entry is None or entry.ref() is not f or entry.bias_ref() is not bias or \
                entry.key != key:
            fbgemm._first_creation_quietly()
            weight = fbgemm._quantized(f.permute(3, 2, 0, 1).contiguous(), scale_f, 0)
            with _packing_engine():
                packed = torch.ops.quantized.conv2d_prepack(
                    weight, bias_f, list(geo.strides), list(geo.pads), list(geo.dilations), 1)
            entry = _Entry(weakref.ref(f, _forget(id(f))), weakref.ref(bias), key, packed,
                           safe_input_max(f))
            _cache[id(f)] = entry
    return entry


def fbgemm_conv(x, entry: _Entry, geo: Geometry, scales, s_out, tout, relu: bool):
    """uint8 NHWC in, NHWC out: the NCHW view of an NHWC tensor is channels-last, as fbgemm
    reads it, so neither side copies for the layout."""
    if geo.extra is not None:
        x = torch.nn.functional.pad(x, geo.extra)       # zero point 0: pads are real zeros
    q = fbgemm._quantized(x.permute(0, 3, 1, 2), float(scales.scale_a), 0)
    zero_out = 0 if tout is dtypes.quint8 else 128      # qint8 rides as quint8 shifted by 128
    op = torch.ops.quantized.conv2d_relu if relu else torch.ops.quantized.conv2d
    out = fbgemm.plain_uint8(op(q, entry.packed, float(s_out), zero_out)).permute(0, 2, 3, 1)
    if tout is dtypes.qint8:
        return torch.bitwise_xor(out, 128).view(torch.int8)
    return out


def integer_conv(x, f, window, k_hw, bias_f, scales, s_out, tout, relu: bool):
    """The exact int32 path: im2col (padding with the zero point, 0), offset_matmul, then
    fbgemm's float requantization (quantized.requantized_integer)."""
    cols, grid = qk._columns(qk._padded_windows(x, window, k_hw, window.dilations, 0))
    out = qk.requantized_integer(cols, f.reshape(-1, f.shape[3]), bias_f, scales, s_out, tout,
                                 relu)
    return out.reshape(*grid, f.shape[3])


def conv_scales(node, in_range, f_range):
    """TF's oneDNN conv reads a quint8 input as scale max|range| / 255 with zero point 0 and
    the qint8 filter as max|range| / 127 (mkl_conv_ops.cc)."""
    if in_range == (0.0, 0.0):
        raise qk.invalid(node, "the range of input is empty: min_input and max_input are "
                               "both 0")
    if f_range == (0.0, 0.0):
        raise qk.invalid(node, "the range of filter is empty: min_filter and max_filter are "
                               "both 0")
    return qk._fused_scales("SCALED", *in_range, *f_range)


def _check_operands(node, x, f, bias: torch.Tensor | None) -> None:
    """TF's run-time checks of the operands (bias None: an op without one)."""
    if x.dim() != 4 or f.dim() != 4:
        raise qk.invalid(node, f"input must be 4-dimensional and filter 4-dimensional: "
                               f"{list(x.shape)}, {list(f.shape)}")
    if x.shape[3] != f.shape[2]:
        raise qk.invalid(node, f"input and filter must have the same depth: "
                               f"{list(x.shape)} vs. {list(f.shape)}")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != f.shape[3]):
        raise qk.invalid(node, f"bias must be a vector of the filter's {int(f.shape[3])} "
                               f"output channels, got {list(bias.shape)}")


def _geometries(node, window):
    """geometry_for(in_hw, k_hw): the node's Geometry per input and kernel size, kept."""
    geometries: dict[tuple, Geometry] = {}      # (input h, w, kernel h, w) -> its geometry

    def geometry_for(in_hw: list, k_hw: tuple) -> Geometry:
        key = (*in_hw, *k_hw)
        if key not in geometries:
            try:
                geometries[key] = geometry(window, in_hw, k_hw)
            except ValueError as e:
                raise qk.invalid(node, str(e)) from None
        return geometries[key]
    return geometry_for


def _zero_bias():
    """bias_for(f): one float32 zero bias per filter depth and device, kept, for the ops
    without a bias input (a fresh tensor each step would defeat the prepack cache)."""
    kept: dict[tuple, torch.Tensor] = {}

    def bias_for(f: torch.Tensor) -> torch.Tensor:
        key = (int(f.shape[-1]) if f.dim() else 0, f.device)
        if key not in kept:
            kept[key] = torch.zeros(key[0], dtype=torch.float32, device=f.device)
        return kept[key]
    return bias_for


def _fused_conv(node, ctx, relu: bool, biased: bool = True):
    tout = node.attr["out_type"]
    window = windows.window_of(node.attr, node.op)
    geometry_for = _geometries(node, window)
    zero_bias = _zero_bias()

    def run(x, f, *rest):
        if biased:
            bias, (min_input, max_input, min_filter, max_filter, min_freezed, max_freezed) = \
                rest[0], rest[1:]
        else:
            min_input, max_input, min_filter, max_filter, min_freezed, max_freezed = rest
            bias = zero_bias(f)
        _check_operands(node, x, f, bias)
        k_hw = (int(f.shape[0]), int(f.shape[1]))
        geo = geometry_for([int(x.shape[1]), int(x.shape[2])], k_hw)
        ranges = [qk._range(t) for t in (min_input, max_input, min_filter, max_filter)]
        scales = conv_scales(node, tuple(ranges[:2]), tuple(ranges[2:]))
        lo, hi = qk._range(min_freezed), qk._range(max_freezed)
        s_out = qk.output_scale(node, lo, hi, tout)
        bias_f = qk.float_bias(bias, scales)
        if ctx.device.device_type == "CPU" and x.device.type == "cpu" and usable() and \
                x.numel() and f.numel():
            entry = prepacked(f, float(scales.scale_b), bias_f, bias, geo)
            if int(x.max()) <= entry.safe_max:
                return qk._outputs(fbgemm_conv(x, entry, geo, scales, s_out, tout, relu),
                                   lo, hi)
        out = integer_conv(x, f, window, k_hw, bias_f, scales, s_out, tout, relu)
        return qk._outputs(out, lo, hi)
    return run


def _int32_conv(node, relu: bool, biased: bool):
    """QuantizedConv2DWithBias[AndRelu] and QuantizedConv2DAndRelu: the int32 accumulator
    (input read as max|range| / 255 with zero point 0, as TF's oneDNN kernel reads it), plus
    the bias in accumulator units, relu'd; the range is one level of input times one of
    filter (254 steps for qint8) times qint32's lowest and highest."""
    window = windows.window_of(node.attr, node.op)
    geometry_for = _geometries(node, window)

    def run(x, f, *rest):
        bias, ranges = (rest[0], rest[1:]) if biased else (None, rest)
        _check_operands(node, x, f, bias)
        k_hw = (int(f.shape[0]), int(f.shape[1]))
        geometry_for([int(x.shape[1]), int(x.shape[2])], k_hw)     # TF's window errors
        in_range, f_range = [tuple(qk._range(t) for t in pair)
                             for pair in (ranges[:2], ranges[2:])]
        scales = conv_scales(node, in_range, f_range)
        cols, grid = qk._columns(qk._padded_windows(x, window, k_hw, window.dilations, 0))
        acc = qk.offset_matmul(cols, f.reshape(-1, f.shape[3]), 0, 0)
        out = qk.with_int32_bias(acc, bias, scales)
        out = (out.clamp(min=0) if relu else out).reshape(*grid, f.shape[3])
        return qk._outputs(out, *qk.mkl_product_range(in_range, f_range))
    return run


@kernel("QuantizedConv2DWithBias", CPU=INT32_TYPES, GPU=INT32_TYPES, host_memory=INT32_IO)
def quantized_conv2d_with_bias(node, ctx):
    return _int32_conv(node, relu=False, biased=True)


@kernel("QuantizedConv2DWithBiasAndRelu", CPU=INT32_TYPES, GPU=INT32_TYPES,
        host_memory=INT32_IO)
def quantized_conv2d_with_bias_and_relu(node, ctx):
    return _int32_conv(node, relu=True, biased=True)


@kernel("QuantizedConv2DAndRelu", CPU=INT32_TYPES, GPU=INT32_TYPES, host_memory=INT32_IO)
def quantized_conv2d_and_relu(node, ctx):
    return _int32_conv(node, relu=True, biased=False)


UNBIASED_TYPES = {"Tinput": TYPES["Tinput"], "Tfilter": TYPES["Tfilter"],
                  "out_type": TYPES["out_type"]}


@kernel("QuantizedConv2DAndRequantize", CPU=UNBIASED_TYPES, GPU=UNBIASED_TYPES,
        host_memory=IO)
def quantized_conv2d_and_requantize(node, ctx):
    return _fused_conv(node, ctx, relu=False, biased=False)


@kernel("QuantizedConv2DAndReluAndRequantize", CPU=UNBIASED_TYPES, GPU=UNBIASED_TYPES,
        host_memory=IO)
def quantized_conv2d_and_relu_and_requantize(node, ctx):
    return _fused_conv(node, ctx, relu=True, biased=False)


@kernel("QuantizedConv2DWithBiasAndRequantize", CPU=TYPES, GPU=TYPES, host_memory=IO)
def quantized_conv2d_with_bias_and_requantize(node, ctx):
    return _fused_conv(node, ctx, relu=False)


@kernel("QuantizedConv2DWithBiasAndReluAndRequantize", CPU=TYPES, GPU=TYPES, host_memory=IO)
def quantized_conv2d_with_bias_and_relu_and_requantize(node, ctx):
    return _fused_conv(node, ctx, relu=True)


def cached_filter_ids() -> set[int]:
    with fbgemm._lock:
        return set(_cache)
