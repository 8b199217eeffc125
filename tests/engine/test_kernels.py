"""Kernel numerics: the core op types (elementwise, unary, MatMul, reductions, array and
state ops), built through the public API on seeded random inputs, run on CPU and on a virtual
GPU, and compared with numpy; plus the registry checks (every op has a CPU kernel and a kernel
test in some test module, every gradient rule names a registered op)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from kernel_harness import (
    COVERED,
    FLOATS,
    INTS,
    NUMERIC,
    RUNTIME_INTERNAL,
    TOLERANCE,
    assert_close,
    away_from_zero,
    covers,
    import_every_test_module,
    mark_executed,
    rand,
    tf_dtype,
)

import engine as tf
from engine import errors
from engine.kernels.registry import kernel_op_types, kernels_for
from engine.ops import math_ops, state_ops
from engine.ops.grads import GRADIENTS, NOT_DIFFERENTIABLE
from engine.ops.registry import is_registered, registered_op_types

# ---- elementwise binary ops, with broadcasting ----

BROADCAST_PAIRS = [((4, 3), (4, 3)), ((4, 3), (3,)), ((4, 3), (4, 1)), ((4, 1), (1, 3)),
                   ((), (2, 3)), ((2, 1, 3), (4, 1))]
BINARY = {
    "Add": (tf.add, np.add),
    "Sub": (tf.subtract, np.subtract),
    "Mul": (tf.multiply, np.multiply),
    "Maximum": (tf.maximum, np.maximum),
    "Minimum": (tf.minimum, np.minimum),
    "SquaredDifference": (tf.squared_difference, lambda x, y: np.square(x - y)),
}


def _run_binary(runner, fn, ref, dtype, x_of, y_of):
    rng = np.random.default_rng(1)
    feeds, outs, wants = {}, [], []
    with runner.scope():
        for xs, ys in BROADCAST_PAIRS:
            x_val, y_val = x_of(rng, xs, dtype), y_of(rng, ys, dtype)
            x = tf.placeholder(tf_dtype(dtype), xs)
            y = tf.placeholder(tf_dtype(dtype), ys)
            feeds.update({x: x_val, y: y_val})
            outs.append(fn(x, y))
            wants.append(ref(x_val, y_val))
    for got, want in zip(runner.run(outs, feeds), wants):
        assert_close(got, want, dtype)


@covers(*BINARY)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op_type", sorted(BINARY))
def test_binary_ops_broadcast(runner, op_type, dtype):
    fn, ref = BINARY[op_type]
    _run_binary(runner, fn, ref, dtype, rand, rand)


@covers("RealDiv")
@pytest.mark.parametrize("dtype", FLOATS)
def test_real_div_broadcast(runner, dtype):
    _run_binary(runner, tf.divide, np.divide, dtype, rand, away_from_zero)


@covers("Pow")
@pytest.mark.parametrize("dtype", FLOATS)
def test_pow_float(runner, dtype):
    positive = functools.partial(rand, low=0.5, high=2.0)
    _run_binary(runner, tf.pow, np.power, dtype, positive, rand)


@covers("Pow")
@pytest.mark.parametrize("dtype", INTS)
def test_pow_int(runner, dtype):
    exponent = functools.partial(rand, low=0, high=3)
    _run_binary(runner, tf.pow, np.power, dtype, rand, exponent)


@pytest.mark.parametrize("dtype", INTS)
def test_real_div_has_no_integer_kernel(dtype):
    """TF registers RealDiv for floats only (integer division is FloorDiv/TruncateDiv)."""
    for k in kernels_for("RealDiv"):
        assert tf_dtype(dtype) not in k.constraints["T"], k.describe()


@covers("Add", "Sub", "Mul", "RealDiv")
def test_python_scalars_become_constants(runner):
    x_val = np.array([[1.5, -2.0], [4.0, 0.25]], np.float32)
    with runner.scope():
        x = tf.placeholder(tf.float32, [2, 2])
        outs = [x + 2, 3 - x, x * 0.5, 1 / x, x / 4]
    got = runner.run(outs, {x: x_val})
    for g, want in zip(got, [x_val + 2, 3 - x_val, x_val * 0.5, 1 / x_val, x_val / 4]):
        assert_close(g, want, np.float32)


COMPARE = {"Equal": (tf.equal, np.equal), "Less": (tf.less, np.less),
           "Greater": (tf.greater, np.greater)}


@covers(*COMPARE)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op_type", sorted(COMPARE))
def test_comparisons(runner, op_type, dtype):
    fn, ref = COMPARE[op_type]
    rng = np.random.default_rng(2)
    feeds, outs, wants = {}, [], []
    with runner.scope():
        for xs, ys in BROADCAST_PAIRS:
            # Few distinct values, so ties (where Equal is true) are frequent.
            x_val = rng.integers(-2, 3, size=xs).astype(dtype)
            y_val = rng.integers(-2, 3, size=ys).astype(dtype)
            x = tf.placeholder(tf_dtype(dtype), xs)
            y = tf.placeholder(tf_dtype(dtype), ys)
            feeds.update({x: x_val, y: y_val})
            outs.append(fn(x, y))
            wants.append(ref(x_val, y_val))
    for got, want in zip(runner.run(outs, feeds), wants):
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, want)
    assert any(w.any() and not w.all() for w in wants)


# ---- elementwise unary ops ----

def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


UNARY_ANY = {"Neg": (tf.negative, np.negative), "Square": (tf.square, np.square),
             "Abs": (tf.abs, np.abs)}
UNARY_FLOAT = {
    "Sigmoid": (tf.sigmoid, _sigmoid, (-6.0, 6.0)),
    "Tanh": (tf.tanh, np.tanh, (-3.0, 3.0)),
    "Exp": (tf.exp, np.exp, (-4.0, 4.0)),
    "Log": (tf.log, np.log, (0.05, 8.0)),
    "Sqrt": (tf.sqrt, np.sqrt, (0.0, 9.0)),
    "Reciprocal": (math_ops.reciprocal, np.reciprocal, None),
    "Relu": (tf.nn.relu, lambda x: np.maximum(x, 0), (-2.0, 2.0)),
}


@covers(*UNARY_ANY)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op_type", sorted(UNARY_ANY))
def test_unary_numeric(runner, op_type, dtype):
    fn, ref = UNARY_ANY[op_type]
    x_val = rand(np.random.default_rng(3), (3, 5), dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [None, 5])
        y = fn(x)
    assert_close(runner.run(y, {x: x_val}), ref(x_val), dtype)


@covers(*UNARY_FLOAT)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op_type", sorted(UNARY_FLOAT))
def test_unary_float(runner, op_type, dtype):
    fn, ref, value_range = UNARY_FLOAT[op_type]
    rng = np.random.default_rng(4)
    x_val = (away_from_zero(rng, (4, 6), dtype) if value_range is None
             else rand(rng, (4, 6), dtype, *value_range))
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [4, 6])
        y = fn(x)
    # The reference runs in float64 so only the kernel's own rounding is measured.
    assert_close(runner.run(y, {x: x_val}), ref(x_val.astype(np.float64)), dtype)


@pytest.mark.parametrize("op_type", sorted(UNARY_FLOAT))
def test_float_unary_rejects_integers(op_type):
    fn = UNARY_FLOAT[op_type][0]
    with tf.Graph().as_default(), pytest.raises(TypeError, match="int32 not in list"):
        fn(tf.constant([1, 2]))


@covers("ReluGrad", "SigmoidGrad", "TanhGrad")
@pytest.mark.parametrize("dtype", FLOATS)
def test_activation_gradient_helpers(runner, dtype):
    rng = np.random.default_rng(5)
    y_val, dy_val = rand(rng, (3, 4), dtype, -1, 1), rand(rng, (3, 4), dtype)
    y_val[0, 0] = 0.0  # ReluGrad passes nothing where the output is exactly 0
    attrs = {"T": tf_dtype(dtype)}
    with runner.scope():
        y = tf.placeholder(tf_dtype(dtype), [3, 4])
        dy = tf.placeholder(tf_dtype(dtype), [3, 4])
        g = runner.graph
        outs = [g.create_op("ReluGrad", [dy, y], attrs).outputs[0],
                g.create_op("SigmoidGrad", [y, dy], attrs).outputs[0],
                g.create_op("TanhGrad", [y, dy], attrs).outputs[0]]
    got = runner.run(outs, {y: y_val, dy: dy_val})
    assert_close(got[0], dy_val * (y_val > 0), dtype)
    assert_close(got[1], dy_val * y_val * (1 - y_val), dtype)
    assert_close(got[2], dy_val * (1 - y_val * y_val), dtype)


# ---- MatMul ----

@covers("MatMul")
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul(runner, dtype, transpose_a, transpose_b):
    if runner.device == "gpu" and np.issubdtype(dtype, np.integer):
        pytest.skip("no integer MatMul on GPU (see test_integer_matmul_has_no_gpu_kernel)")
    rng = np.random.default_rng(6)
    a_val, b_val = rand(rng, (3, 4), dtype), rand(rng, (4, 5), dtype)
    a_in = a_val.T.copy() if transpose_a else a_val
    b_in = b_val.T.copy() if transpose_b else b_val
    with runner.scope():
        a = tf.placeholder(tf_dtype(dtype), [None, a_in.shape[1]])
        b = tf.placeholder(tf_dtype(dtype), b_in.shape)
        c = tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    assert c.shape.as_list() == [3 if transpose_a else None, 5]
    got = runner.run(c, {a: a_in, b: b_in})
    want = a_val.astype(np.float64) @ b_val.astype(np.float64)
    if np.issubdtype(dtype, np.floating):
        np.testing.assert_allclose(got, want.astype(dtype), rtol=1e-5 if dtype == np.float32
                                   else 1e-12, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want.astype(dtype))


def test_integer_matmul_has_no_gpu_kernel():
    """TF's GPU MatMul is float-only; an int32 MatMul pinned to the GPU cannot be placed."""
    g = tf.Graph()
    with g.as_default(), tf.device("/gpu:0"):
        c = tf.matmul(tf.constant([[1, 2]]), tf.constant([[3], [4]]))
    with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=1)) as s, \
            pytest.raises(errors.InvalidArgumentError, match="no supported kernel for GPU"):
        s.run(c)


