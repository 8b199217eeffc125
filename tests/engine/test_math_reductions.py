"""Reductions (Min, Prod, Any, All and the composites reduce_logsumexp and count_nonzero),
ArgMin/ArgMax, Cumsum/Cumprod, Range, LinSpace and Rank: kernels on CPU and a virtual GPU
against numpy, static shapes (unknown where the input is), the TF1 argument spellings, and
numbers observed from TensorFlow 2.21 (tf.compat.v1) for ties, NaN, large values, empty
inputs and range's dtype inference."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_harness import (
    FLOATS,
    INTS,
    NUMERIC,
    assert_close,
    covers,
    rand,
    tf_dtype,
)

import engine as tf
from engine import errors

AXES = [None, 0, 1, -1, [0, 2], [-1, -3], []]
REDUCE = {"Min": (tf.reduce_min, np.min), "Prod": (tf.reduce_prod, np.prod)}


@covers(*REDUCE)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("op_type", sorted(REDUCE))
def test_reductions(runner, op_type, keepdims, dtype):
    fn, ref = REDUCE[op_type]
    x_val = rand(np.random.default_rng(1), (2, 3, 4), dtype, -3, 3)
    outs, wants = [], []
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [2, 3, 4])
        for axis in AXES:
            outs.append(fn(x, axis=axis, keepdims=keepdims))
            np_axis = tuple(axis) if isinstance(axis, list) else axis
            wants.append(x_val if np_axis == () else
                         ref(x_val, axis=np_axis, keepdims=keepdims).astype(dtype))
    for axis, got, want in zip(AXES, runner.run(outs, {x: x_val}), wants):
        assert np.shape(got) == np.shape(want), f"axis={axis}"
        assert_close(got, want, dtype)


BOOL_REDUCE = {"Any": (tf.reduce_any, np.any), "All": (tf.reduce_all, np.all)}


@covers(*BOOL_REDUCE)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("op_type", sorted(BOOL_REDUCE))
def test_bool_reductions(runner, op_type, keepdims):
    fn, ref = BOOL_REDUCE[op_type]
    x_val = np.random.default_rng(2).random((2, 3, 4)) < 0.7
    with runner.scope():
        x = tf.placeholder(tf.bool, [2, 3, 4])
        outs = [fn(x, axis=axis, keepdims=keepdims) for axis in AXES]
    for axis, got in zip(AXES, runner.run(outs, {x: x_val})):
        np_axis = tuple(axis) if isinstance(axis, list) else axis
        want = x_val if np_axis == () else ref(x_val, axis=np_axis, keepdims=keepdims)
        np.testing.assert_array_equal(got, want, err_msg=f"axis={axis}")


def test_bool_reductions_reject_numbers():
    with tf.Graph().as_default(), pytest.raises(TypeError, match="float32 not in list of "
                                                                 "allowed values: bool"):
        tf.reduce_any(tf.zeros([2]))


@covers("Max", "Min", "Prod", "Any", "All", "Sum")
def test_empty_reductions_give_identities(runner):
    """Observed in TF: reduce_prod/min/max of zeros([0]) are 1, inf, -inf; reduce_all and
    reduce_any of an empty bool tensor are True and False."""
    with runner.scope():
        e = tf.placeholder(tf.float32, [None])
        b = tf.placeholder(tf.bool, [None])
        i = tf.placeholder(tf.int32, [None, 2])
        outs = [tf.reduce_prod(e), tf.reduce_min(e), tf.reduce_max(e), tf.reduce_all(b),
                tf.reduce_any(b), tf.reduce_sum(e), tf.reduce_max(i, 0), tf.reduce_min(i, 0)]
    got = runner.run(outs, {e: np.zeros(0, np.float32), b: np.zeros(0, bool),
                            i: np.zeros((0, 2), np.int32)})
    assert got[:6] == [1.0, np.inf, -np.inf, True, False, 0.0]
    info = np.iinfo(np.int32)
    np.testing.assert_array_equal(got[6], [info.min, info.min])
    np.testing.assert_array_equal(got[7], [info.max, info.max])


@covers("Prod")
@pytest.mark.parametrize("dtype", INTS)
def test_integer_prod(runner, dtype):
    """Observed in TF: reduce_prod([[2, 3], [4, 5]], 0) is [8, 15]."""
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [2, 2])
        y = tf.reduce_prod(x, 0)
    np.testing.assert_array_equal(runner.run(y, {x: np.array([[2, 3], [4, 5]], dtype)}),
                                  np.array([8, 15], dtype))


# ---- ArgMin / ArgMax ----

@covers("ArgMin")
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("output_type", [tf.int32, tf.int64])
def test_argmin(runner, dtype, output_type):
    x_val = np.random.default_rng(3).permutation(15).reshape(3, 5).astype(dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [3, 5])
        outs = [tf.argmin(x, axis, output_type=output_type) for axis in (0, 1, -1)]
    for axis, got in zip((0, 1, -1), runner.run(outs, {x: x_val})):
        np.testing.assert_array_equal(got, np.argmin(x_val, axis=axis))
        assert got.dtype == output_type.numpy_dtype


@covers("ArgMin", "ArgMax")
def test_arg_reductions_pick_the_first_tie(runner):
    """Observed in TF: argmin([[3, 1, 1], [2, 2, 0]], 1) is [1, 2], arg_min([[3., 1., 1.]],
    dimension=1) is [1] and argmax([1, 3, 3], 0) is 1; all int64."""
    with runner.scope():
        outs = [tf.argmin([[3, 1, 1], [2, 2, 0]], 1), tf.arg_min([[3.0, 1.0, 1.0]], dimension=1),
                tf.argmax([1, 3, 3], 0), tf.arg_max([[1.0, 5.0, 5.0]], 1),
                tf.argmin([[4, 2], [2, 4]], dimension=0)]
    got = runner.run(outs)
    assert [g.tolist() for g in got] == [[1, 2], [1], 1, [1], [1, 0]]
    assert all(g.dtype == np.int64 for g in got)
    assert [t.op.name for t in outs[:2]] == ["ArgMin", "ArgMin_1"]


NAN_CASES = [  # (values, TF's argmax, TF's argmin), observed in TF
    ([np.nan, 1.0], 1, 1), ([-np.inf, np.nan], 0, 0), ([np.nan, np.nan], 0, 0),
    ([1.0, np.nan, 1.0], 0, 0), ([np.nan, -np.inf], 0, 1), ([1.0, np.nan, 0.0], 0, 2),
    ([1.0, np.nan, 5.0], 2, 0),
]


@covers("ArgMin", "ArgMax")
@pytest.mark.parametrize("dtype", FLOATS)
def test_arg_reductions_skip_nan_as_tf(runner, dtype):
    with runner.scope():
        phs = [tf.placeholder(tf_dtype(dtype), [len(v)]) for v, _, _ in NAN_CASES]
        outs = [f(p, 0) for p in phs for f in (tf.argmax, tf.argmin)]
    got = runner.run(outs, {p: np.array(v, dtype) for p, (v, _, _) in zip(phs, NAN_CASES)})
    assert got == [w for _, hi, lo in NAN_CASES for w in (hi, lo)]


def test_arg_reduction_arguments():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        assert tf.argmin(x).shape.as_list() == [4]
        assert tf.argmax(x, dimension=1).shape.as_list() == [None]
        assert tf.argmin(tf.placeholder(tf.float32), 0).shape.ndims is None
        with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dimension'"):
            tf.argmin(x, axis=0, dimension=0)
        with pytest.raises(ValueError, match="Invalid reduction dimension 2"):
            tf.argmin(x, 2)


# ---- reduction arguments and unknown rank ----

def test_tf1_argument_spellings():
    """Observed in TF: on [None, 3], keep_dims=True gives (1, 1) and reduction_indices=[1]
    gives (?,)."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        assert tf.reduce_min(x, keep_dims=True).shape.as_list() == [1, 1]
        assert tf.reduce_prod(x, reduction_indices=[1]).shape.as_list() == [None]
        assert tf.reduce_all(tf.cast(x, tf.bool), reduction_indices=0,
                             keep_dims=True).shape.as_list() == [1, 3]
        with pytest.raises(ValueError, match="Cannot specify both 'axis' and "
                                             "'reduction_indices'"):
            tf.reduce_min(x, axis=0, reduction_indices=0)
        with pytest.raises(ValueError, match="Cannot specify both 'keepdims' and 'keep_dims'"):
            tf.reduce_sum(x, keepdims=True, keep_dims=True)


