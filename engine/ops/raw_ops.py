"""tf.raw_ops for the quantized ops: keyword-only builders named as the op types, with TF's
argument names, attr defaults and output tuples (`QuantizedMatMul(a=..., b=..., ...)` gives
(out, min_out, max_out)). Type attrs follow from the inputs, as in TF's wrappers."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field

from engine import dtypes
from engine.ops import fake_quant_ops
from engine.ops.core import convert_to_tensor, graph_of, op_scope
from engine.ops.quantized_ops import float_scalar

REQUIRED = object()
_RANGE_OUT = ("output", "output_min", "output_max")


@dataclass(frozen=True)
class RawOp:
    """One op's wrapper: inputs as (name, kind) with kind "q" (typed by an attr), "f"
    (float32), "i" (int32) or "s" (shape: int32 or int64); list inputs end in "*"."""
    inputs: tuple
    outputs: tuple
    attrs: dict = field(default_factory=dict)          # attr -> default (REQUIRED: none)
    typed_by: dict = field(default_factory=dict)       # attr -> input it is read from


_Q = dtypes.qint32
SPECS = {
    "QuantizeV2": RawOp((("input", "f"), ("min_range", "f"), ("max_range", "f")), _RANGE_OUT,
                        {"T": REQUIRED, "mode": "MIN_COMBINED",
                         "round_mode": "HALF_AWAY_FROM_ZERO", "narrow_range": False,
                         "axis": -1, "ensure_minimum_range": 0.01}),
    "Dequantize": RawOp((("input", "q"), ("min_range", "f"), ("max_range", "f")), ("output",),
                        {"mode": "MIN_COMBINED", "narrow_range": False, "axis": -1,
                         "dtype": dtypes.float32}, {"T": "input"}),
    "QuantizedMatMul": RawOp((("a", "q"), ("b", "q"), ("min_a", "f"), ("max_a", "f"),
                              ("min_b", "f"), ("max_b", "f")), ("out", "min_out", "max_out"),
                             {"Toutput": _Q, "transpose_a": False, "transpose_b": False,
                              "Tactivation": dtypes.quint8}, {"T1": "a", "T2": "b"}),
    "Requantize": RawOp((("input", "q"), ("input_min", "f"), ("input_max", "f"),
                         ("requested_output_min", "f"), ("requested_output_max", "f")),
                        _RANGE_OUT, {"out_type": REQUIRED}, {"Tinput": "input"}),
    "RequantizationRange": RawOp((("input", "q"), ("input_min", "f"), ("input_max", "f")),
                                 ("output_min", "output_max"), {}, {"Tinput": "input"}),
    "QuantizeDownAndShrinkRange": RawOp((("input", "q"), ("input_min", "f"),
                                         ("input_max", "f")), _RANGE_OUT,
                                        {"out_type": REQUIRED}, {"Tinput": "input"}),
    "QuantizedRelu": RawOp((("features", "q"), ("min_features", "f"), ("max_features", "f")),
                           ("activations", "min_activations", "max_activations"),
                           {"out_type": dtypes.quint8}, {"Tinput": "features"}),
    "QuantizedRelu6": RawOp((("features", "q"), ("min_features", "f"), ("max_features", "f")),
                            ("activations", "min_activations", "max_activations"),
                            {"out_type": dtypes.quint8}, {"Tinput": "features"}),
    "QuantizedBiasAdd": RawOp((("input", "q"), ("bias", "q"), ("min_input", "f"),
                               ("max_input", "f"), ("min_bias", "f"), ("max_bias", "f")),
                              ("output", "min_out", "max_out"), {"out_type": REQUIRED},
                              {"T1": "input", "T2": "bias"}),
    "QuantizedMaxPool": RawOp((("input", "q"), ("min_input", "f"), ("max_input", "f")),
                              _RANGE_OUT, {"ksize": REQUIRED, "strides": REQUIRED,
                                           "padding": REQUIRED}, {"T": "input"}),
    "QuantizedAvgPool": RawOp((("input", "q"), ("min_input", "f"), ("max_input", "f")),
                              _RANGE_OUT, {"ksize": REQUIRED, "strides": REQUIRED,
                                           "padding": REQUIRED}, {"T": "input"}),
    "QuantizedConv2D": RawOp((("input", "q"), ("filter", "q"), ("min_input", "f"),
                              ("max_input", "f"), ("min_filter", "f"), ("max_filter", "f")),
                             _RANGE_OUT, {"out_type": _Q, "strides": REQUIRED,
                                          "padding": REQUIRED, "dilations": [1, 1, 1, 1]},
                             {"Tinput": "input", "Tfilter": "filter"}),
    "QuantizedConcat": RawOp((("concat_dim", "i"), ("values", "q*"), ("input_mins", "f*"),
                              ("input_maxes", "f*")), _RANGE_OUT, {}, {"T": "values"}),
    "QuantizedReshape": RawOp((("tensor", "q"), ("shape", "s"), ("input_min", "f"),
                               ("input_max", "f")), _RANGE_OUT, {},
                              {"T": "tensor", "Tshape": "shape"}),
}
_FUSED_IN = (("a", "q"), ("b", "q"), ("bias", "q"), ("min_a", "f"), ("max_a", "f"),
             ("min_b", "f"), ("max_b", "f"))
_FUSED_ATTRS = {"transpose_a": False, "transpose_b": False, "input_quant_mode": "MIN_FIRST"}
_FUSED_OUT = ("out", "min_out", "max_out")
_TYPED = {"T1": "a", "T2": "b", "Tbias": "bias"}
SPECS.update({
    "QuantizedMatMulWithBias": RawOp(_FUSED_IN, _FUSED_OUT, dict(_FUSED_ATTRS, Toutput=_Q),
                                     _TYPED),
    "QuantizedMatMulWithBiasAndRelu": RawOp(_FUSED_IN, _FUSED_OUT,
                                            dict(_FUSED_ATTRS, Toutput=_Q),
                                            {"T1": "a", "T2": "b"}),
    **{op: RawOp(_FUSED_IN + (("min_freezed_output", "f"), ("max_freezed_output", "f")),
                 _FUSED_OUT, dict(_FUSED_ATTRS, Toutput=dtypes.quint8), _TYPED)
       for op in ("QuantizedMatMulWithBiasAndRequantize",
                  "QuantizedMatMulWithBiasAndReluAndRequantize")},
})
_FUSED_CONV_IN = (("input", "q"), ("filter", "q"), ("bias", "q"), ("min_input", "f"),
                  ("max_input", "f"), ("min_filter", "f"), ("max_filter", "f"),
                  ("min_freezed_output", "f"), ("max_freezed_output", "f"))
_FUSED_CONV_ATTRS = {"strides": REQUIRED, "padding": REQUIRED, "dilations": [1, 1, 1, 1],
                     "padding_list": []}
_CONV_TYPED = {"Tinput": "input", "Tfilter": "filter", "Tbias": "bias"}
_FUSED_CONV_OUT = ("output", "min_output", "max_output")
SPECS.update({
    "QuantizedConv2DWithBiasAndRequantize": RawOp(
        _FUSED_CONV_IN, _FUSED_CONV_OUT, dict(_FUSED_CONV_ATTRS, out_type=dtypes.qint8),
        _CONV_TYPED),
    "QuantizedConv2DWithBiasAndReluAndRequantize": RawOp(
        _FUSED_CONV_IN, _FUSED_CONV_OUT, dict(_FUSED_CONV_ATTRS, out_type=dtypes.quint8),
        _CONV_TYPED),
})
_CONV_RANGES_IN = _FUSED_CONV_IN[3:7]
_UNBIASED_TYPED = {"Tinput": "input", "Tfilter": "filter"}
SPECS.update({
    **{op: RawOp(_FUSED_CONV_IN[:7], _FUSED_CONV_OUT, dict(_FUSED_CONV_ATTRS, out_type=_Q),
                 _UNBIASED_TYPED)
       for op in ("QuantizedConv2DWithBias", "QuantizedConv2DWithBiasAndRelu")},
    "QuantizedConv2DAndRelu": RawOp(
        _FUSED_CONV_IN[:2] + _CONV_RANGES_IN, _FUSED_CONV_OUT,
        dict(_FUSED_CONV_ATTRS, out_type=_Q), _UNBIASED_TYPED),
    "QuantizedConv2DAndRequantize": RawOp(
        _FUSED_CONV_IN[:2] + _FUSED_CONV_IN[3:], _FUSED_CONV_OUT,
        dict(_FUSED_CONV_ATTRS, out_type=dtypes.qint8), _UNBIASED_TYPED),
    "QuantizedConv2DAndReluAndRequantize": RawOp(
        _FUSED_CONV_IN[:2] + _FUSED_CONV_IN[3:], _FUSED_CONV_OUT,
        dict(_FUSED_CONV_ATTRS, out_type=dtypes.quint8), _UNBIASED_TYPED),
})
SPECS.update({op: RawOp(inputs, outputs, dict(attrs))
              for op, (inputs, outputs, attrs) in fake_quant_ops.RAW_SPECS.items()})
_TUPLES = {op: namedtuple(op, spec.outputs) for op, spec in SPECS.items()
           if len(spec.outputs) > 1}


def _convert(value, kind: str, name: str):
    if kind == "f":
        return float_scalar(value, name)
    if kind == "i":
        return convert_to_tensor(value, dtype=dtypes.int32, name=name)
    return convert_to_tensor(value, name=name)


def _inputs(op_type: str, spec: RawOp, kwargs: dict) -> tuple[list, dict]:
    flat, by_name = [], {}
    for arg, kind in spec.inputs:
        if arg not in kwargs:
            raise TypeError(f"raw_ops.{op_type}() missing required argument '{arg}'")
        value = kwargs.pop(arg)
        if kind.endswith("*"):
            tensors = [_convert(v, kind[0], f"{arg}_{i}") for i, v in enumerate(value)]
            by_name[arg] = tensors
            flat.extend(tensors)
        else:
            by_name[arg] = _convert(value, kind, arg)
            flat.append(by_name[arg])
    return flat, by_name


def _attrs(op_type: str, spec: RawOp, kwargs: dict, by_name: dict) -> dict:
    attrs = {}
    for attr, default in spec.attrs.items():
        value = kwargs.pop(attr, default)
        if value is REQUIRED:
            raise TypeError(f"raw_ops.{op_type}() missing required argument '{attr}'")
        attrs[attr] = value
    for attr in ("T", "Toutput", "Tactivation", "out_type", "dtype"):
        if attr in attrs and not isinstance(attrs[attr], dtypes.DType):
            attrs[attr] = dtypes.as_dtype(attrs[attr])
    for attr, arg in spec.typed_by.items():
        source = by_name[arg]
        first = source[0] if isinstance(source, list) else source
        attrs[attr] = first.dtype.base_dtype
    if any(kind.endswith("*") for _, kind in spec.inputs):
        attrs["N"] = len(by_name[next(a for a, k in spec.inputs if k.endswith("*"))])
    if kwargs:
        raise TypeError(f"raw_ops.{op_type}() got unexpected arguments {sorted(kwargs)}")
    return attrs


def _builder(op_type: str):
    spec = SPECS[op_type]

    def build(**kwargs):
        name = kwargs.pop("name", None)
        graph = graph_of(*[v for v in kwargs.values() if not isinstance(v, (str, bool))])
        with op_scope(graph, name, op_type) as scope:
            flat, by_name = _inputs(op_type, spec, kwargs)
            attrs = _attrs(op_type, spec, kwargs, by_name)
            op = graph.create_op(op_type, flat, attrs, name=scope)
        if len(op.outputs) == 1:
            return op.outputs[0]
        return _TUPLES[op_type](*op.outputs)
    build.__name__ = build.__qualname__ = op_type
    names = ", ".join(a for a, _ in spec.inputs)
    build.__doc__ = f"tf.raw_ops.{op_type}: keyword arguments as in TF ({names}, attrs)."
    return build


for _op in SPECS:
    globals()[_op] = _builder(_op)

__all__ = sorted(SPECS)
