"""Convolution, pooling and bias ops: Conv2D, DepthwiseConv2dNative, MaxPool, AvgPool, BiasAdd
and their backprop ops (the gradient helpers), with TF's static shapes and build-time errors;
the tf.nn builders as TF1 spells them."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.graph import Tensor
from engine.ops import windows
from engine.ops.core import (
    check_dtype_allowed,
    constant_value,
    convert_to_tensor,
    graph_of,
    op_scope,
    shape_error,
)
from engine.ops.registry import register_op
from engine.shapes import TensorShape

# The names tf.nn exports from this module (engine/nn.py star-imports it).
__all__ = [
    "avg_pool",
    "avg_pool2d",
    "bias_add",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "conv2d_transpose",
    "depthwise_conv2d",
    "depthwise_conv2d_native",
    "max_pool",
    "max_pool2d",
]

CONV_TYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


# -- shape inference ---------------------------------------------------------------------

def _rank4(op, shape: TensorShape) -> list:
    if shape.ndims is None:
        return [None] * 4
    if shape.ndims != 4:
        raise shape_error(op, f"Shape must be rank 4 but is rank {shape.ndims}")
    return list(shape.dims)


def _same_dtype(op, slots, names) -> dtypes.DType:
    first = op.inputs[slots[0]].dtype.base_dtype
    for slot, name in zip(slots[1:], names[1:]):
        dt = op.inputs[slot].dtype.base_dtype
        if dt is not first:
            raise TypeError(f"Input '{name}' of '{op.type}' Op has type {dt.name} that does "
                            f"not match type {first.name} of argument '{names[0]}'.")
    check_dtype_allowed(op, first, CONV_TYPES)
    return first


def _merge_dim(op, a, b):
    if a is not None and b is not None and a != b:
        raise shape_error(op, f"Dimensions must be equal, but are {a} and {b}")
    return a if a is not None else b


def _layout(dims: list, data_format: str):
    """(batch, [height, width], channels) of a 4-D shape in the given format."""
    h, w = windows.spatial_axes(data_format)
    return dims[0], [dims[h], dims[w]], dims[windows.channel_axis(data_format)]


def _assemble(batch, hw, channels, data_format: str) -> TensorShape:
    if data_format == "NCHW":
        return TensorShape([batch, channels, hw[0], hw[1]])
    return TensorShape([batch, hw[0], hw[1], channels])


def windowed(op, window: windows.Window, in_hw, k_hw) -> list:
    """The output height and width of a window over `in_hw`; TF's shape error otherwise."""
    try:
        return [out for out, _, _ in window.output_and_pads(in_hw, k_hw)]
    except ValueError as e:
        raise shape_error(op, str(e)) from None


def _conv2d_infer(op):
    dtype = _same_dtype(op, (0, 1), ("input", "filter"))
    window = windows.window_of(op.attrs, op.type)
    batch, hw, depth = _layout(_rank4(op, op.inputs[0].shape), window.data_format)
    kh, kw, k_in, k_out = _rank4(op, op.inputs[1].shape)
    if depth is not None and k_in is not None and (k_in == 0 or depth % k_in):
        raise shape_error(op, f"Depth of input ({depth}) is not a multiple of input depth of "
                              f"filter ({k_in})")
    out_hw = windowed(op, window, hw, (kh, kw))
    return [(dtype, _assemble(batch, out_hw, k_out, window.data_format))]


def _depthwise_infer(op):
    dtype = _same_dtype(op, (0, 1), ("input", "filter"))
    window = windows.window_of(op.attrs, op.type)
    batch, hw, depth = _layout(_rank4(op, op.inputs[0].shape), window.data_format)
    kh, kw, k_in, multiplier = _rank4(op, op.inputs[1].shape)
    depth = _merge_dim(op, depth, k_in)
    out_hw = windowed(op, window, hw, (kh, kw))
    channels = None if depth is None or multiplier is None else depth * multiplier
    return [(dtype, _assemble(batch, out_hw, channels, window.data_format))]


def _sizes_input(op, index: int, allow_spatial: bool = False):
    """The 4 dims an int32 sizes input (input_sizes, filter_sizes) names; None for unknown."""
    value = constant_value(op.inputs[index])
    if value is None:
        return [None] * 4
    sizes = [int(v) for v in np.asarray(value).reshape(-1)]
    if len(sizes) == 4 or (allow_spatial and len(sizes) == 2):
        return sizes
    if allow_spatial:
        raise shape_error(op, f"{op.type} requires input_sizes to contain 4 values or 2 "
                              f"values, but got: {len(sizes)}")
    raise shape_error(op, f"Shape must be rank 4 but is rank {len(sizes)}")


