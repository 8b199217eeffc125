"""Math ops: elementwise arithmetic with broadcasting, unary functions, MatMul, reductions,
AddN and the helper ops gradients use; the tf.* builders and Tensor's operators."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.graph import Tensor
from engine.ops.core import (
    check_dtype_allowed,
    constant_value,
    convert_to_tensor,
    graph_of,
    op_scope,
    same_dtype_inputs,
    shape_error,
)
from engine.ops.registry import register_op
from engine.shapes import TensorShape, broadcast_shapes

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "abs",
    "add",
    "add_n",
    "argmax",
    "divide",
    "equal",
    "exp",
    "greater",
    "less",
    "log",
    "matmul",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "pow",
    "reduce_max",
    "reduce_mean",
    "reduce_sum",
    "sigmoid",
    "sqrt",
    "square",
    "squared_difference",
    "subtract",
    "tanh",
    "truediv",
    "reciprocal",
]


def _binary_infer(op):
    dtype = same_dtype_inputs(op)
    out = broadcast_shapes(op.inputs[0].shape, op.inputs[1].shape)
    if out is None:
        a, b = op.inputs[0].shape.dims, op.inputs[1].shape.dims
        bad = next((x, y) for x, y in zip(reversed(a), reversed(b))
                   if x not in (1, None) and y not in (1, None) and x != y)
        raise shape_error(op, f"Dimensions must be equal, but are {bad[0]} and {bad[1]}")
    return [(dtype, out)]


def _compare_infer(op):
    (_, shape), = _binary_infer(op)
    return [(dtypes.bool, shape)]


def _unary_infer(op):
    return [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape)]


def _float_unary_infer(op):
    check_dtype_allowed(op, op.inputs[0].dtype, dtypes.FLOATS + (dtypes.complex64,
                                                                 dtypes.complex128))
    return _unary_infer(op)


def _grad_pair_infer(op):
    same_dtype_inputs(op, ("y", "dy"))
    return [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape.merge_with(op.inputs[1].shape))]


def _matmul_infer(op):
    dtype = same_dtype_inputs(op, ("a", "b"))
    a, b = op.inputs[0].shape, op.inputs[1].shape
    for s in (a, b):
        if s.ndims is not None and s.ndims != 2:
            raise shape_error(op, f"Shape must be rank 2 but is rank {s.ndims}")
    if a.ndims is None or b.ndims is None:
        return [(dtype, TensorShape([None, None]))]
    m, ka = (a[1], a[0]) if op.attrs["transpose_a"] else (a[0], a[1])
    kb, n = (b[1], b[0]) if op.attrs["transpose_b"] else (b[0], b[1])
    if ka is not None and kb is not None and ka != kb:
        raise shape_error(op, f"Dimensions must be equal, but are {ka} and {kb}")
    return [(dtype, TensorShape([m, n]))]


def reduced_shape(input_shape: TensorShape, axes, keep_dims: bool) -> TensorShape:
    if input_shape.ndims is None or axes is None:
        return TensorShape(None)
    rank = input_shape.ndims
    axes = {int(a) % rank if rank else 0 for a in np.asarray(axes).reshape(-1)}
    if keep_dims:
        return TensorShape([1 if i in axes else d for i, d in enumerate(input_shape.dims)])
    return TensorShape([d for i, d in enumerate(input_shape.dims) if i not in axes])


def _reduce_infer(op):
    x, axes_t = op.inputs
    axes = constant_value(axes_t)
    if axes is not None and x.shape.ndims is not None:
        rank = x.shape.ndims
        for a in np.asarray(axes).reshape(-1):
            if not -max(rank, 1) <= int(a) < max(rank, 1):
                raise shape_error(op, f"Invalid reduction dimension {int(a)} for input with "
                                      f"{rank} dimensions")
    return [(x.dtype.base_dtype, reduced_shape(x.shape, axes, op.attrs["keep_dims"]))]


def _argmax_infer(op):
    x, axis_t = op.inputs
    axis = constant_value(axis_t)
    return [(op.attrs["output_type"], reduced_shape(x.shape, axis, False))]


def _add_n_infer(op):
    dtype = same_dtype_inputs(op, tuple(f"inputs[{i}]" for i in range(len(op.inputs))))
    shape = op.inputs[0].shape
    for t in op.inputs[1:]:
        if not shape.is_compatible_with(t.shape):
            raise shape_error(op, "Shapes must be equal")
        shape = shape.merge_with(t.shape)
    return [(dtype, shape)]


def _broadcast_gradient_args_infer(op):
    return [(dtypes.int32, TensorShape([None])), (dtypes.int32, TensorShape([None]))]


for _name in ("Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow",
              "SquaredDifference"):
    register_op(_name, _binary_infer)
for _name in ("Equal", "Less", "Greater"):
    register_op(_name, _compare_infer)
for _name in ("Neg", "Square", "Abs"):
    register_op(_name, _unary_infer)
for _name in ("Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal"):
    register_op(_name, _float_unary_infer)
for _name in ("SigmoidGrad", "TanhGrad"):
    register_op(_name, _grad_pair_infer)
register_op("MatMul", _matmul_infer)
register_op("Sum", _reduce_infer)
register_op("Mean", _reduce_infer)
register_op("Max", _reduce_infer)
register_op("ArgMax", _argmax_infer)
register_op("AddN", _add_n_infer)
register_op("BroadcastGradientArgs", _broadcast_gradient_args_infer)


# -- tf.* builders -----------------------------------------------------------------------

def _is_graph_value(v) -> bool:
    return isinstance(v, Tensor) or hasattr(v, "_as_graph_element")


def _convert_pair(x, y, x_name: str, y_name: str):
    """Python values take the dtype of the tensor beside them; two tensors keep their own
    dtypes, so a mismatch surfaces as TF's TypeError from the op's dtype check."""
    if not _is_graph_value(x) and _is_graph_value(y):
        y = convert_to_tensor(y, name=y_name)
        return convert_to_tensor(x, dtype=y.dtype.base_dtype, name=x_name), y
    x = convert_to_tensor(x, name=x_name)
    if _is_graph_value(y):
        return x, convert_to_tensor(y, name=y_name)
    return x, convert_to_tensor(y, dtype=x.dtype.base_dtype, name=y_name)


def _binary(op_type: str, x, y, name, default_name=None):
    g = graph_of(x, y)
    with op_scope(g, name, default_name or op_type) as scope:
        x, y = _convert_pair(x, y, "x", "y")
        return g.create_op(op_type, [x, y], {"T": x.dtype.base_dtype}, name=scope).outputs[0]


def _unary(op_type: str, x, name):
    x = convert_to_tensor(x)
    return graph_of(x).create_op(op_type, [x], {"T": x.dtype.base_dtype},
                                 name=name or op_type).outputs[0]


def add(x, y, name=None):
    return _binary("Add", x, y, name)


def subtract(x, y, name=None):
    return _binary("Sub", x, y, name)


def multiply(x, y, name=None):
    return _binary("Mul", x, y, name)


def divide(x, y, name=None):
    """True division; integer inputs are cast to float64 first, as TF's truediv does."""
    if _is_graph_value(x) or _is_graph_value(y):
        tensor = x if _is_graph_value(x) else y
        dtype = convert_to_tensor(tensor).dtype.base_dtype
        if dtype.is_integer:
            g = graph_of(x, y)
            with op_scope(g, name, "truediv") as scope:
                x, y = _convert_pair(x, y, "x", "y")
                x, y = (_cast(t, dtypes.float64) for t in (x, y))
                return g.create_op("RealDiv", [x, y], {"T": dtypes.float64},
                                   name=scope).outputs[0]
    return _binary("RealDiv", x, y, name, "truediv")