# ---- reductions ----

AXES = [None, 0, 1, -1, [0, 2], [-1, -3], []]
REDUCE = {"Sum": (tf.reduce_sum, np.sum), "Mean": (tf.reduce_mean, None),
          "Max": (tf.reduce_max, np.max)}


def _np_mean(x, axis, keepdims):
    if np.issubdtype(x.dtype, np.floating):
        return np.mean(x.astype(np.float64), axis=axis, keepdims=keepdims)
    count = x.size // max(np.sum(x, axis=axis, keepdims=keepdims).size, 1) if axis != () else 1
    total = np.sum(x.astype(np.int64), axis=axis, keepdims=keepdims)
    return np.trunc(total / count)


@covers(*REDUCE)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("op_type", sorted(REDUCE))
def test_reductions(runner, op_type, keepdims, dtype):
    fn, ref = REDUCE[op_type]
    ref = ref or _np_mean
    x_val = rand(np.random.default_rng(7), (2, 3, 4), dtype, -9, 9)
    outs, wants = [], []
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [2, 3, 4])
        for axis in AXES:
            outs.append(fn(x, axis=axis, keepdims=keepdims))
            np_axis = tuple(axis) if isinstance(axis, list) else axis
            if np_axis == ():
                wants.append(x_val)     # TF reduces nothing over an empty axis list
            else:
                wants.append(ref(x_val, axis=np_axis, keepdims=keepdims))
    for axis, got, want in zip(AXES, runner.run(outs, {x: x_val}), wants):
        assert np.shape(got) == np.shape(want), f"axis={axis}"
        assert_close(got, want, dtype)


