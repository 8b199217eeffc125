"""The Timeline page in headless Chromium at 1280x800: a traced step of a Session on CPU:0 and
two virtual GPUs draws its bars in three lanes with transfer arrows, fits the window, exports
its Chrome trace, and a click on a bar opens that node in the Graph page's inspector; the
console stays free of errors. Waits with wait_for_* only."""

from __future__ import annotations

import numpy as np
import pytest
from browser_helpers import WAIT_S, open_page
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.support.wait import WebDriverWait

import engine as tf
from workbench.app import create_app

RUN = "timeline-browser"
TRACED_STEP = 2

# The widest bar (the easiest to hit): [bar trace index, point index, graph node, duration].
# _fullData: the figure's numbers arrive base64-packed, plotly decodes them there.
_WIDEST_BAR = """
const plot = document.querySelector('#timeline-bars-graph .js-plotly-plot');
if (!plot || !plot._fullData) { return null; }
let best = null, bars = -1;
for (const trace of plot._fullData) {
    if (trace.type !== 'bar') { continue; }
    bars += 1;
    for (let p = 0; p < trace.x.length; p++) {
        if (best === null || trace.x[p] > best[3]) {
            best = [bars, p, trace.customdata[p][7], trace.x[p]];
        }
    }
}
return best;
"""


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("timeline-browser")
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [64, 64], name="x")
        with tf.device("/gpu:0"), tf.name_scope("layer1"):
            h = tf.matmul(x, x, name="MatMul")
        with tf.device("/gpu:1"), tf.name_scope("layer2"):
            y = tf.tanh(tf.matmul(h, x, name="MatMul"), name="Tanh")
        with tf.device("/cpu:0"):
            out = tf.reduce_sum(y, name="out")
    full = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    config = tf.ConfigProto(virtual_gpus=2, trace_every_n_steps=0)
    with tf.Session(graph=g, config=config, logdir=str(root), run_name=RUN) as sess:
        for step in (1, 2, 3):
            sess.run(out, {x: np.eye(64, dtype=np.float32)},
                     options=full if step == TRACED_STEP else None)
    return root


def test_timeline_draws_lanes_exports_and_a_click_opens_the_graph(dash_duo, logdir):
    dash_duo.start_server(create_app(logdir))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, f"/timeline?run={RUN}&step={TRACED_STEP}")
    dash_duo.wait_for_element("#timeline-bars-graph .barlayer .point")
    for lane in ("CPU:0", "GPU:0 (virtual)", "GPU:1 (virtual)"):
        dash_duo.wait_for_contains_text("#timeline-bars-graph .legend", lane)
    dash_duo.wait_for_contains_text("#timeline-bars-graph .legend", "transfer")
    dash_duo.wait_for_contains_text("#timeline-summary-text", "3 devices, 4 transfers")
    dash_duo.wait_for_contains_text("#timeline-step-dropdown", f"step {TRACED_STEP}")
    fits = dash_duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")
    assert fits, "the timeline page scrolls sideways at 1280x800"

    dash_duo.find_element("#timeline-download-button").click()
    dash_duo.wait_for_contains_text("#timeline-download-text", f"{RUN}-step{TRACED_STEP}")

    trace, point, node, _ = WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: driver.execute_script(_WIDEST_BAR), message="no bar in the figure")
    bar = dash_duo.find_element(f"#timeline-bars-graph .barlayer .trace:nth-of-type"
                                f"({trace + 1}) .point:nth-of-type({point + 1})")
    ActionChains(dash_duo.driver).move_to_element(bar).click().perform()
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: "/graph?" in driver.current_url, message="the click did not navigate")
    assert f"step={TRACED_STEP}" in dash_duo.driver.current_url
    dash_duo.wait_for_contains_text(".inspector-title", node)
    dash_duo.wait_for_contains_text("#graph-inspector-div", "ran once")
    assert dash_duo.get_logs() == []


_RANGE = """
const plot = document.querySelector('#timeline-bars-graph .js-plotly-plot');
if (!plot || !plot._fullLayout || !plot._fullData || !plot._fullData.length) { return null; }
return plot._fullLayout.xaxis.range.slice();
"""


