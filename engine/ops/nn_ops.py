"""Neural-network ops: the activations (Relu, Relu6, LeakyRelu, Elu, Selu, Softplus, Softsign)
and their gradient helpers, Softmax/LogSoftmax, the softmax cross entropies, L2Loss and fused
batch normalization; the tf.nn builders as TF1 spells them."""

from __future__ import annotations

from engine import dtypes, errors
from engine.ops.core import (
    check_dtype_allowed,
    convert_to_tensor,
    graph_of,
    op_scope,
    same_dtype_inputs,
    shape_error,
)
from engine.ops.registry import register_op
from engine.shapes import TensorShape

# The names tf.nn exports from this module (engine/nn.py star-imports it).
__all__ = [
    "elu",
    "fused_batch_norm",
    "l2_loss",
    "leaky_relu",
    "log_softmax",
    "relu",
    "relu6",
    "selu",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "softplus",
    "softsign",
    "sparse_softmax_cross_entropy_with_logits",
]

ACTIVATIONS = {"Relu": "features", "Relu6": "features", "LeakyRelu": "features",
               "Elu": "outputs", "Selu": "outputs", "Softplus": "features",
               "Softsign": "features"}   # op -> what its Grad op takes beside the gradient
BATCH_NORMS = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")


# -- shape inference ---------------------------------------------------------------------

def _float_same_shape(op):
    check_dtype_allowed(op, op.inputs[0].dtype, dtypes.FLOATS)
    return [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape)]


def _softmax_infer(op):
    x = op.inputs[0]
    if x.shape.ndims is not None and x.shape.ndims < 1:
        raise shape_error(op, "Shape must be at least rank 1 but is rank 0")
    return _float_same_shape(op)


def _activation_grad_infer(op):
    """<Activation>Grad(gradients, features-or-outputs): the gradient's shape."""
    second = ACTIVATIONS[op.type[:-len("Grad")]]
    dtype = same_dtype_inputs(op, ("gradients", second))
    check_dtype_allowed(op, dtype, dtypes.FLOATS)
    if not op.inputs[0].shape.is_compatible_with(op.inputs[1].shape):
        raise shape_error(op, "Shapes must be equal rank, but are "
                              f"{op.inputs[0].shape.ndims} and {op.inputs[1].shape.ndims}")
    return [(dtype, op.inputs[0].shape.merge_with(op.inputs[1].shape))]


def _rank_check(op, shape: TensorShape, rank: int) -> None:
    if shape.ndims is not None and shape.ndims != rank:
        raise shape_error(op, f"Shape must be rank {rank} but is rank {shape.ndims}")


def _xent_infer(op):
    dtype = same_dtype_inputs(op, ("features", "labels"))
    check_dtype_allowed(op, dtype, dtypes.FLOATS)
    logits, labels = op.inputs[0].shape, op.inputs[1].shape
    for s in (logits, labels):
        _rank_check(op, s, 2)
    if not logits.is_compatible_with(labels):
        raise shape_error(op, "logits and labels must be broadcastable: logits_size="
                              f"{logits.bracket_str()} labels_size={labels.bracket_str()}")
    merged = logits.merge_with(labels)
    batch = merged[0] if merged.ndims else None
    return [(dtype, TensorShape([batch])), (dtype, merged)]


def _sparse_xent_infer(op):
    dtype = op.inputs[0].dtype.base_dtype
    check_dtype_allowed(op, dtype, dtypes.FLOATS)
    check_dtype_allowed(op, op.inputs[1].dtype, (dtypes.int32, dtypes.int64), arg="Tlabels")
    logits, labels = op.inputs[0].shape, op.inputs[1].shape
    _rank_check(op, logits, 2)
    _rank_check(op, labels, 1)
    batch = logits[0] if logits.ndims else None
    if labels.ndims and batch is not None and labels[0] not in (None, batch):
        raise shape_error(op, f"Dimensions must be equal, but are {batch} and {labels[0]}")
    batch = batch if batch is not None else (labels[0] if labels.ndims else None)
    classes = logits[1] if logits.ndims else None
    return [(dtype, TensorShape([batch])), (dtype, TensorShape([batch, classes]))]


def _l2_loss_infer(op):
    check_dtype_allowed(op, op.inputs[0].dtype, dtypes.FLOATS)
    return [(op.inputs[0].dtype.base_dtype, TensorShape([]))]