@covers("Mean")
@pytest.mark.parametrize("dtype", INTS)
def test_integer_mean_truncates_toward_zero(runner, dtype):
    x_val = np.array([[1, 2], [-3, -4], [5, 5], [-1, 0]], dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [4, 2])
        rows, cols, total = (tf.reduce_mean(x, 1), tf.reduce_mean(x, 0, keepdims=True),
                             tf.reduce_mean(x))
    got = runner.run([rows, cols, total], {x: x_val})
    np.testing.assert_array_equal(got[0], np.array([1, -3, 5, 0], dtype))   # 1.5, -3.5, 5, -0.5
    np.testing.assert_array_equal(got[1], np.array([[0, 0]], dtype))       # 0.5, 0.75
    assert got[2] == 0 and got[2].dtype == dtype                            # 5 / 8


@covers("ArgMax")
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("output_type", [tf.int32, tf.int64])
def test_argmax(runner, dtype, output_type):
    # A permutation has no ties, so the first-maximum rule does not matter here.
    x_val = np.random.default_rng(8).permutation(15).reshape(3, 5).astype(dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [3, 5])
        outs = [tf.argmax(x, axis, output_type=output_type) for axis in (0, 1, -1)]
    for axis, got in zip((0, 1, -1), runner.run(outs, {x: x_val})):
        np.testing.assert_array_equal(got, np.argmax(x_val, axis=axis))
        assert got.dtype == output_type.numpy_dtype


