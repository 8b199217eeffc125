"""Fixtures and hooks for every test folder: tests marked `cuda` need a CUDA GPU and are
skipped, with the reason, where torch sees none."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config, items) -> None:
    marked = [item for item in items if item.get_closest_marker("cuda") is not None]
    if not marked:
        return
    import torch  # only when some collected test needs it

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in marked:
        item.add_marker(skip)
