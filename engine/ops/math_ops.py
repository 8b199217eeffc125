"""Math ops: elementwise arithmetic, comparisons and logic, unary functions, MatMul and
BatchMatMulV2, AddN and gradient helpers; their tf.* builders and Tensor's operators. api.py
star-imports this module, so it re-exports reduction_ops and clip_ops too."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.graph import Tensor
from engine.ops import clip_ops, reduction_ops
from engine.ops.clip_ops import *  # noqa: F401,F403
from engine.ops.core import (
    check_dtype_allowed,
    convert_to_tensor,
    graph_of,
    make_constant,
    op_scope,
    refuse_quantized,
    same_dtype_inputs,
    shape_error,
)
from engine.ops.reduction_ops import *  # noqa: F401,F403,A004
from engine.ops.reduction_ops import reduce_max, reduce_sum
from engine.ops.registry import register_op
from engine.shapes import TensorShape, broadcast_shapes

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "abs",
    "add",
    "add_n",
    "ceil",
    "count_nonzero",
    "div",
    "div_no_nan",
    "divide",
    "equal",
    "erf",
    "exp",
    "expm1",
    "floor",
    "floor_div",
    "floordiv",
    "floormod",
    "greater",
    "greater_equal",
    "is_finite",
    "is_inf",
    "is_nan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "sin",
    "cos",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matmul",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "multiply_no_nan",
    "negative",
    "not_equal",
    "pow",
    "realdiv",
    "reciprocal",
    "reduce_logsumexp",
    "rint",
    "round",
    "rsqrt",
    "scalar_mul",
    "sigmoid",
    "sign",
    "sqrt",
    "square",
    "squared_difference",
    "subtract",
    "tanh",
    "to_double",
    "to_float",
    "to_int32",
    "to_int64",
    "truediv",
    "truncatediv",
    "truncatemod",
] + reduction_ops.__all__ + clip_ops.__all__

# TF's dtype lists, in the order its TypeError messages print them.
TF_FLOATS = (dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64)
TF_COMPLEX = (dtypes.complex64, dtypes.complex128)
TF_INTS = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
TF_REAL = TF_FLOATS + (dtypes.uint8,) + TF_INTS


# -- shape and dtype inference ---------------------------------------------------------------

def broadcast_error(op, a: TensorShape, b: TensorShape) -> ValueError:
    bad = next((x, y) for x, y in zip(reversed(a.dims), reversed(b.dims))
               if x not in (1, None) and y not in (1, None) and x != y)
    return shape_error(op, f"Dimensions must be equal, but are {bad[0]} and {bad[1]}")


def _binary_infer(op):
    dtype = same_dtype_inputs(op)
    a, b = op.inputs[0].shape, op.inputs[1].shape
    out = broadcast_shapes(a, b)
    if out is None:
        raise broadcast_error(op, a, b)
    return [(dtype, out)]


def _typed(infer, allowed):
    """An inference function that first applies TF's dtype list for input `x`."""
    def typed_infer(op):
        check_dtype_allowed(op, op.inputs[0].dtype, allowed, arg="x")
        return infer(op)
    return typed_infer


def _compare_infer(op):
    (_, shape), = _binary_infer(op)
    return [(dtypes.bool, shape)]


def _unary_infer(op):
    refuse_quantized(op, op.inputs[0].dtype)
    return [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape)]


def _predicate_infer(op):
    return [(dtypes.bool, op.inputs[0].shape)]


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


def _batch_matmul_infer(op):
    """Matrices in the last two dims, batch dims broadcast (TF's BatchMatMulV2)."""
    dtype = same_dtype_inputs(op)
    a, b = op.inputs[0].shape, op.inputs[1].shape
    for s in (a, b):
        if s.ndims is not None and s.ndims < 2:
            raise shape_error(op, f"Shape must be at least rank 2 but is rank {s.ndims}")
    if a.ndims is None or b.ndims is None:
        return [(dtype, TensorShape(None))]
    m, ka = (a[-1], a[-2]) if op.attrs["adj_x"] else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if op.attrs["adj_y"] else (b[-2], b[-1])
    if ka is not None and kb is not None and ka != kb:
        raise shape_error(op, f"Dimensions must be equal, but are {ka} and {kb}")
    batch = broadcast_shapes(a[:-2], b[:-2])
    if batch is None:
        raise broadcast_error(op, a[:-2], b[:-2])
    return [(dtype, TensorShape(list(batch.dims) + [m, n]))]


def _add_n_infer(op):
    dtype = same_dtype_inputs(op, tuple(f"inputs[{i}]" for i, _ in enumerate(op.inputs)))
    shape = op.inputs[0].shape
    for t in op.inputs[1:]:
        if not shape.is_compatible_with(t.shape):
            raise shape_error(op, "Shapes must be equal")
        shape = shape.merge_with(t.shape)
    return [(dtype, shape)]