@covers("AddN")
@pytest.mark.parametrize("dtype", NUMERIC)
def test_add_n(runner, dtype):
    rng = np.random.default_rng(9)
    vals = [rand(rng, (2, 5), dtype) for _ in range(3)]
    with runner.scope():
        phs = [tf.placeholder(tf_dtype(dtype), [2, 5]) for _ in vals]
        total = tf.add_n(phs)
    assert total.op.type == "AddN"
    assert_close(runner.run(total, dict(zip(phs, vals))), vals[0] + vals[1] + vals[2], dtype)


# ---- array ops ----

@covers("Reshape")
@pytest.mark.parametrize("dtype", NUMERIC)
def test_reshape(runner, dtype):
    x_val = rand(np.random.default_rng(10), (2, 3, 4), dtype)
    targets = [[-1, 4], [4, -1], [24], [2, -1, 2], [-1]]
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [None, 3, 4])
        shape_in = tf.placeholder(tf.int32, [3])
        outs = [tf.reshape(x, t) for t in targets]
        outs.append(tf.reshape(x, np.array([6, 2, 2], np.int64)))
        outs.append(tf.reshape(x, shape_in))
    got = runner.run(outs, {x: x_val, shape_in: [3, 2, 4]})
    wants = [x_val.reshape(t) for t in targets] + [x_val.reshape(6, 2, 2), x_val.reshape(3, 2, 4)]
    for g, w in zip(got, wants):
        assert_close(g, w, dtype)


def test_reshape_static_shape_with_minus_one():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3, 4])
        assert tf.reshape(x, [-1, 4]).shape.as_list() == [6, 4]
        assert tf.reshape(tf.placeholder(tf.float32, [None, 4]), [-1, 2]).shape.as_list() \
            == [None, 2]
        with pytest.raises(ValueError, match="Cannot reshape a tensor with 24 elements"):
            tf.reshape(x, [5, -1])


@covers("ExpandDims")
@pytest.mark.parametrize("dtype", NUMERIC)
def test_expand_dims(runner, dtype):
    x_val = rand(np.random.default_rng(11), (2, 3, 4), dtype)
    axes = [0, 1, 3, -1, -2, -4]
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [2, 3, 4])
        outs = [tf.expand_dims(x, a) for a in axes]
    for a, out, got in zip(axes, outs, runner.run(outs, {x: x_val})):
        want = np.expand_dims(x_val, a)
        assert out.shape.as_list() == list(want.shape), f"axis={a}"
        assert_close(got, want, dtype)


@covers("BroadcastTo")
@pytest.mark.parametrize("dtype", NUMERIC)
def test_broadcast_to(runner, dtype):
    rng = np.random.default_rng(12)
    cases = [((3,), [2, 4, 3]), ((4, 1), [4, 3]), ((), [2, 2]), ((1, 3), [1, 3])]
    feeds, outs, wants = {}, [], []
    with runner.scope():
        for i, (src, target) in enumerate(cases):
            val = rand(rng, src, dtype)
            x = tf.placeholder(tf_dtype(dtype), src)
            shape = np.array(target, np.int64 if i % 2 else np.int32)
            outs.append(tf.broadcast_to(x, shape))
            feeds[x] = val
            wants.append(np.broadcast_to(val, target))
    for out, got, want in zip(outs, runner.run(outs, feeds), wants):
        assert out.shape.as_list() == list(want.shape)
        assert_close(got, want, dtype)


