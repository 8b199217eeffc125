"""Training kernels: the optimizers' ApplyXxx updates. Each updates the variable's buffer and
its slots' buffers in place (`slot.read()` is the live buffer), so every read that runs after
the update sees it, as in TensorFlow. The expressions follow TF's training_ops.cc functors term
by term, so float32 rounding matches closely."""

from __future__ import annotations

import torch

from engine.kernels.registry import CPU_FLOAT, GPU_FLOAT, kernel

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
    return run


@kernel("ApplyAdam", **_TYPES)
def apply_adam(node, ctx):
    nesterov = bool(node.attr.get("use_nesterov", False))

    def run(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
        w, m_, v_ = var.read(), m.read(), v.read()
        alpha = lr * torch.sqrt(1 - beta2_power) / (1 - beta1_power)
        m_.add_((grad - m_) * (1 - beta1))
        v_.add_((grad.square() - v_) * (1 - beta2))
        if nesterov:
            w.sub_(((grad * (1 - beta1) + m_ * beta1) * alpha) / (v_.sqrt() + epsilon))
        else:
            w.sub_((m_ * alpha) / (v_.sqrt() + epsilon))
        return var
    return run


@kernel("ApplyAdagrad", **_TYPES)
def apply_adagrad(node, ctx):
    update_slots = bool(node.attr.get("update_slots", True))

    def run(var, accum, lr, grad):
        a = accum.read()
        if update_slots:
            a.add_(grad.square())
        var.read().sub_(grad * lr * a.rsqrt())
        return var
    return run


@kernel("ApplyRMSProp", **_TYPES)
def apply_rms_prop(node, ctx):
    def run(var, ms, mom, lr, rho, momentum, epsilon, grad):
        ms_, mom_ = ms.read(), mom.read()
        ms_.add_((grad.square() - ms_) * (1 - rho))
        mom_.mul_(momentum).add_((grad * lr) * (ms_ + epsilon).rsqrt())
        var.read().sub_(mom_)
        return var
    return run


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
    return run


@kernel("ApplyAdadelta", **_TYPES)
def apply_adadelta(node, ctx):
    def run(var, accum, accum_update, lr, rho, epsilon, grad):
        a, u = accum.read(), accum_update.read()
        a.mul_(rho).add_(grad.square() * (1 - rho))
        update = (u + epsilon).sqrt() * (a + epsilon).rsqrt() * grad
        var.read().sub_(update * lr)
        u.mul_(rho).add_(update.square() * (1 - rho))
        return var
    return run
