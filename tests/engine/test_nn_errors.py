"""Bad input to the tf.nn ops gets TF's errors: the build-time ValueError/TypeError texts of
TF's shape functions and Python wrappers (checked against tensorflow 2.21's tf.compat.v1), and
TF's run-time errors for what only shows at run time."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine import errors


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default() as g:
        yield g


def _x(shape=(2, 5, 5, 3)):
    return tf.placeholder(tf.float32, shape)


BUILD_ERRORS = [
    (lambda: tf.nn.conv2d(_x((5, 5, 3)), tf.zeros([3, 3, 3, 4]), 1, "SAME"), ValueError,
     r"^Shape must be rank 4 but is rank 3 for 'Conv2D' \(op: 'Conv2D'\) with input shapes: "
     r"\[5,5,3\], \[3,3,3,4\]\.$"),
    (lambda: tf.nn.conv2d(_x(), tf.zeros([3, 3, 3]), 1, "SAME"), ValueError,
     r"^Shape must be rank 4 but is rank 3 for 'Conv2D'"),
    (lambda: tf.nn.conv2d(_x(), tf.zeros([3, 3, 2, 4]), 1, "SAME"), ValueError,
     r"^Depth of input \(3\) is not a multiple of input depth of filter \(2\) for 'Conv2D'"),
    (lambda: tf.nn.conv2d(_x(), tf.zeros([3, 3, 3, 4]), 1, "FULL"), ValueError,
     r"""^Attr 'padding' of 'Conv2D' Op passed string 'FULL' not in: "SAME", "VALID", """
     r'"EXPLICIT"\.$'),
    (lambda: tf.nn.conv2d(_x(), tf.zeros([3, 3, 3, 4]), 1, "same"), ValueError,
     r"passed string 'same' not in"),
    (lambda: tf.nn.conv2d(_x(), tf.zeros([3, 3, 3, 4]), 1, "SAME", data_format="NWHC"),
     ValueError, r"""^Attr 'data_format' of 'Conv2D' Op passed string 'NWHC' not in: "NHWC", """
                 r'"NCHW"\.$'),
    (lambda: tf.nn.conv2d(_x(), tf.zeros([3, 3, 3, 4]), [1, 1, 1], "SAME"), ValueError,
     r"^strides should be of length 1, 2 or 4\. Received: strides=\[1, 1, 1\] of length 3$"),
    (lambda: tf.nn.conv2d(_x(), tf.zeros([7, 7, 3, 4]), 1, "VALID"), ValueError,
     r"^Negative dimension size caused by subtracting 7 from 5 for 'Conv2D'"),
    (lambda: tf.nn.conv2d(_x(), tf.zeros([3, 3, 3, 4], tf.float64), 1, "SAME"), TypeError,
     r"^Input 'filter' of 'Conv2D' Op has type float64 that does not match type float32 of "
     r"argument 'input'\.$"),
    (lambda: tf.nn.conv2d(_x(), tf.zeros([3, 3, 3, 4]), 1, "EXPLICIT"), ValueError,
     r"^'EXPLICIT' is not a valid value for `padding`"),
    (lambda: tf.nn.max_pool(_x((5, 5, 3)), 2, 2, "SAME"), ValueError,
     r"^Shape must be rank 4 but is rank 3 for 'MaxPool'"),
    (lambda: tf.nn.max_pool(_x(), [1, 2, 2], 2, "SAME"), ValueError,
     r"^ksize should be of length 1, 2 or 4\. Received: ksize=\[1, 2, 2\] of length 3$"),
    (lambda: tf.nn.max_pool(_x(), 7, 2, "VALID"), ValueError,
     r"^Negative dimension size caused by subtracting 7 from 5 for 'MaxPool'"),
    (lambda: tf.nn.avg_pool(_x(), 3, 2, "SAME", data_format="NCWH"), ValueError,
     r"^Attr 'data_format' of 'AvgPool' Op passed string 'NCWH'"),
    (lambda: tf.nn.bias_add(_x(), tf.zeros([4])), ValueError,
     r"^Dimensions must be equal, but are 3 and 4 for 'BiasAdd' \(op: 'BiasAdd'\)"),
    (lambda: tf.nn.bias_add(tf.zeros([3]), tf.zeros([3])), ValueError,
     r"^Shape must be at least rank 2 but is rank 1 for 'BiasAdd'"),
    (lambda: tf.nn.bias_add(_x(), tf.zeros([3, 1])), ValueError,
     r"^Shape must be rank 1 but is rank 2 for 'BiasAdd'"),
    (lambda: tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([3]), data_format="NCHW"), ValueError,
     r"^Shape must be at least rank 3 but is rank 2 for 'BiasAdd'"),
    (lambda: tf.nn.bias_add(_x(), tf.zeros([3]), data_format="NHCW"), ValueError,
     r"^`data_format` must be of the form `N\.\.\.C` or `NC\.\.\.`\. Received: "
     r"data_format=NHCW$"),
    (lambda: tf.nn.depthwise_conv2d(_x(), tf.zeros([3, 3, 2, 2]), [1, 1, 1, 1], "SAME"),
     ValueError, r"^Dimensions must be equal, but are 3 and 2 for 'depthwise' "
                 r"\(op: 'DepthwiseConv2dNative'\)"),
    (lambda: tf.nn.conv2d_transpose(_x(), tf.zeros([3, 3, 4, 2]), [2, 10, 10, 4],
                                    [1, 2, 2, 1], "SAME"),
     ValueError, r"^Dimensions must be equal, but are 3 and 2 for 'conv2d_transpose' "
                 r"\(op: 'Conv2DBackpropInput'\)"),
    (lambda: tf.nn.conv2d_transpose(_x(), tf.zeros([3, 3, 4, 3]), [2, 10, 10], [1, 2, 2, 1],
                                    "SAME"),
     ValueError, r"^Conv2DBackpropInput requires input_sizes to contain 4 values or 2 values, "
                 r"but got: 3 for 'conv2d_transpose'"),
    (lambda: tf.nn.conv2d_transpose(_x(), tf.zeros([3, 3, 4, 3]), [3, 10, 10, 4],
                                    [1, 2, 2, 1], "SAME"),
     ValueError, r"^Dimensions must be equal, but are 3 and 2 for 'conv2d_transpose'"),
]


@pytest.mark.parametrize(("build", "error", "message"), BUILD_ERRORS,
                         ids=[m[1:40] for _, _, m in BUILD_ERRORS])
def test_build_time_errors_match_tensorflow(build, error, message):
    with pytest.raises(error, match=message):
        build()


def _run(out):
    with tf.Session() as s:
        return s.run(out)


def _ones(shape=(2, 5, 5, 3)):
    return tf.constant(np.ones(shape, np.float32))


RUN_ERRORS = [
    (lambda: tf.nn.conv2d(_ones(), tf.zeros([3, 3, 3, 4]), [2, 1, 1, 1], "SAME"),
     errors.UnimplementedError,
     r"^Current implementation does not yet support strides in the batch and depth "
     r"dimensions\."),
    (lambda: tf.nn.conv2d(_ones(), tf.zeros([3, 3, 3, 4]), 1, "SAME",
                          dilations=[2, 1, 1, 1]),
     errors.UnimplementedError, r"does not yet support dilations in the batch and depth"),
    (lambda: tf.nn.max_pool(_ones(), [2, 2, 2, 1], 2, "SAME"), errors.UnimplementedError,
     r"^Pooling is not yet supported on the batch dimension\."),
    (lambda: tf.nn.avg_pool(_ones(), [1, 1, 1, 3], [1, 1, 1, 3], "VALID"),
     errors.UnimplementedError, r"^Non-spatial pooling is not yet supported"),
    (lambda: tf.nn.conv2d_transpose(_ones(), tf.zeros([3, 3, 4, 3]), [2, 13, 13, 4],
                                    [1, 2, 2, 1], "SAME"),
     errors.InvalidArgumentError,
     r"^Conv2DCustomBackpropInput: Size of out_backprop doesn't match computed: actual = 5, "
     r"computed = 7 spatial_dim: 1 input: 13 filter: 3 output: 5 stride: 2 dilation: 1"),
    (lambda: tf.nn.conv2d_transpose(_ones(), tf.zeros([3, 3, 4, 3]), [2, 10, 10, 5],
                                    [1, 2, 2, 1], "SAME"),
     errors.InvalidArgumentError, r"input depth must be evenly divisible by filter depth"),
]


@pytest.mark.parametrize(("build", "error", "message"), RUN_ERRORS,
                         ids=[m[1:40] for _, _, m in RUN_ERRORS])
def test_run_time_errors_match_tensorflow(build, error, message):
    out = build()
    with pytest.raises(error, match=message) as info:
        _run(out)
    assert out.op.name in str(info.value)


def test_conv2d_transpose_to_an_odd_size_runs():
    """Output sizes 9 and 10 both give 5 under SAME with stride 2: TF accepts either."""
    out = tf.nn.conv2d_transpose(_ones(), tf.ones([3, 3, 4, 3]), [2, 9, 9, 4], [1, 2, 2, 1],
                                 "SAME")
    assert _run(out).shape == (2, 9, 9, 4)
