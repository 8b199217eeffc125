"""The dynamic executor: runs a partition with control flow as TensorFlow's executor does
(core/common_runtime/executor.cc, propagator_state.cc). Every node has a pending count per
frame iteration; a node whose count reaches zero joins a FIFO ready queue. A node with a dead
input is dead: it runs no kernel and its outputs are dead, except Merge (it forwards its first
live input and is dead only when every data input is) and the transfer nodes (a dead value
crosses as NO_VALUE). Enter pushes a value into a child frame, one frame instance per parent
iteration (a constant Enter into every iteration), NextIteration into the frame's next
iteration (at most parallel_iterations in flight), Exit into the parent frame. Values are
dropped at their consumer, iterations and frames as soon as they are done."""

from __future__ import annotations

import collections
import hashlib
import threading
import time
import traceback

import torch

from engine import errors
from engine.graph_def import NodeDef, parse_input
from engine.kernels.control_flow import NO_VALUE
from engine.kernels.registry import Constant, KernelContext
from engine.runtime.executor import make_kernel, node_failure, output_bytes, ref_input_slots
from engine.runtime.executor_api import DYNAMIC
from engine.runtime.rendezvous import Deadline

ROOT_FRAME = ""

# Node kinds, by how the executor treats them.
_KERNEL, _CONST, _ARG, _RETVAL, _SEND, _RECV, _MERGE, _ENTER, _EXIT, _NEXT, _TRIGGER = range(11)
_KIND_OF = {"_Arg": _ARG, "_Retval": _RETVAL, "_Send": _SEND, "_Recv": _RECV,
            "Merge": _MERGE, "RefMerge": _MERGE, "Enter": _ENTER, "RefEnter": _ENTER,
            "Exit": _EXIT, "RefExit": _EXIT, "NextIteration": _NEXT, "RefNextIteration": _NEXT,
            "ControlTrigger": _TRIGGER}
_UNTRACED = (_CONST, _ARG, _RETVAL)


class _FrameInfo:
    """What every instance of one frame (a while loop) shares: its nodes' local pending-count
    slots, their initial values and the size of an iteration's input buffer."""

    __slots__ = ("name", "parent", "items", "initial_pending", "total_inputs", "input_count",
                 "parallel_iterations")

    def __init__(self, name: str, parent: str | None):
        self.name = name
        self.parent = parent
        self.items: list[_Item] = []
        self.initial_pending: list[int] = []
        self.total_inputs = 0
        self.input_count = 0          # Enter nodes into this frame
        self.parallel_iterations = 1


class _Item:
    """One node, compiled: its kind, kernel, input slots and out-edges."""

    __slots__ = ("id", "node", "kind", "kernel", "value", "num_inputs", "input_start", "reads",
                 "out_edges", "out_controls", "num_outputs", "dead_outputs", "pending_id",
                 "frame", "child", "is_constant", "index", "key", "copy_to", "traced", "blank")

    def __init__(self, index: int, node: NodeDef):
        self.id = index
        self.node = node
        self.kind = _KIND_OF.get(node.op, _KERNEL)
        self.kernel = None
        self.value = None
        self.num_inputs = len(node.data_inputs())
        self.input_start = 0
        self.reads: tuple[int, ...] = ()
        self.out_edges: list[tuple] = []      # (consumer item, its input location, src slot)
        self.out_controls: list[_Item] = []
        self.num_outputs = len(node.output_dtypes)
        self.dead_outputs = (NO_VALUE,) * self.num_outputs
        self.blank = (NO_VALUE,) * self.num_inputs    # what a consumed input slot holds
        self.pending_id = 0
        self.frame: _FrameInfo | None = None
        self.child: _FrameInfo | None = None  # an Enter's frame
        self.is_constant = bool(node.attr.get("is_constant", False))
        self.index = node.attr.get("index", 0)
        self.key = node.meta.get("key", "")
        self.copy_to = None
        self.traced = True


