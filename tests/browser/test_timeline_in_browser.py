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
