"""The digits CNN (sample_graphs/digits_cnn_frozen.json) float against eightbit calibrated on
1000 training images, in our Session on one torch thread: median and range (min-max) of
Session.run wall ms at each batch, the two graphs taking turns each repeat, the load average
beside each figure, held-out accuracy, and the op types of the eightbit graph; --profile adds
the ops that take the eightbit graph's time.

Usage: python bench/bench_quantized_conv.py [--repeats 30] [--batches 1,256] [--profile]"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from engine.compression import quantize
from engine.compression.report import _session, accuracy
from engine.graph_io import load_graph_def

SAMPLES = Path(__file__).resolve().parents[1] / "sample_graphs"


def timed(runs: dict, feed: np.ndarray, repeats: int) -> dict:
    """{label: [wall ms per repeat]}, the graphs taking turns each repeat."""
    for run in runs.values():
        for _ in range(3):
            run("images", "probabilities", feed)
    times = {label: [] for label in runs}
    for _ in range(repeats):
        for label, run in runs.items():
            start = time.perf_counter()
            run("images", "probabilities", feed)
            times[label].append((time.perf_counter() - start) * 1e3)
    return times


def profile(graph_def, feed: np.ndarray) -> None:
    """The torch ops (aten::, quantized::) that take the eightbit graph's CPU time over five
    runs, from torch's profiler: by torch op, not by graph node."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    with _session(graph_def) as run:
        run("images", "probabilities", feed)
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(5):
                run("images", "probabilities", feed)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--batches", default="1,256")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(SAMPLES))
    import digits
    data = digits.read_data_sets(0)
    graph_def = load_graph_def(SAMPLES / "digits_cnn_frozen.json")
    result = quantize(graph_def, "eightbit",
                      calibration_samples={"images": data.train.images[:1000]})
    eightbit = tuple(result)[0]
    ops = collections.Counter(n.op for n in eightbit.node)
    print("eightbit ops:", dict(sorted(ops.items())))
    for label, g in (("float", graph_def), ("eightbit", eightbit)):
        print(f"accuracy {label}: {accuracy(g, data.test.images, data.test.labels):.4f}")
    torch.set_num_threads(1)
    for batch in (int(b) for b in args.batches.split(",")):
        feed = np.resize(data.test.images, (batch,) + data.test.images.shape[1:]).astype(
            np.float32)
        with _session(graph_def) as run_f, _session(eightbit) as run_q:
            times = timed({"float": run_f, "eightbit": run_q}, feed, args.repeats)
        load = os.getloadavg()[0]
        med = {k: statistics.median(v) for k, v in times.items()}
        for label, values in times.items():
            print(f"batch {batch:4d} {label:9s} median {med[label]:8.3f} ms  range "
                  f"{min(values):8.3f}-{max(values):8.3f}  load {load:.2f}")
        print(f"batch {batch:4d} eightbit speed / float speed: "
              f"{med['float'] / med['eightbit']:.3f}x")
        if args.profile and batch == max(int(b) for b in args.batches.split(",")):
            profile(eightbit, feed)


if __name__ == "__main__":
    main()