class DynamicPartition:
    """A partition run by the dynamic executor (see the module docstring); implements
    engine.runtime.executor_api.PartitionExecutor. `peer_devices` maps each device name to its
    torch device, so a Recv from a device sharing this one's memory skips the copy."""

    kind = DYNAMIC

    def __init__(self, device, nodes: list[NodeDef], ctx: KernelContext, label: str,
                 peer_devices: dict[str, str] | None = None):
        self.device = device
        self.nodes = list(nodes)
        self.label = label
        self._peers = peer_devices or {}
        self.items = [_Item(i, n) for i, n in enumerate(self.nodes)]
        self._by_name = {n.name: item for n, item in zip(self.nodes, self.items)}
        in_edges = _link(self.items, self._by_name)
        self.frames = _assign_frames(self.items, in_edges)
        self._layout(in_edges)
        self.roots = [item for item in self.items if not in_edges[item.id]]
        self._bind_kernels(ctx)
        self.num_kernels = sum(1 for item in self.items if item.traced)
        self.retvals = [item for item in self.items if item.kind == _RETVAL]

    # -- building -----------------------------------------------------------------------------

    def _layout(self, in_edges) -> None:
        """Each frame's pending-count slots and input buffer; TF's initial counts (a Merge
        waits for its control inputs twice over and one live data input: 1 + 2 * controls)."""
        for item in self.items:
            info = item.frame
            item.pending_id = len(info.items)
            info.items.append(item)
            item.input_start = info.total_inputs
            info.total_inputs += item.num_inputs
            controls = sum(1 for _, slot in in_edges[item.id] if slot < 0)
            info.initial_pending.append(1 + 2 * controls if item.kind == _MERGE
                                        else len(in_edges[item.id]))
            if item.kind == _ENTER:
                item.child.input_count += 1
                item.child.parallel_iterations = int(
                    item.node.attr.get("parallel_iterations", 10))
        for item in self.items:
            item.out_edges = [(dst, dst.input_start + slot, src_slot)
                              for dst, slot, src_slot in item.out_edges]

    def _bind_kernels(self, ctx: KernelContext) -> None:
        for item in self.items:
            kind = item.kind
            if kind in (_ARG, _RETVAL):
                item.traced = False
            elif kind == _RECV:
                if self._peers.get(item.node.attr["send_device"]) != self.device.torch_device:
                    item.copy_to = torch.device(self.device.torch_device)
            elif kind != _SEND:
                made = make_kernel(item.node, self.device, ctx)
                if isinstance(made, Constant):
                    item.kind, item.value, item.traced = _CONST, made.value, False
                else:
                    item.kernel = made
            if item.frame.name != ROOT_FRAME:
                _check_inside_frame(item)

    # -- running ------------------------------------------------------------------------------

    def run(self, feeds, out, rendezvous, stats: list | None,
            deadline: Deadline | None = None) -> None:
        records = [] if stats is not None else None
        checker = stats.checker(self) if hasattr(stats, "checker") else None
        step = _Step(self, feeds, out, rendezvous, records, checker, deadline)
        try:
            step.execute()
        except BaseException as e:
            traceback.clear_frames(e.__traceback__)
            raise
        finally:
            if stats is not None:
                stats.append((self, threading.get_ident(), records))
        for item in self.retvals:
            if out[item.index] is None:
                raise errors.InvalidArgumentError(
                    item.node, None, f"Retval[{item.index}] does not have value")

    def frame_of(self, name: str) -> str:
        """The frame (while loop) a node of this partition runs in; "" is the top level."""
        return self._by_name[name].frame.name


def _link(items: list[_Item], by_name: dict[str, _Item]) -> list[list[tuple]]:
    """Out-edges per producer; returns each node's in-edges as (producer, slot or -1)."""
    in_edges: list[list[tuple]] = [[] for _ in items]
    for item in items:
        reads, ref_slots = [], ref_input_slots(item.node)
        for slot, spelling in enumerate(item.node.data_inputs()):
            src_name, src_slot = parse_input(spelling)
            src = by_name[src_name]
            src.out_edges.append((item, slot, src_slot))
            in_edges[item.id].append((src, slot))
            dtypes_out = src.node.output_dtypes
            if src_slot < len(dtypes_out) and dtypes_out[src_slot].is_ref and \
                    slot not in ref_slots:
                reads.append(slot)
        for src_name in item.node.control_inputs():
            src = by_name[src_name]
            src.out_controls.append(item)
            in_edges[item.id].append((src, -1))
        item.reads = tuple(reads)
    return in_edges


