"""Browser-test fixtures: recorded runs in a temp log directory and a dash_duo serving the
workbench over them. To test against other recordings (the real demo), override
`recorded_runs` with a fixture that returns a RecordedRuns for them."""

from __future__ import annotations

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
