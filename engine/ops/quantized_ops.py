"""The quantized ops (QuantizeV2, Dequantize, QuantizedMatMul, Requantize, ...) with TF's
inputs, outputs, attrs, static shapes and build-time errors; a quantized value travels as
the triple (integer tensor, float min, float max). tf.quantize / tf.dequantize live here."""

from __future__ import annotations

import functools
from collections import namedtuple

from engine import dtypes
from engine.graph import Tensor
from engine.ops import windows
from engine.ops.conv_ops import windowed
from engine.ops.core import (
    check_dtype_allowed,
    constant_value,
    convert_to_tensor,
    graph_of,
    op_scope,
    shape_error,
)
from engine.ops.registry import register_op
from engine.shapes import TensorShape, unknown_shape

__all__ = ["dequantize", "quantize", "quantize_v2"]

QUANTIZED = dtypes.QUANTIZED
MODES = ("MIN_COMBINED", "MIN_FIRST", "SCALED")
ROUND_MODES = ("HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN")
SCALAR = TensorShape([])

# The output tuples TF's generated wrappers return (field names as in gen_*_ops.py).
QuantizeV2 = namedtuple("QuantizeV2", ["output", "output_min", "output_max"])


# -- shape inference -----------------------------------------------------------------------

def _float32_inputs(op, slots, names) -> None:
    for i, name in zip(slots, names):
        dtype = op.inputs[i].dtype.base_dtype
        if dtype is not dtypes.float32:
            raise TypeError(f"Input '{name}' of '{op.type}' Op ('{op.name}') has type "
                            f"{dtype.name} that does not match expected type of float32.")


def _scalar_ranges(op, first: int, count: int = 2, names=None) -> None:
    """Range inputs are float32 scalars (TF: "must be rank 0")."""
    for i in range(first, first + count):
        t = op.inputs[i]
        _float32_inputs(op, (i,), (names[i - first] if names else f"{i}",))
        if t.shape.ndims not in (None, 0):
            raise shape_error(op, f"Shape must be rank 0 but is rank {t.shape.ndims}")


def _quantized_input(op, index: int, attr: str, allowed=QUANTIZED) -> dtypes.DType:
    dtype = op.inputs[index].dtype.base_dtype
    check_dtype_allowed(op, dtype, allowed, arg=attr)
    return dtype


def _with_range(dtype, shape) -> list:
    return [(dtype, shape), (dtypes.float32, SCALAR), (dtypes.float32, SCALAR)]


def _check_choice(op, attr: str, allowed) -> None:
    windows.check_choice(op.type, attr, op.attrs[attr], allowed)


def _quantize_v2_infer(op):
    _float32_inputs(op, (0,), ("input",))
    _scalar_ranges(op, 1)
    check_dtype_allowed(op, op.attrs["T"], QUANTIZED)
    _check_choice(op, "mode", MODES)
    _check_choice(op, "round_mode", ROUND_MODES)
    if op.attrs["axis"] != -1:
        raise ValueError(f"{op.type} ('{op.name}'): per-axis quantization (axis="
                         f"{op.attrs['axis']}) is not supported; quantize per tensor (axis=-1)")
    return _with_range(op.attrs["T"], op.inputs[0].shape)


def _dequantize_infer(op):
    _quantized_input(op, 0, "input")
    _scalar_ranges(op, 1)
    _check_choice(op, "mode", MODES)
    check_dtype_allowed(op, op.attrs["dtype"], (dtypes.bfloat16, dtypes.float32), arg="dtype")
    if op.attrs["axis"] != -1:
        raise ValueError(f"{op.type} ('{op.name}'): per-axis dequantization is not supported")
    return [(op.attrs["dtype"], op.inputs[0].shape)]


def _matrix(op, index: int) -> list:
    shape = op.inputs[index].shape
    if shape.ndims is None:
        return [None, None]
    if shape.ndims != 2:
        raise shape_error(op, f"Shape must be rank 2 but is rank {shape.ndims}")
    return list(shape.dims)


