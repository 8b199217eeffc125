"""Static shapes and errors of the array ops, pinned to what tensorflow-cpu 2.21
(tf.compat.v1, graph mode) gives for the same calls: shapes with known, unknown and
unknown-rank inputs; TF's build-time ValueError/TypeError messages; run-time
InvalidArgumentErrors naming the node; TF's op names; and an unknown-rank placeholder fed
tensors of several ranks through every op."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine import errors


@pytest.fixture(autouse=True)
def fresh_graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def _shape(t):
    return None if t.shape.ndims is None else t.shape.as_list()


def _x():
    return tf.constant(np.arange(60, dtype=np.float32).reshape(3, 4, 5))


def _partial():
    return tf.placeholder(tf.float32, [None, 4, 5])


def _unknown():
    return tf.placeholder(tf.float32)


# ---- static shapes (each expectation is TF 2.21's) ----

def test_concat_shapes():
    a = tf.zeros([2, 3])
    axis = tf.placeholder(tf.int32, [])
    assert _shape(tf.concat([a, a], -1)) == [2, 6]
    assert _shape(tf.concat([_unknown(), a], 1)) == [2, None]
    assert _shape(tf.concat([a, a], axis)) == [None, None]
    assert _shape(tf.concat([a, tf.zeros([2, 5])], axis)) == [None, None]
    assert tf.concat([a], 0).op.type == "Identity"


def test_split_shapes():
    assert [_shape(t) for t in tf.split(tf.zeros([4, 6]), 3, 1)] == [[4, 2]] * 3
    assert [_shape(t) for t in tf.split(tf.zeros([4, 6]), [1, -1, 2], 1)] == \
        [[4, 1], [4, 3], [4, 2]]
    assert [_shape(t) for t in tf.split(_unknown(), 2, 1)] == [None, None]
    assert [_shape(t) for t in tf.split(tf.zeros([4, 6]), [3, 3], 1, num=2)] == [[4, 3]] * 2
    sizes = tf.placeholder(tf.int32, [2])
    assert [_shape(t) for t in tf.split(_x(), sizes, 1)] == [[3, None, 5]] * 2


def test_slice_shapes():
    assert _shape(tf.slice(tf.zeros([4, 6]), [1, 2], [2, -1])) == [2, 4]
    assert _shape(tf.slice(tf.zeros([4, 6]), [-1, 2], [1, -1])) == [1, 4]
    assert _shape(tf.slice(_partial(), [0, 1, 0], [-1, 2, -1])) == [None, 2, 5]
    assert _shape(tf.slice(_unknown(), [0, 1], [1, 2])) == [1, 2]


GETITEM_SHAPES = [
    # key, [3,4,5] constant, [None,4,5] placeholder (unknown rank gives unknown)
    (lambda t: t[:, 1:3], [3, 2, 5], [None, 2, 5]),
    (lambda t: t[..., 0], [3, 4], [None, 4]),
    (lambda t: t[::-1], [3, 4, 5], [None, 4, 5]),
    (lambda t: t[tf.newaxis], [1, 3, 4, 5], [1, None, 4, 5]),
    (lambda t: t[1], [4, 5], [4, 5]),
    (lambda t: t[-1, ::-2, 1:-1], [2, 3], [2, 3]),
    (lambda t: t[:, 5:1:-1], [3, 2, 5], [None, 2, 5]),
    (lambda t: t[:, 10:-10:-1], [3, 4, 5], [None, 4, 5]),
    (lambda t: t[..., tf.newaxis, 2], [3, 4, 1], [None, 4, 1]),
    (lambda t: t[None, 0, None], [1, 1, 4, 5], [1, 1, 4, 5]),
    (lambda t: t[:, :, ::3], [3, 4, 2], [None, 4, 2]),
    (lambda t: t[2:1], [0, 4, 5], [None, 4, 5]),
    (lambda t: t[tf.constant(1)], [4, 5], [4, 5]),
    (lambda t: t[1:tf.constant(3)], [2, 4, 5], [None, 4, 5]),
    (lambda t: t[0, 0, 0], [], []),
]


@pytest.mark.parametrize("case", range(len(GETITEM_SHAPES)))
def test_getitem_shapes(case):
    key, on_constant, on_partial = GETITEM_SHAPES[case]
    assert _shape(key(_x())) == on_constant
    assert _shape(key(_partial())) == on_partial
    assert _shape(key(_unknown())) is None


def test_getitem_builds_tf_masks_and_names():
    op = _x()[1:2, ..., tf.newaxis, ::-1].op
    assert op.type == "StridedSlice" and op.name == "strided_slice"
    assert [op.get_attr(k) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                     "new_axis_mask", "shrink_axis_mask")] == [8, 8, 2, 4, 0]
    assert [t.op.name for t in op.inputs[1:]] == ["strided_slice/stack", "strided_slice/stack_1",
                                                  "strided_slice/stack_2"]
    with tf.Session() as s:
        assert [list(v) for v in s.run(list(op.inputs[1:]))] == \
            [[1, 0, 0, 0], [2, 0, 0, 0], [1, 1, 1, -1]]
    shrink = _x()[-1].op
    assert shrink.get_attr("shrink_axis_mask") == 1
    assert tf.strided_slice(_x(), [0], [1]).op.name == "StridedSlice"


def test_tf_op_names():
    x = _x()
    names = {
        "gather": [t.op.name for t in tf.gather(x, [0], axis=1).op.inputs],
        "one_hot": [t.op.name for t in tf.one_hot([1], 2).op.inputs],
        "ops": [f(x).op.name for f in (
            lambda t: tf.concat([t, t], 0), lambda t: tf.split(t, 3)[0], tf.matrix_transpose,
            tf.transpose, lambda t: tf.stack([t]), lambda t: tf.unstack(t)[0],
            lambda t: tf.pad(t, [[1, 1]] * 3), lambda t: tf.slice(t, [0, 0, 0], [1, 1, 1]))],
    }
    assert names == {
        "gather": ["Const", "GatherV2/indices", "GatherV2/axis"],
        "one_hot": ["one_hot/indices", "one_hot/depth", "one_hot/on_value", "one_hot/off_value"],
        "ops": ["concat", "split", "matrix_transpose/transpose", "transpose", "stack", "unstack",
                "Pad", "Slice"],
    }
    assert tf.gather(x, [0]).op.get_attr("batch_dims") == 0


def test_variable_getitem_reads_the_variable():
    v = tf.Variable(np.zeros((3, 4, 5), np.float32))
    t = v[0]
    assert _shape(t) == [4, 5]
    assert t.op.inputs[0].name == "Variable/read:0"
    with pytest.raises(TypeError, match="not iterable"):
        iter(v)


def test_gather_shapes_and_names():
    i2 = tf.placeholder(tf.int32, [None, 2])
    assert _shape(tf.gather(_x(), [[0, 1], [2, 3]], axis=1)) == [3, 2, 2, 5]
    assert _shape(tf.gather(_partial(), i2, axis=-1)) == [None, 4, None, 2]
    assert _shape(tf.gather(_unknown(), i2, axis=1)) is None
    assert _shape(tf.gather(_x(), i2, axis=tf.placeholder(tf.int32, []))) == [None] * 4


def test_gather_nd_shapes():
    i2 = tf.placeholder(tf.int32, [None, 2])
    assert _shape(tf.gather_nd(_x(), [[0, 1], [2, 3]])) == [2, 5]
    assert _shape(tf.gather_nd(_partial(), i2)) == [None, 5]
    assert _shape(tf.gather_nd(_x(), i2)) == [None, 5]
    assert _shape(tf.gather_nd(_x(), [[[0, 1, 2]]])) == [1, 1]


def test_restructuring_shapes():
    assert _shape(tf.transpose(_x())) == [5, 4, 3]
    assert _shape(tf.transpose(_partial())) == [5, 4, None]
    assert _shape(tf.transpose(_unknown())) is None
    assert _shape(tf.transpose(_unknown(), [2, 0, 1])) == [None] * 3
    assert _shape(tf.transpose(_partial(), [2, 0, 1])) == [5, None, 4]
    assert _shape(tf.matrix_transpose(_x())) == [3, 5, 4]
    z = tf.zeros([1, 3, 1, 2])
    assert [_shape(tf.squeeze(z)), _shape(tf.squeeze(z, [2])), _shape(tf.squeeze(z, -2))] == \
        [[3, 2], [1, 3, 2], [1, 3, 2]]
    row = tf.placeholder(tf.float32, [None, 1, 3])
    assert [_shape(tf.squeeze(_unknown())), _shape(tf.squeeze(row)),
            _shape(tf.squeeze(row, [0]))] == [None, None, [1, 3]]
    assert tf.squeeze(z, [-2]).op.get_attr("squeeze_dims") == [-2]
    assert _shape(tf.squeeze(z, squeeze_dims=[0])) == [3, 1, 2]


def test_pad_tile_stack_shapes():
    pads = [[1, 0], [0, 2], [1, 1]]
    assert [_shape(tf.pad(t, pads)) for t in (_x(), _unknown(), _partial())] == \
        [[4, 6, 7], [None] * 3, [None, 6, 7]]
    assert [tf.pad(_x(), pads).op.type, tf.pad(_x(), pads, constant_values=3).op.type,
            tf.pad(_x(), pads, "REFLECT").op.type] == ["Pad", "PadV2", "MirrorPad"]
    assert tf.pad(_x(), pads, "reflect").op.get_attr("mode") == "REFLECT"
    assert [_shape(tf.tile(t, [1, 2, 3])) for t in (_x(), _partial(), _unknown())] == \
        [[3, 8, 15], [None, 8, 15], [None] * 3]
    assert _shape(tf.stack([_x(), _x()], axis=1)) == [3, 2, 4, 5]
    assert _shape(tf.stack([_partial(), _x()], axis=-1)) == [3, 4, 5, 2]
    assert _shape(tf.stack([_unknown(), _x()])) == [2, 3, 4, 5]
    assert tf.stack([1, 2]).op.type == "Const"
    assert [_shape(t) for t in tf.unstack(_partial(), axis=1)] == [[None, 5]] * 4
    assert len(tf.unstack(_partial(), num=3)) == 3


def test_selection_shapes():
    b2 = tf.placeholder(tf.bool, [None, 4])
    assert (_shape(tf.where(_x() > 30)), tf.where(_x() > 30).dtype) == ([None, 3], tf.int64)
    assert _shape(tf.where(_unknown() > 1)) == [None, None]
    assert _shape(tf.where(b2[:, 0], _partial(), _partial())) == [None, 4, 5]
    assert _shape(tf.where(tf.zeros([3]) > 0, _x(), _x())) == [3, 4, 5]
    assert tf.where(_x() > 0, _x(), _x()).op.type == "Select"
    assert tf.where_v2(_x() > 0, _x(), _x()).op.type == "SelectV2"
    assert _shape(tf.where_v2(tf.zeros([5]) > 0, _x(), 1.0)) == [3, 4, 5]
    assert _shape(tf.one_hot([1, 2], 4)) == [2, 4]
    assert _shape(tf.one_hot(tf.placeholder(tf.int32, [None, 3]), 4, axis=1)) == [None, 4, 3]
    assert _shape(tf.one_hot(tf.placeholder(tf.int32), 4)) is None
    assert _shape(tf.one_hot([1, 2], tf.placeholder(tf.int32, []))) == [2, None]
    assert [tf.one_hot([1, 2], 3, on_value=5).dtype, tf.one_hot([1], 3, dtype=tf.int64).dtype] \
        == [tf.int32, tf.int64]
    assert _shape(tf.reverse(_x(), [0, -1])) == [3, 4, 5]
    assert [_shape(t) for t in tf.shape_n([_x(), _partial(), _unknown()])] == [[3], [3], [None]]
    assert _shape(tf.boolean_mask(_x(), _x()[..., 0] > 20)) == [None, 5]
    assert _shape(tf.boolean_mask(_partial(), b2)) == [None, 5]
    assert _shape(tf.boolean_mask(_x(), [True, False, True, False], axis=1)) == [3, None, 5]
    assert _shape(tf.unsorted_segment_sum(tf.zeros([4, 3, 2]), tf.zeros([4, 3], tf.int32), 5)) \
        == [5, 2]


# ---- build-time errors (TF's messages) ----

BUILD_ERRORS = [
    (lambda: tf.concat([tf.zeros([2, 3]), tf.zeros([3, 4])], 1), ValueError,
     r"Dimension 0 in both shapes must be equal, but are 2 and 3\. Shapes are \[2\] and \[3\]\."
     r" for 'concat' \(op: 'ConcatV2'\)"),
    (lambda: tf.concat([tf.zeros([2, 3])] * 2, 2), ValueError,
     "Shape must be at least rank 3 but is rank 2"),
    (lambda: tf.concat([tf.zeros([2, 3])] * 2, -3), ValueError,
     "Shape must be at least rank 3 but is rank 2"),
    (lambda: tf.concat([tf.zeros([2, 3]), tf.zeros([2])], 0), ValueError,
     "Shape must be rank 2 but is rank 1"),
    (lambda: tf.concat([1, 2], 0), ValueError, r"Can't concatenate scalars \(use tf.stack"),
    (lambda: tf.concat([tf.zeros([2]), tf.zeros([2], tf.float64)], 0), TypeError,
     r"Tensors in list passed to 'values' of 'ConcatV2' Op have types \[float32, float64\] "
     "that don't all match."),
    (lambda: tf.split(tf.zeros([4, 5]), 2, 1), ValueError,
     "Dimension size must be evenly divisible by 2 but is 5"),
    (lambda: tf.split(tf.zeros([4, 6]), [1, 2, 2], 1), ValueError,
     r"can't split axis of size 6 into pieces of size \[1,2,2\]"),
    (lambda: tf.split(tf.zeros([4, 6]), [-1, -1, 2], 1), ValueError,
     "size_splits can only have one -1"),
    (lambda: tf.split(tf.zeros([4, 6]), [5, -1, 2], 1), ValueError,
     "Split size at index 1 must be >= 0. Got: -1"),
    (lambda: tf.split(tf.zeros([4, 6]), tf.placeholder(tf.int32, [None]), 1), ValueError,
     "Cannot infer argument `num` from shape"),
    (lambda: tf.slice(tf.zeros([4, 6]), [1, 2, 3], [5, -1]), ValueError,
     r"Dimension 0 in both shapes must be equal, but are 3 and 2\. Shapes are \[3\] and \[2\]"),
    (lambda: _x()[..., ...], ValueError, "Multiple ellipses in slice spec not allowed"),
    (lambda: _x()[1.5], TypeError, r"Only integers, slices \(`:`\), ellipsis \(`...`\), "
     r"tf.newaxis \(`None`\) and scalar tf.int32/tf.int64 tensors are valid indices, got 1.5"),
    (lambda: _x()["a"], TypeError, "are valid indices, got 'a'"),
    (lambda: _x()[7], ValueError, "slice index 7 of dimension 0 out of bounds."),
    (lambda: _x()[-4], ValueError, "slice index -1 of dimension 0 out of bounds."),
    (lambda: _x()[0, 0, 0, 0], ValueError,
     "Index out of range using input dim 3; input has only 3 dims"),
    (lambda: tf.strided_slice(_x(), [1], [2], [-1], shrink_axis_mask=1), ValueError,
     "only stride 1 allowed on non-range indexing."),
    (lambda: tf.strided_slice(_x(), [1], [2], [0]), ValueError, r"strides\[0\] must be non-zero"),
    (lambda: tf.gather(_x(), [0], axis=3), ValueError,
     "Shape must be at least rank 4 but is rank 3"),
    (lambda: tf.gather(_x(), [0.5]), TypeError,
     "'Tindices' .* has DataType float32 not in list of allowed values: int32, int64"),
    (lambda: tf.gather_nd(_x(), [[0, 1, 2, 3]]), ValueError,
     r"indices.shape\[-1\] must be <= params.rank, but saw indices shape: \[1,4\] and params "
     r"shape: \[3,4,5\]"),
    (lambda: tf.transpose(_x(), [0, 1]), ValueError, "Dimension must be 3 but is 2"),
    (lambda: tf.transpose(_unknown(), [0, 2]), ValueError,
     "perm dim 2 is out of range of input rank 2"),
    (lambda: tf.matrix_transpose(tf.zeros([3])), ValueError,
     r"Argument `a` should be a \(batch\) matrix with rank >= 2"),
    (lambda: tf.squeeze(tf.zeros([1, 3, 1, 2]), [1]), ValueError,
     r"Can not squeeze dim\[1\], expected a dimension of 1, got 3"),
    (lambda: tf.squeeze(tf.zeros([1, 3, 1, 2]), [4]), ValueError,
     r"squeeze_dims\[0\] not in \[-4,4\)\."),
    (lambda: tf.pad(_x(), [[1, 0], [0, 2]]), ValueError, "Shape must be rank 2 but is rank 3"),
    (lambda: tf.pad(_x(), [[1, 0, 1]] * 3), ValueError, "Dimension must be 2 but is 3"),
    (lambda: tf.pad(_unknown(), [[1, 1], [-1, 0]]), ValueError, "Paddings must be non-negative"),
    (lambda: tf.pad(_x(), [[1, 0]] * 3, "FOO"), ValueError,
     'Value of argument `mode` expected to be one of "CONSTANT", "REFLECT", or "SYMMETRIC". '
     "Received `mode` = FOO"),
    (lambda: tf.tile(_x(), [1, 2]), ValueError, "Shape must be rank 3 but is rank 2"),
    (lambda: tf.stack([_x(), tf.zeros([3, 4])]), ValueError,
     "Shapes must be equal rank, but are 3 and 2"),
    (lambda: tf.stack([_x(), _x()], axis=4), ValueError, r"Argument `axis` = 4 not in range "
     r"\[-4, 4\)"),
    (lambda: tf.unstack(_partial()), ValueError,
     r"Cannot infer argument `num` from shape \(\?, 4, 5\)"),
    (lambda: tf.unstack(_unknown()), ValueError,
     "Cannot infer argument `num` from shape <unknown>"),
    (lambda: tf.unstack(_x(), axis=3), ValueError, r"Argument `axis` = 3 not in range \[-3, 3\)"),
    (lambda: tf.where(tf.zeros([4]) > 0, _x(), _x()), ValueError,
     r"Dimension 0 in both shapes must be equal, but are 4 and 3\. Shapes are \[4\] and \[3\]"),
    (lambda: tf.where(tf.zeros([3, 4]) > 0, _x(), _x()), ValueError,
     "Shapes must be equal rank, but are 3 and 2"),
    (lambda: tf.where(_x() > 3, _x()), ValueError,
     "x and y must both be non-None or both be None."),
    (lambda: tf.where_v2(tf.zeros([4]) > 0, _x(), _x()), ValueError,
     "Dimensions must be equal, but are 4 and 5"),
    (lambda: tf.where(_x() > 3, _x(), tf.zeros([3, 4, 5], tf.int32)), TypeError,
     "Input 'e' of 'Select' Op has type int32 that does not match type float32 of argument 't'."),
    (lambda: tf.one_hot([1], -2), ValueError,
     "Dimension size, given by scalar input 1, must be non-negative but is -2"),
    (lambda: tf.one_hot([1], 2, on_value=1.0, dtype=tf.int32), TypeError,
     "dtype <dtype: 'float32'> of on_value does not match dtype parameter <dtype: 'int32'>"),
    (lambda: tf.one_hot([1], 2, axis=-2), ValueError, "axis must be >= -1"),
    (lambda: tf.one_hot([1.0], 2), TypeError,
     "not in list of allowed values: uint8, int8, int32, int64"),
    (lambda: tf.reverse(_x(), [3]), ValueError, r"'axis'\[0\] = 3 is out of valid range \[0, 2"),
    (lambda: tf.reverse(_x(), [1, -2]), ValueError, "axis 1 specified more than once."),
    (lambda: tf.boolean_mask(_x(), [True, False]), ValueError,
     r"Shapes \(3,\) and \(2,\) are incompatible"),
    (lambda: tf.boolean_mask(_x(), tf.placeholder(tf.bool)), ValueError,
     "Number of mask dimensions must be specified"),
    (lambda: tf.boolean_mask(_x(), True), ValueError, "mask cannot be scalar."),
    (lambda: tf.unsorted_segment_sum(tf.zeros([4, 3, 2]), tf.zeros([3], tf.int32), 5),
     ValueError, "Dimensions must be equal, but are 4 and 3"),
]


@pytest.mark.parametrize("case", range(len(BUILD_ERRORS)))
def test_build_time_errors(case):
    build, kind, pattern = BUILD_ERRORS[case]
    with pytest.raises(kind, match=pattern):
        build()


# ---- run-time errors: InvalidArgumentError naming the node ----

X45 = np.zeros((4, 5), np.float32)
RUN_ERRORS = [
    (lambda p, i: tf.concat([p, tf.zeros([2, 3])], 0, name="cc"), {"p": np.zeros((2, 4))}, "cc",
     r"ConcatOp : Dimension 1 in both shapes must be equal: shape\[0\] = \[2,4\] vs\. "
     r"shape\[1\] = \[2,3\]"),
    (lambda p, i: tf.concat([p, p], 3, name="c2"), {"p": X45}, "c2",
     r"ConcatOp : Expected concatenating dimensions in the range \[-2, 2\), but got 3"),
    (lambda p, i: tf.concat([p, tf.cast(i, tf.float32)], 0, name="c3"),
     {"p": X45, "i": np.zeros(3, np.int32)}, "c3",
     r"ConcatOp : Ranks of all input tensors should match: shape\[0\] = \[4,5\] vs\. "
     r"shape\[1\] = \[3\]"),
    (lambda p, i: tf.slice(p, [1, 2], [5, -1], name="sl"), {"p": X45}, "sl",
     r"Expected size\[0\] in \[0, 3\], but got 5"),
    (lambda p, i: tf.slice(p, i, [1, 1], name="sl"), {"p": X45, "i": [-1, 0]}, "sl",
     r"Expected begin\[0\] in \[0, 4\], but got -1"),
    (lambda p, i: tf.slice(p, i, [1, 1], name="sl"), {"p": X45, "i": [0, 0, 0]}, "sl",
     "Expected begin and size arguments to be 1-D tensors of size 2, but got shapes \\[3\\] and "
     "\\[2\\] instead."),
    (lambda p, i: tf.split(p, 2, 1, name="sp"), {"p": X45}, "sp",
     r"Number of ways to split should evenly divide the split dimension, but got split_dim 1 "
     r"\(size = 5\) and num_split 2"),
    (lambda p, i: tf.split(p, 2, 3, name="sp"), {"p": X45}, "sp",
     r"-input rank\(-2\) <= split_dim < input rank \(2\), but got 3"),
    (lambda p, i: tf.split(p, [2, 2], 1, name="spv"), {"p": X45}, "spv",
     "Determined shape must either match input shape along split_dim exactly if fully "
     "specified, or be less than the size of the input along split_dim if not fully "
     "specified.  Got: 4"),
    (lambda p, i: p[7], {"p": X45}, "strided_slice", "slice index 7 of dimension 0 out of bounds."),
    (lambda p, i: p[::i], {"p": X45, "i": 0}, "strided_slice", r"strides\[0\] must be non-zero"),
    (lambda p, i: p[0, 0, 0], {"p": X45}, "strided_slice",
     "Index out of range using input dim 2; input has only 2 dims"),
    (lambda p, i: tf.gather(p, [0, 7], name="g"), {"p": X45}, "g",
     r"indices\[1\] = 7 is not in \[0, 4\)"),
    (lambda p, i: tf.gather(p, [[0], [-1]], name="g"), {"p": X45}, "g",
     r"indices\[1,0\] = -1 is not in \[0, 4\)"),
    (lambda p, i: tf.gather(p, [0], axis=i, name="g"), {"p": X45, "i": 3}, "g",
     r"Expected axis in the range \[-2, 2\), but got 3"),
    (lambda p, i: tf.gather_nd(p, [[0, 7]], name="gn"), {"p": X45}, "gn",
     r"indices\[0\] = \[0, 7\] does not index into param shape \[4,5\], node name: gn"),
    (lambda p, i: tf.gather_nd(p, [[0, 1, 2]], name="gn"), {"p": X45}, "gn",
     "index innermost dimension length must be <= params rank; saw: 3 vs. 2"),
    (lambda p, i: tf.scatter_nd(i, tf.ones([1, 5]), [4, 5], name="sn"), {"i": [[7]]}, "sn",
     r"indices\[0\] = \[7\] does not index into shape \[4,5\]"),
    (lambda p, i: tf.unsorted_segment_sum(p, [0, 5, 1, 1], 3, name="uss"), {"p": X45}, "uss",
     r"segment_ids\[1\] = 5 is out of range \[0, 3\)"),
    (lambda p, i: tf.unsorted_segment_sum(p, tf.zeros([3], tf.int32), 2, name="uss"),
     {"p": X45}, "uss",
     r"data.shape = \[4,5\] does not start with segment_ids.shape = \[3\]"),
    (lambda p, i: tf.transpose(p, i, name="tr"), {"p": X45, "i": [1, 1]}, "tr",
     r"0 is missing from \{1,1\}\."),
    (lambda p, i: tf.transpose(p, i, name="tr"), {"p": X45, "i": [0, 2]}, "tr",
     r"2 is out of range \[0 \.\. 2\)"),
    (lambda p, i: tf.transpose(p, i, name="tr"), {"p": X45, "i": [0, 1, 2]}, "tr",
     "transpose expects a vector of size 2. But input\\(1\\) is a vector of size 3"),
    (lambda p, i: tf.squeeze(p, [0], name="sq"), {"p": X45}, "sq",
     r"Can not squeeze dim\[0\], expected a dimension of 1, got 4"),
    (lambda p, i: tf.squeeze(p, [3], name="sq"), {"p": X45}, "sq",
     "Tried to squeeze dim index 3 for tensor with 2 dimensions."),
    (lambda p, i: tf.tile(p, [2], name="ti"), {"p": X45}, "ti",
     "Expected multiples argument to be a vector of length 2 but got length 1"),
    (lambda p, i: tf.tile(p, i, name="ti"), {"p": X45, "i": [1, -1]}, "ti",
     r"Expected multiples\[1\] >= 0, but got -1"),
    (lambda p, i: tf.pad(p, [[1, 1]], name="pa"), {"p": X45}, "pa",
     r"The first dimension of paddings must be the rank of inputs\[1,2\] \[4,5\]"),
    (lambda p, i: tf.pad(p, i, name="pa"), {"p": X45, "i": [[1, 1], [-1, 0]]}, "pa",
     "Paddings must be non-negative: -1 0"),
    (lambda p, i: tf.pad(p, i, name="pa"), {"p": X45, "i": [[1, 1, 1], [1, 1, 1]]}, "pa",
     r"paddings must be a matrix with 2 columns: \[2,3\]"),
    (lambda p, i: tf.pad(p, [[1, 1], [5, 0]], mode="REFLECT", name="mp"), {"p": X45}, "mp",
     "paddings must be less than the dimension size: 5, 0 not less than 5"),
    (lambda p, i: tf.pad(p, [[1, 1], [6, 0]], mode="SYMMETRIC", name="mp"), {"p": X45}, "mp",
     "paddings must be no greater than the dimension size: 6, 0 greater than 5"),
    (lambda p, i: tf.stack([p, tf.cast(i, tf.float32)], name="st"),
     {"p": X45, "i": np.zeros(3, np.int32)}, "st",
     r"Shapes of all inputs must match: values\[0\].shape = \[4,5\] != values\[1\].shape = "
     r"\[3\]"),
    (lambda p, i: tf.unstack(p, num=3, name="un")[0], {"p": X45}, "un",
     r"Input shape axis 0 must equal 3, got shape \[4,5\]"),
    (lambda p, i: tf.where(tf.cast(i, tf.bool), p, p, name="se"),
     {"p": X45, "i": np.zeros(3, np.int32)}, "se",
     "Number of batches of 'then' must match size of 'cond', but saw: 4 vs. 3"),
    (lambda p, i: tf.where(tf.cast(i, tf.bool), p, p, name="se"),
     {"p": X45, "i": np.zeros((4, 4), np.int32)}, "se",
     r"Inputs to operation se of type Select must have the same size and shape.  Input 0: "
     r"\[4,4\] != input 1: \[4,5\]"),
    (lambda p, i: tf.where_v2(tf.cast(i, tf.bool), p, p, name="sv"),
     {"p": X45, "i": np.zeros(4, np.int32)}, "sv",
     r"condition \[4\], then \[4,5\], and else \[4,5\] must be broadcastable"),
    (lambda p, i: tf.where(p, name="wh"), {"p": np.float32(3)}, "wh",
     "WhereOp : Unhandled input dimensions: 0"),
    (lambda p, i: tf.one_hot([1], i, name="oh"), {"i": -1}, "oh",
     "depth must be non-negative, got: -1"),
    (lambda p, i: tf.one_hot(i, 2, axis=3, name="oh"), {"i": [1]}, "oh",
     r"Expected axis to be -1 or between \[0, 2\).  But received: 3"),
    (lambda p, i: tf.reverse(p, i, name="rv"), {"p": X45, "i": [2]}, "rv",
     r"'axis'\[0\] = 2 is out of valid range \[0, 1"),
    (lambda p, i: tf.reverse(p, i, name="rv"), {"p": X45, "i": [1, -1]}, "rv",
     "axis 1 specified more than once."),
]


@pytest.mark.parametrize("case", range(len(RUN_ERRORS)))
def test_run_time_errors_name_the_node(case):
    build, feeds, node, pattern = RUN_ERRORS[case]
    p, i = tf.placeholder(tf.float32), tf.placeholder(tf.int32)
    out = build(p, i)
    with tf.Session() as s, pytest.raises(errors.InvalidArgumentError, match=pattern) as info:
        s.run(out, {{"p": p, "i": i}[k]: v for k, v in feeds.items()})
    assert f"[[node {node} " in str(info.value)


# ---- unknown rank everywhere ----

UNKNOWN_RANK_OPS = {
    "concat": lambda p: tf.concat([p, p], 0),
    "split": lambda p: tf.split(p, 2, 0)[1],
    "split_v": lambda p: tf.split(p, [1, -1], 0)[1],
    "slice": lambda p: tf.slice(p, tf.zeros_like(tf.shape(p)), tf.shape(p)),
    "getitem": lambda p: p[::-1],
    "getitem_ellipsis": lambda p: p[..., :1],
    "gather": lambda p: tf.gather(p, [1, 0]),
    "gather_nd": lambda p: tf.gather_nd(p, [[1], [0]]),
    "transpose": lambda p: tf.transpose(p),
    "squeeze": lambda p: tf.squeeze(p),
    "pad": lambda p: tf.pad(p, tf.zeros(tf.stack([tf.size(tf.shape(p)), 2]), tf.int32)),
    "tile": lambda p: tf.tile(p, tf.ones_like(tf.shape(p))),
    "stack": lambda p: tf.stack([p, p]),
    "unstack": lambda p: tf.unstack(p, num=2)[0],
    "where": lambda p: tf.where(p > 0),
    "select": lambda p: tf.where(p > 0, p, -p),
    "select_v2": lambda p: tf.where_v2(p > 0, p, 0.0),
    "one_hot": lambda p: tf.one_hot(tf.cast(p, tf.int32), 3),
    "reverse": lambda p: tf.reverse(p, [0]),
    "shape_n": lambda p: tf.shape_n([p])[0],
    "boolean_mask": lambda p: tf.boolean_mask(p, [True, False]),
    "segment_sum": lambda p: tf.unsorted_segment_sum(p, [1, 0], 2),
    "embedding": lambda p: tf.nn.embedding_lookup(p, [1, 1, 0]),
}
NUMPY_OF = {
    "concat": lambda a: np.concatenate([a, a], 0), "split": lambda a: np.split(a, 2, 0)[1],
    "split_v": lambda a: a[1:], "slice": lambda a: a, "getitem": lambda a: a[::-1],
    "getitem_ellipsis": lambda a: a[..., :1], "gather": lambda a: a[[1, 0]],
    "gather_nd": lambda a: a[[1, 0]], "transpose": lambda a: a.T,
    "squeeze": lambda a: np.squeeze(a), "pad": lambda a: a, "tile": lambda a: a,
    "stack": lambda a: np.stack([a, a]), "unstack": lambda a: a[0],
    "where": lambda a: np.argwhere(a > 0), "select": lambda a: np.abs(a),
    "select_v2": lambda a: np.maximum(a, 0), "one_hot": lambda a: np.eye(3)[a.astype(int)],
    "reverse": lambda a: a[::-1], "shape_n": lambda a: np.array(a.shape),
    "boolean_mask": lambda a: a[[0]], "segment_sum": lambda a: a[::-1],
    "embedding": lambda a: a[[1, 1, 0]],
}


@pytest.mark.parametrize("name", sorted(UNKNOWN_RANK_OPS))
def test_unknown_rank_placeholder_works_through_every_op(name):
    p = tf.placeholder(tf.float32)
    out = UNKNOWN_RANK_OPS[name](p)
    with tf.Session() as s:
        for shape in ((2,), (2, 3), (2, 1, 2)):
            value = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 3
            np.testing.assert_allclose(s.run(out, {p: value}), NUMPY_OF[name](value))


def test_array_op_attrs_survive_the_json_graph_format(fresh_graph):
    p = tf.placeholder(tf.float32, [None, 4, 5], name="p")
    padded = tf.pad(p[:, ::-1, tf.newaxis], [[0, 0], [1, 1], [0, 0], [2, 0]], "REFLECT")
    pieces = tf.split(tf.squeeze(padded, [2]), [1, -1], 1)
    out = tf.identity(tf.gather(tf.transpose(tf.concat(pieces[::-1], 1), [0, 2, 1]), [0],
                                axis=1), name="out")
    copy = tf.Graph()
    with copy.as_default():
        tf.import_graph_def(tf.graph_def_from_json(tf.graph_def_to_json(
            fresh_graph.as_graph_def())), name="")
    x = np.random.default_rng(0).uniform(size=(2, 4, 5)).astype(np.float32)
    with tf.Session(graph=fresh_graph) as s:
        want = s.run(out, {p: x})
    with tf.Session(graph=copy) as s:
        np.testing.assert_array_equal(s.run("out:0", {"p:0": x}), want)
    assert copy.get_operation_by_name("out").outputs[0].shape.as_list() == [None, 1, 6]
