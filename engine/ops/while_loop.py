"""tf.while_loop as TF1 builds it (control flow v1): per loop variable an Enter into the
loop's frame, a Merge of the entering and the next iteration's value, a Switch on the
LoopCond that routes it to the body (an Identity) or out (an Exit), and a NextIteration back
into the Merge. The body is built in a WhileContext: outside tensors it uses enter through
constant Enters (visible in every iteration), and ops with no inputs hang off the loop's
pivot so they run once per iteration."""

from __future__ import annotations

from engine.graph import Operation, Tensor, get_default_graph
from engine.ops import nest
from engine.ops.cond import as_flow, from_flow, switch_ref_or_tensor
from engine.ops.control_flow_context import (
    ControlFlowContext,
    is_loop_constant_enter,
    output_context,
)
from engine.ops.control_flow_ops import enter, exit, loop_cond, merge, next_iteration
from engine.ops.core import convert_to_tensor, make_constant
from engine.shapes import TensorShape

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "while_loop",
]


def _shape_less_than_or_equal(shape: TensorShape, invariant: TensorShape) -> bool:
    """`shape` is at least as specific as `invariant`."""
    if invariant.dims is None:
        return True
    if shape.ndims != invariant.ndims:
        return False
    return all(b is None or a == b for a, b in zip(shape.dims, invariant.dims))


