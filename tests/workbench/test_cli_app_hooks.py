"""The CLI (serve, demo), create_app's pages and routes, and the training-loop hooks."""

from __future__ import annotations

import subprocess
import sys

import dash
import numpy as np
import pytest

from engine.record import RunReader
from engine.record.schema import FINISHED
from workbench import cli
from workbench.app import PAGES, create_app
from workbench.hooks import RunWriter, ScalarLogger, log_scalars


@pytest.fixture
def served(monkeypatch):
    """Replaces waitress.serve so serving returns at once with what it was asked to bind (and
    whether the app it got is behind the request guard)."""
    import waitress

    from workbench.serving import RequestGuard
    calls = []
    monkeypatch.setattr(waitress, "serve", lambda app, **kw: calls.append(
        {"host": kw["host"], "port": kw["port"], "guarded": isinstance(app, RequestGuard)}))
    return calls


def test_serve_creates_a_missing_logdir_and_prints_the_address(tmp_path, served, capsys):
    logdir = tmp_path / "new"
    assert cli.main(["serve", "--logdir", str(logdir)]) == 0
    out = capsys.readouterr().out
    assert logdir.is_dir()
    assert "empty" in out
    assert "Workbench: http://127.0.0.1:8050/" in out
    assert served == [{"host": "127.0.0.1", "port": 8050, "guarded": True}]


def test_serve_refuses_a_file_as_logdir(tmp_path, served, capsys):
    path = tmp_path / "file"
    path.write_text("x")
    assert cli.main(["serve", "--logdir", str(path)]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert served == []


def test_serve_needs_a_logdir(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["serve"])
    assert exit_info.value.code == 2


def test_demo_records_then_serves_unless_told_not_to(tmp_path, served, monkeypatch, capsys):
    import workbench.demo

    asked = []

    def fake_run_demo(**kwargs):
        asked.append(kwargs)
        return [str(tmp_path / "runs" / "a")]

    monkeypatch.setattr(workbench.demo, "run_demo", fake_run_demo)
    logdir = str(tmp_path / "runs")
    assert cli.main(["demo", "--logdir", logdir, "--steps", "7", "--no-serve"]) == 0
    assert asked == [{"logdir": logdir, "steps": 7, "progress": True}]
    assert served == []
    assert cli.main(["demo", "--logdir", logdir, "--port", "9000"]) == 0
    assert asked[1] == {"logdir": logdir, "progress": True}
    assert served == [{"host": "127.0.0.1", "port": 9000, "guarded": True}]
    assert "Workbench: http://127.0.0.1:9000/" in capsys.readouterr().out


def test_ipv6_hosts_are_bracketed():
    assert cli.url("::1", 8050) == "http://[::1]:8050/"


def test_create_app_registers_pages_in_order(recorded):
    app = create_app(recorded.logdir)
    registered = [page["path"] for page in dash.page_registry.values()]
    assert registered == [page.PATH for page in PAGES] == [
        "/", "/graph", "/placement", "/scalars", "/histograms", "/images", "/text", "/timeline",
        "/alerts", "/compare", "/replay", "/pruning", "/quantization"]
    client = app.server.test_client()
    assert client.get("/graph?run=mlp-lr0.5").status_code == 200
    layout = client.get("/_dash-layout")
    assert layout.status_code == 200 and b"app-nav-graph-link" in layout.data
    deps = client.get("/_dash-dependencies").json
    outputs = " ".join(dep["output"] for dep in deps)
    for component in ("runs-table-div", "graph-cytoscape", "placement-nodes-table",
                      "scalars-curves-div"):
        assert component in outputs


def test_log_scalars_and_scalar_logger(tmp_path):
    with ScalarLogger(tmp_path, "loop", config={"lr": 0.1}) as log:
        for step in range(3):
            log(step, loss=np.float32(1.0 / (step + 1)), lr=0.1)
        path = log.path
    reader = RunReader(path)
    assert reader.tags() == ["loss", "lr"]
    steps, values = reader.scalars("loss")
    assert steps.tolist() == [0, 1, 2]
    assert values == pytest.approx([1.0, 0.5, 1 / 3])
    assert reader.info().status == FINISHED
    writer = RunWriter(tmp_path, "direct")
    log_scalars(writer, 5, accuracy=0.75)
    writer.close()
    assert RunReader(writer.path).scalars("accuracy")[1].tolist() == [0.75]


def test_scalar_logger_records_the_exception_that_ended_the_loop(tmp_path):
    with pytest.raises(RuntimeError), ScalarLogger(tmp_path, "crash") as log:
        log(0, loss=1.0)
        raise RuntimeError("diverged")
    assert "diverged" in RunReader(log.path).info().exception


def test_the_serving_path_does_not_import_torch():
    code = ("import sys, workbench.app, workbench.cli; "
            "print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"
