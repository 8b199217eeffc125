"""Optimizers: the Optimizer base (compute_gradients / apply_gradients / minimize, slots and
non-slot variables, TF1's names and scopes), GradientDescentOptimizer, the slot creator that
optimizers and moving averages share, and the global step helpers."""

from __future__ import annotations

import contextlib
import logging

from engine import dtypes
from engine.graph import Graph, Tensor, get_default_graph
from engine.ops import array_ops, control_flow_ops, state_ops
from engine.ops.core import convert_to_tensor, make_constant
from engine.ops.variables import GraphKeys, Variable, trainable_variables
from engine.passes.gradients import gradients

logger = logging.getLogger("engine")
_VALID_DTYPES = (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16)


# -- slot variables -------------------------------------------------------------------------

def create_slot_with_initializer(primary, initializer, shape, dtype, name: str,
                                 colocate: bool = True) -> Variable:
    """A non-trainable variable `<primary op name>/<name>` (made unique: `w/Adam`, `w/Adam_1`),
    colocated with `primary` and initialized by `initializer(shape, dtype)`, built inside
    `<slot>/Initializer/` as TF's get_variable does."""
    with _slot_scope(primary, name, colocate) as (graph, scope):
        with graph.name_scope(scope), graph.name_scope("Initializer"):
            value = initializer(shape, dtype)
        return Variable(value, trainable=False, name=scope, dtype=dtype)


def create_slot(primary, value, name: str, colocate: bool = True) -> Variable:
    """A slot initialized from an existing tensor (`value`), e.g. a moving average that starts
    at the variable's initial value."""
    with _slot_scope(primary, name, colocate) as (_, scope):
        return Variable(value, trainable=False, name=scope)


def create_zeros_slot(primary, name: str, dtype=None, colocate: bool = True) -> Variable:
    dtype = dtypes.as_dtype(dtype or primary.dtype).base_dtype
    return create_slot_with_initializer(primary, zeros_initializer, primary.get_shape(), dtype,
                                        name, colocate)


@contextlib.contextmanager
def _slot_scope(primary, name: str, colocate: bool):
    """TF builds slots in init_scope (none of the surrounding control dependencies) under
    colocate_with(primary) (no device scope, the primary's colocation group), named by the
    variable scope `<primary>/<name>`, which ignores the current name scope. Yields the graph
    and the slot's unique scope (`w/Adam/`)."""
    graph = primary.graph
    with graph.as_default(), graph.name_scope(None), graph.control_dependencies(None), \
            (graph.colocate_with(primary.op) if colocate else contextlib.nullcontext()):
        with graph.name_scope(f"{primary.op.name}/{name}") as scope:
            pass
        yield graph, scope


def zeros_initializer(shape, dtype):
    return array_ops.zeros(_static_shape(shape), dtype=dtype, name="zeros")


def ones_initializer(shape, dtype):
    return array_ops.ones(_static_shape(shape), dtype=dtype, name="ones")


def constant_initializer(value):
    def initialize(shape, dtype):
        return make_constant(value, dtype, _static_shape(shape), name="Const")
    return initialize


def _static_shape(shape) -> list[int]:
    if not shape.is_fully_defined():
        raise ValueError(f"Slot variables need a fully defined shape, got {shape}; give the "
                         "primary variable a static shape.")
    return shape.as_list()


def _var_key(var) -> tuple:
    return (var.op.graph, var.op.name)


# -- the base class ---------------------------------------------------------------------------