class WhileContext(ControlFlowContext):
    """The loop being built; `name` is its frame name (`while/while_context`)."""

    def __init__(self, maximum_iterations=None, parallel_iterations: int = 10,
                 back_prop: bool = True, swap_memory: bool = False,
                 name: str = "while_context"):
        graph = get_default_graph()
        super().__init__(graph)
        if not isinstance(parallel_iterations, int) or parallel_iterations <= 0:
            raise ValueError(f"'parallel_iterations' must be a positive integer: "
                             f"{parallel_iterations}")
        self.name = graph.unique_name(name)
        self.maximum_iterations = maximum_iterations
        self.parallel_iterations = parallel_iterations
        self.back_prop = back_prop
        self.swap_memory = swap_memory
        self.pivot_for_pred: Tensor | None = None   # controls the constants of `cond`
        self.pivot_for_body: Tensor | None = None   # controls the constants of `body`
        self.pivot: Tensor | None = None            # the LoopCond
        self.loop_enters: list[Tensor] = []
        self.loop_exits: list[Tensor] = []

    def is_while_context(self) -> bool:
        return True

    def while_context(self):
        return self

    def control_pivot(self) -> Tensor | None:
        return self.pivot_for_body if self.pivot_for_body is not None else self.pivot_for_pred

    def add_value(self, value: Tensor) -> Tensor:
        """The tensor that stands for `value` inside the loop: a constant Enter of it (made
        once per value, through every enclosing loop)."""
        if value.name in self._values or value.op._get_control_flow_context() is self:
            return self._external_values.get(value.name, value)
        self._values.add(value.name)
        result = value
        if self.outer_context is not None:
            result = self.outer_context.add_value(value)
        with self.graph.control_dependencies(None):
            entered = enter(result, self.name, is_constant=True,
                            parallel_iterations=self.parallel_iterations)
            if self.outer_context is not None:
                self.outer_context.add_inner_op(entered.op)
        self._fix_control_inputs_and_context([entered])
        self._values.add(entered.name)
        self._external_values[value.name] = entered
        return entered

    def add_op(self, op: Operation) -> None:
        if not op.inputs:
            internal, external = self._remove_external_control_edges(op)
            if not internal:
                op._add_control_input(self.control_pivot().op)
        else:
            for index, x in enumerate(op.inputs):
                real = self.add_value(x)
                if real is not x:
                    op._update_input(index, real)
            _, external = self._remove_external_control_edges(op)
            self._maybe_add_control_dependency(op)
        self._values.update(t.name for t in op.outputs)
        if external:
            # Outside control inputs come in as data: an Identity of each (which the loop
            # enters), so the op still waits for them, in every iteration.
            from engine.ops.array_ops import identity
            with self.graph.control_dependencies(None):
                self.enter()
                inner = [identity(x.outputs[0]).op for x in external if x.outputs]
                self.exit()
            op._add_control_inputs(inner)
        if self.outer_context is not None:
            self.outer_context.add_inner_op(op)

    def _maybe_add_control_dependency(self, op: Operation) -> None:
        """An op fed only by loop constants would otherwise run once, not per iteration."""
        if op.control_inputs:
            return
        if all(is_loop_constant_enter(x.op) for x in op.inputs):
            op._add_control_input(self.control_pivot().op)

    def _fix_control_inputs_and_context(self, enters: list[Tensor]) -> None:
        """Enters made outside any context join this loop and take the control dependencies
        open around the loop that belong to its outer context."""
        graph = self.graph
        for e in enters:
            keep = []
            for op in graph._current_control_inputs([e.op.inputs[0]]):
                op_ctxt = output_context(op)
                outer = self.outer_context
                outer_while = outer.while_context() if outer is not None else None
                kept = True
                while outer is not op_ctxt:
                    if outer is None or outer is outer_while:
                        kept = False
                        break
                    outer = outer.outer_context
                if kept:
                    keep.append(op)
            e.op._set_control_flow_context(self)
            e.op._add_control_inputs(keep)

    def build_loop(self, pred, body, loop_vars, shape_invariants, return_same_structure: bool):
        flat_orig = nest.flatten(loop_vars)
        loop_vars = nest.map_structure(_as_loop_value, loop_vars)
        flat_vars = [as_flow(x) for x in nest.flatten(loop_vars)]
        if shape_invariants is None:
            shapes = [v.shape for v in flat_vars]
        else:
            nest.assert_same_structure(loop_vars, shape_invariants)
            shapes = [_invariant(v, s) for v, s in zip(nest.flatten(loop_vars),
                                                        nest.flatten(shape_invariants))]
        try:
            self.enter()
            original, exits = self._build_loop(pred, body, flat_orig, flat_vars, shapes,
                                               loop_vars)
        finally:
            self.exit()
        flat_result = nest.flatten(original)
        packed = nest.pack_sequence_as(
            original, [from_flow(like, x) for like, x in zip(flat_result, exits)])
        if return_same_structure:
            return packed
        return packed[0] if len(exits) == 1 else packed

    def _build_loop(self, pred, body, flat_orig, flat_vars, shapes, structure):
        from engine.ops.array_ops import identity
        self._values = {x.name for x in flat_vars}
        real_vars = ([self.outer_context.add_value(x) for x in flat_vars]
                     if self.outer_context is not None else flat_vars)
        enter_vars = []
        with self.graph.control_dependencies(None):
            for real, shape in zip(real_vars, shapes):
                entered = enter(real, self.name, is_constant=False,
                                parallel_iterations=self.parallel_iterations,
                                use_input_shape=False)
                if not _shape_less_than_or_equal(real.shape, shape):
                    raise ValueError(
                        f"The shape invariant specified for {real.name} is not compatible with "
                        f"the initial shape of the loop variable. It enters the loop with "
                        f"shape {real.shape}, but the specified shape invariant is {shape}.")
                entered.set_shape(shape)
                if self.outer_context is not None:
                    self.outer_context.add_inner_op(entered.op)
                enter_vars.append(entered)
        pivot = self._outer_control_pivot()
        if pivot is not None:
            for var in enter_vars:
                if is_loop_constant_enter(var.op.inputs[0].op):
                    var.op._add_control_input(pivot.op)
        self._fix_control_inputs_and_context(enter_vars)
        self._values = {x.name for x in enter_vars}
        self.loop_enters = enter_vars

        merge_vars = [merge([x, x])[0] for x in enter_vars]
        self.pivot_for_pred = merge_vars[0]
        packed = nest.pack_sequence_as(structure, [from_flow(like, m) for like, m in
                                                   zip(flat_orig, merge_vars)])
        condition = convert_to_tensor(pred(*_as_args(packed)))
        self.pivot = loop_cond(condition, name="LoopCond")
        switch_vars = [switch_ref_or_tensor(m, self.pivot) for m in merge_vars]
        body_vars = [identity(s[1]) for s in switch_vars]
        self.pivot_for_body = body_vars[0]
        packed_body = nest.pack_sequence_as(structure, [from_flow(like, v) for like, v in
                                                        zip(flat_orig, body_vars)])
        result = body(*_as_args(packed_body))
        if not nest.is_nested(result):
            result = [result]
        nest.assert_same_structure(_as_args(packed_body), list(result))
        flat_result = [convert_to_tensor(as_flow(x)) for x in nest.flatten(result)]
        if len(merge_vars) != len(flat_result):
            raise ValueError("Number of inputs and outputs of 'body' must match 'loop_vars'. "
                             f"Got {len(merge_vars)} for the number of inputs/outputs, and "
                             f"{len(flat_result)} for 'loop_vars'.")
        for m, v in zip(merge_vars, flat_result):
            _add_next_and_back_edge(m, v)
        exits = [exit(s[0]) for s in switch_vars]
        self.loop_exits = exits
        self.exit_result(exits)
        return result, exits

    def _outer_control_pivot(self) -> Tensor | None:
        outer = self.outer_context
        while outer is not None:
            found = outer.control_pivot()
            if found is not None:
                return found
            outer = outer.outer_context
        return None


