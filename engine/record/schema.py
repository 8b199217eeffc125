"""The run store's vocabulary: plain, immutable records shared by the engine (which writes
them) and the workbench (which reads them). Standard library only, so viz/ and workbench/
can import it without pulling in torch or the runtime."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

# 1: the first store. 2: images, tensor_summaries and alerts (a version-1 run reads them as
# empty). 3: pruning (sensitivity curves, prune-retrain stages with per-layer sparsity,
# compression figures) and quantization comparisons and costs (older runs read them as empty).
# 4: a text's shape (texts.shape; an older run's texts read as single strings).
# 5: scalar_blocks, a summary of every SCALAR_BLOCK_POINTS consecutive points of a scalar tag
# (an older run has none: its curves are read from the rows, as before).
SCHEMA_VERSION = 5
DATABASE_NAME = "run.sqlite"

# A scalar block: SCALAR_BLOCK_POINTS consecutive points of one tag (in the order written),
# its fields float64 in this order. Offsets count from the block's first point; min and max
# are over the finite values (with none: the first point's value, offsets 0); ordered is 1
# when the block's steps never decrease and fit float64 exactly.
SCALAR_BLOCK_POINTS = 64
SCALAR_BLOCK_FIELDS = (
    "first_step", "last_step", "count", "finite", "sum",
    "min", "min_offset", "min_step", "min_wall", "max", "max_offset", "max_step", "max_wall",
    "first_value", "first_wall", "last_value", "last_wall", "ordered")
BLOCK = {name: k for k, name in enumerate(SCALAR_BLOCK_FIELDS)}   # field -> column


@dataclass(frozen=True, eq=False)
class ScalarBlocks:
    """A tag's points in a step range as the reader gives them for drawing: the raw points
    before the first whole block in the range (head), the blocks (an (n, fields) float64
    array, SCALAR_BLOCK_FIELDS), and the raw points after them (tail), each part in step
    order and the parts in order. Steps int64; values and wall times float64."""
    head: tuple[Any, Any, Any]
    blocks: Any
    tail: tuple[Any, Any, Any]

    @property
    def count(self) -> int:
        return (len(self.head[0]) + len(self.tail[0])
                + int(self.blocks[:, BLOCK["count"]].sum()))


# Run status as the reader reports it.
RUNNING = "running"            # a writer is open and has written recently
FINISHED = "finished"          # the writer was closed cleanly
INTERRUPTED = "interrupted"    # never closed and silent for a while: the process died
UNREADABLE = "unreadable"      # the folder is not a run store we can open (see RunInfo.error)
DAMAGED = "damaged"            # it opens, but a side file or the database is damaged (error)

# Why the placer put a node where it did.
EXPLICIT = "explicit"          # the node's own device spec chose the device
COLOCATED = "colocated"        # another member of its colocation group decided
DEFAULT = "default"            # nothing requested: the highest-priority device with a kernel
CONSUMERS = "consumers"        # a generator (no inputs) placed with all of its consumers
SOFT_FALLBACK = "soft_fallback"  # the request could not be met; allow_soft_placement moved it
PREASSIGNED = "preassigned"    # kept from an earlier placement or fixed by the runtime
PLACEMENT_REASONS = (EXPLICIT, COLOCATED, DEFAULT, CONSUMERS, SOFT_FALLBACK, PREASSIGNED)


@dataclass(frozen=True)
class TensorSpec:
    """dtype name as in the engine (`float32`, `int32`, `float32_ref`); shape with None for
    unknown dimensions, or None when even the rank is unknown."""
    dtype: str
    shape: tuple[int | None, ...] | None


@dataclass(frozen=True)
class DeviceRecord:
    name: str                  # /job:localhost/replica:0/task:0/device:GPU:1
    device_type: str           # CPU | GPU
    index: int
    physical: str              # human description, e.g. "virtual GPU backed by host memory"
    virtual: bool


@dataclass(frozen=True)
class NodeRecord:
    """One graph node. `inputs` use GraphDef spelling: "a", "a:1", "^a" (control)."""
    name: str
    op: str
    inputs: tuple[str, ...]
    device: str                # requested device spec ("" when none)
    attrs: dict                # JSON-safe attribute values
    outputs: tuple[TensorSpec, ...]
    stack: tuple[str, ...]     # creation site, outermost first: "file.py:12 in build_model"


@dataclass(frozen=True)
class GraphRecord:
    version: int
    nodes: tuple[NodeRecord, ...]
    seq: int = 0
    wall_time: float = 0.0


@dataclass(frozen=True)
class PlacementRecord:
    node: str
    op: str
    requested: str             # the node's own requested spec, "" when none
    assigned: str              # full device name
    reason: str                # one of PLACEMENT_REASONS
    detail: str                # why, in words ("no GPU kernel for VariableV2 with dtype int32")
    log_line: str              # TensorFlow's log_device_placement line
    graph_version: int = 0
    seq: int = 0
    wall_time: float = 0.0


@dataclass(frozen=True)
class PlanRecord:
    """One compiled execution plan: a (fetches, feeds, targets, graph version) signature."""
    plan: int
    graph_version: int
    fetches: tuple[str, ...]
    feeds: tuple[str, ...]
    targets: tuple[str, ...]
    devices: tuple[str, ...]   # devices that got a partition
    seq: int = 0
    wall_time: float = 0.0


@dataclass(frozen=True)
class PartitionRecord:
    plan: int
    device: str
    nodes: tuple[str, ...]     # every node of the partition, Send/Recv included, in schedule order


@dataclass(frozen=True)
class CutEdgeRecord:
    """A tensor (or control edge, tensor "^src") that crosses devices through a Send/Recv pair."""
    plan: int
    tensor: str                # "src:0", or "^src" for a control edge
    src_device: str
    dst_device: str
    send_node: str
    recv_node: str
    key: str                   # rendezvous key, TensorFlow's exact format
    dtype: str
    shape: tuple[int | None, ...] | None
    consumers: tuple[str, ...]  # nodes on the destination device that read the received value
    bytes: int = 0             # bytes moved in the most recent recorded step (0 if never run)


@dataclass(frozen=True)
class StepRecord:
    step: int
    plan: int
    wall_start: float          # seconds since the epoch
    duration_us: float
    num_ops: int
    bytes_moved: int
    seq: int = 0


@dataclass(frozen=True)
class OpStatRecord:
    step: int
    node: str
    op: str
    device: str
    start_us: float            # relative to the step's start
    end_us: float
    output_bytes: int
    thread: int = 0


@dataclass(frozen=True)
class TransferRecord:
    step: int
    key: str
    tensor: str
    src_device: str
    dst_device: str
    bytes: int


@dataclass(frozen=True)
class HistogramRecord:
    tag: str
    step: int
    wall_time: float
    edges: tuple[float, ...]   # len(counts) + 1 bucket edges
    counts: tuple[float, ...]
    min: float
    max: float
    sum: float
    count: int


@dataclass(frozen=True)
class TextRecord:
    """One text summary: a string tensor, as TensorBoard's text plugin holds it. shape ()
    is one string (RunWriter.text of a str); torch's add_text writes shape (1,) and
    tf.summary.text any shape. `cells` are its strings in row-major order, as many as the
    shape has elements."""
    tag: str
    step: int
    wall_time: float
    cells: tuple[str, ...]
    shape: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if len(self.cells) != math.prod(self.shape):
            raise ValueError(f"text {self.tag!r} at step {self.step}: shape "
                             f"{list(self.shape)} holds {math.prod(self.shape)} strings, "
                             f"got {len(self.cells)}")

    @property
    def text(self) -> str:
        """The string of a shape-() text; a tensor's cells one a line."""
        return "\n".join(self.cells)


