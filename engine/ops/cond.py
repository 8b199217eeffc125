"""tf.cond and tf.case as TF1 builds them (control flow v1): each branch is built in a
CondContext whose ops take the branch's pivot (`cond/switch_t`, `cond/switch_f`) as control
input when they have no inputs, and reach every outside tensor through a Switch on the
predicate; a Merge per output joins the branches. At run time only the taken branch's ops
run: the other Switch outputs are dead."""

from __future__ import annotations

import functools

from engine import dtypes
from engine.graph import Operation, Tensor
from engine.ops import nest
from engine.ops.control_flow_context import ControlFlowContext, op_in_context
from engine.ops.control_flow_ops import merge, switch, with_dependencies
from engine.ops.core import convert_to_tensor, graph_of

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "case",
    "cond",
]


def switch_ref_or_tensor(data, pred, name: str = "Switch"):
    """A Switch (RefSwitch for a ref) colocated with `data` alone, whatever colocation
    scope is open (a branch may apply an update under colocate_with(var))."""
    data = convert_to_tensor(data)
    with data.graph.colocate_with(data, ignore_existing=True):
        return switch(data, pred, name=name)


def as_flow(value):
    from engine.ops.tensor_array_ops import TensorArray
    return value.flow if isinstance(value, TensorArray) else value


def from_flow(like, value):
    from engine.ops.tensor_array_ops import TensorArray
    return like.with_flow(value) if isinstance(like, TensorArray) else value


class CondContext(ControlFlowContext):
    """One branch of a tf.cond: `pred` (the `pred_id` Identity), `pivot` (the branch's
    Identity of the predicate's Switch output), `branch` 1 (true) or 0 (false)."""

    def __init__(self, pred: Tensor, pivot: Tensor, branch: int, name: str = "cond_text"):
        super().__init__(pred.graph)
        self.name = pred.graph.unique_name(name)
        self.pred = pred
        self.pivot = pivot
        self.branch = branch
        self._values.add(pred.name)
        self._external_values[pred.name] = pred
        self._values.add(pivot.name)
        pivot.op._set_control_flow_context(self)

    def is_cond_context(self) -> bool:
        return True

    def control_pivot(self) -> Tensor:
        return self.pivot

    def add_value(self, value: Tensor) -> Tensor:
        """The tensor that stands for `value` inside this branch: the branch's output of a
        Switch on the predicate (made once per value)."""
        if value.name in self._values:
            return self._external_values.get(value.name, value)
        result = value
        self._values.add(value.name)
        if self.outer_context is not None:
            result = self.outer_context.add_value(value)
            self._values.add(result.name)
            self._external_values[result.name] = result
        graph = self.graph
        with graph.control_dependencies(None):
            result = switch_ref_or_tensor(result, self.pred)[self.branch]
            if self.outer_context is not None:
                self.outer_context.add_inner_op(result.op)
        result.op._set_control_flow_context(self)
        self.mark_seen([result.name])
        self._external_values[value.name] = result
        return result

    def add_op(self, op: Operation) -> None:
        if not op.inputs:
            self._remove_external_control_edges(op)
            if not any(op_in_context(c, self) for c in op.control_inputs):
                op._add_control_input(self.pivot.op)
        else:
            for index, x in enumerate(op.inputs):
                # A while loop imported into a branch: its Merge's back edge stays as it is.
                if op.type in ("Merge", "RefMerge") and x.op.type in ("NextIteration",
                                                                       "RefNextIteration"):
                    continue
                real = self.add_value(x)
                if real is not x:
                    op._update_input(index, real)
            self._remove_external_control_edges(op)
        self.mark_seen([t.name for t in op.outputs])
        if self.outer_context is not None:
            self.outer_context.add_inner_op(op)

    def _process_output(self, value: Tensor) -> Tensor:
        """A branch result; an outside tensor returned as is (`lambda: x`) gets its Switch."""
        if value.name not in self._values:
            self._values.add(value.name)
            real = value
            if self.outer_context is not None:
                real = self.outer_context.add_value(value)
                self._values.add(real.name)
                self._external_values[real.name] = real
            real = switch_ref_or_tensor(real, self.pred)[self.branch]
            self._external_values[value.name] = real
            return real
        return self._external_values.get(value.name, value)

    def _build_cond_tensor(self, value):
        if isinstance(value, Operation):
            return with_dependencies([value], self.pivot)     # the pivot stands for the op
        return self._process_output(convert_to_tensor(as_flow(value)))

    def build_branch(self, fn):
        """Calls `fn` inside this context: (what fn returned, its tensors as a list)."""
        original = fn()
        if original is None:
            return None, None
        result = nest.map_structure(self._build_cond_tensor, original)
        if not isinstance(result, (list, tuple)):
            result = [result]
        return original, result


def _unpack_if_singleton(value):
    if isinstance(value, (list, tuple)) and len(value) == 1:
        return value[0]
    return value


def _build_branch(context: CondContext, fn, label: str):
    try:
        context.enter()
        original, result = context.build_branch(fn)
        if original is None:
            raise ValueError(f"'{label}' must have a return value.")
        context.exit_result(nest.flatten(result))
    finally:
        context.exit()
    return original, result


