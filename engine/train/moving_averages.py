"""tf.train.ExponentialMovingAverage and assign_moving_average: shadow variables
`<var>/ExponentialMovingAverage` colocated with their variables, updated by
`shadow -= (shadow - value) * (1 - decay)`, optionally zero-debiased (Adam-style) for tensors."""

from __future__ import annotations

from engine import dtypes
from engine.graph import get_default_graph
from engine.ops import array_ops, control_flow_ops, math_ops, state_ops
from engine.ops.core import convert_to_tensor
from engine.ops.variables import Variable, global_variables, trainable_variables
from engine.shapes import TensorShape
from engine.train.optimizer import (
    create_slot,
    create_slot_with_initializer,
    create_zeros_slot,
    zeros_initializer,
)

__all__ = ["ExponentialMovingAverage"]

# TF's GraphKeys.MOVING_AVERAGE_VARIABLES: the variables that have a shadow.
MOVING_AVERAGE_VARIABLES = "moving_average_variables"
_VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp")


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """variable -= (variable - value) * (1 - decay), built colocated with `variable`."""
    graph = variable.graph
    with graph.as_default(), graph.name_scope(name or "AssignMovingAvg") as scope, \
            graph.colocate_with(variable.op):
        decay = convert_to_tensor(1.0 - decay, name="decay")
        if decay.dtype.base_dtype is not variable.dtype.base_dtype:
            decay = array_ops.cast(decay, variable.dtype.base_dtype)
        if zero_debias:
            update_delta = _zero_debias(variable, value, decay)
        else:
            update_delta = (variable - value) * decay
        return state_ops.assign_sub(variable, update_delta, name=scope)


def _zero_debias(unbiased_var, value, decay):
    """The bias-corrected delta: a biased EMA and a step count beside `unbiased_var`
    (`<avg>/biased`, `<avg>/local_step`), as TF's moving_averages._zero_debias keeps them."""
    dtype = unbiased_var.dtype.base_dtype
    biased = create_zeros_slot(unbiased_var, "biased")
    local_step = create_slot_with_initializer(unbiased_var, zeros_initializer, TensorShape([]),
                                              dtype, "local_step")
    update_biased = state_ops.assign_sub(biased, (biased - value) * decay)
    update_local_step = local_step.assign_add(1)
    # The delta must see the updated biased value and step.
    with unbiased_var.graph.control_dependencies([update_biased, update_local_step]):
        return unbiased_var - biased.read_value() / (
            1 - math_ops.pow(1.0 - decay, local_step.read_value()))


class ExponentialMovingAverage:
    """Shadow variables that track `var_list` with the given decay; with num_updates the decay
    is min(decay, (1 + num_updates) / (10 + num_updates))."""

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict = {}

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list=None):
        """Creates the shadows of `var_list` (default: the trainable variables) if needed and
        returns the op that updates them all."""
        var_list = list(var_list) if var_list is not None else trainable_variables()
        debiased = set()
        for var in var_list:
            if var.dtype.base_dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if var not in self._averages:
                self._averages[var] = self._create_average(var, debiased)
        graph = var_list[0].graph if var_list else get_default_graph()
        with graph.as_default(), graph.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                num_updates = array_ops.cast(self._num_updates, dtypes.float32,
                                             name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = [assign_moving_average(self._averages[var], var, decay,
                                             zero_debias=id(self._averages[var]) in debiased)
                       for var in var_list]
            return control_flow_ops.group(*updates, name=scope)

    def _create_average(self, var, debiased: set):
        if isinstance(var, Variable):
            avg = create_slot(var, var.initial_value, self._name)
            var.graph.add_to_collection(MOVING_AVERAGE_VARIABLES, var)
            return avg
        avg = create_zeros_slot(var, self._name, colocate=var.op.type in _VARIABLE_OPS)
        if self._zero_debias:
            debiased.add(id(avg))
        return avg

    def average(self, var):
        return self._averages.get(var)

    def average_name(self, var) -> str:
        """The shadow's op name, also before apply() created it (for restoring)."""
        if var in self._averages:
            return self._averages[var].op.name
        return get_default_graph().unique_name(f"{var.op.name}/{self._name}",
                                               mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables=None) -> dict:
        """{checkpoint name: variable}: each averaged variable restores from its shadow's
        name, every other global variable from its own."""
        if moving_avg_variables is None:
            moving_avg_variables = trainable_variables() + \
                get_default_graph().get_collection(MOVING_AVERAGE_VARIABLES)
        moving_avg_variables = set(moving_avg_variables)
        name_map = {self.average_name(v): v for v in moving_avg_variables}
        averaged_names = {v.name for v in moving_avg_variables}
        for v in global_variables():
            if v.name not in averaged_names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
