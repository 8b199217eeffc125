"""Magnitude pruning: exact masks and their ties, masks kept through retraining, MOT's
schedules, the sensitivity curves, prune-and-retrain stages, CSR storage (a saved pruned
graph gives the masked dense graph's outputs) and the compression figures."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine.compression import pruning


def _model(seed: int = 0):
    """x [None, 6] -> dense 6x5 relu -> dense 5x3 logits, trained with plain SGD."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        hidden = tf.layers.dense(x, 5, activation=tf.nn.relu, name="hidden")
        logits = tf.layers.dense(hidden, 3, name="logits")
        tf.identity(logits, name="out")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    rng = np.random.RandomState(seed)
    data = rng.randn(32, 6).astype(np.float32)
    labels = (data[:, 0] > 0).astype(np.int64) + (data[:, 1] > 0)
    return graph, {"x": x, "y": y, "loss": loss, "accuracy": accuracy, "step": step,
                   "feed": {x: data, y: labels}}


def test_mask_zeros_exactly_the_smallest_magnitudes():
    weights = np.array([[0.5, -0.1, 0.3], [-0.7, 0.2, -0.05]], np.float32)
    mask = pruning.magnitude_mask(weights, 0.5)
    np.testing.assert_array_equal(mask, [[1, 0, 1], [1, 0, 0]])
    assert mask.dtype == np.float32


def test_mask_ties_prune_the_earlier_element_first_and_count_is_exact():
    weights = np.array([1.0, -1.0, 1.0, 1.0, 2.0], np.float32)
    np.testing.assert_array_equal(pruning.magnitude_mask(weights, 0.4), [0, 0, 1, 1, 1])
    # round(0.5 * 5) = 2 (numpy rounds half to even): exactly that many zeros, never more.
    assert (pruning.magnitude_mask(weights, 0.5) == 0).sum() == 2


def test_mask_keeps_already_pruned_weights_pruned():
    weights = np.array([0.0, 0.9, 0.1, 0.8], np.float32)
    keep = np.array([1, 0, 1, 1], np.float32)          # 0.9 was pruned earlier (now regrown)
    np.testing.assert_array_equal(pruning.magnitude_mask(weights, 0.5, keep), [0, 0, 1, 1])


def test_default_variables_are_the_kernels_and_masks_are_not_trainable():
    graph, _ = _model()
    with graph.as_default():
        pruner = pruning.MagnitudePruning()
        assert pruner.names == ["hidden/kernel", "logits/kernel"]
        trainable = {v.op.name for v in tf.trainable_variables()}
        assert not trainable & {m.op.name for m in pruner.masks.values()}
        assert pruner.masks["hidden/kernel"].op.name == "hidden/kernel/mask"


def test_masks_stay_zero_through_retraining_steps():
    graph, m = _model()
    with graph.as_default():
        pruner = pruning.MagnitudePruning()
        train = pruner.train_op(m["step"])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = pruner.weights(sess)
            sparsities = pruner.prune(sess, {"hidden/kernel": 0.6, "logits/kernel": 0.4})
            assert sparsities == {"hidden/kernel": 18 / 30, "logits/kernel": 6 / 15}
            masks = pruner.mask_values(sess)
            expected = before["hidden/kernel"] * pruning.magnitude_mask(
                before["hidden/kernel"], 0.6)
            np.testing.assert_array_equal(pruner.weights(sess)["hidden/kernel"], expected)
            for _ in range(5):
                sess.run(train, m["feed"])
            after = pruner.weights(sess)
            for name, mask in masks.items():
                assert np.all(after[name][mask == 0] == 0)
            kept = masks["hidden/kernel"] == 1
            assert np.any(after["hidden/kernel"][kept] != expected[kept])   # it did train


def test_polynomial_decay_matches_mot_formula():
    schedule = pruning.PolynomialDecay(0.2, 0.8, begin_step=10, end_step=30, frequency=5)
    assert schedule(10) == (True, pytest.approx(0.2))
    due, value = schedule(20)
    assert due and value == pytest.approx(0.8 + (0.2 - 0.8) * 0.5 ** 3)
    assert schedule(22)[0] is False
    assert schedule(30) == (True, pytest.approx(0.8))
    assert schedule(35) == (False, pytest.approx(0.8))
    assert schedule(0) == (False, pytest.approx(0.2))
    assert pruning.ConstantSparsity(0.5, begin_step=4, frequency=2)(6) == (True, 0.5)
    assert pruning.ConstantSparsity(0.5, begin_step=4, frequency=2)(3)[0] is False
    assert pruning.ConstantSparsity(0.5, begin_step=4, end_step=8, frequency=2)(10)[0] is False


