"""The fused twin's compiled while loops: a top-level loop of plain kernels whose inputs can
never be dead runs as one item, a Python `while` over its iterations one after another (a
schedule parallel_iterations allows), each iteration computing what the per-node one does."""

from __future__ import annotations

import collections

from engine import errors
from engine.kernels.control_flow import NO_VALUE, _pred_value
from engine.runtime.clusters import build, emit
from engine.runtime.frames import (
    CONST,
    ENTER,
    EXIT,
    KERNEL,
    MERGE,
    NEXT,
    RECV,
    ROOT_FRAME,
    TRIGGER,
    Item,
)

_SWITCHES = ("Switch", "RefSwitch")


class CompiledLoop:
    """One loop frame (its Enters and every node inside) as one program; implements the
    wiring interface clusters._rewire uses (internal, output, external)."""

    accepts_controls = True

    def __init__(self, shape: _Shape, label: str, device):
        self.shape = shape
        self.members = shape.enters + shape.nodes
        self.label = label
        self.device = device
        self.position = {m.id: i for i, m in enumerate(self.members)}
        self.inputs: dict[tuple, int] = {}
        self.outputs: dict[tuple, int] = {}
        self.control_members: list[int] = []
        self.enter_input: dict[int, int] = {}
        self.run = None

    def internal(self, src_id: int, dst_id: int, slot: int, src_slot: int) -> None:
        """Inside edges are read from the shape when compiling."""

    def output(self, member_id: int, slot: int) -> int:
        return self.outputs.setdefault((member_id, slot), len(self.outputs))

    def external(self, src_id: int, src_slot: int, dst_id: int, slot: int) -> bool:
        key = (src_id, src_slot)
        new = key not in self.inputs
        self.enter_input[dst_id] = self.inputs.setdefault(key, len(self.inputs))
        return new

    def compile(self) -> None:
        shape = self.shape
        args = [f"a{k}" for k in range(len(self.inputs))]
        names: dict[tuple, str] = {}
        for e in shape.enters:
            names[(e.id, 0)] = args[self.enter_input[e.id]]
        merge_var = {}
        for j, m in enumerate(shape.merges):
            merge_var[m.id] = f"m{j}"
            names[(m.id, 0)] = f"m{j}"
        for s in shape.switches:
            names[(s.id, 1)] = merge_var[shape.switch_merge[s.id].id]
        scope: dict = {"pred": _predicate(shape.switches[0].node)}
        lines = [f"def loop({', '.join(args)}):"]
        line_nodes: dict[int, object] = {}
        merges = ", ".join(merge_var[m.id] for m in shape.merges)
        if merges:
            lines.append(f"    {merges}, = "
                         + "".join(names[(shape.merge_enter[m.id].id, 0)] + ", "
                                   for m in shape.merges))
        lines.append("    while True:")
        for n in shape.pre:
            self._emit(n, names, scope, lines, line_nodes)
        names[(shape.cond.id, 0)] = self._input(shape.cond, 0, names)
        lines.append(f"        if not pred({names[(shape.cond.id, 0)]}):")
        line_nodes[len(lines)] = shape.switches[0].node
        lines.append("            break")
        for n in shape.body:
            self._emit(n, names, scope, lines, line_nodes)
        if merges:
            nexts = [self._input(shape.merge_next[m.id], 0, names) for m in shape.merges]
            lines.append(f"        {merges}, = {''.join(v + ', ' for v in nexts)}")
        results = []
        for member_id, _ in self.outputs:
            exit_item = self.members[self.position[member_id]]
            results.append(merge_var[shape.switch_merge[shape.exit_switch[exit_item.id].id].id])
        lines.append(f"    return {results[0]}" if len(results) == 1 else
                     f"    return ({''.join(r + ', ' for r in results)})")
        self.run = build(lines, scope, line_nodes, f"{self.label} loop", "loop", self.device)

    def _input(self, item: Item, slot: int, names) -> str:
        src, src_slot = self.shape.inputs[item.id][slot]
        return names[(src.id, src_slot)]

    def _emit(self, n: Item, names, scope, lines, line_nodes) -> None:
        ins = [names[(src.id, src_slot)] for src, src_slot in self.shape.inputs[n.id]]
        emit(n, f"{n.id}", ins, names, (n.id,), scope, lines, line_nodes, "        ")

    def run_dead(self, values) -> tuple[tuple, list[bool]]:
        """A loop whose inputs are all dead (on an untaken branch) is dead, its Exits too;
        the plan compiles no loop whose inputs could be dead one by one."""
        if any(v is not NO_VALUE for v in values):
            raise errors.InternalError(
                self.members[0].node, None, f"The compiled while loop '{self.shape.frame}' "
                                            "got some inputs dead and some live.")
        return (NO_VALUE,) * len(self.outputs), [True] * len(self.members)


