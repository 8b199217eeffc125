"""The quantized ops' static shapes, build-time errors (wrong dtypes name the op and the
allowed list) and run-time errors, with TF 2.21's wording where it has one; and the
tf.raw_ops / tf.quantization surface (argument names, output tuples)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_harness import covers, mark_executed

import engine as tf

RO = tf.raw_ops


def q8(values):
    return tf.constant(np.array(values, np.uint8), dtype=tf.quint8)


def test_static_shapes_and_dtypes():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.quint8, [None, 5])
        b = tf.placeholder(tf.quint8, [4, 5])
        mm = RO.QuantizedMatMul(a=a, b=b, min_a=0.0, max_a=1.0, min_b=0.0, max_b=1.0,
                                transpose_b=True)
        assert mm.out.dtype is tf.qint32 and mm.out.shape.as_list() == [None, 4]
        assert mm.min_out.shape.as_list() == [] and mm.max_out.dtype is tf.float32
        x = tf.placeholder(tf.float32, [2, None, 3])
        qv = tf.quantize_v2(x, -1.0, 1.0, tf.qint8)
        assert qv.output.dtype is tf.qint8 and qv.output.shape.as_list() == [2, None, 3]
        assert tf.dequantize(qv.output, qv.output_min, qv.output_max).shape.as_list() == \
            [2, None, 3]
        img = tf.placeholder(tf.quint8, [1, 5, 5, 2])
        pool = RO.QuantizedMaxPool(input=img, min_input=0.0, max_input=1.0,
                                   ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
        assert pool.output.shape.as_list() == [1, 3, 3, 2]
        conv = RO.QuantizedConv2D(input=img, filter=tf.placeholder(tf.quint8, [3, 3, 2, 7]),
                                  min_input=0.0, max_input=1.0, min_filter=0.0,
                                  max_filter=1.0, strides=[1, 1, 1, 1], padding="VALID")
        assert conv.output.shape.as_list() == [1, 3, 3, 7]
        cat = RO.QuantizedConcat(concat_dim=1, values=[a, a], input_mins=[0.0, 0.0],
                                 input_maxes=[1.0, 1.0])
        assert cat.output.shape.as_list() == [None, 10]
        shaped = RO.QuantizedReshape(tensor=b, shape=[-1, 2], input_min=0.0, input_max=1.0)
        assert shaped.output.shape.as_list() == [10, 2] and shaped.output.dtype is tf.quint8
        rng = RO.RequantizationRange(input=mm.out, input_min=mm.min_out, input_max=mm.max_out)
        assert [t.shape.as_list() for t in rng] == [[], []]


def test_wrong_dtypes_name_the_op_and_the_allowed_list():
    with tf.Graph().as_default():
        floats = tf.constant([[1.0]])
        with pytest.raises(TypeError, match=r"parameter 'a' of op 'QuantizedMatMul' .* has "
                                            r"DataType float32 not in list of allowed values: "
                                            r"qint8, quint8, qint16, quint16, qint32"):
            RO.QuantizedMatMul(a=floats, b=floats, min_a=0.0, max_a=1.0, min_b=0.0, max_b=1.0)
        with pytest.raises(TypeError, match=r"parameter 'T' of op 'QuantizeV2' .* DataType "
                                            r"float32 not in list of allowed values"):
            tf.quantize_v2([1.0], 0.0, 1.0, tf.float32)
        with pytest.raises(TypeError, match=r"parameter 'input' of op 'Dequantize'"):
            tf.dequantize(floats, 0.0, 1.0)
        # TF 2.21's wrapper: "Input 'input' of 'QuantizeV2' Op has type int32 that does not
        # match expected type of float32."
        with pytest.raises(TypeError, match=r"Input 'input' of 'QuantizeV2' Op .* has type "
                                            r"int32 that does not match expected type of "
                                            r"float32"):
            tf.quantize_v2(tf.constant([1]), 0.0, 1.0, tf.quint8)
        with pytest.raises(TypeError, match=r"Input '1' of 'QuantizedRelu' Op .* has type "
                                            r"int32"):
            RO.QuantizedRelu(features=q8([1]), min_features=tf.constant(0),
                             max_features=1.0)


def test_bad_attrs_and_shapes_are_build_time_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="mode"):
            tf.quantize([1.0], 0.0, 1.0, tf.quint8, mode="ROUND")
        with pytest.raises(ValueError, match=r"Shape must be rank 0 but is rank 1 for "
                                             r"'Quantize\w*' \(op: 'QuantizeV2'\)"):
            tf.quantize([1.0], [0.0], [1.0], tf.quint8)
        with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 3 and 2 for "
                                             r"'\w+' \(op: 'QuantizedMatMul'\)"):
            RO.QuantizedMatMul(a=tf.placeholder(tf.quint8, [2, 3]),
                               b=tf.placeholder(tf.quint8, [2, 3]), min_a=0.0, max_a=1.0,
                               min_b=0.0, max_b=1.0)
        with pytest.raises(ValueError, match=r"Shape must be rank 2 but is rank 1"):
            RO.QuantizedMatMul(a=q8([1, 2]), b=q8([[1], [2]]), min_a=0.0, max_a=1.0,
                               min_b=0.0, max_b=1.0)
        with pytest.raises(ValueError, match="per-axis"):
            tf.quantize([1.0], 0.0, 1.0, tf.quint8, axis=0)


def test_raw_ops_take_keywords_as_tensorflow_does():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="missing required argument 'out_type'"):
            RO.Requantize(input=tf.placeholder(tf.qint32, [2]), input_min=0.0, input_max=1.0,
                          requested_output_min=0.0, requested_output_max=1.0)
        with pytest.raises(TypeError, match="unexpected arguments"):
            RO.QuantizedRelu(features=q8([1]), min_features=0.0, max_features=1.0, alpha=1)
        relu = RO.QuantizedRelu(features=q8([1]), min_features=0.0, max_features=1.0,
                                name="my_relu")
        assert relu._fields == ("activations", "min_activations", "max_activations")
        assert relu.activations.op.name == "my_relu"
        assert relu.activations.op.get_attr("Tinput") is tf.quint8


@covers("QuantizeV2")
def test_half_to_even_outside_scaled_mode_is_refused_as_tensorflow_does(runner):
    mark_executed("QuantizeV2")
    with runner.scope():
        out = tf.quantize([1.0], 0.0, 1.0, tf.quint8, round_mode="HALF_TO_EVEN")
    # TF 2.21: "Round mode 'HALF_TO_EVEN' only supported for mode 'SCALED', but mode is
    # 'MIN_COMBINED'."
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Round mode 'HALF_TO_EVEN' only supported for mode 'SCALED', but "
                             "mode is 'MIN_COMBINED'."):
        runner.run(out.output)


@covers("QuantizeV2")
def test_an_inverted_range_is_refused_as_tensorflow_does(runner):
    mark_executed("QuantizeV2")
    with runner.scope():
        lo = tf.placeholder(tf.float32, [])
        out = tf.quantize([1.0], lo, -1.0, tf.quint8)
    # TF 2.21: "input_max_range must be larger than input_min_range."
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="input_max_range must be larger than input_min_range"):
        runner.run(out.output, {lo: 2.0})


@covers("QuantizedMatMul")
def test_incompatible_matrices_fed_at_run_time_are_refused(runner):
    mark_executed("QuantizedMatMul")
    with runner.scope():
        a = tf.placeholder(tf.quint8, None)
        mm = RO.QuantizedMatMul(a=a, b=q8([[1, 2]]), min_a=0.0, max_a=1.0, min_b=0.0,
                                max_b=1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Matrix size-incompatible"):
        runner.run(mm.out, {a: np.ones((2, 3), np.uint8)})


def test_kernel_dtypes_follow_tensorflow_registrations():
    with tf.Graph().as_default(), tf.Session() as sess:
        relu = RO.QuantizedRelu(features=q8([1]), min_features=0.0, max_features=1.0,
                                out_type=tf.qint32)
        # TF 2.21: no QuantizedRelu kernel for Tinput=quint8, out_type=qint32.
        with pytest.raises(tf.errors.InvalidArgumentError, match="QuantizedRelu"):
            sess.run(relu.activations)


@covers("Requantize")
def test_a_requested_minimum_above_zero_is_refused_as_tensorflow_does(runner):
    mark_executed("Requantize")
    with runner.scope():
        out = RO.Requantize(input=tf.constant(np.array([5], np.int32), dtype=tf.qint32),
                            input_min=-1.0, input_max=1.0, requested_output_min=0.5,
                            requested_output_max=6.0, out_type=tf.quint8)
    # TF 2.21: "requested_output_min must be <= 0, but got 0.5".
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="requested_output_min must be <= 0, but got 0.5"):
        runner.run(out.output)


def test_concat_of_one_value_is_refused_as_tensorflow_does():
    # TF 2.21: "List argument 'values' to 'QuantizedConcat' Op with length 1 shorter than
    # minimum length 2."
    with tf.Graph().as_default(), pytest.raises(
            ValueError, match="List argument 'values' to 'QuantizedConcat' Op with length 1 "
                              "shorter than minimum length 2."):
        RO.QuantizedConcat(concat_dim=0, values=[q8([[1, 2]])], input_mins=[0.0],
                           input_maxes=[1.0])
