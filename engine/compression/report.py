"""What quantizing costs and gains, as the workbench shows it: the cost table (held-out
accuracy, graph file bytes, inference time at batch 1 and 256 against the float graph) and
the calls that record it and a per-node comparison into a run store."""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.compression.compare import DEFAULT_THRESHOLD_DB, Comparison, compare
from engine.compression.evaluate import file_bytes
from engine.graph_def import GraphDef, import_graph_def
from engine.record.schema import QuantizationComparisonRecord, QuantizationCostRecord

FLOAT = "float"
WEIGHTS = "weights"
RUNTIME_RANGES = "eightbit, run-time ranges"
BATCHES = (1, 256)


def calibrated(samples: int) -> str:
    return f"eightbit, calibrated on {samples}"


@dataclasses.dataclass(frozen=True)
class Timing:
    """Median of `repeats` Session.run calls after `warmup` unmeasured ones, one torch thread."""
    repeats: int = 20
    warmup: int = 3


DEFAULT_TIMING = Timing()

def graph_file_bytes(graph_def: GraphDef) -> int:
    """The size of the compact graph file (`.graphz`, no creation stacks) save_graph writes:
    the form meant for shipping a model, so the cost table's size ratio is the quantization's,
    with every variant counted in the same form."""
    return file_bytes(graph_def, strip_stacks=True, compact=True)


def accuracy(graph_def: GraphDef, images: np.ndarray, labels: np.ndarray,
             input_name: str = "images", output_name: str = "probabilities") -> float:
    """The fraction of `images` whose highest output is the label."""
    with _session(graph_def) as run:
        outputs = run(input_name, output_name, images)
    return float(np.mean(np.argmax(outputs, axis=-1) == np.asarray(labels)))


def inference_us(graph_def: GraphDef, images: np.ndarray, batch: int,
                 input_name: str = "images", output_name: str = "probabilities",
                 timing: Timing | None = None) -> float:
    """Median microseconds of one Session.run at `batch` (images repeated to fill it), on one
    torch thread, the plan compiled before the clock starts."""
    timing = timing or DEFAULT_TIMING
    feed = np.resize(images, (batch,) + tuple(images.shape[1:])).astype(images.dtype)
    with _one_thread(), _session(graph_def) as run:
        for _ in range(timing.warmup):
            run(input_name, output_name, feed)
        times = []
        for _ in range(timing.repeats):
            start = time.perf_counter()
            run(input_name, output_name, feed)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def cost_rows(model: str, variants: Mapping[str, GraphDef], test_images: np.ndarray,
              test_labels: np.ndarray, input_name: str = "images",
              output_name: str = "probabilities", batches: Sequence[int] = BATCHES,
              timing: Timing | None = None) -> list[QuantizationCostRecord]:
    """One row per variant (the first is the float graph the ratios are taken against)."""
    if not variants:
        raise ValueError(f"cost table of {model!r}: no graphs given")
    if len(batches) != 2:
        raise ValueError(f"cost table of {model!r}: two batch sizes, got {list(batches)}")
    measured = {}
    for variant, graph_def in variants.items():
        times = [inference_us(graph_def, test_images, b, input_name, output_name, timing)
                 for b in batches]
        measured[variant] = (accuracy(graph_def, test_images, test_labels, input_name,
                                      output_name), graph_file_bytes(graph_def), times)
    base_bytes, base_times = next(iter(measured.values()))[1:]
    return [QuantizationCostRecord(
        model, variant, acc, size, size / base_bytes, times[0], times[1],
        base_times[0] / times[0], base_times[1] / times[1])
        for variant, (acc, size, times) in measured.items()]


def cost_variants(graph_def: GraphDef, calibration_images: np.ndarray,
                  calibration_sizes: Sequence[int] = (10, 1000),
                  input_name: str = "images") -> dict[str, GraphDef]:
    """float, weights-only, eightbit with run-time ranges and eightbit calibrated on the first
    N calibration images for each N (engine.compression.quantize)."""
    from engine.compression import quantize
    variants = {FLOAT: graph_def,
                WEIGHTS: _graph(quantize(graph_def, "weights")),
                RUNTIME_RANGES: _graph(quantize(graph_def, "eightbit"))}
    for size in calibration_sizes:
        samples = calibration_images[:size]
        variants[calibrated(len(samples))] = _graph(
            quantize(graph_def, "eightbit", calibration_samples={input_name: samples}))
    return variants


