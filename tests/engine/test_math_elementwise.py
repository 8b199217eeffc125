"""Kernels and builders of the elementwise math ops beyond the core set: unary functions,
floor/truncating division and remainders, the no-NaN products, comparisons, logic and
Tensor's operators, on CPU and a virtual GPU, against numpy and against numbers observed
from TensorFlow 2.21 (tf.compat.v1) where TF's semantics are the point (rounding, signs of
remainders, division by zero)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from kernel_harness import (
    FLOATS,
    INTS,
    NUMERIC,
    assert_close,
    away_from_zero,
    covers,
    mark_executed,
    rand,
    tf_dtype,
)

import engine as tf
from engine import errors

_erf = np.vectorize(math.erf)

UNARY_FLOAT = {
    "Log1p": (tf.log1p, np.log1p, (-0.9, 4.0)),
    "Expm1": (tf.expm1, np.expm1, (-3.0, 3.0)),
    "Sin": (tf.sin, np.sin, (-4.0, 4.0)),
    "Cos": (tf.cos, np.cos, (-4.0, 4.0)),
    "Rsqrt": (tf.rsqrt, lambda x: 1 / np.sqrt(x), (0.1, 9.0)),
    "Erf": (tf.erf, _erf, (-3.0, 3.0)),
    "Floor": (tf.floor, np.floor, (-4.0, 4.0)),
    "Ceil": (tf.ceil, np.ceil, (-4.0, 4.0)),
    "Rint": (tf.rint, np.rint, (-4.0, 4.0)),
}


@covers(*UNARY_FLOAT)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op_type", sorted(UNARY_FLOAT))
def test_unary_float(runner, op_type, dtype):
    fn, ref, (low, high) = UNARY_FLOAT[op_type]
    x_val = rand(np.random.default_rng(1), (4, 6), dtype, low, high)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [None, 6])
        y = fn(x)
    assert y.shape.as_list() == [None, 6]
    assert_close(runner.run(y, {x: x_val}), ref(x_val.astype(np.float64)), dtype)


@pytest.mark.parametrize("fn", [tf.floor, tf.ceil, tf.rint, tf.erf, tf.log1p, tf.expm1,
                                tf.rsqrt, tf.is_finite])
def test_float_only_functions_reject_integers(fn):
    """TF: `Value passed to parameter 'x' has DataType int32 not in list of allowed values:
    bfloat16, float16, float32, float64` (tf.floor on an int32 constant)."""
    with tf.Graph().as_default(), pytest.raises(TypeError, match="'x'.*int32 not in list of "
                                                            "allowed values: bfloat16"):
        fn(tf.constant([1, 2]))


@covers("Round", "Rint")
@pytest.mark.parametrize("dtype", FLOATS)
def test_round_is_half_to_even(runner, dtype):
    """Observed in TF: tf.round([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.4999]) gives
    [-2, -2, -0, 0, 2, 2, 4, 2]; tf.rint agrees."""
    values = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.4999], dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [8])
        out = [tf.round(x), tf.rint(x)]
    rounded, rinted = runner.run(out, {x: values})
    want = np.array([-2, -2, -0.0, 0, 2, 2, 4, 2], dtype)
    for got in (rounded, rinted):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@covers("Round", "Sign")
@pytest.mark.parametrize("dtype", INTS)
def test_round_and_sign_of_integers(runner, dtype):
    """Observed in TF: tf.round([1, 2]) is [1, 2] and tf.sign([-2, 0, 3]) is [-1, 0, 1]."""
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [3])
        out = [tf.round(x), tf.sign(x)]
    rounded, signs = runner.run(out, {x: np.array([-2, 0, 3], dtype)})
    np.testing.assert_array_equal(rounded, [-2, 0, 3])
    np.testing.assert_array_equal(signs, [-1, 0, 1])


@covers("Sign")
@pytest.mark.parametrize("dtype", FLOATS)
def test_sign_of_floats_keeps_nan(runner, dtype):
    """Observed in TF: tf.sign([-2., 0., nan, -0.]) is [-1, 0, nan, 0]."""
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [5])
        y = tf.sign(x)
    got = runner.run(y, {x: np.array([-2.0, 0.0, np.nan, -0.0, 7.5], dtype)})
    np.testing.assert_array_equal(got, np.array([-1, 0, np.nan, 0, 1], dtype))


PREDICATES = {"IsFinite": (tf.is_finite, np.isfinite), "IsNan": (tf.is_nan, np.isnan),
              "IsInf": (tf.is_inf, np.isinf)}


@covers(*PREDICATES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op_type", sorted(PREDICATES))
def test_float_predicates(runner, op_type, dtype):
    fn, ref = PREDICATES[op_type]
    values = np.array([1.0, np.inf, -np.inf, np.nan, 0.0], dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype))
        y = fn(x)
    assert y.dtype == tf.bool and y.shape.ndims is None
    np.testing.assert_array_equal(runner.run(y, {x: values}), ref(values))


@covers("RsqrtGrad")
@pytest.mark.parametrize("dtype", FLOATS)
def test_rsqrt_grad_helper(runner, dtype):
    rng = np.random.default_rng(2)
    y_val, dy_val = rand(rng, (3, 4), dtype, 0.2, 2.0), rand(rng, (3, 4), dtype)
    with runner.scope():
        y = tf.placeholder(tf_dtype(dtype), [3, 4])
        dy = tf.placeholder(tf_dtype(dtype), [3, 4])
        out = runner.graph.create_op("RsqrtGrad", [y, dy], {"T": tf_dtype(dtype)}).outputs[0]
    got = runner.run(out, {y: y_val, dy: dy_val})
    assert_close(got, -0.5 * dy_val.astype(np.float64) * y_val.astype(np.float64) ** 3, dtype)


# ---- division and remainders ----

INT_X = [-7, 7, -7, 7, -1, 0]
INT_Y = [2, -2, -2, 2, 3, -3]
# Observed in TF for the pairs above (tf.floordiv, tf.floormod, tf.truncatediv, tf.truncatemod).
INT_DIVISIONS = {
    "FloorDiv": (tf.floordiv, [-4, -4, 3, 3, -1, 0]),
    "FloorMod": (tf.floormod, [1, -1, -1, 1, 2, 0]),
    "TruncateDiv": (tf.truncatediv, [-3, -3, 3, 3, 0, 0]),
    "TruncateMod": (tf.truncatemod, [-1, 1, -1, 1, -1, 0]),
}


@covers(*INT_DIVISIONS)
@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op_type", sorted(INT_DIVISIONS))
def test_integer_division_signs_as_tf(runner, op_type, dtype):
    fn, want = INT_DIVISIONS[op_type]
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [6])
        y = tf.placeholder(tf_dtype(dtype), [6])
        out = fn(x, y)
    got = runner.run(out, {x: np.array(INT_X, dtype), y: np.array(INT_Y, dtype)})
    np.testing.assert_array_equal(got, np.array(want, dtype))


FLOAT_X = [-7.0, 7.0, -7.0, 7.0, -1.0, 0.0, 5.5, -5.5, 1e-30]
FLOAT_Y = [2.0, -2.0, -2.0, 2.0, 3.0, -3.0, 0.25, 0.7, 3.0]
# Observed in TF for float32 (floormod(-5.5, 0.7) prints as 0.09999990463256836).
FLOAT_DIVISIONS = {
    "FloorDiv": (tf.floordiv, [-4, -4, 3, 3, -1, -0.0, 22, -8, 0]),
    "FloorMod": (tf.floormod, [1, -1, -1, 1, 2, 0, 0, 0.09999990463256836, 1e-30]),
    "TruncateDiv": (tf.truncatediv, [-3, -3, 3, 3, -0.0, -0.0, 22, -7, 0]),
    "TruncateMod": (tf.truncatemod, [-1, 1, -1, 1, -1, 0, 0, -0.6000001, 1e-30]),
}


@covers(*FLOAT_DIVISIONS)
@pytest.mark.parametrize("op_type", sorted(FLOAT_DIVISIONS))
def test_float32_division_as_tf(runner, op_type):
    fn, want = FLOAT_DIVISIONS[op_type]
    with runner.scope():
        x = tf.placeholder(tf.float32, [9])
        y = tf.placeholder(tf.float32, [9])
        out = fn(x, y)
    got = runner.run(out, {x: np.array(FLOAT_X, np.float32), y: np.array(FLOAT_Y, np.float32)})
    want = np.array(want, np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@covers("FloorDiv", "FloorMod")
def test_float_division_by_zero_is_inf_and_nan(runner):
    """Observed in TF: floordiv(x, 0.) is -inf/inf (nan for 0/0); floormod(x, 0.) is nan."""
    values = np.array([-7.0, 7.0, 0.0], np.float32)
    with runner.scope():
        x = tf.placeholder(tf.float32, [3])
        out = [tf.floordiv(x, 0.0), tf.floormod(x, 0.0)]
    quotient, remainder = runner.run(out, {x: values})
    np.testing.assert_array_equal(quotient, [-np.inf, np.inf, np.nan])
    assert np.isnan(remainder).all()


@covers(*INT_DIVISIONS)
@pytest.mark.parametrize("op_type", sorted(INT_DIVISIONS))
def test_integer_division_by_zero_is_invalid_argument(runner, op_type):
    """TF: InvalidArgumentError `Integer division by zero` naming the node."""
    fn = INT_DIVISIONS[op_type][0]
    with runner.scope():
        x = tf.placeholder(tf.int64, [2])
        out = fn(x, tf.constant([1, 0], tf.int64))
    with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero") as info:
        runner.run(out, {x: np.array([4, 5], np.int64)})
    assert out.op.name in str(info.value)
    mark_executed(op_type)


@covers("FloorDiv", "FloorMod")
@pytest.mark.parametrize("dtype", NUMERIC)
def test_floordiv_and_floormod_broadcast_like_numpy(runner, dtype):
    rng = np.random.default_rng(3)
    x_val = rand(rng, (4, 3), dtype, -9, 9)
    y_val = away_from_zero(rng, (3,), np.float64, 1, 4)
    y_val = (np.round(y_val) if np.issubdtype(dtype, np.integer) else y_val).astype(dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [None, 3])
        y = tf.placeholder(tf_dtype(dtype), [3])
        out = [x // y, x % y]
    quotient, remainder = runner.run(out, {x: x_val, y: y_val})
    assert_close(quotient, np.floor_divide(x_val, y_val), dtype)
    assert_close(remainder, np.mod(x_val, y_val), dtype)


@covers("FloorDiv", "RealDiv")
def test_tf1_div_floors_integers_and_divides_floats(runner):
    """Observed in TF: tf.div([-7, 7], [2, -2]) is [-4, -4] (FloorDiv) and tf.div of the float
    values is [-3.5, -3.5] (RealDiv); both ops are named `div`."""
    with runner.scope():
        i = tf.div(tf.constant([-7, 7]), tf.constant([2, -2]))
        f = tf.div(tf.constant([-7.0, 7.0]), tf.constant([2.0, -2.0]))
    assert (i.op.type, f.op.type) == ("FloorDiv", "RealDiv")
    assert (i.op.name, f.op.name) == ("div", "div_1")
    got_i, got_f = runner.run([i, f])
    np.testing.assert_array_equal(got_i, [-4, -4])
    np.testing.assert_array_equal(got_f, [-3.5, -3.5])


NO_NAN = {"MulNoNan": (tf.multiply_no_nan, np.multiply), "DivNoNan": (tf.div_no_nan, np.divide)}


@covers(*NO_NAN)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op_type", sorted(NO_NAN))
def test_no_nan_products_give_zero_where_y_is_zero(runner, op_type, dtype):
    """Observed in TF: multiply_no_nan([inf, 1.], [0., 2.]) is [0, 2]."""
    fn, ref = NO_NAN[op_type]
    x_val = np.array([[np.inf, 1.0, np.nan, 3.0], [0.0, -2.0, 5.0, 1.5]], dtype)
    y_val = np.array([0.0, 2.0, 0.0, -4.0], dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [2, 4])
        y = tf.placeholder(tf_dtype(dtype), [4])
        out = fn(x, y)
    want = np.where(y_val == 0, 0.0, ref(x_val, np.where(y_val == 0, 1.0, y_val)))
    assert_close(runner.run(out, {x: x_val, y: y_val}), want, dtype)


# ---- comparisons and logic ----

COMPARE = {"NotEqual": (tf.not_equal, np.not_equal), "LessEqual": (tf.less_equal, np.less_equal),
           "GreaterEqual": (tf.greater_equal, np.greater_equal)}


@covers(*COMPARE)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op_type", sorted(COMPARE))
def test_comparisons_broadcast(runner, op_type, dtype):
    fn, ref = COMPARE[op_type]
    rng = np.random.default_rng(4)
    x_val = rng.integers(-2, 3, size=(4, 3)).astype(dtype)
    y_val = rng.integers(-2, 3, size=(3,)).astype(dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [4, 3])
        y = tf.placeholder(tf_dtype(dtype), [3])
        out = fn(x, y)
    got = runner.run(out, {x: x_val, y: y_val})
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, ref(x_val, y_val))


@covers("Equal", "NotEqual", "LogicalAnd", "LogicalOr", "LogicalNot")
def test_logic_on_bools(runner):
    a_val = np.array([[True, True, False, False]])
    b_val = np.array([[True], [False]])
    with runner.scope():
        a = tf.placeholder(tf.bool, [1, 4])
        b = tf.placeholder(tf.bool, [2, 1])
        out = [tf.logical_and(a, b), tf.logical_or(a, b), tf.logical_not(a),
               tf.logical_xor(a, b), tf.equal(a, b), tf.not_equal(a, b)]
    got = runner.run(out, {a: a_val, b: b_val})
    wants = [a_val & b_val, a_val | b_val, ~a_val, a_val ^ b_val, a_val == b_val,
             a_val != b_val]
    for g, w in zip(got, wants):
        np.testing.assert_array_equal(g, w)


def test_logical_xor_is_tf_composite():
    """TF builds xor from LogicalOr/LogicalAnd/LogicalNot; `x ^ y` names the last op `xor`."""
    with tf.Graph().as_default():
        a, b = tf.placeholder(tf.bool), tf.placeholder(tf.bool)
        x = a ^ b
        assert (x.op.type, x.op.name) == ("LogicalAnd", "xor")
        assert [t.op.type for t in x.op.inputs] == ["LogicalOr", "LogicalNot"]
        assert tf.logical_xor(a, b).op.name == "LogicalXor"


def test_logic_rejects_non_bools():
    with tf.Graph().as_default(), pytest.raises(TypeError, match="int32 not in list of "
                                                                 "allowed values: bool"):
        tf.logical_and(tf.constant([1]), tf.constant([0]))


# ---- Tensor operators, names and TF1 helpers ----

def test_operators_build_tf_ops_and_names():
    """Observed in TF: `//` FloorDiv `floordiv`, `%` FloorMod `mod`, `<=` LessEqual, `>=`
    GreaterEqual, `&` LogicalAnd `and`, `|` LogicalOr `or`, `~` LogicalNot, `2. ** x` Pow
    `pow`, `3. // x` FloorDiv `floordiv_1`."""
    with tf.Graph().as_default():
        x, y = tf.placeholder(tf.float32, [2]), tf.placeholder(tf.float32, [2])
        a, b = tf.placeholder(tf.bool, [2]), tf.placeholder(tf.bool, [2])
        built = [x // y, x % y, x <= y, x >= y, a & b, a | b, ~a, 2.0 ** x, 3.0 // x, 3.0 % x,
                 True & a]
        assert [(t.op.type, t.op.name) for t in built] == [
            ("FloorDiv", "floordiv"), ("FloorMod", "mod"), ("LessEqual", "LessEqual"),
            ("GreaterEqual", "GreaterEqual"), ("LogicalAnd", "and"), ("LogicalOr", "or"),
            ("LogicalNot", "LogicalNot"), ("Pow", "pow"), ("FloorDiv", "floordiv_1"),
            ("FloorMod", "mod_1"), ("LogicalAnd", "and_1")]
        assert [t.op.type for t in built[-1].op.inputs] == ["Const", "Placeholder"]


@covers("FloorDiv", "FloorMod", "Pow", "LessEqual", "GreaterEqual")
def test_operators_work_on_variables(runner):
    with runner.scope():
        v = tf.Variable([7.0, -7.0])
        out = [v // 2.0, v % 2.0, 2.0 ** v, v <= 0.0, v >= 0.0]
        init = tf.global_variables_initializer()
    runner.run(init)
    got = runner.run(out)
    np.testing.assert_array_equal(got[0], [3.0, -4.0])
    np.testing.assert_array_equal(got[1], [1.0, 1.0])
    np.testing.assert_allclose(got[2], [128.0, 2.0 ** -7])
    np.testing.assert_array_equal(got[3], [False, True])
    np.testing.assert_array_equal(got[4], [True, False])


def test_operator_names_match_tf_module_functions():
    """Observed in TF: tf.floormod, tf.mod -> `FloorMod`; tf.floordiv -> `floordiv`;
    tf.truncatediv -> `TruncateDiv`; tf.not_equal -> `NotEqual`."""
    with tf.Graph().as_default():
        a, b = tf.constant([1]), tf.constant([2])
        names = [f(a, b).op.name for f in (tf.floormod, tf.mod, tf.floordiv, tf.floor_div,
                                           tf.truncatediv, tf.not_equal)]
        # Names are made unique ignoring case, in TF too (floordiv_5 then FloorDiv_6).
        assert names == ["FloorMod", "FloorMod_1", "floordiv", "FloorDiv_1", "TruncateDiv",
                         "NotEqual"]


@covers("Mul")
def test_scalar_mul(runner):
    """Observed in TF: tf.scalar_mul(2., x) is a Mul named `Mul` fed by a Const `scalar`; a
    non-scalar raises `The input scalar must be a 0-D value. Received shape (2,).`"""
    with runner.scope():
        x = tf.placeholder(tf.float32, [2])
        y = tf.scalar_mul(2.0, x)
        assert (y.op.type, y.op.name) == ("Mul", "Mul")
        assert y.op.inputs[0].op.name == "scalar"
        with pytest.raises(ValueError, match=r"must be a 0-D value. Received shape \(2,\)"):
            tf.scalar_mul(tf.constant([1.0, 2.0]), x)
    np.testing.assert_array_equal(runner.run(y, {x: np.array([1.5, -2.0], np.float32)}),
                                  [3.0, -4.0])


@covers("Cast")
def test_tf1_cast_helpers(runner):
    """Observed in TF: to_float/to_int32/to_int64/to_double name their Cast `ToFloat`,
    `ToInt32`, `ToInt64`, `ToDouble`; to_int32(1.7, -2.2) truncates to [1, -2]."""
    with runner.scope():
        f = tf.constant([1.7, -2.2], tf.float64)
        outs = [tf.to_float(f), tf.to_int32(f), tf.to_int64(f), tf.to_double(tf.constant([1, 2]))]
    assert [t.op.name for t in outs] == ["ToFloat", "ToInt32", "ToInt64", "ToDouble"]
    assert [t.dtype for t in outs] == [tf.float32, tf.int32, tf.int64, tf.float64]
    got = runner.run(outs)
    np.testing.assert_array_equal(got[1], [1, -2])
    np.testing.assert_array_equal(got[3], [1.0, 2.0])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        assert tf.to_float(x) is x


@pytest.mark.parametrize("spelling, dtype", [("float", tf.float32), ("int32", tf.int32),
                                             ("float64", tf.float64), ("double", tf.float64)])
def test_loose_placeholder_dtypes(spelling, dtype):
    with tf.Graph().as_default():
        assert tf.placeholder(spelling).dtype == dtype


def test_elementwise_ops_on_unknown_rank():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        for y in (tf.floor(x), tf.log1p(x), x // 2.0, x % 2.0, x <= 1.0, tf.sign(x),
                  tf.clip_by_value(x, 0.0, 1.0)):
            assert y.shape.ndims is None
        known = tf.placeholder(tf.float32, [None, 3])
        assert (known // x).shape.ndims is None
        assert tf.floormod(known, 2.0).shape.as_list() == [None, 3]


def test_broadcast_mismatch_names_the_op():
    with tf.Graph().as_default(), pytest.raises(
            ValueError, match=r"Dimensions must be equal, but are 2 and 3 for 'FloorMod'"):
        tf.floormod(tf.zeros([2]), tf.zeros([3]))
