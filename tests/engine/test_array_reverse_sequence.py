"""ReverseSequence (tf.reverse_sequence, which static_bidirectional_rnn uses for its backward
pass over sequences of different lengths): the kernel against numpy on CPU and the virtual
GPU, TF's build-time and run-time errors (wording from TF 2.21), a result that stays on the
kernel's device, and the gradient against torch autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from grad_harness import DYNAMIC, check_gradients, grad_test
from kernel_harness import assert_close, covers, mark_executed, rand, tf_dtype

import engine as tf
from engine import errors
from engine.kernels.registry import KernelContext, find_kernel


def _reference(x: np.ndarray, lengths, seq_axis: int, batch_axis: int) -> np.ndarray:
    out = x.copy()
    for b, n in enumerate(lengths):
        src = [slice(None)] * x.ndim
        src[batch_axis] = b
        src[seq_axis] = slice(0, n)
        dst = list(src)
        dst[seq_axis] = slice(n - 1, None, -1) if n > 0 else slice(0, 0)
        out[tuple(src)] = x[tuple(dst)]
    return out


@covers("ReverseSequence")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (2, 0), (1, 2)])
@pytest.mark.parametrize("len_dtype", [np.int32, np.int64])
def test_reverse_sequence_matches_numpy(runner, dtype, axes, len_dtype):
    seq_axis, batch_axis = axes
    x = rand(np.random.default_rng(3), (4, 3, 5), dtype)
    lengths = np.random.default_rng(4).integers(0, x.shape[seq_axis] + 1, x.shape[batch_axis])
    with runner.scope():
        p = tf.placeholder(tf_dtype(dtype), [None, 3, 5])
        out = tf.reverse_sequence(p, lengths.astype(len_dtype), seq_axis=seq_axis,
                                  batch_axis=batch_axis)
    assert_close(runner.run(out, {p: x}), _reference(x, lengths, seq_axis, batch_axis), dtype)


@covers("ReverseSequence")
def test_reverse_sequence_fed_lengths_and_old_argument_names(runner):
    x = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    with runner.scope():
        p = tf.placeholder(tf.float32, None)
        lengths = tf.placeholder(tf.int32, [None])
        out = tf.reverse_sequence(p, lengths, seq_dim=0, batch_dim=1)
    assert out.shape.ndims is None
    got = runner.run(out, {p: x, lengths: [1, 3, 0]})
    # TF 2.21 prints this for the same call (x[..., 0] of the result, transposed).
    assert got[:, :, 0].T.tolist() == [[0, 6, 12, 18], [14, 8, 2, 20], [4, 10, 16, 22]]


def test_reverse_sequence_static_shape_and_attrs():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3, 2])
        out = tf.reverse_sequence(p, tf.placeholder(tf.int32, [None]), seq_axis=0,
                                  batch_axis=1)
        assert out.shape.as_list() == [None, 3, 2]
        assert out.op.attrs["seq_dim"] == 0 and out.op.attrs["batch_dim"] == 1
        assert out.op.attrs["Tlen"] is tf.int32
        fills = tf.reverse_sequence(tf.placeholder(tf.float32, [4, None]), [1, 2, 3], 0, 1)
        assert fills.shape.as_list() == [4, 3]


@pytest.mark.parametrize("kwargs,message", [
    ({"seq_lengths": [1, 3, 0], "seq_axis": 0, "batch_axis": -2},
     "batch_dim must be >=0, got -2"),
    ({"seq_lengths": [1, 3, 0], "seq_axis": 3, "batch_axis": 1},
     "seq_dim must be < input rank: 3 vs. 3"),
    ({"seq_lengths": [1, 3, 0], "seq_axis": 0, "batch_axis": 5},
     "batch_dim must be < input rank: 5 vs. 3"),
    ({"seq_lengths": [1, 3], "seq_axis": 0, "batch_axis": 1},
     "Dimensions must be equal, but are 3 and 2"),
    ({"seq_lengths": [[1, 3, 1]], "seq_axis": 0, "batch_axis": 1},
     "Shape must be rank 1 but is rank 2"),
])
def test_reverse_sequence_build_errors_as_tensorflow(kwargs, message):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=message):
            tf.reverse_sequence(np.zeros((4, 3, 2), np.float32), **kwargs)


def test_reverse_sequence_argument_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="Expected int for argument 'seq_dim' not None."):
            tf.reverse_sequence([[1.0]], [1])
        with pytest.raises(ValueError, match="Cannot specify both 'seq_dim' and 'seq_axis'."):
            tf.reverse_sequence([[1.0]], [1], seq_axis=1, seq_dim=1)


@pytest.mark.parametrize("x_shape,lengths,axes,message", [
    ((4, 3, 2), [1, 5, 0], (0, 1), r"seq_lens\(1\) > input.dims\(0\)"),
    ((4, 3, 2), [1, -1, 0], (0, 1), r"seq_lens\(1\) < 0"),
    ((4, 3, 2), [1, 1], (0, 1), r"Length of seq_lengths != input.dims\(1\), \(2 vs. 3\)"),
    ((4, 3, 2), [[1, 1, 1]], (0, 1), "seq_lengths must be 1-dim, not 2"),
    ((3, 2), [1, 1, 1], (0, 1), r"Length of seq_lengths != input.dims\(1\), \(3 vs. 2\)"),
    ((4, 3, 2), [1, 1, 1], (1, 1), "batch_dim == seq_dim == 1"),
])
def test_reverse_sequence_run_errors_as_tensorflow(x_shape, lengths, axes, message):
    mark_executed("ReverseSequence")
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, None)
        n = tf.placeholder(tf.int32, None)
        out = tf.reverse_sequence(p, n, seq_axis=axes[0], batch_axis=axes[1])
        with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError, match=message):
            sess.run(out, {p: np.zeros(x_shape, np.float32), n: lengths})


def test_reverse_sequence_gpu_kernel_keeps_its_result_on_the_device():
    with tf.Graph().as_default():
        op = tf.reverse_sequence(tf.placeholder(tf.float32, [4, 3]),
                                 tf.placeholder(tf.int32, [3]), 0, 1).op
    run = find_kernel(op.node_def, "GPU").factory(
        op.node_def, KernelContext(None, torch.device("meta"), None))
    out = run(torch.zeros((4, 3), device="meta"), torch.tensor([1, 2, 3], dtype=torch.int32))
    assert out.device.type == "meta" and tuple(out.shape) == (4, 3)


@grad_test("ReverseSequence")
@DYNAMIC
def test_reverse_sequence_gradient(dynamic):
    x = np.random.default_rng(5).uniform(-2, 2, (3, 5, 2))
    lengths = np.array([5, 0, 3], np.int32)
    index = torch.from_numpy(np.stack([np.r_[np.arange(n)[::-1], np.arange(n, 5)]
                                       for n in lengths]))

    def torch_fn(a):
        return torch.gather(a, 1, index[:, :, None].expand(3, 5, 2)) * torch.arange(
            30.0, dtype=a.dtype).reshape(3, 5, 2)

    check_gradients(lambda a: tf.reverse_sequence(a, lengths, seq_axis=1, batch_axis=0)
                    * tf.constant(np.arange(30.0).reshape(3, 5, 2)), torch_fn, [x],
                    dynamic=dynamic)
