"""Random ops (RandomStandardNormal, RandomUniform, RandomUniformInt, TruncatedNormal,
RandomShuffle, Multinomial) with TF1's graph- and op-level seeds; the tf.random_* builders and
tf.nn.dropout (exported through engine/nn.py)."""

from __future__ import annotations

import numbers

import numpy as np

from engine import dtypes
from engine.graph import Graph, get_default_graph
from engine.ops import array_ops
from engine.ops import math_ops as M
from engine.ops.core import (
    check_dtype_allowed,
    constant_value,
    convert_to_tensor,
    graph_of,
    op_scope,
    shape_error,
)
from engine.ops.registry import register_op
from engine.shapes import TensorShape

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "get_seed",
    "multinomial",
    "random_normal",
    "random_shuffle",
    "random_uniform",
    "set_random_seed",
    "truncated_normal",
]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1
_SHAPE_TYPES = (dtypes.int32, dtypes.int64)
_INT_OUT = (dtypes.int32, dtypes.int64)


# -- seeds (TF1's random_seed.py) ----------------------------------------------------------

def set_random_seed(seed) -> None:
    """Sets the graph-level seed of the default graph: every random op created afterwards
    without its own seed takes an op seed from the graph's op count, so the program gives the
    same numbers run to run."""
    get_default_graph().seed = seed


def get_seed(op_seed, graph: Graph | None = None) -> tuple:
    """TF1's rule: (graph seed, op seed); the op count stands in for a missing op seed; a
    lone op seed pairs with DEFAULT_GRAPH_SEED; (None, None) means nondeterministic."""
    graph = graph or get_default_graph()
    global_seed = graph.seed
    if global_seed is not None:
        if op_seed is None:
            op_seed = len(graph.get_operations())   # TF1's graph._last_id
        seeds = (global_seed % _MAXINT32, op_seed % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, op_seed % _MAXINT32)
    else:
        seeds = (None, None)
    # The kernels read (0, 0) as "nondeterministic", which (None, None) already says.
    if seeds == (0, 0):
        return (0, _MAXINT32)
    return seeds


def _seed_attrs(graph: Graph, seed) -> dict:
    seed1, seed2 = get_seed(seed, graph)
    return {"seed": seed1 or 0, "seed2": seed2 or 0}


# -- shape inference -----------------------------------------------------------------------

def _shape_from_tensor(op, shape_t) -> TensorShape:
    if shape_t.shape.ndims not in (None, 1):
        raise shape_error(op, f"Shape must be rank 1 but is rank {shape_t.shape.ndims}")
    check_dtype_allowed(op, shape_t.dtype, _SHAPE_TYPES)
    value = constant_value(shape_t)
    if value is None:
        n = shape_t.shape[0] if shape_t.shape.ndims == 1 else None
        return TensorShape(None if n is None else [None] * n)
    dims = [int(d) for d in np.asarray(value).reshape(-1)]
    if any(d < 0 for d in dims):
        raise shape_error(op, f"Dimension {min(dims)} must be >= 0 in shape {dims}")
    return TensorShape(dims)


def _random_infer(op):
    dtype = op.attrs["dtype"]
    check_dtype_allowed(op, dtype, dtypes.FLOATS, arg="dtype")
    return [(dtype, _shape_from_tensor(op, op.inputs[0]))]


def _scalar_input(op, index: int, what: str) -> None:
    rank = op.inputs[index].shape.ndims
    if rank not in (None, 0):
        raise shape_error(op, f"Shape must be rank 0 but is rank {rank} ({what} must be a "
                              "scalar)")


def _uniform_int_infer(op):
    shape_t, low, high = op.inputs
    if low.dtype.base_dtype is not high.dtype.base_dtype:
        raise TypeError(f"Input 'maxval' of 'RandomUniformInt' Op has type {high.dtype.name} "
                        f"that does not match type {low.dtype.name} of argument 'minval'.")
    check_dtype_allowed(op, low.dtype, _INT_OUT, arg="Tout")
    _scalar_input(op, 1, "minval")
    _scalar_input(op, 2, "maxval")
    return [(low.dtype.base_dtype, _shape_from_tensor(op, shape_t))]


def _shuffle_infer(op):
    return [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape)]


def _multinomial_infer(op):
    logits, num_samples = op.inputs
    check_dtype_allowed(op, logits.dtype, dtypes.REAL_NUMERIC)
    check_dtype_allowed(op, op.attrs["output_dtype"], _INT_OUT, arg="output_dtype")
    if logits.shape.ndims not in (None, 2):
        raise shape_error(op, f"Shape must be rank 2 but is rank {logits.shape.ndims}")
    _scalar_input(op, 1, "num_samples")
    batch = logits.shape[0] if logits.shape.ndims == 2 else None
    count = constant_value(num_samples)
    samples = int(np.asarray(count).reshape(-1)[0]) if count is not None else None
    return [(op.attrs["output_dtype"], TensorShape([batch, samples]))]


register_op("RandomStandardNormal", _random_infer, stateful=True)
register_op("RandomUniform", _random_infer, stateful=True)
register_op("TruncatedNormal", _random_infer, stateful=True)
register_op("RandomUniformInt", _uniform_int_infer, stateful=True)
register_op("RandomShuffle", _shuffle_infer, stateful=True)
register_op("Multinomial", _multinomial_infer, stateful=True)


# -- tf.* builders -------------------------------------------------------------------------

def _shape_tensor(shape):
    """TF's _ShapeTensor: an empty list is an int32 shape (a scalar), not a float constant."""
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    if isinstance(shape, (list, tuple)) and not shape:
        return convert_to_tensor(np.zeros([0], np.int32), name="shape")
    return convert_to_tensor(shape, name="shape")