@dataclass(frozen=True, eq=False)
class ImageRecord:
    """One image: `pixels` is a numpy uint8 array (height, width, channels), channels 1, 3
    or 4 (gray, RGB, RGBA)."""
    tag: str
    step: int
    wall_time: float
    height: int
    width: int
    channels: int
    pixels: Any


@dataclass(frozen=True)
class TensorSummaryRecord:
    """Statistics of one tensor (a watched tensor, a tf.summary.tensor_summary, or an op's
    input in an alert) at one step. min, max, mean and std are over the finite elements
    (NaN when there are none); counts are of elements."""
    node: str                  # the tensor's name ("Log:0") or the summary's tag
    step: int
    dtype: str
    shape: tuple[int, ...]
    count: int
    min: float
    max: float
    mean: float
    std: float
    nan_count: int = 0
    neg_inf_count: int = 0
    pos_inf_count: int = 0
    wall_time: float = 0.0

    @property
    def inf_count(self) -> int:
        return self.neg_inf_count + self.pos_inf_count


# Alert kinds: what the first bad tensor held.
NAN, INF, NAN_AND_INF = "nan", "inf", "nan_and_inf"
ALERT_KINDS = (NAN, INF, NAN_AND_INF)


@dataclass(frozen=True)
class AlertRecord:
    """A NaN/Inf found while a step ran: the first op (in execution order) whose output held
    one, with its inputs' statistics and the user code that created it."""
    step: int
    node: str
    op: str
    device: str
    kind: str                  # one of ALERT_KINDS
    message: str
    inputs: tuple[TensorSummaryRecord, ...] = ()
    output: TensorSummaryRecord | None = None
    stack: tuple[str, ...] = ()  # creation site, outermost first
    seq: int = 0
    wall_time: float = 0.0


