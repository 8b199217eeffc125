"""Convolution, pooling and bias kernels on torch.nn.functional: Conv2D, DepthwiseConv2dNative,
MaxPool, AvgPool, BiasAdd and their backprop ops. TF's layouts (NHWC or NCHW data, HWIO
filters) are permuted views around torch's NCHW calls; SAME padding is TF's (the odd pixel
after), applied with F.pad where torch's symmetric padding cannot express it."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from engine import errors
from engine.kernels.registry import CPU_FLOAT, CPU_NUMERIC, GPU_FLOAT, GPU_REAL, kernel
from engine.ops import windows

_FLOATS = {"CPU": {"T": CPU_FLOAT}, "GPU": {"T": GPU_FLOAT}}


# -- layout and padding helpers ----------------------------------------------------------

def _to_nchw(x: torch.Tensor, window: windows.Window) -> torch.Tensor:
    return x if window.nchw else x.permute(0, 3, 1, 2)


def _from_nchw(y: torch.Tensor, window: windows.Window) -> torch.Tensor:
    return y if window.nchw else y.permute(0, 2, 3, 1)


def _dims(window: windows.Window, in_hw, k_hw) -> list:
    """[(out, before, after)] per spatial dim, as TF computes them at run time."""
    try:
        return window.output_and_pads(list(in_hw), list(k_hw))
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, f"Computed output size would be "
                                                      f"negative: {e}") from None


def _pad(x: torch.Tensor, dims, value: float, limit=None):
    """(x, torch padding): torch's own symmetric padding where it can express TF's, else an
    explicit F.pad (value fills the border) and no padding in the torch call."""
    (_, top, bottom), (_, left, right) = dims
    if top == bottom and left == right and (limit is None or max(top, left) <= limit):
        return x, (top, left)
    return F.pad(x, (left, right, top, bottom), value=value), (0, 0)


def _crop(x: torch.Tensor, dims, hw) -> torch.Tensor:
    (_, top, _), (_, left, _) = dims
    return x[:, :, top:top + hw[0], left:left + hw[1]]


def _fake(like: torch.Tensor, shape) -> torch.Tensor:
    """A tensor of `shape` with no storage of its own: convolution_backward reads only the
    shape of the operand whose gradient is not asked for."""
    return like.new_empty(1).expand(*shape)


def _fake_input(like: torch.Tensor, shape, window: windows.Window) -> torch.Tensor:
    """The input operand (NCHW `shape`) for an input gradient: uninitialised, laid out as a
    real input in the window's data format. torch picks the layout it computes in from the
    input; a stride-0 fake reads as NCHW, so an NHWC step would convert dy and the gradient
    (~30% slower)."""
    n, c, h, w = shape
    return _to_nchw(like.new_empty((n, c, h, w) if window.nchw else (n, h, w, c)), window)


def _unimplemented(node, message: str):
    return errors.UnimplementedError(node, None, f"{message} (node '{node.name}')")


def _check_conv_attrs(node, window: windows.Window) -> None:
    fmt = window.data_format
    if windows.non_spatial(node.attr["strides"], fmt) != (1, 1):
        raise _unimplemented(node, "Current implementation does not yet support strides in "
                                   "the batch and depth dimensions.")
    if windows.non_spatial(node.attr.get("dilations", [1] * 4), fmt) != (1, 1):
        raise _unimplemented(node, "Current implementation does not yet support dilations "
                                   "in the batch and depth dimensions.")


def _conv_window(node) -> windows.Window:
    window = windows.window_of(node.attr, node.op)
    _check_conv_attrs(node, window)
    return window


def _full_sizes(sizes: torch.Tensor, dy_nchw: torch.Tensor, depth: int,
                window: windows.Window) -> list[int]:
    """input_sizes as NCHW [n, c, h, w]; TF also accepts just the two spatial sizes."""
    values = [int(v) for v in sizes.reshape(-1).tolist()]
    if len(values) == 2:
        return [dy_nchw.shape[0], depth, *values]
    if window.nchw:
        return values
    return [values[0], values[3], values[1], values[2]]


def _check_backprop_dims(dims, dy_nchw, in_hw, k_hw, window) -> None:
    for i in range(2):
        if dims[i][0] != dy_nchw.shape[2 + i]:
            raise errors.InvalidArgumentError(
                None, None, f"Conv2DCustomBackpropInput: Size of out_backprop doesn't match "
                            f"computed: actual = {dy_nchw.shape[2 + i]}, computed = "
                            f"{dims[i][0]} spatial_dim: {i + 1} input: {in_hw[i]} filter: "
                            f"{k_hw[i]} output: {dy_nchw.shape[2 + i]} stride: "
                            f"{window.strides[i]} dilation: {window.dilations[i]}")


def _groups(depth: int, filter_depth: int) -> int:
    """Conv2D's groups: TF runs a grouped convolution when the input depth is a multiple of
    the filter's."""
    if filter_depth == 0 or depth % filter_depth:
        raise errors.InvalidArgumentError(None, None, f"input depth must be evenly divisible "
                                                      f"by filter depth: {depth} vs "
                                                      f"{filter_depth}")
    return depth // filter_depth


