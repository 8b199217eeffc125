"""Gradient rules of the control-flow primitives (TF1's control_flow_grad.py). Through
tf.cond: a Merge's gradient is the upstream gradient switched on the cond's predicate (so only
the taken branch's gradient ops run), a Switch's merges the branches' gradients (the untaken
one is dead). Through tf.while_loop: an Exit's gradient enters the gradient loop, a loop
Switch's is that loop's Merge, a loop Merge's its Switch, an Enter's leaves the loop (summed
over the iterations for a loop invariant); the loop state lives in control_flow_state.py.
TensorArray ops (TF's tensor_array_grad.py): the gradient of an array is its gradient array
(TensorArrayGradV3 keyed by the gradients call), a read's gradient a write to it, etc."""

from __future__ import annotations

from engine.ops import control_flow_ops as cfo
from engine.ops import control_flow_state as cfs
from engine.ops import (
    math_ops,
    tensor_array_ops,  # noqa: F401 - registers the TensorArray op types
)
from engine.ops.cond import CondContext, switch_ref_or_tensor
from engine.ops.control_flow_context import output_context
from engine.ops.while_loop import WhileContext


def _switch_grad(op, grad_false, grad_true):
    context = op._get_control_flow_context()
    if isinstance(context, CondContext):
        # The branch's own output carries its gradient; the other output's is the zeros the
        # gradients pass made for it, alive exactly when that branch is not taken.
        if (grad_false if context.branch == 1 else grad_true) is None:
            return None, None
        return cfo.merge([grad_false, grad_true], name="cond_grad")[0], None
    if isinstance(context, WhileContext):
        return _loop_switch_grad(op, context, grad_false, grad_true)
    pred = op.inputs[1]
    false_grad = cfo.switch(grad_false, pred)[0]
    true_grad = cfo.switch(grad_true, pred)[1]
    return cfo.merge([false_grad, true_grad])[0], None


def _merge_grad(op, grad, _value_index_grad):
    context = output_context(op.inputs[0].op)
    if isinstance(context, CondContext):
        return switch_ref_or_tensor(grad, context.pred, name="cond_grad")
    if isinstance(context, WhileContext):
        # Iteration's end (output 0) goes back to the Enter, the rest to the NextIteration.
        pivot = cfs.state_for(context).grad_context.pivot
        return list(switch_ref_or_tensor(grad, pivot, name="b_switch"))
    # A Merge built by hand: the gradient goes to the input that fired (value_index).
    chosen = [math_ops.equal(op.outputs[1], i) for i in range(len(op.inputs))]
    return [switch_ref_or_tensor(grad, c)[1] for c in chosen]


def _loop_switch_grad(op, forward, grad_false, grad_true):
    """Visited twice: first with the Exit's gradient (the gradient loop's Merge is made of
    it), then with the body's (the Merge's back edge)."""
    state = cfs.state_for(forward)
    merged = state.switch_map.get(op)
    if merged is not None:
        if grad_true is not None:
            merged.op._update_input(1, cfo.next_iteration(grad_true))
        return None, None
    if grad_false is None:
        return None, None
    merged = cfo.merge([grad_false, grad_false], name="b_switch")[0]
    state.switch_map[op] = merged
    return merged, None


def _exit_grad(op, grad):
    forward = op._get_control_flow_context()
    if not forward.back_prop:
        return [None]
    ctxt = cfs.state_for(forward).grad_context
    ctxt.add_name(grad.name)
    ctxt.enter()
    try:
        result = cfo.enter(grad, ctxt.name, is_constant=False,
                           parallel_iterations=ctxt.parallel_iterations, use_input_shape=False)
        result.set_shape(grad.shape)
    finally:
        ctxt.exit()
    ctxt.loop_enters.append(result)
    return [result]


def _enter_grad(op, grad):
    forward = op._get_control_flow_context()
    if not forward.back_prop:
        return [None]
    state = cfs.state_for(forward)
    if op.attrs.get("is_constant"):
        return [state.accumulate(op, grad)]
    result = cfo.exit(grad)
    state.grad_context.loop_exits.append(result)
    state.grad_context.exit_result([result])
    return [result]


def _next_iteration_grad(op, grad):
    return [grad]


def _grad_source(t) -> str:
    """The gradients call `t` was made by (TF's _GetGradSource): its name up to the last
    component that starts with `gradients`."""
    tokens = t.name.split("/")
    found = [i for i, x in enumerate(tokens) if x.startswith("gradients")]
    if not found:
        raise ValueError(f"Expected op/tensor name to start with gradients (excluding scope)"
                         f", got: {t.name}")
    return "/".join(tokens[:found[-1] + 1])


def _grad_array(op, dtype, flow, grad):
    from engine.ops.tensor_array_ops import TensorArray
    forward = TensorArray(dtype=dtype, handle=op.inputs[0], flow=flow,
                          colocate_with_first_write_call=False)
    return forward.grad(source=_grad_source(grad), flow=flow)


def _write_barrier(op, flow):
    """The gradient flow, after the forward op's own output (so the gradient array is not
    made before the last forward write to the array)."""
    from engine.ops.array_ops import identity
    flow_out = identity(op.outputs[0], name="flow_out")
    with op.graph.control_dependencies([flow_out]):
        return identity(flow, name="write_barrier")


def _ta_read_grad(op, grad):
    g = _grad_array(op, op.attrs["dtype"], op.inputs[2], grad)
    return [None, None, g.write(op.inputs[1], grad).flow]


def _ta_write_grad(op, flow):
    flow = _write_barrier(op, flow)
    g = _grad_array(op, op.attrs["T"], flow, flow)
    return [None, None, g.read(op.inputs[1]), flow]


def _ta_gather_grad(op, grad):
    g = _grad_array(op, op.attrs["dtype"], op.inputs[2], grad)
    return [None, None, g.scatter(op.inputs[1], grad).flow]


def _ta_scatter_grad(op, flow):
    flow = _write_barrier(op, flow)
    g = _grad_array(op, op.attrs["T"], flow, flow)
    return [None, None, g.gather(op.inputs[1]), flow]


def _ta_concat_grad(op, grad, _lengths_grad):
    g = _grad_array(op, op.attrs["dtype"], op.inputs[1], grad)
    return [None, g.split(grad, lengths=op.outputs[1]).flow]


def _ta_split_grad(op, flow):
    flow = _write_barrier(op, flow)
    g = _grad_array(op, op.attrs["T"], flow, flow)
    return [None, g.concat(), None, flow]


GRADIENTS: dict = {"TensorArrayReadV3": _ta_read_grad, "TensorArrayWriteV3": _ta_write_grad,
                   "TensorArrayGatherV3": _ta_gather_grad,
                   "TensorArrayScatterV3": _ta_scatter_grad,
                   "TensorArrayConcatV3": _ta_concat_grad,
                   "TensorArraySplitV3": _ta_split_grad,
"Switch": _switch_grad, "Merge": _merge_grad, "Exit": _exit_grad,
                   "Enter": _enter_grad, "NextIteration": _next_iteration_grad}
NOT_DIFFERENTIABLE: tuple = ("LoopCond", "ControlTrigger", "Assert", "TensorArrayV3",
                             "TensorArrayGradV3", "TensorArraySizeV3", "TensorArrayCloseV3")
