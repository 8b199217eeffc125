"""tf.layers: variable and op names as TensorFlow gives them, layer objects and weight
sharing, dense / flatten / dropout against numpy, regularization losses, a small net with
fixed weights against real TensorFlow's numbers, and a short training run."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import engine as tf

DATA = pathlib.Path(__file__).parent / "data"


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def _run(fetches, feeds=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feeds)


# ---- names (as printed by tensorflow 2.21 compat.v1 with tf_keras) ----

def test_variable_names_follow_tf(graph):
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    c = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
    c2 = tf.layers.conv2d(c, 5, (3, 3), strides=2)
    f = tf.layers.flatten(tf.layers.max_pooling2d(c2, 2, 2))
    tf.layers.dense(tf.layers.dense(f, 3), 2)
    bn = tf.layers.batch_normalization(c, training=True)
    assert bn.name == "batch_normalization/FusedBatchNormV3:0"     # 4-D: the fused op
    assert [v.name for v in tf.global_variables()] == [
        "conv2d/kernel:0", "conv2d/bias:0", "conv2d_1/kernel:0", "conv2d_1/bias:0",
        "dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0",
        "batch_normalization/gamma:0", "batch_normalization/beta:0",
        "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
    assert [v.name for v in tf.trainable_variables()][-2:] == [
        "batch_normalization/gamma:0", "batch_normalization/beta:0"]
    assert [v.name for v in tf.trainable_variables("conv2d_1")] == ["conv2d_1/kernel:0",
                                                                    "conv2d_1/bias:0"]
    assert (c.name, c2.name, f.name) == ("conv2d/Relu:0", "conv2d_1/BiasAdd:0",
                                         "flatten/Reshape:0")
    assert c2.shape.as_list() == [None, 3, 3, 5] and f.shape.as_list() == [None, 5]


def test_op_names_follow_tf(graph):
    x = tf.placeholder(tf.float32, [None, 4])
    before = len(graph.get_operations())
    tf.layers.dense(x, 3, activation=tf.nn.relu)
    assert [(op.name, op.type) for op in graph.get_operations()[before:]] == [
        ("dense/kernel/Initializer/random_uniform/shape", "Const"),
        ("dense/kernel/Initializer/random_uniform/min", "Const"),
        ("dense/kernel/Initializer/random_uniform/max", "Const"),
        ("dense/kernel/Initializer/random_uniform/RandomUniform", "RandomUniform"),
        ("dense/kernel/Initializer/random_uniform/sub", "Sub"),
        ("dense/kernel/Initializer/random_uniform/mul", "Mul"),
        ("dense/kernel/Initializer/random_uniform", "Add"),
        ("dense/kernel", "VariableV2"), ("dense/kernel/Assign", "Assign"),
        ("dense/kernel/read", "Identity"),
        ("dense/bias/Initializer/zeros", "Const"), ("dense/bias", "VariableV2"),
        ("dense/bias/Assign", "Assign"), ("dense/bias/read", "Identity"),
        ("dense/MatMul", "MatMul"), ("dense/BiasAdd", "BiasAdd"), ("dense/Relu", "Relu")]
    assert tf.layers.dropout(x, 0.3).name == "dropout/Identity:0"
    pooled = tf.layers.max_pooling2d(tf.placeholder(tf.float32, [1, 4, 4, 1]), 2, 2)
    assert pooled.op.name == "max_pooling2d/MaxPool"


def test_layer_objects_share_their_weights(graph):
    x = tf.placeholder(tf.float32, [None, 5])
    layer = tf.layers.Dense(3, name="mine")
    y1, y2 = layer(x), layer(x)
    assert (layer.name, y1.name, y2.name) == ("mine", "mine/BiasAdd:0", "mine/BiasAdd_1:0")
    assert [v.name for v in layer.variables] == ["mine/kernel:0", "mine/bias:0"]
    assert layer.kernel.name == "mine/kernel:0" and len(tf.global_variables()) == 2
    unnamed = tf.layers.Dense(3)
    assert unnamed.name == "dense_1"           # Keras numbers unnamed layers from 1 ...
    unnamed(x)
    assert unnamed.kernel.name == "dense/kernel:0"   # ... the variable scope from 0
    assert unnamed.scope_name == "dense"
    v1, v2 = _run([y1, y2], {x: np.ones((2, 5), np.float32)})
    np.testing.assert_array_equal(v1, v2)


def test_reuse_through_variable_scopes_and_the_reuse_argument(graph):
    x = tf.placeholder(tf.float32, [None, 5])
    with tf.variable_scope("shared"):
        e1 = tf.layers.dense(x, 2, name="fc")
    with tf.variable_scope("shared", reuse=True):
        e2 = tf.layers.dense(x, 2, name="fc")
    assert (e1.name, e2.name) == ("shared/fc/BiasAdd:0", "shared_1/fc/BiasAdd:0")
    assert [v.name for v in tf.global_variables()] == ["shared/fc/kernel:0",
                                                       "shared/fc/bias:0"]
    tf.layers.dense(x, 2, name="fc")
    tf.layers.dense(x, 2, name="fc", reuse=True)
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        tf.layers.dense(x, 2, name="fc")
        tf.layers.dense(x, 2, name="fc")
    assert len(tf.global_variables()) == 6
    with pytest.raises(ValueError, match="Variable fc/kernel already exists"):
        tf.layers.dense(x, 2, name="fc")


# ---- dense / flatten / dropout against numpy ----

def test_dense_computes_affine_and_activation(graph):
    rng = np.random.default_rng(3)
    x_val = rng.normal(size=(4, 6)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 6])
    layer = tf.layers.Dense(3, activation=tf.nn.relu, bias_initializer=tf.ones_initializer())
    y = layer(x)
    y_val, w, b = _run([y, layer.kernel, layer.bias], {x: x_val})
    np.testing.assert_allclose(y_val, np.maximum(x_val @ w + b, 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(b, np.ones(3))
    limit = np.sqrt(6 / (6 + 3))                       # glorot_uniform by default
    assert np.abs(w).max() <= limit and w.std() > 0


def test_dense_on_rank_3_and_float64_inputs(graph):
    rng = np.random.default_rng(4)
    x_val = rng.normal(size=(2, 5, 4))
    x = tf.placeholder(tf.float64, [None, 5, 4])
    layer = tf.layers.Dense(3, use_bias=False)
    y = layer(x)
    assert layer.kernel.dtype == tf.float64._as_ref and y.shape.as_list() == [None, 5, 3]
    y_val, w = _run([y, layer.kernel], {x: x_val})
    np.testing.assert_allclose(y_val, x_val @ w, rtol=1e-12)
    with pytest.raises(ValueError, match="The last dimension of the inputs to `Dense` should "
                                         "be defined. Found `None`."):
        tf.layers.dense(tf.placeholder(tf.float32, [2, None]), 3)


def test_flatten(graph):
    x_val = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    x = tf.placeholder(tf.float32, [None, 3, 4, 5])
    y = tf.layers.flatten(x)
    assert y.shape.as_list() == [None, 60]
    np.testing.assert_array_equal(_run(y, {x: x_val}), x_val.reshape(2, 60))


def test_dropout_obeys_training(graph):
    x_val = np.full((200, 100), 2.0, np.float32)
    x = tf.placeholder(tf.float32, [None, 100])
    training = tf.placeholder(tf.bool, [])
    off = tf.layers.dropout(x, 0.4)
    on = tf.layers.dropout(x, 0.4, training=True, seed=1)
    switched = tf.layers.dropout(x, 0.4, training=training, seed=2)
    constant = tf.layers.dropout(x, 0.4, training=tf.constant(False))
    assert off.op.type == "Identity" and constant.op.type == "Identity"
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(off, {x: x_val}), x_val)
        for value in (s.run(on, {x: x_val}), s.run(switched, {x: x_val, training: True})):
            assert set(np.unique(value).tolist()) == {0.0, np.float32(2.0 / 0.6)}
            assert abs(np.mean(value == 0) - 0.4) < 0.02
        np.testing.assert_array_equal(s.run(switched, {x: x_val, training: False}), x_val)


# ---- regularizers and errors ----

def test_weight_regularizers_go_to_regularization_losses(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    layer = tf.layers.Dense(2, kernel_initializer=tf.constant_initializer(0.5),
                            kernel_regularizer=tf.contrib.layers.l2_regularizer(0.1),
                            bias_regularizer=tf.contrib.layers.l1_regularizer(1.0),
                            bias_initializer=tf.constant_initializer(-2.0))
    layer(x)
    layer(x)                                                 # reused: no second loss
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [t.name for t in losses] == ["dense/kernel/Regularizer/l2_regularizer:0",
                                        "dense/bias/Regularizer/l1_regularizer:0"]
    assert layer.losses == losses
    np.testing.assert_allclose(_run(losses), [0.1 * 6 * 0.25 / 2, 4.0], rtol=1e-6)


def test_layer_argument_errors(graph):
    x = tf.placeholder(tf.float32, [None, 4, 4, 2])
    with pytest.raises(ValueError, match="The `kernel_size` argument must be a tuple of 2"):
        tf.layers.conv2d(x, 3, (3, 3, 3))
    with pytest.raises(ValueError, match='The `padding` argument must be one of "valid", '
                                         '"same"'):
        tf.layers.conv2d(x, 3, 3, padding="full")
    with pytest.raises(ValueError, match='The `data_format` argument must be one of'):
        tf.layers.max_pooling2d(x, 2, 2, data_format="NHWC")
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=2"):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 4]), 3, 3)
    with pytest.raises(ValueError, match="The channel dimension of the inputs should be "
                                         "defined"):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 4, 4, None]), 3, 3)
    with pytest.raises(TypeError, match="Keyword argument not understood: bogus"):
        tf.layers.Dense(3, bogus=1)


# ---- a small net against TensorFlow ----

def _load_reference():
    with np.load(DATA / "layers_tf_reference.npz", allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def test_small_net_matches_tensorflow():
    """conv2d, max/avg pooling, conv2d_transpose, batch_normalization (fused-style 4-D and
    a 2-D one fed `training`), flatten, dropout and dense with fixed weights: outputs,
    gradients and moving averages as TensorFlow computed them (data/make_layers_reference.py
    wrote the file, running the very function below on real TensorFlow)."""
    import sys
    sys.path.insert(0, str(DATA))
    try:
        from make_layers_reference import run
    finally:
        sys.path.remove(str(DATA))
    want = _load_reference()
    got = run(tf, want)
    outputs = [k for k in want if k.startswith(("out", "inference", "var:"))]
    assert sorted(outputs) == sorted(got)
    for key in outputs:
        scale = max(1.0, float(np.abs(want[key]).max()))
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-5 * scale,
                                   err_msg=key)


def test_a_small_mlp_with_batch_norm_and_dropout_trains(graph):
    rng = np.random.default_rng(5)
    x_val = rng.normal(size=(128, 4)).astype(np.float32)
    y_val = (x_val @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.placeholder(tf.float32, [None, 1])
    training = tf.placeholder(tf.bool, [])
    h = tf.layers.dense(x, 32, activation=tf.nn.relu)
    h = tf.layers.batch_normalization(h, training=training, momentum=0.8)
    h = tf.layers.dropout(h, 0.1, training=training)
    out = tf.layers.dense(h, 1)
    loss = tf.reduce_mean(tf.square(out - y))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        first = s.run(loss, {x: x_val, y: y_val, training: False})
        for _ in range(30):
            s.run(step, {x: x_val, y: y_val, training: True})
        last = s.run(loss, {x: x_val, y: y_val, training: False})
        moving = s.run(graph.get_tensor_by_name("batch_normalization/moving_mean/read:0"))
    assert last < 0.05 * first
    assert np.abs(moving).max() > 0.01             # the update ops ran with the train step


def test_select_on_a_tensor_flag_does_not_leak_the_untaken_branch():
    from engine.layers.utils import select
    with tf.Graph().as_default():
        flag = tf.placeholder(tf.bool, [])
        out = select(flag, tf.constant([np.nan, np.inf]), tf.constant([1.0, 2.0]))
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(out, {flag: False}), [1.0, 2.0])
            assert np.isnan(sess.run(out, {flag: True})[0])