def _product_shape(op) -> TensorShape:
    """[m, n] of a (transposed) a @ b, inputs 0 and 1; k must agree where both are known."""
    a, b = _matrix(op, 0), _matrix(op, 1)
    m, k = a[::-1] if op.attrs["transpose_a"] else a
    k2, n = b[::-1] if op.attrs["transpose_b"] else b
    if k is not None and k2 is not None and k != k2:
        raise shape_error(op, f"Dimensions must be equal, but are {k} and {k2}")
    return TensorShape([m, n])


def _mat_mul_infer(op):
    _quantized_input(op, 0, "a")
    _quantized_input(op, 1, "b")
    _scalar_ranges(op, 2, 4)
    return _with_range(op.attrs["Toutput"], _product_shape(op))


def _requantize_infer(op):
    _quantized_input(op, 0, "input")
    _scalar_ranges(op, 1, 4)
    check_dtype_allowed(op, op.attrs["out_type"], QUANTIZED, arg="out_type")
    return _with_range(op.attrs["out_type"], op.inputs[0].shape)


def _requantization_range_infer(op):
    _quantized_input(op, 0, "input")
    _scalar_ranges(op, 1)
    return [(dtypes.float32, SCALAR), (dtypes.float32, SCALAR)]


def _shrink_infer(op):
    _quantized_input(op, 0, "input")
    _scalar_ranges(op, 1)
    check_dtype_allowed(op, op.attrs["out_type"], QUANTIZED, arg="out_type")
    return _with_range(op.attrs["out_type"], op.inputs[0].shape)


def _relu_infer(op):
    _quantized_input(op, 0, "features")
    _scalar_ranges(op, 1)
    check_dtype_allowed(op, op.attrs["out_type"], QUANTIZED, arg="out_type")
    return _with_range(op.attrs["out_type"], op.inputs[0].shape)


def _bias_add_infer(op):
    _quantized_input(op, 0, "input")
    _quantized_input(op, 1, "bias")
    _scalar_ranges(op, 2, 4)
    x, bias = op.inputs[0].shape, op.inputs[1].shape
    if x.ndims is not None and x.ndims < 2:
        raise shape_error(op, f"Shape must be at least rank 2 but is rank {x.ndims}")
    if bias.ndims is not None and bias.ndims != 1:
        raise shape_error(op, f"Shape must be rank 1 but is rank {bias.ndims}")
    if x.ndims is not None and bias.ndims == 1:
        last, size = x.dims[-1], bias.dims[0]
        if last is not None and size is not None and last != size:
            raise shape_error(op, f"Dimensions must be equal, but are {last} and {size}")
    return _with_range(op.attrs["out_type"], x)


def _rank4(op, index: int) -> list:
    shape = op.inputs[index].shape
    if shape.ndims is None:
        return [None] * 4
    if shape.ndims != 4:
        raise shape_error(op, f"Shape must be rank 4 but is rank {shape.ndims}")
    return list(shape.dims)


def _pool_infer(op):
    dtype = _quantized_input(op, 0, "input")
    _scalar_ranges(op, 1)
    _check_choice(op, "padding", ("SAME", "VALID"))
    window = windows.window_of(op.attrs, op.type, dilations=False)
    windows.check_length(op.type, "ksize", op.attrs["ksize"])
    if windows.non_spatial(op.attrs["ksize"], "NHWC") != (1, 1) or \
            windows.non_spatial(op.attrs["strides"], "NHWC") != (1, 1):
        raise ValueError(f"{op.type} ('{op.name}'): pooling is supported only across width "
                         "and height (ksize and strides 1 in batch and depth)")
    batch, h, w, depth = _rank4(op, 0)
    k_hw = [int(op.attrs["ksize"][1]), int(op.attrs["ksize"][2])]
    out_h, out_w = windowed(op, window, [h, w], k_hw)
    return _with_range(dtype, TensorShape([batch, out_h, out_w, depth]))


def _conv2d_infer(op):
    _quantized_input(op, 0, "input")
    _quantized_input(op, 1, "filter")
    _scalar_ranges(op, 2, 4)
    check_dtype_allowed(op, op.attrs["out_type"], QUANTIZED, arg="out_type")
    window = windows.window_of(op.attrs, op.type)
    return _conv_output(op, window)


