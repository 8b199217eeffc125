"""The first layout of a page load holds the page its address names (first_page): the
Scalars page of `/scalars?run=A,B&tag=loss` with its figure's data, the Runs page with its
first rows, and the pages' Location at that address (so Dash's router does not fire on
load); without the header, for an address that is no page, or when the page fails to build,
the bare shell (the router draws the page, as Dash does)."""

from __future__ import annotations

import json
import logging

import pytest
from dash._pages import _parse_query_string

from engine.record import RunWriter
from workbench import data, first_page
from workbench.app import create_app

ORIGIN = "http://127.0.0.1:8050"


@pytest.fixture
def client(tmp_path):
    for k, name in enumerate(("lr-0.1", "lr-0.01")):
        with RunWriter(tmp_path, name) as writer:
            for step in range(20):
                writer.scalar("loss", 1.0 / (1 + step + k), step)
    yield create_app(tmp_path).server.test_client()
    data.set_logdir("runs")


def _layout(client, address: str | None = None) -> dict:
    headers = {first_page.HEADER: address} if address is not None else {}
    answer = client.get("/_dash-layout", headers=headers)
    assert answer.status_code == 200
    return json.loads(answer.data)


def _find(node, ident):
    """The component (as JSON) with `ident` in a layout, or None."""
    if isinstance(node, dict):
        if node.get("props", {}).get("id") == ident:
            return node
        node = node.get("props", {}).get("children")
    for child in node if isinstance(node, list) else [node]:
        if isinstance(child, dict) and (found := _find(child, ident)) is not None:
            return found
    return None


def test_a_scalars_address_comes_with_its_figure_and_location(client):
    address = f"{ORIGIN}/scalars?run=lr-0.1,lr-0.01&tag=loss#top"
    layout = _layout(client, address)
    content = _find(layout, "_pages_content")["props"]["children"]
    graph = _find(content, {"type": "scalars-curve-graph", "tag": "loss"})
    names = {trace["name"] for trace in graph["props"]["figure"]["data"]}
    assert {"lr-0.1", "lr-0.01"} <= names
    assert _find(layout, "_pages_location")["props"] == {
        "id": "_pages_location", "refresh": "callback-nav", "href": address,
        "pathname": "/scalars", "search": "?run=lr-0.1,lr-0.01&tag=loss", "hash": "#top"}
    assert _find(layout, "_pages_store")["props"]["data"] == {"title": "Scalars · Workbench"}


def test_the_runs_address_comes_with_its_first_rows(client):
    layout = _layout(client, f"{ORIGIN}/")
    assert '"run-row' in json.dumps(_find(layout, "runs-table-div"))
    assert _find(layout, "_pages_location")["props"]["search"] == ""


@pytest.mark.parametrize("address", [None, "", f"{ORIGIN}/no-such-page",
                                     f"{ORIGIN}/{'x' * first_page.MAX_ADDRESS}"])
def test_no_page_named_is_the_bare_shell(client, address):
    layout = _layout(client, address)
    assert _find(layout, "_pages_content")["props"].get("children") is None
    assert "pathname" not in _find(layout, "_pages_location")["props"]


def test_a_page_that_fails_to_build_leaves_it_to_the_router(client, monkeypatch, caplog):
    import dash

    def broken(**_query):
        raise RuntimeError("no")
    page = next(p for p in dash.page_registry.values() if p["path"] == "/scalars")
    monkeypatch.setitem(page, "layout", broken)
    with caplog.at_level(logging.WARNING, logger="workbench"):
        layout = _layout(client, f"{ORIGIN}/scalars")
    assert _find(layout, "_pages_content")["props"].get("children") is None
    assert "first page not built: RuntimeError" in caplog.text


def test_the_header_is_read_on_the_layout_request_only(client):
    answer = client.get("/scalars", headers={first_page.HEADER: f"{ORIGIN}/"})
    assert answer.status_code == 200 and b"run-row" not in answer.data


@pytest.mark.parametrize("query", ["", "run=a,b&tag=loss", "run=a&run=b", "open=&x=1",
                                   "smoothing=0.5&from=1&to=2&step=%2012"])
def test_the_query_is_read_as_dashs_router_reads_it(query):
    expected = _parse_query_string(f"?{query}" if query else "")
    assert first_page.query_parameters(query) == expected


def test_a_dash_whose_page_container_has_another_shape_leaves_it_to_the_router(
        client, monkeypatch, caplog):
    # The ids come from dash.page_container itself (no private Dash names): a Dash that
    # builds it otherwise gets the bare shell and one warning, not a broken first page.
    import dash
    from dash import html
    monkeypatch.setattr(first_page, "_warned", [])
    assert first_page.container_ids() == (
        "_pages_location", "_pages_content", "_pages_store", "_pages_dummy")
    monkeypatch.setattr(dash, "page_container", html.Div([html.Div(id="_pages_content")]))
    with caplog.at_level(logging.WARNING, logger="workbench"):
        layout = _layout(client, f"{ORIGIN}/scalars?run=lr-0.1&tag=loss")
        _layout(client, f"{ORIGIN}/scalars")
    assert _find(layout, {"type": "scalars-curve-graph", "tag": "loss"}) is None
    assert caplog.text.count("builds its page container as") == 1
