"""Magnitude pruning (after TF model_optimization's prune_low_magnitude): masks as
non-trainable variables applied in place after each optimizer step, sparsity schedules,
per-layer sensitivity analysis, iterative prune-and-retrain, and CSR storage of the pruned
weights when the graph is frozen, with the compression figures."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.record.schema import CompressionRatios

__all__ = [
    "ConstantSparsity", "MagnitudePruning", "PolynomialDecay", "Compression", "Stage",
    "compression", "csr_to_dense", "dense_to_csr", "magnitude_mask", "prunable_variables",
    "prune_and_retrain", "record_pruning", "save_sparse", "sensitivity_analysis",
    "sparse_file_bytes", "sparse_freeze", "stage_targets",
]

DEFAULT_SPARSITIES = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98)
_WEIGHT_INPUTS = {"MatMul": 1, "Conv2D": 1}   # op type -> index of its weight input
CSR_SUFFIXES = ("csr_values", "csr_col_indices", "csr_row_ptr")


def check_sparsity(what: str, sparsity: float) -> float:
    """TF-MOT's rule: a sparsity is a fraction in [0, 1) (1 would remove the whole layer)."""
    if isinstance(sparsity, bool) or not isinstance(sparsity, (int, float, np.floating)):
        raise TypeError(f"{what}: sparsity must be a number in [0, 1), got "
                        f"{type(sparsity).__name__}")
    if not 0.0 <= float(sparsity) < 1.0:
        raise ValueError(f"{what}: sparsity must be in the range [0, 1), got {sparsity}")
    return float(sparsity)


# Schedules: step -> (prune at this step?, target sparsity), as MOT's PruningSchedule.

@dataclass(frozen=True)
class PolynomialDecay:
    """MOT's PolynomialDecay: sparsity rises from initial to final between begin_step and
    end_step as final + (initial - final) * (1 - t)^power, t = (step - begin) / (end - begin);
    masks are updated every `frequency` steps inside [begin_step, end_step]."""
    initial_sparsity: float
    final_sparsity: float
    begin_step: int
    end_step: int
    power: float = 3.0
    frequency: int = 100

    def __post_init__(self) -> None:
        check_sparsity("PolynomialDecay initial_sparsity", self.initial_sparsity)
        check_sparsity("PolynomialDecay final_sparsity", self.final_sparsity)
        if self.begin_step < 0 or self.end_step <= self.begin_step:
            raise ValueError(f"PolynomialDecay: need 0 <= begin_step < end_step, got "
                             f"begin_step={self.begin_step}, end_step={self.end_step}")
        if self.frequency <= 0:
            raise ValueError(f"PolynomialDecay: frequency must be positive, got {self.frequency}")

    def __call__(self, step: int) -> tuple[bool, float]:
        t = min(1.0, max(0.0, (step - self.begin_step) / (self.end_step - self.begin_step)))
        sparsity = (self.final_sparsity
                    + (self.initial_sparsity - self.final_sparsity) * (1.0 - t) ** self.power)
        in_range = self.begin_step <= step <= self.end_step
        return in_range and (step - self.begin_step) % self.frequency == 0, sparsity


@dataclass(frozen=True)
class ConstantSparsity:
    """MOT's ConstantSparsity: `target_sparsity` every `frequency` steps from begin_step to
    end_step (-1: to the end of training)."""
    target_sparsity: float
    begin_step: int = 0
    end_step: int = -1
    frequency: int = 100

    def __post_init__(self) -> None:
        check_sparsity("ConstantSparsity target_sparsity", self.target_sparsity)
        if self.frequency <= 0:
            raise ValueError(f"ConstantSparsity: frequency must be positive, got "
                             f"{self.frequency}")

    def __call__(self, step: int) -> tuple[bool, float]:
        in_range = self.begin_step <= step and (self.end_step == -1 or step <= self.end_step)
        return in_range and (step - self.begin_step) % self.frequency == 0, self.target_sparsity


