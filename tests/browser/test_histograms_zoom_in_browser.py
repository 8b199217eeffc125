"""Histograms in headless Chromium at 1280x800: in overlay mode, a zoom on the histogram and
another on its distribution (set as a drag sets them) survive a live refresh that adds a
step to both plots, and the mode stays overlay."""

from __future__ import annotations

import numpy as np
from browser_helpers import WAIT_S, open_page
from live_zoom import assert_zoom_kept, wait_for_points, write_on_thread, zoom
from selenium.webdriver.support.wait import WebDriverWait

from engine.record import RunWriter
from workbench.app import create_app

RUN = "live-histograms"
PLOTS = "#histograms-figures-div .js-plotly-plot"
HISTOGRAM = "#histograms-figures-div .histograms-row > div:nth-child(1) .js-plotly-plot"
DISTRIBUTION = "#histograms-figures-div .histograms-row > div:nth-child(2) .js-plotly-plot"
_STEP_NAMES = """
const plot = document.querySelector(arguments[0]);
if (!plot || !plot._fullData) { return null; }
return plot._fullData.map(trace => [trace.name, trace.fill]);
"""


def _steps(run: RunWriter, steps: range) -> None:
    rng = np.random.default_rng(steps.start)

    def job():
        for step in steps:
            run.histogram("w", rng.normal(step, 1.0, 300), step)
            run.scalar("loss", 1.0 / (step + 1), step)
        run.flush()
    write_on_thread(job)


def _names(duo) -> list:
    return [name for name, _ in duo.driver.execute_script(_STEP_NAMES, HISTOGRAM) or []]


def test_a_zoom_and_the_mode_survive_a_live_refresh(dash_duo, tmp_path):
    run = RunWriter(tmp_path, RUN)
    _steps(run, range(4))
    dash_duo.start_server(create_app(tmp_path))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, f"/histograms?run={RUN}&tag=w&mode=overlay")
    dash_duo.wait_for_contains_text("#histograms-live-banner-div", "● running: step 3")
    wait_for_points(dash_duo, DISTRIBUTION, 4)
    dash_duo.wait_for_element("#histograms-figures-div .colorbar")
    x_range, y_range = [0.5, 2.5], [0.0, 30.0]
    zoom(dash_duo, HISTOGRAM, x_range, y_range)
    steps_range, values_range = [1.0, 2.0], [-1.0, 4.0]
    zoom(dash_duo, DISTRIBUTION, steps_range, values_range, resize=True)

    _steps(run, range(4, 6))
    wait_for_points(dash_duo, DISTRIBUTION, 6)            # the refresh landed
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda _driver: "step 5" in _names(dash_duo), message="the histogram never refreshed")
    dash_duo.wait_for_contains_text("#histograms-live-banner-div", "● running: step 5")
    assert_zoom_kept(dash_duo, HISTOGRAM, x_range, y_range)
    assert_zoom_kept(dash_duo, DISTRIBUTION, steps_range, values_range)
    # Still overlay: lines coloured by step with the step colour bar, not offset ridges.
    drawn = dash_duo.driver.execute_script(_STEP_NAMES, HISTOGRAM)
    assert all(fill != "toself" for _, fill in drawn)
    assert dash_duo.find_element("#histograms-mode-radio input[value='overlay']").is_selected()
    dash_duo.wait_for_element("#histograms-figures-div .colorbar")
    assert len(dash_duo.find_elements(PLOTS)) == 2
    assert dash_duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")
    run.close()
    assert dash_duo.get_logs() == []
