"""tf.layers.batch_normalization and BatchNormalization: gamma, beta, moving_mean and
moving_variance per channel; batch statistics when training, moving ones otherwise; the
moving averages updated by assign ops placed in UPDATE_OPS.

Built from composite ops (moments, 1/sqrt), not a fused kernel. With a tensor `training`
both statistics are computed and one is picked with a select (no tf.cond yet), and the
update uses TF's momentum trick: momentum becomes 1 when not training, so the update
assigns the moving average to itself. Where TF would use its fused kernel (4-D input, channel
axis 1 or 3) the moving variance takes the batch variance with Bessel's correction, as TF's
fused kernel reports it; elsewhere the biased one, as tf.nn.moments gives it."""

from __future__ import annotations

from engine import dtypes
from engine.layers import utils
from engine.layers.base import Layer
from engine.layers.utils import ONES, ZEROS
from engine.ops import array_ops, math_ops, state_ops
from engine.ops.core import convert_to_tensor
from engine.shapes import TensorShape


class BatchNormalization(Layer):
    """Normalizes over every axis but `axis` (the channels): gamma * (x - mean) /
    sqrt(variance + epsilon) + beta."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=ZEROS,
                 gamma_initializer=ONES,
                 moving_mean_initializer=ZEROS,
                 moving_variance_initializer=ONES,
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable=True, virtual_batch_size=None,
                 adjustment=None, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        for option, value in (("renorm", renorm or None), ("renorm_clipping", renorm_clipping),
                              ("virtual_batch_size", virtual_batch_size),
                              ("adjustment", adjustment)):
            if value is not None:
                raise NotImplementedError(f"batch_normalization: {option} is not supported; "
                                          "leave it unset.")
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.center, self.scale = center, scale
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.fused = fused
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    # -- build ------------------------------------------------------------------------------

    def _normalized_axes(self, ndims: int) -> list[int]:
        given = self.axis if isinstance(self.axis, list) else [self.axis]
        axes = [a + ndims if a < 0 else a for a in given]
        for a in axes:
            if not 0 <= a < ndims:
                raise ValueError(f"Invalid axis: {a}")
        if len(set(axes)) != len(axes):
            raise ValueError(f"Duplicate axis: {self.axis}")
        return sorted(axes)

    def build(self, input_shape) -> None:
        input_shape = TensorShape(input_shape)
        if input_shape.ndims is None:
            raise ValueError(f"Input has undefined rank: {input_shape}")
        ndims = input_shape.ndims
        self._axes = self._normalized_axes(ndims)
        fusable = ndims == 4 and self._axes in ([1], [3])
        if self.fused and not fusable:
            raise ValueError(f"Unsupported axis {self.axis} / rank {ndims} for fused batch "
                             "norm: it needs a 4-D input normalized over axis 1 or 3.")
        self._bessel_moving_variance = fusable and self.fused is not False
        dims = {a: input_shape[a] for a in self._axes}
        if any(d is None for d in dims.values()):
            raise ValueError(f"Input has undefined `axis` dimension. Input shape: {input_shape}")
        self._broadcast = [dims.get(i, 1) for i in range(ndims)]
        param_shape = [dims[self._axes[0]]] if len(self._axes) == 1 else self._broadcast
        narrow = self.dtype in (dtypes.float16, dtypes.bfloat16)
        self._param_dtype = dtypes.float32 if narrow else self.dtype
        weight = dict(shape=param_shape, dtype=self._param_dtype)
        if self.scale:
            self.gamma = self.add_weight("gamma", initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint, **weight)
        if self.center:
            self.beta = self.add_weight("beta", initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint, **weight)
        self.moving_mean = self.add_weight("moving_mean", trainable=False,
                                           initializer=self.moving_mean_initializer, **weight)
        self.moving_variance = self.add_weight("moving_variance", trainable=False,
                                               initializer=self.moving_variance_initializer,
                                               **weight)
        self.built = True

    # -- call -------------------------------------------------------------------------------

    def _as_broadcast(self, t):
        """A per-channel vector reshaped to broadcast against the input (unless the channels
        are the last axis, where it already does)."""
        if self._axes == [len(self._broadcast) - 1]:
            return convert_to_tensor(t)
        return array_ops.reshape(t, self._broadcast)

    def _as_param(self, t):
        return array_ops.reshape(t, self.moving_mean.shape.as_list())

    def call(self, inputs, training=False):
        x = convert_to_tensor(inputs)
        if x.dtype.base_dtype is not self._param_dtype:
            x = array_ops.cast(x, self._param_dtype)
        reduction = [i for i in range(len(self._broadcast)) if i not in self._axes]
        known = utils.static_bool(training)
        if known is False:
            mean, variance = (self._as_broadcast(v) for v in
                              (self.moving_mean, self.moving_variance))
        else:
            batch_mean, batch_var = _moments(x, reduction)
            if known is True:
                mean, variance = batch_mean, batch_var
                momentum = array_ops.constant(self.momentum, dtype=self._param_dtype)
            else:
                mean = utils.select(training, batch_mean, self._as_broadcast(self.moving_mean))
                variance = utils.select(training, batch_var,
                                        self._as_broadcast(self.moving_variance))
                momentum = utils.select(training, _constant(self.momentum, self._param_dtype),
                                        _constant(1.0, self._param_dtype))
            self._add_moving_average_updates(x, batch_mean, batch_var, momentum)
        outputs = self._normalize(x, mean, variance)
        if outputs.dtype.base_dtype is not convert_to_tensor(inputs).dtype.base_dtype:
            outputs = array_ops.cast(outputs, convert_to_tensor(inputs).dtype.base_dtype)
        return outputs

    def _normalize(self, x, mean, variance):
        """tf.nn.batch_normalization: x * inv + (beta - mean * inv), inv = gamma /
        sqrt(variance + epsilon)."""
        g = x.graph
        with g.name_scope("batchnorm"):
            eps = _constant(self.epsilon, self._param_dtype)
            inv = math_ops.reciprocal(math_ops.sqrt(math_ops.add(variance, eps)))
            if self.gamma is not None:
                inv = math_ops.multiply(inv, self._as_broadcast(self.gamma))
            shift = math_ops.multiply(mean, inv)
            offset = math_ops.subtract(self._as_broadcast(self.beta), shift) \
                if self.beta is not None else math_ops.negative(shift)
            return math_ops.add(math_ops.multiply(x, inv), offset)

    def _add_moving_average_updates(self, x, batch_mean, batch_var, momentum) -> None:
        variance = self._as_param(batch_var)
        if self._bessel_moving_variance:
            variance = math_ops.multiply(variance, _bessel_factor(x, variance))
        self.add_update(_assign_moving_average(self.moving_mean, self._as_param(batch_mean),
                                               momentum))
        self.add_update(_assign_moving_average(self.moving_variance, variance, momentum))


def _constant(value, dtype):
    return array_ops.constant(value, dtype=dtype)


def _moments(x, axes: list[int]):
    """tf.nn.moments with keep_dims: the mean, and the mean squared distance from it."""
    g = x.graph
    with g.name_scope("moments"):
        mean = math_ops.reduce_mean(x, axes, keepdims=True, name="mean")
        variance = math_ops.reduce_mean(
            math_ops.squared_difference(x, array_ops.stop_gradient(mean)), axes,
            keepdims=True, name="variance")
    return mean, variance


def _bessel_factor(x, variance):
    """n / (n - 1), n being the number of values behind each channel's statistics."""
    per_channel = x.shape.num_elements()
    if per_channel is not None:
        n = per_channel / variance.shape.num_elements()
        return _constant(n / (n - 1.0) if n > 1 else 1.0, variance.dtype.base_dtype)
    n = math_ops.divide(array_ops.cast(array_ops.size(x), variance.dtype.base_dtype),
                        array_ops.cast(array_ops.size(variance), variance.dtype.base_dtype))
    return math_ops.divide(n, math_ops.maximum(math_ops.subtract(n, 1.0), 1.0))


def _assign_moving_average(variable, value, momentum):
    """variable -= (variable - value) * (1 - momentum), colocated with the variable."""
    g = variable.graph
    with g.name_scope("AssignMovingAvg") as scope, g.colocate_with(variable):
        decay = math_ops.subtract(1.0, momentum)
        delta = math_ops.multiply(math_ops.subtract(variable, value), decay)
        return state_ops.assign_sub(variable, delta, name=scope)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=ZEROS,
                        gamma_initializer=ONES,
                        moving_mean_initializer=ZEROS,
                        moving_variance_initializer=ONES,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """The functional form of BatchNormalization. Run the ops in
    tf.get_collection(tf.GraphKeys.UPDATE_OPS) with the train step to update the moving
    averages."""
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
        renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
        trainable=trainable, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
        name=name, dtype=convert_to_tensor(inputs).dtype, _scope=name, _reuse=reuse)
    return layer.apply(inputs, training=training)
