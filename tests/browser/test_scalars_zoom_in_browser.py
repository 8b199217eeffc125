"""Scalars in headless Chromium: a zoom (x and y, set as a drag sets it, a resize just after
it) survives a live refresh that adds points to the zoomed plot. Its own file, so a rework
of the Scalars page keeps it."""

from __future__ import annotations

from browser_helpers import open_page
from live_zoom import assert_zoom_kept, wait_for_points, write_on_thread, zoom

from engine.record import RunWriter
from workbench.app import create_app

RUN = "live-zoom"
PLOT = "#scalars-curves-div .js-plotly-plot"


def _losses(run: RunWriter, steps: range) -> None:
    def job():
        for step in steps:
            run.scalar("loss", 1.0 / (step + 1), step)
        run.flush()
    write_on_thread(job)


def test_a_zoom_on_scalars_survives_a_live_refresh(dash_duo, tmp_path):
    run = RunWriter(tmp_path, RUN)
    _losses(run, range(6))
    dash_duo.start_server(create_app(tmp_path))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, f"/scalars?run={RUN}&tag=loss")
    wait_for_points(dash_duo, PLOT, 6)
    dash_duo.wait_for_contains_text("#scalars-live-banner-div", "● running: step 5")
    x_range, y_range = [1.0, 3.0], [0.2, 0.6]
    zoom(dash_duo, PLOT, x_range, y_range, resize=True)
    _losses(run, range(6, 12))
    wait_for_points(dash_duo, PLOT, 12)          # the refresh landed
    dash_duo.wait_for_contains_text("#scalars-live-banner-div", "● running: step 11")
    assert_zoom_kept(dash_duo, PLOT, x_range, y_range)
    run.close()
    assert dash_duo.get_logs() == []
