"""The GPU kernels of the nn ops run on torch's meta device, which stands in for CUDA on a
machine without one: each allocates on its inputs' device and reads no values back to the host
(only host-memory size inputs, which stay on the CPU as TF keeps them), and each output has
the static shape and dtype the graph gave it."""

from __future__ import annotations

import types

import numpy as np
import torch

import engine as tf
from engine.kernels.registry import KernelContext, find_kernel
from engine.ops import conv_ops

META = KernelContext(device=types.SimpleNamespace(device_type="GPU"),
                     torch_device=torch.device("meta"), variables=None)

NN_TYPES = {
    "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter", "MaxPool",
    "MaxPoolGrad", "MaxPoolGradGrad", "AvgPool", "AvgPoolGrad", "BiasAdd", "BiasAddGrad",
    "Relu", "ReluGrad", "Relu6", "Relu6Grad", "LeakyRelu", "LeakyReluGrad", "Elu", "EluGrad",
    "Selu", "SeluGrad", "Softplus", "SoftplusGrad", "Softsign", "SoftsignGrad", "Softmax",
    "LogSoftmax", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
    "L2Loss", "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad",
    "FusedBatchNormGradV2", "FusedBatchNormGradV3",
}


def _build(g):
    """One graph holding every nn op type, forward and backward, all shapes known."""
    x = tf.placeholder(tf.float32, [2, 7, 7, 3])
    w = tf.placeholder(tf.float32, [3, 3, 3, 4])
    dw = tf.placeholder(tf.float32, [3, 3, 3, 2])
    conv = tf.nn.conv2d(x, w, 2, "SAME")
    depthwise = tf.nn.depthwise_conv2d(x, dw, [1, 2, 2, 1], "SAME")
    pooled = tf.nn.max_pool(x, 2, 2, "SAME")
    averaged = tf.nn.avg_pool(x, 3, 2, "SAME")
    biased = tf.nn.bias_add(conv, tf.zeros([4]))
    acts = [f(biased) for f in (tf.nn.relu, tf.nn.relu6, tf.nn.leaky_relu, tf.nn.elu,
                                tf.nn.selu, tf.nn.softplus, tf.nn.softsign)]
    logits = tf.reshape(biased, [2, -1])
    xent = tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.nn.softmax(logits),
                                                      logits=logits)
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([1, 2]),
                                                            logits=tf.nn.log_softmax(logits))
    normed = tf.nn.fused_batch_norm(x, tf.ones([3]), tf.zeros([3]))[0]
    older = [g.create_op(v, [x, tf.ones([3]), tf.zeros([3]), tf.zeros([0]), tf.zeros([0])],
                         {"T": tf.float32, "U": tf.float32, "epsilon": 1e-3,
                          "is_training": True}).outputs[0]
             for v in ("FusedBatchNorm", "FusedBatchNormV2")]
    total = tf.add_n([tf.reduce_sum(t) for t in [depthwise, pooled, averaged, *acts, xent,
                                                 sparse, normed, *older]]) + \
        tf.nn.l2_loss(conv)
    grads = tf.gradients(total, [x, w, dw])
    conv_ops.create("MaxPoolGradGrad", [x, pooled, x], conv_ops.window_attrs(pooled.op))
    g.create_op("BiasAddGrad", [biased], {"T": tf.float32, "data_format": "NHWC"})
    return grads


def _meta_input(op, t):
    """Size inputs (int32 shapes of the backprop ops) live in host memory with their values;
    everything else, labels included, is a device tensor."""
    if t.dtype.is_integer and op.type != "SparseSoftmaxCrossEntropyWithLogits":
        value = t.op.attrs["value"] if t.op.type == "Const" else np.asarray(t.shape.as_list())
        return torch.as_tensor(np.asarray(value))
    shape = [] if t.shape.ndims is None else t.shape.as_list()   # V3's opaque reserve space
    return torch.empty(shape, dtype=t.dtype.torch_dtype, device="meta")


def test_nn_gpu_kernels_run_on_the_meta_device():
    g = tf.Graph()
    with g.as_default():
        _build(g)
    seen = set()
    for op in g.get_operations():
        if op.type not in NN_TYPES:
            continue
        seen.add(op.type)
        node = g.node_def_of(op)
        kernel = find_kernel(node, "GPU")
        assert kernel is not None, f"{op.type} has no GPU kernel"
        out = kernel.factory(node, META)(*(_meta_input(op, t) for t in op.inputs))
        outs = out if isinstance(out, tuple) else (out,)
        assert len(outs) == len(op.outputs), op.type
        for t, value in zip(op.outputs, outs):
            assert value.device.type == "meta", f"{op.name} ({op.type}) allocated on the host"
            assert value.dtype == t.dtype.torch_dtype, op.name
            assert t.shape.is_compatible_with(list(value.shape)), \
                f"{op.name}: kernel gave {tuple(value.shape)}, graph says {t.shape}"
    assert seen == NN_TYPES
