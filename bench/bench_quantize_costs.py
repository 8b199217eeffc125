"""The quantization cost table on the digits MLP and CNN samples: held-out accuracy, graph
file bytes and median Session.run time at batch 1 and 256 (one torch thread) for float,
weights-only, eightbit with run-time ranges and eightbit calibrated on 10 and 1000 samples,
with the ratios to float (engine.compression.report.cost_table); then each variant's file
bytes and ratio to float in both file forms (JSON + side .npz, and the compact .graphz), and
with --members where the compact file's bytes go, member by member.

Usage: python bench/bench_quantize_costs.py [--repeats 20] [--models mlp cnn] [--sizes-only]
       [--members]"""

from __future__ import annotations

import argparse
import sys
import tempfile
import zipfile
from pathlib import Path

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
    print(f"{model} {variant}: {size:,} bytes; member data {stored:,}, zip headers "
          f"{size - stored:,} ({len(infos)} members)")
    for info in infos[:8]:
        print(f"    {info.filename:12s} {info.file_size:7,} -> {info.compress_size:7,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"], choices=("mlp", "cnn"))
    parser.add_argument("--sizes-only", action="store_true", help="skip accuracy and timing")
    parser.add_argument("--members", action="store_true", help="the compact files' members")
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


if __name__ == "__main__":
    main()
