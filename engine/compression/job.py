"""The `workbench quantize` job: read a graph file, calibrate on training samples, rewrite,
save, and measure float against quantized (accuracy on the held-out split, file bytes in the
out file's form, and in both forms) into a JSON report. Datasets are known by name; the digits
samples use sample_graphs/digits.py."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine import errors
from engine.compression.calibration import calibrate
from engine.compression.evaluate import accuracy, constant_bytes, file_bytes
from engine.graph_def import GraphDef
from engine.passes.quantize_graph import MODES, check_fallback_range, quantize_graph

SAMPLE_GRAPHS = Path(__file__).resolve().parents[2] / "sample_graphs"


@dataclass(frozen=True)
class Dataset:
    """Training images for calibration, held-out images and labels for accuracy, and the
    graph's input placeholder and output node it is fed through."""
    name: str
    train_images: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    input_name: str
    output_name: str


def _digits() -> Dataset:
    path = SAMPLE_GRAPHS / "digits.py"
    if not path.is_file():
        raise errors.NotFoundError(None, None, f"dataset 'digits': {path} is missing (it "
                                               "ships with the repository's sample_graphs)")
    spec = importlib.util.spec_from_file_location("sample_graphs_digits", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = module.read_data_sets(seed=0)
    return Dataset("digits", data.train.images, data.test.images, data.test.labels,
                   "images", "probabilities")


DATASETS = {"digits": _digits}


def load_dataset(name: str) -> Dataset:
    if name not in DATASETS:
        raise errors.InvalidArgumentError(None, None, f"unknown dataset {name!r} (known: "
                                                      f"{', '.join(sorted(DATASETS))})")
    return DATASETS[name]()


def check_fits(graph_def: GraphDef, data: Dataset, source: str) -> None:
    """The graph must have the dataset's input placeholder and output node."""
    for name, kind in ((data.input_name, "input placeholder"), (data.output_name, "output")):
        if name not in graph_def:
            raise errors.InvalidArgumentError(None, None, f"{source}: no node '{name}': "
                                                          f"--data {data.name} feeds "
                                                          f"'{data.input_name}' and reads "
                                                          f"'{data.output_name}' ({kind})")


def graph_file_bytes(path: Path) -> int:
    """The bytes of a graph file on disk: a compact file, or the JSON and its side .npz."""
    from engine.graph_io import graph_file_bytes as on_disk
    return on_disk(path)


def same_form_bytes(graph: Path, graph_def: GraphDef, form: str) -> int:
    """The float graph's bytes in `form` ("json" or "compact", save_graph's defaults for it):
    its own file when that is in the form already, else the graph saved so."""
    from engine.graph_io import file_format
    if file_format(graph) == form:
        return graph_file_bytes(graph)
    return file_bytes(graph_def, strip_stacks=form == "compact", compact=form == "compact")


def bytes_by_format(original: GraphDef, quantized: GraphDef) -> dict:
    """Both graphs saved in each form (save_graph's defaults for it), with their ratio and
    what the form is (document version, compression)."""
    from engine.graph_io import form_description
    out = {}
    for form in ("json", "compact"):
        compact = form == "compact"
        f, q = (file_bytes(g, strip_stacks=compact, compact=compact)
                for g in (original, quantized))
        out[form] = {"float_bytes": f, "quantized_bytes": q, "size_ratio": q / f,
                     **form_description(form)}
    return out


def run_quantize(graph: Path, mode: str, out: Path, calibration: int | None = None,
                 report: Path | None = None, data: str = "digits", say=print,
                 bar=None, fallback_range: tuple[float, float] | None = None) -> dict:
    """Does the whole job; returns the report (also written to `report` if given). `say`
    prints a stage line, `bar(label)` returns a progress(done, total) callback.
    `fallback_range`: quantize_graph's fixed range for Requantize without calibration."""
    from engine.graph_io import file_format, form_description, load_graph_def, save_graph

    if mode not in MODES:
        raise errors.InvalidArgumentError(None, None, f"mode {mode!r} is not one of "
                                                      f"{', '.join(MODES)}")
    if calibration is not None and (mode != "eightbit" or calibration < 1):
        raise errors.InvalidArgumentError(None, None, "--calibration N takes N >= 1 samples "
                                                      "and applies to --mode eightbit only")
    check_fallback_range(mode, fallback_range)
    graph = Path(graph)
    original = load_graph_def(graph)
    dataset = load_dataset(data)
    check_fits(original, dataset, str(graph))
    bar = bar or (lambda label: None)
    ranges, samples = None, dataset.train_images[:0]
    if calibration:
        samples = dataset.train_images[:calibration]
        say(f"Calibrating on {len(samples)} {data} training samples")
        ranges = calibrate(original, {dataset.input_name: samples}, batch_size=256,
                           progress=bar("calibrate"))
    say(f"Rewriting ({mode})")
    result = quantize_graph(original, mode, calibration=ranges,
                            output_names=[dataset.output_name], fallback_range=fallback_range)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_graph(result.graph_def, out)
    say(f"Wrote {out} ({len(result.graph_def.node)} nodes)")
    if result.kept_float:
        say("Kept in float (no quantized form): " + ", ".join(
            f"{name} ({original.by_name(name).op})" for name in result.kept_float))
    scores = {}
    for label, graph_def in (("float", original), ("quantized", result.graph_def)):
        scores[label] = accuracy(graph_def, dataset.test_images, dataset.test_labels,
                                 dataset.input_name, dataset.output_name,
                                 progress=bar(f"evaluate {label}"))
    # Both in the out file's form: a compact out file against a JSON input would otherwise
    # count the compression of the container as the quantization's.
    form = file_format(out)
    float_bytes, quantized_bytes = same_form_bytes(graph, original, form), graph_file_bytes(out)
    body = {
        "graph": str(graph), "out": str(out), "mode": mode, "data": data,
        "calibration_samples": int(len(samples)),
        "test_examples": int(len(dataset.test_labels)),
        "float_accuracy": scores["float"], "quantized_accuracy": scores["quantized"],
        "float_bytes": float_bytes, "quantized_bytes": quantized_bytes,
        "size_ratio": quantized_bytes / float_bytes, "file_format": form,
        "file_form": {**form_description(form), "compared": "float and quantized graphs "
                      "saved in the same form, so the ratio is the quantization's, not the "
                      "container's"},
        "bytes_by_format": bytes_by_format(original, result.graph_def),
        "float_constant_bytes": constant_bytes(original),
        "quantized_constant_bytes": constant_bytes(result.graph_def),
        "float_nodes": len(original.node), "quantized_nodes": len(result.graph_def.node),
        "kept_float": dict(result.kept_float),
        "fallback_range": list(fallback_range) if fallback_range else None,
        "folded_batch_norms": dict(result.folded),
    }
    if report is not None:
        report = Path(report)
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(body, indent=2) + "\n")
    return body