def _concat_infer(op):
    n = op.attrs["N"]
    if n < 2:
        raise ValueError(f"List argument 'values' to '{op.type}' Op with length {n} shorter "
                         "than minimum length 2.")
    axis_t, values = op.inputs[0], op.inputs[1:1 + n]
    check_dtype_allowed(op, axis_t.dtype, (dtypes.int32,), arg="concat_dim")
    dtype = values[0].dtype.base_dtype
    for i, v in enumerate(values[1:], start=1):
        if v.dtype.base_dtype is not dtype:
            raise TypeError(f"Input 'values' of '{op.type}' Op has type {v.dtype.name} at "
                            f"index {i} that does not match type {dtype.name} at index 0.")
    _scalar_ranges(op, 1 + n, 2 * n)
    axis = constant_value(axis_t)
    ranks = {v.shape.ndims for v in values if v.shape.ndims is not None}
    if len(ranks) > 1:
        raise shape_error(op, "Shape must be the same rank for every value")
    if axis is None or not ranks:
        shape = unknown_shape() if not ranks else TensorShape([None] * ranks.pop())
        return _with_range(dtype, shape)
    rank = ranks.pop()
    axis = int(axis)
    if not -rank <= axis < rank:
        raise shape_error(op, f"Expected concat_dim in the range [{-rank}, {rank}), but got "
                              f"{axis}")
    axis %= rank
    dims = [None] * rank
    total = 0
    for v in values:
        for j, d in enumerate(v.shape.dims):
            if j == axis:
                total = None if total is None or d is None else total + d
            elif d is not None:
                if dims[j] is not None and dims[j] != d:
                    raise shape_error(op, f"Dimension {j} in both shapes must be equal, but "
                                          f"are {dims[j]} and {d}")
                dims[j] = d
    dims[axis] = total
    return _with_range(dtype, TensorShape(dims))


