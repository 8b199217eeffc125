"""`gradients(ys, xs)`: reverse-mode differentiation by graph extension (TF's
gradients_impl). The backward pass is ordinary graph ops, so placement, partitioning and the
workbench see it like any other part of the graph."""

from __future__ import annotations

import collections
import contextlib

from engine import dtypes
from engine.graph import Operation, Tensor
from engine.ops import array_ops, math_ops
from engine.ops import control_flow_state as cfs
from engine.ops import grads as _grads  # noqa: F401 - installs the gradient table
from engine.ops.control_flow_ops import tuple as gate_tuple
from engine.ops.core import convert_to_tensor, graph_of


class AggregationMethod:
    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


def _as_tensor_list(values) -> list[Tensor]:
    values = values if isinstance(values, (list, tuple)) else [values]
    out = []
    for v in values:
        ref = getattr(v, "_ref", None)
        out.append(ref() if ref is not None else convert_to_tensor(v))
    return out


def _between_ops(y_ops: list[Operation], x_ops: list[Operation]) -> set[Operation]:
    """Ops reachable from xs that also lead to ys."""
    reached = set()
    queue = collections.deque(x_ops)
    consumers = _consumer_map(y_ops[0].graph)
    while queue:
        op = queue.popleft()
        if op in reached:
            continue
        reached.add(op)
        queue.extend(consumers.get(op, ()))
    between = set()
    queue = collections.deque(y_ops)
    while queue:
        op = queue.popleft()
        if op in reached and op not in between:
            between.add(op)
            queue.extend(t.op for t in op.inputs)
    return between


def _consumer_map(graph) -> dict[Operation, list[Operation]]:
    consumers: dict[Operation, list[Operation]] = {}
    for op in graph.get_operations():
        for t in op.inputs:
            consumers.setdefault(t.op, []).append(op)
    return consumers


_AGGREGATION_METHODS = (AggregationMethod.ADD_N, AggregationMethod.EXPERIMENTAL_TREE,
                        AggregationMethod.EXPERIMENTAL_ACCUMULATE_N)


def _check_aggregation_method(method) -> int:
    if method is None:
        return AggregationMethod.DEFAULT
    if isinstance(method, bool) or method not in _AGGREGATION_METHODS:
        raise ValueError(f"Invalid `aggregation_method` specified {method}. Accepted values "
                         f"are {list(_AGGREGATION_METHODS)}.")
    return method


def _aggregate(terms: list[Tensor], method: int, op: Operation | None = None) -> Tensor | None:
    """Sums the gradient terms of one tensor (TF 6.5). ADD_N: one AddN, per device first
    when the terms sit on several; EXPERIMENTAL_TREE: pairwise AddNs in scope
    `<op>_gradient_sum`; EXPERIMENTAL_ACCUMULATE_N: with more than two terms of fully known
    shape one order-free sum (TF's AccumulateNV2, here an AddN named AccumulateN), else
    the tree."""
    terms = [t for t in terms if t is not None]
    if not terms:
        return None
    if len(terms) == 1:
        return terms[0]
    if method == AggregationMethod.EXPERIMENTAL_ACCUMULATE_N and len(terms) > 2 and \
            all(t.shape.is_fully_defined() for t in terms):
        return math_ops.add_n(terms, name="AccumulateN")
    if method != AggregationMethod.ADD_N:
        scope = f"{op.name}_gradient_sum" if op is not None else "gradient_sum"
        with terms[0].graph.name_scope(scope):
            total = terms[0]
            for t in terms[1:]:
                total = math_ops.add_n([total, t])
        return total
    by_device: dict[str, list[Tensor]] = {}
    for t in terms:
        by_device.setdefault(t.device, []).append(t)
    if len(by_device) == 1:
        return math_ops.add_n(terms)
    partial = []
    for device in sorted(by_device):
        group = by_device[device]
        with group[0].graph.colocate_with(group[0].op):
            partial.append(math_ops.add_n(group) if len(group) > 1 else group[0])
    return math_ops.add_n(partial)


def _default_grad_ys(ys: list[Tensor], grad_ys) -> list[Tensor]:
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    elif not isinstance(grad_ys, (list, tuple)):
        grad_ys = [grad_ys]     # TF accepts a single tensor, as it does for ys
    grad_ys = list(grad_ys)
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    out = []
    for i, (y, gy) in enumerate(zip(ys, grad_ys)):
        if gy is None:
            if y.dtype.is_complex:
                raise TypeError(f"Gradients of complex tensors must set grad_ys (y.dtype = "
                                f"{y.dtype.name})")
            one = array_ops.constant(1, dtype=y.dtype.base_dtype, name=f"grad_ys_{i}")
            gy = array_ops.fill(array_ops.shape(y), one)
        else:
            gy = convert_to_tensor(gy, dtype=y.dtype.base_dtype)
        out.append(gy)
    return out


