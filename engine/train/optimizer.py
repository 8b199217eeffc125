"""Optimizers: the Optimizer base (compute_gradients / apply_gradients / minimize, TF1's
names and scopes) and GradientDescentOptimizer; the global step helpers."""

from __future__ import annotations

from engine import dtypes
from engine.graph import get_default_graph
from engine.ops import array_ops, control_flow_ops, state_ops
from engine.ops.core import convert_to_tensor
from engine.ops.variables import GraphKeys, Variable, trainable_variables
from engine.passes.gradients import gradients


class Optimizer:
    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name

    def get_name(self) -> str:
        return self._name

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError(f"gate_gradients must be one of: Optimizer.GATE_NONE, "
                             f"Optimizer.GATE_OP, Optimizer.GATE_GRAPH.  Not {gate_gradients}")
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
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        if not any(g is not None for g, _ in grads_and_vars):
            names = [v.name for _, v in grads_and_vars]
            raise ValueError(f"No gradients provided for any variable, check your graph for ops "
                             f"that do not support gradients, between variables {names} and "
                             "loss.")
        graph = get_default_graph()
        with graph.name_scope(name or self._name) as scope:
            self._prepare()
            updates = []
            for grad, var in grads_and_vars:
                if grad is None:
                    continue
                with graph.name_scope("update_" + var.op.name), graph.colocate_with(var.op):
                    updates.append(self._apply_dense(grad, var))
            if global_step is None:
                train_op = control_flow_ops.group(*updates, name=scope)
            else:
                with graph.control_dependencies([control_flow_ops.group(*updates,
                                                                        name="update")]):
                    with graph.colocate_with(global_step.op):
                        train_op = state_ops.assign_add(global_step, 1, name=scope).op
        graph.add_to_collection(GraphKeys.TRAIN_OP, train_op)
        return train_op

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def _prepare(self) -> None:
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking: bool = False, name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor = None

    def _prepare(self) -> None:
        self._learning_rate_tensor = convert_to_tensor(self._learning_rate,
                                                       name="learning_rate")

    def _apply_dense(self, grad, var):
        lr = array_ops.cast(self._learning_rate_tensor, var.dtype.base_dtype)
        return state_ops.apply_gradient_descent(var, lr, grad,
                                                use_locking=self._use_locking).op


def get_global_step(graph=None):
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        raise TypeError("There are multiple global steps.")
    return found[0] if found else None


def create_global_step(graph=None):
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None):
        return Variable(array_ops.zeros([], dtype=dtypes.int64, name="Initializer/zeros"),
                        trainable=False, name="global_step",
                        collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    return get_global_step(graph) or create_global_step(graph)
