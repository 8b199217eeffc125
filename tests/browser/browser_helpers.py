"""Browser-test helpers: open a page, wait for the graph drawing (dash-cytoscape's canvas)
and click one of its nodes where it is drawn (a uniquely named module, so test files can
import it whatever other conftest modules are loaded)."""

from __future__ import annotations

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.support.wait import WebDriverWait

WAIT_S = 10

# cytoscape.js keeps its instance on the container element.
_CY = "const box = document.querySelector('#graph-cytoscape'); " \
      "const cy = box && box._cyreg ? box._cyreg.cy : null;"

# The viewport position of a drawn node, or null while it is not drawn (yet). The canvas
# is scrolled into view, and a node outside the window is panned to (as a user would).
_NODE_AT = _CY + """
if (!cy) { return null; }
const node = cy.getElementById(arguments[0]);
if (!node || node.empty() || node.isParent()) { return null; }
box.scrollIntoView({block: 'nearest'});
let frame = box.getBoundingClientRect();
let at = node.renderedPosition();
const inside = (x, y) => x > 0 && y > 0 && x < window.innerWidth && y < window.innerHeight;
if (!inside(frame.left + at.x, frame.top + at.y)) {
    cy.center(node);
    frame = box.getBoundingClientRect();
    at = node.renderedPosition();
}
return [frame.left + at.x, frame.top + at.y];
"""

_NODE_COUNT = _CY + "return cy ? cy.nodes().length : -1;"
_NODE_IDS = _CY + "return cy ? cy.nodes().map(node => node.id()) : [];"


def open_page(duo, path: str) -> None:
    duo.driver.get(duo.server_url + path)


def drawn_count(duo) -> int:
    """Nodes (boxes included) in the drawing now; -1 before cytoscape started."""
    return duo.driver.execute_script(_NODE_COUNT)


def drawn_ids(duo) -> list[str]:
    return duo.driver.execute_script(_NODE_IDS)


def wait_for_graph(duo, at_least: int = 1) -> int:
    """Waits until the drawing holds at least `at_least` nodes; returns how many."""
    return WebDriverWait(duo.driver, WAIT_S).until(
        lambda driver: (count := driver.execute_script(_NODE_COUNT)) >= at_least and count,
        message="the graph was never drawn")


def node_point(duo, node_id: str) -> tuple[float, float]:
    """Where a leaf node is drawn (viewport pixels), waiting until it is drawn and still
    (a redraw that just started fits the view anew)."""
    seen: list = [None]

    def settled(driver):
        now = driver.execute_script(_NODE_AT, node_id)
        before, seen[0] = seen[0], now
        return now if now is not None and now == before else None
    return WebDriverWait(duo.driver, WAIT_S, poll_frequency=0.2).until(
        settled, message=f"node {node_id!r} never appeared in the graph drawing")


def click_node(duo, node_id: str) -> None:
    """A real mouse click where the node is drawn, as a user does."""
    x, y = node_point(duo, node_id)
    actions = ActionChains(duo.driver)
    actions.w3c_actions.pointer_action.move_to_location(int(x), int(y))
    actions.w3c_actions.pointer_action.click()
    actions.perform()