def test_update_prunes_on_the_schedule():
    graph, _ = _model()
    with graph.as_default():
        pruner = pruning.MagnitudePruning(["logits/kernel"])
        schedule = pruning.ConstantSparsity(0.6, begin_step=2, frequency=2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert pruner.update(sess, 1, schedule) is False
            assert pruner.sparsities(sess) == {"logits/kernel": 0.0}
            assert pruner.update(sess, 2, schedule) is True
            assert pruner.sparsities(sess) == {"logits/kernel": 9 / 15}


def test_sensitivity_curves_have_one_point_per_sparsity_and_restore_weights():
    graph, m = _model()
    with graph.as_default():
        pruner = pruning.MagnitudePruning()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = pruner.weights(sess)
            curves = pruning.sensitivity_analysis(
                sess, pruner, lambda: sess.run(m["accuracy"], m["feed"]), (0.0, 0.5, 0.9))
            assert list(curves) == ["hidden/kernel", "logits/kernel"]
            full = float(sess.run(m["accuracy"], m["feed"]))
            for curve in curves.values():
                assert [s for s, _ in curve] == [0.0, 0.5, 0.9]
                assert curve[0][1] == pytest.approx(full)
                assert all(0.0 <= acc <= 1.0 for _, acc in curve)
            after = pruner.weights(sess)
            for name in before:
                np.testing.assert_array_equal(after[name], before[name])


def test_prune_and_retrain_records_each_stage():
    graph, m = _model()
    with graph.as_default():
        pruner = pruning.MagnitudePruning()
        train = pruner.train_op(m["step"])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            history = pruning.prune_and_retrain(
                sess, pruner, lambda: sess.run(train, m["feed"]),
                lambda: sess.run(m["accuracy"], m["feed"]), {"hidden/kernel": 0.8},
                stages=2, steps_per_stage=3, fine_tune_step=lambda: sess.run(train, m["feed"]),
                fine_tune_steps=2)
    assert [s.stage for s in history] == [0, 1, 2, 3]
    assert [s.step for s in history] == [0, 3, 6, 8]
    assert history[1].targets == {"hidden/kernel": pytest.approx(0.8 * (1 - 0.5 ** 3))}
    assert history[2].sparsities["hidden/kernel"] == pytest.approx(24 / 30)
    assert history[3].sparsities["hidden/kernel"] == pytest.approx(24 / 30)
    assert history[2].sparsities["logits/kernel"] == 0.0


def test_csr_round_trip_equals_the_masked_dense_weights():
    rng = np.random.RandomState(1)
    dense = rng.randn(5, 4).astype(np.float32) * pruning.magnitude_mask(rng.randn(5, 4), 0.7)
    dense[2] = 0                                            # an empty row
    values, cols, ptr = pruning.dense_to_csr(dense)
    assert values.size == np.count_nonzero(dense) and ptr[0] == 0 and ptr[-1] == values.size
    assert cols.dtype == ptr.dtype == np.int32
    np.testing.assert_array_equal(pruning.csr_to_dense(values, cols, ptr, dense.shape), dense)
    conv = rng.randn(2, 2, 3, 4).astype(np.float32)
    np.testing.assert_array_equal(
        pruning.csr_to_dense(*pruning.dense_to_csr(conv), conv.shape), conv)


def test_saved_sparse_graph_gives_the_masked_dense_outputs(tmp_path):
    graph, m = _model()
    with graph.as_default():
        pruner = pruning.MagnitudePruning()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            pruner.prune(sess, {"hidden/kernel": 0.7, "logits/kernel": 0.8})
            # The last row of the output kernel empty as well: trailing empty CSR rows.
            weights = pruner.weights(sess)["logits/kernel"]
            weights[-1] = 0
            pruner.variables[1].load(weights, sess)
            expected = sess.run("out:0", m["feed"])
            masked = pruner.weights(sess)
            frozen = tf.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), ["out"])
    sparse = pruning.sparse_freeze(frozen, pruner.names)
    ops = {n.name: n.op for n in sparse.node}
    assert ops["hidden/kernel/csr_values"] == "Const"
    assert ops["hidden/kernel"] == "Reshape"
    tf.save_graph(sparse, tmp_path / "pruned.json")
    loaded = tf.load_graph(tmp_path / "pruned.json")
    with loaded.as_default(), tf.Session() as sess:
        values = sess.run("hidden/kernel/csr_values:0")
        got, kernel = sess.run(["out:0", "logits/kernel:0"],
                               {"x:0": m["feed"][m["x"]]})
    np.testing.assert_array_equal(values, masked["hidden/kernel"][masked["hidden/kernel"] != 0])
    np.testing.assert_array_equal(kernel, masked["logits/kernel"])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_compression_counts_values_and_bytes():
    weights = {"a": np.zeros((10, 10), np.float32), "b": np.eye(4, dtype=np.float32)}
    weights["a"][0, :5] = 1
    figures = pruning.compression(weights)
    assert figures.dense_values == 116 and figures.stored_values == 9
    assert figures.ratio == pytest.approx(116 / 9)
    assert figures.dense_bytes == 116 * 4
    assert figures.sparse_bytes == 9 * 4 + 9 * 4 + (11 + 5) * 4
    assert figures.per_layer == {"a": (100, 5), "b": (16, 4)}