ALL_REDUCTIONS = [tf.reduce_sum, tf.reduce_mean, tf.reduce_max, tf.reduce_min, tf.reduce_prod,
                  tf.reduce_logsumexp]


@covers("Sum", "Mean", "Max", "Min", "Prod", "Range", "Rank")
def test_reductions_of_unknown_rank(runner):
    """Observed in TF: with axis None on a placeholder of unknown rank, reduce_sum/min/prod/
    mean/logsumexp are scalars fed by Range; keepdims=True or an explicit axis gives
    <unknown>."""
    x_val = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    with runner.scope():
        x = tf.placeholder(tf.float32)
        outs = [fn(x) for fn in ALL_REDUCTIONS]
        assert all(y.shape.as_list() == [] for y in outs)
        assert outs[0].op.inputs[1].op.type == "Range"
        assert tf.reduce_sum(x, keepdims=True).shape.ndims is None
        assert tf.reduce_sum(x, 0).shape.ndims is None
        assert tf.reduce_min(tf.placeholder(tf.float32, [None, 3]), keepdims=True,
                             axis=tf.placeholder(tf.int32)).shape.as_list() == [None, None]
        kept = tf.reduce_prod(x, keepdims=True)
    got = runner.run(outs + [kept], {x: x_val})
    np.testing.assert_allclose(got[:6], [10.0, 2.5, 4.0, 1.0, 24.0, 4.4401897], rtol=1e-6)
    np.testing.assert_array_equal(got[6], [[24.0]])


