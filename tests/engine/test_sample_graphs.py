"""The committed sample graphs load, import, run, and still match the script that builds
them (names, ops, inputs, devices)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine.graph_def import graph_def_from_json, import_graph_def

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
sys.path.insert(0, str(SAMPLES))
import build_samples  # noqa: E402


def load(name):
    return graph_def_from_json((SAMPLES / name).read_text(), name)


@pytest.mark.parametrize("name", sorted(build_samples.SAMPLES))
def test_sample_file_matches_its_builder(name):
    stored = load(name)
    built = build_samples.SAMPLES[name]().as_graph_def()
    summary = [(n.name, n.op, list(n.input), n.device) for n in built.node]
    assert [(n.name, n.op, list(n.input), n.device) for n in stored.node] == summary


@pytest.mark.parametrize("name, gpus", [("classic_add.json", 0), ("cross_device.json", 2)])
def test_classic_samples_run(name, gpus):
    g = tf.Graph()
    import_graph_def(load(name), graph=g, name="")
    with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=gpus)) as sess:
        assert sess.run("add:0").tolist() == [2.0, 4.0, 6.0]
        if gpus:
            assert sess.placement.device_of("add").endswith("GPU:1")


def test_mlp_sample_trains_after_import():
    g = tf.Graph()
    import_graph_def(load("mlp_train.json"), graph=g, name="")
    rng = np.random.RandomState(0)
    x = rng.rand(32, 64).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 32)]
    config = tf.ConfigProto(virtual_gpus=2, allow_soft_placement=True)
    with tf.Session(graph=g, config=config) as sess:
        sess.run("init")
        feeds = {"pixels:0": x, "labels:0": y}
        first = sess.run("loss/mean:0", feeds)
        for _ in range(20):
            sess.run("GradientDescent", feeds)
        assert sess.run("loss/mean:0", feeds) < first


def test_scale_builder_reaches_requested_size():
    g = build_samples.scale(2000)
    assert 2000 <= len(g.get_operations()) < 2100


@pytest.mark.parametrize("name", ["digits_mlp_frozen.json", "digits_cnn_frozen.json"])
def test_frozen_digits_models_classify_the_held_out_split(name):
    """The frozen graphs (build_frozen.py) hold only constants and run by tensor names."""
    import digits
    graph = tf.load_graph(str(SAMPLES / name))
    assert not [op for op in graph.get_operations() if op.type.startswith("Variable")]
    test = digits.read_data_sets(0).test
    with tf.Session(graph=graph) as sess:
        probabilities = sess.run("probabilities:0", {"images:0": test.images})
    assert probabilities.shape == (len(test.images), 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    assert (probabilities.argmax(axis=1) == test.labels).mean() >= 0.97
