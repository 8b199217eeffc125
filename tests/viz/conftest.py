"""Fixtures for the viz tests."""

from __future__ import annotations

import pytest
from viz_records import mlp_records


@pytest.fixture
def mlp():
    return mlp_records()