@dataclass(frozen=True)
class SensitivityPoint:
    """One point of a layer's pruning sensitivity curve: held-out accuracy with only this
    layer pruned to `sparsity` (fraction of its weights zero), without retraining."""
    layer: str
    sparsity: float
    accuracy: float
    seq: int = 0
    wall_time: float = 0.0


@dataclass(frozen=True)
class LayerSparsityRecord:
    """A layer's sparsity at the end of a prune-retrain stage, and the target it was pruned to."""
    layer: str
    target: float
    sparsity: float


@dataclass(frozen=True)
class PruneStageRecord:
    """One stage of iterative prune-and-retrain (stage 0: the unpruned model): the training
    step it ended at, accuracy right after pruning and after retraining, per-layer sparsity."""
    stage: int
    step: int
    pruned_accuracy: float
    accuracy: float
    layers: tuple[LayerSparsityRecord, ...] = ()
    seq: int = 0
    wall_time: float = 0.0


@dataclass(frozen=True)
class QuantizationNodeRecord:
    """One original node against the quantized node standing for it: metrics over the
    elements finite in both outputs; `edges` bound the buckets of both outputs' histograms,
    `error_edges` those of the error (quantized minus original). sqnr_db is +inf for an exact
    node and -inf when the original is all zeros and the quantized is not."""
    original: str              # the node of the original graph
    op: str                    # its op type
    compared: str              # the quantized graph's node whose (dequantized) output is compared
    quantized: tuple[str, ...]  # every quantized node standing for `original`, in graph order
    position: int              # in the original graph's execution (topological) order
    shape: tuple[int, ...]
    mse: float
    max_abs_error: float
    sqnr_db: float
    cosine: float
    edges: tuple[float, ...]
    original_counts: tuple[float, ...]
    quantized_counts: tuple[float, ...]
    error_edges: tuple[float, ...]
    error_counts: tuple[float, ...]
    flagged: bool = False      # the first node in execution order below the threshold


@dataclass(frozen=True)
class QuantizationComparisonRecord:
    """One compare() of an original graph with its quantized form, as recorded: the two
    graphs are the run's graph versions named here."""
    name: str                  # what was compared ("digits_mlp eightbit, calibrated on 100")
    original_graph_version: int
    quantized_graph_version: int
    threshold_db: float
    flagged: str | None        # the original node flagged, None when every node passes
    nodes: tuple[QuantizationNodeRecord, ...] = ()
    skipped: dict = field(default_factory=dict)   # original node -> why it was not compared
    seq: int = 0
    wall_time: float = 0.0


class CompressionRatios:
    """The ratios of a compression's figures: dense values per stored value, dense bytes per
    sparse byte (engine.compression.pruning.Compression shares them)."""
    dense_values: int
    stored_values: int
    dense_bytes: int
    sparse_bytes: int

    @property
    def ratio(self) -> float:
        return self.dense_values / max(self.stored_values, 1)

    @property
    def bytes_ratio(self) -> float:
        return self.dense_bytes / max(self.sparse_bytes, 1)


@dataclass(frozen=True)
class CompressionRecord(CompressionRatios):
    """What the pruned kernels cost stored dense versus as CSR: value counts, bytes (CSR with
    its int32 column indices and row pointers), and the accuracy before and after pruning.
    per_layer: layer -> (dense values, stored nonzero values)."""
    dense_values: int
    stored_values: int
    dense_bytes: int
    sparse_bytes: int
    baseline_accuracy: float
    accuracy: float
    per_layer: dict = field(default_factory=dict)
    seq: int = 0
    wall_time: float = 0.0


@dataclass(frozen=True)
class QuantizationCostRecord:
    """One row of the cost table: a model in one form (float, weights-only, eightbit ...)
    with its held-out accuracy, graph file size and inference time, and their ratios to the
    model's float form."""
    model: str                 # "digits_mlp"
    variant: str               # "float", "weights", "eightbit (run-time ranges)", ...
    accuracy: float            # on the held-out data, 0..1
    file_bytes: int
    bytes_ratio: float         # file_bytes / the float graph's
    batch1_us: float           # median inference time at batch 1, microseconds
    batch256_us: float
    batch1_speedup: float      # float time / this time (above 1: faster than float)
    batch256_speedup: float
    seq: int = 0
    wall_time: float = 0.0


@dataclass(frozen=True)
class RunInfo:
    name: str
    path: str
    status: str                # RUNNING | FINISHED | INTERRUPTED | UNREADABLE | DAMAGED
    started: float | None = None
    updated: float | None = None
    num_steps: int = 0
    tags: tuple[str, ...] = ()
    config: dict = field(default_factory=dict)
    error: str | None = None   # why the run is UNREADABLE or DAMAGED: file (relative to the
                               # log directory) and what is wrong
    exception: str | None = None  # the exception that ended the run, when the writer saw one
