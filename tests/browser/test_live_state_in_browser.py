"""State a live refresh keeps, in headless Chromium at 1280x800, while writer threads record
more: a zoom on Compare's curves (x and y, set as a drag sets it), the Timeline's zoom when
the page follows a new traced step, an earlier step chosen on the Images slider, and the
Alerts table's sort, page, selection and filter. Each waits for the refresh to land (the new
points, step, slider stop or rows) before it checks."""

from __future__ import annotations

import numpy as np
from browser_helpers import WAIT_S, open_page
from live_zoom import assert_zoom_kept, wait_for_points, write_on_thread, zoom
from recorded_mlp import DEVICES, mlp_graph
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait

from engine.record import RunWriter
from engine.record.schema import AlertRecord, OpStatRecord, StepRecord
from workbench.app import create_app

COMPARE_PLOT = "#compare-curves-div .js-plotly-plot"
TIMELINE_PLOT = "#timeline-bars-graph .js-plotly-plot"


def _start(duo, logdir) -> None:
    duo.start_server(create_app(logdir))
    duo.driver.set_window_size(1280, 800)


def _losses(runs: list[RunWriter], steps: range) -> None:
    def job():
        for run in runs:
            for step in steps:
                run.scalar("loss", (2.0 if run.name == "a" else 3.0) / (step + 1), step)
            run.flush()
    write_on_thread(job)


def test_a_zoom_on_compare_curves_survives_a_live_refresh(dash_duo, tmp_path):
    record, placements = mlp_graph()
    runs = [RunWriter(tmp_path, name) for name in ("a", "b")]
    for run in runs:
        run.devices(DEVICES)
        run.graph(record)
        run.placements(placements)
    _losses(runs, range(5))
    _start(dash_duo, tmp_path)
    open_page(dash_duo, "/compare?a=a&b=b")
    wait_for_points(dash_duo, COMPARE_PLOT, 5)
    dash_duo.wait_for_contains_text("#compare-live-banner-div", "running")
    x_range, y_range = [1.0, 3.0], [0.4, 1.2]
    zoom(dash_duo, COMPARE_PLOT, x_range, y_range, resize=True)
    dash_duo.driver.execute_script(
        f"document.querySelector('{COMPARE_PLOT}').__kept = 1")
    _losses(runs, range(5, 10))
    wait_for_points(dash_duo, COMPARE_PLOT, 10)
    assert_zoom_kept(dash_duo, COMPARE_PLOT, x_range, y_range)
    assert dash_duo.driver.execute_script(
        f"return document.querySelector('{COMPARE_PLOT}').__kept") == 1, "plot rebuilt"
    for run in runs:
        run.close()
    assert dash_duo.get_logs() == []


def _traced(run: RunWriter, steps: range) -> None:
    def job():
        for step in steps:
            stats = [OpStatRecord(step, f"op{i}", "MatMul", "/device:CPU:0", 10.0 * i,
                                  10.0 * i + 8.0, 64) for i in range(10)]
            run.step(StepRecord(step, 1, 1.7e9 + step, 100.0, len(stats), 0), stats, [])
        run.flush()
    write_on_thread(job)


def test_the_timeline_keeps_its_zoom_when_it_follows_a_new_traced_step(dash_duo, tmp_path):
    run = RunWriter(tmp_path, "traced")
    _traced(run, range(2))
    _start(dash_duo, tmp_path)
    open_page(dash_duo, "/timeline?run=traced")
    dash_duo.wait_for_contains_text("#timeline-summary-text", "step 1:")
    wait_for_points(dash_duo, TIMELINE_PLOT, 1)
    x_range, y_range = [20.0, 60.0], [-0.4, 0.4]
    zoom(dash_duo, TIMELINE_PLOT, x_range, y_range, resize=True)
    _traced(run, range(2, 3))
    dash_duo.wait_for_contains_text("#timeline-summary-text", "step 2:")   # followed
    assert_zoom_kept(dash_duo, TIMELINE_PLOT, x_range, y_range)
    run.close()
    assert dash_duo.get_logs() == []


def _digits(step: int) -> np.ndarray:
    image = np.zeros((8, 8), np.uint8)
    image[:, step % 8] = 255
    return image


