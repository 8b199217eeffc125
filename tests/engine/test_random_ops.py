"""Random ops: the distributions each kernel draws (moments, truncation bounds, ranges,
permutations, multinomial frequencies) on CPU and a virtual GPU, TF1's seed rules
(graph seed, op seed, op count), reproducibility across sessions and graphs, op names as TF
builds them, and that random ops take no gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_harness import covers, mark_executed

import engine as tf
from engine import errors

N = 200_000     # samples per moment check: the standard error of a mean is ~0.0022


def _moments(x):
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    return x.mean(), x.std()


# ---- distributions (CPU and virtual GPU) ----

@covers("RandomStandardNormal")
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.float16])
def test_random_normal_moments(runner, dtype):
    with runner.scope():
        x = tf.random_normal([N], mean=1.5, stddev=2.0, dtype=dtype)
    value = runner.run(x)
    mean, std = _moments(value)
    assert abs(mean - 1.5) < 0.02 and abs(std - 2.0) < 0.02
    # Normal tails: about 4.55% of draws lie beyond two standard deviations.
    assert abs(np.mean(np.abs(value.astype(np.float64) - 1.5) > 4.0) - 0.0455) < 0.003


@covers("RandomUniform")
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_random_uniform_range_and_moments(runner, dtype):
    with runner.scope():
        unit = tf.random_uniform([N], dtype=dtype)
        wide = tf.random_uniform([N], minval=-3.0, maxval=5.0, dtype=dtype)
    u, w = runner.run([unit, wide])
    assert u.min() >= 0.0 and u.max() < 1.0
    assert w.min() >= -3.0 and w.max() < 5.0
    mean, std = _moments(u)
    assert abs(mean - 0.5) < 0.005 and abs(std - np.sqrt(1 / 12)) < 0.005
    mean, std = _moments(w)
    assert abs(mean - 1.0) < 0.04 and abs(std - 8 * np.sqrt(1 / 12)) < 0.04


@covers("TruncatedNormal")
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_truncated_normal_bounds_and_stddev(runner, dtype):
    with runner.scope():
        x = tf.truncated_normal([N], mean=-1.0, stddev=3.0, dtype=dtype)
    value = runner.run(x)
    assert value.min() >= -1.0 - 6.0 and value.max() <= -1.0 + 6.0
    mean, std = _moments(value)
    # scipy.stats.truncnorm(-2, 2).std() = 0.87962566...
    assert abs(mean + 1.0) < 0.03 and abs(std - 3.0 * 0.87962566) < 0.03
    # Redrawn, not clipped: clipping would pile 4.55% of the draws onto the bounds.
    assert np.mean(np.abs(value.astype(np.float64) + 1.0) > 6.0 - 1e-3) < 0.001


@covers("RandomUniformInt")
@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_random_uniform_int_range_and_frequencies(runner, dtype):
    with runner.scope():
        x = tf.random_uniform([N], minval=-2, maxval=3, dtype=dtype)
    assert x.op.type == "RandomUniformInt"
    value = runner.run(x)
    values, counts = np.unique(value, return_counts=True)
    assert values.tolist() == [-2, -1, 0, 1, 2]
    np.testing.assert_allclose(counts / N, 0.2, atol=0.005)


@covers("RandomUniformInt")
def test_random_uniform_int_needs_minval_below_maxval(runner):
    with runner.scope():
        low = tf.placeholder(tf.int32, [])
        x = tf.random_uniform([3], minval=low, maxval=5, dtype=tf.int32)
    mark_executed("RandomUniformInt")
    with pytest.raises(errors.InvalidArgumentError, match="Need minval < maxval: 5 >= 5"):
        runner.run(x, {low: 5})


@covers("RandomShuffle")
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32])
def test_random_shuffle_is_a_permutation_of_rows(runner, dtype):
    rows = np.arange(40 * 3).reshape(40, 3).astype(dtype)
    with runner.scope():
        x = tf.random_shuffle(tf.constant(rows))
    seen = []
    for _ in range(3):
        value = runner.run(x)
        order = np.argsort(value[:, 0])
        np.testing.assert_array_equal(value[order], rows)     # whole rows move together
        seen.append(value[:, 0].tolist())
    assert seen[0] != seen[1] or seen[1] != seen[2]
    assert seen[0] != rows[:, 0].tolist()


@covers("RandomShuffle")
def test_random_shuffle_of_one_row_and_of_a_scalar(runner):
    with runner.scope():
        one = tf.random_shuffle(tf.constant([[1.0, 2.0]]))
        scalar = tf.random_shuffle(tf.constant(7.0))
    a, b = runner.run([one, scalar])
    np.testing.assert_array_equal(a, [[1.0, 2.0]])
    assert b == 7.0


@covers("Multinomial")
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_multinomial_frequencies_follow_softmax(runner, dtype):
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 1e-30]]))
    with runner.scope():
        x = tf.multinomial(tf.constant(logits, dtype=dtype), 50_000)
        x32 = tf.multinomial(tf.constant(logits, dtype=dtype), 10, output_dtype=tf.int32)
    value, small = runner.run([x, x32])
    assert value.shape == (2, 50_000) and value.dtype == np.int64
    assert small.shape == (2, 10) and small.dtype == np.int32
    for row, probs in zip(value, np.exp(logits)):
        freq = np.bincount(row, minlength=3) / row.size
        np.testing.assert_allclose(freq, probs / probs.sum(), atol=0.01)


@covers("Multinomial")
def test_multinomial_never_draws_a_minus_infinity_logit(runner):
    with runner.scope():
        x = tf.multinomial(tf.constant([[0.0, -np.inf, 0.0]]), 5000)
        none = tf.multinomial(tf.constant([[0.0, 1.0]]), 0)
    value, empty = runner.run([x, none])
    assert 1 not in value
    assert empty.shape == (1, 0)


# ---- static shapes and build-time errors ----

def test_static_shapes_follow_the_shape_argument():
    with tf.Graph().as_default():
        dims = tf.placeholder(tf.int32, [3])
        assert tf.random_normal([2, 3]).shape.as_list() == [2, 3]
        assert tf.random_uniform([]).shape.as_list() == []
        assert tf.random_normal(dims).shape.as_list() == [None, None, None]
        assert tf.truncated_normal(tf.TensorShape([4, 1])).shape.as_list() == [4, 1]
        logits = tf.placeholder(tf.float32, [None, 5])
        assert tf.multinomial(logits, 7).shape.as_list() == [None, 7]
        assert tf.random_shuffle(logits).shape.as_list() == [None, 5]


def test_build_time_errors_name_the_problem():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Must specify maxval for integer dtype tf.int32"):
            tf.random_uniform([2], dtype=tf.int32)
        with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
            tf.random_normal([2], mean=0, stddev=1, dtype=tf.int32)
        with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
            tf.multinomial(tf.constant([0.0, 1.0]), 3)
        with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
            tf.random_normal(tf.constant([[2, 3]]))


def test_op_names_follow_tf():
    """Names as TensorFlow 1.x builds them (checked against tensorflow 2.21's compat.v1; the
    engine spells AddV2 as Add)."""
    g = tf.Graph()
    with g.as_default():
        tf.random_normal([2, 3], mean=1.0, stddev=2.0)
        tf.random_uniform([3], maxval=5, dtype=tf.int32)
        tf.random_shuffle(tf.constant([1, 2, 3]))
        tf.multinomial(tf.constant([[0., 1.]]), 5)
        tf.random_uniform([2])
    assert [(op.name, op.type) for op in g.get_operations()] == [
        ("random_normal/shape", "Const"), ("random_normal/mean", "Const"),
        ("random_normal/stddev", "Const"),
        ("random_normal/RandomStandardNormal", "RandomStandardNormal"),
        ("random_normal/mul", "Mul"), ("random_normal", "Add"),
        ("random_uniform/shape", "Const"), ("random_uniform/min", "Const"),
        ("random_uniform/max", "Const"), ("random_uniform", "RandomUniformInt"),
        ("Const", "Const"), ("RandomShuffle", "RandomShuffle"),
        ("Const_1", "Const"), ("multinomial/Multinomial/num_samples", "Const"),
        ("multinomial/Multinomial", "Multinomial"),
        ("random_uniform_1/shape", "Const"), ("random_uniform_1/min", "Const"),
        ("random_uniform_1/max", "Const"), ("random_uniform_1/RandomUniform", "RandomUniform"),
        ("random_uniform_1/sub", "Sub"), ("random_uniform_1/mul", "Mul"),
        ("random_uniform_1", "Add")]


# ---- TF1's seed rules ----

def _seeds(graph):
    return [(op.name, op.attrs["seed"], op.attrs["seed2"]) for op in graph.get_operations()
            if "seed2" in op.attrs]


def test_seed_attrs_follow_get_seed():
    g = tf.Graph()
    with g.as_default():
        tf.random_normal([2])                  # no seeds: nondeterministic (0, 0)
        tf.random_uniform([2], seed=7)         # op seed alone pairs with DEFAULT_GRAPH_SEED
    assert _seeds(g) == [("random_normal/RandomStandardNormal", 0, 0),
                         ("random_uniform/RandomUniform", 87654321, 7)]
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1234)
        assert g.seed == 1234
        tf.random_normal([2, 3])              # op seed = ops created so far (TF1's _last_id)
        tf.random_uniform([2], seed=5)
        tf.random_shuffle([1, 2])
    assert _seeds(g) == [("random_normal/RandomStandardNormal", 1234, 3),
                         ("random_uniform/RandomUniform", 1234, 5),
                         ("RandomShuffle", 1234, 14)]


def test_zero_seeds_are_not_read_as_nondeterministic():
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)
        tf.random_normal([2], seed=0)
        tf.set_random_seed(2**31 - 1 + 5)      # seeds are taken modulo 2**31 - 1
        tf.random_normal([2], seed=2**31 + 1)
    assert _seeds(g) == [("random_normal/RandomStandardNormal", 0, 2**31 - 1),
                         ("random_normal_1/RandomStandardNormal", 5, 2)]
    assert tf.get_seed(None, g) == (5, len(g.get_operations()))


def _program(graph_seed=None, op_seed=None):
    g = tf.Graph()
    with g.as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        a = tf.random_normal([5], seed=op_seed)
        b = tf.random_uniform([5])
    return g, a, b


def _draws(graph, fetches, steps=2):
    with tf.Session(graph=graph) as s:
        return [np.concatenate([np.ravel(v) for v in s.run(fetches)]) for _ in range(steps)]


def test_a_graph_seed_makes_the_program_reproducible_run_to_run():
    g1, a1, b1 = _program(42)
    g2, a2, b2 = _program(42)
    run1, run2 = _draws(g1, [a1, b1]), _draws(g2, [a2, b2])
    for x, y in zip(run1, run2):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(run1[0], run1[1])        # each step draws new numbers
    g3, a3, b3 = _program(43)
    assert not np.array_equal(_draws(g3, [a3, b3])[0], run1[0])


def test_a_new_session_restarts_the_sequence():
    g, a, b = _program(7)
    assert all(np.array_equal(x, y) for x, y in zip(_draws(g, [a, b], 3), _draws(g, [a, b], 3)))


def test_an_op_seed_alone_is_reproducible_and_distinct_op_seeds_differ():
    g1, a1, _ = _program(op_seed=3)
    g2, a2, _ = _program(op_seed=3)
    g3, a3, _ = _program(op_seed=4)
    np.testing.assert_array_equal(_draws(g1, a1, 1)[0], _draws(g2, a2, 1)[0])
    assert not np.array_equal(_draws(g1, a1, 1)[0], _draws(g3, a3, 1)[0])


def test_unseeded_programs_differ_between_sessions():
    g, a, b = _program()
    assert not np.array_equal(_draws(g, a, 1)[0], _draws(g, a, 1)[0])


def test_the_generator_survives_new_plans_in_one_session():
    """A second fetch set compiles a new plan; the op keeps drawing from where it was, as
    TF's session keeps stateful kernels across executors."""
    g, a, b = _program(11)
    with tf.Session(graph=g) as s:
        s.run(a)
        second, _ = s.run([a, b])
    with tf.Session(graph=g) as s:
        want = [s.run(a) for _ in range(2)][1]
    np.testing.assert_array_equal(second, want)