def _channels(op, x_shape: TensorShape, vectors) -> int | None:
    """The channel count of a batch-norm op: x's channel dim merged with each 1-D vector."""
    if x_shape.ndims is not None and x_shape.ndims != 4:
        raise shape_error(op, f"Shape must be rank 4 but is rank {x_shape.ndims}")
    axis = 1 if op.attrs.get("data_format", "NHWC") == "NCHW" else 3
    channels = x_shape[axis] if x_shape.ndims else None
    for t in vectors:
        _rank_check(op, t.shape, 1)
        size = t.shape[0] if t.shape.ndims else None
        if channels is not None and size is not None and size != channels:
            raise shape_error(op, f"Dimensions must be equal, but are {channels} and {size}")
        channels = channels if channels is not None else size
    return channels


def _vector_dtype(op, slots, names) -> dtypes.DType:
    first = op.inputs[slots[0]].dtype.base_dtype
    for slot, name in zip(slots[1:], names[1:]):
        if op.inputs[slot].dtype.base_dtype is not first:
            raise TypeError(f"Input '{name}' of '{op.type}' Op has type "
                            f"{op.inputs[slot].dtype.base_dtype.name} that does not match "
                            f"type {first.name} of argument '{names[0]}'.")
    check_dtype_allowed(op, first, (dtypes.float32, dtypes.float64), arg="U")
    return first


def _batch_norm_infer(op):
    """FusedBatchNorm[V2,V3](x, scale, offset, mean, variance): y, batch mean and variance,
    two reserve spaces (V3: three). mean and variance are empty when training."""
    from engine.ops.windows import DATA_FORMATS, check_choice
    check_choice(op.type, "data_format", op.attrs.get("data_format", "NHWC"), DATA_FORMATS)
    x = op.inputs[0]
    check_dtype_allowed(op, x.dtype, (dtypes.float16, dtypes.bfloat16, dtypes.float32,
                                      dtypes.float64))
    u = _vector_dtype(op, (1, 2, 3, 4), ("scale", "offset", "mean", "variance"))
    vectors = op.inputs[1:3] if op.attrs["is_training"] else op.inputs[1:5]
    channels = _channels(op, x.shape, vectors)
    y = x.shape
    if y.ndims is not None:
        dims = list(y.dims)
        dims[1 if op.attrs.get("data_format") == "NCHW" else 3] = channels
        y = TensorShape(dims)
    vec = TensorShape([channels])
    outs = [(x.dtype.base_dtype, y)] + [(u, vec)] * 4
    return outs + [(u, TensorShape(None))] if op.type == "FusedBatchNormV3" else outs


def _batch_norm_grad_infer(op):
    """FusedBatchNormGrad[V2,V3](dy, x, scale, reserve_space_1, reserve_space_2[, 3])."""
    dtype = same_dtype_inputs(op, ("y_backprop", "x"))
    u = _vector_dtype(op, (2, 3, 4), ("scale", "reserve_space_1", "reserve_space_2"))
    shape = op.inputs[0].shape.merge_with(op.inputs[1].shape)
    channels = _channels(op, shape, op.inputs[2:5])
    vec = TensorShape([channels])
    return [(dtype, shape), (u, vec), (u, vec), (u, TensorShape([0])), (u, TensorShape([0]))]


for _op in ACTIVATIONS:
    register_op(_op, _float_same_shape)
    register_op(f"{_op}Grad", _activation_grad_infer)
register_op("Softmax", _softmax_infer)
register_op("LogSoftmax", _softmax_infer)
register_op("SoftmaxCrossEntropyWithLogits", _xent_infer)
register_op("SparseSoftmaxCrossEntropyWithLogits", _sparse_xent_infer)
register_op("L2Loss", _l2_loss_infer)
for _op in BATCH_NORMS:
    register_op(_op, _batch_norm_infer)
    register_op(_op.replace("Norm", "NormGrad"), _batch_norm_grad_infer)


# -- tf.nn builders ----------------------------------------------------------------------

def _unary(op_type, x, name, attrs=None, default_name=None):
    g = graph_of(x)
    with op_scope(g, name, default_name or op_type) as scope:
        x = convert_to_tensor(x, name="features")
        return g.create_op(op_type, [x], {"T": x.dtype.base_dtype, **(attrs or {})},
                           name=scope).outputs[0]


def relu(features, name=None):
    return _unary("Relu", features, name)


def relu6(features, name=None):
    """min(max(features, 0), 6)."""
    return _unary("Relu6", features, name)


