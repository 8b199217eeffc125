"""Fixtures for the workbench tests: real run stores written with RunWriter in tmp_path
(the same builder the browser tests use), and the data module pointed at them."""

from __future__ import annotations

import pytest
import recorded_mlp

from workbench import data


@pytest.fixture
def recorded(tmp_path):
    runs = recorded_mlp.record_sample_runs(tmp_path / "logs")
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
    return recorded_mlp.write_damaged_runs(recorded.logdir)
