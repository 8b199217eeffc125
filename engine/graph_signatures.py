"""Each op type's signature, in the terms of TensorFlow's OpDef: its input and output args and
its attrs, each required or defaulted, with its type. The graph-file checks
(engine/graph_schema.py) read it for input counts, output counts and required attrs.

Written from TensorFlow 2.21's OpDefs (tensorflow.python.framework.op_def_registry) for every
op type the engine registers, and checked against every op the engine's test suite creates;
the engine adds a few attrs TF's OpDefs lack (ENGINE_ATTRS below). A test fails when a
registered op type has no entry here, so a new op type comes with its signature.

Syntax: "<inputs> -> <outputs> | <attrs>". An arg is `name` (one tensor) or `name*N` (N
tensors, N an int attr, or as many as the list(type) attr N has items). An attr is
`name:type` (required) or `name=type` (has a default), `>=k` the least value (for an int)
or length (for a list)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from engine.dtypes import DType
from engine.shapes import TensorShape

# Attrs the engine's ops carry beyond TF's OpDef (always set by the engine, so optional here).
ENGINE_ATTRS = {
    "All": "T=type", "Any": "T=type", "LogicalAnd": "T=type", "LogicalNot": "T=type",
    "LogicalOr": "T=type", "FusedBatchNorm": "U=type", "FusedBatchNormGrad": "U=type",
    "MaxPoolGradGrad": "explicit_paddings=list(int)",
}

SIGNATURES = {
    # Control flow and TensorArrays (TF 2.21's OpDefs, control flow v1).
    "Assert": "condition, data*T -> | T:list(type)>=1, summarize=int",
    "ControlTrigger": " -> | ",
    "Enter": ("data -> output | T:type, frame_name:string, is_constant=bool, "
              "parallel_iterations=int"),
    "Exit": "data -> output | T:type",
    "LoopCond": "input -> output | ",
    "Merge": "inputs*N -> output, value_index | T:type, N:int>=1",
    "NextIteration": "data -> output | T:type",
    "RefEnter": ("data -> output | T:type, frame_name:string, is_constant=bool, "
                 "parallel_iterations=int"),
    "RefExit": "data -> output | T:type",
    "RefMerge": "inputs*N -> output, value_index | T:type, N:int>=1",
    "RefNextIteration": "data -> output | T:type",
    "RefSwitch": "data, pred -> output_false, output_true | T:type",
    "Switch": "data, pred -> output_false, output_true | T:type",
    "TensorArrayCloseV3": "handle -> | ",
    "TensorArrayConcatV3": ("handle, flow_in -> value, lengths | dtype:type, "
                            "element_shape_except0=shape"),
    "TensorArrayGatherV3": "handle, indices, flow_in -> value | dtype:type, element_shape=shape",
    "TensorArrayGradV3": "handle, flow_in -> grad_handle, flow_out | source:string",
    "TensorArrayReadV3": "handle, index, flow_in -> value | dtype:type",
    "TensorArrayScatterV3": "handle, indices, value, flow_in -> flow_out | T:type",
    "TensorArraySizeV3": "handle, flow_in -> size | ",
    "TensorArraySplitV3": "handle, value, lengths, flow_in -> flow_out | T:type",
    "TensorArrayV3": ("size -> handle, flow | dtype:type, element_shape=shape, dynamic_size=bool, "
                      "clear_after_read=bool, identical_element_shapes=bool, "
                      "tensor_array_name=string"),
    "TensorArrayWriteV3": "handle, index, value, flow_in -> flow_out | T:type",
    "Abs": "x -> y | T:type",
    "Add": "x, y -> z | T:type",
    "AddN": "inputs*N -> sum | N:int>=1, T:type",
    "All": "input, reduction_indices -> output | keep_dims=bool, Tidx=type",
    "Any": "input, reduction_indices -> output | keep_dims=bool, Tidx=type",
    "ApplyAdadelta": ("var, accum, accum_update, lr, rho, epsilon, grad -> out | T:type, "
                      "use_locking=bool"),
    "ApplyAdagrad": "var, accum, lr, grad -> out | T:type, use_locking=bool, update_slots=bool",
    "ApplyAdam": ("var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, "
                  "grad -> out | T:type, use_locking=bool, use_nesterov=bool"),
    "ApplyCenteredRMSProp": ("var, mg, ms, mom, lr, rho, momentum, epsilon, grad -> out | T:type, "
                             "use_locking=bool"),
    "ApplyGradientDescent": "var, alpha, delta -> out | T:type, use_locking=bool",
    "ApplyMomentum": ("var, accum, lr, grad, momentum -> out | T:type, use_locking=bool, "
                      "use_nesterov=bool"),
    "ApplyRMSProp": ("var, ms, mom, lr, rho, momentum, epsilon, grad -> out | T:type, "
                     "use_locking=bool"),
    "ArgMax": "input, dimension -> output | T:type, Tidx=type, output_type=type",
    "ArgMin": "input, dimension -> output | T:type, Tidx=type, output_type=type",
    "Assign": "ref, value -> output_ref | T:type, validate_shape=bool, use_locking=bool",
    "AssignAdd": "ref, value -> output_ref | T:type, use_locking=bool",
    "AssignSub": "ref, value -> output_ref | T:type, use_locking=bool",
    "AvgPool": ("value -> output | ksize:list(int)>=4, strides:list(int)>=4, padding:string, "
                "data_format=string, T:type"),
    "AvgPoolGrad": ("orig_input_shape, grad -> output | ksize:list(int)>=4, strides:list(int)>=4, "
                    "padding:string, data_format=string, T:type"),
    "BatchMatMulV2": "x, y -> output | T:type, adj_x=bool, adj_y=bool, grad_x=bool, grad_y=bool",
    "BiasAdd": "value, bias -> output | T:type, data_format=string",
    "BiasAddGrad": "out_backprop -> output | T:type, data_format=string",
    "BroadcastGradientArgs": "s0, s1 -> r0, r1 | T=type",
    "BroadcastTo": "input, shape -> output | T:type, Tidx=type",
    "Cast": "x -> y | SrcT:type, DstT:type, Truncate=bool",
    "Ceil": "x -> y | T:type",
    "CheckNumerics": "tensor -> output | T:type, message:string",
    "ClipByValue": "t, clip_value_min, clip_value_max -> output | T:type",
    "ConcatOffset": "concat_dim, shape*N -> offset*N | N:int>=2, shape_type=type",
    "ConcatV2": "values*N, axis -> output | N:int>=2, T:type, Tidx=type",
    "Const": "-> output | value:tensor, dtype:type",
    "Conv2D": ("input, filter -> output | T:type, strides:list(int), use_cudnn_on_gpu=bool, "
               "padding:string, explicit_paddings=list(int), data_format=string, "
               "dilations=list(int)"),
    "Conv2DBackpropFilter": ("input, filter_sizes, out_backprop -> output | T:type, "
                             "strides:list(int), use_cudnn_on_gpu=bool, padding:string, "
                             "explicit_paddings=list(int), data_format=string, "
                             "dilations=list(int)"),
    "Conv2DBackpropInput": ("input_sizes, filter, out_backprop -> output | T:type, "
                            "strides:list(int), use_cudnn_on_gpu=bool, padding:string, "
                            "explicit_paddings=list(int), data_format=string, dilations=list(int)"),
    "Cos": "x -> y | T:type",
    "Cumprod": "x, axis -> out | exclusive=bool, reverse=bool, T:type, Tidx=type",
    "Cumsum": "x, axis -> out | exclusive=bool, reverse=bool, T:type, Tidx=type",
    "DepthwiseConv2dNative": ("input, filter -> output | T:type, strides:list(int), "
                              "padding:string, explicit_paddings=list(int), data_format=string, "
                              "dilations=list(int)"),
    "DepthwiseConv2dNativeBackpropFilter": ("input, filter_sizes, "
                                            "out_backprop -> output | T:type, strides:list(int), "
                                            "padding:string, explicit_paddings=list(int), "
                                            "data_format=string, dilations=list(int)"),
    "DepthwiseConv2dNativeBackpropInput": ("input_sizes, filter, out_backprop -> output | T:type, "
                                           "strides:list(int), padding:string, "
                                           "explicit_paddings=list(int), data_format=string, "
                                           "dilations=list(int)"),
    "DivNoNan": "x, y -> z | T:type",
    "Elu": "features -> activations | T:type",
    "EluGrad": "gradients, outputs -> backprops | T:type",
    "Equal": "x, y -> z | T:type, incompatible_shape_error=bool",
    "Erf": "x -> y | T:type",
    "Exp": "x -> y | T:type",
    "ExpandDims": "input, dim -> output | T:type, Tdim=type",
    "Expm1": "x -> y | T:type",
    "Fill": "dims, value -> output | T:type, index_type=type",
    "Floor": "x -> y | T:type",
    "FloorDiv": "x, y -> z | T:type",
    "FloorMod": "x, y -> z | T:type",
    "FusedBatchNorm": ("x, scale, offset, mean, variance -> y, batch_mean, batch_variance, "
                       "reserve_space_1, reserve_space_2 | T:type, epsilon=float, "
                       "exponential_avg_factor=float, data_format=string, is_training=bool"),
    "FusedBatchNormGrad": ("y_backprop, x, scale, reserve_space_1, reserve_space_2 -> x_backprop, "
                           "scale_backprop, offset_backprop, reserve_space_3, "
                           "reserve_space_4 | T:type, epsilon=float, data_format=string, "
                           "is_training=bool"),
    "FusedBatchNormGradV2": ("y_backprop, x, scale, reserve_space_1, "
                             "reserve_space_2 -> x_backprop, scale_backprop, offset_backprop, "
                             "reserve_space_3, reserve_space_4 | T:type, U:type, epsilon=float, "
                             "data_format=string, is_training=bool"),
    "FusedBatchNormGradV3": ("y_backprop, x, scale, reserve_space_1, reserve_space_2, "
                             "reserve_space_3 -> x_backprop, scale_backprop, offset_backprop, "
                             "reserve_space_4, reserve_space_5 | T:type, U:type, epsilon=float, "
                             "data_format=string, is_training=bool"),
    "FusedBatchNormV2": ("x, scale, offset, mean, variance -> y, batch_mean, batch_variance, "
                         "reserve_space_1, reserve_space_2 | T:type, U:type, epsilon=float, "
                         "exponential_avg_factor=float, data_format=string, is_training=bool"),
    "FusedBatchNormV3": ("x, scale, offset, mean, variance -> y, batch_mean, batch_variance, "
                         "reserve_space_1, reserve_space_2, reserve_space_3 | T:type, U:type, "
                         "epsilon=float, exponential_avg_factor=float, data_format=string, "
                         "is_training=bool"),
    "GatherNd": ("params, indices -> output | Tparams:type, Tindices:type, "
                 "bad_indices_policy=string"),
    "GatherV2": ("params, indices, axis -> output | batch_dims=int, Tparams:type, Tindices:type, "
                 "Taxis:type"),
    "Greater": "x, y -> z | T:type",
    "GreaterEqual": "x, y -> z | T:type",
    "HistogramSummary": "tag, values -> summary | T=type",
    "Identity": "input -> output | T:type",
    "ImageSummary": "tag, tensor -> summary | max_images=int>=1, T=type, bad_color=tensor",
    "InvertPermutation": "x -> y | T=type",
    "IsFinite": "x -> y | T:type",
    "IsInf": "x -> y | T:type",
    "IsNan": "x -> y | T:type",
    "L2Loss": "t -> output | T:type",
    "LeakyRelu": "features -> activations | alpha=float, T=type",
    "LeakyReluGrad": "gradients, features -> backprops | alpha=float, T=type",
    "Less": "x, y -> z | T:type",
    "LessEqual": "x, y -> z | T:type",
    "LinSpace": "start, stop, num -> output | T:type, Tidx=type",
    "Log": "x -> y | T:type",
    "Log1p": "x -> y | T:type",
    "LogSoftmax": "logits -> logsoftmax | T:type",
    "LogicalAnd": "x, y -> z",
    "LogicalNot": "x -> y",
    "LogicalOr": "x, y -> z",
    "MatMul": ("a, b -> product | transpose_a=bool, transpose_b=bool, T:type, grad_a=bool, "
               "grad_b=bool"),
    "Max": "input, reduction_indices -> output | keep_dims=bool, T:type, Tidx=type",
    "MaxPool": ("input -> output | T=type, ksize:list(int)>=4, strides:list(int)>=4, "
                "padding:string, explicit_paddings=list(int), data_format=string"),
    "MaxPoolGrad": ("orig_input, orig_output, grad -> output | ksize:list(int)>=4, "
                    "strides:list(int)>=4, padding:string, explicit_paddings=list(int), "
                    "data_format=string, T=type"),
    "MaxPoolGradGrad": ("orig_input, orig_output, grad -> output | ksize:list(int)>=4, "
                        "strides:list(int)>=4, padding:string, data_format=string, T:type"),
    "Maximum": "x, y -> z | T:type",
    "Mean": "input, reduction_indices -> output | keep_dims=bool, T:type, Tidx=type",
    "MergeSummary": "inputs*N -> summary | N:int>=1",
    "Min": "input, reduction_indices -> output | keep_dims=bool, T:type, Tidx=type",
    "Minimum": "x, y -> z | T:type",
    "MirrorPad": "input, paddings -> output | T:type, Tpaddings=type, mode:string",
    "MirrorPadGrad": "input, paddings -> output | T:type, Tpaddings=type, mode:string",
    "Mul": "x, y -> z | T:type",
    "MulNoNan": "x, y -> z | T:type",
    "Multinomial": "logits, num_samples -> output | seed=int, seed2=int, T:type, output_dtype=type",
    "Neg": "x -> y | T:type",
    "NoOp": "->",
    "NotEqual": "x, y -> z | T:type, incompatible_shape_error=bool",
    "OneHot": "indices, depth, on_value, off_value -> output | axis=int, T:type, TI=type",
    "OnesLike": "x -> y | T:type",
    "Pack": "values*N -> output | N:int>=1, T:type, axis=int",
    "Pad": "input, paddings -> output | T:type, Tpaddings=type",
    "PadV2": "input, paddings, constant_values -> output | T:type, Tpaddings=type",
    "Placeholder": "-> output | dtype:type, shape=shape",
    "PlaceholderWithDefault": "input -> output | dtype:type, shape:shape",
    "Pow": "x, y -> z | T:type",
    "Prod": "input, reduction_indices -> output | keep_dims=bool, T:type, Tidx=type",
    "RandomShuffle": "value -> output | seed=int, seed2=int, T:type",
    "RandomStandardNormal": "shape -> output | seed=int, seed2=int, dtype:type, T:type",
    "RandomUniform": "shape -> output | seed=int, seed2=int, dtype:type, T:type",
    "RandomUniformInt": "shape, minval, maxval -> output | seed=int, seed2=int, Tout:type, T:type",
    "Range": "start, limit, delta -> output | Tidx=type",
    "Rank": "input -> output | T:type",
    "RealDiv": "x, y -> z | T:type",
    "Reciprocal": "x -> y | T:type",
    "Relu": "features -> activations | T:type",
    "Relu6": "features -> activations | T:type",
    "Relu6Grad": "gradients, features -> backprops | T:type",
    "ReluGrad": "gradients, features -> backprops | T:type",
    "Reshape": "tensor, shape -> output | T:type, Tshape=type",
    "ReverseSequence": ("input, seq_lengths -> output | seq_dim:int, batch_dim=int, T:type, "
                        "Tlen=type"),
    "ReverseV2": "tensor, axis -> output | Tidx=type, T:type",
    "Rint": "x -> y | T:type",
    "Round": "x -> y | T:type",
    "Rsqrt": "x -> y | T:type",
    "RsqrtGrad": "y, dy -> z | T:type",
    "ScalarSummary": "tags, values -> summary | T:type",
    "ScatterNd": ("indices, updates, shape -> output | T:type, Tindices:type, "
                  "bad_indices_policy=string"),
    "Select": "condition, t, e -> output | T:type",
    "SelectV2": "condition, t, e -> output | T:type",
    "Selu": "features -> activations | T:type",
    "SeluGrad": "gradients, outputs -> backprops | T:type",
    "Shape": "input -> output | T:type, out_type=type",
    "ShapeN": "input*N -> output*N | N:int>=1, T:type, out_type=type",
    "Sigmoid": "x -> y | T:type",
    "SigmoidGrad": "y, dy -> z | T:type",
    "Sign": "x -> y | T:type",
    "Sin": "x -> y | T:type",
    "Size": "input -> output | T:type, out_type=type",
    "Slice": "input, begin, size -> output | T:type, Index:type",
    "Softmax": "logits -> softmax | T:type",
    "SoftmaxCrossEntropyWithLogits": "features, labels -> loss, backprop | T:type",
    "Softplus": "features -> activations | T:type",
    "SoftplusGrad": "gradients, features -> backprops | T:type",
    "Softsign": "features -> activations | T:type",
    "SoftsignGrad": "gradients, features -> backprops | T:type",
    "SparseSoftmaxCrossEntropyWithLogits": ("features, labels -> loss, backprop | T:type, "
                                            "Tlabels=type"),
    "Split": "split_dim, value -> output*num_split | num_split:int>=1, T:type",
    "SplitV": ("value, size_splits, split_dim -> output*num_split | num_split:int>=1, T:type, "
               "Tlen=type"),
    "Sqrt": "x -> y | T:type",
    "Square": "x -> y | T:type",
    "SquaredDifference": "x, y -> z | T:type",
    "Squeeze": "input -> output | T:type, squeeze_dims=list(int)>=0",
    "StopGradient": "input -> output | T:type",
    "StridedSlice": ("input, begin, end, strides -> output | T:type, Index:type, begin_mask=int, "
                     "end_mask=int, ellipsis_mask=int, new_axis_mask=int, shrink_axis_mask=int"),
    "StridedSliceGrad": ("shape, begin, end, strides, dy -> output | T:type, Index:type, "
                         "begin_mask=int, end_mask=int, ellipsis_mask=int, new_axis_mask=int, "
                         "shrink_axis_mask=int"),
    "Sub": "x, y -> z | T:type",
    "Sum": "input, reduction_indices -> output | keep_dims=bool, T:type, Tidx=type",
    "Tanh": "x -> y | T:type",
    "TanhGrad": "y, dy -> z | T:type",
    "TensorSummaryV2": "tag, tensor, serialized_summary_metadata -> summary | T:type",
    "Tile": "input, multiples -> output | T:type, Tmultiples=type",
    "Transpose": "x, perm -> y | T:type, Tperm=type",
    "TruncateDiv": "x, y -> z | T:type",
    "TruncateMod": "x, y -> z | T:type",
    "TruncatedNormal": "shape -> output | seed=int, seed2=int, dtype:type, T:type",
    "Unpack": "value -> output*num | num:int>=0, T:type, axis=int",
    "UnsortedSegmentSum": ("data, segment_ids, num_segments -> output | T:type, Tindices:type, "
                           "Tnumsegments=type"),
    "VariableV2": "-> ref | shape:shape, dtype:type, container=string, shared_name=string",
    "Where": "input -> index | T=type",
    "ZerosLike": "x -> y | T:type",
    # Fake quantization (TF 2.21's OpDefs): float32 only, so no type attr.
    "FakeQuantWithMinMaxArgs": ("inputs -> outputs | min=float, max=float, num_bits=int, "
                                "narrow_range=bool"),
    "FakeQuantWithMinMaxArgsGradient": ("gradients, inputs -> backprops | min=float, "
                                        "max=float, num_bits=int, narrow_range=bool"),
    "FakeQuantWithMinMaxVars": "inputs, min, max -> outputs | num_bits=int, narrow_range=bool",
    "FakeQuantWithMinMaxVarsGradient": ("gradients, inputs, min, max -> backprops_wrt_input, "
                                        "backprop_wrt_min, backprop_wrt_max | num_bits=int, "
                                        "narrow_range=bool"),
    "FakeQuantWithMinMaxVarsPerChannel": ("inputs, min, max -> outputs | num_bits=int, "
                                          "narrow_range=bool"),
    "FakeQuantWithMinMaxVarsPerChannelGradient": ("gradients, inputs, min, max -> "
                                                  "backprops_wrt_input, backprop_wrt_min, "
                                                  "backprop_wrt_max | num_bits=int, "
                                                  "narrow_range=bool"),
    # Quantized ops (TF 2.21's OpDefs): values, then their float min and max scalars.
    "Dequantize": ("input, min_range, max_range -> output | T:type, mode=string, "
                   "narrow_range=bool, axis=int, dtype=type"),
    "QuantizeDownAndShrinkRange": ("input, input_min, input_max -> output, output_min, "
                                   "output_max | Tinput:type, out_type:type"),
    "QuantizeV2": ("input, min_range, max_range -> output, output_min, output_max | T:type, "
                   "mode=string, round_mode=string, narrow_range=bool, axis=int, "
                   "ensure_minimum_range=float"),
    "QuantizedAvgPool": ("input, min_input, max_input -> output, min_output, "
                         "max_output | T:type, ksize:list(int), strides:list(int), padding:string"),
    "QuantizedBiasAdd": ("input, bias, min_input, max_input, min_bias, max_bias -> output, "
                         "min_out, max_out | T1:type, T2:type, out_type:type"),
    "QuantizedConcat": ("concat_dim, values*N, input_mins*N, input_maxes*N -> output, "
                        "output_min, output_max | N:int>=2, T:type"),
    "QuantizedConv2D": ("input, filter, min_input, max_input, min_filter, max_filter -> output, "
                        "min_output, max_output | Tinput:type, Tfilter:type, out_type=type, "
                        "strides:list(int), padding:string, dilations=list(int)"),
    **{op: ("input, filter, bias, min_input, max_input, min_filter, max_filter, "
            "min_freezed_output, max_freezed_output -> output, min_output, max_output | "
            "Tinput:type, Tfilter:type, Tbias:type, out_type=type, strides:list(int), "
            "padding:string, dilations=list(int), padding_list=list(int)")
       for op in ("QuantizedConv2DWithBiasAndReluAndRequantize",
                  "QuantizedConv2DWithBiasAndRequantize")},
    **{op: ("input, filter, min_input, max_input, min_filter, max_filter, "
            "min_freezed_output, max_freezed_output -> output, min_output, max_output | "
            "Tinput:type, Tfilter:type, out_type=type, strides:list(int), padding:string, "
            "dilations=list(int), padding_list=list(int)")
       for op in ("QuantizedConv2DAndRequantize", "QuantizedConv2DAndReluAndRequantize")},
    **{op: ("input, filter, bias, min_input, max_input, min_filter, max_filter -> output, "
            "min_output, max_output | Tinput:type, Tfilter:type, out_type=type, "
            "strides:list(int), padding:string, dilations=list(int), padding_list=list(int)")
       for op in ("QuantizedConv2DWithBias", "QuantizedConv2DWithBiasAndRelu")},
    "QuantizedConv2DAndRelu": ("input, filter, min_input, max_input, min_filter, max_filter "
                               "-> output, min_output, max_output | Tinput:type, "
                               "Tfilter:type, out_type=type, strides:list(int), "
                               "padding:string, dilations=list(int), padding_list=list(int)"),
    "QuantizedMatMul": ("a, b, min_a, max_a, min_b, max_b -> out, min_out, max_out | T1:type, "
                        "T2:type, Toutput=type, transpose_a=bool, transpose_b=bool, "
                        "Tactivation=type"),
    "QuantizedMatMulWithBias": ("a, b, bias, min_a, max_a, min_b, max_b -> out, min_out, "
                                "max_out | T1:type, T2:type, Tbias:type, Toutput=type, "
                                "transpose_a=bool, transpose_b=bool, input_quant_mode=string"),
    "QuantizedMatMulWithBiasAndRelu": ("a, b, bias, min_a, max_a, min_b, max_b -> out, "
                                       "min_out, max_out | T1:type, T2:type, Toutput=type, "
                                       "transpose_a=bool, transpose_b=bool, "
                                       "input_quant_mode=string"),
    "QuantizedMatMulWithBiasAndReluAndRequantize": (
        "a, b, bias, min_a, max_a, min_b, max_b, min_freezed_output, max_freezed_output -> "
        "out, min_out, max_out | T1:type, T2:type, Tbias:type, Toutput=type, "
        "transpose_a=bool, transpose_b=bool, input_quant_mode=string"),
    "QuantizedMatMulWithBiasAndRequantize": (
        "a, b, bias, min_a, max_a, min_b, max_b, min_freezed_output, max_freezed_output -> "
        "out, min_out, max_out | T1:type, T2:type, Tbias:type, Toutput=type, "
        "transpose_a=bool, transpose_b=bool, input_quant_mode=string"),
    "QuantizedMaxPool": ("input, min_input, max_input -> output, min_output, "
                         "max_output | T:type, ksize:list(int), strides:list(int), padding:string"),
    "QuantizedRelu": ("features, min_features, max_features -> activations, min_activations, "
                      "max_activations | Tinput:type, out_type=type"),
    "QuantizedRelu6": ("features, min_features, max_features -> activations, min_activations, "
                       "max_activations | Tinput:type, out_type=type"),
    "QuantizedReshape": ("tensor, shape, input_min, input_max -> output, output_min, "
                         "output_max | T:type, Tshape=type"),
    "RequantizationRange": "input, input_min, input_max -> output_min, output_max | Tinput:type",
    "Requantize": ("input, input_min, input_max, requested_output_min, "
                   "requested_output_max -> output, output_min, output_max | Tinput:type, "
                   "out_type:type"),
    # The runtime's own ops, which only partitions hold (a plan's JSON form, not graph files;
    # TF 2.21's OpDefs).
    "_Arg": "-> output | T:type, index:int>=0",
    "_Recv": ("-> tensor | tensor_type:type, tensor_name:string, send_device:string, "
              "send_device_incarnation:int, recv_device:string, client_terminated=bool"),
    "_Retval": "input -> | T:type, index:int>=0",
    "_Send": ("tensor -> | T:type, tensor_name:string, send_device:string, "
              "send_device_incarnation:int, recv_device:string, client_terminated=bool"),
}

# Op types a partition may hold that no graph file may (they are not registered ops).
RUNTIME_OP_TYPES = frozenset({"_Arg", "_Recv", "_Retval", "_Send"})


# -- reading signatures ---------------------------------------------------------------------

@dataclass(frozen=True)
class AttrSpec:
    kind: str              # "type", "int", "list(int)", ...
    required: bool
    minimum: int | None    # least value (int) or length (list)


@dataclass(frozen=True)
class Signature:
    op: str
    text: str
    inputs: tuple[tuple[str, str | None], ...]    # (arg name, the int attr counting it)
    outputs: tuple[tuple[str, str | None], ...]
    attrs: dict

    def count(self, args, attrs: dict) -> int:
        """Tensors `args` stand for, given checked attrs."""
        total = 0
        for _, counted_by in args:
            if counted_by is None:
                total += 1
            else:
                count = attrs[counted_by]
                total += len(count) if isinstance(count, list) else count
        return total


_ATTR = re.compile(r"(\w+)([:=])([\w()]+)(?:>=(\d+))?")


@functools.cache
def signature(op_type: str) -> Signature | None:
    text = SIGNATURES.get(op_type)
    if text is None:
        return None
    head, _, attr_text = text.partition("|")
    ins, _, outs = head.partition("->")
    specs = {}
    extra = ENGINE_ATTRS.get(op_type, "")
    for item in filter(None, (a.strip() for a in f"{attr_text},{extra}".split(","))):
        name, sep, kind, minimum = _ATTR.fullmatch(item).groups()
        specs[name] = AttrSpec(kind, sep == ":", None if minimum is None else int(minimum))
    return Signature(op_type, text, _args(ins), _args(outs), specs)


def _args(text: str) -> tuple:
    return tuple((name, count or None) for name, _, count in
                 (a.strip().partition("*") for a in text.split(",") if a.strip()))


def describe_args(args) -> str:
    return ", ".join(name if n is None else f"{name}*{n}" for name, n in args) or "none"


_SCALAR_KINDS = {
    "type": (lambda v: type(v) is DType, 'a dtype ({"dtype": "float32"})'),
    "shape": (lambda v: type(v) is TensorShape, 'a shape ({"shape": [2, null]})'),
    "tensor": (lambda v: type(v) is np.ndarray, 'a tensor ({"tensor": {...}})'),
    "int": (lambda v: type(v) is int, "an integer"),
    "float": (lambda v: type(v) in (int, float), "a number"),
    "bool": (lambda v: type(v) is bool, "true or false"),
    "string": (lambda v: type(v) is str, "a string"),
}
# Decoded attrs are exactly these types (graph_json builds them), so `type(v) is` suffices
# and keeps bool out of int; list kinds check each item.
def _list_of(check):
    return lambda v: type(v) is list and all(map(check, v))


_KIND_CHECKS = {kind: check for kind, (check, _) in _SCALAR_KINDS.items()}
_KIND_CHECKS.update({f"list({kind})": _list_of(check) for kind, check in _KIND_CHECKS.items()})


def has_kind(value, kind: str) -> bool:
    check = _KIND_CHECKS.get(kind)
    return check is None or check(value)


def kind_text(kind: str) -> str:
    if kind.startswith("list("):
        return f"a list of {kind_text(kind[5:-1])}s"
    return _SCALAR_KINDS[kind][1] if kind in _SCALAR_KINDS else kind


def describe_value(v) -> str:
    if isinstance(v, DType):
        return f"dtype {v.name}"
    if isinstance(v, TensorShape):
        return f"shape {v}"
    if isinstance(v, np.ndarray):
        return f"a {v.dtype} tensor of shape {list(v.shape)}"
    if isinstance(v, list):
        return "[" + ", ".join(describe_value(x) for x in v[:4]) + (", ...]" if len(v) > 4 else "]")
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