def cost_table(model: str, graph_def: GraphDef, calibration_images: np.ndarray,
               test_images: np.ndarray, test_labels: np.ndarray,
               calibration_sizes: Sequence[int] = (10, 1000), input_name: str = "images",
               output_name: str = "probabilities",
               timing: Timing | None = None) -> list[QuantizationCostRecord]:
    """The rows float, weights-only, eightbit (run-time ranges) and eightbit calibrated on
    each of calibration_sizes samples, measured on the held-out images."""
    variants = cost_variants(graph_def, calibration_images, calibration_sizes, input_name)
    return cost_rows(model, variants, test_images, test_labels, input_name, output_name,
                     timing=timing)


def record_comparison(writer: Any, original: GraphDef, quantized: Any,
                      feeds: Mapping[str, Any], name: str = "quantized",
                      threshold_db: float = DEFAULT_THRESHOLD_DB,
                      graph_versions: tuple[int, int] = (1, 2)) -> Comparison:
    """compare()s and records into `writer` (a RunWriter) both graphs, as the given graph
    versions (original, quantized), and the comparison under `name`, for the Quantization
    page. Several comparisons in one run need their own graph versions."""
    from engine.runtime.recording import graph_record
    original_version, quantized_version = graph_versions
    if original_version == quantized_version:
        raise ValueError(f"record_comparison {name!r}: the two graphs need two graph "
                         f"versions, got {graph_versions}")
    result = compare(original, quantized, feeds, threshold_db=threshold_db)
    quantized_def, _node_map = quantized
    writer.graph(dataclasses.replace(graph_record(original), version=original_version))
    writer.graph(dataclasses.replace(graph_record(quantized_def), version=quantized_version))
    writer.quantization_comparison(QuantizationComparisonRecord(
        name, original_version, quantized_version, result.threshold_db, result.flagged,
        result.nodes, dict(result.skipped)))
    return result


def record_quantize_job(logdir: str | Path, graph: str | Path, mode: str,
                        calibration: int | None = None, data: str = "digits",
                        compare_samples: int = 256, say=print) -> str:
    """`workbench quantize ... --record LOGDIR`: quantizes the graph file as the job did
    (the same mode and calibration samples, so the same graph), records both graphs, the
    per-node comparison on `compare_samples` held-out samples and the model's cost table
    into a new run in `logdir`; returns the run folder."""
    from engine.compression import quantize
    from engine.compression.job import check_fits, load_dataset
    from engine.graph_io import load_graph_def
    from engine.record import RunWriter
    graph = Path(graph)
    original = load_graph_def(graph)
    dataset = load_dataset(data)
    check_fits(original, dataset, str(graph))
    inputs = dataset.input_name
    samples = None if not calibration else {inputs: dataset.train_images[:calibration]}
    result = quantize(original, mode, calibration_samples=samples,
                      output_names=[dataset.output_name])
    model = graph.name.split(".")[0]
    form = (calibrated(calibration) if mode == "eightbit" and calibration
            else RUNTIME_RANGES if mode == "eightbit" else WEIGHTS)
    with RunWriter(logdir, f"quantize-{model}", exist_ok=True, config={
            "graph": str(graph), "mode": mode, "calibration_samples": calibration or 0,
            "data": data}) as writer:
        say(f"Comparing node by node on {compare_samples} held-out samples")
        record_comparison(writer, original, result,
                          {inputs: dataset.test_images[:compare_samples]},
                          name=f"{model} {form}")
        sizes = tuple(dict.fromkeys((10, calibration or 10, 1000)))
        say(f"Measuring the cost table (calibrated on {', '.join(map(str, sizes))})")
        writer.quantization_costs(cost_table(
            model, original, dataset.train_images, dataset.test_images, dataset.test_labels,
            calibration_sizes=sizes, input_name=inputs, output_name=dataset.output_name))
        return writer.path


def _graph(result: Any) -> GraphDef:
    return result if isinstance(result, GraphDef) else tuple(result)[0]


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def _session(graph_def: GraphDef) -> Iterator[Any]:
    from engine.graph import Graph
    from engine.runtime.session import Session
    graph = Graph()
    import_graph_def(graph_def, name="", graph=graph)
    with Session(graph=graph) as session:
        def run(input_name: str, output_name: str, images: np.ndarray) -> np.ndarray:
            return session.run(f"{output_name}:0", {f"{input_name}:0": images})
        yield run
