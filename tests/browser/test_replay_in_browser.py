"""The Replay page in headless Chromium at 1280x800 over runs recorded by real Sessions: Play
advances the step and the address follows; space, arrows, Home and End drive it; a slider
scrub onto a traced step lights its nodes; reloading an address with a playhead time shows
the nodes pending, running and done at that time and the transfer in flight on its edge; an
untraced step offers the nearest traced one; a click opens a scope, whose nodes then light
inside it, and the open scopes stay in the address across steps and a reload; the console
stays free of errors."""

from __future__ import annotations

import pytest
from browser_helpers import WAIT_S, open_page
from recorded_replay import record_replay_runs
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait

from engine.record import open_run
from viz import replay
from viz.hierarchy import build_hierarchy, default_expansion, hierarchy_view
from viz.timeline import StepTrace
from workbench.app import create_app

_CY = ("const box = document.querySelector('#replay-cytoscape'); "
       "const cy = box && box._cyreg ? box._cyreg.cy : null;")
_COUNT = _CY + "return cy ? cy.nodes().length : -1;"
_NODE_COLOR = _CY + "return cy ? cy.getElementById(arguments[0]).style('background-color') : null;"
_EDGE_COLOR = _CY + "return cy ? cy.getElementById(arguments[0]).style('line-color') : null;"


def _rgb(color: str) -> str:
    return "rgb({},{},{})".format(*(int(color[i:i + 2], 16) for i in (1, 3, 5)))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return record_replay_runs(tmp_path_factory.mktemp("replay-browser"))


def _wait(duo, condition, message: str):
    return WebDriverWait(duo.driver, WAIT_S).until(condition, message=message)


def _press(duo, key) -> None:
    duo.find_element("body").send_keys(key)


def _trace(runs, step: int) -> StepTrace:
    reader = open_run(runs.logdir / runs.run)
    plan = next(record.plan for record in reader.steps() if record.step == step)
    return StepTrace(runs.run, step, tuple(reader.step_stats(step)),
                     tuple(reader.transfers(step)), tuple(reader.cut_edges(plan)))


def _expected_at(runs, step: int, at: float | None):
    """(leaf id -> state, lit edge ids) the page should show, from the same records (read
    here directly: the workbench's data module is the server's, in this process)."""
    tree = build_hierarchy(open_run(runs.logdir / runs.run).graph())
    view = hierarchy_view(tree, default_expansion(tree))
    state = replay.step_state(step, _trace(runs, step), at)
    edges = [f"{edge.src}->{edge.dst}" for edge in view.edges]
    return replay.leaf_states(state, view.rep), replay.flight_edge_ids(state, view.rep, edges)


def _flight_time(runs, step: int) -> float:
    """Halfway through moving layer2/Tanh to total: Tanh has finished by then, and total
    has not started."""
    tanh = next(f for f in replay.flights(_trace(runs, step)) if f.producer == "layer2/Tanh")
    return round((tanh.start_us + tanh.end_us) / 2)


