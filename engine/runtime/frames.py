"""The static side of the dynamic executor (dynamic_executor.py): each node compiled into an
Item (kind, input slots, out-edges), the frame (while loop) every node runs in by TF's rules
(core/common_runtime/immutable_executor_state.cc, graph/control_flow.cc), each frame's
pending-count layout, and the frame_id:iteration part of a transfer's rendezvous key."""

from __future__ import annotations

import hashlib

from engine import errors
from engine.graph_def import NodeDef, parse_input
from engine.kernels.control_flow import NO_VALUE
from engine.passes.control_flow_info import ROOT_FRAME, control_flow_info, has_loops
from engine.runtime.executor import ref_input_slots

# Node kinds, by how the executor treats them.
KERNEL, CONST, ARG, RETVAL, SEND, RECV, MERGE, ENTER, EXIT, NEXT, TRIGGER = range(11)
KIND_OF = {"_Arg": ARG, "_Retval": RETVAL, "_Send": SEND, "_Recv": RECV,
           "Merge": MERGE, "RefMerge": MERGE, "Enter": ENTER, "RefEnter": ENTER,
           "Exit": EXIT, "RefExit": EXIT, "NextIteration": NEXT, "RefNextIteration": NEXT,
           "ControlTrigger": TRIGGER}


class FrameInfo:
    """What every instance of one frame (a while loop) shares: its nodes' local pending-count
    slots, their initial values and the size of an iteration's input buffer."""

    __slots__ = ("name", "parent", "items", "initial_pending", "total_inputs", "input_count",
                 "parallel_iterations", "input_template")

    def __init__(self, name: str, parent: str | None):
        self.name = name
        self.parent = parent
        self.items: list[Item] = []
        self.initial_pending: list[int] = []
        self.total_inputs = 0
        self.input_template: list = []     # an iteration's input buffer as it starts
        self.input_count = 0          # Enter nodes into this frame
        self.parallel_iterations = 1


class Item:
    """One node, compiled: its kind, kernel, input slots and out-edges."""

    __slots__ = ("id", "node", "kind", "kernel", "value", "num_inputs", "input_start", "reads",
                 "out_edges", "out_controls", "num_outputs", "dead_outputs", "pending_id",
                 "frame", "child", "is_constant", "index", "key", "copy_to", "traced", "blank",
                 "fast", "cluster")

    def __init__(self, index: int, node: NodeDef):
        self.id = index
        self.node = node
        self.kind = KIND_OF.get(node.op, KERNEL)
        self.kernel = None
        self.value = None
        self.num_inputs = len(node.data_inputs())
        self.input_start = 0
        self.reads: tuple[int, ...] = ()
        self.out_edges: list[tuple] = []      # (consumer item, its input location, src slot)
        self.out_controls: list[Item] = []
        self.num_outputs = len(node.output_dtypes)
        self.dead_outputs = (NO_VALUE,) * self.num_outputs
        self.blank = (NO_VALUE,) * self.num_inputs    # what a consumed input slot holds
        self.pending_id = 0
        self.frame: FrameInfo | None = None
        self.child: FrameInfo | None = None  # an Enter's frame
        self.is_constant = bool(node.attr.get("is_constant", False))
        self.index = node.attr.get("index", 0)
        self.key = node.meta.get("key", "")
        self.copy_to = None
        self.traced = True
        self.fast = False       # no ref reads, no Merge or ControlTrigger consumer
        self.cluster = None     # the fused twin's group of nodes (engine/runtime/clusters.py)


def link(items: list[Item], by_name: dict[str, Item]) -> list[list[tuple]]:
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
    """The frame (while loop) each node runs in, "" for the top level (see
    engine/passes/control_flow_info.py). Raises TF's errors for an invalid loop structure."""
    return control_flow_info(nodes).frame_of


def check_feeds_outside_loops(nodes: list[NodeDef], feeds) -> None:
    """TF's prevent_feeding for loops: a tensor computed inside a while loop has one value
    per iteration, so it cannot be fed (an Enter's output included)."""
    if not feeds or not has_loops(nodes):
        return
    try:
        info = control_flow_info(nodes)
    except errors.OpError:
        return      # an invalid loop elsewhere in the graph is reported where it runs
    by_name = {n.name: n for n in nodes}
    for feed in feeds:
        node = by_name.get(feed.rpartition(":")[0] or feed)
        if node is None:
            continue
        inside = info.output_frame(node)
        if inside != ROOT_FRAME:
            raise ValueError(f"Tensor {feed} may not be fed: it is computed inside the while "
                             f"loop '{inside}', once per iteration.")


def assign_frames(items: list[Item]) -> dict[str, FrameInfo]:
    """Each item's frame (and an Enter's child frame), by the control-flow info pass."""
    info = control_flow_info([item.node for item in items])
    frames = {ROOT_FRAME: FrameInfo(ROOT_FRAME, None)}
    for name in info.parent_of:
        frames[name] = FrameInfo(name, info.parent_of[name])
    for item in items:
        item.frame = frames[info.frame_of[item.node.name]]
        if item.kind == ENTER:
            item.child = frames[item.node.attr["frame_name"]]
    return frames


def layout(items: list[Item], in_edges) -> list[Item]:
    """Each frame's pending-count slots and input buffer; TF's initial counts (a Merge
    waits for its control inputs twice over and one live data input: 1 + 2 * controls).
    A top-level Const (it has no inputs, so it runs once, live) is folded: its value waits
    in its consumers' input slots from the start instead of running as a node. Returns the
    nodes ready at the start of a step."""
    for item in items:
        info = item.frame
        item.pending_id = len(info.items)
        info.items.append(item)
        item.input_start = info.total_inputs
        info.total_inputs += item.num_inputs
    for info in {id(item.frame): item.frame for item in items}.values():
        info.input_template = [NO_VALUE] * info.total_inputs
    counts = [len(edges) for edges in in_edges]
    folded = set()
    for item in items:
        if item.kind != CONST or in_edges[item.id] or item.frame.name != ROOT_FRAME:
            continue
        kept = []
        for dst, slot, src_slot in item.out_edges:
            if dst.kind == MERGE or dst.frame is not item.frame:
                kept.append((dst, slot, src_slot))
                continue
            dst.frame.input_template[dst.input_start + slot] = item.value
            counts[dst.id] -= 1
        item.out_edges = kept
        if not kept and not item.out_controls:
            folded.add(item.id)
    for item in items:
        controls = sum(1 for _, slot in in_edges[item.id] if slot < 0)
        item.frame.initial_pending.append(1 + 2 * controls if item.kind == MERGE
                                          else counts[item.id])
        if item.kind == ENTER:
            item.child.input_count += 1
            item.child.parallel_iterations = int(
                item.node.attr.get("parallel_iterations", 10))
    special = (MERGE, TRIGGER)
    for item in items:
        item.out_edges = [(dst, dst.input_start + slot, src_slot)
                          for dst, slot, src_slot in item.out_edges]
        item.fast = not item.reads and not any(
            dst.kind in special for dst in [e[0] for e in item.out_edges] + item.out_controls)
    return [item for item in items if counts[item.id] == 0 and item.id not in folded
            and item.frame.name == ROOT_FRAME]


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
