"""The pruning and distillation sample programs, run for a few steps: the distillation loss
is wired as Hinton et al. write it, and prune_digits records its whole analysis."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine.record import RunReader

SAMPLES = Path(__file__).resolve().parents[2] / "sample_graphs"
sys.path.insert(0, str(SAMPLES))
import distill_digits  # noqa: E402
import prune_digits  # noqa: E402


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _student_losses(temperature: float, alpha: float, feed_arrays):
    graph = tf.Graph()
    with graph.as_default():
        model = distill_digits.build_student(temperature, alpha, seed=3)
        images, labels, teacher = feed_arrays
        feed = {model["images"]: images, model["labels"]: labels,
                model["teacher_logits"]: teacher}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run([model["soft"], model["hard"], model["loss"], model["logits"]],
                            feed)


@pytest.fixture
def batch():
    rng = np.random.RandomState(0)
    return (rng.rand(8, 8, 8, 1).astype(np.float32), rng.randint(0, 10, 8).astype(np.int64),
            (rng.randn(8, 10) * 3).astype(np.float32))


def test_soft_loss_uses_the_teachers_logits_over_t(batch):
    soft, hard, loss, logits = _student_losses(4.0, 0.7, batch)
    targets = _softmax(batch[2] / 4.0)
    log_student = np.log(_softmax(logits / 4.0))
    expected_soft = -(targets * log_student).sum(axis=1).mean()
    assert soft == pytest.approx(expected_soft, rel=1e-5)
    assert loss == pytest.approx(0.7 * 16.0 * soft + 0.3 * hard, rel=1e-5)


def test_t1_alpha0_is_the_plain_students_loss(batch):
    _, hard, loss, logits = _student_losses(1.0, 0.0, batch)
    expected = -np.log(_softmax(logits)[np.arange(8), batch[1]]).mean()
    assert loss == pytest.approx(hard) and hard == pytest.approx(expected, rel=1e-5)


def test_distill_sample_runs_and_records_both_students(tmp_path):
    result = distill_digits.run(teacher_steps=20, steps=5, logdir=str(tmp_path))
    assert 0.0 <= result["teacher"] <= 1.0
    assert len(result["distilled"]["losses"]) == len(result["alone"]["losses"]) == 5
    # Same initial weights and batches; only the loss differs.
    assert result["distilled"]["losses"][0] != result["alone"]["losses"][0]
    for name in ("student-distilled", "student-alone"):
        reader = RunReader(tmp_path / name)
        assert set(reader.tags()) == {"loss", "test_accuracy"}


def test_prune_sample_records_the_analysis(tmp_path):
    result = prune_digits.run(steps=30, stages=2, steps_per_stage=5, fine_tune_steps=3,
                              logdir=str(tmp_path), run_name="pruned",
                              sparsities=(0.0, 0.5, 0.9))
    assert result["max_output_difference"] < 1e-5
    assert result["compression"].stored_values < result["compression"].dense_values
    reader = RunReader(tmp_path / "pruned")
    curves = reader.sensitivity_curves()
    assert list(curves) == ["dense/kernel", "dense_1/kernel", "logits/kernel"]
    assert [p.sparsity for p in curves["logits/kernel"]] == [0.0, 0.5, 0.9]
    stages = reader.prune_stages()
    assert [s.stage for s in stages] == [0, 1, 2, 3]
    final = {layer.layer: layer.sparsity for layer in stages[-1].layers}
    assert final["dense/kernel"] == pytest.approx(0.91, abs=1e-3)
    assert reader.compression().stored_values == result["compression"].stored_values
    assert "prune/accuracy" in reader.tags()


def test_prune_sample_parses_targets():
    assert prune_digits.parse_targets("a=0.5,b/kernel=0.9") == {"a": 0.5, "b/kernel": 0.9}
    with pytest.raises(Exception, match="expected layer=sparsity"):
        prune_digits.parse_targets("a:0.5")
