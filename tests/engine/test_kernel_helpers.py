"""Small kernel helpers that the step's hot path relies on: host_tensor (shapes and indices
in host memory) and SelectV2's broadcast check."""

from __future__ import annotations

import pytest
import torch

from engine import dtypes
from engine.kernels.array import host_tensor
from engine.kernels.array_index import _broadcastable


@pytest.mark.parametrize("dtype", [dtypes.int32, dtypes.int64])
@pytest.mark.parametrize("values", [[64, 8, 8, 16], [], 5])
def test_host_tensor_is_a_host_tensor_of_the_dtype(values, dtype):
    got = host_tensor(values, dtype)
    assert got.device.type == "cpu" and got.dtype == dtype.torch_dtype
    assert torch.equal(got, torch.tensor(values, dtype=dtype.torch_dtype))


def test_host_tensor_takes_a_torch_size():
    assert host_tensor(torch.zeros(2, 3).shape, dtypes.int32).tolist() == [2, 3]


@pytest.mark.parametrize("shapes, ok", [
    (([], [3], [2, 3]), True),
    (([2, 1], [1, 3], [2, 3]), True),
    (([4, 1, 5], [3, 1], [1]), True),
    (([4], [4, 5], [4, 5]), False),
    (([2, 3], [3, 3], [3]), False),
])
def test_broadcastable_follows_numpy(shapes, ok):
    assert _broadcastable(*(torch.Size(s) for s in shapes)) is ok
