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
import threading
import time
import traceback

import torch

from engine import errors
from engine.graph_def import NodeDef
from engine.kernels.control_flow import NO_VALUE
from engine.kernels.registry import Constant, KernelContext
from engine.runtime.clusters import fuse
from engine.runtime.executor import make_kernel, node_failure, output_bytes
from engine.runtime.executor_api import DYNAMIC
from engine.runtime.frames import (
    ARG,
    CONST,
    ENTER,
    EXIT,
    KERNEL,
    MERGE,
    NEXT,
    RECV,
    RETVAL,
    ROOT_FRAME,
    SEND,
    TRIGGER,
    FrameInfo,
    Item,
    assign_frames,
    frame_instance_id,
    layout,
    link,
    rendezvous_key_in,
)
from engine.runtime.rendezvous import Deadline

_NOT_RECEIVED = object()


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
        self.items = [Item(i, n) for i, n in enumerate(self.nodes)]
        self._by_name = {n.name: item for n, item in zip(self.nodes, self.items)}
        in_edges = link(self.items, self._by_name)
        self.frames = assign_frames(self.items)
        self._bind_kernels(ctx)
        self.roots = layout(self.items, in_edges)
        self.num_kernels = sum(1 for item in self.items if item.traced)
        self.retvals = [item for item in self.items if item.kind == RETVAL]
        self._fused = self._fused_twin(label)

    def _fused_twin(self, label: str) -> tuple:
        """The graph an untraced step runs: the same nodes, loop bodies fused into clusters
        (engine/runtime/clusters.py). A traced or checked step runs node by node, so its
        step stats keep one entry per node and iteration."""
        items = [Item(i, n) for i, n in enumerate(self.nodes)]
        by_name = {n.name: item for n, item in zip(self.nodes, items)}
        in_edges = link(items, by_name)
        frames = assign_frames(items)
        if len(frames) == 1:
            return self.frames, self.roots
        for twin, item in zip(items, self.items):
            twin.kind, twin.kernel, twin.value = item.kind, item.kernel, item.value
            twin.copy_to, twin.traced = item.copy_to, item.traced
        fused, edges = fuse(items, in_edges, self.device, label)
        return frames, layout(fused, edges)

    # -- building -----------------------------------------------------------------------------

    def _bind_kernels(self, ctx: KernelContext) -> None:
        for item in self.items:
            kind = item.kind
            if kind in (ARG, RETVAL):
                item.traced = False
            elif kind == RECV:
                if self._peers.get(item.node.attr["send_device"]) != self.device.torch_device:
                    item.copy_to = torch.device(self.device.torch_device)
            elif kind != SEND:
                made = make_kernel(item.node, self.device, ctx)
                if isinstance(made, Constant):
                    item.kind, item.value, item.traced = CONST, made.value, False
                else:
                    item.kernel = made
            if item.frame.name != ROOT_FRAME:
                _check_inside_frame(item)
            elif kind == NEXT:
                raise errors.InvalidArgumentError(
                    item.node, None, f"NextIteration node {item.node.name} is not inside a while "
                                     "loop: no Enter leads to it, so it has no next iteration.")

    # -- running ------------------------------------------------------------------------------

    def run(self, feeds, out, rendezvous, stats: list | None,
            deadline: Deadline | None = None) -> None:
        records = [] if stats is not None else None
        checker = stats.checker(self) if hasattr(stats, "checker") else None
        plain = records is None and checker is None and deadline is None
        frames, roots = self._fused if plain else (self.frames, self.roots)
        step = _Step(self, frames, roots, feeds, out, rendezvous, records, checker, deadline)
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


def _check_inside_frame(item: Item) -> None:
    node = item.node
    if item.kind == RETVAL:
        fetch = node.meta.get("fetch", node.data_inputs()[0])
        raise errors.InvalidArgumentError(
            node, None, f"Cannot fetch '{fetch}': it is computed inside the while loop "
                        f"'{item.frame.name}', once per iteration. Fetch a value the loop "
                        "returns, or collect the per-iteration values in a tf.TensorArray.")