def _predicate(switch_node):
    def pred(value) -> bool:
        return _pred_value(switch_node, value)
    return pred


class _Shape:
    """A loop frame taken apart: its Enters, Merges (each with its Enter and NextIteration),
    Switches, the LoopCond, Exits, and the plain nodes before the LoopCond (`pre`, run in
    every iteration, the last one too) and after the Switches (`body`, live iterations)."""

    def __init__(self, frame: str):
        self.frame = frame
        self.enters: list[Item] = []
        self.nodes: list[Item] = []
        self.merges: list[Item] = []
        self.switches: list[Item] = []
        self.cond: Item | None = None
        self.pre: list[Item] = []
        self.body: list[Item] = []
        self.merge_enter: dict[int, Item] = {}
        self.merge_next: dict[int, Item] = {}
        self.switch_merge: dict[int, Item] = {}
        self.exit_switch: dict[int, Item] = {}
        self.inputs: dict[int, list] = {}
        self.sources: list[Item] = []        # producers of the Enters (data and control)


def find_loops(items: list[Item], order: list[Item]) -> list[_Shape]:
    """The top-level loops the fused twin runs compiled: each has the shape _Shape
    describes, no input that can be dead, and no path from its Exits back to its Enters."""
    inputs, controls = _in_edges(items)
    by_frame: dict[str, list[Item]] = collections.defaultdict(list)
    enters: dict[str, list[Item]] = collections.defaultdict(list)
    for item in order:
        if item.frame.name != ROOT_FRAME:
            by_frame[item.frame.name].append(item)
        if item.kind == ENTER and item.frame.name == ROOT_FRAME:
            enters[item.child.name].append(item)
    shapes = {}
    for name, nodes in by_frame.items():
        if nodes[0].frame.parent == ROOT_FRAME:
            shape = _take_apart(name, nodes, enters[name], inputs, controls)
            if shape is not None and not _exits_reach_enters(shape):
                shapes[name] = shape
    while shapes and not _inputs_live(order, shapes, inputs, controls):
        pass
    return list(shapes.values())


def _in_edges(items: list[Item]):
    inputs = {item.id: [None] * item.num_inputs for item in items}
    controls = {item.id: [] for item in items}
    for item in items:
        for dst, slot, src_slot in item.out_edges:
            inputs[dst.id][slot] = (item, src_slot)
        for dst in item.out_controls:
            controls[dst.id].append(item)
    return inputs, controls


def _take_apart(name: str, nodes: list[Item], enters: list[Item], inputs,
                controls) -> _Shape | None:
    shape = _Shape(name)
    shape.enters, shape.nodes = enters, nodes
    shape.inputs = inputs
    plain, conds = [], []
    for n in nodes:
        if n.kind == MERGE:
            shape.merges.append(n)
        elif n.kind == KERNEL and n.node.op in _SWITCHES:
            shape.switches.append(n)
        elif n.kind == KERNEL and n.node.op == "LoopCond":
            conds.append(n)
        elif n.kind in (NEXT, EXIT):
            pass
        elif (n.kind == KERNEL and not n.reads) or n.kind in (CONST, TRIGGER):
            plain.append(n)
        else:
            return None       # a nested loop's Enter, a transfer, a ref read
        if n.kind not in (KERNEL, CONST, TRIGGER) and controls[n.id]:
            return None
    if len(conds) != 1 or not shape.switches or any(e.reads for e in enters):
        return None
    shape.cond = conds[0]
    if not _wire_merges(shape, inputs) or not _wire_switches(shape, nodes, inputs):
        return None
    if not _classify(shape, plain, inputs, controls):
        return None
    for e in enters:
        shape.sources.extend(src for src, _ in inputs[e.id])
        shape.sources.extend(controls[e.id])
    return shape


def _wire_merges(shape: _Shape, inputs) -> bool:
    for m in shape.merges:
        srcs = inputs[m.id]
        if len(srcs) != 2 or any(slot == 1 for _, _, slot in m.out_edges):
            return False
        kinds = {src.kind: src for src, _ in srcs}
        enter, following = kinds.get(ENTER), kinds.get(NEXT)
        if enter is None or following is None or enter.is_constant or \
                len(enter.out_edges) != 1:
            return False
        shape.merge_enter[m.id], shape.merge_next[m.id] = enter, following
    return True