def _backprop_input_infer(op):
    """Conv2DBackpropInput / DepthwiseConv2dNativeBackpropInput(input_sizes, filter, dy)."""
    dtype = _same_dtype(op, (1, 2), ("filter", "out_backprop"))
    window = windows.window_of(op.attrs, op.type)
    fmt = window.data_format
    filt = _rank4(op, op.inputs[1].shape)
    dy_batch, _, dy_depth = _layout(_rank4(op, op.inputs[2].shape), fmt)
    sizes = _sizes_input(op, 0, allow_spatial=True)
    if len(sizes) == 2:
        return [(dtype, _assemble(dy_batch, sizes, filt[2], fmt))]
    batch, hw, depth = _layout(sizes, fmt)
    if op.type == "Conv2DBackpropInput":
        _merge_dim(op, dy_depth, filt[3])
    elif None not in (filt[2], filt[3]):
        _merge_dim(op, dy_depth, filt[2] * filt[3])
    batch = _merge_dim(op, batch, dy_batch)
    return [(dtype, _assemble(batch, hw, depth, fmt))]


def _backprop_filter_infer(op):
    """Conv2DBackpropFilter / DepthwiseConv2dNativeBackpropFilter(input, filter_sizes, dy)."""
    dtype = _same_dtype(op, (0, 2), ("input", "out_backprop"))
    windows.window_of(op.attrs, op.type)
    _rank4(op, op.inputs[0].shape)
    _rank4(op, op.inputs[2].shape)
    return [(dtype, TensorShape(_sizes_input(op, 1)))]


def _pool_window(op, paddings) -> tuple[windows.Window, list]:
    windows.check_choice(op.type, "padding", op.attrs["padding"], paddings)
    window = windows.window_of(op.attrs, op.type, dilations=False)
    ksize = op.attrs["ksize"]
    windows.check_length(op.type, "ksize", ksize)
    h, w = windows.spatial_axes(window.data_format)
    return window, [int(ksize[h]), int(ksize[w])]


def _pool_infer(op, paddings):
    dtype = op.inputs[-1].dtype.base_dtype
    check_dtype_allowed(op, dtype, CONV_TYPES)
    window, k_hw = _pool_window(op, paddings)
    batch, hw, depth = _layout(_rank4(op, op.inputs[0].shape), window.data_format)
    return dtype, _assemble(batch, windowed(op, window, hw, k_hw), depth, window.data_format)


def _max_pool_infer(op):
    return [_pool_infer(op, windows.PADDINGS)]


def _avg_pool_infer(op):
    return [_pool_infer(op, ("SAME", "VALID"))]


def _max_pool_grad_infer(op):
    """MaxPoolGrad(orig_input, orig_output, grad shaped like orig_output) has orig_input's
    shape; MaxPoolGradGrad (grad shaped like orig_input) has orig_output's."""
    dtype = _same_dtype(op, (0, 1, 2), ("orig_input", "orig_output", "grad"))
    _pool_window(op, windows.PADDINGS)
    x, y, grad = (TensorShape(_rank4(op, t.shape)) for t in op.inputs)
    out, like = (x, y) if op.type == "MaxPoolGrad" else (y, x)
    if not grad.is_compatible_with(like):
        raise shape_error(op, f"Shapes must be equal rank and compatible: {grad} vs {like}")
    return [(dtype, out)]


def _avg_pool_grad_infer(op):
    dtype = op.inputs[1].dtype.base_dtype
    check_dtype_allowed(op, dtype, CONV_TYPES)
    _pool_window(op, ("SAME", "VALID"))
    _rank4(op, op.inputs[1].shape)
    return [(dtype, TensorShape(_sizes_input(op, 0)))]


def _bias_add_infer(op):
    value, bias = op.inputs[0].shape, op.inputs[1].shape
    dtype = op.inputs[0].dtype.base_dtype
    if op.inputs[1].dtype.base_dtype is not dtype:
        raise TypeError(f"Input 'bias' of 'BiasAdd' Op has type "
                        f"{op.inputs[1].dtype.base_dtype.name} that does not match type "
                        f"{dtype.name} of argument 'value'.")
    data_format = op.attrs.get("data_format", "NHWC")
    windows.check_choice(op.type, "data_format", data_format, windows.DATA_FORMATS)
    least = 3 if data_format == "NCHW" else 2
    if value.ndims is not None and value.ndims < least:
        raise shape_error(op, f"Shape must be at least rank {least} but is rank {value.ndims}")
    if bias.ndims is not None and bias.ndims != 1:
        raise shape_error(op, f"Shape must be rank 1 but is rank {bias.ndims}")
    if value.ndims is None:
        return [(dtype, value)]
    dims = list(value.dims)
    axis = 1 if data_format == "NCHW" else -1
    dims[axis] = _merge_dim(op, dims[axis], bias[0] if bias.ndims else None)
    return [(dtype, TensorShape(dims))]


