"""Initializers as TF1 spells them (zeros, ones, constant, random_normal, truncated_normal,
random_uniform, glorot_uniform/normal, variance_scaling and the he/lecun shorthands):
callables (shape, dtype, partition_info) -> Tensor, and the `tf.initializers` namespace."""

from __future__ import annotations

import math

import numpy as np

from engine import dtypes
from engine.ops import array_ops, random_ops

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "constant_initializer",
    "glorot_normal_initializer",
    "glorot_uniform_initializer",
    "initializers",
    "ones_initializer",
    "random_normal_initializer",
    "random_uniform_initializer",
    "truncated_normal_initializer",
    "variance_scaling_initializer",
    "zeros_initializer",
]

# scipy.stats.truncnorm.std(a=-2, b=2): the stddev of a unit normal truncated at two sigmas.
_TRUNCATED_STDDEV = 0.87962566103423978


def _float_dtype(dtype) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype}.")
    return dtype


class Initializer:
    """Base of every initializer: `init(shape, dtype=None, partition_info=None)`."""

    dtype: dtypes.DType = dtypes.float32

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


class Zeros(Initializer):
    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.zeros(shape, dtypes.as_dtype(dtype or self.dtype))

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.ones(shape, dtypes.as_dtype(dtype or self.dtype))

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Constant(Initializer):
    """A scalar fills the shape; a list shorter than the shape is padded with its last value
    (TF1's constant() rule); a longer one is an error."""

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        if not np.isscalar(value) and not isinstance(value, (list, tuple, np.ndarray)):
            raise TypeError(f"Invalid type for initial value: {type(value).__name__} (expected "
                            "Python scalar, list or tuple of values, or numpy.ndarray).")
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):
        dtype = dtypes.as_dtype(dtype or self.dtype)
        verify = self._verify_shape if verify_shape is None else verify_shape
        shape = list(shape)
        flat = np.asarray(self.value).reshape(-1)
        count = int(np.prod(shape)) if shape else 1
        if verify and list(np.shape(self.value)) != shape:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got "
                            f"{tuple(np.shape(self.value))}.")
        if flat.size > count:
            raise ValueError(f"Too many elements provided. Takes at most {count}, but got "
                             f"{flat.size}.")
        if 1 < flat.size < count:
            flat = np.concatenate([flat, np.repeat(flat[-1:], count - flat.size)])
        value = flat.reshape(shape) if flat.size == count else flat.reshape(())
        return array_ops.constant(value.tolist(), dtype=dtype, shape=shape)

    def get_config(self) -> dict:
        return {"value": self.value, "dtype": self.dtype.name,
                "verify_shape": self._verify_shape}


class RandomUniform(Initializer):
    def __init__(self, minval=0, maxval=None, seed=None, dtype=dtypes.float32):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(shape, self.minval, self.maxval,
                                         dtypes.as_dtype(dtype or self.dtype), seed=self.seed)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed,
                "dtype": self.dtype.name}


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_normal(shape, self.mean, self.stddev,
                                        _float_dtype(dtype or self.dtype), seed=self.seed)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed,
                "dtype": self.dtype.name}


class TruncatedNormal(RandomNormal):
    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.truncated_normal(shape, self.mean, self.stddev,
                                           _float_dtype(dtype or self.dtype), seed=self.seed)


def compute_fans(shape) -> tuple[float, float]:
    """TF's _compute_fans: a conv kernel [..., in, out] multiplies both fans by its
    receptive field size (the product of the leading dims)."""
    shape = list(shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = 1.0
    for d in shape[:-2]:
        receptive *= d
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    """Samples with variance scale / n, n being fan_in, fan_out or their mean. "normal" and
    "truncated_normal" draw a truncated normal whose stddev is corrected for the truncation;
    "untruncated_normal" a plain normal; "uniform" U(-limit, limit), limit = sqrt(3 scale/n)."""

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=dtypes.float32):
        if scale <= 0.:
            raise ValueError(f"Argument `scale` must be a positive float. Received: {scale}")
        if mode not in self._MODES:
            raise ValueError(f"Argument `mode` should be one of {self._MODES}. Received: "
                             f"{mode}")
        distribution = distribution.lower()
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(f"Argument `distribution` should be one of "
                             f"{self._DISTRIBUTIONS}. Received: {distribution}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _float_dtype(dtype or self.dtype)
        full_shape = partition_info.full_shape if partition_info is not None else shape
        fan_in, fan_out = compute_fans(full_shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        scale = self.scale / max(1.0, n[self.mode])
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / _TRUNCATED_STDDEV
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal


def he_normal(seed=None) -> VarianceScaling:
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed=None) -> VarianceScaling:
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed=None) -> VarianceScaling:
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None) -> VarianceScaling:
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


class initializers:  # noqa: N801 - TF's namespace `tf.initializers`
    """`tf.initializers.*`: the same initializers under their short names."""
    zeros = Zeros
    ones = Ones
    constant = Constant
    random_uniform = RandomUniform
    random_normal = RandomNormal
    truncated_normal = TruncatedNormal
    variance_scaling = VarianceScaling
    glorot_uniform = GlorotUniform
    glorot_normal = GlorotNormal
    he_normal = staticmethod(he_normal)
    he_uniform = staticmethod(he_uniform)
    lecun_normal = staticmethod(lecun_normal)
    lecun_uniform = staticmethod(lecun_uniform)

    @staticmethod
    def global_variables():
        from engine.ops.variables import global_variables_initializer
        return global_variables_initializer()

    @staticmethod
    def local_variables():
        from engine.ops.variables import local_variables_initializer
        return local_variables_initializer()

    @staticmethod
    def variables(var_list, name="init"):
        from engine.ops.variables import variables_initializer
        return variables_initializer(var_list, name=name)