def _broadcast_gradient_args_infer(op):
    return [(dtypes.int32, TensorShape([None])), (dtypes.int32, TensorShape([None]))]


_BOOL = (dtypes.bool,)
for _name in ("Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow",
              "SquaredDifference"):
    register_op(_name, _binary_infer)
for _name in ("FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod"):
    register_op(_name, _typed(_binary_infer, TF_REAL))
for _name in ("MulNoNan", "DivNoNan"):
    register_op(_name, _typed(_binary_infer, TF_FLOATS + TF_COMPLEX))
for _name in ("Equal", "NotEqual", "Less", "Greater", "LessEqual", "GreaterEqual"):
    register_op(_name, _compare_infer)
for _name in ("LogicalAnd", "LogicalOr"):
    register_op(_name, _typed(_compare_infer, _BOOL))
register_op("LogicalNot", _typed(_unary_infer, _BOOL))
for _name in ("Neg", "Square", "Abs"):
    register_op(_name, _unary_infer)
for _name in ("Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal"):
    register_op(_name, _float_unary_infer)
for _name in ("Log1p", "Expm1", "Rsqrt", "Sin", "Cos"):
    register_op(_name, _typed(_unary_infer, TF_FLOATS + TF_COMPLEX))
for _name in ("Floor", "Ceil", "Rint", "Erf"):
    register_op(_name, _typed(_unary_infer, TF_FLOATS))
for _name in ("Round", "Sign"):
    register_op(_name, _typed(_unary_infer, TF_FLOATS + TF_INTS + TF_COMPLEX))
for _name in ("IsFinite", "IsNan", "IsInf"):
    register_op(_name, _typed(_predicate_infer, TF_FLOATS))
for _name in ("SigmoidGrad", "TanhGrad"):
    register_op(_name, _grad_pair_infer)
register_op("RsqrtGrad", _typed(_grad_pair_infer, TF_FLOATS + TF_COMPLEX))
register_op("MatMul", _matmul_infer)
register_op("BatchMatMulV2", _batch_matmul_infer)
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


def scalar_mul(scalar, x, name=None):
    """`scalar * x` for a 0-d `scalar` (TF1's tf.scalar_mul); anything else is a ValueError."""
    x = convert_to_tensor(x)
    with graph_of(x).as_default():
        scalar = convert_to_tensor(scalar, dtype=x.dtype.base_dtype, name="scalar")
    if scalar.shape.ndims != 0:
        raise ValueError(f"The input scalar must be a 0-D value. Received shape "
                         f"{scalar.shape}.")
    return _binary("Mul", scalar, x, name)


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


def realdiv(x, y, name=None):
    return _binary("RealDiv", x, y, name)


def div(x, y, name=None):
    """TF1's tf.div (Python 2 division): floor division for integers, real division for
    floats, so div(-7, 2) is -4 and div(-7., 2.) is -3.5."""
    g = graph_of(x, y)
    with op_scope(g, name, "div") as scope:
        x, y = _convert_pair(x, y, "x", "y")
        dtype = x.dtype.base_dtype
        if dtype is not y.dtype.base_dtype:
            raise TypeError(f"x and y must have the same dtype, got {dtype!r} != "
                            f"{y.dtype.base_dtype!r}")
        op_type = "RealDiv" if dtype.is_floating or dtype.is_complex else "FloorDiv"
        return g.create_op(op_type, [x, y], {"T": dtype}, name=scope).outputs[0]


def floordiv(x, y, name=None):
    """Division rounded toward negative infinity, for integers and floats alike:
    floordiv(-7, 2) is -4; integer division by zero is an InvalidArgumentError."""
    return _binary("FloorDiv", x, y, name, "floordiv")


def floor_div(x, y, name=None):
    return _binary("FloorDiv", x, y, name)


def floormod(x, y, name=None):
    """The remainder of floordiv, with the sign of the divisor: floormod(-7, 2) is 1."""
    return _binary("FloorMod", x, y, name)


mod = floormod


def truncatediv(x, y, name=None):
    """Division rounded toward zero: truncatediv(-7, 2) is -3."""
    return _binary("TruncateDiv", x, y, name)


def truncatemod(x, y, name=None):
    """The remainder of truncatediv, with the sign of the dividend (C's fmod)."""
    return _binary("TruncateMod", x, y, name)


def div_no_nan(x, y, name=None):
    """x / y, and 0 wherever y is 0 (even where x is 0, inf or NaN)."""
    return _binary("DivNoNan", x, y, name, "div_no_nan")


def multiply_no_nan(x, y, name=None):
    """x * y, and 0 wherever y is 0 (even where x is inf or NaN)."""
    return _binary("MulNoNan", x, y, name, "multiply_no_nan")


