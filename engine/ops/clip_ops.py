"""Clipping: tf.clip_by_value (the ClipByValue op), tf.clip_by_norm, tf.clip_by_global_norm
and tf.global_norm, built as TF builds them. math_ops re-exports this module, so math_ops is
imported where it is used, not when this module loads."""

from __future__ import annotations

from collections.abc import Sequence

from engine.ops.core import convert_to_tensor, graph_of, op_scope, same_dtype_inputs, shape_error
from engine.ops.registry import register_op
from engine.shapes import TensorShape, broadcast_shapes

__all__ = ["clip_by_global_norm", "clip_by_norm", "clip_by_value", "global_norm"]


def _incompatible(a: TensorShape, b: TensorShape) -> ValueError:
    return ValueError(f"Shapes {a} and {b} are incompatible")


def _clip_infer(op):
    """TF's composite minimum(t, max) then maximum(., min) may broadcast the bounds, but not
    grow `t` (its shape is merged with each intermediate result)."""
    dtype = same_dtype_inputs(op, ("t", "clip_value_min", "clip_value_max"))
    t, lo, hi = (x.shape for x in op.inputs)
    out = t
    for bound in (hi, lo):
        wide = broadcast_shapes(out, bound)
        if wide is None:
            raise shape_error(op, f"Dimensions must be equal for t {out} and bound {bound}")
        if not t.is_compatible_with(wide):
            raise _incompatible(t, wide)
        out = t.merge_with(wide)
    return [(dtype, out)]


register_op("ClipByValue", _clip_infer)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Values of `t` clamped to [clip_value_min, clip_value_max] (bounds broadcast against
    `t`). The gradient reaches `t` where it lies inside the bounds, ends included, as TF's
    minimum/maximum composite gives it."""
    g = graph_of(t, clip_value_min, clip_value_max)
    with op_scope(g, name, "clip_by_value") as scope:
        t = convert_to_tensor(t, name="t")
        dtype = t.dtype.base_dtype
        lo = convert_to_tensor(clip_value_min, dtype=dtype, name="clip_value_min")
        hi = convert_to_tensor(clip_value_max, dtype=dtype, name="clip_value_max")
        return g.create_op("ClipByValue", [t, lo, hi], {"T": dtype}, name=scope).outputs[0]


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t * clip_norm / max(l2norm(t, axes), clip_norm): unchanged when the norm is at most
    clip_norm, rescaled to norm clip_norm otherwise; all-zero slices stay zero with finite
    gradients."""
    from engine.ops import array_ops as A
    from engine.ops import math_ops as M
    g = graph_of(t, clip_norm)
    with op_scope(g, name, "clip_by_norm") as scope:
        values = convert_to_tensor(t, name="t")
        l2sum = M.reduce_sum(values * values, axes, keepdims=True)
        # TF's two-tap where(l2sum > 0, ...) keeps sqrt away from 0 (its gradient there is
        # inf); the masks give the same values and gradients without a Select op.
        positive = A.cast(M.greater(l2sum, 0), l2sum.dtype.base_dtype)
        l2sum_safe = l2sum + (1 - positive)
        l2norm = M.sqrt(l2sum_safe) * positive
        intermediate = values * clip_norm
        if not values.shape.is_compatible_with(intermediate.shape):
            raise _incompatible(values.shape, intermediate.shape)
        return A.identity(intermediate / M.maximum(l2norm, clip_norm), name=scope)


def _tensor_list(t_list, what: str) -> list:
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError(f"`{what}` should be a sequence of tensors. Received "
                        f"{type(t_list)}.")
    return list(t_list)


def global_norm(t_list, name=None):
    """sqrt(sum of squares of every element of every tensor); None entries are skipped."""
    from engine.ops import array_ops as A
    from engine.ops import math_ops as M
    t_list = _tensor_list(t_list, "t_list")
    g = graph_of(t_list)
    with op_scope(g, name, "global_norm"):
        values = [None if t is None else convert_to_tensor(t, name=f"t_{i}")
                  for i, t in enumerate(t_list)]
        squares = []
        for v in values:
            if v is not None:
                with g.colocate_with(v.op):
                    squares.append(M.reduce_sum(M.square(v)))
        if not squares:
            return A.constant(0.0, name="global_norm")
        total = M.add_n(squares) if len(squares) > 1 else squares[0]
        return M.sqrt(total, name="global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scales every tensor by clip_norm / max(global_norm, clip_norm); returns (the clipped
    list, with None entries kept as None, and the global norm). An infinite or NaN norm
    makes every clipped value NaN, as in TF."""
    from engine.ops import array_ops as A
    from engine.ops import math_ops as M
    t_list = _tensor_list(t_list, "t_list")
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    g = graph_of(t_list, use_norm)
    with op_scope(g, name, "clip_by_global_norm") as scope:
        one = A.constant(1.0, dtype=use_norm.dtype.base_dtype)
        scale_for_finite = clip_norm * M.minimum(1.0 / use_norm, one / clip_norm)
        scale = scale_for_finite + (use_norm - use_norm)
        values = [None if t is None else convert_to_tensor(t, name=f"t_{i}")
                  for i, t in enumerate(t_list)]
        clipped = []
        for i, v in enumerate(values):
            if v is None:
                clipped.append(None)
                continue
            with g.colocate_with(v.op):
                clipped.append(A.identity(v * scale, name=f"{scope}_{i}"))
    return clipped, use_norm
