"""viz.first_view: the Graph page's first view is the default expansion when its drawing
fits the 1280x800 window at zoom 0.6 or more, else the same with its biggest outer scopes
closed one by one until it does (the demo fits fully open at 0.60; asked for 0.65 it closes
its gradients: 0.69); a graph that fits already (the Inception-sized sample) keeps its
default view."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.record.reader import open_run
from engine.runtime.recording import graph_record
from viz.first_view import MAX_TRIES, READABLE_ZOOM, closings, element_fit_zoom, first_view
from viz.graph_elements import graph_elements
from viz.hierarchy import build_hierarchy, default_expansion, hierarchy_view
from workbench.demo import train_mlp

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sample_graphs"))
import inception_like  # noqa: E402  (a script folder, not a package)

DEMO_DEFAULT = {"GradientDescent", "accuracy", "counter", "gradients", "init", "layer1",
                "layer2", "logits", "loss", "train"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo's MLP as the demo records it: placed, so closed scopes name their device."""
    path, _ = train_mlp(str(tmp_path_factory.mktemp("first-view")), "demo", 0.1, steps=2)
    reader = open_run(path)
    record = reader.graph()
    return record, build_hierarchy(record), reader.placements(record.version)


def zoom_of(record, tree, placements=()):
    def measured(expanded):
        elements, _ = graph_elements(hierarchy_view(tree, expanded), record, placements)
        return element_fit_zoom(elements)
    return measured


def test_closings_close_the_biggest_outer_scope_first_down_to_none(demo):
    _, tree, _ = demo
    found = list(closings(tree, default_expansion(tree)))
    assert found[0] == DEMO_DEFAULT
    assert found[1] == DEMO_DEFAULT - {"gradients"}          # 8 of the 43 leaves drawn
    assert found[-1] == frozenset() and len(found) == len(DEMO_DEFAULT) + 1
    assert all(later < earlier for earlier, later in zip(found, found[1:]))
    # closing an outer scope closes what it holds
    nested = list(closings(tree, {"gradients", "gradients/layer1", "layer1"}))
    assert nested[1] == {"layer1"} and nested[2] == frozenset()


def test_the_demo_opens_fully_and_closes_its_gradients_when_asked_for_more(demo):
    measured = zoom_of(*demo)
    tree = demo[1]
    # the whole default expansion reads at 1280x800 (viz.layout's spacing)
    assert measured(default_expansion(tree)) == pytest.approx(0.60, abs=0.01)
    assert first_view(tree, measured) == DEMO_DEFAULT
    assert measured(DEMO_DEFAULT) >= READABLE_ZOOM
    chosen = first_view(tree, measured, least=0.65)
    assert chosen == DEMO_DEFAULT - {"gradients"}
    assert measured(chosen) == pytest.approx(0.69, abs=0.03)
    # asked for less, the default itself; for more, more closed
    assert first_view(tree, measured, least=0.5) == DEMO_DEFAULT
    assert first_view(tree, measured, least=0.8) == {"counter", "init", "layer2", "logits",
                                                     "loss", "train"}


def test_what_fits_nowhere_opens_the_best_of_those_tried(demo):
    _, tree, _ = demo
    tried = []

    def measured(expanded):
        tried.append(expanded)
        return 0.1 if expanded else 0.3
    assert first_view(tree, measured) == frozenset()
    assert len(tried) == len(DEMO_DEFAULT) + 1 <= MAX_TRIES
    with pytest.raises(ValueError, match="must be positive, got 0"):
        first_view(tree, measured, least=0)


def test_inception_keeps_its_default_view():
    record = graph_record(inception_like.inception_v3().as_graph_def())
    tree = build_hierarchy(record)
    tried = []
    measured = zoom_of(record, tree)
    chosen = first_view(tree, lambda expanded: tried.append(expanded) or measured(expanded))
    assert chosen == default_expansion(tree) and len(tried) == 1
    assert measured(chosen) == pytest.approx(1.52, abs=0.05)
