"""engine/compression/evaluate.py: accuracy in batches against labels, and graph file bytes as
save_graph writes them (with and without creation stacks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.compression.evaluate import accuracy, constant_bytes, file_bytes, without_stacks
from engine.compression.job import load_dataset

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"


def argmax_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="images")
        tf.identity(x, name="probabilities")
    return g.as_graph_def()


def test_accuracy_counts_argmax_hits_across_batches():
    x = np.eye(3, dtype=np.float32)[[0, 1, 2, 0, 1]]
    labels = np.array([0, 1, 0, 0, 2])
    assert accuracy(argmax_graph(), x, labels, batch_size=2) == pytest.approx(3 / 5)


def test_accuracy_refuses_mismatched_labels():
    with pytest.raises(errors.InvalidArgumentError, match="3 images but 2 labels"):
        accuracy(argmax_graph(), np.zeros((3, 3), np.float32), np.zeros(2))


def test_file_bytes_match_what_save_graph_writes(tmp_path):
    gd = tf.load_graph_def(SAMPLES / "digits_mlp_frozen.json")
    tf.save_graph(gd, tmp_path / "graph.json")
    written = sum((tmp_path / f).stat().st_size for f in ("graph.json", "graph.json.npz"))
    assert file_bytes(gd) == written
    assert file_bytes(gd, strip_stacks=True) < written
    assert all("stack" not in n.meta for n in without_stacks(gd).node)
    assert constant_bytes(gd) == 4 * (64 * 64 + 64 + 64 * 32 + 32 + 32 * 10 + 10) + 4 * 2


def test_the_digits_dataset_is_the_samples_split():
    data = load_dataset("digits")
    assert data.test_images.shape == (360, 8, 8, 1) and data.train_images.shape[0] == 1437
    with pytest.raises(errors.InvalidArgumentError, match="unknown dataset 'mnist'"):
        load_dataset("mnist")