class _Iteration:
    __slots__ = ("num", "pending", "dead", "inputs", "outstanding_ops", "outstanding_frames")

    def __init__(self, num: int, info: FrameInfo):
        self.num = num
        self.pending = list(info.initial_pending)
        self.dead = [0] * len(info.initial_pending)
        self.inputs = list(info.input_template)
        self.outstanding_ops = 0
        self.outstanding_frames = 0

    def copy(self, num: int) -> _Iteration:
        it = _Iteration.__new__(_Iteration)
        it.num, it.pending, it.dead, it.inputs = num, self.pending[:], self.dead[:], \
            self.inputs[:]
        it.outstanding_ops = it.outstanding_frames = 0
        return it


class _Frame:
    """One instance of a frame: the root, or a loop entered in one parent iteration."""

    __slots__ = ("info", "id", "parent", "parent_iter", "iterations", "iteration_count",
                 "num_outstanding_iterations", "max_parallel", "num_pending_inputs",
                 "next_iter_roots", "inv_values", "dead_exits", "template", "template_ready")

    def __init__(self, info: FrameInfo, frame_id: int, parent, parent_iter):
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
        self.dead_exits: list[Item] = []
        # A new iteration as the loop invariants leave it (None: none yet; False: one feeds
        # a Merge, so each iteration takes them one by one), and the nodes they make ready.
        self.template = None
        self.template_ready: list[tuple] = []