# -- filters: TF's layouts as torch's [out, in/groups, kh, kw] ---------------------------

def _conv_weight(w: torch.Tensor) -> torch.Tensor:
    return w.permute(3, 2, 0, 1)


def _depthwise_weight(w: torch.Tensor) -> torch.Tensor:
    """[kh, kw, c, m] -> [c*m, 1, kh, kw]; output channel c*m + j, as in TF."""
    kh, kw, c, m = w.shape
    return w.reshape(kh, kw, c * m).permute(2, 0, 1).unsqueeze(1)


def _conv_forward(window, weight_of, groups_of):
    def run(x, w):
        xt = _to_nchw(x, window)
        groups = groups_of(xt.shape[1], w.shape[2])
        dims = _dims(window, xt.shape[2:], w.shape[:2])
        xt, padding = _pad(xt, dims, 0.0)
        y = F.conv2d(xt, weight_of(w), None, window.strides, padding, window.dilations, groups)
        return _from_nchw(y, window)
    return run


def _conv_backprop_input(window, weight_of, groups_of):
    def run(sizes, w, dy):
        dyt = _to_nchw(dy, window)
        shape = _full_sizes(sizes, dyt, w.shape[2], window)
        in_hw = shape[2:]
        dims = _dims(window, in_hw, w.shape[:2])
        _check_backprop_dims(dims, dyt, in_hw, w.shape[:2], window)
        groups = groups_of(shape[1], w.shape[2])
        (_, top, bottom), (_, left, right) = dims
        symmetric = top == bottom and left == right
        padded = shape if symmetric else [*shape[:2], in_hw[0] + top + bottom,
                                          in_hw[1] + left + right]
        padding = (top, left) if symmetric else (0, 0)
        grad = torch.ops.aten.convolution_backward(
            dyt, _fake_input(dyt, padded, window), weight_of(w), None, window.strides, padding,
            window.dilations, False, [0, 0], groups, [True, False, False])[0]
        if not symmetric:
            grad = _crop(grad, dims, in_hw)
        return _from_nchw(grad, window).contiguous()
    return run


def _conv_backprop_filter(window, torch_filter_shape, to_tf_filter, groups_of):
    def run(x, sizes, dy):
        xt, dyt = _to_nchw(x, window), _to_nchw(dy, window)
        tf_shape = [int(v) for v in sizes.reshape(-1).tolist()]
        groups = groups_of(xt.shape[1], tf_shape[2])
        dims = _dims(window, xt.shape[2:], tf_shape[:2])
        xt, padding = _pad(xt, dims, 0.0)
        grad = torch.ops.aten.convolution_backward(
            dyt, xt, _fake(dyt, torch_filter_shape(tf_shape)), None, window.strides, padding,
            window.dilations, False, [0, 0], groups, [False, True, False])[1]
        return to_tf_filter(grad, tf_shape).contiguous()
    return run


