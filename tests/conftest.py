"""Fixtures and hooks for every test folder: tests marked `cuda` need a CUDA GPU and are
skipped, with the reason, where torch sees none; the run recorders in tests/browser
(recorded_mlp, recorded_replay, tensorboard_logdir) import from every folder's tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Test folders are not packages: the recorders the browser tests share with the workbench and
# viz tests are imported by name from here.
sys.path.insert(0, str(Path(__file__).resolve().parent / "browser"))


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