def _random(op_type: str, graph: Graph, shape_t, dtype, seed, name: str | None = None):
    attrs = {"dtype": dtype, "T": shape_t.dtype.base_dtype, **_seed_attrs(graph, seed)}
    return graph.create_op(op_type, [shape_t], attrs, name=name or op_type).outputs[0]


def _scaled(op_type: str, default_name: str, shape, mean, stddev, dtype, seed, name):
    dtype = dtypes.as_dtype(dtype)
    g = graph_of(shape, mean, stddev)
    with op_scope(g, name, default_name) as scope:
        shape_t = _shape_tensor(shape)
        mean_t = convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev_t = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = _random(op_type, g, shape_t, dtype, seed)
        return M.add(M.multiply(rnd, stddev_t, name="mul"), mean_t, name=scope)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Samples of N(mean, stddev^2) with the given shape."""
    return _scaled("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype, seed,
                   name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None,
                     name=None):
    """Normal samples redrawn until they lie within two standard deviations of the mean."""
    return _scaled("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype, seed,
                   name)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform samples in [minval, maxval); integer dtypes draw RandomUniformInt."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in dtypes.FLOATS + _INT_OUT:
        raise ValueError(f"Invalid dtype {dtype.name} for random_uniform: use a float dtype or "
                         "int32/int64.")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype tf.{dtype.name}")
        maxval = 1
    g = graph_of(shape, minval, maxval)
    with op_scope(g, name, "random_uniform") as scope:
        shape_t = _shape_tensor(shape)
        low = convert_to_tensor(minval, dtype=dtype, name="min")
        high = convert_to_tensor(maxval, dtype=dtype, name="max")
        if dtype.is_integer:
            attrs = {"Tout": dtype, "T": shape_t.dtype.base_dtype, **_seed_attrs(g, seed)}
            return g.create_op("RandomUniformInt", [shape_t, low, high], attrs,
                               name=scope).outputs[0]
        rnd = _random("RandomUniform", g, shape_t, dtype, seed)
        return M.add(M.multiply(rnd, M.subtract(high, low, name="sub"), name="mul"), low,
                     name=scope)


def random_shuffle(value, seed=None, name=None):
    """`value` with its first dimension randomly permuted."""
    value = convert_to_tensor(value)
    g = graph_of(value)
    attrs = {"T": value.dtype.base_dtype, **_seed_attrs(g, seed)}
    return g.create_op("RandomShuffle", [value], attrs, name=name or "RandomShuffle").outputs[0]


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """`num_samples` class indices per row of `logits` [batch, classes], drawn with
    probabilities softmax(logits) (with replacement)."""
    g = graph_of(logits)
    with op_scope(g, name, "multinomial"):
        logits = convert_to_tensor(logits, name="logits")
        out = dtypes.as_dtype(output_dtype) if output_dtype is not None else dtypes.int64
        with g.name_scope("Multinomial") as op_name:
            count = convert_to_tensor(num_samples, dtype=dtypes.int32, name="num_samples")
            attrs = {"T": logits.dtype.base_dtype, "output_dtype": out, **_seed_attrs(g, seed)}
            return g.create_op("Multinomial", [logits, count], attrs, name=op_name).outputs[0]


# -- tf.nn.dropout -------------------------------------------------------------------------

def _noise_shape(x, noise_shape):
    """TF's _get_noise_shape: None dims of noise_shape take x's static dims."""
    if noise_shape is None:
        return array_ops.shape(x)
    if isinstance(noise_shape, (list, tuple)) and x.shape.ndims == len(noise_shape):
        dims = [d if d is not None else x.shape[i] for i, d in enumerate(noise_shape)]
        if all(d is not None for d in dims):
            return dims
    return noise_shape


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """tf.nn.dropout (TF 1.13+ form): each element (or each slice given by noise_shape) is
    kept with probability 1 - rate and scaled by 1 / (1 - rate), else zeroed. `keep_prob`
    is the older spelling of 1 - rate."""
    if keep_prob is not None:
        if rate is not None:
            raise ValueError("Cannot specify both 'rate' and 'keep_prob'.")
        try:
            rate = 1 - keep_prob
        except TypeError:
            raise ValueError(f"keep_prob must be a floating point number or Tensor (got "
                             f"{keep_prob!r})") from None
    if rate is None:
        raise ValueError("You must provide a rate to dropout.")
    g = graph_of(x, rate)
    with op_scope(g, name, "dropout"):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError(f"x has to be a floating point tensor since it's going to be "
                             f"scaled. Got a {x.dtype.name} tensor instead.")
        if isinstance(rate, numbers.Real) and not 0 <= rate < 1:
            raise ValueError(f"rate must be a scalar tensor or a float in the range [0, 1), "
                             f"got {rate:g}")
        if isinstance(rate, numbers.Real) and rate == 0:
            return x
        rate = convert_to_tensor(rate, dtype=x.dtype.base_dtype, name="rate")
        if not rate.shape.is_compatible_with(TensorShape([])):
            raise ValueError(f"Shapes {rate.shape} and () are incompatible (dropout's rate "
                             "must be a scalar).")
        known = constant_value(rate)
        if known is not None and float(known) == 0:
            return x
        random = random_uniform(_noise_shape(x, noise_shape), seed=seed, dtype=x.dtype)
        scale = M.divide(1.0, M.subtract(1.0, rate))
        # keep where random >= rate: 1 - [random < rate] keeps the boundary value, as TF does.
        keep = M.subtract(1.0, array_ops.cast(M.less(random, rate), x.dtype))
        out = M.multiply(M.multiply(x, scale), keep)
        out.set_shape(x.shape)
        return out
