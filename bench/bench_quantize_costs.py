"""The quantization cost table on the digits MLP and CNN samples: held-out accuracy, graph
file bytes and median Session.run time at batch 1 and 256 (one torch thread) for float,
weights-only, eightbit with run-time ranges and eightbit calibrated on 10 and 1000 samples,
with the ratios to float (engine.compression.report.cost_table); then each variant's file
bytes and ratio to float in both file forms (JSON + side .npz, and the compact .graphz), and
with --members where the compact file's bytes go, member by member; with --pruning the digits
MLP's kernels magnitude-pruned (no retraining) at several sparsities, dense against CSR
(engine.compression.pruning.sparse_file_bytes) in both forms. Both graphs of a ratio are always
saved in the same form (the compact one: version 3, graph.json and arrays.bin, LZMA).

Usage: python bench/bench_quantize_costs.py [--repeats 20] [--models mlp cnn] [--sizes-only]
       [--members] [--pruning]"""

from __future__ import annotations

import argparse
import dataclasses
import lzma
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from engine.compression import pruning
from engine.compression.evaluate import file_bytes
from engine.compression.report import Timing, cost_rows, cost_variants
from engine.graph_io import load_graph_def, save_graph
from viz.quantization import COST_COLUMNS
from viz.quantization import cost_rows as cost_cells

SAMPLES = Path(__file__).resolve().parents[1] / "sample_graphs"
# Each form with save_graph's default for it: JSON keeps creation stacks, compact drops them.
FORMS = {"json": {"compact": False, "strip_stacks": False},
         "compact": {"compact": True, "strip_stacks": True}}


def size_table(model: str, variants: dict) -> list[list[str]]:
    sizes = {v: {form: file_bytes(g, **kw) for form, kw in FORMS.items()}
             for v, g in variants.items()}
    base = next(iter(sizes.values()))
    return [[model, variant] + [f"{s[form]:,} ({s[form] / base[form]:.3f}x)" for form in FORMS]
            for variant, s in sizes.items()]


def members(model: str, variant: str, graph_def) -> None:
    """Each member of the compact file: uncompressed and stored bytes, what it holds."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "g.graphz"
        save_graph(graph_def, path)
        size = path.stat().st_size
        with zipfile.ZipFile(path) as archive:
            infos = sorted(archive.infolist(), key=lambda i: -i.compress_size)
    stored = sum(i.compress_size for i in infos)
    methods = sorted({i.compress_type for i in infos})
    print(f"{model} {variant}: {size:,} bytes; member data {stored:,}, zip headers "
          f"{size - stored:,} ({len(infos)} members, zip method {methods})")
    for info in infos[:8]:
        print(f"    {info.filename:12s} {info.file_size:7,} -> {info.compress_size:7,}")
    arrays = next((i.compress_size for i in infos if i.filename == "arrays.bin"), 0)
    bound = eight_bit_bound(graph_def, arrays)
    if bound:
        print(bound)


def order0_bytes(values: np.ndarray) -> float:
    """The order-0 (symbol-by-symbol) entropy of an 8-bit array in bytes: what an ideal coder
    that sees each weight alone needs; LZMA, which also models context, lands just above it on
    these near-independent weights."""
    counts = np.bincount(values.view(np.uint8).ravel(), minlength=256)
    p = counts[counts > 0] / values.size
    return float(-(p * np.log2(p)).sum() * values.size / 8)


def eight_bit_bound(graph_def, stored_arrays: int) -> str:
    """The 8-bit constants' LZMA bytes against their order-0 entropy: the least an entropy coder
    of the weights alone could save on this file."""
    eight_bit = [np.asarray(n.attr["value"]) for n in graph_def.node if n.op == "Const"
                 and np.asarray(n.attr["value"]).dtype in (np.uint8, np.int8)
                 and np.asarray(n.attr["value"]).size > 16]
    if not eight_bit:
        return ""
    joined = np.concatenate([v.view(np.uint8).ravel() for v in eight_bit])
    lzma_bytes = len(lzma.compress(joined.tobytes(), format=lzma.FORMAT_RAW,
                                   filters=[{"id": lzma.FILTER_LZMA1, "preset": 6}]))
    bound = sum(order0_bytes(v) for v in eight_bit)
    return (f"    8-bit constants: {joined.size:,} values, LZMA {lzma_bytes:,} B, order-0 entropy "
            f"{bound:,.0f} B ({8 * bound / joined.size:.2f} bits a value): an ideal coder saves "
            f"at most {lzma_bytes - bound:,.0f} of the {stored_arrays:,} stored array bytes")


def pruned_sizes(graph_def, sparsities=(0.5, 0.8, 0.9, 0.95)) -> None:
    """The 2-D kernels magnitude-pruned, then dense and CSR files in each form."""
    kernels = [n.name for n in graph_def.node
               if n.op == "Const" and np.asarray(n.attr["value"]).ndim == 2]
    dense = {form: file_bytes(graph_def, strip_stacks=kw["strip_stacks"], compact=kw["compact"])
             for form, kw in FORMS.items()}
    print("| sparsity | JSON dense | JSON CSR | compact dense (vs unpruned) | compact CSR |")
    print("|---|---|---|---|---|")
    for sparsity in sparsities:
        nodes = []
        for n in graph_def.node:
            if n.name in kernels:
                value = np.asarray(n.attr["value"])
                value = value * pruning.magnitude_mask(value, sparsity)
                n = dataclasses.replace(n, attr={**n.attr, "value": value.astype(np.float32)})
            nodes.append(n)
        pruned = dataclasses.replace(graph_def, node=nodes)
        sizes = {form: pruning.sparse_file_bytes(pruned, kernels, compact=form == "compact")
                 for form in FORMS}
        j, c = sizes["json"], sizes["compact"]
        print(f"| {sparsity:.0%} | {j.dense_bytes:,} | {j.sparse_bytes:,} | {c.dense_bytes:,} "
              f"({c.dense_bytes / dense['compact']:.3f}x) | {c.sparse_bytes:,} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"], choices=("mlp", "cnn"))
    parser.add_argument("--sizes-only", action="store_true", help="skip accuracy and timing")
    parser.add_argument("--members", action="store_true", help="the compact files' members")
    parser.add_argument("--pruning", action="store_true",
                        help="dense against CSR files of the magnitude-pruned digits MLP")
    args = parser.parse_args()
    sys.path.insert(0, str(SAMPLES))
    import digits
    data = digits.read_data_sets(0)
    rows, sizes = [], []
    for model in args.models:
        graph_def = load_graph_def(SAMPLES / f"digits_{model}_frozen.json")
        variants = cost_variants(graph_def, data.train.images)
        if not args.sizes_only:
            rows += cost_rows(f"digits_{model}", variants, data.test.images, data.test.labels,
                              timing=Timing(repeats=args.repeats))
        sizes += size_table(f"digits_{model}", variants)
        if args.members:
            for variant, g in variants.items():
                members(f"digits_{model}", variant, g)
    if rows:
        print("| " + " | ".join(COST_COLUMNS) + " |")
        print("|" + "---|" * len(COST_COLUMNS))
        for cells in cost_cells(rows):
            print("| " + " | ".join(cells) + " |")
        print()
    print("| model | variant | JSON + .npz bytes (ratio) | compact .graphz bytes (ratio) |")
    print("|---|---|---|---|")
    for cells in sizes:
        print("| " + " | ".join(cells) + " |")
    if args.pruning:
        print()
        pruned_sizes(load_graph_def(SAMPLES / "digits_mlp_frozen.json"))


if __name__ == "__main__":
    main()
