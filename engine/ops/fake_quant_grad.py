"""Gradient rules of the fake quantization ops (TF's array_grad.py): each emits its *Gradient
op, straight-through inside the nudged range; the Vars forms also give min and max the sums
of the gradients that fell below and above it. The *Gradient ops have no gradient of their own."""

from __future__ import annotations

from engine.ops import fake_quant_ops as F


def _bits(op) -> dict:
    return {"num_bits": op.attrs["num_bits"], "narrow_range": op.attrs["narrow_range"]}


def _args_grad(op, grad):
    return [F.fake_quant_with_min_max_args_gradient(grad, op.inputs[0], min=op.attrs["min"],
                                                    max=op.attrs["max"], **_bits(op))]


def _vars_grad(op, grad):
    return list(F.fake_quant_with_min_max_vars_gradient(grad, *op.inputs, **_bits(op)))


def _per_channel_grad(op, grad):
    return list(F.fake_quant_with_min_max_vars_per_channel_gradient(grad, *op.inputs,
                                                                     **_bits(op)))


GRADIENTS: dict = {F.ARGS: _args_grad, F.VARS: _vars_grad, F.PER_CHANNEL: _per_channel_grad}
NOT_DIFFERENTIABLE: tuple = ()
