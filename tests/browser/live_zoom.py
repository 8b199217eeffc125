"""Browser-test helpers for state kept across a live refresh: zoom a plotly plot as a drag
does (Plotly.relayout on the plot, which fires the same relayout event dcc.Graph records),
read its axes' ranges and count a trace's points."""

from __future__ import annotations

import threading

from browser_helpers import WAIT_S
from selenium.webdriver.support.wait import WebDriverWait

_ZOOM = """
const plot = document.querySelector(arguments[0]);
const zoomed = Plotly.relayout(plot, {'xaxis.range': arguments[1], 'yaxis.range': arguments[2]});
if (arguments[3]) { zoomed.then(() => Plotly.relayout(plot, {autosize: true})); }
return true;
"""
_RANGES = """
const plot = document.querySelector(arguments[0]);
if (!plot || !plot._fullLayout || !plot._fullLayout.xaxis) { return null; }
const fl = plot._fullLayout;
return [fl.xaxis.range, fl.yaxis.range, fl.xaxis.autorange, fl.yaxis.autorange];
"""
_POINTS = """
const plot = document.querySelector(arguments[0]);
if (!plot || !plot._fullData || !plot._fullData.length) { return -1; }
return Math.max(...plot._fullData.map(trace => (trace.x || []).length));
"""


def zoom(duo, plot: str, x_range: list, y_range: list, resize: bool = False) -> None:
    """A zoom as a drag makes it; with `resize`, a resize's relayout ({autosize: true}) at
    once after it, as a window resize or a loaded machine's late layout sends it: dcc.Graph
    then reports only the resize, and the zoom must be kept all the same."""
    duo.driver.execute_script(_ZOOM, plot, x_range, y_range, resize)
    WebDriverWait(duo.driver, WAIT_S).until(
        lambda driver: (got := driver.execute_script(_RANGES, plot)) is not None
        and _near(got[0], x_range) and _near(got[1], y_range),
        message=f"{plot} did not zoom")


def ranges(duo, plot: str) -> list:
    return duo.driver.execute_script(_RANGES, plot)


def wait_for_points(duo, plot: str, count: int) -> None:
    WebDriverWait(duo.driver, WAIT_S).until(
        lambda driver: driver.execute_script(_POINTS, plot) >= count,
        message=f"{plot} never showed {count} points")


def _near(got, wanted) -> bool:
    return isinstance(got, list) and len(got) == 2 and all(
        abs(float(a) - float(b)) < 1e-6 * max(1.0, abs(float(b))) for a, b in zip(got, wanted))


def assert_zoom_kept(duo, plot: str, x_range: list, y_range: list) -> None:
    got = ranges(duo, plot)
    assert got is not None and _near(got[0], x_range) and _near(got[1], y_range), (
        f"{plot} lost its zoom: {got}")
    assert got[2] is False and got[3] is False


def write_on_thread(job) -> None:
    """Runs a writer's job on a thread of its own, as a training loop beside the server."""
    thread = threading.Thread(target=job, name="training")
    thread.start()
    thread.join(WAIT_S)
