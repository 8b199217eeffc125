"""Fixtures shared by the engine tests."""

from __future__ import annotations

import pytest
from kernel_harness import OpRunner


@pytest.fixture(params=["cpu", "gpu"])
def runner(request):
    r = OpRunner(request.param)
    yield r
    r.close()
