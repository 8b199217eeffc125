"""Neural-network kernels: Relu, ReluGrad, Softmax, LogSoftmax and
SoftmaxCrossEntropyWithLogits (loss and backprop in one pass, as TF's kernel does)."""

from __future__ import annotations

import torch

from engine.kernels import conv  # noqa: F401  (convolution, pooling and bias kernels)
from engine.kernels.registry import CPU_FLOAT, GPU_FLOAT, kernel

_FLOATS = {"CPU": {"T": CPU_FLOAT}, "GPU": {"T": GPU_FLOAT}}


@kernel("Relu", **_FLOATS)
def relu(node, ctx):
    return torch.relu


@kernel("ReluGrad", **_FLOATS)
def relu_grad(node, ctx):
    def run(dy, y):
        return dy * (y > 0).to(dy.dtype)
    return run


@kernel("Softmax", **_FLOATS)
def softmax(node, ctx):
    def run(x):
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
