"""Learning-rate schedules as graph ops of the global step (TF 1.x learning_rate_decay.py):
exponential, piecewise constant, polynomial, inverse time, natural exponential and cosine decay.
Names and scopes follow TF (`ExponentialDecay/learning_rate`, the result named after the
scope). TF builds piecewise_constant and polynomial cycling with tf.case / tf.cond; this engine
has no Switch/Merge, so they are exact arithmetic on 0/1 masks instead (same values)."""

from __future__ import annotations

import math

from engine import dtypes
from engine.ops import array_ops, math_ops
from engine.ops.core import convert_to_tensor, graph_of

__all__ = [
    "cosine_decay",
    "exponential_decay",
    "inverse_time_decay",
    "natural_exp_decay",
    "piecewise_constant",
    "polynomial_decay",
]


def _require_step(global_step, schedule: str) -> None:
    if global_step is None:
        raise ValueError(f"global_step is required for {schedule}.")


def _scope(name, default: str, values):
    graph = graph_of(*values)
    return graph, graph.name_scope(name or default)


def _floor(x):
    """floor for the non-negative step ratios schedules divide out: truncation through int64
    is exact there (TF uses its Floor op)."""
    return array_ops.cast(array_ops.cast(x, dtypes.int64), x.dtype.base_dtype)


def _ceil(x):
    whole = _floor(x)
    return whole + array_ops.cast(math_ops.greater(x, whole), x.dtype.base_dtype)


def _step_ratio(learning_rate, global_step, decay_steps, staircase: bool):
    learning_rate = convert_to_tensor(learning_rate, name="learning_rate")
    dtype = learning_rate.dtype.base_dtype
    p = array_ops.cast(global_step, dtype) / array_ops.cast(decay_steps, dtype)
    return learning_rate, dtype, _floor(p) if staircase else p


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * decay_rate ^ (global_step / decay_steps); the exponent is floored when
    staircase is set."""
    _require_step(global_step, "exponential_decay")
    graph, scope = _scope(name, "ExponentialDecay", [learning_rate, global_step])
    with graph.as_default(), scope as scope_name:
        learning_rate, dtype, p = _step_ratio(learning_rate, global_step, decay_steps,
                                              staircase)
        decay_rate = array_ops.cast(decay_rate, dtype)
        return math_ops.multiply(learning_rate, math_ops.pow(decay_rate, p), name=scope_name)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <=
    boundaries[i], values[-1] after the last boundary."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    graph, scope = _scope(name, "PiecewiseConstant", [x])
    with graph.as_default(), scope as scope_name:
        x = convert_to_tensor(x)
        bounds = [_boundary(b, x) for b in boundaries]
        values = [convert_to_tensor(v) for v in values]
        for v in values[1:]:
            if v.dtype.base_dtype is not values[0].dtype.base_dtype:
                raise ValueError(f"Values must have elements all with the same dtype "
                                 f"({values[0].dtype.base_dtype.name} vs "
                                 f"{v.dtype.base_dtype.name}).")
        dtype = values[0].dtype.base_dtype
        # above[i] is 1 once x passed boundary i; exactly one mask below is 1, so the sum of
        # mask * value is that value with no rounding.
        above = [array_ops.cast(math_ops.greater(x, b), dtype) for b in bounds]
        masks = [1 - above[0]] + [above[i - 1] - above[i] for i in range(1, len(above))] + \
            [above[-1]]
        terms = [m * v for m, v in zip(masks, values)]
        return math_ops.add_n(terms, name=scope_name) if len(terms) > 1 else \
            array_ops.identity(values[0], name=scope_name)


def _boundary(b, x):
    b = convert_to_tensor(b)
    if b.dtype.base_dtype is x.dtype.base_dtype:
        return b
    if b.dtype.base_dtype is dtypes.int32 and x.dtype.base_dtype is dtypes.int64:
        return array_ops.cast(b, dtypes.int64)
    raise ValueError(f"Boundaries ({b.dtype.base_dtype.name}) must have the same dtype as x "
                     f"({x.dtype.base_dtype.name}).")


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """(lr - end) * (1 - step / decay_steps) ^ power + end, with the step held at decay_steps
    (or, with cycle, decay_steps stretched to the next multiple above the step)."""
    _require_step(global_step, "polynomial_decay")
    graph, scope = _scope(name, "PolynomialDecay", [learning_rate, global_step])
    with graph.as_default(), scope as scope_name:
        learning_rate = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = learning_rate.dtype.base_dtype
        end_learning_rate = array_ops.cast(end_learning_rate, dtype)
        power = array_ops.cast(power, dtype)
        step = array_ops.cast(global_step, dtype)
        decay_steps = array_ops.cast(decay_steps, dtype)
        if cycle:
            # TF: multiplier = 1 at step 0, else ceil(step / decay_steps).
            multiplier = math_ops.maximum(_ceil(step / decay_steps), 1.0)
            decay_steps = math_ops.multiply(decay_steps, multiplier)
        else:
            step = math_ops.minimum(step, decay_steps)
        p = math_ops.divide(step, decay_steps)
        return math_ops.add(math_ops.multiply(learning_rate - end_learning_rate,
                                              math_ops.pow(1 - p, power)),
                            end_learning_rate, name=scope_name)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * exp(-decay_rate * global_step / decay_steps)."""
    _require_step(global_step, "natural_exp_decay")
    graph, scope = _scope(name, "NaturalExpDecay", [learning_rate, global_step])
    with graph.as_default(), scope as scope_name:
        learning_rate, dtype, p = _step_ratio(learning_rate, global_step, decay_steps,
                                              staircase)
        decay_rate = array_ops.cast(decay_rate, dtype)
        exponent = math_ops.exp(math_ops.multiply(math_ops.negative(decay_rate), p))
        return math_ops.multiply(learning_rate, exponent, name=scope_name)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """learning_rate / (1 + decay_rate * global_step / decay_steps)."""
    _require_step(global_step, "inverse_time_decay")
    graph, scope = _scope(name, "InverseTimeDecay", [learning_rate, global_step])
    with graph.as_default(), scope as scope_name:
        learning_rate, dtype, p = _step_ratio(learning_rate, global_step, decay_steps,
                                              staircase)
        decay_rate = array_ops.cast(decay_rate, dtype)
        denom = math_ops.add(array_ops.cast(1, dtype), math_ops.multiply(decay_rate, p))
        return math_ops.divide(learning_rate, denom, name=scope_name)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
    decay_steps)) + alpha) (Loshchilov & Hutter, without restarts)."""
    _require_step(global_step, "cosine_decay")
    graph, scope = _scope(name, "CosineDecay", [learning_rate, global_step])
    with graph.as_default(), scope as scope_name:
        learning_rate = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = learning_rate.dtype.base_dtype
        decay_steps = array_ops.cast(decay_steps, dtype)
        step = math_ops.minimum(array_ops.cast(global_step, dtype), decay_steps)
        completed_fraction = step / decay_steps
        cosine_decayed = 0.5 * (1.0 + math_ops.cos(
            array_ops.constant(math.pi, dtype=dtype) * completed_fraction))
        decayed = (1 - alpha) * cosine_decayed + alpha
        return math_ops.multiply(learning_rate, decayed, name=scope_name)