def gradients(ys, xs, grad_ys=None, name: str = "gradients",
              colocate_gradients_with_ops: bool = False, gate_gradients: bool = False,
              aggregation_method=None, stop_gradients=None) -> list[Tensor | None]:
    """d(sum of ys)/d(x) for each x in xs; None where x does not reach ys."""
    aggregation_method = _check_aggregation_method(aggregation_method)
    ys = _as_tensor_list(ys)
    xs = _as_tensor_list(xs)
    stop_ops = {t.op for t in _as_tensor_list(stop_gradients or [])}
    g = graph_of(ys + xs)
    with g.as_default(), g.name_scope(name), cfs.gradient_states():
        grad_ys = _default_grad_ys(ys, grad_ys)
        between = _between_ops([y.op for y in ys], [x.op for x in xs])
        unused_exits = cfs.unused_loop_exits(between) if g._control_flow_used else []
        between.update(unused_exits)
        x_ops = {x.op for x in xs}
        pending = collections.Counter()
        for op in between:
            for t in op.inputs:
                if t.op in between:
                    pending[t.op] += 1
        grads: dict[Tensor, list[Tensor]] = {}
        for y, gy in zip(ys, grad_ys):
            grads.setdefault(y, []).append(gy)
        for op in unused_exits:
            if op.outputs[0].dtype.base_dtype in dtypes.FLOATS:
                grads[op.outputs[0]] = [cfs.zeros_for_exit(op.outputs[0])]
        queue = collections.deque(op for op in {y.op for y in ys}
                                  if pending[op] == 0 and op in between)
        queue.extend(op for op in unused_exits if pending[op] == 0)
        seen = set()
        while queue:
            op = queue.popleft()
            # A loop's Switch is visited once per gradient that reaches it (the Exit's, then
            # the body's).
            loop_switch = cfs.is_loop_switch(op)
            if op in seen and not loop_switch:
                continue
            seen.add(op)
            # TF sums an op's output gradients inside its colocation too, so a gradient
            # summed from several consumers stays on the op's device.
            with g.colocate_with(op) if colocate_gradients_with_ops else \
                    contextlib.nullcontext(), cfs.in_grad_context(op, before=True):
                out_grads = [_aggregate(grads.get(t, []), aggregation_method, op)
                             for t in op.outputs]
            # Keep the sum, so an x that is also on the path is not summed a second time.
            for t, total in zip(op.outputs, out_grads):
                if total is not None:
                    grads[t] = [total]
            with cfs.in_grad_context(op, before=False):
                in_grads = _backprop_op(g, op, out_grads, x_ops, between, stop_ops,
                                        colocate_gradients_with_ops, gate_gradients,
                                        loop_switch)
            for t, gi in zip(op.inputs, in_grads):
                if gi is not None:
                    grads.setdefault(t, []).append(gi)
                if t.op in between:
                    pending[t.op] -= 1
                    if pending[t.op] == 0 or (pending[t.op] > 0 and
                                              cfs.is_loop_switch(t.op)):
                        queue.append(t.op)
        return [_aggregate(grads.get(x, []), aggregation_method, x.op) for x in xs]


def _backprop_op(g, op: Operation, out_grads, x_ops, between, stop_ops, colocate: bool,
                 gate: bool, loop_switch: bool = False):
    """Runs op's gradient rule in scope `<op>_grad`; [None]*inputs when nothing flows."""
    nothing = [None] * len(op.inputs)
    if op in stop_ops or all(gr is None for gr in out_grads):
        return nothing
    if op in x_ops and not any(t.op in x_ops for t in op.inputs):
        return nothing
    op_def = op.op_def
    if op_def.not_differentiable:
        return nothing
    if op_def.gradient is None:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type})")
    scope_ctx = g.colocate_with(op) if colocate else contextlib.nullcontext()
    with scope_ctx, g.name_scope(f"{op.name}_grad"):
        # A loop Switch's missing gradient is not zeros: it has not arrived yet.
        filled = [gr if gr is not None or loop_switch else _zeros_for(op, i)
                  for i, gr in enumerate(out_grads)]
        in_grads = list(op_def.gradient(op, *filled))
        if len(in_grads) != len(op.inputs):
            raise ValueError(f"Num gradients {len(in_grads)} generated for op {op.name} "
                             f"({op.type}) do not match num inputs {len(op.inputs)}")
        in_grads = _needed(op, in_grads, between)
        if gate and sum(1 for x in in_grads if x is not None) > 1:
            in_grads = gate_tuple(in_grads)
    return in_grads


def _needed(op: Operation, in_grads: list, between) -> list:
    """Drops the gradients of inputs that lead back to no x (the images placeholder under a
    first convolution, say). Nothing reads them, but gate_gradients' tuple() would make the
    step wait for them, so their ops (a Conv2DBackpropInput) would run every step. TF itself
    gates and so computes them; the values asked for are the same either way, only the
    unneeded ops stay unrun (the session prunes them)."""
    return [gr if t.op in between else None for t, gr in zip(op.inputs, in_grads)]


def _zeros_for(op: Operation, index: int):
    t = op.outputs[index]
    if t.dtype.base_dtype in dtypes.FLOATS or t.dtype.is_complex:
        if op.graph._control_flow_used:
            in_loop = cfs.cond_switch_zeros(op, index)
            if in_loop is not None:
                return in_loop
        return array_ops.zeros_like(t)
    return None