def _as_args(packed) -> list:
    """The loop variables as the positional arguments of `cond` and `body` (as TF calls
    them: `body(*loop_vars)`, a namedtuple's fields included)."""
    return list(packed)


def _as_loop_value(value):
    from engine.ops.tensor_array_ops import TensorArray
    return value if isinstance(value, TensorArray) else convert_to_tensor(value)


def _invariant(value, shape) -> TensorShape:
    value = as_flow(value)
    if shape is None:
        return value.shape
    if not isinstance(shape, TensorShape):
        raise TypeError(f"'shape' must be one of TypeSpec, TensorShape or None. Received: "
                        f"{type(shape)}")
    return shape


def _add_next_and_back_edge(merge_var: Tensor, value: Tensor) -> Tensor:
    """NextIteration(value) becomes the Merge's second input: the loop's back edge."""
    if value.dtype.base_dtype is not merge_var.dtype.base_dtype:
        entering = merge_var.op.inputs[0].op.inputs[0]
        raise TypeError(f"Loop variable '{entering.name}' enters the loop as "
                        f"{entering.dtype.base_dtype.name} but the body returns "
                        f"{value.dtype.base_dtype.name} for it ('{value.name}'); a loop "
                        "variable keeps its dtype.")
    nxt = next_iteration(value)
    if not _shape_less_than_or_equal(nxt.shape, merge_var.shape):
        entering = merge_var.op.inputs[0].op.inputs[0]
        raise ValueError(
            f"Input tensor '{entering.name}' enters the loop with shape {entering.shape}, but "
            f"has shape {nxt.shape} after one iteration. To allow the shape to vary across "
            "iterations, use the `shape_invariants` argument of tf.while_loop to specify a "
            "less-specific shape.")
    merge_var.op._update_input(1, nxt)
    return nxt


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations: int = 10,
               back_prop: bool = True, swap_memory: bool = False, name=None,
               maximum_iterations=None, return_same_structure: bool = False):
    """Repeats `body` while `cond` is true. `loop_vars` is a (nested) structure of tensors
    and TensorArrays; `cond(*loop_vars)` returns a boolean scalar, `body(*loop_vars)` the
    next values in the same structure. Returns the final values (a lone variable unwrapped
    unless `return_same_structure`). At most `parallel_iterations` iterations run at once;
    `maximum_iterations` bounds the count; `shape_invariants` lets shapes vary."""
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    graph = get_default_graph()
    with graph.name_scope(name or "while"):
        if not loop_vars:
            raise ValueError("'loop_vars' must be provided.")
        try_to_pack = len(loop_vars) == 1 and not return_same_structure
        if maximum_iterations is not None:
            cond, body, loop_vars = _bounded(cond, body, loop_vars, maximum_iterations,
                                             try_to_pack)
            if shape_invariants is not None:
                shape_invariants = (TensorShape([]), shape_invariants)
        context = WhileContext(maximum_iterations, parallel_iterations, back_prop, swap_memory)
        result = context.build_loop(cond, body, loop_vars, shape_invariants,
                                    return_same_structure)
        return result[1] if maximum_iterations is not None else result


def _bounded(cond, body, loop_vars, maximum_iterations, try_to_pack: bool):
    """TF's rewrite for maximum_iterations: an iteration counter as the first loop
    variable, checked before `cond`."""
    from engine.ops.math_ops import logical_and
    limit = convert_to_tensor(maximum_iterations, name="maximum_iterations")
    if limit.shape.ndims != 0:
        raise ValueError(f"'maximum_iterations' must be a scalar. Received shape: {limit.shape}")
    counter = make_constant(0, dtype=limit.dtype, name="iteration_counter")
    if try_to_pack:
        return ((lambda i, lv: logical_and(i < limit, cond(lv))),
                (lambda i, lv: (i + 1, body(lv))), (counter, loop_vars[0]))
    return ((lambda i, lv: logical_and(i < limit, cond(*lv))),
            (lambda i, lv: (i + 1, body(*lv))), (counter, loop_vars))
