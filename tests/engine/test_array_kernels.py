"""Array kernel numerics: concat, split, slice, strided slice, gather, gather_nd, scatter_nd,
segment sums, transpose, squeeze, pad (constant and mirror), tile, stack/unstack, where,
select, one_hot, reverse, shape_n; each on CPU and on a virtual GPU, against numpy, over
several dtypes, including placeholders of unknown rank."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_harness import FLOATS, NUMERIC, assert_close, covers, rand, tf_dtype

import engine as tf
from engine.kernels.registry import KernelContext, find_kernel
from engine.ops import array_index

MOVABLE = NUMERIC + [np.bool_]


def _values(rng, shape, dtype):
    if dtype is np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    return rand(rng, shape, dtype)


def _feed(runner, value, shape="static"):
    """A placeholder for value: fully static, first dim unknown, or of unknown rank."""
    dims = {"static": list(value.shape), "dynamic": [None] + list(value.shape[1:]),
            "unknown": None}[shape]
    return tf.placeholder(tf_dtype(value.dtype), dims)


SHAPES = pytest.mark.parametrize("shape", ["static", "dynamic", "unknown"])


@covers("ConcatV2")
@pytest.mark.parametrize("dtype", MOVABLE)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(runner, dtype, axis):
    rng = np.random.default_rng(1)
    a, b, c = (_values(rng, s, dtype) for s in ((2, 3, 4), (2, 3, 4), (2, 3, 4)))
    with runner.scope():
        xs = [tf.placeholder(tf_dtype(dtype), v.shape) for v in (a, b, c)]
        out = tf.concat(xs, axis)
    got = runner.run(out, dict(zip(xs, (a, b, c))))
    assert_close(got, np.concatenate([a, b, c], axis), dtype)


@covers("ConcatV2")
@SHAPES
def test_concat_uneven_sizes_and_tensor_axis(runner, shape):
    rng = np.random.default_rng(2)
    a, b = rand(rng, (2, 3), np.float32), rand(rng, (2, 5), np.float32)
    with runner.scope():
        pa, pb = _feed(runner, a, shape), _feed(runner, b, shape)
        axis = tf.placeholder(tf.int32, [])
        out = tf.concat([pa, pb], axis)
    assert_close(runner.run(out, {pa: a, pb: b, axis: -1}), np.concatenate([a, b], 1),
                 np.float32)


@covers("ConcatOffset")
def test_concat_offset(runner):
    with runner.scope():
        offsets = tf.array_ops.concat_offset(1, [tf.constant([2, 3, 5]), tf.constant([2, 4, 5]),
                                                 tf.constant([2, 1, 5])])
    assert [list(o) for o in runner.run(offsets)] == [[0, 0, 0], [0, 3, 0], [0, 7, 0]]


@covers("Split")
@pytest.mark.parametrize("dtype", MOVABLE)
def test_split_evenly(runner, dtype):
    x = _values(np.random.default_rng(3), (4, 6), dtype)
    with runner.scope():
        p = tf.placeholder(tf_dtype(dtype), [4, 6])
        parts = tf.split(p, 3, axis=1)
    for got, want in zip(runner.run(parts, {p: x}), np.split(x, 3, axis=1)):
        assert_close(got, want, dtype)


@covers("Split")
def test_split_into_one_piece_returns_a_list(runner):
    with runner.scope():
        parts = tf.split(tf.constant([[1.0, 2.0]]), 1, axis=1)
    assert len(parts) == 1
    assert_close(runner.run(parts[0]), [[1.0, 2.0]], np.float32)


@covers("SplitV")
@SHAPES
@pytest.mark.parametrize("dtype", NUMERIC)
def test_split_with_sizes_and_minus_one(runner, dtype, shape):
    x = _values(np.random.default_rng(4), (3, 7), dtype)
    with runner.scope():
        p = _feed(runner, x, shape)
        parts = tf.split(p, [2, -1, 1], axis=-1)
    for got, want in zip(runner.run(parts, {p: x}), (x[:, :2], x[:, 2:6], x[:, 6:])):
        assert_close(got, want, dtype)


@covers("Slice")
@SHAPES
@pytest.mark.parametrize("dtype", MOVABLE)
def test_slice(runner, dtype, shape):
    x = _values(np.random.default_rng(5), (4, 5, 3), dtype)
    with runner.scope():
        p = _feed(runner, x, shape)
        out = tf.slice(p, [1, 0, 2], [2, -1, 1])
    assert_close(runner.run(out, {p: x}), x[1:3, :, 2:3], dtype)


STRIDED_KEYS = {
    "cols": lambda t: t[:, 1:3],
    "ellipsis_index": lambda t: t[..., 0],
    "reversed": lambda t: t[::-1],
    "newaxis": lambda t: t[tf.newaxis],
    "negative_steps": lambda t: t[-1, ::-2, 1:-1],
    "clamped": lambda t: t[:, -10:10],
    "backwards_clamped": lambda t: t[:, 10:-10:-1],
    "newaxis_after_ellipsis": lambda t: t[..., tf.newaxis, 2],
    "empty": lambda t: t[2:1],
    "scalar": lambda t: t[0, 0, 0],
}
NUMPY_KEYS = {
    "cols": lambda a: a[:, 1:3], "ellipsis_index": lambda a: a[..., 0],
    "reversed": lambda a: a[::-1], "newaxis": lambda a: a[None],
    "negative_steps": lambda a: a[-1, ::-2, 1:-1], "clamped": lambda a: a[:, -10:10],
    "backwards_clamped": lambda a: a[:, 10:-10:-1],
    "newaxis_after_ellipsis": lambda a: a[..., None, 2], "empty": lambda a: a[2:1],
    "scalar": lambda a: a[0, 0, 0],
}


@covers("StridedSlice")
@SHAPES
@pytest.mark.parametrize("key", sorted(STRIDED_KEYS))
def test_getitem(runner, key, shape):
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    with runner.scope():
        p = _feed(runner, x, shape)
        out = STRIDED_KEYS[key](p)
    assert_close(runner.run(out, {p: x}), NUMPY_KEYS[key](x), np.float32)


@covers("StridedSlice")
@pytest.mark.parametrize("dtype", MOVABLE)
def test_strided_slice_dtypes_and_tensor_index(runner, dtype):
    x = _values(np.random.default_rng(6), (4, 3), dtype)
    with runner.scope():
        p = tf.placeholder(tf_dtype(dtype), [4, 3])
        i = tf.placeholder(tf.int32, [])
        outs = [p[i], p[1:i, ::-1], tf.strided_slice(p, [3, 2], [0, 0], [-1, -2], end_mask=2)]
    got = runner.run(outs, {p: x, i: 2})
    for g, want in zip(got, (x[2], x[1:2, ::-1], x[3:0:-1, 2::-2])):
        assert_close(g, want, dtype)


@covers("StridedSliceGrad")
@pytest.mark.parametrize("dtype", FLOATS)
def test_strided_slice_grad_scatters_into_zeros(runner, dtype):
    dy = np.arange(1, 9, dtype=dtype).reshape(4, 2)
    with runner.scope():
        out = array_index.strided_slice_grad([4, 5], [3, 1], [0, 5], [-1, 2], dy,
                                                end_mask=1)
    want = np.zeros((4, 5), dtype)
    want[3::-1, 1:5:2] = dy
    assert_close(runner.run(out), want, dtype)


@covers("GatherV2")
@SHAPES
@pytest.mark.parametrize("dtype", MOVABLE)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather(runner, dtype, axis, shape):
    x = _values(np.random.default_rng(7), (3, 4, 2), dtype)
    idx = np.array([[1, 0], [1, 1], [0, 1]], np.int32)
    with runner.scope():
        p = _feed(runner, x, shape)
        i = tf.placeholder(tf.int64, None)
        out = tf.gather(p, i, axis=axis)
    assert_close(runner.run(out, {p: x, i: idx}), np.take(x, idx, axis=axis), dtype)


@covers("GatherNd")
@pytest.mark.parametrize("dtype", MOVABLE)
def test_gather_nd(runner, dtype):
    x = _values(np.random.default_rng(8), (3, 4, 2), dtype)
    with runner.scope():
        p = tf.placeholder(tf_dtype(dtype), None)
        rows = tf.gather_nd(p, [[2], [0]])
        points = tf.gather_nd(p, [[[0, 1, 1], [2, 3, 0]]])
    got_rows, got_points = runner.run([rows, points], {p: x})
    assert_close(got_rows, x[[2, 0]], dtype)
    assert_close(got_points, [[x[0, 1, 1], x[2, 3, 0]]], dtype)


@covers("ScatterNd")
@pytest.mark.parametrize("dtype", NUMERIC)
def test_scatter_nd_sums_repeated_indices(runner, dtype):
    updates = np.array([[1, 2], [3, 4], [5, 6]], dtype)
    with runner.scope():
        out = tf.scatter_nd([[1], [3], [1]], updates, [4, 2])
    assert_close(runner.run(out), [[0, 0], [6, 8], [0, 0], [3, 4]], dtype)


@covers("UnsortedSegmentSum")
@pytest.mark.parametrize("dtype", NUMERIC)
def test_unsorted_segment_sum_drops_negative_ids(runner, dtype):
    data = np.arange(8, dtype=dtype).reshape(4, 2)
    with runner.scope():
        out = tf.unsorted_segment_sum(data, [2, -1, 0, 2], 3)
    assert_close(runner.run(out), [[4, 5], [0, 0], [6, 8]], dtype)


@covers("Transpose")
@SHAPES
@pytest.mark.parametrize("dtype", MOVABLE)
def test_transpose(runner, dtype, shape):
    x = _values(np.random.default_rng(9), (2, 3, 4), dtype)
    with runner.scope():
        p = _feed(runner, x, shape)
        outs = [tf.transpose(p, [1, 2, 0]), tf.transpose(p), tf.matrix_transpose(p)]
    for got, want in zip(runner.run(outs, {p: x}),
                         (x.transpose(1, 2, 0), x.T, x.transpose(0, 2, 1))):
        assert_close(got, want, dtype)


@covers("InvertPermutation")
def test_invert_permutation(runner):
    with runner.scope():
        out = tf.invert_permutation([2, 0, 3, 1])
    assert list(runner.run(out)) == [1, 3, 0, 2]


@covers("Squeeze")
@SHAPES
@pytest.mark.parametrize("dtype", MOVABLE)
def test_squeeze(runner, dtype, shape):
    x = _values(np.random.default_rng(10), (1, 3, 1, 2), dtype)
    with runner.scope():
        p = _feed(runner, x, shape)
        outs = [tf.squeeze(p), tf.squeeze(p, [2]), tf.squeeze(p, axis=-4)]
    for got, want in zip(runner.run(outs, {p: x}), (x.reshape(3, 2), x[:, :, 0], x[0])):
        assert_close(got, want, dtype)


@covers("Pad", "PadV2")
@SHAPES
@pytest.mark.parametrize("dtype", NUMERIC)
def test_constant_pad(runner, dtype, shape):
    x = _values(np.random.default_rng(11), (2, 3), dtype)
    pads = [[1, 0], [2, 1]]
    with runner.scope():
        p = _feed(runner, x, shape)
        zero, seven = tf.pad(p, pads), tf.pad(p, pads, constant_values=7)
    got_zero, got_seven = runner.run([zero, seven], {p: x})
    assert_close(got_zero, np.pad(x, pads), dtype)
    assert_close(got_seven, np.pad(x, pads, constant_values=7), dtype)


@covers("MirrorPad")
@pytest.mark.parametrize("dtype", MOVABLE)
@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_mirror_pad(runner, mode, dtype):
    x = _values(np.random.default_rng(12), (3, 4), dtype)
    pads = [[2, 1], [0, 3]]
    with runner.scope():
        out = tf.pad(tf.placeholder(tf_dtype(dtype), None, name="x"), pads, mode=mode.lower())
    got = runner.run(out, {"x:0": x})
    assert_close(got, np.pad(x, pads, mode=mode.lower()), dtype)


@covers("MirrorPadGrad")
@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_mirror_pad_grad_folds_the_borders_back(runner, mode):
    grad = np.arange(1.0, 8.0, dtype=np.float32)
    with runner.scope():
        out = tf.array_ops.mirror_pad_grad(grad, [[2, 2]], mode)
    # Padded positions of [a, b, c]: REFLECT is c b | a b c | b a, SYMMETRIC b a | a b c | c b.
    want = [3 + 7, 2 + 4 + 6, 1 + 5] if mode == "REFLECT" else [2 + 3, 1 + 4 + 7, 5 + 6]
    assert_close(runner.run(out), want, np.float32)


@covers("Tile")
@SHAPES
@pytest.mark.parametrize("dtype", MOVABLE)
def test_tile(runner, dtype, shape):
    x = _values(np.random.default_rng(13), (2, 3), dtype)
    with runner.scope():
        p = _feed(runner, x, shape)
        out = tf.tile(p, [3, 2])
    assert_close(runner.run(out, {p: x}), np.tile(x, [3, 2]), dtype)


@covers("Pack", "Unpack")
@SHAPES
@pytest.mark.parametrize("dtype", MOVABLE)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_and_unstack(runner, dtype, axis, shape):
    rng = np.random.default_rng(14)
    a, b = _values(rng, (2, 3), dtype), _values(rng, (2, 3), dtype)
    with runner.scope():
        pa, pb = _feed(runner, a, shape), _feed(runner, b, shape)
        stacked = tf.stack([pa, pb], axis=axis)
        parts = tf.unstack(tf.constant(a), axis=axis)
    want = np.stack([a, b], axis=axis)
    got = runner.run([stacked] + parts, {pa: a, pb: b})
    assert_close(got[0], want, dtype)
    for g, w in zip(got[1:], np.moveaxis(a, axis, 0)):
        assert_close(g, w, dtype)


@covers("Where")
@SHAPES
@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int32])
def test_where_gives_int64_coordinates(runner, dtype, shape):
    x = np.array([[0, 1, 0], [2, 0, 3]]).astype(dtype)
    with runner.scope():
        p = _feed(runner, x, shape)
        out = tf.where(p)
    got = runner.run(out, {p: x})
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argwhere(x))


@covers("Select")
@pytest.mark.parametrize("dtype", MOVABLE)
def test_select_elementwise_rows_and_scalar(runner, dtype):
    rng = np.random.default_rng(15)
    t, e = _values(rng, (3, 2), dtype), _values(rng, (3, 2), dtype)
    c = np.array([[True, False], [False, False], [True, True]])
    rows = np.array([True, False, True])
    with runner.scope():
        pt, pe = tf.constant(t), tf.constant(e)
        outs = [tf.where(c, pt, pe), tf.where(rows, pt, pe), tf.where(False, pt, pe)]
    got = runner.run(outs)
    assert_close(got[0], np.where(c, t, e), dtype)
    assert_close(got[1], np.where(rows[:, None], t, e), dtype)
    assert_close(got[2], e, dtype)


@covers("SelectV2")
@pytest.mark.parametrize("dtype", MOVABLE)
def test_select_v2_broadcasts(runner, dtype):
    rng = np.random.default_rng(16)
    t, e = _values(rng, (3, 1), dtype), _values(rng, (1, 4), dtype)
    c = np.array([True, False, False, True])
    with runner.scope():
        out = tf.where_v2(c, t, e)
    assert_close(runner.run(out), np.where(c, t, e), dtype)


@covers("OneHot")
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_one_hot(runner, dtype, axis):
    indices = np.array([[1, 2], [0, -1]])
    on, off = (True, False) if dtype is np.bool_ else (5, -1)
    with runner.scope():
        out = tf.one_hot(indices, 3, on_value=np.array(on, dtype), off_value=np.array(off, dtype),
                         axis=axis)
    eye = (indices[..., None] == np.arange(3))
    want = np.moveaxis(np.where(eye, on, off), -1, axis)
    assert_close(runner.run(out), want, dtype)


@covers("OneHot")
def test_one_hot_defaults_to_float32_ones(runner):
    with runner.scope():
        out = tf.one_hot(tf.constant([2, 0], tf.uint8), 3)
    assert out.dtype == tf.float32
    assert_close(runner.run(out), [[0, 0, 1], [1, 0, 0]], np.float32)


@covers("ReverseV2")
@SHAPES
@pytest.mark.parametrize("dtype", MOVABLE)
def test_reverse(runner, dtype, shape):
    x = _values(np.random.default_rng(17), (2, 3, 4), dtype)
    with runner.scope():
        p = _feed(runner, x, shape)
        out = tf.reverse(p, [0, -1])
    assert_close(runner.run(out, {p: x}), x[::-1, :, ::-1], dtype)


@covers("ShapeN")
@pytest.mark.parametrize("out_type", [tf.int32, tf.int64])
def test_shape_n(runner, out_type):
    with runner.scope():
        a = tf.placeholder(tf.float32, None)
        outs = tf.shape_n([a, tf.zeros([2, 5])], out_type=out_type)
    got = runner.run(outs, {a: np.zeros((3, 1, 4))})
    assert [list(g) for g in got] == [[3, 1, 4], [2, 5]]
    assert all(g.dtype == out_type.numpy_dtype for g in got)


@covers("GatherV2", "Reshape", "Where", "Squeeze")
@SHAPES
def test_boolean_mask(runner, shape):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    mask = np.array([[True, False, True], [False, False, True]])
    with runner.scope():
        p = _feed(runner, x, shape)
        out = tf.boolean_mask(p, mask)
        cols = tf.boolean_mask(p, [True, False, False, True], axis=2)
    got, got_cols = runner.run([out, cols], {p: x})
    assert_close(got, x[mask], np.float32)
    assert_close(got_cols, x[:, :, [0, 3]], np.float32)


# ---- device placement of kernel results, without a GPU ----

def _meta_run(build, inputs):
    """Runs the GPU kernel of the op `build` makes on meta-device stand-ins for CUDA tensors,
    with the host-memory inputs (shapes, indices) left on the CPU, and returns its outputs."""
    g = tf.Graph()
    with g.as_default():
        holders = [tf.placeholder(tf_dtype(v.dtype), v.shape) for v, _ in inputs]
        op = build(*holders).op
    node = op.node_def
    kdef = find_kernel(node, "GPU")
    run = kdef.factory(node, KernelContext(None, torch.device("meta"), None))
    args = [torch.from_numpy(np.asarray(v)).to(device) for v, device in inputs]
    # The op's other inputs are Consts (axes, perms, paddings): host memory.
    consts = {t.op.name: torch.from_numpy(t.op.attrs["value"]) for t in op.inputs
              if t.op.type == "Const"}
    feeds = iter(args)
    full = [consts[t.op.name] if t.op.name in consts else next(feeds) for t in op.inputs]
    out = run(*full)
    return op.type, out if isinstance(out, tuple) else (out,)


X = np.zeros((2, 3), np.float32)
B = np.zeros((2, 3), bool)
META_CASES = {
    "ConcatV2": (lambda a, b: tf.concat([a, b], 0), [(X, "meta"), (X, "cpu")]),
    "Pack": (lambda a, b: tf.stack([a, b], 1), [(X, "cpu"), (X, "meta")]),
    "Select": (lambda c, a, b: tf.where(c, a, b), [(B, "meta"), (X, "meta"), (X, "cpu")]),
    "SelectV2": (lambda c, a, b: tf.where_v2(c, a, b), [(B, "cpu"), (X, "meta"), (X, "meta")]),
    "StridedSlice": (lambda a: a[::-1, 1:], [(X, "meta")]),
    "StridedSliceGrad": (lambda d: array_index.strided_slice_grad([3, 4], [2], [0], [-1], d),
                         [(np.zeros((2, 4), np.float32), "meta")]),
    "Slice": (lambda a: tf.slice(a, [0, 1], [-1, 2]), [(X, "meta")]),
    "Split": (lambda a: tf.split(a, 3, 1)[0], [(X, "meta")]),
    "SplitV": (lambda a: tf.split(a, [1, -1], 1)[0], [(X, "meta")]),
    "Unpack": (lambda a: tf.unstack(a)[0], [(X, "meta")]),
    "Transpose": (lambda a: tf.transpose(a), [(X, "meta")]),
    "Tile": (lambda a: tf.tile(a, [2, 1]), [(X, "meta")]),
    "Pad": (lambda a: tf.pad(a, [[1, 0], [0, 1]]), [(X, "meta")]),
    "PadV2": (lambda a: tf.pad(a, [[1, 0], [0, 1]], constant_values=2.0), [(X, "meta")]),
    "MirrorPad": (lambda a: tf.pad(a, [[1, 0], [0, 2]], "REFLECT"), [(X, "meta")]),
    "MirrorPadGrad": (lambda a: tf.array_ops.mirror_pad_grad(a, [[0, 1], [1, 0]], "SYMMETRIC"),
                      [(X, "meta")]),
    "Squeeze": (lambda a: tf.squeeze(a, [0]), [(X[:1], "meta")]),
    "ReverseV2": (lambda a: tf.reverse(a, [1]), [(X, "meta")]),
    "OneHot": (lambda i: tf.one_hot(i, 4), [(np.zeros(3, np.int64), "meta")]),
}


@pytest.mark.parametrize("op_type", sorted(META_CASES))
def test_gpu_kernels_keep_results_on_the_device(op_type):
    op, outs = _meta_run(*META_CASES[op_type])
    assert op == op_type
    assert all(o.device.type == "meta" for o in outs), [o.device for o in outs]
