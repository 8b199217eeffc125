"""The public TF1-style API (graphs, ops, variables, gradients, Session, ConfigProto, tf.nn,
tf.train, tf.errors, the dtypes). `engine/__init__.py` loads this module on first use, so
`import engine.record` alone never imports torch."""

from __future__ import annotations

from engine import dtypes, errors, nn, quantization, summary, train  # noqa: F401  # noqa: E402,F401  (namespaces built on the ops above)
from engine.devices import DeviceSpec  # noqa: F401
from engine.dtypes import (  # noqa: F401,A004
    DType,
    as_dtype,
    bfloat16,
    bool,
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    qint8,
    qint16,
    qint32,
    quint8,
    quint16,
    resource,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
)
from engine.graph import Graph, Operation, Tensor, get_default_graph, reset_default_graph  # noqa: F401
from engine.graph_def import (  # noqa: F401
    GraphDef,
    NodeDef,
    graph_def_from_json,
    graph_def_to_json,
    import_graph_def,
)
from engine.graph_io import *  # noqa: F401,F403
from engine.ops import (  # noqa: F401  (raw_ops: tf.raw_ops, the quantized ops)
    array_ops,
    control_flow_ops,
    debug_ops,
    embedding_ops,
    init_ops,
    math_ops,
    nn_ops,
    quantized_ops,
    random_ops,
    raw_ops,
    state_ops,
    summary_ops,
    training_ops,
    variable_scope,
)
from engine.ops import grads as _grads  # noqa: F401  (installs gradient rules)

# Each op module lists the tf.* names it owns in its __all__.
from engine.ops.array_ops import *  # noqa: F401,F403,E402
from engine.ops.cond import *  # noqa: F401,F403
from engine.ops.control_flow_ops import *  # noqa: F401,F403,A004
from engine.ops.core import convert_to_tensor  # noqa: F401
from engine.ops.debug_ops import *  # noqa: F401,F403
from engine.ops.fake_quant_ops import *  # noqa: F401,F403
from engine.ops.functional_ops import *  # noqa: F401,F403
from engine.ops.init_ops import *  # noqa: F401,F403
from engine.ops.math_ops import *  # noqa: F401,F403,A004
from engine.ops.quantized_ops import *  # noqa: F401,F403
from engine.ops.random_ops import *  # noqa: F401,F403
from engine.ops.state_ops import *  # noqa: F401,F403
from engine.ops.tensor_array_ops import *  # noqa: F401,F403
from engine.ops.variable_scope import *  # noqa: F401,F403
from engine.ops.variables import *  # noqa: F401,F403
from engine.ops.while_loop import *  # noqa: F401,F403
from engine.passes.gradients import AggregationMethod, gradients  # noqa: F401
from engine.runtime.config import ConfigProto, GPUOptions, RunMetadata, RunOptions  # noqa: F401
from engine.runtime.session import InteractiveSession, Session, get_default_session  # noqa: F401
from engine.shapes import TensorShape  # noqa: F401
from engine.summary import HistogramProto, SessionLog, Summary, SummaryMetadata  # noqa: F401


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