def test_two_ops_with_one_seed_pair_in_two_graphs_agree():
    values = []
    for _ in range(2):
        with tf.Graph().as_default() as g:
            x = tf.truncated_normal([4, 4], seed=9)
            with tf.Session(graph=g) as s:
                values.append(s.run(x))
    np.testing.assert_array_equal(*values)


# ---- no gradients ----

def test_random_ops_take_no_gradient():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        shuffled = tf.random_shuffle(x)
        assert tf.gradients(tf.reduce_sum(shuffled), x) == [None]
        noisy = x * tf.random_normal([3], seed=1)
        grad = tf.gradients(tf.reduce_sum(noisy), x)[0]
        with tf.Session() as s:
            g_val, noise = s.run([grad, noisy], {x: np.ones(3, np.float32)})
        np.testing.assert_allclose(g_val, noise)


# ---- tf.nn.dropout ----

def test_dropout_keeps_with_probability_keep_prob_and_scales():
    x_val = np.full((400, 250), 3.0, np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 250])
        for kwargs, keep in (({"keep_prob": 0.5}, 0.5), ({"rate": 0.25}, 0.75)):
            y = tf.nn.dropout(x, seed=1, **kwargs)
            assert y.shape.as_list() == [None, 250]
            with tf.Session() as s:
                value = s.run(y, {x: x_val})
            assert set(np.unique(value).tolist()) == {0.0, np.float32(3.0 / keep)}
            assert abs(np.mean(value != 0) - keep) < 0.005