@covers("Fill", "Shape")
@pytest.mark.parametrize("dtype", NUMERIC)
def test_fill(runner, dtype):
    value = np.array(7.25 if np.issubdtype(dtype, np.floating) else -7, dtype)
    with runner.scope():
        x = tf.placeholder(tf.float32, [None, 3])
        static = tf.fill([2, 3], value)
        dynamic = tf.fill(tf.shape(x), value)
        dims64 = tf.fill(np.array([4], np.int64), value)
    got = runner.run([static, dynamic, dims64], {x: np.zeros((5, 3), np.float32)})
    assert static.shape.as_list() == [2, 3] and dynamic.shape.as_list() == [None, None]
    for g, shape in zip(got, [(2, 3), (5, 3), (4,)]):
        assert_close(g, np.full(shape, value), dtype)


CASTS = [
    (np.float32, np.int32, [-1.7, -0.5, 0.5, 2.9, 0.0]),     # truncates toward zero
    (np.float32, np.float64, [1.1, -2.5, 3e-8]),
    (np.float64, np.float32, [1.1, -2.5, 1e-300]),
    (np.int32, np.float32, [-3, 0, 16777217]),
    (np.int64, np.int32, [-5, 2, 7]),
    (np.int32, np.int64, [-5, 2, 7]),
    (np.float32, np.bool_, [0.0, -1.5, 2.0]),
    (np.bool_, np.float32, [True, False, True]),
    (np.int64, np.float64, [2**40, -3]),
]


@covers("Cast")
@pytest.mark.parametrize("src, dst, values", CASTS)
def test_cast(runner, src, dst, values):
    x_val = np.array(values, src)
    with runner.scope():
        x = tf.placeholder(tf_dtype(src), [len(values)])
        y = tf.cast(x, tf_dtype(dst))
    assert y.op.type == "Cast"
    got = runner.run(y, {x: x_val})
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got, x_val.astype(dst))


def test_cast_to_same_dtype_adds_no_op():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        assert tf.cast(x, tf.float32) is x


@covers("Shape", "Size")
@pytest.mark.parametrize("out_type", [tf.int32, tf.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_shape_and_size(runner, out_type, dtype):
    x_val = np.zeros((5, 3, 2), dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [None, 3, 2])
        y = tf.reduce_sum(x, 1)
        outs = [tf.shape(x, out_type=out_type), tf.size(x, out_type=out_type),
                tf.shape(y, out_type=out_type), tf.size(y, out_type=out_type)]
    got = runner.run(outs, {x: x_val})
    np.testing.assert_array_equal(got[0], [5, 3, 2])
    assert got[1] == 30
    np.testing.assert_array_equal(got[2], [5, 2])
    assert got[3] == 10
    assert all(np.asarray(g).dtype == out_type.numpy_dtype for g in got)


@covers("Identity", "StopGradient", "ZerosLike", "OnesLike")
@pytest.mark.parametrize("dtype", NUMERIC + [np.bool_])
def test_identity_family(runner, dtype):
    x_val = (np.array([[True, False, True]]) if dtype == np.bool_
             else rand(np.random.default_rng(13), (2, 3), dtype))
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [None, 3])
        outs = [tf.identity(x), tf.stop_gradient(x), tf.zeros_like(x), tf.ones_like(x)]
    got = runner.run(outs, {x: x_val})
    assert_close(got[0], x_val, dtype)
    assert_close(got[1], x_val, dtype)
    assert_close(got[2], np.zeros_like(x_val), dtype)
    assert_close(got[3], np.ones_like(x_val), dtype)


@covers("Const")
def test_constants(runner):
    values = [np.float32(2.5), [1, 2, 3], np.arange(6, dtype=np.float64).reshape(2, 3),
              [True, False], np.array([[-7]], np.int64), 3.0]
    with runner.scope():
        outs = [tf.constant(v) for v in values]
        filled = tf.constant(1.5, shape=[2, 2])
    got = runner.run(outs + [filled])
    wants = [np.float32(2.5), np.array([1, 2, 3], np.int32), values[2],
             np.array([True, False]), values[4], np.float32(3.0)]
    for g, w in zip(got, wants):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[-1], np.full((2, 2), 1.5, np.float32))


