"""The state the gradients pass keeps for each tf.while_loop it differentiates (TF1's
control_flow_state.py): a forward iteration counter added to the loop, the gradient loop that
replays its iterations in reverse, and per-iteration accumulators of the forward values the
backward pass reads (a TensorArray written at the forward index, read at the backward one).
A loop nested in another has its counter, its accumulators and its gradient loop made once
per iteration of the outer loop (inside its body and its gradient loop); the outer loop's own
accumulators keep, per iteration, the inner one's trip count and accumulator handles."""

from __future__ import annotations

import contextlib

from engine import dtypes, errors
from engine.graph import Operation, Tensor
from engine.ops import control_flow_ops as cfo
from engine.ops import math_ops
from engine.ops.cond import CondContext, switch_ref_or_tensor
from engine.ops.control_flow_context import (
    containing_while_context,
    is_loop_constant_enter,
    is_loop_exit,
    is_switch,
    output_context,
)
from engine.ops.core import make_constant
from engine.ops.while_loop import WhileContext

# One dict (forward WhileContext -> GradLoopState) per gradients() call in progress.
_ACTIVE: list[dict] = []


@contextlib.contextmanager
def gradient_states():
    """Keeps the loop states of one gradients() call while it builds the backward pass."""
    _ACTIVE.append({})
    try:
        yield
    finally:
        _ACTIVE.pop()


def is_loop_switch(op: Operation) -> bool:
    """A Switch of a while loop's variables (not one of a cond)."""
    ctxt = op._get_control_flow_context()
    return is_switch(op) and ctxt is not None and ctxt.is_while_context()


def state_for(forward: WhileContext) -> GradLoopState:
    """The gradient state of `forward`, made on first use."""
    if not _ACTIVE:
        raise errors.InternalError(None, None, "A while-loop gradient rule ran outside "
                                               "tf.gradients.")
    states = _ACTIVE[-1]
    if forward not in states:
        outer = containing_while_context(forward.outer_context)
        for loop in (forward, outer):
            if isinstance(loop, GradWhileContext):
                raise errors.UnimplementedError(
                    None, None, f"Gradients through the gradient loop '{loop.name}' (a second "
                                "derivative through a while loop) are not supported; "
                                "differentiate the forward loop once.")
        outer_state = state_for(outer) if outer is not None else None
        states[forward] = GradLoopState(forward, outer_state)
    return states[forward]


def grad_state_of(op: Operation, before: bool) -> GradLoopState | None:
    """The state whose gradient loop `op`'s gradient is built in: an Exit's gradient sums
    (before its rule) outside its loop, its rule and everything else inside."""
    ctxt = op._get_control_flow_context()
    if before and is_loop_exit(op) and ctxt is not None:
        ctxt = ctxt.outer_context
    forward = containing_while_context(ctxt)
    return None if forward is None else state_for(forward)


class GradWhileContext(WhileContext):
    """The gradient loop of `forward`: a forward tensor used by a gradient op stands for its
    value in the iteration being replayed (read from the accumulator)."""

    def __init__(self, state: GradLoopState, forward: WhileContext):
        super().__init__(parallel_iterations=forward.parallel_iterations,
                         back_prop=forward.back_prop, name=f"{forward.name}_grad")
        self.grad_state = state
        self.forward_context = forward

    def add_value(self, value: Tensor) -> Tensor:
        if value.name in self._values:
            return self._external_values.get(value.name, value)
        if containing_while_context(output_context(value.op)) is not self.forward_context:
            return super().add_value(value)
        if is_loop_constant_enter(value.op):
            real = self.add_value(value.op.inputs[0])
        elif value.op.type == "Const" and value.op._get_control_flow_context() is \
                self.forward_context:
            real = _clone_constant(self, value)   # TF's GetRealValue: a constant, no history
        else:
            real = self.grad_state.history_value(value)
        self._values.add(value.name)
        self._external_values[value.name] = real
        return real


def _clone_constant(ctxt: GradWhileContext, value: Tensor) -> Tensor:
    """A forward loop's constant made again in gradient loop `ctxt`."""
    graph = value.graph
    with graph.control_dependencies(None):      # (this also leaves every context)
        graph._set_control_flow_context(ctxt)
        return make_constant(value.op.get_attr("value"), dtype=value.dtype)