def _depthwise_groups(depth: int, filter_depth: int) -> int:
    if filter_depth != depth:
        raise errors.InvalidArgumentError(None, None, f"input and filter must have the same "
                                                      f"depth: {depth} vs {filter_depth}")
    return depth


@kernel("Conv2D", **_FLOATS)
def conv2d(node, ctx):
    return _conv_forward(_conv_window(node), _conv_weight, _groups)


@kernel("Conv2DBackpropInput", **_FLOATS, host_memory=("input_sizes",))
def conv2d_backprop_input(node, ctx):
    return _conv_backprop_input(_conv_window(node), _conv_weight, _groups)


@kernel("Conv2DBackpropFilter", **_FLOATS, host_memory=("filter_sizes",))
def conv2d_backprop_filter(node, ctx):
    return _conv_backprop_filter(
        _conv_window(node), lambda s: [s[3], s[2], s[0], s[1]],
        lambda g, s: g.permute(2, 3, 1, 0), _groups)


@kernel("DepthwiseConv2dNative", **_FLOATS)
def depthwise_conv2d(node, ctx):
    return _conv_forward(_conv_window(node), _depthwise_weight, _depthwise_groups)


@kernel("DepthwiseConv2dNativeBackpropInput", **_FLOATS, host_memory=("input_sizes",))
def depthwise_conv2d_backprop_input(node, ctx):
    return _conv_backprop_input(_conv_window(node), _depthwise_weight, _depthwise_groups)


@kernel("DepthwiseConv2dNativeBackpropFilter", **_FLOATS, host_memory=("filter_sizes",))
def depthwise_conv2d_backprop_filter(node, ctx):
    return _conv_backprop_filter(
        _conv_window(node), lambda s: [s[2] * s[3], 1, s[0], s[1]],
        lambda g, s: g.permute(2, 3, 0, 1).reshape(s), _depthwise_groups)


# -- pooling -----------------------------------------------------------------------------

def _pool_window(node) -> tuple[windows.Window, list[int]]:
    window = windows.window_of(node.attr, node.op, dilations=False)
    fmt = window.data_format
    ksize, strides = node.attr["ksize"], node.attr["strides"]
    if windows.non_spatial(ksize, fmt)[0] != 1 or windows.non_spatial(strides, fmt)[0] != 1:
        raise _unimplemented(node, "Pooling is not yet supported on the batch dimension.")
    if windows.non_spatial(ksize, fmt)[1] != 1 or windows.non_spatial(strides, fmt)[1] != 1:
        raise _unimplemented(node, "Non-spatial pooling is not yet supported. Volunteers? :)")
    return window, [int(ksize[i]) for i in windows.spatial_axes(fmt)]


def _max_indices(xt, window, k):
    """The window maxima and their flat positions in the -inf padded input (TF and torch
    both keep the first maximum of a window in row-major order)."""
    dims = _dims(window, xt.shape[2:], k)
    (_, top, bottom), (_, left, right) = dims
    padded = xt if top == bottom == left == right == 0 else \
        F.pad(xt, (left, right, top, bottom), value=float("-inf"))
    y, idx = torch.ops.aten.max_pool2d_with_indices(padded, k, list(window.strides), [0, 0],
                                                    [1, 1], False)
    return padded, y, idx, dims