def _cast(t, dtype):
    from engine.ops.array_ops import cast
    return cast(t, dtype)


def to_float(x, name="ToFloat"):
    return _cast_named(x, dtypes.float32, name)


def to_double(x, name="ToDouble"):
    return _cast_named(x, dtypes.float64, name)


def to_int32(x, name="ToInt32"):
    return _cast_named(x, dtypes.int32, name)


def to_int64(x, name="ToInt64"):
    return _cast_named(x, dtypes.int64, name)


def _cast_named(x, dtype, name):
    from engine.ops.array_ops import cast
    return cast(x, dtype, name=name)


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


def not_equal(x, y, name=None):
    return _binary("NotEqual", x, y, name)


def less(x, y, name=None):
    return _binary("Less", x, y, name)


def less_equal(x, y, name=None):
    return _binary("LessEqual", x, y, name)


def greater(x, y, name=None):
    return _binary("Greater", x, y, name)


def greater_equal(x, y, name=None):
    return _binary("GreaterEqual", x, y, name)


def logical_and(x, y, name=None):
    return _binary("LogicalAnd", x, y, name)


def logical_or(x, y, name=None):
    return _binary("LogicalOr", x, y, name)


def logical_not(x, name=None):
    return _unary("LogicalNot", x, name)


def logical_xor(x, y, name=None):
    """TF's composite: (x or y) and not (x and y), the last op named `LogicalXor`."""
    g = graph_of(x, y)
    with op_scope(g, name, "LogicalXor") as scope:
        x, y = _convert_pair(x, y, "x", "y")
        either = logical_or(x, y)
        both = logical_not(logical_and(x, y))
        return g.create_op("LogicalAnd", [either, both], {"T": dtypes.bool},
                           name=scope).outputs[0]


def negative(x, name=None):
    return _unary("Neg", x, name)


def square(x, name=None):
    return _unary("Square", x, name)


def abs(x, name=None):  # noqa: A001 - TF's name
    return _unary("Abs", x, name)


def sign(x, name=None):
    """-1, 0 or 1 by the sign of x (0 for -0.0; NaN stays NaN)."""
    return _unary("Sign", x, name)


def sigmoid(x, name=None):
    return _unary("Sigmoid", x, name)


def tanh(x, name=None):
    return _unary("Tanh", x, name)


def exp(x, name=None):
    return _unary("Exp", x, name)


def expm1(x, name=None):
    return _unary("Expm1", x, name)


def log(x, name=None):
    return _unary("Log", x, name)


def sin(x, name=None):
    return _unary("Sin", x, name)


def cos(x, name=None):
    return _unary("Cos", x, name)


def log1p(x, name=None):
    return _unary("Log1p", x, name)


def sqrt(x, name=None):
    return _unary("Sqrt", x, name)


def rsqrt(x, name=None):
    return _unary("Rsqrt", x, name)


def reciprocal(x, name=None):
    return _unary("Reciprocal", x, name)


def erf(x, name=None):
    return _unary("Erf", x, name)


def floor(x, name=None):
    return _unary("Floor", x, name)


def ceil(x, name=None):
    return _unary("Ceil", x, name)


def round(x, name=None):  # noqa: A001 - TF's name
    """Rounds half to even (banker's rounding): round(2.5) is 2, round(-0.5) is -0."""
    return _unary("Round", x, name)


def rint(x, name=None):
    return _unary("Rint", x, name)


def is_finite(x, name=None):
    return _unary("IsFinite", x, name)


def is_nan(x, name=None):
    return _unary("IsNan", x, name)


def is_inf(x, name=None):
    return _unary("IsInf", x, name)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    """Rank-2 inputs give MatMul; anything else (rank > 2 or unknown) gives BatchMatMulV2 with
    broadcast batch dims, transposes mapped onto adj_x/adj_y (as TF 1.14+ dispatches).
    `a_is_sparse`/`b_is_sparse` are TF's performance hints: the product is the same dense
    one."""
    for t_flag, adj_flag, which in ((transpose_a, adjoint_a, "a"), (transpose_b, adjoint_b, "b")):
        if t_flag and adj_flag:
            raise ValueError(f"Only one of `transpose_{which}` and `adjoint_{which}` can be "
                             f"True. Received `transpose_{which}`={t_flag}, "
                             f"`adjoint_{which}`={adj_flag}.")
    g = graph_of(a, b)
    with op_scope(g, name, "MatMul") as scope:
        a, b = _convert_pair(a, b, "a", "b")
        adj_a, adj_b = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
        complex_adjoint = a.dtype.is_complex and (adjoint_a or adjoint_b)
        batched = any(t.shape.ndims is None or t.shape.ndims > 2 for t in (a, b))
        if not batched and not complex_adjoint:
            return g.create_op("MatMul", [a, b], {"T": a.dtype.base_dtype, "transpose_a": adj_a,
                                                  "transpose_b": adj_b}, name=scope).outputs[0]
        if a.dtype.is_complex and (transpose_a or transpose_b):
            raise NotImplementedError("matmul with transpose_a/transpose_b of complex batches "
                                      "needs conj, which this engine has not got; use "
                                      "adjoint_a/adjoint_b.")
        return g.create_op("BatchMatMulV2", [a, b], {"T": a.dtype.base_dtype, "adj_x": adj_a,
                                                     "adj_y": adj_b}, name=scope).outputs[0]


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