def test_replay_plays_scrubs_follows_keys_and_lights_the_graph(dash_duo, runs):
    dash_duo.start_server(create_app(runs.logdir))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, f"/replay?run={runs.run}&step=1")
    _wait(dash_duo, lambda d: d.execute_script(_COUNT) > 3, "the graph was never drawn")
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 1 of 6")
    dash_duo.wait_for_contains_text("#replay-trace-text", "Step 1 was not traced")
    fits = dash_duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")
    assert fits, "the replay page scrolls sideways at 1280x800"

    dash_duo.find_element("#replay-play-button").click()
    dash_duo.wait_for_text_to_equal("#replay-play-button", "Pause")
    dash_duo.wait_for_contains_text("#replay-step-text", "Step 2 of 6 (traced)")
    _wait(dash_duo, lambda d: "step=2" in d.current_url, "the address did not follow")
    _press(dash_duo, " ")
    dash_duo.wait_for_text_to_equal("#replay-play-button", "Play")

    _press(dash_duo, Keys.END)
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 6 of 6")
    _wait(dash_duo, lambda d: "step=6" in d.current_url, "End did not move the address")
    _press(dash_duo, Keys.HOME)
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 1 of 6")
    _press(dash_duo, Keys.ARROW_RIGHT)
    _press(dash_duo, Keys.ARROW_RIGHT)
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 3 of 6")
    dash_duo.wait_for_text_to_equal("#replay-trace-text",
                                    "Step 3 was not traced; traced steps: 2, 4.")
    dash_duo.wait_for_text_to_equal("#replay-nearest-button", "Go to traced step 2")
    dash_duo.find_element("#replay-nearest-button").click()
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 2 of 6 (traced)")
    _press(dash_duo, Keys.ARROW_LEFT)
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 1 of 6")

    # A scrub: the step slider's handle moves itself with the arrow keys.
    handle = dash_duo.driver.find_element(By.CSS_SELECTOR, "#replay-step-slider [role=slider]")
    handle.send_keys(Keys.ARROW_RIGHT)
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 2 of 6 (traced)")
    dash_duo.wait_for_contains_text("#replay-status-text", "end of step")
    done, _ = _expected_at(runs, 2, None)
    lit = next(leaf for leaf, state in done.items() if state == replay.DONE)
    _wait(dash_duo, lambda d: d.execute_script(_NODE_COLOR, lit) != _rgb(replay.PENDING_COLOR),
          "the step's nodes were not lit")

    # Reloading an address with a playhead time: Tanh's output is on its way to the CPU.
    at = _flight_time(runs, 2)
    open_page(dash_duo, f"/replay?run={runs.run}&step=2&t={at}")
    _wait(dash_duo, lambda d: d.execute_script(_COUNT) > 3, "the graph was not drawn again")
    dash_duo.wait_for_contains_text("#replay-status-text", "moving layer2/Tanh:0")
    leaves, flying = _expected_at(runs, 2, at)
    assert flying, "the recorded step has no transfer in flight at that time"
    _wait(dash_duo, lambda d: d.execute_script(_EDGE_COLOR, flying[0]) ==
          _rgb(replay.FLIGHT_COLOR), "the transfer in flight is not highlighted")
    pending = next(leaf for leaf, found in leaves.items() if found == replay.PENDING)
    assert dash_duo.driver.execute_script(_NODE_COLOR, pending) == _rgb(replay.PENDING_COLOR)
    running = [leaf for leaf, found in leaves.items() if found == replay.RUNNING]
    for leaf in running:
        assert dash_duo.driver.execute_script(_NODE_COLOR, leaf) == _rgb(replay.RUNNING_COLOR)
    finished = [leaf for leaf, found in leaves.items() if found == replay.DONE]
    assert finished, "nothing had finished by the playhead"
    for leaf in finished:       # in its device's colour, which the element carries
        own = dash_duo.driver.execute_script(_CY + "return cy.getElementById(arguments[0])"
                                             ".data('color');", leaf)
        assert dash_duo.driver.execute_script(_NODE_COLOR, leaf) == _rgb(own)
    assert f"step=2&t={at}" in dash_duo.driver.current_url
    assert dash_duo.get_logs() == []


_TAP = _CY + "cy.getElementById(arguments[0]).emit('tap'); return true;"
_HAS = _CY + "return cy ? cy.getElementById(arguments[0]).nonempty() : false;"


def test_replay_opens_scopes_keeps_them_in_the_address_and_lights_inside(dash_duo, runs):
    # Half way through step 4's while loop: the loop node runs inside the open scopes, and
    # the closed "while" lights as a whole.
    loop = sorted((s for s in _trace(runs, 4).stats if s.node == runs.loop_node),
                  key=lambda stat: stat.start_us)
    at = round((loop[1].end_us + loop[2].start_us) / 2)
    dash_duo.start_server(create_app(runs.logdir))
    dash_duo.driver.set_window_size(1280, 800)
    open_page(dash_duo, f"/replay?run={runs.run}&step=4&t={at}")
    _wait(dash_duo, lambda d: d.execute_script(_HAS, "while"), "the graph was never drawn")
    _wait(dash_duo, lambda d: d.execute_script(_NODE_COLOR, "while") ==
          _rgb(replay.RUNNING_COLOR), "the closed loop scope is not lit while it runs")

    dash_duo.driver.execute_script(_TAP, "while")
    _wait(dash_duo, lambda d: d.execute_script(_HAS, runs.loop_node), "the scope did not open")
    _wait(dash_duo, lambda d: "open=" in d.current_url and "while" in d.current_url.split(
        "open=")[1], "the address does not name the open scope")
    dash_duo.driver.execute_script(_TAP, runs.loop_node)
    tree = build_hierarchy(open_run(runs.logdir / runs.run).graph())
    opened = default_expansion(tree) | {"while", runs.loop_node}
    inside = hierarchy_view(tree, opened).rep[runs.loop_node]
    _wait(dash_duo, lambda d: d.execute_script(_HAS, inside), "the loop node was not drawn")
    _wait(dash_duo, lambda d: d.execute_script(_NODE_COLOR, inside) ==
          _rgb(replay.RUNNING_COLOR), "the loop node inside the open scope is not lit")

    # A scrub and a step keep the expansion, in the drawing and in the address.
    _press(dash_duo, Keys.ARROW_RIGHT)
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 5 of 6")
    _wait(dash_duo, lambda d: "step=5" in d.current_url, "the address did not follow")
    assert dash_duo.driver.execute_script(_HAS, inside)
    address = dash_duo.driver.current_url
    assert "open=" in address and "%2F" in address.split("open=")[1]  # while/accumulate
    _press(dash_duo, Keys.ARROW_LEFT)
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 4 of 6 (traced)")
    _wait(dash_duo, lambda d: d.execute_script(_NODE_COLOR, inside) != _rgb(
        replay.PENDING_COLOR), "the loop node is not lit at the end of step 4")

    # The address alone draws the same expansion.
    dash_duo.driver.get(address)
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 5 of 6")
    _wait(dash_duo, lambda d: d.execute_script(_HAS, inside), "the reload lost the expansion")
    assert dash_duo.driver.execute_script(_CY + "return cy.getElementById('while')"
                                          ".isParent();"), "while is not drawn as a box"
    assert dash_duo.get_logs() == []