def cond(pred, true_fn=None, false_fn=None, strict: bool = False, name=None, fn1=None,
         fn2=None):
    """`true_fn()` if `pred` is true, else `false_fn()`; both are called once, now, and only
    the taken branch's ops run at Session.run time. Both must return the same structure of
    tensors (a one-element list or tuple is unpacked unless `strict`)."""
    if fn1 is not None:
        if true_fn is not None:
            raise TypeError("cond(): 'true_fn' and 'fn1' may not be set simultaneously.")
        true_fn = fn1
    elif true_fn is None:
        raise TypeError("cond(): 'true_fn' argument required")
    if fn2 is not None:
        if false_fn is not None:
            raise TypeError("cond(): 'false_fn' and 'fn2' may not be set simultaneously.")
        false_fn = fn2
    elif false_fn is None:
        raise TypeError("cond(): 'false_fn' argument required")
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")
    if isinstance(pred, bool):
        raise TypeError("'pred' must not be a Python bool.")
    from engine.ops.array_ops import identity
    g = graph_of(pred)
    with g.as_default(), g.name_scope(name or "cond"):
        p_2, p_1 = switch(pred, pred)
        pivot_1 = identity(p_1, name="switch_t")
        pivot_2 = identity(p_2, name="switch_f")
        pred = identity(pred, name="pred_id")
        orig_t, res_t = _build_branch(CondContext(pred, pivot_1, branch=1), true_fn, "true_fn")
        orig_f, res_f = _build_branch(CondContext(pred, pivot_2, branch=0), false_fn,
                                      "false_fn")
        if not strict:
            orig_t, orig_f = _unpack_if_singleton(orig_t), _unpack_if_singleton(orig_f)
        nest.assert_same_structure(orig_t, orig_f)
        if not res_t:
            raise ValueError("'true_fn' and 'false_fn' must return at least one result.")
        flat_t, flat_f = nest.flatten(res_t), nest.flatten(res_f)
        for x, y in zip(flat_t, flat_f):
            if x.dtype.base_dtype is not y.dtype.base_dtype:
                raise ValueError("Outputs of 'true_fn' and 'false_fn' must have the same "
                                 f"type(s). Received {x.dtype.name} from 'true_fn' and "
                                 f"{y.dtype.name} from 'false_fn'.")
        merges = [merge([f, t])[0] for f, t in zip(flat_f, flat_t)]
        merges = [from_flow(like, m) for like, m in zip(nest.flatten(orig_t), merges)]
        merges = nest.pack_sequence_as(orig_t, merges)
        return merges if strict else _unpack_if_singleton(merges)


def case(pred_fn_pairs, default=None, exclusive: bool = False, strict: bool = False,
         name: str = "case"):
    """The result of the first (pred, fn) pair whose pred is true, else of `default`; built
    as nested tf.cond's. Without a default the last pair's fn is the default, guarded by an
    Assert that some pred is true; `exclusive` asserts that at most one is."""
    predicates, actions = _case_pairs(pred_fn_pairs, exclusive, name)
    g = graph_of(list(predicates))
    with g.as_default(), g.name_scope(name or "case"):
        if default is None:
            default, predicates, actions = _default_action(predicates, actions)
        fn = default
        for predicate, action in reversed(list(zip(predicates, actions))):
            fn = functools.partial(cond, predicate, true_fn=action, false_fn=fn,
                                   strict=strict)
        if exclusive:
            with g.control_dependencies([_assert_at_most_n_true(
                    predicates, 1, "Input error: exclusive=True")]):
                return fn()
        return fn()


def _case_pairs(pred_fn_pairs, exclusive: bool, name: str):
    if not isinstance(pred_fn_pairs, (list, tuple, dict)):
        raise TypeError("'pred_fn_pairs' must be a list, tuple, or dict. "
                        f"Received: {type(pred_fn_pairs)}")
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = sorted(pred_fn_pairs.items(), key=lambda item: item[0].name)
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'pred_fn_pairs' must be a 2-tuple. Received {pair}.")
        pred, fn = pair
        if not isinstance(pred, Tensor):
            raise TypeError(f"pred must be a Tensor, got: {pred}")
        if pred.dtype.base_dtype is not dtypes.bool:
            raise TypeError(f"pred must be Tensor of type bool: {pred.name}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
    if not pred_fn_pairs:
        raise ValueError(f"{name}: 'pred_fn_pairs' must not be empty.")
    predicates, actions = zip(*pred_fn_pairs)
    return list(predicates), list(actions)


def _assert_at_most_n_true(predicates, n: int, msg: str):
    from engine.ops.array_ops import cast, stack
    from engine.ops.control_flow_ops import Assert
    from engine.ops.core import make_constant
    from engine.ops.math_ops import less_equal
    from engine.ops.reduction_ops import reduce_sum
    preds = stack(predicates, name="preds_c")
    count = reduce_sum(cast(preds, dtypes.int32), name="num_true_conds")
    condition = less_equal(count, make_constant(n, name="n_true_conds"))
    names = ", ".join(p.name for p in predicates)
    return Assert(condition, [f"{msg}: more than {n} conditions ({names}) evaluated as True:",
                              preds], summarize=len(predicates))


def _default_action(predicates, actions):
    """TF's: the last pair becomes the default, asserting that its predicate (or another)
    is true when it is taken."""
    from engine.ops.array_ops import stack
    from engine.ops.control_flow_ops import Assert
    k = len(predicates) - 1
    predicate, action = predicates[k], actions[k]

    def default_action():
        others = (f"Implementation error: selected default action #{k} was called, but some "
                  "of other predicates are True: ")
        checks = [_assert_at_most_n_true(predicates[:k], 0, others)] if k else []
        checks.append(Assert(predicate, ["Input error: None of conditions evaluated as True:",
                                         stack(predicates, name="preds_c")],
                             summarize=len(predicates)))
        with graph_of(predicate).control_dependencies(checks):
            return action()
    return default_action, predicates[:k], actions[:k]