# The plot's drag area (viewport pixels: left, top, width, height), scrolled into view.
_DRAG_AREA = """
const area = document.querySelector('#timeline-bars-graph .nsewdrag');
area.scrollIntoView({block: 'center'});
const box = area.getBoundingClientRect();
return [box.left, box.top, box.width, box.height];
"""


def _address(driver) -> dict:
    from urllib.parse import parse_qs, urlparse
    return {key: values[0] for key, values in parse_qs(urlparse(driver.current_url).query,
                                                       keep_blank_values=True).items()}


def _window_shown(duo, low: float, high: float) -> list:
    return WebDriverWait(duo.driver, WAIT_S).until(
        lambda driver: (shown := driver.execute_script(_RANGE)) and abs(shown[0] - low) < 0.05
        and abs(shown[1] - high) < 0.05 and shown,
        message=f"the time axis never showed {low}-{high}")


def test_the_address_keeps_the_zoomed_time_window(dash_duo, logdir):
    """`from=&to=` zooms the first drawing; a drag to zoom writes the new window into the
    address, and a reload shows it again; a bad window is told and the whole step drawn."""
    dash_duo.start_server(create_app(logdir))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, f"/timeline?run={RUN}&step={TRACED_STEP}&from=5&to=60.5")
    dash_duo.wait_for_element("#timeline-bars-graph .barlayer .point")
    _window_shown(dash_duo, 5, 60.5)
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: _address(driver) == {"run": RUN, "step": str(TRACED_STEP), "from": "5",
                                            "to": "60.5"},
        message="the address lost its window")

    # A drag across the middle of the plot zooms in (plotly's drag mode), in the address.
    left, top, width, height = dash_duo.driver.execute_script(_DRAG_AREA)
    drag = ActionChains(dash_duo.driver)
    pointer = drag.w3c_actions.pointer_action
    pointer.move_to_location(int(left + 0.3 * width), int(top + height / 2))
    pointer.pointer_down()
    pointer.move_to_location(int(left + 0.4 * width), int(top + height / 2))
    pointer.move_to_location(int(left + 0.5 * width), int(top + height / 2))
    pointer.pointer_up()
    drag.perform()
    zoomed = WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: (shown := driver.execute_script(_RANGE)) and shown[1] - shown[0] < 40
        and shown, message="the drag did not zoom")
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: abs(float(_address(driver).get("from", -1)) - zoomed[0]) < 0.06
        and abs(float(_address(driver).get("to", -1)) - zoomed[1]) < 0.06,
        message=f"the address did not follow the zoom to {zoomed}")
    written = _address(dash_duo.driver)
    dash_duo.driver.refresh()
    dash_duo.wait_for_element("#timeline-bars-graph .barlayer .point")
    _window_shown(dash_duo, float(written["from"]), float(written["to"]))
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: _address(driver) == written, message="the reload lost the window")

    # A double click (autorange) shows the whole step again: no window in the address.
    left, top, width, height = dash_duo.driver.execute_script(_DRAG_AREA)
    reset = ActionChains(dash_duo.driver)
    reset.w3c_actions.pointer_action.move_to_location(int(left + width / 2), int(top + height / 2))
    reset.w3c_actions.pointer_action.double_click()
    reset.perform()
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: "from" not in _address(driver) and "to" not in _address(driver),
        message="the address kept a window after the zoom was reset")
    assert dash_duo.get_logs() == []

    open_page(dash_duo, f"/timeline?run={RUN}&from=nan&to=1e400")
    dash_duo.wait_for_contains_text(
        "#timeline-window-notice-text",
        "The window's start (from, in microseconds) must be a number, got 'nan'; showing the "
        "whole step.")
    dash_duo.wait_for_element("#timeline-bars-graph .barlayer .point")
    WebDriverWait(dash_duo.driver, WAIT_S).until(
        lambda driver: _address(driver) == {"run": RUN, "step": str(TRACED_STEP)},
        message="the bad window stayed in the address")
    assert dash_duo.get_logs() == []
