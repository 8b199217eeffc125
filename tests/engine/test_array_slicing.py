"""Strided slicing semantics: explicit begin/end/strides with every mask, against outputs
recorded from tensorflow-cpu 2.21; numpy-style keys (negative steps, clamping, ellipsis, new
axes, indices) against numpy over thousands of seeded random keys, both through the pure
spec resolver and through the StridedSlice kernel; static shapes consistent with the values."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import engine as tf
from engine.ops import strided_slice as ss
from engine.ops.array_index import _sparse_spec

# tf.strided_slice(arange(24).reshape(2, 3, 4), begin, end, strides, **masks) in TF 2.21:
# its static shape and its values (flattened).
TF_RECORDED = [
    ([1, 2, 3], [0, 0, 0], [-1, -1, -1], {"begin_mask": 0, "end_mask": 7}, [2, 3, 4],
     [23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]),
    ([5, 5, 5], [-9, -9, -9], [-1, -2, -3], {}, [2, 2, 2],
     [23, 20, 15, 12, 11, 8, 3, 0]),
    ([0, 1], [2, -1], [1, 1], {"begin_mask": 1, "end_mask": 2}, [2, 2, 4],
     [4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23]),
    ([-1, 0, 0], [0, 0, 0], [1, 1, 1], {"shrink_axis_mask": 1, "ellipsis_mask": 2}, [3, 0],
     []),
    ([0, 1, 0], [0, 3, 0], [1, 1, 1], {"ellipsis_mask": 1, "new_axis_mask": 4}, [2, 3, 2, 1],
     [1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22]),
    ([1, 0, 2], [2, 0, 0], [1, 1, -1], {"new_axis_mask": 2, "end_mask": 4}, [1, 1, 3, 4],
     [20, 21, 22, 23, 16, 17, 18, 19, 12, 13, 14, 15]),
    ([0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], {"new_axis_mask": 9, "ellipsis_mask": 2},
     [1, 2, 3, 0, 1], []),
    ([2, 0], [0, 0], [-1, 1], {"ellipsis_mask": 2, "end_mask": 1}, [2, 3, 4],
     [12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
    ([1, -1], [2, 0], [1, -1], {"shrink_axis_mask": 1, "end_mask": 2}, [3, 4],
     [20, 21, 22, 23, 16, 17, 18, 19, 12, 13, 14, 15]),
    ([3], [1], [-1], {"ellipsis_mask": 0}, [0, 3, 4], []),
]


@pytest.mark.parametrize("case", range(len(TF_RECORDED)))
def test_explicit_masks_match_tensorflow(case):
    begin, end, strides, masks, shape, values = TF_RECORDED[case]
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    g = tf.Graph()
    with g.as_default():
        out = tf.strided_slice(tf.constant(x), begin, end, strides, **masks)
        assert out.shape.as_list() == shape
        with tf.Session(graph=g) as s:
            got = s.run(out)
    assert list(got.shape) == shape
    assert got.reshape(-1).tolist() == values


def _random_key(rng: random.Random, rank: int) -> tuple:
    key, ellipsis = [], False
    for _ in range(rng.randint(0, rank + 2)):
        r = rng.random()
        if r < 0.5:
            def bound():
                return rng.choice([None, rng.randint(-7, 7)])
            key.append(slice(bound(), bound(), rng.choice([None, 1, 2, 3, -1, -2])))
        elif r < 0.7:
            key.append(rng.randint(-6, 6))
        elif r < 0.85 and not ellipsis:
            key.append(Ellipsis)
            ellipsis = True
        else:
            key.append(None)
    return tuple(key)


def _numpy_or_error(x, key):
    try:
        return x[key]
    except IndexError:
        return None


def _resolve_key(shape, key):
    begin, end, strides, masks = _sparse_spec(key)
    return ss.resolve(shape, begin, end, strides, ss.Masks.of(masks)), (begin, end, strides,
                                                                       masks)


def test_resolver_matches_numpy_on_random_keys():
    rng = random.Random(0)
    for _ in range(2000):
        shape = [rng.randint(0, 5) for _ in range(rng.randint(0, 4))]
        x = np.arange(int(np.prod(shape))).reshape(shape)
        key = _random_key(rng, len(shape))
        want = _numpy_or_error(x, key)
        try:
            dense, (begin, end, strides, masks) = _resolve_key(shape, key)
        except ss.SliceSpecError:
            assert want is None, (shape, key)
            continue
        assert want is not None, (shape, key)
        index, flips = dense.torch_index()
        got = torch.from_numpy(x)[index]
        got = (got.flip(flips) if flips else got).reshape(dense.final).numpy()
        np.testing.assert_array_equal(got, want, err_msg=str((shape, key)))
        # What shape inference can say with the values or the dims unknown must agree.
        masks = ss.Masks.of(masks)
        for partial in (ss.resolve(shape, None, None, strides, masks),
                        ss.resolve([None] * len(shape), begin, end, strides, masks)):
            assert len(partial.final) == want.ndim
            assert all(d is None or d == w for d, w in zip(partial.final, want.shape))


def test_kernel_matches_numpy_on_random_keys():
    rng = random.Random(1)
    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    g = tf.Graph()
    keys, outs = [], []
    with g.as_default():
        p = tf.placeholder(tf.float32, None)
        while len(keys) < 300:
            key = _random_key(rng, 4)
            if _numpy_or_error(x, key) is not None:
                keys.append(key)
                outs.append(p[key])
        with tf.Session(graph=g) as s:
            got = s.run(outs, {p: x})
    for key, value in zip(keys, got):
        np.testing.assert_array_equal(value, x[key], err_msg=str(key))


def test_slice_of_a_slice_result_is_a_copy():
    """A strided slice must not alias its input: a later in-place update of a variable would
    otherwise change a value already computed from it."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.arange(6.0, dtype=np.float32).reshape(2, 3))
        first = v[0]
        with tf.control_dependencies([first]):
            update = tf.assign_add(v, tf.ones([2, 3]))
        with tf.Session(graph=g) as s:
            s.run(v.initializer)
            got, _ = s.run([first, update])
    np.testing.assert_array_equal(got, [0.0, 1.0, 2.0])