def magnitude_mask(weights: np.ndarray, sparsity: float,
                   keep: np.ndarray | None = None) -> np.ndarray:
    """A 0/1 mask (weights' dtype) zeroing exactly round(sparsity * size) weights: those
    already masked out by `keep` first, then the smallest |w|. Ties are broken by flat index
    (the earlier element is pruned first), so the count is exact; MOT keeps every weight tied
    with its threshold instead, which can leave a layer less sparse than asked."""
    check_sparsity("magnitude_mask", sparsity)
    flat = np.abs(np.asarray(weights, dtype=np.float64)).ravel()
    pruned_first = np.zeros(flat.size) if keep is None else (np.asarray(keep).ravel() == 0)
    count = int(round(sparsity * flat.size))
    # lexsort: the last key is primary (already pruned first), then magnitude, then index.
    order = np.lexsort((np.arange(flat.size), flat, ~pruned_first.astype(bool)))
    mask = np.ones(flat.size, dtype=np.asarray(weights).dtype)
    mask[order[:count]] = 0
    return mask.reshape(np.shape(weights))


def prunable_variables(graph=None) -> list:
    """The trainable variables read (through Identity) as the weight input of a MatMul or a
    Conv2D outside the gradients: by default, every layer's kernel."""
    import engine as tf
    graph = graph or tf.get_default_graph()
    found = []
    for variable in graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES):
        if any(_weight_reader(op) for op in _readers(variable.op)):
            found.append(variable)
    return found


def _readers(op) -> list:
    out = []
    for consumer in op.outputs[0].consumers():
        if consumer.type == "Identity":
            out.extend(_readers(consumer))
        else:
            out.append((consumer, op.outputs[0]))
    return out


def _weight_reader(pair) -> bool:
    consumer, tensor = pair
    index = _WEIGHT_INPUTS.get(consumer.type)
    return (index is not None and not consumer.name.startswith("gradients")
            and consumer.inputs[index] is tensor)


class MagnitudePruning:
    """Masks for `variables` (names or Variables; every prunable kernel when None). Each mask
    is a non-trainable variable `<kernel>/mask` of ones. `mask_op` writes kernel * mask into
    the kernel in place: run it after every optimizer step (or use `train_op(opt_step)`).

    In place rather than a `kernel * mask` product in the forward graph because tf.layers
    wires its kernel straight into MatMul/Conv2D: masking in place needs no rewrite of the
    model, the frozen graph needs no mask nodes, and (as MOT's weight_mask_op does) a pruned
    weight is zero at every step's forward pass even though Adam's moments still move it."""

    def __init__(self, variables: Sequence | None = None, graph=None) -> None:
        import engine as tf
        self._tf = tf
        self.graph = graph or tf.get_default_graph()
        with self.graph.as_default():
            self.variables = _resolve(self.graph, variables)
            self.masks = {}
            assigns = []
            for variable in self.variables:
                name = variable.op.name
                with tf.name_scope(None):
                    mask = tf.Variable(np.ones(variable.shape.as_list(), np.float32),
                                       trainable=False, name=f"{name}/mask")
                self.masks[name] = mask
                assigns.append(tf.assign(variable, variable * mask))
            self.mask_op = tf.group(*assigns, name="apply_pruning_masks")

    @property
    def names(self) -> list[str]:
        return [v.op.name for v in self.variables]

    def train_op(self, step_op):
        """An op that runs `step_op` (an optimizer's update) and then re-applies the masks."""
        with self.graph.as_default(), self._tf.control_dependencies([step_op]):
            return self._tf.group(*[self._tf.assign(v, v * self.masks[v.op.name])
                                    for v in self.variables], name="train_and_mask")

    def weights(self, sess) -> dict[str, np.ndarray]:
        return dict(zip(self.names, sess.run(self.variables)))

    def mask_values(self, sess) -> dict[str, np.ndarray]:
        return dict(zip(self.names, sess.run([self.masks[n] for n in self.names])))

    def prune(self, sess, sparsity: float | Mapping[str, float]) -> dict[str, float]:
        """Sets each mask to zero the smallest weights (a float for every layer, or a map
        of layer name -> sparsity; layers not named keep their masks), applies the masks,
        and returns each layer's sparsity afterwards."""
        targets = self.targets(sparsity)
        weights, masks = self.weights(sess), self.mask_values(sess)
        for name, target in targets.items():
            self.masks[name].load(magnitude_mask(weights[name], target, masks[name]), sess)
        sess.run(self.mask_op)
        return self.sparsities(sess)

    def targets(self, sparsity: float | Mapping[str, float]) -> dict[str, float]:
        if isinstance(sparsity, Mapping):
            unknown = sorted(set(sparsity) - set(self.names))
            if unknown:
                raise ValueError(f"MagnitudePruning: no pruned variable named {unknown}; "
                                 f"the pruned variables are {self.names}")
            return {n: check_sparsity(f"layer {n!r}", s) for n, s in sparsity.items()}
        value = check_sparsity("MagnitudePruning.prune", sparsity)
        return {n: value for n in self.names}

    def update(self, sess, step: int, schedule: Callable[[int], tuple[bool, float]]) -> bool:
        """One training step's mask update: prunes to schedule(step)'s sparsity when due."""
        due, sparsity = schedule(step)
        if due:
            self.prune(sess, sparsity)
        return due

    def sparsities(self, sess) -> dict[str, float]:
        return {n: float(np.mean(w == 0)) for n, w in self.weights(sess).items()}


