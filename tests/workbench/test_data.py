"""The data module: safe run names, unreadable folders, and refresh of live runs."""

from __future__ import annotations

import pytest

from engine.record import RunWriter
from engine.record.schema import UNREADABLE
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


def test_graph_view_layout_is_cached_per_scope_set(recorded):
    view, positions = data.graph_view(recorded.run, frozenset())
    again, same = data.graph_view(recorded.run, frozenset())
    assert same is positions
    assert {node.name for node in view.nodes} == {"x", "labels", "layer1", "layer2", "loss",
                                                   "gradients", "train"}
    opened, other = data.graph_view(recorded.run, frozenset({"layer1"}))
    assert other is not positions
    assert "layer1/MatMul" in {node.name for node in opened.nodes}
    assert again == view


def test_default_expansion_opens_the_small_graph_fully(recorded):
    graph = data.graph(recorded.run)
    expanded = data.default_expanded(recorded.run)
    view, _ = data.graph_view(recorded.run, expanded)
    assert len(view.nodes) == len(graph.nodes)
