"""Training kernels: the optimizers' ApplyXxx updates. Each updates the variable's buffer and
its slots' buffers in place (`slot.read()` is the live buffer), so every read that runs after
the update sees it, as in TensorFlow. The expressions follow TF's training_ops.cc functors term
by term, so float32 rounding matches closely."""

from __future__ import annotations

import numpy as np
import torch

from engine.kernels.registry import CPU_FLOAT, GPU_FLOAT, kernel
from engine.kernels.state import honour_use_locking

_TYPES = {"CPU": {"T": CPU_FLOAT}, "GPU": {"T": GPU_FLOAT}}


@kernel("ApplyMomentum", **_TYPES)
def apply_momentum(node, ctx):
    nesterov = bool(node.attr.get("use_nesterov", False))

    def run(var, accum, lr, grad, momentum):
        v, a = var.read(), accum.read()
        a.mul_(momentum).add_(grad)
        if nesterov:
            v.sub_(grad * lr + a * momentum * lr)
        else:
            v.sub_(lr * a)
        return var
    return honour_use_locking(node, run)


# Host dtypes whose scalar arithmetic numpy rounds as TF's Eigen scalars do (bfloat16 has none).
_NUMPY_SCALARS = {torch.float16: np.float16, torch.float32: np.float32,
                  torch.float64: np.float64}


def _host_scalars(*values: torch.Tensor):
    """The 0-d hyper-parameters as numpy scalars of their own dtype when all sit in host
    memory: numpy's scalar arithmetic costs far less than a torch call per term, and rounds
    as TF's scalar T arithmetic does. None when one is on a device (reading it would wait
    for the device) or has no numpy twin; the caller then keeps the 0-d tensors."""
    out = []
    for v in values:
        numpy_scalar = _NUMPY_SCALARS.get(v.dtype)
        if numpy_scalar is None or not v.is_cpu:
            return None
        out.append(numpy_scalar(v.item()))
    return out


def _adam_scalars(beta1_power, beta2_power, lr, beta1, beta2):
    """(alpha, 1 - beta1, 1 - beta2), each term as TF's functor rounds it: Python floats
    from the host (a value of the dtype is exact as a double, and torch passes a Python
    number to its kernels without a tensor of its own), else 0-d tensors on the device."""
    host = _host_scalars(beta1_power, beta2_power, lr, beta1, beta2)
    b1p, b2p, lr, b1, b2 = host or (beta1_power, beta2_power, lr, beta1, beta2)
    sqrt = np.sqrt if host else torch.sqrt
    scalars = (lr * sqrt(1 - b2p) / (1 - b1p), 1 - b1, 1 - b2)
    return [float(s) for s in scalars] if host else scalars


def _sub_ratio(w: torch.Tensor, numerator: torch.Tensor, alpha, denom: torch.Tensor) -> None:
    """w -= (numerator * alpha) / denom. A host alpha allows one fused addcdiv_, which
    rounds alpha * (numerator / denom) instead, within an ulp or two of TF; a device alpha
    is a tensor, which addcdiv_ does not take."""
    if isinstance(alpha, float):
        w.addcdiv_(numerator, denom, value=-alpha)
    else:
        w.sub_(numerator.mul(alpha).div_(denom))


@kernel("ApplyAdam", **_TYPES)
def apply_adam(node, ctx):
    """m += (g - m) * (1 - beta1) and v += (g^2 - v) * (1 - beta2) are in-place lerps: the
    same expression in one fused call each (torch may contract it to a fused multiply-add,
    and computes end - (end - m) * (1 - weight) for weights of 0.5 and more)."""
    nesterov = bool(node.attr.get("use_nesterov", False))

    def run(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
        w, m_, v_ = var.read(), m.read(), v.read()
        alpha, one_minus_beta1, one_minus_beta2 = _adam_scalars(
            beta1_power, beta2_power, lr, beta1, beta2)
        m_.lerp_(grad, one_minus_beta1)
        v_.lerp_(grad.square(), one_minus_beta2)
        denom = v_.sqrt().add_(epsilon)
        numerator = (grad * one_minus_beta1).add_(m_ * beta1) if nesterov else m_
        _sub_ratio(w, numerator, alpha, denom)
        return var
    return honour_use_locking(node, run)


@kernel("ApplyAdagrad", **_TYPES)
def apply_adagrad(node, ctx):
    update_slots = bool(node.attr.get("update_slots", True))

    def run(var, accum, lr, grad):
        a = accum.read()
        if update_slots:
            a.add_(grad.square())
        var.read().sub_(grad * lr * a.rsqrt())
        return var
    return honour_use_locking(node, run)


@kernel("ApplyRMSProp", **_TYPES)
def apply_rms_prop(node, ctx):
    def run(var, ms, mom, lr, rho, momentum, epsilon, grad):
        ms_, mom_ = ms.read(), mom.read()
        ms_.add_((grad.square() - ms_) * (1 - rho))
        mom_.mul_(momentum).add_((grad * lr) * (ms_ + epsilon).rsqrt())
        var.read().sub_(mom_)
        return var
    return honour_use_locking(node, run)


@kernel("ApplyCenteredRMSProp", **_TYPES)
def apply_centered_rms_prop(node, ctx):
    def run(var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
        mg_, ms_, mom_ = mg.read(), ms.read(), mom.read()
        ms_.add_((grad.square() - ms_) * (1 - rho))
        mg_.add_((grad - mg_) * (1 - rho))
        denom = (ms_ - mg_.square()) + epsilon
        mom_.mul_(momentum).add_((grad * lr) * denom.rsqrt())
        var.read().sub_(mom_)
        return var
    return honour_use_locking(node, run)


@kernel("ApplyAdadelta", **_TYPES)
def apply_adadelta(node, ctx):
    def run(var, accum, accum_update, lr, rho, epsilon, grad):
        a, u = accum.read(), accum_update.read()
        a.mul_(rho).add_(grad.square() * (1 - rho))
        update = (u + epsilon).sqrt() * (a + epsilon).rsqrt() * grad
        var.read().sub_(update * lr)
        u.mul_(rho).add_(update.square() * (1 - rho))
        return var
    return honour_use_locking(node, run)
