"""The public TF1-style API (graphs, ops, variables, gradients, Session, ConfigProto, tf.nn,
tf.train, tf.errors, the dtypes). `engine/__init__.py` loads this module on first use, so
`import engine.record` alone never imports torch."""

from __future__ import annotations

from engine import dtypes, errors  # noqa: F401
from engine.devices import DeviceSpec  # noqa: F401
from engine.dtypes import (DType, as_dtype, bfloat16, bool, complex64,  # noqa: F401,A004
                           complex128, double, float16, float32, float64, half, int8, int16,
                           int32, int64, qint8, qint32, quint8, uint8, uint16, uint32, uint64)
from engine.graph import (Graph, Operation, Tensor, get_default_graph,  # noqa: F401
                          reset_default_graph)
from engine.graph_def import (GraphDef, NodeDef, graph_def_from_json,  # noqa: F401
                              graph_def_to_json, import_graph_def)
from engine.ops import array_ops, control_flow_ops, math_ops, nn_ops, state_ops  # noqa: F401
from engine.ops import grads as _grads  # noqa: F401  (installs gradient rules)
from engine.ops.array_ops import (broadcast_to, cast, constant, expand_dims, fill,  # noqa: F401
                                  identity, ones, ones_like, placeholder, reshape, shape, size,
                                  stop_gradient, zeros, zeros_like)
from engine.ops.control_flow_ops import group, no_op, tuple  # noqa: F401,A004
from engine.ops.core import convert_to_tensor  # noqa: F401
from engine.ops.math_ops import (abs, add, add_n, argmax, divide, equal, exp,  # noqa: F401,A004
                                 greater, less, log, matmul, maximum, minimum, multiply,
                                 negative, pow, reduce_max, reduce_mean, reduce_sum, sigmoid,
                                 sqrt, square, squared_difference, subtract, tanh)
from engine.ops.state_ops import assign, assign_add, assign_sub  # noqa: F401
from engine.ops.variables import (GraphKeys, Variable, global_variables,  # noqa: F401
                                  global_variables_initializer, local_variables_initializer,
                                  trainable_variables, variables_initializer)
from engine.passes.gradients import AggregationMethod, gradients  # noqa: F401
from engine.runtime.config import ConfigProto, GPUOptions, RunMetadata, RunOptions  # noqa: F401
from engine.runtime.session import (InteractiveSession, Session,  # noqa: F401
                                    get_default_session)
from engine.shapes import TensorShape  # noqa: F401

from engine import nn, train  # noqa: E402,F401  (namespaces built on the ops above)

truediv = divide


def name_scope(name, default_name=None, values=None):
    """tf.name_scope: scopes op names on the graph of `values` (else the default graph)."""
    from engine.ops.core import graph_of
    graph = graph_of(values) if values else get_default_graph()
    if name is None and default_name is None:
        return graph.name_scope(None)
    return graph.name_scope(name if name is not None else default_name)


def device(device_name_or_function):
    """tf.device on the default graph (nested string specs merge; None resets)."""
    return get_default_graph().device(device_name_or_function)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def colocate_with(op, ignore_existing=False):
    return get_default_graph().colocate_with(op, ignore_existing)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations", "contextlib")]

from engine import compat  # noqa: E402,F401
