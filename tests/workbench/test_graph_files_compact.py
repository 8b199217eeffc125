"""`workbench view` opens a compact graph file by its content, whatever its name."""

from __future__ import annotations

from pathlib import Path

import engine as tf
from engine.record.reader import RunReader
from workbench import cli

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"


def test_view_reads_a_compact_file_by_content(tmp_path, monkeypatch, capsys):
    path = tmp_path / "add.json"            # a compact file under a JSON name
    tf.save_graph(tf.load_graph_def(SAMPLES / "classic_add.json"), path, compact=True)
    served = {}
    monkeypatch.setattr(cli, "serve", lambda logdir, *args: served.update(
        runs=sorted(p.name for p in Path(logdir).iterdir())) or 0)
    assert cli.main(["view", str(path), "--logdir", str(tmp_path / "kept")]) == 0
    (run,) = served["runs"]
    assert [n.name for n in RunReader(tmp_path / "kept" / run).graph().nodes] == [
        "a", "b", "add"]
    path.write_bytes(path.read_bytes()[:40])
    assert cli.main(["view", str(path)]) == 2
    assert "add.json" in capsys.readouterr().err
