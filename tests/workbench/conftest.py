"""Fixtures for the workbench tests: real run stores written with RunWriter in tmp_path
(the same builder the browser tests use), and the data module pointed at them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from workbench import data


def _recorded_mlp():
    """tests/browser/recorded_mlp.py, loaded by path: test folders are not packages."""
    if "recorded_mlp" in sys.modules:
        return sys.modules["recorded_mlp"]
    path = Path(__file__).resolve().parents[1] / "browser" / "recorded_mlp.py"
    spec = importlib.util.spec_from_file_location("recorded_mlp", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["recorded_mlp"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def recorded(tmp_path):
    runs = _recorded_mlp().record_sample_runs(tmp_path / "logs")
    data.set_logdir(runs.logdir)
    yield runs
    data.set_logdir("runs")


@pytest.fixture
def empty_logdir(tmp_path):
    data.set_logdir(tmp_path)
    yield tmp_path
    data.set_logdir("runs")


def texts(component) -> str:
    """Every string in a Dash component tree, space-joined, for content assertions."""
    if component is None:
        return ""
    if isinstance(component, (str, int, float)):
        return str(component)
    if isinstance(component, (list, tuple)):
        return " ".join(texts(child) for child in component)
    return texts(getattr(component, "children", None))


@pytest.fixture
def text_of():
    return texts


@pytest.fixture
def damaged(recorded):
    """The sample runs plus two damaged ones (a missing graph side file, a bad scalar row)."""
    return _recorded_mlp().write_damaged_runs(recorded.logdir)
