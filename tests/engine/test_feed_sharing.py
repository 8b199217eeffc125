"""A fed ndarray of the placeholder's dtype (writable, aligned, C-ordered) goes into the step
without a copy: the step neither changes it nor keeps it (variables copy what they are
assigned, fetches are copies), and any other value is still converted as before."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import engine as tf
from engine.runtime import fetches


def test_a_matching_array_is_shared_and_others_are_converted():
    with tf.Graph().as_default():
        ph = tf.placeholder(tf.float32, [None, 3])
    shared = np.arange(6, dtype=np.float32).reshape(2, 3)
    fed = fetches.feed_value(ph, shared)
    assert isinstance(fed, torch.Tensor) and fed.data_ptr() == shared.ctypes.data
    read_only = shared.copy()
    read_only.flags.writeable = False
    for value in (shared.astype(np.float64), shared.T.copy().T, read_only, shared.tolist()):
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # from_numpy warns on a read-only array
            converted = fetches.feed_value(ph, value)
        assert converted.dtype == torch.float32 and converted.tolist() == shared.tolist()
        if isinstance(value, np.ndarray):
            assert converted.data_ptr() != value.ctypes.data


def test_a_shared_feed_of_the_wrong_shape_is_refused_with_tfs_message():
    with tf.Graph().as_default():
        ph = tf.placeholder(tf.float32, [None, 3], name="x")
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2, 4\) for Tensor "
                                         r"'x:0', which has shape '\(\?, 3\)'"):
        fetches.feed_value(ph, np.zeros((2, 4), np.float32))


def test_the_step_neither_changes_nor_keeps_a_shared_feed():
    with tf.Graph().as_default():
        ph = tf.placeholder(tf.float32, [2, 2])
        var = tf.Variable(tf.zeros([2, 2]))
        assign = var.assign(ph)
        doubled = ph * 2.0
        same = tf.identity(ph)
        with tf.Session() as sess:
            sess.run(var.initializer)
            x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
            got_same, got_doubled, _ = sess.run([same, doubled, assign], {ph: x})
            step = sess.make_callable(same, [ph])
            from_callable = step(x)
            x[:] = -1.0
            assert sess.run(var).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert got_same.tolist() == [[1.0, 2.0], [3.0, 4.0]] == from_callable.tolist()
    assert got_doubled.tolist() == [[2.0, 4.0], [6.0, 8.0]]