def leaky_relu(features, alpha=0.2, name=None):
    """features where positive, else alpha * features (integers are cast to float32 first,
    as TF does)."""
    g = graph_of(features)
    with op_scope(g, name, "LeakyRelu") as scope:
        x = convert_to_tensor(features, name="features")
        if x.dtype.is_integer:
            from engine.ops.array_ops import cast
            x = cast(x, dtypes.float32)
        return g.create_op("LeakyRelu", [x], {"T": x.dtype.base_dtype, "alpha": float(alpha)},
                           name=scope).outputs[0]


def elu(features, name=None):
    """exp(features) - 1 where negative, else features."""
    return _unary("Elu", features, name)


def selu(features, name=None):
    """scale * elu with alpha = 1.6732632..., scale = 1.0507009... (Klambauer et al.)."""
    return _unary("Selu", features, name)


def softplus(features, name=None):
    """log(exp(features) + 1), computed without overflow."""
    return _unary("Softplus", features, name)


def softsign(features, name=None):
    """features / (abs(features) + 1)."""
    return _unary("Softsign", features, name)


def l2_loss(t, name=None):
    """sum(t ** 2) / 2, a scalar."""
    g = graph_of(t)
    x = convert_to_tensor(t)
    return g.create_op("L2Loss", [x], {"T": x.dtype.base_dtype},
                       name=name or "L2Loss").outputs[0]


def _check_axis(x, axis, arg: str = "dim"):
    """TF's range check of a softmax axis; returns it as a non-negative int, or None when
    the rank is unknown (then only -1 means the last axis)."""
    rank = x.shape.ndims
    if rank is None:
        return None
    if not -rank <= axis < rank:
        raise errors.InvalidArgumentError(
            None, None, f"`{arg}` must be in the range [{-rank}, {rank}) where {rank} is the "
                        f"number of dimensions in the input. Received: {arg}={axis}")
    return axis % rank


def _is_last_axis(x, axis) -> bool:
    if axis in (None, -1):
        return True
    index = _check_axis(x, axis)
    return index is not None and index == x.shape.ndims - 1


def _softmax_along(x, axis, log: bool):
    """Softmax over a non-last axis: the max (held constant, softmax does not depend on it)
    is subtracted for range, then exp and the normalizing sum run along `axis`."""
    from engine.ops import array_ops as A
    from engine.ops import math_ops as M
    shifted = M.subtract(x, A.stop_gradient(M.reduce_max(x, axis, keepdims=True)))
    if log:
        return M.subtract(shifted, M.log(M.reduce_sum(M.exp(shifted), axis, keepdims=True)))
    e = M.exp(shifted)
    return M.divide(e, M.reduce_sum(e, axis, keepdims=True))


def _softmax(op_type, logits, axis, name, dim):
    axis = dim if axis is None else axis
    x = convert_to_tensor(logits)
    if _is_last_axis(x, axis):
        return _unary(op_type, x, name)
    with op_scope(graph_of(x), name, op_type):
        return _softmax_along(x, int(axis), log=op_type == "LogSoftmax")


def softmax(logits, axis=None, name=None, dim=None):
    """exp(logits) / sum(exp(logits)) along `axis` (default: the last)."""
    return _softmax("Softmax", logits, axis, name, dim)


def log_softmax(logits, axis=None, name=None, dim=None):
    """logits - log(sum(exp(logits))) along `axis` (default: the last)."""
    return _softmax("LogSoftmax", logits, axis, name, dim)


def _xent_args(fn: str, sentinel, labels, logits) -> None:
    if sentinel is not None:
        raise ValueError(f"Only call `{fn}` with named arguments (labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None, dim=-1,
                                         name=None, axis=None):
    """Per-example cross entropy between `labels` (a distribution along `axis`) and
    softmax(`logits`); gradients flow into both, as in TF's v2 op."""
    _xent_args("softmax_cross_entropy_with_logits_v2", _sentinel, labels, logits)
    axis = dim if axis is None else axis
    logits_t = convert_to_tensor(logits)
    g = graph_of(logits_t, labels)
    with op_scope(g, name, "softmax_cross_entropy_with_logits") as scope:
        labels_t = convert_to_tensor(labels, dtype=logits_t.dtype.base_dtype, name="labels")
        if not _is_last_axis(logits_t, axis):
            from engine.ops import math_ops as M
            log_probs = _softmax_along(logits_t, int(axis), log=True)
            return M.negative(M.reduce_sum(M.multiply(labels_t, log_probs), int(axis)),
                              name=scope)
        op = g.create_op("SoftmaxCrossEntropyWithLogits", [logits_t, labels_t],
                         {"T": logits_t.dtype.base_dtype}, name=scope)
    return op.outputs[0]


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    """TF1's deprecated form: no gradient into labels."""
    from engine.ops.array_ops import stop_gradient
    _xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    return softmax_cross_entropy_with_logits_v2(labels=stop_gradient(labels), logits=logits,
                                                dim=dim, name=name, axis=axis)