class Optimizer:
    """TF1's optimizer protocol. Subclasses implement `_create_slots(var_list)`, `_prepare()`,
    `_apply_dense(grad, var)` and optionally `_finish(update_ops, name_scope)`."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict[str, dict[tuple, Variable]] = {}
        self._non_slot_dict: dict[tuple, Variable] = {}

    def get_name(self) -> str:
        return self._name

    # -- the public API ------------------------------------------------------------------------

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError(f"gate_gradients must be one of: Optimizer.GATE_NONE, "
                             f"Optimizer.GATE_OP, Optimizer.GATE_GRAPH.  Not {gate_gradients}")
        loss = convert_to_tensor(loss)
        self._assert_valid_dtypes([loss])
        var_list = list(var_list) if var_list is not None else trainable_variables()
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"Argument is not a tf.Variable: {v!r}")
        grads = gradients(loss, var_list, grad_ys=None if grad_loss is None else [grad_loss],
                          gate_gradients=gate_gradients == self.GATE_OP,
                          aggregation_method=aggregation_method,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == self.GATE_GRAPH:
            grads = control_flow_ops.tuple(grads)
        # As in TF, only variables that receive a gradient must be floating point.
        self._assert_valid_dtypes([v for g, v in zip(grads, var_list) if g is not None])
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = self._checked_pairs(grads_and_vars)
        var_list = [v for g, v in grads_and_vars if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[str(v) for _, v in grads_and_vars]}.")
        graph = var_list[0].graph
        with graph.as_default():
            with graph.control_dependencies(None):
                self._create_slots(var_list)
            with graph.name_scope(name or self._name) as scope:
                self._prepare()
                updates = []
                for grad, var in grads_and_vars:
                    if grad is None:
                        continue
                    with graph.name_scope("update_" + var.op.name), \
                            graph.colocate_with(var.op):
                        updates.append(self._apply_dense(grad, var))
                train_op = self._finish_with_step(graph, updates, global_step, scope)
        if train_op not in graph.get_collection(GraphKeys.TRAIN_OP):
            graph.add_to_collection(GraphKeys.TRAIN_OP, train_op)
        return train_op

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if not any(g is not None for g, _ in grads_and_vars):
            raise ValueError(f"No gradients provided for any variable, check your graph for ops "
                             f"that do not support gradients, between variables "
                             f"{[str(v) for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def get_slot(self, var, name: str):
        named = self._slots.get(name)
        if not named:
            return None
        return named.get(_var_key(var))

    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def variables(self) -> list[Variable]:
        """The optimizer's slot and non-slot variables in the default graph, sorted by name."""
        graph = get_default_graph()
        found = [v for v in self._non_slot_dict.values() if v.graph is graph]
        for per_var in self._slots.values():
            found.extend(v for v in per_var.values() if v.graph is graph)
        return sorted(found, key=lambda v: v.name)

    # -- helpers subclasses use --------------------------------------------------------------

    def _slot_dict(self, slot_name: str) -> dict[tuple, Variable]:
        return self._slots.setdefault(slot_name, {})

    def _zeros_slot(self, var, slot_name: str, op_name: str) -> Variable:
        named = self._slot_dict(slot_name)
        if _var_key(var) not in named:
            named[_var_key(var)] = create_zeros_slot(var, op_name)
        return named[_var_key(var)]

    def _get_or_make_slot_with_initializer(self, var, initializer, shape, dtype,
                                           slot_name: str, op_name: str) -> Variable:
        named = self._slot_dict(slot_name)
        if _var_key(var) not in named:
            named[_var_key(var)] = create_slot_with_initializer(var, initializer, shape, dtype,
                                                                op_name)
        return named[_var_key(var)]

    def _create_non_slot_variable(self, initial_value, name: str, colocate_with) -> Variable:
        """A variable the optimizer keeps once per graph (Adam's beta powers), colocated with
        `colocate_with` and named in the current name scope, as TF does."""
        graph = colocate_with.graph
        key = (name, graph)
        if key not in self._non_slot_dict:
            with graph.as_default(), graph.control_dependencies(None), \
                    graph.colocate_with(colocate_with.op):
                self._non_slot_dict[key] = Variable(initial_value, name=name, trainable=False)
        return self._non_slot_dict[key]

    def _get_non_slot_variable(self, name: str, graph=None):
        return self._non_slot_dict.get((name, graph or get_default_graph()))

    @staticmethod
    def _call_if_callable(param):
        return param() if callable(param) else param

    def _hyper(self, value, name: str) -> Tensor:
        return convert_to_tensor(self._call_if_callable(value), name=name)

    @staticmethod
    def _cast(t, var) -> Tensor:
        return array_ops.cast(t, var.dtype.base_dtype)

    # -- the protocol ----------------------------------------------------------------------------

    def _create_slots(self, var_list) -> None:
        pass

    def _prepare(self) -> None:
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply_dense")

    def _finish(self, update_ops, name_scope: str):
        return control_flow_ops.group(*update_ops, name=name_scope)

    # -- internals ---------------------------------------------------------------------------

    def _finish_with_step(self, graph: Graph, updates, global_step, scope: str):
        if global_step is None:
            return self._finish(updates, scope)
        with graph.control_dependencies([self._finish(updates, "update")]):
            with graph.colocate_with(global_step.op):
                return state_ops.assign_add(global_step, 1, name=scope).op

    @staticmethod
    def _checked_pairs(grads_and_vars) -> list:
        pairs = list(grads_and_vars)
        if not pairs:
            raise ValueError("No variables provided.")
        checked = []
        for g, v in pairs:
            if g is not None:
                try:
                    g = convert_to_tensor(g)
                except (TypeError, ValueError):
                    raise TypeError(f"Gradient must be convertible to a Tensor or "
                                    f"IndexedSlices, or None: {g}") from None
            if not isinstance(v, Variable):
                raise TypeError(f"Argument is not a tf.Variable: {v!r}")
            checked.append((g, v))
        return checked

    @staticmethod
    def _assert_valid_dtypes(tensors) -> None:
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in _VALID_DTYPES:
                raise ValueError(f"Invalid type tf.{dtype.name} for {t.name}, expected: "
                                 f"[{', '.join('tf.' + d.name for d in _VALID_DTYPES)}].")


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking: bool = False, name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor = None

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        return state_ops.apply_gradient_descent(var, self._cast(self._learning_rate_tensor, var),
                                                grad, use_locking=self._use_locking).op


# -- the global step ---------------------------------------------------------------------------

def get_global_step(graph=None):
    """The GLOBAL_STEP collection's variable, else the tensor named `global_step:0`, else None
    (several candidates: logged, None), as TF's training_util does."""
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        logger.error("Multiple tensors in global_step collection.")
        return None
    if found:
        return found[0]
    try:
        return graph.get_tensor_by_name("global_step:0")
    except KeyError:
        return None


def create_global_step(graph=None):
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None), graph.control_dependencies(None):
        with graph.name_scope("global_step") as scope, graph.name_scope("Initializer"):
            zeros = array_ops.zeros([], dtype=dtypes.int64, name="zeros")
        return Variable(zeros, trainable=False, name=scope,
                        collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    found = get_global_step(graph)
    return found if found is not None else create_global_step(graph)
