"""Gradient rules of the cond primitives (TF1's control_flow_grad.py): a Merge's gradient is
the upstream gradient switched on the cond's predicate (so only the taken branch's gradient
ops run), a Switch's gradient merges the two branches' gradients (the untaken one is dead).
Gradients through tf.while_loop (Enter, Exit, NextIteration) come with the next step."""

from __future__ import annotations

from engine.ops import control_flow_ops as cfo
from engine.ops import math_ops
from engine.ops.cond import CondContext, switch_ref_or_tensor
from engine.ops.control_flow_context import output_context


def _switch_grad(op, grad_false, grad_true):
    context = op._get_control_flow_context()
    if isinstance(context, CondContext):
        # The branch's own output carries its gradient; the other output's is the zeros the
        # gradients pass made for it, alive exactly when that branch is not taken.
        if (grad_false if context.branch == 1 else grad_true) is None:
            return None, None
        return cfo.merge([grad_false, grad_true], name="cond_grad")[0], None
    pred = op.inputs[1]
    false_grad = cfo.switch(grad_false, pred)[0]
    true_grad = cfo.switch(grad_true, pred)[1]
    return cfo.merge([false_grad, true_grad])[0], None


def _merge_grad(op, grad, _value_index_grad):
    context = output_context(op.inputs[0].op)
    if isinstance(context, CondContext):
        return switch_ref_or_tensor(grad, context.pred, name="cond_grad")
    # A Merge built by hand: the gradient goes to the input that fired (value_index).
    chosen = [math_ops.equal(op.outputs[1], i) for i in range(len(op.inputs))]
    return [switch_ref_or_tensor(grad, c)[1] for c in chosen]


GRADIENTS: dict = {"Switch": _switch_grad, "Merge": _merge_grad}
NOT_DIFFERENTIABLE: tuple = ("LoopCond", "ControlTrigger", "Assert")
