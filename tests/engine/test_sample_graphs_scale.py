"""The Inception-v3-sized sample graphs (sample_graphs/inception_like.py), built at test time
(about 10 MB of JSON each, so not committed): engine.save_graph and engine.load_graph round-trip
them, and the graph page's grouping opens them onto a handful of nodes (TensorBoard's series
for the towers, none for Inception's mixed blocks, whose structures differ)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import engine as tf
from engine.runtime.recording import graph_record
from viz.hierarchy import SERIES, build_hierarchy, default_expansion, hierarchy_view

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sample_graphs"))
import inception_like  # noqa: E402  (a script folder, not a package)


@pytest.fixture(scope="module")
def inception(tmp_path_factory):
    path = inception_like.write("inception_v3", tmp_path_factory.mktemp("samples"))
    return path, tf.load_graph(path)


def test_inception_sample_is_inception_sized_and_loads(inception):
    path, graph = inception
    names = [op.name for op in graph.get_operations()]
    assert 9_500 <= len(names) <= 11_000
    for scope in ("InceptionV3/Conv2d_1a_3x3/", "InceptionV3/Mixed_5b/Branch_3/",
                  "InceptionV3/Mixed_7c/", "InceptionV3/AuxLogits/", "gradients/InceptionV3/",
                  "Momentum/", "ExponentialMovingAverage/"):
        assert any(name.startswith(scope) for name in names), scope
    assert graph.get_operation_by_name("train").type == "NoOp"


def test_inception_opens_onto_a_handful_of_nodes_without_false_series(inception):
    _, graph = inception
    record = graph_record(graph.as_graph_def())
    tree = build_hierarchy(record)
    view = hierarchy_view(tree, default_expansion(tree))
    assert len(view.leaves()) <= 15
    mixed = [gid for gid in tree.groups["InceptionV3"].children if "Mixed" in gid]
    assert len(mixed) == 11                     # Mixed_5b … Mixed_7c, each its own group
    assert tree.groups["InceptionV3/Mixed_5b"].children[:4] == tuple(
        f"InceptionV3/Mixed_5b/Branch_{i}" for i in range(4))     # four different branches


def test_tower_variant_is_one_series_of_towers():
    graph = inception_like.towers(2)
    tree = build_hierarchy(graph_record(graph.as_graph_def()))
    (towers,) = [g for g in tree.groups.values() if g.kind == SERIES and g.parent == ""]
    assert towers.label == "tower_[0-1]" and towers.children == ("tower_0", "tower_1")
    view = hierarchy_view(tree, default_expansion(tree))
    assert [leaf.id for leaf in view.leaves()][:3] == ["images", "labels", "tower_[0-1]"]
