"""The data module: safe run names, unreadable folders, and refresh of live runs."""

from __future__ import annotations

import pytest

from engine.record import RunWriter
from engine.record.schema import UNREADABLE
from viz.hierarchy import default_expansion
from workbench import data


def test_runs_include_the_unreadable_folder(recorded):
    infos = {info.name: info for info in data.runs()}
    assert set(infos) == {*recorded.runs, recorded.unreadable}
    assert infos[recorded.unreadable].status == UNREADABLE
    assert recorded.unreadable not in data.readable_run_names()


@pytest.mark.parametrize("name", ["", "..", "../etc", "a/b", "no-such-run"])
def test_run_names_outside_the_logdir_are_refused(recorded, name):
    with pytest.raises(data.UnknownRunError):
        data.run_path(name)


def test_missing_logdir_lists_nothing(tmp_path):
    data.set_logdir(tmp_path / "absent")
    try:
        assert data.runs() == []
        assert data.readable_run_names() == []
    finally:
        data.set_logdir("runs")


def test_a_live_run_refreshes(empty_logdir):
    writer = RunWriter(empty_logdir, "live")
    try:
        writer.scalar("loss", 1.0, 0)
        writer.flush()
        steps, _ = data.scalars("live", "loss")
        assert steps.tolist() == [0]
        writer.scalar("loss", 0.5, 1)
        writer.flush()
        steps, values = data.scalars("live", "loss")
        assert steps.tolist() == [0, 1]
        assert values.tolist() == [1.0, 0.5]
    finally:
        writer.close()


def test_graph_view_is_cached_per_expansion(recorded):
    closed = data.view(recorded.run, frozenset())
    assert data.view(recorded.run, frozenset()) is closed
    assert {node.id for node in closed.nodes} == {"x", "labels", "layer1", "layer2", "loss",
                                                   "gradients", "train"}
    opened = data.view(recorded.run, frozenset({"layer1"}))
    assert opened is not closed
    assert "layer1/MatMul" in {node.id for node in opened.nodes}


def test_default_expansion_opens_the_small_graph_fully(recorded):
    graph = data.graph(recorded.run)
    drawn = data.view(recorded.run, default_expansion(data.hierarchy(recorded.run)))
    leaves = [node for node in drawn.nodes if not node.expanded]
    assert sorted(leaf.members for leaf in leaves) == sorted(
        (node.name,) for node in graph.nodes)          # one leaf per op: nothing left closed
