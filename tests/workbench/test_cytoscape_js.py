"""dash-cytoscape's bundle is left out of every page's scripts and served at the address the
stand-in (assets/cytoscape.js) loads it from when a canvas renders."""

from __future__ import annotations

import re
from pathlib import Path

import dash_cytoscape
import pytest

from workbench import cytoscape_js
from workbench.app import ASSETS, PAGES, create_app

BUNDLE = Path(dash_cytoscape.__file__).parent / "dash_cytoscape.min.js"


@pytest.fixture
def client(tmp_path):
    return create_app(tmp_path).server.test_client()


@pytest.mark.parametrize("path", [page.PATH for page in PAGES])
def test_no_page_lists_the_bundle_but_each_has_the_stand_in(client, path):
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', client.get(path).data.decode())
    assert not [src for src in scripts if cytoscape_js.NAMESPACE in src]
    assert any(src.startswith("/assets/cytoscape.js") for src in scripts)


def test_the_stand_in_loads_the_address_that_answers_the_bundle(client):
    client.get("/")         # Dash registers its component files as it builds the index
    answer = client.get("/" + cytoscape_js.ADDRESS)
    assert answer.status_code == 200
    assert answer.data == BUNDLE.read_bytes()
    assert f'"{cytoscape_js.ADDRESS}"' in (ASSETS / "cytoscape.js").read_text()


def test_installing_twice_keeps_one_lazy_entry():
    cytoscape_js.install()
    cytoscape_js.install()
    assert [entry["async"] for entry in dash_cytoscape._js_dist] == ["lazy"]