@kernel("MaxPool", **_FLOATS)
def max_pool(node, ctx):
    window, k = _pool_window(node)

    def run(x):
        xt = _to_nchw(x, window)
        dims = _dims(window, xt.shape[2:], k)
        xt, padding = _pad(xt, dims, float("-inf"), limit=min(k) // 2)
        return _from_nchw(F.max_pool2d(xt, k, window.strides, padding), window)
    return run


@kernel("MaxPoolGrad", **_FLOATS)
def max_pool_grad(node, ctx):
    window, k = _pool_window(node)

    def run(orig_input, orig_output, grad):
        xt = _to_nchw(orig_input, window)
        padded, _, idx, dims = _max_indices(xt, window, k)
        gx = torch.ops.aten.max_pool2d_with_indices_backward(
            _to_nchw(grad, window), padded, k, list(window.strides), [0, 0], [1, 1], False, idx)
        return _from_nchw(_crop(gx, dims, xt.shape[2:]), window).contiguous()
    return run


@kernel("MaxPoolGradGrad", **_FLOATS)
def max_pool_grad_grad(node, ctx):
    """The gradient of MaxPoolGrad with respect to its `grad` input: each output takes the
    incoming value at its window's maximum."""
    window, k = _pool_window(node)

    def run(orig_input, orig_output, grad):
        xt = _to_nchw(orig_input, window)
        padded, y, idx, dims = _max_indices(xt, window, k)
        (_, top, bottom), (_, left, right) = dims
        gt = F.pad(_to_nchw(grad, window), (left, right, top, bottom))
        picked = gt.flatten(2).gather(2, idx.flatten(2)).reshape(y.shape)
        return _from_nchw(picked, window).contiguous()
    return run


def _window_counts(like, dims, k, strides) -> torch.Tensor:
    """[1, 1, out_h, out_w]: how many real (unpadded) inputs each window covers."""
    (_, top, bottom), (_, left, right) = dims
    ones = like.new_ones((1, 1, like.shape[2], like.shape[3]))
    ones = F.pad(ones, (left, right, top, bottom))
    return F.avg_pool2d(ones, k, strides, divisor_override=1)


@kernel("AvgPool", **_FLOATS)
def avg_pool(node, ctx):
    window, k = _pool_window(node)

    def run(x):
        xt = _to_nchw(x, window)
        dims = _dims(window, xt.shape[2:], k)
        (_, top, bottom), (_, left, right) = dims
        if top == bottom and left == right and max(top, left) <= min(k) // 2:
            y = F.avg_pool2d(xt, k, window.strides, (top, left), count_include_pad=False)
        else:
            sums = F.avg_pool2d(F.pad(xt, (left, right, top, bottom)), k, window.strides,
                                divisor_override=1)
            y = sums / _window_counts(xt, dims, k, window.strides)
        return _from_nchw(y, window)
    return run


@kernel("AvgPoolGrad", **_FLOATS, host_memory=("orig_input_shape",))
def avg_pool_grad(node, ctx):
    """Each output's gradient, divided by its window's count, spread over its window: a
    transposed convolution with a ones filter, one channel at a time."""
    window, k = _pool_window(node)

    def run(orig_input_shape, grad):
        gt = _to_nchw(grad, window)
        values = [int(v) for v in orig_input_shape.reshape(-1).tolist()]
        n, c, h, w = values if window.nchw else [values[0], values[3], values[1], values[2]]
        dims = _dims(window, (h, w), k)
        (_, top, bottom), (_, left, right) = dims
        counts = _window_counts(gt.new_empty((1, 1, h, w)), dims, k, window.strides)
        scaled = (gt / counts).reshape(n * c, 1, *gt.shape[2:])
        spread = F.conv_transpose2d(scaled, gt.new_ones((1, 1, *k)), stride=window.strides)
        rest_h = h + top + bottom - spread.shape[2]
        rest_w = w + left + right - spread.shape[3]
        spread = F.pad(spread, (0, rest_w, 0, rest_h))
        gx = _crop(spread, dims, (h, w)).reshape(n, c, h, w)
        return _from_nchw(gx, window).contiguous()
    return run


# -- bias --------------------------------------------------------------------------------

@kernel("BiasAdd", CPU={"T": CPU_NUMERIC}, GPU={"T": GPU_REAL})
def bias_add(node, ctx):
    if node.attr.get("data_format", "NHWC") != "NCHW":
        return torch.add

    def run(x, bias):
        return x + bias.reshape(-1, *([1] * (x.dim() - 2)))
    return run


@kernel("BiasAddGrad", CPU={"T": CPU_NUMERIC}, GPU={"T": GPU_REAL})
def bias_add_grad(node, ctx):
    nchw = node.attr.get("data_format", "NHWC") == "NCHW"

    def run(dy):
        keep = 1 if nchw else dy.dim() - 1
        dims = [d for d in range(dy.dim()) if d != keep]
        return torch.sum(dy, dim=dims, dtype=dy.dtype)
    return run