@covers("Sum")
def test_reduction_axes_may_be_int64_tensors(runner):
    with runner.scope():
        x = tf.placeholder(tf.float32, [2, 3])
        y = tf.reduce_sum(x, tf.constant([1], tf.int64))
    assert y.op.attrs["Tidx"] == tf.int64
    np.testing.assert_array_equal(runner.run(y, {x: np.ones((2, 3), np.float32)}), [3.0, 3.0])


# ---- composite reductions ----

@covers("Max", "IsFinite", "MulNoNan", "Sub", "Exp", "Sum", "Log", "Add")
def test_reduce_logsumexp_is_stable_as_tf(runner):
    """Observed in TF: reduce_logsumexp([[1000, 1000.5, 999], [-inf]*3], axis=1) is
    [1001.1041, -inf], over all axes 1001.1041, of [inf, 1] inf, of an empty tensor -inf;
    the last op is named ReduceLogSumExp."""
    big = np.array([[1000.0, 1000.5, 999.0], [-np.inf, -np.inf, -np.inf]], np.float32)
    with runner.scope():
        x = tf.placeholder(tf.float32, [2, 3])
        rows = tf.reduce_logsumexp(x, axis=1)
        kept = tf.reduce_logsumexp(x, 1, keepdims=True)
        outs = [rows, tf.reduce_logsumexp(x), kept,
                tf.reduce_logsumexp(tf.constant([np.inf, 1.0])),
                tf.reduce_logsumexp(tf.zeros([0]))]
    assert rows.op.name == "ReduceLogSumExp" and kept.shape.as_list() == [2, 1]
    got = runner.run(outs, {x: big})
    np.testing.assert_allclose(got[0], [1001.1041, -np.inf], rtol=1e-7)
    np.testing.assert_allclose(got[1], 1001.1041, rtol=1e-7)
    np.testing.assert_allclose(got[2], [[1001.1041], [-np.inf]], rtol=1e-7)
    assert got[3] == np.inf and got[4] == -np.inf


@covers("NotEqual", "Cast", "Sum")
def test_count_nonzero(runner):
    """Observed in TF: count_nonzero([[0, 1, 2], [0, 0, 3]]) is 3 (int64);
    count_nonzero([[0., 1.], [0., 0.]], axis=1, keepdims=True) is [[1], [0]]."""
    with runner.scope():
        total = tf.count_nonzero(tf.constant([[0, 1, 2], [0, 0, 3]]))
        rows = tf.count_nonzero(tf.constant([[0.0, 1.0], [0.0, 0.0]]), axis=1, keepdims=True)
        as_int32 = tf.count_nonzero(tf.constant([True, False, True]), dtype=tf.int32)
    assert total.dtype == tf.int64 and total.op.name == "count_nonzero/Sum"
    got = runner.run([total, rows, as_int32])
    assert got[0] == 3
    np.testing.assert_array_equal(got[1], [[1], [0]])
    assert got[2] == 2 and got[2].dtype == np.int32