def _bias_add_grad_infer(op):
    grad = op.inputs[0].shape
    data_format = op.attrs.get("data_format", "NHWC")
    windows.check_choice(op.type, "data_format", data_format, windows.DATA_FORMATS)
    least = 3 if data_format == "NCHW" else 2
    if grad.ndims is not None and grad.ndims < least:
        raise shape_error(op, f"Shape must be at least rank {least} but is rank {grad.ndims}")
    channels = None if grad.ndims is None else grad[1 if data_format == "NCHW" else -1]
    return [(op.inputs[0].dtype.base_dtype, TensorShape([channels]))]


register_op("Conv2D", _conv2d_infer)
register_op("Conv2DBackpropInput", _backprop_input_infer)
register_op("Conv2DBackpropFilter", _backprop_filter_infer)
register_op("DepthwiseConv2dNative", _depthwise_infer)
register_op("DepthwiseConv2dNativeBackpropInput", _backprop_input_infer)
register_op("DepthwiseConv2dNativeBackpropFilter", _backprop_filter_infer)
register_op("MaxPool", _max_pool_infer)
register_op("MaxPoolGrad", _max_pool_grad_infer)
register_op("MaxPoolGradGrad", _max_pool_grad_infer)
register_op("AvgPool", _avg_pool_infer)
register_op("AvgPoolGrad", _avg_pool_grad_infer)
register_op("BiasAdd", _bias_add_infer)
register_op("BiasAddGrad", _bias_add_grad_infer)


# -- graph builders shared with the gradient rules ---------------------------------------

def window_attrs(op) -> dict:
    """The window attrs of a conv or pool op, to build its backprop op with."""
    keys = ("strides", "padding", "explicit_paddings", "data_format", "dilations", "ksize",
            "use_cudnn_on_gpu")
    return {k: op.attrs[k] for k in keys if k in op.attrs}


def create(op_type: str, inputs, attrs: dict, name: str | None = None):
    """One op of this family with T taken from its last float input."""
    dtype = inputs[-1].dtype.base_dtype
    return inputs[0].graph.create_op(op_type, list(inputs), {"T": dtype, **attrs},
                                     name=name or op_type).outputs[0]


def _conv_attrs(strides, padding, data_format, dilations, conv=True) -> dict:
    data_format = data_format or "NHWC"
    padding, explicit = windows.convert_padding(padding)
    attrs = {"strides": windows.normalize_sequence(strides, "strides", data_format),
             "padding": padding, "explicit_paddings": explicit, "data_format": data_format}
    if conv:
        attrs["dilations"] = windows.normalize_sequence(dilations, "dilations", data_format)
    return attrs


# -- tf.nn builders ----------------------------------------------------------------------

def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=(1, 1, 1, 1), name=None, filters=None):
    """tf.nn.conv2d: NHWC (default) or NCHW input, HWIO filter; SAME/VALID/explicit padding."""
    filter = filters if filter is None else filter  # noqa: A001
    x = convert_to_tensor(input, name="input")
    w = convert_to_tensor(filter, name="filter")
    attrs = _conv_attrs(strides, padding, data_format, dilations)
    attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
    with graph_of(x, w).as_default():
        return create("Conv2D", [x, w], attrs, name)


