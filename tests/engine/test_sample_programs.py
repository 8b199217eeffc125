"""The TF1-style sample programs in sample_graphs/ run on the engine with only their import
changed and reach the quality they reach on TensorFlow (figures from TF 2.21's tf.compat.v1 on
the same data and step counts: CNN test accuracy 0.989, autoencoder test loss 0.183 -> 0.024,
GAN mean-image correlation 0.96, two-tower MLP test accuracy 0.975)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine.record import RunReader, list_runs

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
sys.path.insert(0, str(SAMPLES))
import autoencoder  # noqa: E402
import digits_cnn  # noqa: E402
import gan  # noqa: E402
import multi_tower  # noqa: E402


def test_digits_cnn_trains_checkpoints_and_summarises(tmp_path):
    logdir = tmp_path / "cnn"
    result = digits_cnn.train(str(logdir), steps=400)
    assert result["global_step"] == 400
    assert result["accuracy"] >= 0.95
    assert tf.train.latest_checkpoint(str(logdir)).endswith("model.ckpt-400")
    runs = [r for r in list_runs(tmp_path) if r.status != "unreadable"]
    assert [r.name for r in runs] == ["cnn"]
    with RunReader(runs[0].path) as reader:
        steps, losses = reader.scalars("cross_entropy")
        assert len(steps) >= 7 and losses[-1] < losses[0]
        assert "train_accuracy" in reader.tags()
        assert reader.placements(), "the MonitoredTrainingSession's placements are recorded"


def test_autoencoder_reconstructs_and_logs_images(tmp_path):
    result = autoencoder.train(str(tmp_path / "ae"), steps=600)
    assert result["loss_after"] < 0.05
    assert result["loss_after"] < result["loss_before"] / 3
    with RunReader(tmp_path / "ae") as reader:
        assert "reconstruction_loss" in reader.tags()
        assert reader.image_tags(), "tf.summary.image went into the run store"


def test_gan_generator_learns_the_data_mean():
    result = gan.train(steps=1500)
    assert np.isfinite(result["d_loss"]) and np.isfinite(result["g_loss"])
    assert result["mean_image_correlation"] > 0.8
    assert result["d_vars"] == ["discriminator/dense/kernel", "discriminator/dense/bias",
                                "discriminator/logit/kernel", "discriminator/logit/bias"]
    assert result["g_vars"] == ["generator/dense/kernel", "generator/dense/bias",
                                "generator/pixels/kernel", "generator/pixels/bias"]


@pytest.mark.parametrize("towers", [2])
def test_multi_tower_averages_gradients_across_two_virtual_gpus(towers):
    config = tf.ConfigProto(allow_soft_placement=True, virtual_gpus=towers)
    result = multi_tower.train(steps=300, towers=towers, config=config)
    assert result["accuracy"] > 0.93
    graph = result["graph"]
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(tf.global_variables_initializer())
        placement = sess.placement.as_dict()
    for i in range(towers):
        assert placement[f"tower_{i}/hidden/MatMul"].endswith(f"GPU:{i}")
    assert placement["hidden/weights"].endswith("CPU:0")
    assert placement["Momentum/update_hidden/weights/ApplyMomentum"].endswith("CPU:0")
