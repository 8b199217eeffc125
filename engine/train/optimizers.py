"""The slot-keeping optimizers: Momentum (Nesterov), Adam, Adagrad, RMSProp (centered),
Adadelta. Each keeps TF1's constructor arguments, slot names and variable names, and applies
its update through TF's ApplyXxx op (engine/ops/training_ops.py)."""

from __future__ import annotations

from engine.ops import training_ops
from engine.train.optimizer import (
    Optimizer,
    constant_initializer,
    ones_initializer,
)

__all__ = [
    "AdadeltaOptimizer",
    "AdagradOptimizer",
    "AdamOptimizer",
    "MomentumOptimizer",
    "RMSPropOptimizer",
]


class MomentumOptimizer(Optimizer):
    """accum = accum * momentum + grad; var -= lr * accum (Nesterov: var -= lr * grad +
    lr * momentum * accum). Slot "momentum", named `<var>/Momentum`."""

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        self._momentum_tensor = self._hyper(self._momentum, "momentum")

    def _apply_dense(self, grad, var):
        return training_ops.apply_momentum(
            var, self.get_slot(var, "momentum"), self._cast(self._learning_rate_tensor, var),
            grad, self._cast(self._momentum_tensor, var), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov).op


class AdamOptimizer(Optimizer):
    """Kingma & Ba's Adam with TF's "epsilon hat" (epsilon outside the bias correction). Slots
    "m" and "v" (`<var>/Adam`, `<var>/Adam_1`); `beta1_power` and `beta2_power` live once per
    graph, colocated with the first variable by name."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon

    def _get_beta_accumulators(self, graph=None):
        return (self._get_non_slot_variable("beta1_power", graph),
                self._get_non_slot_variable("beta2_power", graph))

    def _create_slots(self, var_list) -> None:
        first_var = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._lr, "learning_rate")
        self._beta1_t = self._hyper(self._beta1, "beta1")
        self._beta2_t = self._hyper(self._beta2, "beta2")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        beta1_power, beta2_power = self._get_beta_accumulators(var.graph)
        return training_ops.apply_adam(
            var, self.get_slot(var, "m"), self.get_slot(var, "v"),
            self._cast(beta1_power, var), self._cast(beta2_power, var),
            self._cast(self._lr_t, var), self._cast(self._beta1_t, var),
            self._cast(self._beta2_t, var), self._cast(self._epsilon_t, var), grad,
            use_locking=self._use_locking).op

    def _finish(self, update_ops, name_scope: str):
        graph = update_ops[0].graph
        beta1_power, beta2_power = self._get_beta_accumulators(graph)
        with graph.control_dependencies(update_ops), graph.colocate_with(beta1_power.op):
            update_beta1 = beta1_power.assign(beta1_power * self._beta1_t,
                                              use_locking=self._use_locking)
            update_beta2 = beta2_power.assign(beta2_power * self._beta2_t,
                                              use_locking=self._use_locking)
        return super()._finish(list(update_ops) + [update_beta1, update_beta2], name_scope)


class AdagradOptimizer(Optimizer):
    """accum += grad^2; var -= lr * grad / sqrt(accum). Slot "accumulator" (`<var>/Adagrad`)
    starts at initial_accumulator_value."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._get_or_make_slot_with_initializer(
                v, constant_initializer(self._initial_accumulator_value), v.get_shape(),
                v.dtype.base_dtype, "accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        return training_ops.apply_adagrad(
            var, self.get_slot(var, "accumulator"), self._cast(self._learning_rate_tensor, var),
            grad, use_locking=self._use_locking).op


class RMSPropOptimizer(Optimizer):
    """ms = decay * ms + (1 - decay) * grad^2 (centered: minus the squared mean gradient);
    mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom. Slots "rms" (starting at
    ones), "mg" when centered, "momentum": `<var>/RMSProp`, `<var>/RMSProp_1`, ..."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._get_or_make_slot_with_initializer(v, ones_initializer, v.get_shape(),
                                                    v.dtype.base_dtype, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        self._decay_tensor = self._hyper(self._decay, "decay")
        self._momentum_tensor = self._hyper(self._momentum, "momentum")
        self._epsilon_tensor = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        hyper = [self._cast(t, var) for t in (self._learning_rate_tensor, self._decay_tensor,
                                              self._momentum_tensor, self._epsilon_tensor)]
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return training_ops.apply_centered_rms_prop(
                var, self.get_slot(var, "mg"), rms, mom, *hyper, grad,
                use_locking=self._use_locking).op
        return training_ops.apply_rms_prop(var, rms, mom, *hyper, grad,
                                           use_locking=self._use_locking).op


class AdadeltaOptimizer(Optimizer):
    """Zeiler's Adadelta. Slots "accum" and "accum_update" (`<var>/Adadelta`,
    `<var>/Adadelta_1`)."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._lr, "lr")
        self._rho_t = self._hyper(self._rho, "rho")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        return training_ops.apply_adadelta(
            var, self.get_slot(var, "accum"), self.get_slot(var, "accum_update"),
            self._cast(self._lr_t, var), self._cast(self._rho_t, var),
            self._cast(self._epsilon_t, var), grad, use_locking=self._use_locking).op