# ---- scans ----

@covers("Cumsum")
@pytest.mark.parametrize("dtype", NUMERIC)
def test_cumsum_variants_as_tf(runner, dtype):
    """Observed in TF on [1, 2, 3, 4]: [1 3 6 10], exclusive [0 1 3 6], reverse [10 9 7 4],
    both [9 7 4 0]; on [[1, 2], [3, 4]] axis=1 [[1 3] [3 7]] and axis=-2 [[1 2] [4 6]]."""
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [4])
        m = tf.placeholder(tf_dtype(dtype), [2, 2])
        outs = [tf.cumsum(x), tf.cumsum(x, exclusive=True), tf.cumsum(x, reverse=True),
                tf.cumsum(x, exclusive=True, reverse=True), tf.cumsum(m, axis=1),
                tf.cumsum(m, axis=-2)]
    got = runner.run(outs, {x: np.array([1, 2, 3, 4], dtype), m: np.array([[1, 2], [3, 4]],
                                                                          dtype)})
    wants = [[1, 3, 6, 10], [0, 1, 3, 6], [10, 9, 7, 4], [9, 7, 4, 0], [[1, 3], [3, 7]],
             [[1, 2], [4, 6]]]
    for g, w in zip(got, wants):
        assert_close(g, np.array(w, dtype), dtype)
    assert outs[0].op.name == "Cumsum"


@covers("Cumprod")
@pytest.mark.parametrize("dtype", NUMERIC)
def test_cumprod_variants(runner, dtype):
    x_val = np.array([[2, 3, 1], [1, -2, 2]], dtype)
    with runner.scope():
        x = tf.placeholder(tf_dtype(dtype), [2, 3])
        outs = [tf.cumprod(x, 1), tf.cumprod(x, 1, exclusive=True), tf.cumprod(x, 1, reverse=True),
                tf.cumprod(x, 0, exclusive=True, reverse=True)]
    got = runner.run(outs, {x: x_val})
    wants = [np.cumprod(x_val, 1), [[1, 2, 6], [1, 1, -2]],
             np.cumprod(x_val[:, ::-1], 1)[:, ::-1], [[1, -2, 2], [1, 1, 1]]]
    for g, w in zip(got, wants):
        assert_close(g, np.array(w, dtype), dtype)


def test_scan_axis_is_checked():
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"scan axis in the range "
                                                                  r"\[-2, 2\), but got 2"):
        tf.cumsum(tf.zeros([2, 3]), axis=2)


# ---- Range, LinSpace, Rank ----

RANGE_CASES = [  # (args, dtype, values), observed in TF
    ((5,), tf.int32, [0, 1, 2, 3, 4]), ((1, 5), tf.int32, [1, 2, 3, 4]),
    ((1.0, 5), tf.float32, [1, 2, 3, 4]), ((0, 5, 2), tf.int32, [0, 2, 4]),
    ((1, 5.5), tf.float32, [1, 2, 3, 4, 5]), ((np.int64(3),), tf.int64, [0, 1, 2]),
    ((0, 1, 0.25), tf.float32, [0, 0.25, 0.5, 0.75]), ((5, 1, -2), tf.int32, [5, 3]),
    ((0.0, 1.0, 0.1), tf.float32, [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.90000004]),
]


@covers("Range")
def test_range_dtype_inference_and_values_as_tf(runner):
    with runner.scope():
        outs = [tf.range(*args) for args, _, _ in RANGE_CASES]
        outs.append(tf.range(tf.constant(3, tf.int64)))
        outs.append(tf.range(3, dtype=tf.float32))
    wants = [(dt, v) for _, dt, v in RANGE_CASES] + [(tf.int64, [0, 1, 2]),
                                                     (tf.float32, [0, 1, 2])]
    assert [t.dtype for t in outs] == [dt for dt, _ in wants]
    assert [t.shape.as_list() for t in outs] == [[len(v)] for _, v in wants]
    assert outs[0].op.name == "range" and outs[1].op.name == "range_1"
    for got, (dt, v) in zip(runner.run(outs), wants):
        np.testing.assert_array_equal(got, np.array(v, dt.numpy_dtype))


