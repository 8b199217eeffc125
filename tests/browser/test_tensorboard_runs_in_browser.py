"""A log directory with one of our runs and one written by torch.utils.tensorboard, in
headless Chromium at 1280x800: the Runs page lists both, the Scalars page draws the
TensorBoard run alone and overlaid on ours, and the console stays free of errors."""

from __future__ import annotations

import os

import pytest
from browser_helpers import open_page
from selenium.webdriver.common.by import By

pytest.importorskip("tensorboard")
pytest.importorskip("crc32c")
pytest.importorskip("torch.utils.tensorboard")

from tensorboard_logdir import write_mixed_logdir  # noqa: E402

from engine.record.event_files import clear_memo  # noqa: E402
from workbench.app import create_app  # noqa: E402

SCREENSHOT_DIR = os.environ.get("WORKBENCH_SCREENSHOTS")   # set to keep a picture to look at


@pytest.fixture
def mixed(dash_duo, tmp_path):
    clear_memo()
    logs = write_mixed_logdir(tmp_path / "logs", with_tf=False)
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(create_app(logs.logdir))
    yield dash_duo, logs
    clear_memo()


def test_runs_and_scalars_pages_show_a_tensorboard_run(mixed):
    duo, logs = mixed
    duo.wait_for_contains_text(".runs-table", logs.torch)
    duo.wait_for_contains_text(".runs-table", "loss, lr")
    finished = [row.find_element(By.CSS_SELECTOR, ".run-name").text
                for row in duo.find_elements(".run-finished")]
    assert finished == [logs.ours, logs.torch]
    duo.wait_for_element(f".runs-table a[href='/scalars?run={logs.torch}']").click()
    duo.wait_for_element("#scalars-curves-div .js-plotly-plot .scatterlayer .trace")
    duo.wait_for_contains_text("#scalars-curves-div .legend", logs.torch)
    duo.wait_for_contains_text("#scalars-curves-div .annotation-text", "loss")
    open_page(duo, "/scalars")
    duo.wait_for_contains_text("#scalars-curves-div .legend", logs.ours)
    duo.wait_for_contains_text("#scalars-curves-div .legend", logs.torch)
    if SCREENSHOT_DIR:
        duo.driver.save_screenshot(os.path.join(SCREENSHOT_DIR, "tensorboard_scalars.png"))
    assert duo.get_logs() == []
