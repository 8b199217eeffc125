"""Neural-network kernels: the activations and their gradient helpers (TF's formulas, e.g.
Softplus's overflow thresholds), Softmax, LogSoftmax, the softmax cross entropies (loss and
backprop in one pass, as TF's kernels do), L2Loss, and fused batch normalization with its
gradient. Convolution, pooling and bias kernels live in engine/kernels/conv.py."""

from __future__ import annotations

import math

import torch

from engine import errors
from engine.kernels import conv  # noqa: F401  (convolution, pooling and bias kernels)
from engine.kernels.registry import CPU_FLOAT, GPU_FLOAT, INDEX_TYPES, kernel

_FLOATS = {"CPU": {"T": CPU_FLOAT}, "GPU": {"T": GPU_FLOAT}}
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _fixed(fn):
    return lambda node, ctx: fn


# -- activations and their gradients -----------------------------------------------------

def _relu6(x):
    return torch.clamp(x, 0, 6)


def _relu6_grad(dy, x):
    return dy * ((x > 0) & (x < 6)).to(dy.dtype)


def _elu(x):
    return torch.where(x < 0, torch.expm1(x), x)


def _elu_grad(dy, y):
    return torch.where(y < 0, dy * (y + 1), dy)


def _selu(x):
    return SELU_SCALE * torch.where(x < 0, SELU_ALPHA * torch.expm1(x), x)


def _selu_grad(dy, y):
    return torch.where(y < 0, dy * (y + SELU_SCALE * SELU_ALPHA), dy * SELU_SCALE)


def _softplus(x):
    """TF's kernel: x above -threshold, exp(x) below threshold, log1p(exp(x)) between, with
    threshold = log(machine epsilon) + 2."""
    threshold = math.log(torch.finfo(x.dtype).eps) + 2
    e = torch.exp(x)
    return torch.where(x > -threshold, x, torch.where(x < threshold, e, torch.log1p(e)))


def _softplus_grad(dy, x):
    return dy * torch.sigmoid(x)


def _softsign(x):
    return x / (1 + torch.abs(x))


def _softsign_grad(dy, x):
    return dy / torch.square(1 + torch.abs(x))


def _relu_grad(dy, y):
    """dy where y > 0, else 0, in one fused torch kernel."""
    return torch.ops.aten.threshold_backward(dy, y, 0)


_ELEMENTWISE = {
    "Relu": torch.relu, "ReluGrad": _relu_grad, "Relu6": _relu6, "Relu6Grad": _relu6_grad,
    "Elu": _elu, "EluGrad": _elu_grad, "Selu": _selu, "SeluGrad": _selu_grad,
    "Softplus": _softplus, "SoftplusGrad": _softplus_grad, "Softsign": _softsign,
    "SoftsignGrad": _softsign_grad,
}
for _op, _fn in _ELEMENTWISE.items():
    kernel(_op, **_FLOATS)(_fixed(_fn))


@kernel("LeakyRelu", **_FLOATS)
def leaky_relu(node, ctx):
    alpha = float(node.attr.get("alpha", 0.2))

    def run(x):
        return torch.where(x > 0, x, x * alpha)
    return run


@kernel("LeakyReluGrad", **_FLOATS)
def leaky_relu_grad(node, ctx):
    alpha = float(node.attr.get("alpha", 0.2))

    def run(dy, x):
        return torch.where(x > 0, dy, dy * alpha)
    return run


# -- softmax and cross entropies ---------------------------------------------------------

# torch's CPU softmax leaves its vectorized kernel for a last dim under 16: 256x10 took 110 us
# against 16 us for 256x16 (one thread; TF's formula below: 73 us, and 600 us against 1700
# at 4096x10). From this many rows on (below, torch's call costs less) TF's own formula
# (SoftmaxEigenImpl) in four torch calls is faster.
_SMALL_SOFTMAX_DIM, _SMALL_SOFTMAX_ROWS = 16, 64


def softmax_small_last_dim(x: torch.Tensor) -> torch.Tensor:
    """TF's Softmax: exp(x - max) times the reciprocal of its sum, along the last dim."""
    e = (x - x.amax(-1, keepdim=True)).exp_()
    return e.mul_(e.sum(-1, keepdim=True).reciprocal_())


@kernel("Softmax", **_FLOATS)
def softmax(node, ctx):
    def run(x):
        last = x.shape[-1] if x.dim() else 0
        if 0 < last < _SMALL_SOFTMAX_DIM and x.numel() >= last * _SMALL_SOFTMAX_ROWS and \
                x.is_cpu:
            return softmax_small_last_dim(x)
        return torch.softmax(x, dim=-1)
    return run


@kernel("LogSoftmax", **_FLOATS)
def log_softmax(node, ctx):
    def run(x):
        return torch.log_softmax(x, dim=-1)
    return run


@kernel("SoftmaxCrossEntropyWithLogits", **_FLOATS)
def softmax_cross_entropy(node, ctx):
    def run(logits, labels):
        log_probs = torch.log_softmax(logits, dim=-1)
        loss = -(labels * log_probs).sum(dim=-1)
        backprop = torch.exp(log_probs) - labels
        return loss, backprop
    return run