def frames_of(nodes: list[NodeDef]) -> dict[str, str]:
    """The frame (while loop) each node runs in, "" for the top level, by the executor's
    rules: an Enter runs in the parent frame and feeds its frame_name, an Exit runs in the
    loop's frame and feeds the parent. Raises TF's errors for an invalid loop structure."""
    items = [_Item(i, n) for i, n in enumerate(nodes)]
    by_name = {n.name: item for n, item in zip(nodes, items)}
    _assign_frames(items, _link(items, by_name))
    return {item.node.name: item.frame.name for item in items}


def check_transfers_outside_loops(nodes: list[NodeDef], cut_edges) -> None:
    """The seam for loops across devices. A transfer's key already carries
    frame_id:iteration (rendezvous_key_in), but the partitioner does not yet give each
    device its own copy of the loop's control structure (TF's AddControlFlow), so a value
    crossing devices inside a loop is refused here, naming the loop and the devices."""
    if not any(n.op in ("Enter", "RefEnter") for n in nodes):
        return
    frames = frames_of(nodes)
    for edge in cut_edges:
        inside = [c for c in edge.consumers if frames.get(c, ROOT_FRAME) != ROOT_FRAME]
        if inside:
            raise errors.UnimplementedError(
                None, None, f"The while loop '{frames[inside[0]]}' spans devices: "
                            f"{edge.tensor} on {edge.src_device} feeds '{inside[0]}' on "
                            f"{edge.dst_device} inside the loop. Loops whose body spans "
                            "devices are not supported yet; place the loop's ops on one "
                            "device with tf.device.")


def _assign_frames(items: list[_Item], in_edges) -> dict[str, _FrameInfo]:
    """TF's BuildControlFlowInfo: a breadth-first walk from the roots; an Enter's consumers
    are in its frame_name, an Exit's in the parent of its frame. A node reached from two
    frames is refused with TF's message."""
    frames = {ROOT_FRAME: _FrameInfo(ROOT_FRAME, None)}
    first_from: dict[int, _Item] = {}
    queue = collections.deque(item for item in items if not in_edges[item.id])
    for item in queue:
        item.frame = frames[ROOT_FRAME]
    while queue:
        item = queue.popleft()
        here = item.frame
        if item.kind == _ENTER:
            name = item.node.attr.get("frame_name", "")
            if not name:
                raise errors.InvalidArgumentError(
                    item.node, None, f"The Enter node {item.node.name} must have a frame name.")
            here = frames.setdefault(name, _FrameInfo(name, item.frame.name))
            if here.parent != item.frame.name:
                raise errors.InternalError(
                    item.node, None, f"Invalid loop structure: Mismatched parent frames for "
                                     f"\"{name}\": \"{item.frame.name}\" vs \"{here.parent}\". "
                                     f"The node giving this error: node {item.node.name}.")
            item.child = here
        elif item.kind == _EXIT:
            here = frames[item.frame.parent] if item.frame.parent is not None else item.frame
        successors = [dst for dst, _, _ in item.out_edges] + item.out_controls
        for dst in successors:
            if dst.frame is None:
                dst.frame = here
                first_from[dst.id] = item
                queue.append(dst)
            elif dst.frame is not here:
                other = first_from.get(dst.id, dst)
                raise errors.InvalidArgumentError(
                    dst.node, None, f"node {dst.node.name} has inputs from different frames. The "
                                    f"input node {item.node.name} is in frame '{here.name}'. The "
                                    f"input node {other.node.name} is in frame "
                                    f"'{dst.frame.name}'.")
    for item in items:
        if item.frame is None:      # unreachable from the roots (TF leaves these in the root)
            item.frame = frames[ROOT_FRAME]
    return frames


def _check_inside_frame(item: _Item) -> None:
    node = item.node
    if item.kind == _RETVAL:
        fetch = node.meta.get("fetch", node.data_inputs()[0])
        raise errors.InvalidArgumentError(
            node, None, f"Cannot fetch '{fetch}': it is computed inside the while loop "
                        f"'{item.frame.name}', once per iteration. Fetch a value the loop "
                        "returns, or collect the per-iteration values in a tf.TensorArray.")
    if item.kind in (_SEND, _RECV):
        raise errors.UnimplementedError(
            node, None, f"The while loop '{item.frame.name}' spans devices: a value inside it "
                        f"crosses from {node.attr['send_device']} to {node.attr['recv_device']} "
                        f"({node.attr['tensor_name']}); see check_transfers_outside_loops.")