class GradLoopState:
    """TF's GradLoopState: the counters, accumulators and gradient loop of one forward loop.
    `outer_state` is the state of the loop this one is nested in (None at the top): the
    forward counter and accumulators are then made in the outer loop's body (fresh in each
    of its iterations) and the gradient loop in the outer gradient loop, which reads the
    inner trip count and accumulator handles of the iteration it replays."""

    def __init__(self, forward: WhileContext, outer_state: GradLoopState | None = None):
        self.forward_context = forward
        self.outer_state = outer_state
        self.switch_map: dict[Operation, Tensor] = {}
        self.history: dict[str, Tensor] = {}
        graph = forward.graph
        saved = graph._get_control_flow_context()
        try:
            with graph.control_dependencies(None):
                graph._set_control_flow_context(forward.outer_context)
                total = self._add_forward_counter()
                if outer_state is not None:
                    # The trip count of the forward iteration the outer gradient loop replays.
                    outer_grad = outer_state.grad_context
                    graph._set_control_flow_context(outer_grad)
                    total = outer_grad.add_value(total)
                self.grad_context = GradWhileContext(self, forward)
                self.grad_index = self._add_backward_counter(total)
        finally:
            graph._set_control_flow_context(saved)

    def _add_forward_counter(self) -> Tensor:
        """f_count: the iteration index inside the loop (0, 1, ...) and, at its Exit, the
        number of iterations the forward loop ran (made where the loop starts, so a nested
        loop's count restarts in each outer iteration)."""
        forward = self.forward_context
        zero = make_constant(0, dtype=dtypes.int32, name="f_count")
        forward.enter()
        try:
            merged = _entered_loop_value(forward, zero, "f_count")
            false_out, true_out = switch_ref_or_tensor(merged, forward.pivot, name="f_count")
            self.forward_index = true_out
            following = math_ops.add(true_out, 1, name="f_count")
            # Every accumulator write of an iteration runs before the next index (a trigger,
            # so a write on an untaken cond branch does not kill the counter).
            self.forward_sync = cfo.control_trigger(name="f_sync")
            following.op._add_control_input(self.forward_sync)
            total = _close_loop_value(forward, merged, following, false_out, "f_count")
        finally:
            forward.exit()
        return total

    def _add_backward_counter(self, total: Tensor) -> Tensor:
        """b_count: runs `total` iterations; inside, the forward index being replayed
        (total-1 down to 0)."""
        ctxt = self.grad_context
        one = make_constant(1, dtype=dtypes.int32, name="b_count")
        ctxt.enter()
        try:
            merged = _entered_loop_value(ctxt, total, "b_count")
            ctxt.pivot_for_pred = merged
            ctxt.pivot = cfo.loop_cond(math_ops.greater_equal(merged, one), name="b_count")
            false_out, true_out = switch_ref_or_tensor(merged, ctxt.pivot, name="b_count")
            index = math_ops.subtract(true_out, one, name="b_count")
            ctxt.pivot_for_body = index
            _close_loop_value(ctxt, merged, index, false_out, "b_count")
        finally:
            ctxt.exit()
        return index

    def history_value(self, value: Tensor) -> Tensor:
        """`value` (computed in the forward loop) in the gradient loop's current iteration:
        written to an accumulator at the forward index, read back at the backward one. The
        read of a value on a cond branch is dead in the iterations that did not take it. A
        nested loop's accumulator is made in the outer loop's body, one per outer
        iteration; the outer loop keeps its handles."""
        if value.name in self.history:
            return self.history[value.name]
        from engine.ops.tensor_array_ops import TensorArray
        graph = value.graph
        value_ctxt = output_context(value.op)
        saved = graph._get_control_flow_context()
        try:
            # control_dependencies(None) also leaves every control-flow context (as TF's).
            # The accumulator, its write and its read live with `value` alone, not with the
            # gradient op being built (colocate_gradients_with_ops): the read's resource edge
            # would otherwise pull the value's device and the gradient op's into one group,
            # and a layer on another device (DeviceWrapper) onto the first one's.
            with graph.control_dependencies(None), graph.colocate_with(None):
                graph._set_control_flow_context(self.forward_context.outer_context)
                acc = TensorArray(value.dtype.base_dtype, size=0, dynamic_size=True,
                                  infer_shape=False, name="f_acc")
                value_ctxt.enter()
                try:
                    written = acc.write(self.forward_index, value)
                finally:
                    value_ctxt.exit()
                self.forward_sync._add_control_input(written.flow.op)
                read = self._read(acc, value, value_ctxt)
        finally:
            graph._set_control_flow_context(saved)
        self.history[value.name] = read
        return read

    def _read(self, acc, value: Tensor, value_ctxt) -> Tensor:
        from engine.ops.tensor_array_ops import TensorArray
        ctxt = self.grad_context
        ctxt.enter()
        try:
            handle = ctxt.add_value(acc.handle)
            if isinstance(value_ctxt, CondContext):
                pred = ctxt.add_value(value_ctxt.pred)
                handle = switch_ref_or_tensor(handle, pred)[value_ctxt.branch]
            # The read follows the writes through the counters; a nested accumulator's own
            # flow lives in the outer loop's body, so a fresh one stands for it.
            flow = acc.flow if self.outer_state is None else \
                make_constant(0.0, dtype=dtypes.float32, name="b_acc_flow")
            entry = TensorArray(value.dtype.base_dtype, handle=handle, flow=flow)
            read = entry.read(self.grad_index, name="b_acc")
            read.set_shape(value.shape)
        finally:
            ctxt.exit()
        return read

    def accumulate(self, op: Operation, grad: Tensor) -> Tensor:
        """The sum over all iterations of `grad`, the per-iteration gradient of a loop
        invariant (the input of constant Enter `op`): a loop variable of the gradient loop
        (in a nested loop, one per iteration of the outer gradient loop)."""
        ctxt = self.grad_context
        graph = op.graph
        saved = graph._get_control_flow_context()
        try:
            with graph.control_dependencies(None):
                graph._set_control_flow_context(ctxt.outer_context)
                start = self._zeros_outside(op.inputs[0], name="b_acc")
                ctxt.enter()
                try:
                    merged = _entered_loop_value(ctxt, start, "b_acc")
                    false_out, true_out = switch_ref_or_tensor(merged, ctxt.pivot, name="b_acc")
                    total = math_ops.add(true_out, grad)
                    result = _close_loop_value(ctxt, merged, total, false_out, "b_acc")
                finally:
                    ctxt.exit()
        finally:
            graph._set_control_flow_context(saved)
        return result

    def _zeros_outside(self, value: Tensor, name: str) -> Tensor:
        """Zeros shaped like `value`, made in the current context: a constant when the shape
        is known (in a nested loop this saves keeping `value` per outer iteration)."""
        from engine.ops.array_ops import zeros, zeros_like
        if self.outer_state is not None and value.shape.is_fully_defined():
            return zeros(value.shape.as_list(), dtype=value.dtype.base_dtype, name=name)
        return zeros_like(value, name=name)