def _resolve(graph, variables) -> list:
    if variables is None:
        found = prunable_variables(graph)
        if not found:
            raise ValueError("MagnitudePruning: the graph has no MatMul or Conv2D kernel "
                             "variables to prune; pass variables=[...]")
        return found
    by_name = {v.op.name: v for v in graph.get_collection("variables")}
    resolved = []
    for item in variables:
        name = item if isinstance(item, str) else item.op.name
        name = name[:-2] if name.endswith(":0") else name
        if name not in by_name:
            known = [v.op.name for v in prunable_variables(graph)]
            raise ValueError(f"MagnitudePruning: no variable named {name!r} in the graph; "
                             f"prunable variables: {known}")
        resolved.append(by_name[name])
    return resolved


# Analysis and retraining.

def sensitivity_analysis(sess, pruning: MagnitudePruning, evaluate: Callable[[], float],
                         sparsities: Sequence[float] = DEFAULT_SPARSITIES
                         ) -> dict[str, list[tuple[float, float]]]:
    """For each layer alone (the others unpruned), evaluate() at each sparsity without
    retraining: {layer: [(sparsity, accuracy), ...]}. Weights and masks are restored after."""
    levels = [check_sparsity("sensitivity_analysis", s) for s in sparsities]
    weights, masks = pruning.weights(sess), pruning.mask_values(sess)
    curves = {}
    try:
        for name in pruning.names:
            curve = []
            for level in levels:
                pruned = weights[name] * magnitude_mask(weights[name], level, masks[name])
                pruning.variables[pruning.names.index(name)].load(pruned, sess)
                curve.append((level, float(evaluate())))
            pruning.variables[pruning.names.index(name)].load(weights[name], sess)
            curves[name] = curve
    finally:
        for variable in pruning.variables:
            variable.load(weights[variable.op.name], sess)
    return curves


@dataclass(frozen=True)
class Stage:
    """One prune-and-retrain stage: the step it ended at, the sparsity each layer was pruned
    to, and the accuracy right after pruning and after retraining."""
    stage: int
    step: int
    targets: dict
    sparsities: dict
    pruned_accuracy: float
    accuracy: float


def prune_and_retrain(sess, pruning: MagnitudePruning, train_step: Callable[[], None],
                      evaluate: Callable[[], float], target: float | Mapping[str, float],
                      stages: int = 4, steps_per_stage: int = 100,
                      fine_tune_step: Callable[[], None] | None = None,
                      fine_tune_steps: int = 0) -> list[Stage]:
    """Prunes in `stages` steps of sparsity up to `target` (one for all layers or one per
    layer), retraining `steps_per_stage` train_step() calls after each; stage 0 is the
    unpruned model. With fine_tune_step, one more stage at the target runs it
    fine_tune_steps times (e.g. at a lower learning rate). Both callables must run their
    optimizer and then the masks (MagnitudePruning.train_op)."""
    if stages < 1 or steps_per_stage < 0 or fine_tune_steps < 0:
        raise ValueError(f"prune_and_retrain: need stages >= 1 and step counts >= 0, got "
                         f"stages={stages}, steps_per_stage={steps_per_stage}, "
                         f"fine_tune_steps={fine_tune_steps}")
    finals = pruning.targets(target)
    start = evaluate()
    history = [Stage(0, 0, {n: 0.0 for n in finals}, pruning.sparsities(sess), start, start)]
    step = 0
    for stage in range(1, stages + 1):
        # Cubic ramp as MOT's PolynomialDecay: big cuts early, small ones near the target.
        fraction = 1.0 - (1.0 - stage / stages) ** 3
        targets = {n: s * fraction for n, s in finals.items()}
        sparsities = pruning.prune(sess, targets)
        pruned_accuracy = evaluate()
        for _ in range(steps_per_stage):
            train_step()
            step += 1
        history.append(Stage(stage, step, targets, sparsities, float(pruned_accuracy),
                             float(evaluate())))
    if fine_tune_step is not None and fine_tune_steps:
        before = history[-1].accuracy
        for _ in range(fine_tune_steps):
            fine_tune_step()
            step += 1
        history.append(Stage(stages + 1, step, history[-1].targets, pruning.sparsities(sess),
                             before, float(evaluate())))
    return history