@covers("Placeholder")
def test_unfed_placeholder_names_itself(runner):
    with runner.scope():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = x * 2.0
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"You must feed a value for placeholder tensor 'x' with dtype "
                             r"float and shape \[\?,2\]"):
        runner.run(y)
    mark_executed("Placeholder")    # its kernel is what raised the error matched above
    np.testing.assert_array_equal(runner.run(y, {x: [[1.0, 2.0]]}), [[2.0, 4.0]])


# ---- neural-network ops ----

def _np_log_softmax(x):
    x = x.astype(np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


@covers("Softmax", "LogSoftmax")
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 4), (6,)])
def test_softmax_and_log_softmax(runner, dtype, shape):
    rng = np.random.default_rng(14)
    x_val = rand(rng, shape, dtype, -5, 5)
    big_val = (x_val + 500).astype(dtype)   # must not overflow: softmax is shift-invariant
    wide_val = (x_val * 80).astype(dtype)   # probabilities underflow; their logs must not
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), shape)
        big = tf.placeholder(tf_dtype(dtype), shape)
        wide = tf.placeholder(tf_dtype(dtype), shape)
        outs = [tf.nn.softmax(x), tf.nn.log_softmax(x), tf.nn.softmax(big),
                tf.nn.log_softmax(big), tf.nn.log_softmax(wide)]
    got = runner.run(outs, {x: x_val, big: big_val, wide: wide_val})
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else TOLERANCE[dtype]
    log_sm = _np_log_softmax(x_val)
    np.testing.assert_allclose(got[0], np.exp(log_sm), **tol)
    np.testing.assert_allclose(got[1], log_sm, **tol)
    np.testing.assert_allclose(got[2], np.exp(_np_log_softmax(big_val)), **tol)
    np.testing.assert_allclose(got[3], _np_log_softmax(big_val), **tol)
    np.testing.assert_allclose(got[4], _np_log_softmax(wide_val), **tol)
    np.testing.assert_allclose(got[0].sum(axis=-1), 1.0, rtol=1e-5)


@covers("SoftmaxCrossEntropyWithLogits")
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_cross_entropy_loss_and_backprop(runner, dtype):
    rng = np.random.default_rng(15)
    logits_val = rand(rng, (6, 5), dtype, -4, 4)
    labels_val = np.exp(rand(rng, (6, 5), np.float64))
    labels_val = (labels_val / labels_val.sum(axis=1, keepdims=True)).astype(dtype)
    with runner.scope():
        logits = tf.placeholder(tf_dtype(dtype), [None, 5])
        labels = tf.placeholder(tf_dtype(dtype), [None, 5])
        loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
        backprop = loss.op.outputs[1]
    assert loss.op.type == "SoftmaxCrossEntropyWithLogits"
    assert loss.shape.as_list() == [None] and backprop.shape.as_list() == [None, 5]
    got_loss, got_backprop = runner.run([loss, backprop], {logits: logits_val,
                                                           labels: labels_val})
    log_sm = _np_log_softmax(logits_val)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else TOLERANCE[dtype]
    np.testing.assert_allclose(got_loss, -(labels_val * log_sm).sum(axis=1), **tol)
    np.testing.assert_allclose(got_backprop, np.exp(log_sm) - labels_val, **tol)