def test_stage_targets_pick_the_sparsest_level_within_tolerance():
    curves = {"a": [(0.0, 0.9), (0.5, 0.89), (0.8, 0.7)], "b": [(0.0, 0.9), (0.5, 0.5)]}
    assert pruning.stage_targets(curves, 0.9, 0.02) == {"a": 0.5, "b": 0.0}


def test_unknown_variable_name_is_refused_with_the_known_names():
    graph, _ = _model()
    with graph.as_default():
        with pytest.raises(ValueError, match=r"no variable named 'nope'.*hidden/kernel"):
            pruning.MagnitudePruning(["nope"])
        pruner = pruning.MagnitudePruning()
        with pytest.raises(ValueError, match=r"no pruned variable named \['other'\]"):
            pruner.targets({"other": 0.5})


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5])
def test_sparsity_outside_zero_one_is_refused(bad):
    with pytest.raises(ValueError, match=r"sparsity must be in the range \[0, 1\)"):
        pruning.magnitude_mask(np.ones(4), bad)
    with pytest.raises(ValueError, match="initial_sparsity"):
        pruning.PolynomialDecay(bad, 0.5, 0, 10)
    with pytest.raises(TypeError, match="must be a number"):
        pruning.ConstantSparsity("0.5")


def test_sparse_freeze_refuses_names_that_are_not_frozen_constants():
    graph, _ = _model()
    with pytest.raises(ValueError, match=r"\['hidden/kernel'\] are not Const nodes"):
        pruning.sparse_freeze(graph.as_graph_def(), ["hidden/kernel"])


def test_csr_and_dense_files_are_compared_in_the_same_form(tmp_path):
    rng = np.random.RandomState(0)
    kernel = rng.standard_normal((64, 64)).astype(np.float32)
    kernel[np.abs(kernel) < np.quantile(np.abs(kernel), 0.9)] = 0
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        tf.matmul(x, tf.constant(kernel, name="kernel"), name="out")
    frozen = graph.as_graph_def()
    compact = pruning.sparse_file_bytes(frozen, ["kernel"])
    as_json = pruning.sparse_file_bytes(frozen, ["kernel"], compact=False)
    assert compact.file_format == "compact" and as_json.file_format == "json"
    # Binary index arrays instead of inline JSON text; deflate squeezes the dense zeros too.
    assert compact.sparse_bytes < 0.5 * as_json.sparse_bytes
    assert compact.dense_bytes < 0.5 * as_json.dense_bytes
    pruning.save_sparse(frozen, ["kernel"], tmp_path / "pruned.json")
    assert (tmp_path / "pruned.json").read_bytes()[:2] == b"PK"
    assert compact.sparse_bytes == (tmp_path / "pruned.json").stat().st_size
    loaded = tf.load_graph(tmp_path / "pruned.json")
    feed = rng.standard_normal((3, 64)).astype(np.float32)
    with loaded.as_default(), tf.Session() as sess:
        got = sess.run("out:0", {"x:0": feed})
    np.testing.assert_allclose(got, feed @ kernel, rtol=1e-5, atol=1e-5)
