"""The Pruning page in headless Chromium at 1280x800: a recorded pruning analysis draws its
sensitivity curves, sparsity bars, schedule and compression figures; unchecking a layer
hides its curve; nothing lands in the console and nothing scrolls sideways."""

from __future__ import annotations

from browser_helpers import open_page
from selenium.webdriver.support.wait import WebDriverWait

from engine.compression.pruning import Compression, Stage, record_pruning
from engine.record import RunWriter
from workbench.app import create_app

LAYERS = ("dense/kernel", "dense_1/kernel", "logits/kernel")
TRACES = "#pruning-sensitivity-graph .scatterlayer .trace"


def _record(logdir) -> None:
    curves = {layer: [(s, 0.98 - i * s / 4) for s in (0.0, 0.5, 0.8, 0.9)]
              for i, layer in enumerate(LAYERS)}
    history = [Stage(k, 100 * k, {n: 0.3 * k for n in LAYERS}, {n: 0.3 * k for n in LAYERS},
                     0.97 - 0.02 * k, 0.98 - 0.005 * k) for k in range(4)]
    figures = Compression(6464, 680, 25856, 6000, {n: (1000, 100) for n in LAYERS})
    with RunWriter(logdir, "pruned") as writer:
        record_pruning(writer, curves, history, figures)


def test_pruning_page_draws_and_hides_a_layer(dash_duo, tmp_path):
    _record(tmp_path)
    dash_duo.start_server(create_app(tmp_path))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, "/pruning?run=pruned")
    dash_duo.wait_for_element(TRACES, timeout=30)   # the shared machine is slow
    WebDriverWait(dash_duo.driver, 30).until(
        lambda d: len(d.find_elements("css selector", TRACES)) == 3)
    dash_duo.wait_for_element("#pruning-sparsity-graph .barlayer .point")
    dash_duo.wait_for_element("#pruning-schedule-graph .scatterlayer .trace")
    dash_duo.wait_for_contains_text("#pruning-compression-div", "9.51× fewer")
    dash_duo.wait_for_contains_text("#pruning-sparsity-graph", "after stage 3")
    boxes = dash_duo.find_elements("#pruning-layers-checklist input")
    assert len(boxes) == 3
    boxes[-1].click()
    WebDriverWait(dash_duo.driver, 30).until(
        lambda d: len(d.find_elements("css selector", TRACES)) == 2)
    assert dash_duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")
    assert dash_duo.get_logs() == []


def test_pruning_page_follows_a_run_being_written(dash_duo, tmp_path):
    """A stage recorded while the page is open appears (the newest stage followed), and a
    layer the user hid stays hidden across the refresh."""
    from live_zoom import write_on_thread
    curves = {layer: [(s, 0.98 - i * s / 4) for s in (0.0, 0.5, 0.8)]
              for i, layer in enumerate(LAYERS)}

    def stages(ks):
        return [Stage(k, 100 * k, {n: 0.3 * k for n in LAYERS}, {n: 0.3 * k for n in LAYERS},
                      0.97 - 0.02 * k, 0.98 - 0.005 * k) for k in ks]
    writer = RunWriter(tmp_path, "growing")
    write_on_thread(lambda: (record_pruning(writer, curves, stages(range(2))), writer.flush()))
    dash_duo.start_server(create_app(tmp_path))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, "/pruning?run=growing")
    dash_duo.wait_for_contains_text("#pruning-live-banner-div", "● running", timeout=30)
    dash_duo.wait_for_contains_text("#pruning-sparsity-graph", "after stage 1", timeout=30)
    WebDriverWait(dash_duo.driver, 30).until(
        lambda d: len(d.find_elements("css selector", TRACES)) == 3)
    dash_duo.find_elements("#pruning-layers-checklist input")[0].click()
    WebDriverWait(dash_duo.driver, 30).until(
        lambda d: len(d.find_elements("css selector", TRACES)) == 2)

    write_on_thread(lambda: (record_pruning(writer, None, stages([2])), writer.flush()))
    dash_duo.wait_for_contains_text("#pruning-sparsity-graph", "after stage 2", timeout=30)
    dash_duo.wait_for_contains_text("#pruning-stage-dropdown", "stage 2 (step 200)")
    assert len(dash_duo.find_elements(TRACES)) == 2        # the hidden layer stays hidden
    assert not dash_duo.find_elements("#pruning-layers-checklist input")[0].is_selected()
    writer.close()
    dash_duo.wait_for_contains_text("#pruning-live-banner-div", "finished", timeout=30)
    assert dash_duo.get_logs() == []