def _sizes(value, name: str):
    """A shape argument: tensors pass through, Python and numpy values become int32."""
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        return convert_to_tensor(value)
    return convert_to_tensor(np.asarray(value), dtype=dtypes.int32, name=name)


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None,  # noqa: A002
                          padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=(1, 1, 1, 1), name=None, filters=None):
    filter = filters if filter is None else filter  # noqa: A001
    g = graph_of(input_sizes, filter, out_backprop)
    with op_scope(g, name, "Conv2DBackpropInput") as scope:
        sizes = _sizes(input_sizes, "input_sizes")
        attrs = _conv_attrs(strides, padding, data_format, dilations)
        attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
        return create("Conv2DBackpropInput", [sizes, convert_to_tensor(filter),
                                              convert_to_tensor(out_backprop)], attrs, scope)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1),
                           name=None):
    g = graph_of(input, filter_sizes, out_backprop)
    with op_scope(g, name, "Conv2DBackpropFilter") as scope:
        sizes = _sizes(filter_sizes, "filter_sizes")
        attrs = _conv_attrs(strides, padding, data_format, dilations)
        attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
        return create("Conv2DBackpropFilter", [convert_to_tensor(input), sizes,
                                               convert_to_tensor(out_backprop)], attrs, scope)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """tf.nn.conv2d_transpose: the gradient of conv2d with respect to its input, as a layer;
    `filter` is [height, width, output_channels, in_channels]."""
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    g = graph_of(value, filter, output_shape)
    with op_scope(g, name, "conv2d_transpose") as scope:
        sizes = _sizes(output_shape, "input_sizes")
        attrs = _conv_attrs(strides, padding, data_format, dilations)
        attrs["use_cudnn_on_gpu"] = True
        return create("Conv2DBackpropInput", [sizes, convert_to_tensor(filter),
                                              convert_to_tensor(value)], attrs, scope)


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=(1, 1, 1, 1), name=None):
    x, w = convert_to_tensor(input), convert_to_tensor(filter)
    attrs = _conv_attrs(strides, padding, data_format, dilations)
    with graph_of(x, w).as_default():
        return create("DepthwiseConv2dNative", [x, w], attrs, name)


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """tf.nn.depthwise_conv2d: filter [height, width, in_channels, channel_multiplier]; the
    output has in_channels * channel_multiplier channels. `rate` dilates the filter."""
    rate = dilations if rate is None else rate
    data_format = data_format or "NHWC"
    rates = [1, 1] if rate is None else [int(r) for r in np.atleast_1d(rate)]
    if len(rates) == 1:
        rates = rates * 2
    if len(rates) != 2:
        raise ValueError(f"rate must be a list of 2 ints; got rate={rate}")
    if any(r < 1 for r in rates):
        raise ValueError(f"dilation_rate must be positive. Received: dilation_rate={rates}")
    strides_4 = windows.normalize_sequence(strides, "strides", data_format)
    spatial = [strides_4[i] for i in windows.spatial_axes(data_format)]
    if max(rates) > 1 and max(spatial) > 1:
        raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1; "
                         f"received: strides={list(strides)} and dilation_rate={rates}")
    g = graph_of(input, filter)
    with op_scope(g, name, "depthwise") as scope:
        x = convert_to_tensor(input, name="tensor_in")
        w = convert_to_tensor(filter, name="filter_in")
        attrs = _conv_attrs(strides_4, padding, data_format, rates)
        return create("DepthwiseConv2dNative", [x, w], attrs, scope)


def _pool(op_type, value, ksize, strides, padding, data_format, name, explicit_ok,
          default_name=None):
    data_format = data_format or "NHWC"
    x = convert_to_tensor(value, name="input")
    ksize = windows.normalize_sequence(ksize, "ksize", data_format)
    if any(k == 0 for k in ksize):
        raise ValueError(f"`ksize` cannot be zero. Received: ksize={ksize}")
    attrs = _conv_attrs(strides, padding, data_format, None, conv=False)
    attrs["ksize"] = ksize
    if not explicit_ok:
        if attrs["padding"] == "EXPLICIT":
            raise ValueError(f"{op_type} does not take explicit padding; use 'SAME' or "
                             "'VALID'.")
        del attrs["explicit_paddings"]
    with op_scope(graph_of(x), name, default_name or op_type) as scope:
        return create(op_type, [x], attrs, scope)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """tf.nn.max_pool: the window maximum; SAME padding never wins (it counts as -inf)."""
    return _pool("MaxPool", input if value is None else value, ksize, strides, padding,
                 data_format, name, explicit_ok=True)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """tf.nn.avg_pool: the window mean; SAME padding is left out of each window's count."""
    return _pool("AvgPool", input if value is None else value, ksize, strides, padding,
                 data_format, name, explicit_ok=False)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    return _pool("MaxPool", input, ksize, strides, padding, data_format, name,
                 explicit_ok=True, default_name="MaxPool2d")


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    return _pool("AvgPool", input, ksize, strides, padding, data_format, name,
                 explicit_ok=False, default_name="AvgPool2D")


def bias_add(value, bias, data_format=None, name=None):
    """tf.nn.bias_add: adds a 1-D bias along the channel axis (last for N...C, 1 for NC...)."""
    if data_format is not None:
        if data_format.startswith("NC"):
            data_format = "NCHW"
        elif data_format.startswith("N") and data_format.endswith("C"):
            data_format = "NHWC"
        else:
            raise ValueError("`data_format` must be of the form `N...C` or `NC...`. "
                             f"Received: data_format={data_format}")
    g = graph_of(value, bias)
    with op_scope(g, name, "BiasAdd") as scope:
        x = convert_to_tensor(value, name="input")
        b = convert_to_tensor(bias, dtype=x.dtype.base_dtype, name="bias")
        return g.create_op("BiasAdd", [x, b], {"T": x.dtype.base_dtype,
                                               "data_format": data_format or "NHWC"},
                           name=scope).outputs[0]
