"""tf.gradients of the array ops against torch autograd on seeded random inputs, with static
and dynamic shapes: concat, split, stack, slicing (negative steps, masks, tensor indices),
gathers (dense, via UnsortedSegmentSum), scatters, transpose, squeeze, pads, tile, reverse,
select; the gradient ops' own gradients (StridedSliceGrad, MirrorPadGrad) as adjoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from grad_harness import DYNAMIC, check_gradients, grad_test, rand

import engine as tf
from engine.ops import array_index, array_ops


def _rng(seed):
    return np.random.default_rng(seed)


def _adjoint(forward, x_shape):
    """torch's vector-Jacobian product of `forward` at a fixed point, as a function of the
    output gradient: the torch counterpart of a gradient op."""
    def vjp(dy):
        x = torch.zeros(x_shape, dtype=dy.dtype, requires_grad=True)
        return torch.autograd.grad(forward(x), x, grad_outputs=dy, create_graph=True)[0]
    return vjp


@grad_test("ConcatV2")
@DYNAMIC
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis, dynamic):
    rng = _rng(1)
    shapes = {0: [(2, 3), (4, 3), (1, 3)], 1: [(2, 3), (2, 1), (2, 2)]}[axis % 2]
    values = [rand(rng, s) for s in shapes]
    check_gradients(lambda *xs: tf.concat(list(xs), axis), lambda *xs: torch.cat(xs, axis),
                    values, dynamic=dynamic)


@grad_test("ConcatV2")
def test_concat_with_dynamic_axis_uses_concat_offset():
    def build(a, b):
        return tf.concat([a, b], tf.reshape(tf.constant([-1]), []))   # axis known at run time
    g, _ = check_gradients(build, lambda a, b: torch.cat([a, b], 1),
                           [rand(_rng(2), (2, 3)), rand(_rng(3), (2, 4))])
    assert "ConcatOffset" in {op.type for op in g.get_operations()}


@grad_test("Split")
@DYNAMIC
def test_split_unused_pieces_get_zeros(dynamic):
    x = rand(_rng(4), (3, 6))
    check_gradients(lambda a: tf.split(a, 3, axis=1)[1] * 2.0,
                    lambda a: torch.split(a, 2, 1)[1] * 2.0, [x], dynamic=dynamic)


@grad_test("SplitV")
@DYNAMIC
def test_split_v(dynamic):
    x = rand(_rng(5), (3, 7))

    def tf_fn(a):
        p, q, r = tf.split(a, [2, -1, 1], axis=1)
        return tf.concat([r, tf.square(p), q * 3.0], 1)

    def torch_fn(a):
        p, q, r = torch.split(a, [2, 4, 1], 1)
        return torch.cat([r, p ** 2, q * 3.0], 1)
    check_gradients(tf_fn, torch_fn, [x], dynamic=dynamic)


@grad_test("Pack", "Unpack")
@DYNAMIC
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_and_unstack(axis, dynamic):
    rng = _rng(6)
    a, b = rand(rng, (3, 2)), rand(rng, (3, 2))

    def tf_fn(x, y):
        parts = tf.unstack(tf.stack([x, tf.square(y)], axis=axis), axis=axis)
        return tf.stack([parts[1], parts[0] * 2.0], axis=axis)

    def torch_fn(x, y):
        parts = torch.unbind(torch.stack([x, y ** 2], axis), axis)
        return torch.stack([parts[1], parts[0] * 2.0], axis)
    check_gradients(tf_fn, torch_fn, [a, b], dynamic=dynamic)


@grad_test("Slice")
@DYNAMIC
def test_slice(dynamic):
    x = rand(_rng(7), (4, 5, 3))
    check_gradients(lambda a: tf.slice(a, [1, 0, 1], [2, -1, 2]),
                    lambda a: a[1:3, :, 1:3], [x], dynamic=dynamic)


@grad_test("Slice")
def test_slice_with_a_tensor_begin():
    x = rand(_rng(8), (4, 5))
    check_gradients(lambda a: tf.slice(a, tf.reshape(tf.constant([1, 2]), [2]), [2, 2]),
                    lambda a: a[1:3, 2:4], [x])


SLICES = {
    "cols": (lambda t: t[:, 1:3], lambda t: t[:, 1:3]),
    "ellipsis_index": (lambda t: t[..., 0], lambda t: t[..., 0]),
    "reversed": (lambda t: t[::-1], lambda t: t.flip(0)),
    "newaxis_shrink": (lambda t: t[tf.newaxis, 1, ..., tf.newaxis],
                       lambda t: t[None, 1, ..., None]),
    "negative_steps": (lambda t: t[-1, ::-2, 1:-1], lambda t: t[-1].flip(0)[::2, 1:-1]),
    "stepped": (lambda t: t[1:, 1::2, ::3], lambda t: t[1:, 1::2, ::3]),
}


@grad_test("StridedSlice")
@DYNAMIC
@pytest.mark.parametrize("key", sorted(SLICES))
def test_getitem(key, dynamic):
    x = rand(_rng(9), (3, 4, 5))
    check_gradients(*SLICES[key], [x], dynamic=dynamic)


@grad_test("StridedSlice")
def test_getitem_with_a_tensor_index_and_on_a_variable():
    x = rand(_rng(10), (4, 3))
    check_gradients(lambda a: a[tf.constant(2)] + a[1:tf.constant(4), 0],
                    lambda a: a[2] + a[1:4, 0], [x])
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(x)
        loss = tf.reduce_sum(v[::-1, 1] * tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64))
        grad = tf.gradients(loss, v)[0]
        with tf.Session(graph=g) as s:
            s.run(v.initializer)
            got = s.run(grad)
    want = np.zeros((4, 3))
    want[::-1, 1] = [1, 2, 3, 4]
    np.testing.assert_array_equal(got, want)


@grad_test("StridedSliceGrad")
@DYNAMIC
def test_strided_slice_grad_gradient_is_the_slice(dynamic):
    dy = rand(_rng(11), (4, 2))

    def tf_fn(d):
        return array_index.strided_slice_grad([4, 5], [3, 1], [0, 5], [-1, 2], d, end_mask=1)
    check_gradients(tf_fn, _adjoint(lambda x: x.flip(0)[:, 1:5:2], (4, 5)), [dy],
                    dynamic=dynamic)


@grad_test("GatherV2")
@DYNAMIC
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_sums_repeated_rows(axis, dynamic):
    x = rand(_rng(12), (3, 4, 2))
    idx = np.array([[1, 0], [1, 1], [0, 1]])
    check_gradients(lambda a: tf.gather(a, idx, axis=axis),
                    lambda a: torch.index_select(a, axis, torch.from_numpy(idx.reshape(-1)))
                    .reshape(a.shape[:axis % 3] + idx.shape + a.shape[axis % 3 + 1:]),
                    [x], dynamic=dynamic)


def test_gather_gradient_is_dense_segment_sum():
    g, grads = check_gradients(lambda a: tf.gather(a, [2, 2, 0]),
                               lambda a: a[torch.tensor([2, 2, 0])], [rand(_rng(13), (4, 3))])
    assert grads[0].op.type == "UnsortedSegmentSum"
    assert grads[0].shape.as_list() == [4, 3]


@grad_test("GatherNd", "ScatterNd")
@DYNAMIC
def test_gather_nd_and_scatter_nd(dynamic):
    x = rand(_rng(14), (3, 4, 2))
    idx = np.array([[0, 1], [2, 3], [0, 1]])
    check_gradients(lambda a: tf.gather_nd(a, idx), lambda a: a[idx[:, 0], idx[:, 1]], [x],
                    dynamic=dynamic)
    updates = rand(_rng(15), (3, 2))
    check_gradients(lambda u: tf.scatter_nd(idx, u, [3, 4, 2]),
                    lambda u: torch.zeros(3, 4, 2, dtype=u.dtype).index_put(
                        (torch.from_numpy(idx[:, 0]), torch.from_numpy(idx[:, 1])), u,
                        accumulate=True), [updates], dynamic=dynamic)


@grad_test("UnsortedSegmentSum")
@DYNAMIC
def test_unsorted_segment_sum_with_dropped_ids(dynamic):
    data = rand(_rng(16), (3, 2, 4))
    ids = np.array([[0, -1], [3, 0], [-1, 1]])

    def torch_fn(d):
        keep = torch.from_numpy(ids.reshape(-1) >= 0)
        flat = d.reshape(6, 4)[keep]
        return torch.zeros(4, 4, dtype=d.dtype).index_add(
            0, torch.from_numpy(ids.reshape(-1))[keep], flat)
    check_gradients(lambda d: tf.unsorted_segment_sum(d, ids, 4), torch_fn, [data],
                    dynamic=dynamic)


@grad_test("Transpose")
@DYNAMIC
def test_transpose(dynamic):
    x = rand(_rng(17), (2, 3, 4))
    check_gradients(lambda a: tf.transpose(a, [1, 2, 0]) * 2.0 + tf.transpose(a, [1, 0, 2])[
        :, :1, :1], lambda a: a.permute(1, 2, 0) * 2.0 + a.permute(1, 0, 2)[:, :1, :1], [x],
                    dynamic=dynamic)


@grad_test("Transpose")
def test_transpose_with_a_runtime_perm_uses_invert_permutation():
    x = rand(_rng(18), (2, 3, 4))
    g, _ = check_gradients(lambda a: tf.transpose(a, tf.reshape(tf.constant([2, 0, 1]), [3])),
                           lambda a: a.permute(2, 0, 1), [x])
    assert "InvertPermutation" in {op.type for op in g.get_operations()}


@grad_test("Squeeze")
@DYNAMIC
def test_squeeze(dynamic):
    x = rand(_rng(19), (3, 1, 4, 1))
    check_gradients(lambda a: tf.squeeze(a, [1, 3]), lambda a: a[:, 0, :, 0], [x],
                    dynamic=dynamic)


@grad_test("Pad", "PadV2")
@DYNAMIC
def test_constant_pad(dynamic):
    x = rand(_rng(20), (2, 3))
    check_gradients(lambda a: tf.pad(a, [[1, 0], [2, 1]]) + tf.pad(a, [[0, 1], [0, 3]],
                                                                   constant_values=2.0),
                    lambda a: F.pad(a, (2, 1, 1, 0)) + F.pad(a, (0, 3, 0, 1), value=2.0), [x],
                    dynamic=dynamic)


@grad_test("MirrorPad")
@DYNAMIC
@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_mirror_pad(mode, dynamic):
    x = rand(_rng(21), (3, 4))

    def torch_fn(a):
        if mode == "REFLECT":
            return F.pad(a[None], (3, 1, 2, 1), mode="reflect")[0]
        rows = torch.cat([a[:2].flip(0), a, a[-1:]], 0)
        return torch.cat([rows[:, :3].flip(1), rows, rows[:, -1:]], 1)
    pads = [[2, 1], [3, 1]]
    check_gradients(lambda a: tf.pad(a, pads, mode=mode), torch_fn, [x], dynamic=dynamic)


@grad_test("MirrorPadGrad")
def test_mirror_pad_grad_gradient_is_the_mirror_pad():
    dy = rand(_rng(22), (6, 8))
    check_gradients(lambda d: array_ops.mirror_pad_grad(d, [[2, 1], [3, 1]], "REFLECT"),
                    _adjoint(lambda x: F.pad(x[None], (3, 1, 2, 1), mode="reflect")[0], (3, 4)),
                    [dy])


@grad_test("Tile")
@DYNAMIC
def test_tile(dynamic):
    x = rand(_rng(23), (2, 3))
    check_gradients(lambda a: tf.tile(a, [3, 2]), lambda a: a.repeat(3, 2), [x],
                    dynamic=dynamic)


@grad_test("ReverseV2")
@DYNAMIC
def test_reverse(dynamic):
    x = rand(_rng(24), (2, 3, 4))
    check_gradients(lambda a: tf.reverse(a, [0, -1]) * tf.constant(np.arange(24.0).reshape(
        2, 3, 4)), lambda a: a.flip(0, 2) * torch.arange(24.0, dtype=a.dtype).reshape(2, 3, 4),
                    [x], dynamic=dynamic)


@grad_test("Select")
@DYNAMIC
def test_select(dynamic):
    rng = _rng(25)
    a, b = rand(rng, (4, 3)), rand(rng, (4, 3))
    rows = np.array([True, False, False, True])
    check_gradients(lambda x, y: tf.where(x > y, x, y) + tf.where(rows, x * 2.0, y),
                    lambda x, y: torch.where(x > y, x, y) + torch.where(
                        torch.from_numpy(rows)[:, None], x * 2.0, y), [a, b], dynamic=dynamic)


@grad_test("SelectV2")
@DYNAMIC
def test_select_v2_sums_broadcast_branches(dynamic):
    rng = _rng(26)
    a, b = rand(rng, (4, 3)), rand(rng, (1, 3))
    check_gradients(lambda x, y: tf.where_v2(x > 0, x, y),
                    lambda x, y: torch.where(x > 0, x, y), [a, b], dynamic=dynamic)
    check_gradients(lambda x, y: tf.where_v2(y > 0, x, y),
                    lambda x, y: torch.where(y > 0, x, y), [a, b], dynamic=dynamic)


@grad_test("GatherV2", "Reshape")
@DYNAMIC
def test_boolean_mask(dynamic):
    x = rand(_rng(27), (3, 2, 4))
    mask = np.array([[True, False], [False, False], [True, True]])
    check_gradients(lambda a: tf.boolean_mask(a, mask),
                    lambda a: a[torch.from_numpy(mask)], [x], dynamic=dynamic)


def test_one_hot_and_where_pass_no_gradient():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3])
        y = tf.reduce_sum(tf.cast(tf.where(x > 0), tf.float32)) + tf.reduce_sum(
            tf.one_hot(tf.cast(x, tf.int32), 4))
        assert tf.gradients(y, x) == [None]


UNKNOWN_RANK = {
    "concat": (lambda p: tf.concat([p, p * 2.0], 0), lambda a: torch.cat([a, a * 2], 0)),
    "split": (lambda p: tf.split(p, 2, 0)[1], lambda a: a[1:]),
    "split_v": (lambda p: tf.split(p, [1, -1], 1)[1], lambda a: a[:, 1:]),
    "slice": (lambda p: tf.slice(p, [1, 0], [1, -1]), lambda a: a[1:2]),
    "getitem": (lambda p: p[::-1, 1:], lambda a: a.flip(0)[:, 1:]),
    "gather": (lambda p: tf.gather(p, [1, 0, 1]), lambda a: a[[1, 0, 1]]),
    "gather_nd": (lambda p: tf.gather_nd(p, [[1, 0], [0, 1]]), lambda a: a[[1, 0], [0, 1]]),
    "transpose": (lambda p: tf.transpose(p), lambda a: a.T),
    "squeeze": (lambda p: tf.squeeze(p[:1]), lambda a: a[0]),
    "pad": (lambda p: tf.pad(p, [[1, 0], [0, 2]]), lambda a: F.pad(a, (0, 2, 1, 0))),
    "mirror_pad": (lambda p: tf.pad(p, [[1, 0], [0, 1]], "SYMMETRIC"),
                   lambda a: torch.cat([torch.cat([a[:1], a]), torch.cat([a[:1], a])[:, -1:]],
                                       1)),
    "tile": (lambda p: tf.tile(p, [2, 1]), lambda a: a.repeat(2, 1)),
    "stack": (lambda p: tf.stack([p, p * 3.0]), lambda a: torch.stack([a, a * 3])),
    "unstack": (lambda p: tf.unstack(p, num=2)[1], lambda a: a[1]),
    "reverse": (lambda p: tf.reverse(p, [1]), lambda a: a.flip(1)),
    "select": (lambda p: tf.where(p > 0, p, -p), lambda a: torch.where(a > 0, a, -a)),
    "select_v2": (lambda p: tf.where_v2(p > 0, p, 0.0),
                  lambda a: torch.where(a > 0, a, torch.zeros((), dtype=a.dtype))),
    "segment_sum": (lambda p: tf.unsorted_segment_sum(p, [1, 0], 2), lambda a: a.flip(0)),
    "boolean_mask": (lambda p: tf.boolean_mask(p, [True, False]), lambda a: a[:1]),
    "embedding": (lambda p: tf.nn.embedding_lookup(p, [1, 1, 0]), lambda a: a[[1, 1, 0]]),
}


@pytest.mark.parametrize("name", sorted(UNKNOWN_RANK))
def test_gradients_through_inputs_of_unknown_rank(name):
    tf_fn, torch_fn = UNKNOWN_RANK[name]
    x = rand(_rng(28), (2, 3))
    g = tf.Graph()
    with g.as_default():
        p, dy = tf.placeholder(tf.float64), tf.placeholder(tf.float64)
        out = tf_fn(p)
        grad = tf.gradients(out, p, grad_ys=dy)[0]
        with tf.Session(graph=g) as s:
            w = rand(_rng(29), s.run(out, {p: x}).shape)
            got = s.run(grad, {p: x, dy: w})
    t = torch.from_numpy(x).requires_grad_()
    want = torch.autograd.grad((torch_fn(t) * torch.from_numpy(w)).sum(), t)[0]
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)
