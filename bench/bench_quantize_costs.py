"""The quantization cost table on the digits MLP and CNN samples: held-out accuracy, graph
file bytes and median Session.run time at batch 1 and 256 (one torch thread) for float,
weights-only, eightbit with run-time ranges and eightbit calibrated on 10 and 1000 samples,
with the ratios to float (engine.compression.report.cost_table).

Usage: python bench/bench_quantize_costs.py [--repeats 20] [--models mlp cnn]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.compression.report import Timing, cost_table
from engine.graph_io import load_graph_def
from viz.quantization import COST_COLUMNS, cost_rows

SAMPLES = Path(__file__).resolve().parents[1] / "sample_graphs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"], choices=("mlp", "cnn"))
    args = parser.parse_args()
    sys.path.insert(0, str(SAMPLES))
    import digits
    data = digits.read_data_sets(0)
    rows = []
    for model in args.models:
        graph_def = load_graph_def(SAMPLES / f"digits_{model}_frozen.json")
        rows += cost_table(f"digits_{model}", graph_def, data.train.images, data.test.images,
                           data.test.labels, timing=Timing(repeats=args.repeats))
    print("| " + " | ".join(COST_COLUMNS) + " |")
    print("|" + "---|" * len(COST_COLUMNS))
    for cells in cost_rows(rows):
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
