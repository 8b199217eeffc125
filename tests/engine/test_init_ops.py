"""Initializers: constant values, the scale each random initializer uses (the very constants
TensorFlow 2.21's compat.v1 puts into the graph for the same call), TF's fan rule for conv
kernels, and the moments and bounds of what they draw."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf

N = 200_000


def _scalar_consts(tensor) -> dict[str, float]:
    """The scalar constants the initializer built, by their short name (min, max, stddev)."""
    prefix = tensor.op.name.split("/")[0]
    return {op.name.split("/")[-1]: float(op.attrs["value"])
            for op in tensor.graph.get_operations()
            if op.type == "Const" and op.name.startswith(prefix) and op.attrs["value"].ndim == 0}


def _run(tensor):
    with tf.Session(graph=tensor.graph) as s:
        return s.run(tensor)


# Values printed by tensorflow 2.21 (tf.compat.v1) for the same initializer calls.
TF_CONSTANTS = [
    (lambda: tf.glorot_uniform_initializer()([3, 3, 16, 32]), {"min": -0.1178511306643486,
                                                               "max": 0.1178511306643486}),
    (lambda: tf.glorot_normal_initializer()([20, 30]), {"mean": 0.0,
                                                        "stddev": 0.22736944258213043}),
    (lambda: tf.variance_scaling_initializer(2.0)([5, 5, 3, 8]), {"mean": 0.0,
                                                                  "stddev": 0.18564637005329132}),
    (lambda: tf.variance_scaling_initializer(1.5, "fan_out", "untruncated_normal")([7, 9]),
     {"mean": 0.0, "stddev": 0.40824830532073975}),
    (lambda: tf.variance_scaling_initializer(3.0, "fan_avg", "uniform")([4]),
     {"min": -1.5, "max": 1.5}),
    (lambda: tf.initializers.he_normal()([10, 4]), {"mean": 0.0, "stddev": 0.508413553237915}),
]


@pytest.mark.parametrize("case", range(len(TF_CONSTANTS)))
def test_scales_match_tensorflow(case):
    make, want = TF_CONSTANTS[case]
    with tf.Graph().as_default():
        got = _scalar_consts(make())
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-6)


def test_conv_fans_use_the_receptive_field():
    from engine.ops.init_ops import compute_fans
    assert compute_fans([3, 3, 16, 32]) == (144, 288)
    assert compute_fans([20, 30]) == (20, 30)
    assert compute_fans([7]) == (7, 7)
    assert compute_fans([]) == (1, 1)


def test_variance_scaling_draws_have_the_intended_variance():
    """The truncated normal's 0.8796 correction makes the draws' stddev sqrt(scale / n)."""
    with tf.Graph().as_default():
        values = [_run(tf.variance_scaling_initializer(2.0, "fan_in", kind, seed=i)([400, 500]))
                  for i, kind in enumerate(["truncated_normal", "untruncated_normal", "uniform"])]
    want = np.sqrt(2.0 / 400)
    for v in values:
        assert abs(v.std() - want) < 0.01 * want
        assert abs(v.mean()) < 0.01 * want
    assert np.abs(values[0]).max() <= 2 * want / 0.87962566 + 1e-7
    assert np.abs(values[2]).max() <= np.sqrt(3) * want


def test_glorot_uniform_range_and_normal_stddev():
    with tf.Graph().as_default():
        u = _run(tf.glorot_uniform_initializer(seed=1)([300, 500]))
        n = _run(tf.glorot_normal_initializer(seed=1)([300, 500]))
    limit = np.sqrt(6.0 / 800)
    assert np.abs(u).max() <= limit and np.abs(u).max() > 0.99 * limit
    assert abs(n.std() - np.sqrt(2.0 / 800)) < 0.01 * np.sqrt(2.0 / 800)


def test_random_initializers_use_their_parameters():
    with tf.Graph().as_default():
        normal = _run(tf.random_normal_initializer(2.0, 0.5, seed=4)([N]))
        trunc = _run(tf.truncated_normal_initializer(-1.0, 0.1, seed=5)([N]))
        uniform = _run(tf.random_uniform_initializer(-4, 4, seed=6)([N]))
        doubles = tf.random_normal_initializer(seed=7)([3], dtype=tf.float64)
    assert abs(normal.mean() - 2.0) < 0.01 and abs(normal.std() - 0.5) < 0.01
    assert np.abs(trunc + 1.0).max() <= 0.2 + 1e-6
    assert uniform.min() >= -4 and uniform.max() < 4 and abs(uniform.mean()) < 0.05
    assert doubles.dtype == tf.float64


def test_seeded_initializers_repeat():
    values = []
    for _ in range(2):
        with tf.Graph().as_default():
            values.append(_run(tf.glorot_uniform_initializer(seed=11)([4, 5])))
    np.testing.assert_array_equal(*values)


def test_zeros_ones_and_constants():
    with tf.Graph().as_default():
        z = tf.zeros_initializer()([2, 3], dtype=tf.int64)
        o = tf.ones_initializer(dtype=tf.float64)([2])
        c = tf.constant_initializer(7.5)([2, 2])
        padded = tf.constant_initializer([1, 2])([4])
        full = tf.constant_initializer(np.arange(6).reshape(2, 3))([3, 2], dtype=tf.int32)
        assert z.dtype == tf.int64 and o.dtype == tf.float64 and full.dtype == tf.int32
        np.testing.assert_array_equal(_run(z), np.zeros((2, 3)))
        np.testing.assert_array_equal(_run(o), [1.0, 1.0])
        np.testing.assert_array_equal(_run(c), np.full((2, 2), 7.5))
        np.testing.assert_array_equal(_run(padded), [1, 2, 2, 2])    # TF1 repeats the last
        np.testing.assert_array_equal(_run(full), np.arange(6).reshape(3, 2))


def test_initializer_errors_match_tf():
    with pytest.raises(ValueError, match="Argument `scale` must be a positive float"):
        tf.variance_scaling_initializer(scale=0.0)
    with pytest.raises(ValueError, match="Argument `mode` should be one of"):
        tf.variance_scaling_initializer(mode="fan")
    with pytest.raises(ValueError, match="Argument `distribution` should be one of"):
        tf.variance_scaling_initializer(distribution="gauss")
    with pytest.raises(ValueError, match="Expected floating point type"):
        tf.random_normal_initializer(dtype=tf.int32)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Too many elements provided. Takes at most 2"):
            tf.constant_initializer([1, 2, 3])([2])
        with pytest.raises(TypeError, match="Expected Tensor's shape"):
            tf.constant_initializer([1, 2], verify_shape=True)([3])


def test_initializers_namespace_and_config():
    assert tf.initializers.zeros is tf.zeros_initializer
    assert tf.initializers.glorot_uniform is tf.glorot_uniform_initializer
    config = tf.variance_scaling_initializer(2.0, "fan_out", "uniform", seed=3).get_config()
    assert config == {"scale": 2.0, "mode": "fan_out", "distribution": "uniform", "seed": 3,
                      "dtype": "float32"}
    assert isinstance(tf.variance_scaling_initializer.from_config(config),
                      tf.variance_scaling_initializer)
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        init = tf.initializers.global_variables()
        assert v.initializer in init.control_inputs