def test_an_earlier_image_step_stays_chosen_across_a_live_refresh(dash_duo, tmp_path):
    run = RunWriter(tmp_path, "pictures")

    def images(steps):
        def job():
            for step in steps:
                run.image("digits", _digits(step), step)
            run.flush()
        write_on_thread(job)
    images((0, 2, 4))
    _start(dash_duo, tmp_path)
    open_page(dash_duo, "/images?run=pictures&tag=digits&step=2")
    dash_duo.wait_for_contains_text("#images-caption-text", "pictures · digits · step 2")
    images((6, 8))
    dash_duo.wait_for_contains_text("#images-step-slider", "8")       # the new stops landed
    dash_duo.wait_for_contains_text("#images-live-banner-div", "running")
    assert "step 2 ·" in dash_duo.find_element("#images-caption-text").text
    run.close()
    assert dash_duo.get_logs() == []


_NODES = ("return [...document.querySelectorAll('.alerts-table td[data-dash-column=node]')]"
          ".map(cell => cell.textContent.trim());")
_PAGES = "const n = document.querySelector('.alerts-table .page-number .last-page'); " \
         "return n ? n.textContent.trim() : null;"
_CHECKED = ("return [...document.querySelectorAll('.alerts-table tbody tr')].filter(row => {"
            "const box = row.querySelector('td.dash-select-cell input');"
            "return box && box.checked; }).map(row => row.querySelector("
            "'td[data-dash-column=node]').textContent.trim());")


def _alarms(run: RunWriter, steps: range) -> None:
    def job():
        for step in steps:
            run.alert(AlertRecord(step, f"n{step:02d}", "Log", "/device:CPU:0", "nan",
                                  f"NaN at step {step}", wall_time=1.7e9 + step))
        run.flush()
    write_on_thread(job)


def _until(duo, condition, said: str):
    return WebDriverWait(duo.driver, WAIT_S).until(condition, message=said)


def test_the_alerts_tables_sort_page_filter_and_selection_survive_a_live_refresh(
        dash_duo, tmp_path):
    run = RunWriter(tmp_path, "alarms")
    _alarms(run, range(25))
    _start(dash_duo, tmp_path)
    open_page(dash_duo, "/alerts?run=alarms")
    _until(dash_duo, lambda d: d.execute_script(_PAGES) == "2", "the table never had 2 pages")
    sort = ".alerts-table th[data-dash-column=node] .column-header--sort"
    for _ in range(3):                  # to descending order, whichever way it starts
        if dash_duo.driver.execute_script(_NODES)[:1] == ["n24"]:
            break
        dash_duo.find_element(sort).click()
    _until(dash_duo, lambda d: d.execute_script(_NODES)[:1] == ["n24"], "no descending sort")
    dash_duo.find_element(".alerts-table .next-page").click()
    _until(dash_duo, lambda d: d.execute_script(_NODES) == ["n04", "n03", "n02", "n01", "n00"],
           "page 2 does not hold the last five")
    row = dash_duo.driver.find_elements(By.CSS_SELECTOR, ".alerts-table tbody tr")
    picked = next(r for r in row if "n03" in r.text)
    picked.find_element(By.CSS_SELECTOR, "td.dash-select-cell input").click()
    dash_duo.wait_for_contains_text("#alerts-details-div", "alarms · n03 (Log) at step 3")

    _alarms(run, range(25, 45))
    _until(dash_duo, lambda d: d.execute_script(_PAGES) == "3", "the new alerts never came")
    # Still sorted descending and on page 2 (now n24..n05); n03, still selected, moved on.
    assert dash_duo.driver.execute_script(_NODES) == [f"n{n:02d}" for n in range(24, 4, -1)]
    assert "alarms · n03 (Log) at step 3" in dash_duo.find_element("#alerts-details-div").text
    dash_duo.find_element(".alerts-table .next-page").click()
    _until(dash_duo, lambda d: d.execute_script(_CHECKED) == ["n03"],
           "the selected alert is not checked where it moved")

    box = dash_duo.find_element(".alerts-table th[data-dash-column=node] input")
    box.send_keys("n4", Keys.ENTER)
    _until(dash_duo, lambda d: d.execute_script(_NODES) == [f"n{n}" for n in range(44, 39, -1)],
           "the filter did not apply")
    _alarms(run, range(45, 50))
    _until(dash_duo, lambda d: d.execute_script(_NODES) == [f"n{n}" for n in range(49, 39, -1)],
           "the filtered, sorted rows did not take the new alerts")
    assert box.get_attribute("value") == "n4"
    run.close()
    assert dash_duo.get_logs() == []
