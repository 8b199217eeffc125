"""Scalars in headless Chromium: a zoom (a relayout of the x range, as a drag makes) fetches
the zoomed range at full resolution, even with a resize just after it; the address keeps it
(`from`, `to`) and opens zoomed; a double click restores the whole view and drops it from
the address. No console errors."""

from __future__ import annotations

import math

from browser_helpers import WAIT_S, open_page
from live_zoom import wait_for_points
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.support.wait import WebDriverWait

from engine.record import RunWriter
from workbench.app import create_app

POINTS = 20_000
PLOT = "#scalars-curves-div .js-plotly-plot"
# The bold (smoothed) trace's x values, and the x axis' range.
_BOLD_X = """
const plot = document.querySelector(arguments[0]);
if (!plot || !plot._fullData) { return null; }
const bold = plot._fullData.find(trace => trace.name === arguments[1]);
return bold ? [Array.from(bold.x), plot._fullLayout.xaxis.range] : null;
"""
# The page listens to a plot's relayouts (assets/live.js) once plotly has built its frame.
_LISTENING = """
const plot = document.querySelector(arguments[0]);
return Boolean(plot && plot.__relayouts);
"""
# A zoom and at once a resize (plotly's autosize relayout), as a loaded machine or a user
# resizing the window sends them: the resize must not cancel the zoom's fetch.
_ZOOM_THEN_RESIZE = """
const plot = document.querySelector(arguments[0]);
Plotly.relayout(plot, {'xaxis.range': arguments[1]}).then(
    () => Plotly.relayout(plot, {autosize: true}));
return true;
"""


def _inside(duo, low, high) -> int:
    found = duo.driver.execute_script(_BOLD_X, PLOT, "long")
    return -1 if found is None else sum(low <= x <= high for x in found[0])


def _wait(duo, what, message):
    return WebDriverWait(duo.driver, WAIT_S).until(lambda _driver: what(), message=message)


def _long_run(duo, logdir) -> None:
    with RunWriter(logdir, "long") as run:
        for step in range(POINTS):
            run.scalar("loss", math.sin(step / 50.0) + step / POINTS, step,
                       wall_time=1.79e9 + step)
    duo.start_server(create_app(logdir))
    duo.driver.set_window_size(1280, 800)


def _zoom_fetches(duo) -> int:
    """Zooms to steps 5,000-6,000 (a resize at once after) and checks every point of the
    range came; returns how many the whole view drew there."""
    wait_for_points(duo, PLOT, 1000)
    _wait(duo, lambda: duo.driver.execute_script(_LISTENING, PLOT),
          "the plot never listened to relayouts")
    coarse = _inside(duo, 5_000, 6_000)
    assert 0 < coarse < 100                     # 1,200 points over 20,000 steps
    duo.driver.execute_script(_ZOOM_THEN_RESIZE, PLOT, [5_000, 6_000])
    # Every one of the range's 1,001 points (and a neighbour each side), fetched.
    _wait(duo, lambda: _inside(duo, 5_000, 6_000) == 1_001, "the zoom never fetched")
    x, x_range = duo.driver.execute_script(_BOLD_X, PLOT, "long")
    assert (x[0], x[-1]) == (4_999, 6_001) and x_range == [5_000, 6_000]
    return coarse


def test_a_zoom_fetches_the_range_and_a_double_click_restores_the_view(dash_duo, tmp_path):
    _long_run(dash_duo, tmp_path)
    open_page(dash_duo, "/scalars?run=long&tag=loss&smoothing=0")
    coarse = _zoom_fetches(dash_duo)
    _wait(dash_duo, lambda: "from=5000&to=6000" in dash_duo.driver.current_url,
          "the address never took the zoom")
    assert dash_duo.driver.current_url.endswith(
        "/scalars?run=long&tag=loss&smoothing=0&from=5000&to=6000")

    # A double click on the plot (plotly's autorange) draws the whole series again.
    drag = dash_duo.driver.find_element("css selector", f"{PLOT} .nsewdrag")
    ActionChains(dash_duo.driver).double_click(drag).perform()
    _wait(dash_duo, lambda: _inside(dash_duo, 5_000, 6_000) == coarse,
          "the double click never restored the view")
    x, _ = dash_duo.driver.execute_script(_BOLD_X, PLOT, "long")
    assert (x[0], x[-1]) == (0, POINTS - 1)
    _wait(dash_duo, lambda: "from=" not in dash_duo.driver.current_url,
          "the address kept the zoom")

    # The address opens zoomed.
    open_page(dash_duo, "/scalars?run=long&tag=loss&smoothing=0&from=12000.5&to=12500")
    _wait(dash_duo, lambda: _inside(dash_duo, 12_000.5, 12_500) == 500,
          "the address's zoom was not drawn")
    assert dash_duo.driver.execute_script(_BOLD_X, PLOT, "long")[1] == [12_000.5, 12_500]
    assert dash_duo.get_logs() == []


def test_a_zoom_fetches_on_scalars_reached_inside_the_app(dash_duo, tmp_path):
    """The page's browser side (assets/live.js, assets/scalars.js) runs once per page load:
    Scalars reached from the navigation bar, without a load, fetches zooms too."""
    _long_run(dash_duo, tmp_path)
    open_page(dash_duo, "/")
    dash_duo.wait_for_element("#app-nav-scalars-link").click()
    _zoom_fetches(dash_duo)
    _wait(dash_duo, lambda: "from=5000&to=6000" in dash_duo.driver.current_url,
          "the address never took the zoom")
    assert dash_duo.get_logs() == []