# -- composite reductions -------------------------------------------------------------------

def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None,
                     reduction_indices=None, keep_dims=None):
    """log(sum(exp(x))) computed stably, as TF does: the (finite) max is subtracted first
    and added back, so reduce_logsumexp([1000., 1000.5]) is finite; an infinite max counts
    as 0 and a row of -inf gives -inf."""
    from engine.ops.array_ops import reshape, shape, stop_gradient
    axis = reduction_ops._one_of(axis, reduction_indices, "axis", "reduction_indices")
    keepdims = bool(reduction_ops._one_of(keepdims, keep_dims, "keepdims", "keep_dims"))
    x = convert_to_tensor(input_tensor)
    g = graph_of(x)
    with op_scope(g, name, "ReduceLogSumExp") as scope:
        raw_max = reduce_max(x, axis=axis, keepdims=True)
        finite = _cast(is_finite(raw_max), raw_max.dtype.base_dtype)
        # MulNoNan zeroes an infinite max exactly where TF uses where(is_finite, max, 0).
        my_max = stop_gradient(multiply_no_nan(raw_max, finite))
        result = log(reduce_sum(exp(subtract(x, my_max)), axis, keepdims=keepdims))
        if not keepdims:
            target = result.shape.as_list() if result.shape.is_fully_defined() else None
            my_max = reshape(my_max, np.asarray(target, np.int32) if target is not None
                             else shape(result))
        out = g.create_op("Add", [result, my_max], {"T": result.dtype.base_dtype},
                          name=scope).outputs[0]
    if axis is None and not keepdims:
        out.set_shape([])
    return out


def count_nonzero(input_tensor, axis=None, keepdims=None, dtype=dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None):
    """The number of non-zero elements along `axis` (all axes by default), as `dtype`."""
    x = convert_to_tensor(input_tensor, name="input_tensor")
    g = graph_of(x)
    with op_scope(g, name, "count_nonzero"):
        zero = make_constant(0, x.dtype.base_dtype, name="zeros")
        nonzero = _cast(not_equal(x, zero), dtypes.int64)
        total = reduce_sum(nonzero, axis=axis, keepdims=keepdims,
                           reduction_indices=reduction_indices, keep_dims=keep_dims)
        return _cast(total, dtypes.as_dtype(dtype))


# -- Tensor operators ----------------------------------------------------------------------

def _binary_operator(fn, op_name):
    def forward(self, other):
        return fn(self, other, name=op_name)

    def reverse(self, other):
        return fn(other, self, name=op_name)
    return forward, reverse


def install_operators(cls) -> None:
    """Gives Tensor (and Variable) Python's operators with TF's op names: `+ - * / // % **
    @` (`add`, `sub`, `mul`, `truediv`, `floordiv`, `mod`, `pow`, `matmul`), `& | ^` on bools
    (`and`, `or`, `xor`), `~`, unary minus, abs and the order comparisons."""
    table = {"add": (add, "add"), "sub": (subtract, "sub"), "mul": (multiply, "mul"),
             "truediv": (divide, "truediv"), "matmul": (matmul, "matmul"),
             "pow": (pow, "pow"), "floordiv": (floordiv, "floordiv"), "mod": (floormod, "mod"),
             "and": (logical_and, "and"), "or": (logical_or, "or"),
             "xor": (logical_xor, "xor")}
    for dunder, (fn, op_name) in table.items():
        forward, reverse = _binary_operator(fn, op_name)
        setattr(cls, f"__{dunder}__", forward)
        setattr(cls, f"__r{dunder}__", reverse)
    cls.__neg__ = lambda self: negative(self, name="Neg")
    cls.__abs__ = lambda self: abs(self, name="Abs")
    cls.__invert__ = lambda self: logical_not(self, name="LogicalNot")
    cls.__lt__ = lambda self, other: less(self, other, name="Less")
    cls.__le__ = lambda self, other: less_equal(self, other, name="LessEqual")
    cls.__gt__ = lambda self, other: greater(self, other, name="Greater")
    cls.__ge__ = lambda self, other: greater_equal(self, other, name="GreaterEqual")


install_operators(Tensor)
