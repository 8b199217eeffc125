"""Browser-test fixtures: recorded runs in a temp log directory and a dash_duo serving the
workbench over them. To test against other recordings (the real demo), override
`recorded_runs` with a fixture that returns a RecordedRuns for them."""

from __future__ import annotations

import shutil

import pytest
from recorded_mlp import RecordedRuns, record_sample_runs

from workbench.app import create_app


@pytest.fixture
def recorded_runs(tmp_path) -> RecordedRuns:
    return record_sample_runs(tmp_path / "logs")


@pytest.fixture
def workbench(dash_duo, recorded_runs):
    """dash_duo with the workbench started on the recorded runs."""
    dash_duo.start_server(create_app(recorded_runs.logdir))
    return dash_duo


def pytest_collection_modifyitems(config, items):
    """Without Chromium's driver there is no browser to drive: say so instead of failing.
    (`make test` installs Debian's chromium and chromium-driver when it runs as root.)"""
    if shutil.which("chromedriver"):
        return
    skip = pytest.mark.skip(reason="chromedriver not found: install Debian's chromium and "
                                   "chromium-driver to run the browser tests")
    for item in items:
        if "tests/browser" in str(item.fspath):
            item.add_marker(skip)