truediv = divide


def _cast(t, dtype):
    from engine.ops.array_ops import cast
    return cast(t, dtype)


def maximum(x, y, name=None):
    return _binary("Maximum", x, y, name)


def minimum(x, y, name=None):
    return _binary("Minimum", x, y, name)


def pow(x, y, name=None):  # noqa: A001 - TF's name
    return _binary("Pow", x, y, name)


def squared_difference(x, y, name=None):
    return _binary("SquaredDifference", x, y, name)


def equal(x, y, name=None):
    return _binary("Equal", x, y, name)


def less(x, y, name=None):
    return _binary("Less", x, y, name)


def greater(x, y, name=None):
    return _binary("Greater", x, y, name)


def negative(x, name=None):
    return _unary("Neg", x, name)


def square(x, name=None):
    return _unary("Square", x, name)


def abs(x, name=None):  # noqa: A001 - TF's name
    return _unary("Abs", x, name)


def sigmoid(x, name=None):
    return _unary("Sigmoid", x, name)


def tanh(x, name=None):
    return _unary("Tanh", x, name)


def exp(x, name=None):
    return _unary("Exp", x, name)


def log(x, name=None):
    return _unary("Log", x, name)


def sqrt(x, name=None):
    return _unary("Sqrt", x, name)


def reciprocal(x, name=None):
    return _unary("Reciprocal", x, name)


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    g = graph_of(a, b)
    with op_scope(g, name, "MatMul") as scope:
        a, b = _convert_pair(a, b, "a", "b")
        return g.create_op("MatMul", [a, b], {"T": a.dtype.base_dtype,
                                              "transpose_a": bool(transpose_a),
                                              "transpose_b": bool(transpose_b)},
                           name=scope).outputs[0]