@covers("Add", "Mul", "MatMul", "Relu", "Softmax", "Sum", "Mean", "Exp", "Cast")
def test_float16_kernels_stay_half(runner):
    rng = np.random.default_rng(19)
    x_val, w_val = rand(rng, (3, 4), np.float16, -2, 2), rand(rng, (4, 2), np.float16, -2, 2)
    with runner.scope():
        x = tf.placeholder(tf.float16, [3, 4])
        w = tf.placeholder(tf.float16, [4, 2])
        outs = [x + x, x * x, tf.matmul(x, w), tf.nn.relu(x), tf.nn.softmax(x),
                tf.reduce_sum(x, 1), tf.reduce_mean(x), tf.exp(x), tf.cast(x, tf.float32)]
    got = runner.run(outs, {x: x_val, w: w_val})
    x64, w64 = x_val.astype(np.float64), w_val.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    wants = [x64 + x64, x64 * x64, x64 @ w64, np.maximum(x64, 0), e / e.sum(1, keepdims=True),
             x64.sum(1), x64.mean(), np.exp(x64), x64]
    for g, want in zip(got, wants):
        # half has an 11-bit significand; sums and products round at each step
        np.testing.assert_allclose(np.asarray(g, np.float64), want, rtol=1e-2, atol=1e-2)


# ---- gradient helper ops ----

# (s0, s1) -> (r0, r1): the axes each input was broadcast along, as TF's BCast reports them.
BCAST_CASES = [
    ([2, 3, 5], [1], [], [0, 1, 2]),
    ([4, 3], [3], [], [0]),
    ([4, 3], [4, 1], [], [1]),
    ([1, 3], [4, 1], [0], [1]),
    ([2, 1, 3], [4, 1], [1], [0, 2]),
    ([], [2, 3], [0, 1], []),
]


@covers("BroadcastGradientArgs", "Shape")
def test_broadcast_gradient_args(runner):
    outs = []
    with runner.scope():
        for s0, s1, _, _ in BCAST_CASES:
            outs.extend(math_ops.broadcast_gradient_args(
                tf.constant(np.array(s0, np.int32)), tf.constant(np.array(s1, np.int32))))
        x = tf.placeholder(tf.float32, [None, 3])
        outs.extend(math_ops.broadcast_gradient_args(tf.shape(x), tf.constant([1, 3])))
    got = runner.run(outs, {x: np.zeros((4, 3), np.float32)})
    wants = [r for _, _, r0, r1 in BCAST_CASES for r in (r0, r1)] + [[], [0]]
    for g, w in zip(got, wants):
        assert g.dtype == np.int32
        np.testing.assert_array_equal(g, np.array(w, np.int32))


# ---- variables and their updates ----

@covers("VariableV2", "Assign", "AssignAdd", "AssignSub", "NoOp", "Identity")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_variable_updates(runner, dtype):
    if runner.device == "gpu" and dtype == np.int32:
        pytest.skip("no int32 variables on GPU (see test_int32_variable_has_no_gpu_kernel)")
    rng = np.random.default_rng(16)
    init, new, delta = (rand(rng, (2, 3), dtype) for _ in range(3))
    with runner.scope():
        v = tf.Variable(init, name="v")
        assign = tf.assign(v, new)
        add = tf.assign_add(v, delta)
        sub = v.assign_sub(delta + delta)
        init_op = tf.global_variables_initializer()
    assert init_op.type == "NoOp"
    assert runner.run(init_op) is None
    assert_close(runner.run(v), init, dtype)
    assert_close(runner.run(assign), new, dtype)
    assert_close(runner.run(v), new, dtype)
    assert_close(runner.run(add), new + delta, dtype)
    assert_close(runner.run(sub), new - delta, dtype)
    assert_close(runner.run(v.value()), new - delta, dtype)


def test_uninitialized_variable_fails_precondition(runner):
    with runner.scope():
        v = tf.Variable(np.zeros(3, np.float32), name="w")
        y = v + 1.0
    with pytest.raises(errors.FailedPreconditionError, match="uninitialized value w"):
        runner.run(y)


def test_int32_variable_has_no_gpu_kernel():
    g = tf.Graph()
    with g.as_default(), tf.device("/gpu:0"):
        v = tf.Variable(np.zeros(2, np.int32))
    with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=1)) as s, \
            pytest.raises(errors.InvalidArgumentError, match="no supported kernel for GPU"):
        s.run(v.initializer)


