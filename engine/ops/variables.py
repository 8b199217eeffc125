"""tf.Variable (TF1's ref variable: VariableV2 + `<name>/Assign` initializer + `<name>/read`
snapshot colocated with it), the variable collections and their initializers."""

from __future__ import annotations

from engine import dtypes
from engine.graph import get_default_graph
from engine.ops import array_ops, control_flow_ops, state_ops
from engine.ops.array_ops import install_slicing
from engine.ops.core import convert_to_tensor, graph_of
from engine.ops.math_ops import install_operators
from engine.shapes import TensorShape

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "GraphKeys",
    "Variable",
    "get_collection_ref",
    "global_variables",
    "global_variables_initializer",
    "local_variables",
    "local_variables_initializer",
    "model_variables",
    "moving_average_variables",
    "trainable_variables",
    "variables_initializer",
]


class GraphKeys:
    """TF1's standard collection names."""
    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SUMMARIES = "summaries"
    SUMMARY_OP = "summary_op"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    REGULARIZATION_LOSSES = "regularization_losses"
    LOSSES = "losses"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    TRAIN_OP = "train_op"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"


class Variable:
    """A mutable tensor that lives across Session.run calls, on one device."""

    def __init__(self, initial_value=None, trainable=True, collections=None,
                 validate_shape=True, caching_device=None, name=None, dtype=None,
                 expected_shape=None, constraint=None, use_resource=None):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if use_resource:
            raise NotImplementedError(f"use_resource=True for variable '{name}': this engine has "
                                      "TF1's ref variables only; leave use_resource unset.")
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        g = graph_of(initial_value)
        # TF's init_scope: a variable never waits on the control dependencies around it.
        with g.as_default(), g.control_dependencies(None), \
                g.name_scope(name or "Variable") as scope:
            self._initial_value = _initial_tensor(g, initial_value, dtype, scope[:-1])
            shape = self._initial_value.shape if validate_shape else TensorShape(None)
            if validate_shape and not shape.is_fully_defined():
                raise ValueError(f"initial_value must have a shape specified: "
                                 f"{self._initial_value}")
            self._variable = state_ops.variable_op(shape, self._initial_value.dtype, name=scope)
            self._initializer_op = state_ops.assign(self._variable, self._initial_value,
                                                    validate_shape=validate_shape,
                                                    name="Assign").op
            if caching_device is not None:
                with g.device(caching_device):
                    self._snapshot = array_ops.identity(self._variable, name="read")
            else:
                with g.colocate_with(self._variable.op):
                    self._snapshot = array_ops.identity(self._variable, name="read")
        self._trainable = trainable
        self._constraint = constraint
        self._caching_device = caching_device
        collections = list(collections) if collections is not None else \
            [GraphKeys.GLOBAL_VARIABLES]
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        for key in collections:
            g.add_to_collection(key, self)

    # -- identity -------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._variable.name

    @property
    def op(self):
        return self._variable.op

    @property
    def graph(self):
        return self._variable.graph

    @property
    def device(self) -> str:
        return self._variable.device

    @property
    def dtype(self) -> dtypes.DType:
        return self._variable.dtype

    @property
    def shape(self) -> TensorShape:
        return self._variable.shape

    def get_shape(self) -> TensorShape:
        return self._variable.shape

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def constraint(self):
        return self._constraint

    @property
    def caching_device(self):
        return self._caching_device

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self):
        return self._initial_value

    def value(self):
        return self._snapshot

    def read_value(self):
        return array_ops.identity(self._variable, name="read")

    def _ref(self):
        return self._variable

    def _as_graph_element(self):
        return self._snapshot

    # -- updates --------------------------------------------------------------------------

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return state_ops.assign(self._variable, value, use_locking=use_locking, name=name)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)

    def eval(self, session=None):
        return self._snapshot.eval(session=session)

    def load(self, value, session=None):
        from engine.runtime.session import default_session_for
        default_session_for(self.graph, session).run(
            self._initializer_op, {self._initializer_op.inputs[1]: value})

    def __repr__(self) -> str:
        return (f"<tf.Variable '{self.name}' shape={self.shape} "
                f"dtype={self.dtype.name}>")

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other


install_operators(Variable)
install_slicing(Variable)


def _initial_tensor(g, initial_value, dtype, var_name: str):
    """TF1: a callable initial value is built in `<var>/Initializer/`, outside every device
    scope and colocated with the variable it initializes (which does not exist yet)."""
    if not callable(initial_value):
        return convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
    first = len(g.get_operations())
    with g.name_scope("Initializer"), g.device(None):
        value = convert_to_tensor(initial_value(), dtype=dtype, name="initial_value")
    for op in g.get_operations()[first:]:
        op.attrs.setdefault("_class", [f"loc:@{var_name}"])
    return value


def global_variables(scope=None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def trainable_variables(scope=None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope=None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope=None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def get_collection_ref(key) -> list:
    """The default graph's collection list itself (appending to it adds to the graph)."""
    return get_default_graph().get_collection_ref(key)


def variables_initializer(var_list, name="init"):
    if var_list:
        return control_flow_ops.group(*[v.initializer for v in var_list], name=name)
    return control_flow_ops.no_op(name=name)


def global_variables_initializer():
    return variables_initializer(global_variables(), name="init")


def local_variables_initializer():
    return variables_initializer(local_variables(), name="init")


def is_variable_initialized(variable):
    raise NotImplementedError("is_variable_initialized needs the IsVariableInitialized op, "
                              "which this engine does not have yet.")