def _reshape_infer(op):
    check_dtype_allowed(op, op.inputs[1].dtype, (dtypes.int32, dtypes.int64), arg="Tshape")
    _scalar_ranges(op, 2)
    wanted = constant_value(op.inputs[1])
    source = op.inputs[0].shape
    if wanted is None:
        return _with_range(op.inputs[0].dtype.base_dtype, unknown_shape())
    dims = [int(d) for d in wanted.reshape(-1)]
    if dims.count(-1) > 1:
        raise shape_error(op, "Cannot infer multiple unknown dimensions in shape "
                              f"{dims}")
    if -1 in dims and source.is_fully_defined():
        known = 1
        for d in dims:
            known *= d if d != -1 else 1
        size = source.num_elements()
        if known == 0 or size % known:
            raise shape_error(op, f"Cannot reshape a tensor with {size} elements to shape "
                                  f"{dims}")
        dims = [size // known if d == -1 else d for d in dims]
    elif source.is_fully_defined() and source.num_elements() != _product(dims):
        raise shape_error(op, f"Cannot reshape a tensor with {source.num_elements()} "
                              f"elements to shape {dims} ({_product(dims)} elements)")
    return _with_range(op.inputs[0].dtype.base_dtype,
                       TensorShape([None if d == -1 else d for d in dims]))


# TF's type list for the fused MatMul ops' a, b and Toutput, in its order.
FUSED_TYPES = (dtypes.qint8, dtypes.quint8, dtypes.qint32, dtypes.qint16, dtypes.quint16)
INPUT_QUANT_MODES = ("MIN_FIRST", "SCALED")
FUSED_RANGES = ("min_a", "max_a", "min_b", "max_b", "min_freezed_output", "max_freezed_output")


def _fused_mat_mul_infer(op, ranges: int, bias_types=(dtypes.float32, dtypes.qint32)):
    """QuantizedMatMulWithBias[AndRelu][AndRequantize]: a [m, k], b [k, n] (after the
    transposes), bias rank 1 (TF does not check its length while building), and `ranges`
    float32 scalars: min/max of a and b, then the freezed output range."""
    _quantized_input(op, 0, "a", FUSED_TYPES)
    _quantized_input(op, 1, "b", FUSED_TYPES)
    check_dtype_allowed(op, op.inputs[2].dtype, bias_types, arg="bias")
    _scalar_ranges(op, 3, ranges, FUSED_RANGES)
    check_dtype_allowed(op, op.attrs["Toutput"], FUSED_TYPES, arg="Toutput")
    windows.check_choice(op.type, "input_quant_mode",
                         op.attrs.get("input_quant_mode", "MIN_FIRST"), INPUT_QUANT_MODES)
    bias = op.inputs[2].shape
    if bias.ndims is not None and bias.ndims != 1:
        raise shape_error(op, f"Shape must be rank 1 but is rank {bias.ndims}")
    return _with_range(op.attrs["Toutput"], _product_shape(op))


# TF 2.21's fused Conv2D ops take TF's quantized type list; the padding_list attr (explicit
# pads) is not supported here, so their padding is SAME or VALID.
FUSED_CONV_PADDINGS = ("SAME", "VALID")
FUSED_CONV_RANGES = ("min_input", "max_input", "min_filter", "max_filter",
                     "min_freezed_output", "max_freezed_output")


def _fused_conv2d_infer(op, biased: bool = True, ranges: int = 6,
                        bias_types=(dtypes.float32, dtypes.qint32)):
    """QuantizedConv2D[WithBias][AndRelu][AndRequantize]: input [batch, h, w, depth] NHWC,
    filter [kh, kw, depth, out], bias rank 1 where the op has one (float32, or qint32 for the
    requantizing ops), float32 scalar ranges (four, and the freezed output's two for the
    requantizing ops)."""
    _quantized_input(op, 0, "input", FUSED_TYPES)
    _quantized_input(op, 1, "filter", FUSED_TYPES)
    first_range = 3 if biased else 2
    if biased:
        check_dtype_allowed(op, op.inputs[2].dtype, bias_types, arg="bias")
    _scalar_ranges(op, first_range, ranges, FUSED_CONV_RANGES)
    check_dtype_allowed(op, op.attrs["out_type"], FUSED_TYPES, arg="out_type")
    _check_choice(op, "padding", FUSED_CONV_PADDINGS)
    if op.attrs.get("padding_list"):
        raise ValueError(f"{op.type}: padding_list (explicit padding) is not supported; "
                         "use padding SAME or VALID")
    window = windows.window_of(op.attrs, op.type)
    bias = op.inputs[2].shape if biased else None
    if bias is not None and bias.ndims is not None and bias.ndims != 1:
        raise shape_error(op, f"Shape must be rank 1 but is rank {bias.ndims}")
    return _conv_output(op, window)



def _conv_output(op, window):
    """An NHWC convolution's output (batch, rows, cols, filters) with its range outputs; the
    input's depth must be the filter's input depth."""
    batch, h, w, depth = _rank4(op, 0)
    kh, kw, k_in, k_out = _rank4(op, 1)
    if depth is not None and k_in is not None and depth != k_in:
        raise shape_error(op, f"Dimensions must be equal, but are {depth} and {k_in}")
    out_h, out_w = windowed(op, window, [h, w], [kh, kw])
    return _with_range(op.attrs["out_type"], TensorShape([batch, out_h, out_w, k_out]))

def _product(dims) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


register_op("QuantizeV2", _quantize_v2_infer)
register_op("Dequantize", _dequantize_infer)
register_op("QuantizedMatMul", _mat_mul_infer)
register_op("Requantize", _requantize_infer)
register_op("RequantizationRange", _requantization_range_infer)
register_op("QuantizeDownAndShrinkRange", _shrink_infer)
register_op("QuantizedRelu", _relu_infer)
register_op("QuantizedRelu6", _relu_infer)
register_op("QuantizedBiasAdd", _bias_add_infer)
register_op("QuantizedMaxPool", _pool_infer)
register_op("QuantizedAvgPool", _pool_infer)
register_op("QuantizedConv2D", _conv2d_infer)
register_op("QuantizedConcat", _concat_infer)
register_op("QuantizedReshape", _reshape_infer)
register_op("QuantizedMatMulWithBias", lambda op: _fused_mat_mul_infer(op, 4))
register_op("QuantizedMatMulWithBiasAndRelu",
            lambda op: _fused_mat_mul_infer(op, 4, bias_types=(dtypes.float32,)))
register_op("QuantizedMatMulWithBiasAndRequantize", lambda op: _fused_mat_mul_infer(op, 6))
register_op("QuantizedMatMulWithBiasAndReluAndRequantize",
            lambda op: _fused_mat_mul_infer(op, 6))
register_op("QuantizedConv2DWithBiasAndRequantize", _fused_conv2d_infer)
register_op("QuantizedConv2DWithBiasAndReluAndRequantize", _fused_conv2d_infer)
for _op in ("QuantizedConv2DWithBias", "QuantizedConv2DWithBiasAndRelu"):
    register_op(_op, functools.partial(_fused_conv2d_infer, ranges=4,
                                       bias_types=(dtypes.float32,)))
register_op("QuantizedConv2DAndRelu",
            functools.partial(_fused_conv2d_infer, biased=False, ranges=4))
for _op in ("QuantizedConv2DAndRequantize", "QuantizedConv2DAndReluAndRequantize"):
    register_op(_op, functools.partial(_fused_conv2d_infer, biased=False))


# -- graph builders ------------------------------------------------------------------------

def float_scalar(value, name: str):
    """A float input: Python and numpy values become float32, tensors keep their dtype (the
    op's inference refuses a wrong one, naming the input)."""
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        return convert_to_tensor(value, name=name)
    return convert_to_tensor(value, dtype=dtypes.float32, name=name)


def create(op_type: str, inputs: list, attrs: dict, name: str | None):
    """One quantized op; returns its outputs (a single tensor for one-output ops)."""
    op = graph_of(*inputs).create_op(op_type, inputs, attrs, name=name or op_type)
    return op.outputs[0] if len(op.outputs) == 1 else tuple(op.outputs)


def quantize_v2(input, min_range, max_range, T, mode: str = "MIN_COMBINED",  # noqa: A002,N803
                name: str | None = None, round_mode: str = "HALF_AWAY_FROM_ZERO",
                narrow_range: bool = False, axis: int | None = None,
                ensure_minimum_range: float = 0.01) -> QuantizeV2:
    """tf.quantize_v2 (TF1): float input in [min_range, max_range] to quantized type T;
    returns (output, output_min, output_max), the range actually used."""
    with op_scope(graph_of(input, min_range, max_range), name, "QuantizeV2") as scope:
        inputs = [float_scalar(input, "input"),
                  float_scalar(min_range, "min_range"), float_scalar(max_range, "max_range")]
        attrs = {"T": dtypes.as_dtype(T), "mode": mode, "round_mode": round_mode,
                 "narrow_range": bool(narrow_range), "axis": -1 if axis is None else int(axis),
                 "ensure_minimum_range": float(ensure_minimum_range)}
        return QuantizeV2(*create("QuantizeV2", inputs, attrs, scope))


def quantize(input, min_range, max_range, T, mode: str = "MIN_COMBINED",  # noqa: A002,N803
             round_mode: str = "HALF_AWAY_FROM_ZERO", name: str | None = None,
             narrow_range: bool = False, axis: int | None = None,
             ensure_minimum_range: float = 0.01) -> QuantizeV2:
    """tf.quantization.quantize / tf.quantize: QuantizeV2 with TF's argument order."""
    return quantize_v2(input, min_range, max_range, T, mode=mode, name=name,
                       round_mode=round_mode, narrow_range=narrow_range, axis=axis,
                       ensure_minimum_range=ensure_minimum_range)


def dequantize(input, min_range, max_range, mode: str = "MIN_COMBINED",  # noqa: A002
               name: str | None = None, axis: int | None = None, narrow_range: bool = False,
               dtype=dtypes.float32):
    """tf.quantization.dequantize / tf.dequantize: a quantized tensor and its range to float."""
    with op_scope(graph_of(input, min_range, max_range), name, "Dequantize") as scope:
        x = convert_to_tensor(input, name="input")
        inputs = [x, float_scalar(min_range, "min_range"), float_scalar(max_range, "max_range")]
        attrs = {"T": x.dtype.base_dtype, "mode": mode, "narrow_range": bool(narrow_range),
                 "axis": -1 if axis is None else int(axis), "dtype": dtypes.as_dtype(dtype)}
        return create("Dequantize", inputs, attrs, scope)
