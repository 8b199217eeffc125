"""The Graph page's pan and zoom in its address (`zoom=0.8&pan=120,-40`): read back into the
first drawing's layout; a missing half, text, NaN, infinities and values out of range are
left out (the drawing fits the window) with a notice saying what was wrong."""

from __future__ import annotations

import pytest

from workbench.pages import graph
from workbench.pages.common import address_setter
from workbench.pages.graph_viewport import KEPT, MAX_ZOOM, MIN_ZOOM, address_viewport, restored


def test_a_zoom_and_a_pan_are_read_as_numbers():
    assert address_viewport({"zoom": "0.8", "pan": "120,-40"}) == (
        {"zoom": 0.8, "pan": {"x": 120.0, "y": -40.0}}, "")
    assert address_viewport({"zoom": ["1e-1"], "pan": [" 0.5 , 7 "]}) == (
        {"zoom": 0.1, "pan": {"x": 0.5, "y": 7.0}}, "")
    assert address_viewport({}) == (None, "") and address_viewport(None) == (None, "")
    assert address_viewport({"zoom": str(MIN_ZOOM), "pan": "0,0"})[0]["zoom"] == MIN_ZOOM
    assert address_viewport({"zoom": str(MAX_ZOOM), "pan": "0,0"})[0]["zoom"] == MAX_ZOOM


@pytest.mark.parametrize("query, told", [
    ({"zoom": "0.8"}, "needs both a zoom and a pan"),
    ({"pan": "1,2"}, "needs both a zoom and a pan"),
    ({"zoom": "abc", "pan": "1,2"}, "the address's zoom must be a number, got 'abc'"),
    ({"zoom": "nan", "pan": "1,2"}, "the address's zoom must be a number"),
    ({"zoom": "1e400", "pan": "1,2"}, "the address's zoom must be a finite number"),
    ({"zoom": "0", "pan": "1,2"}, "from 0.05 to 4"),
    ({"zoom": "9", "pan": "1,2"}, "from 0.05 to 4"),
    ({"zoom": "1", "pan": "1"}, "the address's pan must be two numbers x,y, got '1'"),
    ({"zoom": "1", "pan": "1,2,3"}, "must be two numbers x,y"),
    ({"zoom": "1", "pan": "1,"}, "must be two numbers x,y"),
    ({"zoom": "1", "pan": "x,2"}, "the address's pan x must be a number, got 'x'"),
    ({"zoom": "1", "pan": "1,1e99"}, "the address's pan y must be a finite number"),
])
def test_a_bad_viewport_is_left_out_saying_why(query, told):
    viewport, notice = address_viewport(query)
    assert viewport is None
    assert told in notice and notice.startswith("Not restoring the view: ")
    assert notice.endswith("; fitting the graph to the window.")


def test_the_first_drawing_opens_at_the_addresss_viewport(recorded):
    fitted = graph.initial_view({"run": recorded.run})
    assert fitted["layout"]["fit"] is True and "zoom" not in fitted["layout"]
    shown = graph.initial_view({"run": recorded.run, "zoom": "0.8", "pan": "120,-40"})
    assert shown["layout"] == {**fitted["layout"], "fit": False, "zoom": 0.8,
                               "pan": {"x": 120.0, "y": -40.0}}
    assert shown["elements"] == fitted["elements"] and shown["notice"] == ""
    bad = graph.initial_view({"run": recorded.run, "zoom": "inf", "pan": "120,-40"})
    assert bad["layout"] == fitted["layout"] and bad["elements"] == fitted["elements"]
    assert bad["notice"].startswith("Not restoring the view: the address's zoom")
    # another run's address: its viewport was of that run's drawing
    other = graph.initial_view({"run": "nope", "zoom": "0.8", "pan": "1,2"})
    assert other["layout"]["fit"] is True


def test_restored_keeps_the_layout_without_a_viewport():
    layout = {"name": "preset", "fit": True}
    assert restored(layout, None) is layout


def test_the_address_setter_keeps_what_the_browser_wrote():
    assert KEPT == ("zoom", "pan")
    script = address_setter("/graph", KEPT)
    assert '["zoom", "pan"]' in script and '"/graph"' in script
    assert "[]" in address_setter("/scalars")