@covers("ApplyGradientDescent", "VariableV2")
@pytest.mark.parametrize("dtype", FLOATS)
def test_apply_gradient_descent(runner, dtype):
    rng = np.random.default_rng(17)
    init, delta = rand(rng, (3, 2), dtype), rand(rng, (3, 2), dtype)
    with runner.scope():
        v = tf.Variable(init)
        step = state_ops.apply_gradient_descent(v, tf.constant(0.25, dtype=tf_dtype(dtype)),
                                                tf.constant(delta))
    runner.run(v.initializer)
    assert_close(runner.run(step), init - 0.25 * delta, dtype)
    assert_close(runner.run(step), init - 0.5 * delta, dtype)


@covers("ApplyGradientDescent", "MatMul", "Sum", "Fill")
def test_optimizer_step_applies_learning_rate_times_gradient(runner):
    rng = np.random.default_rng(18)
    w0, x_val = rand(rng, (3, 1), np.float32), rand(rng, (5, 3), np.float32)
    with runner.scope():
        w = tf.Variable(w0)
        x = tf.placeholder(tf.float32, [5, 3])
        loss = tf.reduce_sum(tf.matmul(x, w))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    runner.run(w.initializer)
    runner.run(train, {x: x_val})
    # d(sum(x @ w))/dw is the column sums of x.
    want = w0 - 0.1 * x_val.sum(axis=0, keepdims=True).T
    np.testing.assert_allclose(runner.run(w), want, rtol=1e-6, atol=1e-6)


# ---- registry completeness ----

def test_every_kernel_op_type_is_covered():
    import_every_test_module()
    expected = set(kernel_op_types()) - RUNTIME_INTERNAL
    assert expected - COVERED == set(), "op types with kernels but no kernel test"
    assert COVERED - expected == set(), "tests claim op types that have no kernel"


def test_every_registered_op_has_a_cpu_kernel():
    missing = [op for op in registered_op_types()
               if not any(k.device_type == "CPU" for k in kernels_for(op))]
    assert missing == []


def test_every_kernel_is_for_a_registered_op():
    assert [op for op in kernel_op_types()
            if op not in RUNTIME_INTERNAL and not is_registered(op)] == []


def test_every_gradient_rule_names_a_registered_op():
    assert [op for op in GRADIENTS if not is_registered(op)] == []
    assert [op for op in NOT_DIFFERENTIABLE if not is_registered(op)] == []
    assert set(GRADIENTS) & set(NOT_DIFFERENTIABLE) == set()


def test_integer_divide_is_true_division_in_float64():
    g = tf.Graph()
    with g.as_default():
        q = tf.divide(tf.constant([7, -7], dtype=tf.int32), 2)
        assert q.dtype == tf.float64
        with tf.Session(graph=g) as s:
            np.testing.assert_allclose(s.run(q), [3.5, -3.5])


def test_reshape_to_scalar_with_empty_shape_list():
    g = tf.Graph()
    with g.as_default():
        r = tf.reshape(tf.constant([4.0]), [])
        assert r.shape.as_list() == []
        with tf.Session(graph=g) as s:
            assert s.run(r) == 4.0


@covers("PlaceholderWithDefault")
def test_placeholder_with_default_yields_its_default_unless_fed(runner):
    with runner.scope():
        flag = tf.placeholder_with_default(False, [], name="training")
        x = tf.placeholder_with_default([[1.0, 2.0]], [None, 2])
        doubled = x * 2.0
    assert flag.shape.as_list() == [] and x.shape.as_list() == [None, 2]
    assert runner.run(flag) == np.bool_(False)
    np.testing.assert_array_equal(runner.run(doubled), [[2.0, 4.0]])
    np.testing.assert_array_equal(runner.run(doubled, {x: [[3.0, 4.0], [5.0, 6.0]]}),
                                  [[6.0, 8.0], [10.0, 12.0]])
    assert runner.run(flag, {flag: True}) == np.bool_(True)


def test_placeholder_with_default_rejects_an_incompatible_default():
    with tf.Graph().as_default(), pytest.raises(ValueError, match="PlaceholderWithDefault"):
        tf.placeholder_with_default([1.0, 2.0, 3.0], [2])