class _Step:
    """One run of a DynamicPartition: frames, the ready queue, and the node loop."""

    def __init__(self, part: DynamicPartition, frames: dict, roots: list, feeds, out,
                 rendezvous, records, checker, deadline: Deadline | None):
        self.part = part
        self.roots = roots
        self.feeds = feeds
        self.out = out
        self.rendezvous = rendezvous
        self.records = records
        self.checker = checker
        self.deadline = deadline
        self.ready: collections.deque = collections.deque()
        self.root = _Frame(frames[ROOT_FRAME], 0, None, None)
        self.frames: dict[int, _Frame] = {0: self.root}

    def execute(self) -> None:
        ready = self.ready
        root_iter = self.root.iterations[0]
        for item in self.roots:
            ready.append((item, self.root, root_iter, False))
        root_iter.outstanding_ops = len(self.roots)
        waiting: list[tuple] = []
        popleft = ready.popleft
        plain = self.records is None and self.checker is None and self.deadline is None
        while True:
            while ready:
                tagged = popleft()
                item = tagged[0]
                kind = item.kind
                if plain and kind == KERNEL and not tagged[3] and item.fast:
                    self._run_plain(item, tagged[1], tagged[2])
                elif plain and (kind == MERGE or kind == NEXT) and not tagged[3] and \
                        not item.reads:
                    self._run_loop_node(item, tagged[1], tagged[2])
                elif kind == RECV:
                    waiting.append(tagged)
                else:
                    self._process(tagged)
            if not waiting:
                return
            # Nothing else can run: wait for whichever pending Recv's value comes first (a
            # loop's transfers of several iterations may arrive in any order).
            index, value = self.rendezvous.recv_any([self.key(*t[:3]) for t in waiting])
            self._process(waiting.pop(index), value)

    def _run_plain(self, item: Item, frame: _Frame, it: _Iteration) -> None:
        """The common case, kept short: a live kernel node reading no refs, in an untraced,
        unchecked step without a deadline, whose consumers are no Merge or ControlTrigger."""
        n = item.num_inputs
        inputs = it.inputs
        if n:
            start = item.input_start
            args = inputs[start:start + n]
            inputs[start:start + n] = item.blank
        else:
            args = ()
        try:
            result = item.kernel(*args)
        except BaseException as e:
            traceback.clear_frames(e.__traceback__)     # the error must not hold tensors
            raise node_failure(e, item.node, self.part.device) from e
        count = item.num_outputs
        outputs = (result,) if count == 1 else tuple(result) if count else ()
        pending, dead_counts = it.pending, it.dead
        ready = self.ready
        activated = 0
        for dst, loc, src_slot in item.out_edges:
            value = outputs[src_slot]
            inputs[loc] = value
            pid = dst.pending_id
            left = pending[pid] - 1
            pending[pid] = left
            if value is NO_VALUE:
                dead_counts[pid] += 1
            if not left:
                ready.append((dst, frame, it, dead_counts[pid] > 0))
                activated += 1
        for dst in item.out_controls:
            pid = dst.pending_id
            left = pending[pid] - 1
            pending[pid] = left
            if not left:
                ready.append((dst, frame, it, dead_counts[pid] > 0))
                activated += 1
        if activated != 1 and self._adjust(frame, it, activated - 1):
            self._frame_done(frame)

    def _run_loop_node(self, item: Item, frame: _Frame, it: _Iteration) -> None:
        """A live Merge or NextIteration in an untraced step: what _process would do for it,
        without the branches for the other kinds."""
        n = item.num_inputs
        inputs = it.inputs
        start = item.input_start
        args = inputs[start:start + n]
        inputs[start:start + n] = item.blank
        if item.kind == NEXT:
            self._next_iteration(frame, it, item, args)
            done = self._adjust(frame, it, -1)
        else:
            try:
                outputs = item.kernel(*args)
            except BaseException as e:
                traceback.clear_frames(e.__traceback__)
                raise node_failure(e, item.node, self.part.device) from e
            done = self._adjust(frame, it, self._activate(frame, it, item, False, outputs) - 1)
        if done:
            self._frame_done(frame)

    def _process(self, tagged, received=_NOT_RECEIVED) -> None:
        """Runs one node; a Recv whose value has come (`received`) takes it."""
        item, frame, it, dead = tagged
        n = item.num_inputs
        if n:
            start = item.input_start
            inputs = it.inputs
            args = inputs[start:start + n]
            inputs[start:start + n] = item.blank
        else:
            args = []
        if dead and item.cluster is not None:
            outputs, members_dead = item.cluster.run_dead(args)
            controls_dead = [members_dead[m] for m in item.cluster.control_members]
            activated = self._activate(frame, it, item, False, outputs, controls_dead)
            if self._adjust(frame, it, activated - 1):
                self._frame_done(frame)
            return
        if dead and item.kind != SEND and item.kind != RECV:
            outputs = item.dead_outputs
        else:
            try:
                outputs, dead = self._compute(item, frame, it, args, dead, received)
            except BaseException as e:
                traceback.clear_frames(e.__traceback__)   # the error must not hold tensors
                raise node_failure(e, item.node, self.part.device) from e
        self._propagate(item, frame, it, dead, outputs)

    def _compute(self, item: Item, frame: _Frame, it: _Iteration, args: list, dead: bool,
                 received=_NOT_RECEIVED):
        for slot in item.reads:
            if args[slot] is not NO_VALUE:
                args[slot] = args[slot].read()
        kind = item.kind
        records = self.records
        start = time.perf_counter_ns() if records is not None else 0
        if kind == CONST:
            return (item.value,), dead
        if kind == ARG:
            return (self.feeds[item.index],), dead
        if kind == RETVAL:
            self.out[item.index] = args[0]
            return (), dead
        if kind == SEND:
            self.rendezvous.send(self.key(item, frame, it), NO_VALUE if dead else args[0])
            outputs = ()
        elif kind == RECV:
            value = self.rendezvous.recv(self.key(item, frame, it)) \
                if received is _NOT_RECEIVED else received
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

    def key(self, item: Item, frame: _Frame, it: _Iteration) -> str:
        return rendezvous_key_in(item.key, frame.id, it.num)

    # -- propagation (TF's PropagatorState::PropagateOutputs) ---------------------------------

    def _propagate(self, item: Item, frame: _Frame, it: _Iteration, dead: bool,
                   outputs) -> None:
        kind = item.kind
        if kind == ENTER:
            child = self._child_frame(frame, it, item)
            if item.is_constant:
                self._add_loop_invariant(child, item, outputs[0])
            else:
                first = child.iterations[0]
                self._adjust(child, first, self._activate(child, first, item, dead, outputs))
            child.num_pending_inputs -= 1
            done = self._adjust(frame, it, -1)
        elif kind == EXIT:
            if dead:
                if it.num == frame.iteration_count:
                    frame.dead_exits.append(item)
            else:
                parent_iter = frame.parent_iter
                parent_iter.outstanding_ops += self._activate(frame.parent, parent_iter, item,
                                                              False, outputs)
            done = self._adjust(frame, it, -1)
        elif kind == NEXT:
            if not dead:
                self._next_iteration(frame, it, item, outputs)
            done = self._adjust(frame, it, -1)
        else:
            done = self._adjust(frame, it, self._activate(frame, it, item, dead, outputs) - 1)
        if done:
            self._frame_done(frame)

    def _frame_done(self, frame: _Frame) -> None:
        """Deletes a finished frame, and every enclosing one its end finishes."""
        while frame is not None:
            parent, parent_iter = frame.parent, frame.parent_iter
            self._delete_frame(frame)
            if parent is None:
                return
            parent_iter.outstanding_frames -= 1
            if not self._cleanup_iterations(parent, parent_iter):
                return
            frame = parent

    def _activate(self, frame: _Frame, it: _Iteration, item: Item, is_dead: bool,
                  outputs, controls_dead: list | None = None) -> int:
        """Hands `outputs` to the consumers' input slots in iteration `it` and queues the
        consumers that became ready; returns how many did. `controls_dead` gives each
        control edge's deadness where it is not `is_dead` (a cluster's members differ)."""
        ready = self.ready
        pending, dead_counts, inputs = it.pending, it.dead, it.inputs
        activated = 0
        for dst, loc, src_slot in item.out_edges:
            value = outputs[src_slot]
            pid = dst.pending_id
            if dst.kind == MERGE:
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
                                              or item.kind == ENTER):
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
                ready.append((dst, frame, it, dead_counts[pid] > 0 and dst.kind != TRIGGER))
                activated += 1
        for n, dst in enumerate(item.out_controls):
            if controls_dead is not None:
                is_dead = controls_dead[n]
            pid = dst.pending_id
            if dst.kind == MERGE:
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
                ready.append((dst, frame, it, dead_counts[pid] > 0 and dst.kind != TRIGGER))
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

    def _next_iteration(self, frame: _Frame, it: _Iteration, item: Item, outputs) -> None:
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
        template = frame.template
        it = template.copy(frame.iteration_count) if template else \
            _Iteration(frame.iteration_count, frame.info)
        frame.iterations[it.num] = it
        frame.num_outstanding_iterations += 1
        frame.dead_exits.clear()
        roots, frame.next_iter_roots = frame.next_iter_roots, []
        activated = sum(self._activate(frame, it, item, value is NO_VALUE, (value,))
                        for item, value in roots)
        if template:
            ready = self.ready
            for dst, dead in frame.template_ready:
                ready.append((dst, frame, it, dead))
            activated += len(frame.template_ready)
        else:
            activated += sum(self._activate(frame, it, item, value is NO_VALUE, (value,))
                             for item, value in frame.inv_values)
        it.outstanding_ops += activated
        return it

    def _add_to_template(self, frame: _Frame, item: Item, value) -> None:
        """Applies a loop invariant to the frame's new-iteration template once, instead of
        to every iteration that starts after it arrived."""
        if frame.template is False:
            return
        if any(dst.kind == MERGE for dst, _, _ in item.out_edges) or any(
                dst.kind == MERGE for dst in item.out_controls):
            frame.template = False
            return
        if frame.template is None:
            frame.template = _Iteration(-1, frame.info)
        saved, self.ready = self.ready, collections.deque()
        try:
            self._activate(frame, frame.template, item, value is NO_VALUE, (value,))
            frame.template_ready.extend((tagged[0], tagged[3]) for tagged in self.ready)
        finally:
            self.ready = saved

    def _add_loop_invariant(self, frame: _Frame, item: Item, value) -> None:
        frame.inv_values.append((item, value))
        self._add_to_template(frame, item, value)
        for num in range(frame.iteration_count + 1):
            it = frame.iterations.get(num)
            if it is not None:
                self._adjust(frame, it, self._activate(frame, it, item, value is NO_VALUE,
                                                       (value,)))

    def _child_frame(self, frame: _Frame, it: _Iteration, item: Item) -> _Frame:
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
