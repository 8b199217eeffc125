"""Graphs recorded without running them: RunWriter.add_graph, and `workbench view GRAPH.json`
(recorded into a temporary run, then served) drawn by the Graph page."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine as tf
from engine.record import RunReader, RunWriter
from workbench import cli, data
from workbench.pages import graph as graph_page

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"


def small_graph():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/gpu:0"):
            a = tf.constant([1.0, 2.0], name="a")
        with tf.name_scope("model"):
            tf.add(a, a, name="double")
    return g


def test_add_graph_records_a_graph_that_never_ran(tmp_path):
    with RunWriter(tmp_path, "unrun") as writer:
        writer.add_graph(small_graph())
    record = RunReader(tmp_path / "unrun").graph()
    assert [node.name for node in record.nodes] == ["a", "model/double"]
    assert record.nodes[0].device == "/device:GPU:0"
    assert RunReader(tmp_path / "unrun").placements() == []
    with RunWriter(tmp_path, "def") as writer:
        writer.add_graph(small_graph().as_graph_def())
    assert len(RunReader(tmp_path / "def").graph().nodes) == 2
    with RunWriter(tmp_path, "bad") as writer, pytest.raises(TypeError, match="got int"):
        writer.add_graph(5)


def test_an_unrun_graph_draws_by_requested_device(tmp_path, text_of):
    with RunWriter(tmp_path, "unrun") as writer:
        writer.add_graph(small_graph())
    data.set_logdir(tmp_path)
    try:
        expanded, _, _ = graph_page.next_state(graph_page.RUN_DROPDOWN, "unrun", None, "",
                                               None, "", None)
        assert expanded == ["model"]
        elements, legend, shown, _, _, _ = graph_page.draw("unrun", expanded, "requested", None,
                                                        [])
        assert shown == "" and text_of(legend).split("  ")[0].strip() == "/device:GPU:0"
        _, legend, _, _, _, _ = graph_page.draw("unrun", expanded, "device", None, [])
        assert text_of(legend).strip() == "unplaced"
    finally:
        data.set_logdir("runs")


def test_view_records_the_file_and_serves_it(tmp_path, monkeypatch, capsys):
    served = {}
    monkeypatch.setattr(cli, "serve", lambda logdir, *args: served.update(
        logdir=logdir, runs=sorted(p.name for p in Path(logdir).iterdir())) or 0)
    assert cli.main(["view", str(SAMPLES / "classic_add.json"), "--logdir",
                     str(tmp_path / "kept"), "--port", "8123"]) == 0
    (run,) = served["runs"]
    assert run.startswith("classic_add-") and served["logdir"] == tmp_path / "kept"
    assert f"Graph: http://127.0.0.1:8123/graph?run={run}" in capsys.readouterr().out
    assert [n.name for n in RunReader(tmp_path / "kept" / run).graph().nodes] == [
        "a", "b", "add"]


def test_view_of_a_missing_or_broken_file_says_so(tmp_path, capsys):
    assert cli.main(["view", str(tmp_path / "nope.json")]) == 2
    assert "nope.json" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert cli.main(["view", str(broken)]) == 2
    assert "broken.json" in capsys.readouterr().err


def test_serving_warms_the_newest_graphs_first(recorded):
    data.clear_cache()
    data.warm_graphs(limit=1)
    entries, _ = data.cache_stats()
    assert entries >= 4                        # the graph, its grouping, default, view
    data.set_logdir(recorded.logdir / "missing")   # nothing to warm is not an error
    data.warm_graphs()