# One tick of play as the page's interval fires it (assets/replay.js navigate), at a speed:
# [step, carry] after a tick from step 0 of steps 0..10 where step 3 is traced (100 us).
_TICK = """
const saved = window.dash_clientside.callback_context;
window.dash_clientside.callback_context = {
    triggered: [{prop_id: "replay-play-interval.n_intervals", value: 1}]};
try {
    const bounds = {first: 0, last: 10, traced: {"3": 100}, ticks: 10, numbers: null};
    const at = (speed) => window.dash_clientside.replay.navigate(
        1, 0, 0, 0, 0, 0, null, null, bounds, {step: 0, t: null, carry: 0}, speed, null);
    return arguments[0].map((speed) => { const p = at(speed); return [p.step, p.carry]; });
} finally {
    window.dash_clientside.callback_context = saved;
}
"""


def test_the_speed_control_sets_how_far_a_tick_of_play_moves(dash_duo, runs):
    dash_duo.start_server(create_app(runs.logdir))
    open_page(dash_duo, f"/replay?run={runs.run}&step=1")
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 1 of 6")
    dash_duo.wait_for_contains_text("#replay-speed-dropdown", "1x")
    # Half speed waits a tick; 1x and 2x move by one and two steps; 8x stops at the traced
    # step 3 on its way (its time plays next), keeping the rest of the move.
    moves = dash_duo.driver.execute_script(_TICK, [0.5, 1, 2, 8])
    assert moves == [[0, 0.5], [1, 0], [2, 0], [3, 0]]
    assert dash_duo.get_logs() == []


def _address(driver) -> dict:
    from urllib.parse import parse_qs, urlparse
    return {key: values[0] for key, values in parse_qs(urlparse(driver.current_url).query,
                                                       keep_blank_values=True).items()}


def test_the_speed_is_kept_in_the_address(dash_duo, runs):
    """`speed=N` sets the speed control; choosing another speed writes it (1x writes none),
    and stepping keeps it; a speed that is not one of the control's is told, 1x played and
    the address corrected."""
    dash_duo.start_server(create_app(runs.logdir))
    open_page(dash_duo, f"/replay?run={runs.run}&step=1&speed=4")
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 1 of 6")
    dash_duo.wait_for_contains_text("#replay-speed-dropdown", "4x")
    _wait(dash_duo, lambda d: _address(d).get("speed") == "4", "the address lost speed=4")
    dash_duo.select_dcc_dropdown("#replay-speed-dropdown", "0.5x")
    _wait(dash_duo, lambda d: _address(d).get("speed") == "0.5", "speed=0.5 not written")
    _press(dash_duo, Keys.ARROW_RIGHT)
    dash_duo.wait_for_contains_text("#replay-step-text", "Step 2 of 6")
    _wait(dash_duo, lambda d: _address(d).get("step") == "2" and _address(d).get(
        "speed") == "0.5", "stepping dropped the speed")
    dash_duo.driver.refresh()
    dash_duo.wait_for_contains_text("#replay-speed-dropdown", "0.5x")
    dash_duo.wait_for_contains_text("#replay-step-text", "Step 2 of 6")
    dash_duo.select_dcc_dropdown("#replay-speed-dropdown", "1x")
    _wait(dash_duo, lambda d: "speed" not in _address(d) and _address(d).get("step") == "2",
          "1x left a speed in the address")
    assert dash_duo.get_logs() == []

    open_page(dash_duo, f"/replay?run={runs.run}&step=1&speed=nan")
    dash_duo.wait_for_text_to_equal(
        "#replay-speed-notice-text",
        "The speed in the address must be a number, got 'nan'; playing at 1x.")
    dash_duo.wait_for_contains_text("#replay-speed-dropdown", "1x")
    dash_duo.wait_for_text_to_equal("#replay-step-text", "Step 1 of 6")
    _wait(dash_duo, lambda d: "speed" not in _address(d), "the bad speed stayed in the address")
    assert dash_duo.get_logs() == []