# Sparse storage.

def dense_to_csr(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, column indices int32, row pointers int32) of a 2-D array's nonzeros; a
    higher-rank kernel (Conv2D's HWIO filter) is stored as its (H*W*I, O) matrix."""
    matrix = np.asarray(dense)
    matrix = matrix.reshape(-1, matrix.shape[-1]) if matrix.ndim != 2 else matrix
    rows, cols = np.nonzero(matrix)
    counts = np.bincount(rows, minlength=matrix.shape[0])
    row_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return matrix[rows, cols], cols.astype(np.int32), row_ptr


def csr_to_dense(values: np.ndarray, col_indices: np.ndarray, row_ptr: np.ndarray,
                 shape: Sequence[int]) -> np.ndarray:
    columns = int(shape[-1])
    matrix = np.zeros((len(row_ptr) - 1, columns), dtype=np.asarray(values).dtype)
    rows = np.repeat(np.arange(len(row_ptr) - 1), np.diff(row_ptr))
    matrix[rows, col_indices] = values
    return matrix.reshape(tuple(shape))


def densify(values, col_indices, row_ptr, shape: Sequence[int], name: str):
    """Graph ops that rebuild the dense kernel from its CSR arrays with TF ops only (TF's own
    CSR ops hold a variant CSRSparseMatrix, which no graph file can store): each nonzero's row
    is how many row pointers (past the first) are <= its position, then ScatterNd."""
    import engine as tf
    with tf.name_scope(name):
        nnz = int(np.asarray(values).size)
        v = tf.constant(values, name=CSR_SUFFIXES[0])
        c = tf.constant(col_indices, name=CSR_SUFFIXES[1])
        p = tf.constant(row_ptr, name=CSR_SUFFIXES[2])
        starts = tf.reshape(p[1:-1], [-1, 1])
        marks = tf.scatter_nd(starts, tf.ones_like(p[1:-1]), [nnz + 1])
        rows = tf.cumsum(marks)[:nnz]
        indices = tf.stack([rows, c], axis=1)
        matrix_shape = [len(row_ptr) - 1, int(shape[-1])]
        dense = tf.scatter_nd(indices, v, matrix_shape)
        return tf.reshape(dense, list(shape), name="dense")


def sparse_freeze(graph_def, names: Sequence[str]):
    """A frozen GraphDef with each named kernel Const replaced by its CSR arrays and the ops
    that densify them (the last one renamed to the kernel, so its consumers are unchanged)."""
    import engine as tf
    from engine.graph_def import GraphDef
    by_name = {n.name: n for n in graph_def.node}
    missing = [n for n in names if n not in by_name or by_name[n].op != "Const"]
    if missing:
        raise ValueError(f"sparse_freeze: {missing} are not Const nodes of the frozen graph "
                         f"(freeze the graph with convert_variables_to_constants first)")
    replacements = {}
    for name in names:
        value = np.asarray(by_name[name].attr["value"])
        scratch = tf.Graph()
        with scratch.as_default():
            densify(*dense_to_csr(value), value.shape, name)
        nodes = scratch.as_graph_def().node
        last = dataclasses.replace(nodes[-1], name=name, meta=dict(by_name[name].meta))
        replacements[name] = list(nodes[:-1]) + [last]
    out = []
    for node in graph_def.node:
        out.extend(replacements.get(node.name, [node]))
    return GraphDef(out, version=graph_def.version, source=graph_def.source)


def save_sparse(graph_def, names: Sequence[str], path, compact: bool | None = True) -> None:
    """Saves the frozen graph with the named kernels in CSR form (sparse_freeze), by default as
    a compact file (every index array binary, not inline JSON text); compact=None: by the
    path (.graphz). LZMA also squeezes a dense kernel's zeros, so compare with
    sparse_file_bytes: on the digits MLP magnitude-pruned the compact CSR file is larger than
    the dense one up to about 80% sparsity and about 1% smaller from 90%
    (bench/bench_quantize_costs.py --pruning)."""
    from engine.graph_io import save_graph
    save_graph(sparse_freeze(graph_def, names), path, compact=compact)


@dataclass(frozen=True)
class FileBytes:
    """The dense and the CSR graph saved in the same form ("compact" or "json")."""
    file_format: str
    dense_bytes: int
    sparse_bytes: int

    @property
    def ratio(self) -> float:
        return self.sparse_bytes / self.dense_bytes


def sparse_file_bytes(graph_def, names: Sequence[str], compact: bool = True) -> FileBytes:
    """The bytes of the frozen graph's file, dense and with the named kernels in CSR form,
    both in one form (save_graph's defaults for it)."""
    from engine.compression.evaluate import file_bytes
    sparse = sparse_freeze(graph_def, names)
    dense_bytes, sparse_bytes = (file_bytes(g, strip_stacks=compact, compact=compact)
                                 for g in (graph_def, sparse))
    return FileBytes("compact" if compact else "json", dense_bytes, sparse_bytes)


@dataclass(frozen=True)
class Compression(CompressionRatios):
    """Stored weight values of the pruned kernels, dense versus CSR: value counts, their
    ratio, and bytes of the arrays (CSR with its int32 column indices and row pointers)."""
    dense_values: int
    stored_values: int
    dense_bytes: int
    sparse_bytes: int
    per_layer: dict         # name -> (dense values, nonzero values)


def compression(weights: Mapping[str, np.ndarray]) -> Compression:
    dense_values = stored = dense_bytes = sparse_bytes = 0
    per_layer = {}
    for name, weight in weights.items():
        values, cols, ptr = dense_to_csr(weight)
        per_layer[name] = (int(np.asarray(weight).size), int(values.size))
        dense_values += weight.size
        stored += values.size
        dense_bytes += weight.nbytes
        sparse_bytes += values.nbytes + cols.nbytes + ptr.nbytes
    return Compression(int(dense_values), int(stored), int(dense_bytes), int(sparse_bytes),
                       per_layer)


def stage_targets(curves: Mapping[str, Sequence[tuple[float, float]]], baseline: float,
                  tolerance: float) -> dict[str, float]:
    """Per layer, the largest analysed sparsity whose accuracy stays within `tolerance` of
    `baseline` (0 when none does): targets chosen from the sensitivity curves."""
    chosen = {}
    for name, curve in curves.items():
        fine = [s for s, acc in curve if acc >= baseline - tolerance]
        chosen[name] = max(fine, default=0.0)
    return chosen



def record_pruning(writer, curves: Mapping[str, Sequence[tuple[float, float]]] | None = None,
                   history: Sequence[Stage] = (), figures: Compression | None = None,
                   baseline: float | None = None) -> None:
    """Writes the analysis into a run (RunWriter): the sensitivity curves, each stage with its
    layers' sparsity (and `prune/accuracy` scalars by step), and the compression figures
    (accuracy: the last stage's; baseline: stage 0's unless given)."""
    from engine.record.schema import (
        CompressionRecord,
        LayerSparsityRecord,
        PruneStageRecord,
        SensitivityPoint,
    )
    if curves:
        writer.sensitivity([SensitivityPoint(layer, s, acc) for layer, curve in curves.items()
                            for s, acc in curve])
    for stage in history:
        layers = tuple(LayerSparsityRecord(n, float(stage.targets.get(n, 0.0)), float(s))
                       for n, s in stage.sparsities.items())
        writer.prune_stage(PruneStageRecord(stage.stage, stage.step, stage.pruned_accuracy,
                                            stage.accuracy, layers))
        writer.scalar("prune/accuracy", stage.accuracy, stage.step)
    if figures is not None:
        start = baseline if baseline is not None else (history[0].accuracy if history else 0.0)
        final = history[-1].accuracy if history else start
        writer.compression(CompressionRecord(
            figures.dense_values, figures.stored_values, figures.dense_bytes,
            figures.sparse_bytes, float(start), float(final), dict(figures.per_layer)))
