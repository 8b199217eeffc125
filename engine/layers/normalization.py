"""tf.layers.batch_normalization and BatchNormalization: gamma, beta, moving_mean and
moving_variance per channel; batch statistics when training, moving ones otherwise; the
moving averages updated by assign ops placed in UPDATE_OPS.

As TF: a 4-D input normalized over axis 1 or 3 uses tf.nn.fused_batch_norm (whose batch
variance, and so the moving variance, carries Bessel's correction), anything else
tf.nn.moments and tf.nn.batch_normalization (the biased variance). With a tensor `training`
both statistics are computed and one is picked with a select (this engine has no tf.cond
yet), and the update uses TF's momentum trick: momentum becomes 1 when not training, so the
update assigns each moving average to itself."""

from __future__ import annotations

from engine import dtypes, nn
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
        self._fused = fusable and self.fused is not False
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
        if t is None or self._axes == [len(self._broadcast) - 1] or len(self._axes) > 1:
            return t
        return array_ops.reshape(t, self._broadcast)

    def call(self, inputs, training=False):
        inputs = convert_to_tensor(inputs)
        known = utils.static_bool(training)
        if self._fused:
            outputs, mean, variance = self._fused_call(inputs, training, known)
        else:
            outputs, mean, variance = self._composite_call(inputs, training, known)
        if known is not False:
            momentum = _constant(self.momentum, self._param_dtype) if known else utils.select(
                training, _constant(self.momentum, self._param_dtype),
                _constant(1.0, self._param_dtype))
            self.add_update(_assign_moving_average(self.moving_mean, mean, momentum))
            self.add_update(_assign_moving_average(self.moving_variance, variance, momentum))
        return outputs

    def _fused_call(self, inputs, training, known):
        param_shape = self.moving_mean.shape.as_list()
        gamma = self.gamma if self.gamma is not None else \
            array_ops.constant(1.0, dtype=self._param_dtype, shape=param_shape)
        beta = self.beta if self.beta is not None else \
            array_ops.constant(0.0, dtype=self._param_dtype, shape=param_shape)
        data_format = "NCHW" if self._axes == [1] else "NHWC"

        def train():
            return nn.fused_batch_norm(inputs, gamma, beta, epsilon=self.epsilon,
                                       data_format=data_format)

        def infer():
            return nn.fused_batch_norm(inputs, gamma, beta, mean=self.moving_mean,
                                       variance=self.moving_variance, epsilon=self.epsilon,
                                       is_training=False, data_format=data_format)
        if known is not None:
            return train() if known else infer()
        return tuple(utils.select(training, a, b) for a, b in zip(train(), infer()))

    def _composite_call(self, inputs, training, known):
        reduction = [i for i in range(len(self._broadcast)) if i not in self._axes]
        if known is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            mean, variance = nn.moments(inputs, reduction, keep_dims=len(self._axes) > 1)
            if known is None:
                mean = utils.select(training, mean, array_ops.cast(self.moving_mean, mean.dtype))
                variance = utils.select(training, variance,
                                        array_ops.cast(self.moving_variance, variance.dtype))
        dtype = inputs.dtype.base_dtype
        cast = [None if t is None else array_ops.cast(t, dtype)
                for t in (mean, variance, self.beta, self.gamma)]
        b_mean, b_var, offset, scale = (self._as_broadcast(t) for t in cast)
        outputs = nn.batch_normalization(inputs, b_mean, b_var, offset, scale, self.epsilon)
        return outputs, mean, variance


def _constant(value, dtype):
    return array_ops.constant(value, dtype=dtype)


def _assign_moving_average(variable, value, momentum):
    """variable -= (variable - value) * (1 - momentum), colocated with the variable."""
    g = variable.graph
    with g.name_scope("AssignMovingAvg") as scope, g.colocate_with(variable):
        decay = math_ops.subtract(1.0, momentum)
        value = array_ops.cast(value, variable.dtype.base_dtype)
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