@covers("Range")
def test_range_with_runtime_bounds(runner):
    with runner.scope():
        n = tf.placeholder(tf.int32, [])
        r = tf.range(n)
        f = tf.range(0.0, tf.cast(n, tf.float32), 0.5)
    assert r.shape.as_list() == [None]
    got = runner.run([r, f], {n: 3})
    np.testing.assert_array_equal(got[0], [0, 1, 2])
    np.testing.assert_array_equal(got[1], [0, 0.5, 1, 1.5, 2, 2.5])
    with pytest.raises(errors.InvalidArgumentError,
                       match="Requires start <= limit when delta > 0: 0/-1"):
        runner.run(r, {n: -1})


@pytest.mark.parametrize("args, match", [
    ((5, 1), r"Requires start <= limit when delta > 0: 5/1 for 'range' \(op: 'Range'\) with "
             r"input shapes: \[\], \[\], \[\] and with computed input tensors: input\[0\] = "
             r"<5>, input\[1\] = <1>, input\[2\] = <1>."),
    ((0, 5, 0), r"Requires delta != 0"),
    ((1, 5, -1), r"Requires start >= limit when delta < 0: 1/5"),
])
def test_range_errors_at_build_time_as_tf(args, match):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=match):
        tf.range(*args)


@covers("LinSpace")
def test_linspace_values_as_tf(runner):
    """Observed in TF (float32): linspace(0, 1, 7) and linspace(-3.3, 10.7, 11) to the bit."""
    with runner.scope():
        a = tf.linspace(0.0, 1.0, 7)
        b = tf.linspace(-3.3, 10.7, 11)
        one = tf.linspace(2.0, 5.0, 1)
        n = tf.placeholder(tf.int32, [])
        dyn = tf.lin_space(tf.constant(0.0, tf.float64), 1.0, n)
    assert (a.op.type, a.op.name, a.shape.as_list()) == ("LinSpace", "LinSpace", [7])
    assert dyn.shape.as_list() == [None] and dyn.dtype == tf.float64
    got = runner.run([a, b, one, dyn], {n: 5})
    np.testing.assert_array_equal(got[0], np.array(
        [0.0, 0.1666666716337204, 0.3333333432674408, 0.5, 0.6666666865348816,
         0.8333333730697632, 1.0], np.float32))
    np.testing.assert_array_equal(got[1], np.array(
        [-3.299999952316284, -1.899999976158142, -0.5, 0.8999998569488525, 2.299999952316284,
         3.700000047683716, 5.09999942779541, 6.5, 7.899999618530273, 9.299999237060547,
         10.699999809265137], np.float32))
    np.testing.assert_array_equal(got[2], [2.0])
    np.testing.assert_array_equal(got[3], [0, 0.25, 0.5, 0.75, 1.0])
    with pytest.raises(errors.InvalidArgumentError, match="Requires num > 0: 0"):
        runner.run(dyn, {n: 0})


def test_linspace_rejects_bad_arguments():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Requires num > 0: 0"):
            tf.linspace(0.0, 1.0, 0)
        with pytest.raises(TypeError, match="int32 not in list"):
            tf.linspace(0, 1, 3)


@covers("Rank")
def test_rank(runner):
    """Observed in TF: tf.rank of a tensor of known rank is a Const named Rank; of unknown
    rank a Rank op."""
    with runner.scope():
        x = tf.placeholder(tf.float32)
        r = tf.rank(x)
        known = tf.rank(tf.zeros([2, 3]))
    assert (r.op.type, r.dtype, r.shape.as_list()) == ("Rank", tf.int32, [])
    assert (known.op.type, known.op.name) == ("Const", "Rank_1")
    got = runner.run([r, known], {x: np.zeros((2, 1, 4), np.float32)})
    assert got == [3, 2]