def _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices=None,
            keep_dims=None):
    if axis is None:
        axis = reduction_indices
    if keep_dims is not None:
        keepdims = keep_dims
    x = convert_to_tensor(input_tensor)
    g = graph_of(x)
    with op_scope(g, name, op_type) as scope:
        if axis is None:
            if x.shape.ndims is None:
                raise ValueError(f"{op_type} over all axes needs a tensor of known rank; "
                                 f"'{x.name}' has unknown rank. Pass axis explicitly.")
            axis = list(range(x.shape.ndims))
        axes = convert_to_tensor(axis, dtype=dtypes.int32, name="reduction_indices")
        return g.create_op(op_type, [x, axes], {"T": x.dtype.base_dtype,
                                                "Tidx": dtypes.int32,
                                                "keep_dims": bool(keepdims)},
                           name=scope).outputs[0]


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
                keep_dims=None):
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    if axis is None:
        axis = dimension if dimension is not None else 0
    x = convert_to_tensor(input)
    g = graph_of(x)
    with op_scope(g, name, "ArgMax") as scope:
        axis_t = convert_to_tensor(axis, dtype=dtypes.int32, name="dimension")
        return g.create_op("ArgMax", [x, axis_t], {"T": x.dtype.base_dtype, "Tidx": dtypes.int32,
                                                   "output_type": dtypes.as_dtype(output_type)},
                           name=scope).outputs[0]


def add_n(inputs, name=None):
    inputs = [convert_to_tensor(t) for t in inputs]
    if not inputs:
        raise ValueError("inputs must be a non-empty list of tensors")
    if len(inputs) == 1:
        return inputs[0] if name is None else graph_of(inputs).create_op(
            "Identity", inputs, {"T": inputs[0].dtype.base_dtype}, name=name).outputs[0]
    return graph_of(inputs).create_op("AddN", inputs, {"T": inputs[0].dtype.base_dtype,
                                                       "N": len(inputs)},
                                      name=name or "AddN").outputs[0]


def broadcast_gradient_args(s0, s1, name=None):
    op = graph_of(s0, s1).create_op("BroadcastGradientArgs", [s0, s1], {"T": dtypes.int32},
                                    name=name or "BroadcastGradientArgs")
    return op.outputs


# -- Tensor operators ----------------------------------------------------------------------

def _binary_operator(fn, op_name):
    def forward(self, other):
        return fn(self, other, name=op_name)

    def reverse(self, other):
        return fn(other, self, name=op_name)
    return forward, reverse


def install_operators(cls) -> None:
    """Gives Tensor (and Variable) `+ - * / @`, unary minus and comparisons, with TF's
    lower-case op names (`add`, `sub`, `mul`, `truediv`, `matmul`)."""
    table = {"add": (add, "add"), "sub": (subtract, "sub"), "mul": (multiply, "mul"),
             "truediv": (divide, "truediv"), "matmul": (matmul, "matmul"),
             "pow": (pow, "pow")}
    for dunder, (fn, op_name) in table.items():
        forward, reverse = _binary_operator(fn, op_name)
        setattr(cls, f"__{dunder}__", forward)
        setattr(cls, f"__r{dunder}__", reverse)
    cls.__neg__ = lambda self: negative(self, name="Neg")
    cls.__abs__ = lambda self: abs(self, name="Abs")
    cls.__lt__ = lambda self, other: less(self, other, name="Less")
    cls.__gt__ = lambda self, other: greater(self, other, name="Greater")


install_operators(Tensor)
