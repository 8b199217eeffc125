"""ApplyAdam's scalar hyper-parameters: computed on the host in numpy when they sit in host
memory, as 0-d tensors otherwise (a CUDA device, or bfloat16, which numpy lacks). Both
paths must round as TF's float32 scalar arithmetic does and give the same update."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.kernels import training


class _Ref:
    """The kernel's view of a variable: read() is the live buffer."""

    def __init__(self, value: torch.Tensor):
        self.value = value

    def read(self) -> torch.Tensor:
        return self.value


class _Node:
    def __init__(self, nesterov: bool):
        self.attr = {"use_nesterov": nesterov}


def _hyper(step: int, dtype=torch.float32) -> list[torch.Tensor]:
    values = (0.9 ** step, 0.999 ** step, 0.01, 0.9, 0.999)
    return [torch.tensor(v, dtype=dtype) for v in values]


def _on_device(monkeypatch):
    """Makes the kernel take the path it takes for CUDA tensors."""
    monkeypatch.setattr(training, "_host_scalars", lambda *values: None)


@pytest.mark.parametrize("step", [1, 2, 7, 100, 1000])
def test_host_scalars_equal_float32_tensor_arithmetic(monkeypatch, step):
    host = training._adam_scalars(*_hyper(step))
    assert all(isinstance(s, float) for s in host)
    _on_device(monkeypatch)
    device = training._adam_scalars(*_hyper(step))
    assert [np.float32(s) for s in host] == [np.float32(s.item()) for s in device]


def test_host_scalars_are_float32_not_float64():
    alpha, _, _ = training._adam_scalars(*_hyper(3))
    b1p, b2p = np.float32(0.9 ** 3), np.float32(0.999 ** 3)
    want = np.float32(0.01) * np.sqrt(np.float32(1) - b2p) / (np.float32(1) - b1p)
    assert alpha == float(want)


def _two_steps(nesterov: bool, dtype=torch.float32) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    state = [_Ref(torch.rand(5, 3, generator=gen).to(dtype) + 0.5) for _ in range(3)]
    run = training.apply_adam(_Node(nesterov), None)
    for step in (1, 2):
        grad = (torch.rand(5, 3, generator=gen) - 0.5).to(dtype)
        run(*state, *_hyper(step, dtype), torch.tensor(1e-7, dtype=dtype), grad)
    return [s.value.float() for s in state]


@pytest.mark.parametrize("nesterov", [False, True])
def test_device_scalars_give_the_host_update(monkeypatch, nesterov):
    host = _two_steps(nesterov)
    _on_device(monkeypatch)
    device = _two_steps(nesterov)
    for h, d in zip(host, device):
        torch.testing.assert_close(d, h, rtol=1e-6, atol=1e-7)


def test_bfloat16_takes_the_tensor_path():
    assert training._host_scalars(*_hyper(1, torch.bfloat16)) is None
    for b, f in zip(_two_steps(False, torch.bfloat16), _two_steps(False)):
        torch.testing.assert_close(b, f, rtol=2e-2, atol=2e-2)
