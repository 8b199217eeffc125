"""Live follow in headless Chromium at 1280x800: while a writer thread records steps, the
Scalars curve gains the new points in its own plot and the Images slider moves to the newest
image, without a reload; the banner says the run is running, and once the writer closes it
says when it finished. The console stays free of errors. Waits with wait_for_*."""

from __future__ import annotations

import threading

import numpy as np
from browser_helpers import WAIT_S, open_page
from selenium.webdriver.support.wait import WebDriverWait

from engine.record import RunWriter
from workbench.app import create_app

RUN = "live-run"
BANNER = "#{page}-live-banner-div"

# Points of the first drawn trace of the loss curve.
_POINTS = """
const plot = document.querySelector('#scalars-curves-div .js-plotly-plot');
if (!plot || !plot._fullData || !plot._fullData.length) { return -1; }
return plot._fullData[0].x.length;
"""
# A mark on the plot's element: still there after a refresh when the plot was updated in place.
_MARK = "document.querySelector('#scalars-curves-div .js-plotly-plot').__liveMark = 1"
_MARKED = "return document.querySelector('#scalars-curves-div .js-plotly-plot').__liveMark"


def pixels(step: int) -> np.ndarray:
    image = np.zeros((8, 8), np.uint8)
    image[:, step % 8] = 255
    return image


def write_steps(run: RunWriter, steps: range) -> None:
    """Records steps on a thread of its own, as a training loop beside the server would."""
    def train():
        for step in steps:
            run.scalar("loss", 1.0 / (step + 1), step)
            if step % 2 == 0:
                run.image("digits", pixels(step), step)
        run.flush()
    writer = threading.Thread(target=train, name="training")
    writer.start()
    writer.join(WAIT_S)


def _fits(duo) -> bool:
    return duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")


def _points(duo, count: int) -> None:
    WebDriverWait(duo.driver, WAIT_S).until(
        lambda driver: driver.execute_script(_POINTS) == count,
        message=f"the loss curve never showed {count} points")


def test_scalars_and_images_follow_a_run_being_written(dash_duo, tmp_path):
    run = RunWriter(tmp_path, RUN)
    write_steps(run, range(5))
    dash_duo.start_server(create_app(tmp_path))
    dash_duo.driver.set_window_size(1280, 800)

    open_page(dash_duo, f"/scalars?run={RUN}&tag=loss")
    _points(dash_duo, 5)
    dash_duo.wait_for_contains_text(BANNER.format(page="scalars"), "● running: step 4")
    dash_duo.driver.execute_script(_MARK)
    write_steps(run, range(5, 9))
    _points(dash_duo, 9)
    dash_duo.wait_for_contains_text(BANNER.format(page="scalars"), "● running: step 8")
    # The new points were set on the same plot (plotly's uirevision keeps a zoom there), not
    # on a plot built anew.
    assert dash_duo.driver.execute_script(_MARKED) == 1, "the refresh rebuilt the plot"
    assert _fits(dash_duo), "the scalars page scrolls sideways at 1280x800"

    open_page(dash_duo, f"/images?run={RUN}&tag=digits")
    dash_duo.wait_for_contains_text("#images-caption-text", f"{RUN} · digits · step 8")
    write_steps(run, range(9, 11))
    dash_duo.wait_for_contains_text("#images-caption-text", f"{RUN} · digits · step 10")
    run.close()
    dash_duo.wait_for_contains_text(BANNER.format(page="images"), "finished at ")
    dash_duo.wait_for_contains_text(BANNER.format(page="images"), "after 11 steps")
    dash_duo.wait_for_element(f"{BANNER.format(page='images')} .live-finished")
    assert _fits(dash_duo), "the images page scrolls sideways at 1280x800"

    open_page(dash_duo, f"/scalars?run={RUN}&tag=loss")
    _points(dash_duo, 11)
    dash_duo.wait_for_contains_text(BANNER.format(page="scalars"), "finished at ")
    assert dash_duo.get_logs() == []
