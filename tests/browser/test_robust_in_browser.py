"""Damaged and unknown runs in headless Chromium: each page shows what is wrong, in words,
where its content would be (never a spinner or "Loading…" that stays), and the browser
console stays free of errors (no request failed). Waits with wait_for_* only."""

from __future__ import annotations

import pytest
from browser_helpers import open_page, wait_for_graph
from recorded_mlp import write_damaged_runs

from workbench.app import create_app


@pytest.fixture
def damaged_runs(recorded_runs):
    return write_damaged_runs(recorded_runs.logdir)


@pytest.fixture
def robust(dash_duo, damaged_runs):
    dash_duo.start_server(create_app(damaged_runs.logdir))
    return dash_duo


def test_runs_page_lists_a_damaged_run_with_the_reason(robust, damaged_runs):
    robust.wait_for_contains_text(".run-damaged .status", "damaged")
    robust.wait_for_contains_text(
        ".run-damaged .run-damage",
        f"{damaged_runs.missing_graph}/blobs/{damaged_runs.missing_file}: side file missing")
    assert robust.get_logs() == []


def test_graph_page_of_a_damaged_run_says_so(robust, damaged_runs):
    open_page(robust, f"/graph?run={damaged_runs.missing_graph}")
    robust.wait_for_contains_text("#graph-dag-graph", "the run is damaged")
    robust.wait_for_contains_text("#graph-dag-graph", damaged_runs.missing_file)
    assert "Loading" not in robust.find_element("#graph-dag-graph").text
    assert robust.get_logs() == []


def test_graph_page_of_an_unknown_run_says_so_and_shows_a_healthy_one(robust, damaged_runs):
    open_page(robust, "/graph?run=no-such-run")
    robust.wait_for_contains_text("#graph-notice-text",
                                  "No readable run named 'no-such-run' in the log directory; "
                                  f"showing {damaged_runs.bad_scalars}.")
    wait_for_graph(robust)
    assert robust.get_logs() == []


def test_scalars_page_of_a_damaged_run_says_so(robust, damaged_runs):
    open_page(robust, f"/scalars?run={damaged_runs.bad_scalars}")
    robust.wait_for_contains_text("#scalars-curves-div",
                                  f"{damaged_runs.bad_scalars}: Cannot show this: the run is "
                                  "damaged")
    assert robust.get_logs() == []


def test_graph_page_asked_for_no_run_opens_a_healthy_one(robust, damaged_runs):
    open_page(robust, "/graph")                   # the newest run is the damaged one
    robust.wait_for_contains_text("#graph-run-dropdown", damaged_runs.bad_scalars)
    wait_for_graph(robust)
    assert robust.get_logs() == []