def test_dropout_noise_shape_drops_whole_columns():
    with tf.Graph().as_default():
        x = tf.ones([50, 200])
        y = tf.nn.dropout(x, rate=0.5, noise_shape=[1, 200], seed=3)
        with tf.Session() as s:
            value = s.run(y)
    assert ((value == 0).all(axis=0) | (value == 2).all(axis=0)).all()
    assert 0.35 < np.mean(value[0] == 0) < 0.65


def test_dropout_with_nothing_to_drop():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        assert tf.nn.dropout(x, keep_prob=1.0) is x
        assert tf.nn.dropout(x, rate=0.0) is x
        rate = tf.placeholder(tf.float32, [])
        y = tf.nn.dropout(x, rate=rate)
        x_val = np.arange(6, dtype=np.float32).reshape(2, 3)
        with tf.Session() as s:
            for _ in range(20):    # the boundary value random == rate == 0 must be kept
                np.testing.assert_array_equal(s.run(y, {x: x_val, rate: 0.0}), x_val)


def test_dropout_errors_match_tf():
    with tf.Graph().as_default():
        x = tf.ones([2])
        with pytest.raises(ValueError, match=r"range \[0, 1\), got -0.5"):
            tf.nn.dropout(x, keep_prob=1.5)
        with pytest.raises(ValueError, match=r"range \[0, 1\), got 1"):
            tf.nn.dropout(x, rate=1.0)
        with pytest.raises(ValueError, match="has to be a floating point tensor"):
            tf.nn.dropout(tf.ones([2], dtype=tf.int32), 0.5)
        with pytest.raises(ValueError, match="You must provide a rate to dropout"):
            tf.nn.dropout(x)
        with pytest.raises(ValueError, match="both 'rate' and 'keep_prob'"):
            tf.nn.dropout(x, keep_prob=0.5, rate=0.5)


