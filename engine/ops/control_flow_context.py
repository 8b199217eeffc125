"""Control-flow contexts as TF1's control_flow_ops.py keeps them while a graph is built: the
cond branch or while body ops are being added to. The graph hands every new op to
`post_process`, which checks its inputs come from a usable context and lets the current
context rewire them (CondContext in cond.py, WhileContext in while_loop.py)."""

from __future__ import annotations

from engine.graph import Graph, Operation, Tensor


class ControlFlowContext:
    """The context ops are added to between `enter()` and `exit()`. `_values` holds the names
    of tensors already usable in it; `_external_values` maps an outside tensor's name to the
    tensor that stands for it inside (a Switch output or an Enter)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        graph._control_flow_used = True
        self.outer_context: ControlFlowContext | None = graph._get_control_flow_context()
        self.nested_contexts: list[ControlFlowContext] = []
        if self.outer_context is not None:
            self.outer_context.nested_contexts.append(self)
        self._context_stack: list[ControlFlowContext | None] = []
        self._values: set[str] = set()
        self._external_values: dict[str, Tensor] = {}
        self.name = ""

    def enter(self) -> None:
        self._context_stack.append(self.graph._get_control_flow_context())
        self.graph._set_control_flow_context(self)

    def exit(self) -> None:
        self.graph._set_control_flow_context(self._context_stack.pop())

    def add_name(self, name: str) -> None:
        self._values.add(name)

    def exit_result(self, result: list) -> None:
        """Makes `result` known to the outer context."""
        if self.outer_context is not None:
            for t in result:
                self.outer_context.add_name(t.name)

    def while_context(self):
        return self.outer_context.while_context() if self.outer_context else None

    def control_pivot(self) -> Tensor | None:
        return None

    def add_inner_op(self, op: Operation) -> None:
        """Tells the outer contexts about an op added to an inner one."""
        if self.outer_context is not None:
            self.outer_context.add_inner_op(op)

    def add_op(self, op: Operation) -> None:
        raise NotImplementedError

    def add_value(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def is_while_context(self) -> bool:
        return False

    def is_cond_context(self) -> bool:
        return False

    def _remove_external_control_edges(self, op: Operation):
        """Drops the control inputs of `op` that come from outside the enclosing while loop;
        returns (kept, removed)."""
        while_ctxt = self.while_context()
        if while_ctxt is None:
            return op.control_inputs, []
        internal, external = [], []
        for x in op.control_inputs:
            ctxt = output_context(x)
            if ctxt is not None and ctxt.while_context() is while_ctxt:
                internal.append(x)
            else:
                external.append(x)
        if len(internal) != len(op.control_inputs):
            op._remove_all_control_inputs()
            op._add_control_inputs(internal)
        return internal, external

    def mark_seen(self, names) -> None:
        """`names` are usable in this context and every outer one."""
        ctxt = self
        while ctxt is not None:
            ctxt._values.update(names)
            ctxt = ctxt.outer_context

    def __str__(self) -> str:
        return self.name


def post_process(op: Operation) -> None:
    """TF's Operation._control_flow_post_processing, for every op of a graph that has used
    control flow: the input check, then the current context's rewiring (done in the op's own
    name scope, so a Switch guarding input x of `cond/add` is `cond/add/Switch`)."""
    graph = op.graph
    context = graph._get_control_flow_context()
    op._set_control_flow_context(context)
    for t in op.inputs:
        check_input_from_valid_context(op, t.op)
    if context is not None:
        with graph.name_scope(op.name + "/"):
            context.add_op(op)


def is_switch(op: Operation) -> bool:
    return op.type in ("Switch", "RefSwitch")


def is_merge(op: Operation) -> bool:
    return op.type in ("Merge", "RefMerge")


def is_loop_enter(op: Operation) -> bool:
    return op.type in ("Enter", "RefEnter")


def is_loop_exit(op: Operation) -> bool:
    return op.type in ("Exit", "RefExit")


def is_loop_constant_enter(op: Operation) -> bool:
    return is_loop_enter(op) and bool(op.attrs.get("is_constant"))


def output_context(op: Operation):
    """The context an op's outputs live in (a loop's Exit hands them to the outer one)."""
    ctxt = op._get_control_flow_context()
    if ctxt is not None and is_loop_exit(op):
        ctxt = ctxt.outer_context
    return ctxt


def containing_while_context(ctxt, stop_ctxt=None):
    while ctxt is not None:
        if ctxt.is_while_context() or ctxt is stop_ctxt:
            return ctxt
        ctxt = ctxt.outer_context
    return None


def is_containing_context(ctxt, maybe_containing) -> bool:
    """True if `maybe_containing` is `ctxt` or one of its outer contexts."""
    while ctxt is not maybe_containing:
        if ctxt is None:
            return False
        ctxt = ctxt.outer_context
    return True


def op_in_context(op: Operation, ctxt) -> bool:
    return is_containing_context(op._get_control_flow_context(), ctxt)


def check_input_from_valid_context(op: Operation, input_op: Operation) -> None:
    """TF's CheckInputFromValidContext: a value computed inside a while loop is usable only
    in that loop (and loops nested in it); outside, use what the loop returns."""
    input_ctxt = output_context(input_op)
    if input_ctxt is None:
        return
    op_ctxt = op._get_control_flow_context()
    if op_ctxt is input_ctxt:
        return
    while_ctxt = containing_while_context(op_ctxt)
    input_while_ctxt = containing_while_context(input_ctxt)
    if while_ctxt is None:
        if input_while_ctxt is None or is_loop_enter(op) or is_switch(op):
            return
        raise ValueError(f"Cannot use '{input_op.name}' as input to '{op.name}' because "
                         f"'{input_op.name}' is in a while loop. Use the value the loop "
                         "returns (or a tf.TensorArray written in it) instead.")
    if is_containing_context(while_ctxt, input_while_ctxt):
        return
    # A gradient loop reads its forward loop's values (through per-iteration accumulators).
    forward = getattr(while_ctxt, "forward_context", None)
    if forward is not None and is_containing_context(forward, input_while_ctxt):
        return
    raise ValueError(f"Cannot use '{input_op.name}' as input to '{op.name}' because they are in "
                     "different while loops.")
