"""The browser gets plotly.js's basic bundle at the address Dash asks for the full one (the
full one with full_plotly), the bundle is the plotly.js version Dash ships, and every trace
type the pages' figures name is one the bundle has (the demo's browser test checks the drawn
figures against the bundle's own registry)."""

from __future__ import annotations

import re
from pathlib import Path

import plotly
import plotly.graph_objects as go
import pytest

from workbench import plotly_js
from workbench.app import create_app

ROOT = Path(__file__).resolve().parents[2]
FULL = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
SUITE = "/_dash-component-suites/plotly/"
ADDRESS = SUITE + "package_data/plotly.v7_1_0m1700000000.min.js"     # as Dash fingerprints it


@pytest.fixture
def client(tmp_path):
    return create_app(tmp_path).server.test_client()


def test_the_plotly_address_answers_the_basic_bundle(client):
    answer = client.get(ADDRESS)
    assert answer.status_code == 200
    assert answer.mimetype == "application/javascript"
    assert answer.data == plotly_js.BUNDLE.read_bytes()
    assert answer.data.startswith(b"/**\n* plotly.js (basic - minified) v")
    assert len(answer.data) < FULL.stat().st_size / 3
    # Revalidated on every load (a 304 when unchanged), never cached for a year.
    assert answer.headers["Cache-Control"] == "no-cache"
    again = client.get(ADDRESS, headers={"If-None-Match": answer.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""
    assert client.get(SUITE + "package_data/plotly.min.js").data == answer.data


def test_full_plotly_serves_dashs_own_bundle(tmp_path):
    client = create_app(tmp_path, full_plotly=True).server.test_client()
    client.get("/")         # Dash registers its component files as it builds the index
    answer = client.get(ADDRESS)
    assert answer.status_code == 200
    assert answer.data == FULL.read_bytes()


def test_the_vendored_bundle_is_the_plotly_js_version_plotly_ships():
    assert plotly_js.shipped_version() == plotly_js.VERSION
    assert plotly_js.BUNDLE.read_bytes()[:80].decode().splitlines()[1].endswith(
        f" v{plotly_js.VERSION}")


def test_another_plotly_keeps_the_full_bundle(tmp_path, monkeypatch, caplog):
    # A plotly upgraded past the vendored bundle: its renderer may need its own plotly.js.
    newer = tmp_path / "plotly.min.js"
    newer.write_bytes(b"/**\n* plotly.js v9.0.0\n*/\n")
    monkeypatch.setattr(plotly_js, "FULL", newer)
    monkeypatch.setattr(plotly_js.shipped_version, "__defaults__", (newer,))
    assert plotly_js.shipped_version() == "9.0.0"
    client = create_app(tmp_path / "logs").server.test_client()
    client.get("/")
    assert client.get(ADDRESS).data == FULL.read_bytes()
    assert "plotly.js 9.0.0, the vendored basic bundle is 4.1.1" in caplog.text


def test_other_component_files_are_dashs(client):
    client.get("/")
    answer = client.get("/_dash-component-suites/dash/dcc/dash_core_components.v4_4_1m1.js")
    assert answer.status_code == 200
    assert not answer.data.startswith(b"/**\n* plotly.js")


def trace_types_named(source: str) -> set[str]:
    """The plotly trace types a module's source names: graph_objects trace classes
    (go.Bar(...)) and `type` keys or keywords whose value is a trace type ("scatter")."""
    by_class = {name: kind for kind, name in go.Figure()._data_validator.class_strs_map.items()}
    named = {by_class[name] for name in re.findall(r"\bgo\.([A-Z]\w*)\(", source)
             if name in by_class}
    values = re.findall(r"""["']type["']\s*:\s*["'](\w+)["']|\btype\s*=\s*["'](\w+)["']""",
                        source)
    return named | {value for pair in values for value in pair if value in by_class.values()}


def test_every_trace_type_the_pages_build_is_in_the_basic_bundle():
    named = {path.relative_to(ROOT).as_posix(): trace_types_named(path.read_text())
             for folder in ("viz", "workbench") for path in (ROOT / folder).rglob("*.py")}
    found = set().union(*named.values())
    assert {"scatter", "bar"} <= found       # the scan sees what the pages draw
    missing = {path: kinds - plotly_js.TRACES for path, kinds in named.items()
               if kinds - plotly_js.TRACES}
    assert not missing, (f"traces the basic plotly.js bundle lacks: {missing}; serve the full "
                         "bundle for that page or draw it with scatter/bar")


def test_the_scan_finds_trace_types_outside_the_bundle():
    source = ('fig = go.Figure(go.Heatmap(z=z))\ntrace = {"type": "histogram", "x": x}\n'
              'shape = {"type": "line"}\nbar = dict(type="bar")\naxis = {"type": "log"}')
    assert trace_types_named(source) == {"heatmap", "histogram", "bar"}