def frame_instance_id(parent_id: int, iteration: int, frame_name: str) -> int:
    """TF's Hash64Combine(parent frame id, iteration, frame name): the same on every device,
    so partitions of one loop agree on the frame_id:iteration part of a rendezvous key."""
    digest = hashlib.blake2b(f"{parent_id};{iteration};{frame_name}".encode(),
                             digest_size=8).digest()
    return int.from_bytes(digest, "little")


def rendezvous_key_in(key: str, frame_id: int, iteration: int) -> str:
    """A transfer's key for one frame iteration (TF_BEHAVIOUR 3.9: `...;<frame_id>:<iter>`)."""
    if frame_id == 0 and iteration == 0:
        return key
    return f"{key.rsplit(';', 1)[0]};{frame_id}:{iteration}"


class _Iteration:
    __slots__ = ("num", "pending", "dead", "inputs", "outstanding_ops", "outstanding_frames")

    def __init__(self, num: int, info: _FrameInfo):
        self.num = num
        self.pending = list(info.initial_pending)
        self.dead = [0] * len(info.initial_pending)
        self.inputs = [NO_VALUE] * info.total_inputs
        self.outstanding_ops = 0
        self.outstanding_frames = 0


class _Frame:
    """One instance of a frame: the root, or a loop entered in one parent iteration."""

    __slots__ = ("info", "id", "parent", "parent_iter", "iterations", "iteration_count",
                 "num_outstanding_iterations", "max_parallel", "num_pending_inputs",
                 "next_iter_roots", "inv_values", "dead_exits")

    def __init__(self, info: _FrameInfo, frame_id: int, parent, parent_iter):
        self.info = info
        self.id = frame_id
        self.parent = parent
        self.parent_iter = parent_iter
        self.iterations = {0: _Iteration(0, info)}
        self.iteration_count = 0
        self.num_outstanding_iterations = 1
        self.max_parallel = max(info.parallel_iterations, 1)
        self.num_pending_inputs = info.input_count
        self.next_iter_roots: list[tuple] = []
        self.inv_values: list[tuple] = []
        self.dead_exits: list[_Item] = []