def _sparse_xent_shapes(labels, logits) -> None:
    rank = logits.shape.ndims
    if rank == 0:
        raise ValueError(f"`logits` cannot be a scalar. Received logits={logits}`")
    lab = labels.shape
    if rank is not None and lab.ndims is not None and lab.ndims != rank - 1:
        raise ValueError("`labels.shape.rank` must equal `logits.shape.rank - 1`. Received: "
                         f"labels.shape={lab} of rank {lab.ndims} and logits.shape="
                         f"{logits.shape} of rank {rank}")
    outer = logits.shape[:-1] if rank is not None else TensorShape(None)
    if lab.is_fully_defined() and outer.is_fully_defined() and lab != outer:
        raise ValueError("`labels.shape` must equal `logits.shape` except for the last "
                         f"dimension. Received: labels.shape={lab} and logits.shape="
                         f"{logits.shape}")


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    """Per-example cross entropy of softmax(`logits`) against integer class `labels` (one
    rank lower). A label outside [0, classes) is an InvalidArgumentError on CPU and gives
    NaN for its row on GPU, as in TF."""
    from engine.ops import array_ops as A
    _xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    g = graph_of(labels, logits)
    with op_scope(g, name, "SparseSoftmaxCrossEntropyWithLogits"):
        labels_t = convert_to_tensor(labels)
        logits_t = convert_to_tensor(logits)
        if labels_t.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"Value passed to parameter 'labels' has DataType "
                            f"{labels_t.dtype.base_dtype.name} not in list of allowed values: "
                            "int32, int64")
        _sparse_xent_shapes(labels_t, logits_t)
        precise = A.cast(logits_t, dtypes.float32) \
            if logits_t.dtype.base_dtype is dtypes.float16 else logits_t
        rank = logits_t.shape.ndims
        flat_labels = labels_t
        if rank != 2:
            classes = logits_t.shape[-1] if rank is not None else None
            if classes is None:
                raise NotImplementedError(
                    "sparse_softmax_cross_entropy_with_logits needs logits of rank 2 or a "
                    f"known class dimension; '{logits_t.name}' has shape {logits_t.shape}.")
            precise = A.reshape(precise, [-1, classes])
            flat_labels = A.reshape(labels_t, [-1])
        op = g.create_op("SparseSoftmaxCrossEntropyWithLogits", [precise, flat_labels],
                         {"T": precise.dtype.base_dtype,
                          "Tlabels": flat_labels.dtype.base_dtype},
                         name="SparseSoftmaxCrossEntropyWithLogits")
        cost = op.outputs[0]
        if rank != 2:
            cost = A.reshape(cost, A.shape(labels_t))
        if logits_t.dtype.base_dtype is dtypes.float16:
            cost = A.cast(cost, dtypes.float16)
        return cost


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None,
                     exponential_avg_factor=1.0):
    """Batch normalization of a 4-D x over all but its channel axis, in one op
    (FusedBatchNormV3). Returns (y, running mean, running variance): in training the batch's
    mean and (Bessel-corrected) variance, blended into the given ones when
    exponential_avg_factor != 1; in inference the given mean and variance."""
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or
                                                               variance is None):
        raise ValueError("Both `mean` and `variance` must be a 1D tensor when `is_training` "
                         "is False or `exponential_avg_factor` != 1.0. Received: `mean` "
                         f"{mean!r} and `variance` {variance!r}")
    from engine.ops import array_ops as A
    g = graph_of(x, scale, offset, mean, variance)
    with g.as_default():
        x = convert_to_tensor(x, name="input")
        scale = convert_to_tensor(scale, name="scale")
        offset = convert_to_tensor(offset, name="offset")
        u = scale.dtype.base_dtype
        mean = A.constant([], dtype=u) if mean is None else convert_to_tensor(mean)
        variance = A.constant([], dtype=u) if variance is None else convert_to_tensor(variance)
        op = g.create_op("FusedBatchNormV3", [x, scale, offset, mean, variance], {
            "T": x.dtype.base_dtype, "U": u, "epsilon": float(epsilon),
            "exponential_avg_factor": float(exponential_avg_factor),
            "data_format": data_format, "is_training": bool(is_training)},
            name=name or "FusedBatchNormV3")
    return op.outputs[0], op.outputs[1], op.outputs[2]