# ---- real CUDA (skipped without a GPU) ----

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_random_kernels_on_cuda():
    g = tf.Graph()
    with g.as_default(), tf.device("/gpu:0"):
        tf.set_random_seed(5)
        fetches = [tf.random_normal([N]), tf.random_uniform([N]), tf.truncated_normal([N]),
                   tf.random_uniform([N], maxval=4, dtype=tf.int64),
                   tf.random_shuffle(tf.constant(np.arange(10, dtype=np.float32))),
                   tf.multinomial(tf.constant([[0.0, np.log(3.0)]]), 20_000)]
    config = tf.ConfigProto(allow_soft_placement=False)
    runs = []
    for _ in range(2):
        with tf.Session(graph=g, config=config) as s:
            runs.append(s.run(fetches))
            placement = s.placement.as_dict()
    assert all(d.endswith("GPU:0") for n, d in placement.items()
               if g.get_operation_by_name(n).type in ("RandomStandardNormal", "Multinomial"))
    normal, uniform, truncated, ints, shuffled, drawn = runs[0]
    assert abs(normal.mean()) < 0.02 and abs(normal.std() - 1) < 0.02
    assert 0 <= uniform.min() and uniform.max() < 1
    assert np.abs(truncated).max() <= 2 and abs(truncated.std() - 0.8796) < 0.01
    assert sorted(np.unique(ints).tolist()) == [0, 1, 2, 3]
    assert sorted(shuffled.tolist()) == list(range(10))
    assert abs(np.mean(drawn == 1) - 0.75) < 0.02
    for x, y in zip(runs[0], runs[1]):
        np.testing.assert_array_equal(x, y)