class _Step:
    """One run of a DynamicPartition: frames, the ready queue, and the node loop."""

    def __init__(self, part: DynamicPartition, feeds, out, rendezvous, records, checker,
                 deadline: Deadline | None):
        self.part = part
        self.feeds = feeds
        self.out = out
        self.rendezvous = rendezvous
        self.records = records
        self.checker = checker
        self.deadline = deadline
        self.ready: collections.deque = collections.deque()
        self.root = _Frame(part.frames[ROOT_FRAME], 0, None, None)
        self.frames: dict[int, _Frame] = {0: self.root}

    def execute(self) -> None:
        ready = self.ready
        root_iter = self.root.iterations[0]
        for item in self.part.roots:
            ready.append((item, self.root, root_iter, False))
        root_iter.outstanding_ops = len(self.part.roots)
        waiting: list[tuple] = []
        while True:
            while ready:
                tagged = ready.popleft()
                if tagged[0].kind == _RECV and not tagged[3]:
                    waiting.append(tagged)
                else:
                    self._process(tagged)
            if not waiting:
                return
            # Block on the earliest Recv (partitioner order) only when nothing else can run:
            # its Send precedes it in the global order, so no partition waits in a cycle.
            first = min(range(len(waiting)), key=lambda i: waiting[i][0].id)
            self._process(waiting.pop(first))

    def _process(self, tagged) -> None:
        item, frame, it, dead = tagged
        n = item.num_inputs
        if n:
            start = item.input_start
            inputs = it.inputs
            args = inputs[start:start + n]
            inputs[start:start + n] = item.blank
        else:
            args = []
        if dead and item.kind != _SEND and item.kind != _RECV:
            outputs = item.dead_outputs
        else:
            try:
                outputs, dead = self._compute(item, frame, it, args, dead)
            except BaseException as e:
                traceback.clear_frames(e.__traceback__)   # the error must not hold tensors
                raise node_failure(e, item.node, self.part.device) from e
        self._propagate(item, frame, it, dead, outputs)

    def _compute(self, item: _Item, frame: _Frame, it: _Iteration, args: list, dead: bool):
        for slot in item.reads:
            if args[slot] is not NO_VALUE:
                args[slot] = args[slot].read()
        kind = item.kind
        records = self.records
        start = time.perf_counter_ns() if records is not None else 0
        if kind == _CONST:
            return (item.value,), dead
        if kind == _ARG:
            return (self.feeds[item.index],), dead
        if kind == _RETVAL:
            self.out[item.index] = args[0]
            return (), dead
        if kind == _SEND:
            self.rendezvous.send(self.key(item, frame, it), NO_VALUE if dead else args[0])
            outputs = ()
        elif kind == _RECV:
            value = self.rendezvous.recv(self.key(item, frame, it))
            if value is NO_VALUE:
                outputs, dead = item.dead_outputs, True
            else:
                outputs = ((value.to(item.copy_to) if item.copy_to is not None
                            and isinstance(value, torch.Tensor) else value),)
        else:
            result = item.kernel(*args)
            count = item.num_outputs
            outputs = (result,) if count == 1 else tuple(result) if count else ()
            if self.checker is not None and outputs:
                self.checker(item.id, outputs, tuple(args))
        if records is not None and not dead:
            value = outputs[0] if len(outputs) == 1 else outputs
            records.append((item.id, start, time.perf_counter_ns(), output_bytes(value)))
        if self.deadline is not None:
            self.deadline.check()
        return outputs, dead

    def key(self, item: _Item, frame: _Frame, it: _Iteration) -> str:
        return rendezvous_key_in(item.key, frame.id, it.num)

    # -- propagation (TF's PropagatorState::PropagateOutputs) ---------------------------------

    def _propagate(self, item: _Item, frame: _Frame, it: _Iteration, dead: bool,
                   outputs) -> None:
        kind = item.kind
        if kind == _ENTER:
            child = self._child_frame(frame, it, item)
            if item.is_constant:
                self._add_loop_invariant(child, item, outputs[0])
            else:
                first = child.iterations[0]
                self._adjust(child, first, self._activate(child, first, item, dead, outputs))
            child.num_pending_inputs -= 1
            done = self._adjust(frame, it, -1)
        elif kind == _EXIT:
            if dead:
                if it.num == frame.iteration_count:
                    frame.dead_exits.append(item)
            else:
                parent_iter = frame.parent_iter
                parent_iter.outstanding_ops += self._activate(frame.parent, parent_iter, item,
                                                              False, outputs)
            done = self._adjust(frame, it, -1)
        elif kind == _NEXT:
            if not dead:
                self._next_iteration(frame, it, item, outputs)
            done = self._adjust(frame, it, -1)
        else:
            done = self._adjust(frame, it, self._activate(frame, it, item, dead, outputs) - 1)
        if done:
            parent, parent_iter = frame.parent, frame.parent_iter
            self._delete_frame(frame)
            if parent is not None:
                parent_iter.outstanding_frames -= 1
                if self._cleanup_iterations(parent, parent_iter):
                    self._propagate_frame_done(parent)

    def _propagate_frame_done(self, frame: _Frame) -> None:
        while frame is not None:
            parent, parent_iter = frame.parent, frame.parent_iter
            self._delete_frame(frame)
            if parent is None:
                return
            parent_iter.outstanding_frames -= 1
            if not self._cleanup_iterations(parent, parent_iter):
                return
            frame = parent

    def _activate(self, frame: _Frame, it: _Iteration, item: _Item, is_dead: bool,
                  outputs) -> int:
        """Hands `outputs` to the consumers' input slots in iteration `it` and queues the
        consumers that became ready; returns how many did."""
        ready = self.ready
        pending, dead_counts, inputs = it.pending, it.dead, it.inputs
        activated = 0
        for dst, loc, src_slot in item.out_edges:
            value = outputs[src_slot]
            pid = dst.pending_id
            if dst.kind == _MERGE:
                if value is not NO_VALUE:
                    inputs[loc] = value
                    before = pending[pid]
                    pending[pid] = before & ~1
                    if before == 1:      # the first live input, and no control edge pending
                        ready.append((dst, frame, it, False))
                        activated += 1
                else:
                    dead_counts[pid] += 1
                    # A dead Enter kills the loop's Merge (a loop on an untaken branch).
                    if pending[pid] == 1 and (dead_counts[pid] == dst.num_inputs
                                              or item.kind == _ENTER):
                        pending[pid] = 0
                        ready.append((dst, frame, it, True))
                        activated += 1
                continue
            inputs[loc] = value
            left = pending[pid] - 1
            pending[pid] = left
            if is_dead or value is NO_VALUE:
                dead_counts[pid] += 1
            if left == 0:
                ready.append((dst, frame, it, dead_counts[pid] > 0 and dst.kind != _TRIGGER))
                activated += 1
        for dst in item.out_controls:
            pid = dst.pending_id
            if dst.kind == _MERGE:
                left = pending[pid] - 2
                pending[pid] = left
                all_dead = dead_counts[pid] == dst.num_inputs
                if left == 0 or (left == 1 and all_dead):
                    pending[pid] = 0
                    ready.append((dst, frame, it, all_dead))
                    activated += 1
                continue
            left = pending[pid] - 1
            pending[pid] = left
            if is_dead:
                dead_counts[pid] += 1
            if left == 0:
                ready.append((dst, frame, it, dead_counts[pid] > 0 and dst.kind != _TRIGGER))
                activated += 1
        return activated

    def _adjust(self, frame: _Frame, it: _Iteration, delta: int) -> bool:
        """Adds `delta` outstanding ops to `it`; True when that completed the whole frame."""
        if delta == 0:
            return False
        it.outstanding_ops += delta
        if it.outstanding_ops != 0 or not self._iteration_done(frame, it):
            return False
        return self._cleanup_iterations(frame, it)

    def _iteration_done(self, frame: _Frame, it: _Iteration) -> bool:
        if it.outstanding_ops or it.outstanding_frames:
            return False
        if it.num == 0:
            return frame.num_pending_inputs == 0
        return it.num - 1 not in frame.iterations

    def _cleanup_iterations(self, frame: _Frame, it: _Iteration) -> bool:
        """Drops every finished iteration from `it` on; True when the frame is done."""
        num = it.num
        while num <= frame.iteration_count and it is not None and self._iteration_done(frame,
                                                                                        it):
            del frame.iterations[num]
            frame.num_outstanding_iterations -= 1
            num += 1
            if frame.next_iter_roots:
                self._new_iteration(frame)
            it = frame.iterations.get(num)
        return frame.num_pending_inputs == 0 and frame.num_outstanding_iterations == 0

    def _next_iteration(self, frame: _Frame, it: _Iteration, item: _Item, outputs) -> None:
        if it.num == frame.iteration_count:
            if frame.num_outstanding_iterations == frame.max_parallel:
                frame.next_iter_roots.append((item, outputs[0]))   # parallel_iterations reached
                return
            target = self._new_iteration(frame)
            self._adjust(frame, target, self._activate(frame, target, item, False, outputs))
        else:
            target = frame.iterations[it.num + 1]
            target.outstanding_ops += self._activate(frame, target, item, False, outputs)

    def _new_iteration(self, frame: _Frame) -> _Iteration:
        frame.iteration_count += 1
        it = _Iteration(frame.iteration_count, frame.info)
        frame.iterations[it.num] = it
        frame.num_outstanding_iterations += 1
        frame.dead_exits.clear()
        roots, frame.next_iter_roots = frame.next_iter_roots, []
        activated = sum(self._activate(frame, it, item, value is NO_VALUE, (value,))
                        for item, value in roots)
        activated += sum(self._activate(frame, it, item, value is NO_VALUE, (value,))
                         for item, value in frame.inv_values)
        it.outstanding_ops += activated
        return it

    def _add_loop_invariant(self, frame: _Frame, item: _Item, value) -> None:
        frame.inv_values.append((item, value))
        for num in range(frame.iteration_count + 1):
            it = frame.iterations.get(num)
            if it is not None:
                self._adjust(frame, it, self._activate(frame, it, item, value is NO_VALUE,
                                                       (value,)))

    def _child_frame(self, frame: _Frame, it: _Iteration, item: _Item) -> _Frame:
        child_id = frame_instance_id(frame.id, it.num, item.child.name)
        child = self.frames.get(child_id)
        if child is None:
            child = _Frame(item.child, child_id, frame, it)
            self.frames[child_id] = child
            it.outstanding_frames += 1
        return child

    def _delete_frame(self, frame: _Frame) -> None:
        """A finished frame hands the deadness of its last iteration's dead Exits to the
        parent (so a loop on an untaken branch is dead after it), then goes."""
        parent, parent_iter = frame.parent, frame.parent_iter
        if parent is not None:
            for item in frame.dead_exits:
                parent_iter.outstanding_ops += self._activate(
                    parent, parent_iter, item, True, item.dead_outputs)
        self.frames.pop(frame.id, None)
