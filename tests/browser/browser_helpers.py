"""Browser-test helpers: open a page, find and click a node of the graph figure (a uniquely
named module, so test files can import it whatever other conftest modules are loaded)."""

from __future__ import annotations

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.support.wait import WebDriverWait

WAIT_S = 10

# Finds the SVG point drawn for a node: node traces carry customdata [name, kind], and the
# scatter layer holds one <g class="trace"> per trace, in data order.
_FIND_POINT = """
const plot = document.querySelector('#graph-dag-graph .js-plotly-plot');
if (!plot || !plot.data) { return null; }
for (let t = 0; t < plot.data.length; t++) {
    const custom = plot.data[t].customdata || [];
    for (let p = 0; p < custom.length; p++) {
        if (custom[p][0] === arguments[0]) { return [t, p]; }
    }
}
return null;
"""


def open_page(duo, path: str) -> None:
    duo.driver.get(duo.server_url + path)


def node_point(duo, name: str):
    """The SVG point of a visible node, waiting until the figure holds it (after a callback
    the old figure may still be on screen for a moment)."""
    duo.wait_for_element("#graph-dag-graph .scatterlayer .point")
    trace, point = WebDriverWait(duo.driver, WAIT_S).until(
        lambda driver: driver.execute_script(_FIND_POINT, name),
        message=f"node {name!r} never appeared in the graph figure")
    return duo.find_element(
        f"#graph-dag-graph .scatterlayer .trace:nth-of-type({trace + 1}) "
        f".points path:nth-of-type({point + 1})")


def click_node(duo, name: str) -> None:
    """Hover then click, as a user does: plotly reports the hovered point on click."""
    ActionChains(duo.driver).move_to_element(node_point(duo, name)).click().perform()