def _check_labels(labels: torch.Tensor, classes: int) -> None:
    """TF's CPU check (the GPU kernel gives NaN rows instead, as TF's does)."""
    if labels.numel() == 0:
        return
    low, high = torch.aminmax(labels)
    if int(low) < 0 or int(high) >= classes:
        bad = (labels < 0) | (labels >= classes)
        first = int(labels[bad][0])
        shown = " ".join(str(v) for v in labels.reshape(-1)[:100].tolist())
        raise errors.InvalidArgumentError(
            None, None, f"Received a label value of {first} which is outside the valid range "
                        f"of [0, {classes}).  Label values: {shown}")


def _sparse_xent(logits, labels, check: bool):
    classes = logits.shape[1]
    if check:
        _check_labels(labels, classes)
    log_probs = torch.log_softmax(logits, dim=-1)
    safe = labels.clamp(0, max(classes - 1, 0)).long()
    loss = -log_probs.gather(1, safe.unsqueeze(1)).squeeze(1)
    backprop = torch.exp(log_probs)
    backprop.scatter_add_(1, safe.unsqueeze(1), -torch.ones_like(loss).unsqueeze(1))
    if not check:
        bad = ((labels < 0) | (labels >= classes)).unsqueeze(1)
        loss = torch.where(bad.squeeze(1), torch.nan, loss)
        backprop = torch.where(bad, torch.nan, backprop)
    return loss, backprop


@kernel("SparseSoftmaxCrossEntropyWithLogits", CPU={"T": CPU_FLOAT, "Tlabels": INDEX_TYPES},
        GPU={"T": GPU_FLOAT, "Tlabels": INDEX_TYPES})
def sparse_softmax_cross_entropy(node, ctx):
    check = ctx.device.device_type == "CPU"

    def run(logits, labels):
        return _sparse_xent(logits, labels, check)
    return run


@kernel("L2Loss", **_FLOATS)
def l2_loss(node, ctx):
    def run(x):
        return torch.sum(x * x) * 0.5
    return run


# -- fused batch normalization -----------------------------------------------------------

def _per_channel(nchw: bool, ndim: int):
    """(reduction dims, view shape for a [C] vector) of an NHWC or NCHW tensor."""
    if nchw:
        return [0] + list(range(2, ndim)), (1, -1) + (1,) * (ndim - 2)
    return list(range(ndim - 1)), (-1,)


def _batch_norm(node, ctx):
    eps = float(node.attr.get("epsilon", 1e-4))
    factor = float(node.attr.get("exponential_avg_factor", 1.0))
    training = bool(node.attr.get("is_training", True))
    nchw = node.attr.get("data_format", "NHWC") == "NCHW"
    v3 = node.op == "FusedBatchNormV3"

    def run(x, scale, offset, mean, variance):
        dims, view = _per_channel(nchw, x.dim())
        xf = x.to(scale.dtype)
        if training:
            batch_mean = xf.mean(dims)
            batch_var = xf.var(dims, correction=0)
            count = xf.numel() // max(scale.numel(), 1)
            unbiased = batch_var * (count / max(count - 1, 1))
            if factor != 1.0:
                running_mean = (1 - factor) * mean + factor * batch_mean
                running_var = (1 - factor) * variance + factor * unbiased
            else:
                running_mean, running_var = batch_mean, unbiased
            saved = (batch_mean, batch_var)
        else:
            batch_mean, batch_var = mean, variance
            running_mean, running_var, saved = mean, variance, (mean, variance)
        inv = torch.rsqrt(batch_var + eps) * scale
        y = (xf - batch_mean.reshape(view)) * inv.reshape(view) + offset.reshape(view)
        outs = (y.to(x.dtype), running_mean, running_var, *saved)
        return outs + (scale.new_zeros(()),) if v3 else outs
    return run


def _batch_norm_grad(node, ctx):
    eps = float(node.attr.get("epsilon", 1e-4))
    training = bool(node.attr.get("is_training", True))
    nchw = node.attr.get("data_format", "NHWC") == "NCHW"

    def run(dy, x, scale, mean, variance, *unused_reserve):
        dims, view = _per_channel(nchw, x.dim())
        xf, dyf = x.to(scale.dtype), dy.to(scale.dtype)
        inv = torch.rsqrt(variance + eps)
        xhat = (xf - mean.reshape(view)) * inv.reshape(view)
        offset_grad = dyf.sum(dims)
        scale_grad = (dyf * xhat).sum(dims)
        if training:
            count = xf.numel() // max(scale.numel(), 1)
            centered = dyf - (offset_grad / count).reshape(view) - \
                xhat * (scale_grad / count).reshape(view)
            dx = centered * (scale * inv).reshape(view)
        else:
            dx = dyf * (scale * inv).reshape(view)
        empty = scale.new_zeros((0,))
        return dx.to(x.dtype), scale_grad, offset_grad, empty, empty
    return run


_BN_TYPES = {"CPU": {"T": CPU_FLOAT}, "GPU": {"T": GPU_FLOAT}}
for _op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
    kernel(_op, **_BN_TYPES)(_batch_norm)
    kernel(_op.replace("Norm", "NormGrad"), **_BN_TYPES)(_batch_norm_grad)