def zeros_for_exit(value: Tensor) -> Tensor:
    """The zero gradient of an Exit output that leads to no y (TF's ZerosLikeForExit):
    for a loop nested in another, made in the outer gradient loop (the Exit's value lives
    in the outer loop's body)."""
    from engine.ops.array_ops import zeros, zeros_like
    forward = value.op._get_control_flow_context()
    outer = containing_while_context(forward.outer_context)
    if outer is None:
        return zeros_like(value)
    ctxt = state_for(outer).grad_context
    ctxt.enter()
    try:
        if value.shape.is_fully_defined():
            return zeros(value.shape.as_list(), dtype=value.dtype.base_dtype)
        return zeros_like(value)
    finally:
        ctxt.exit()


def _entered_loop_value(ctxt, start: Tensor, name: str) -> Tensor:
    """A loop-carried value the gradient machinery adds to loop `ctxt` (entered, so called
    inside it): Enter(start) -> Merge, whose second input _close_loop_value wires."""
    ctxt.add_name(start.name)
    entered = cfo.enter(start, ctxt.name, is_constant=False,
                        parallel_iterations=ctxt.parallel_iterations, name=name)
    ctxt.loop_enters.append(entered)
    return cfo.merge([entered, entered], name=name)[0]


def _close_loop_value(ctxt, merged: Tensor, following: Tensor, false_out: Tensor,
                      name: str) -> Tensor:
    """Feeds the next iteration's value back into `merged` and exits the loop with the value
    the loop's Switch lets out."""
    merged.op._update_input(1, cfo.next_iteration(following, name=name))
    result = cfo.exit(false_out, name=name)
    ctxt.loop_exits.append(result)
    ctxt.exit_result([result])
    return result


@contextlib.contextmanager
def in_grad_context(op: Operation, before: bool):
    """Builds what follows in the gradient loop of `op`'s forward loop, if it has one."""
    state = grad_state_of(op, before)
    if state is None:
        yield
        return
    state.grad_context.enter()
    try:
        yield
    finally:
        state.grad_context.exit()


def unused_loop_exits(between: set) -> list[Operation]:
    """Exits of the differentiated loops that lead to no y, whose Switch does (a loop
    variable the others, or the loop's condition, depend on): they start the backward pass
    too (with zeros, or no gradient for an integer), so every loop Switch is visited."""
    loops = {op._get_control_flow_context() for op in between if is_loop_exit(op)}
    found = []
    for forward in loops:
        for t in getattr(forward, "loop_exits", ()):
            op = t.op
            if op not in between and op.inputs[0].op in between:
                found.append(op)
    return found


def cond_switch_zeros(op: Operation, index: int) -> Tensor | None:
    """The zero gradient of output `index` of a cond's Switch inside a differentiated loop,
    built in the gradient loop: alive exactly in the iterations that took the other branch
    (zeros of the Switch's input, switched on the predicate's value in that iteration)."""
    from engine.ops.array_ops import zeros_like
    ctxt = op._get_control_flow_context()
    current = op.graph._get_control_flow_context()
    if not isinstance(ctxt, CondContext) or not isinstance(current, GradWhileContext):
        return None
    zeros = zeros_like(op.inputs[0])
    pred = current.add_value(ctxt.pred)
    return switch_ref_or_tensor(zeros, pred)[index]