def _wire_switches(shape: _Shape, nodes: list[Item], inputs) -> bool:
    merges = {m.id for m in shape.merges}
    for s in shape.switches:
        (data, data_slot), (pred, _) = inputs[s.id]
        if data.id not in merges or data_slot != 0 or pred is not shape.cond:
            return False
        if any(dst.kind != EXIT for dst, _, slot in s.out_edges if slot == 0):
            return False
        shape.switch_merge[s.id] = data
    if len(set(map(id, shape.switch_merge.values()))) != len(shape.merges):
        return False      # every loop variable has exactly one Switch
    for n in nodes:
        if n.kind == EXIT:
            src, slot = inputs[n.id][0]
            if src.id not in shape.switch_merge or slot != 0:
                return False
            shape.exit_switch[n.id] = src
    return True


def _classify(shape: _Shape, plain: list[Item], inputs, controls) -> bool:
    """Splits the plain nodes into `pre` and `body`: a node is in the body when an input
    (or control input) is a Switch's live output or a body node; the last iteration runs
    only `pre`. A node that only a ControlTrigger would hold back is refused (the last
    iteration's trigger would run it there)."""
    switches = {s.id for s in shape.switches}
    body = set()
    for n in plain:
        srcs = list(inputs[n.id])
        live = any(src.id in switches and slot == 1 for src, slot in srcs)
        every = [src for src, _ in srcs] + controls[n.id]
        live = live or any(src.id in body for src in every)
        if n.kind == TRIGGER:
            continue
        if live:
            body.add(n.id)
            shape.body.append(n)
        elif any(src.kind == TRIGGER for src in every):
            return False
        elif any(src.id in switches for src in every):
            return False
        else:
            shape.pre.append(n)
    cond_src = inputs[shape.cond.id][0][0]
    if cond_src.id in body or cond_src.kind in (ENTER, TRIGGER):
        return False
    for m in shape.merges:
        src, slot = inputs[shape.merge_next[m.id].id][0]
        if not (src.id in body or (src.id in switches and slot == 1)):
            return False
    for n in plain:
        if n.kind == TRIGGER and any(dst.id not in body for dst in n.out_controls) or \
                n.kind == TRIGGER and n.out_edges:
            return False
    return True


def _exits_reach_enters(shape: _Shape) -> bool:
    targets = {src.id for src in shape.sources}
    inside = {n.id for n in shape.nodes}
    seen, stack = set(), [n for n in shape.nodes if n.kind == EXIT]
    while stack:
        item = stack.pop()
        for dst in [e[0] for e in item.out_edges] + item.out_controls:
            if dst.id in targets:
                return True
            if dst.id not in seen and dst.id not in inside:
                seen.add(dst.id)
                stack.append(dst)
    return False


def _inputs_live(order: list[Item], shapes: dict, inputs, controls) -> bool:
    """Drops the loops an input of which could be dead (a Switch's output, a Recv, the Exit
    of a loop not compiled, or anything computed from one); True when none was dropped."""
    exit_frame = {n.id: name for name, shape in shapes.items() for n in shape.nodes
                  if n.kind == EXIT}
    may_die: dict[int, bool] = {}
    pending = [item for item in order
               if item.frame.name == ROOT_FRAME or item.id in exit_frame]
    while pending:
        left = []
        for item in pending:
            value = _may_die(item, shapes.get(exit_frame.get(item.id)), may_die, inputs,
                             controls)
            if value is None:
                left.append(item)
            else:
                may_die[item.id] = value
        if len(left) == len(pending):
            break
        pending = left
    dropped = [name for name, shape in shapes.items()
               if any(may_die.get(src.id) is not False for src in shape.sources)]
    for name in dropped:
        del shapes[name]
    return not dropped


def _may_die(item: Item, shape: _Shape | None, may_die: dict, inputs, controls):
    """Whether `item`'s outputs can be dead; None while an input is still unknown."""
    if item.kind == EXIT:
        if shape is None:
            return True
        known = [may_die.get(src.id) for src in shape.sources]
        return None if None in known else any(known)
    if item.kind == TRIGGER:
        return False
    if item.kind == RECV or (item.kind == KERNEL and item.node.op in _SWITCHES):
        return True
    known = [may_die.get(src.id) for src, _ in inputs[item.id]]
    known += [may_die.get(src.id) for src in controls[item.id]]
    if item.kind == MERGE:
        if False in known:
            return False
        return None if None in known else True
    if True in known:
        return True
    return None if None in known else False
