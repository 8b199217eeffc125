"""Quantization page callbacks, timed as plain functions on a big quantized graph: a wide
generated MLP (stages of dense units in nested, non-repeating scopes, as Inception's mixed
blocks are) quantized to eightbit with engine.compression.quantize, compared and recorded
into a run store as workbench/demo.py records its quantized run, plus a second comparison of
the same two graphs at another threshold (a redraw that only repaints). Prints the median
time of each step of a visit (first view, the same view again, opening every group,
closing back, a selection, another comparison) with the load average (the machine is
shared). Not a test.

Usage: python bench/bench_quantization_page.py [--keep DIR] [--stages 4] [--units 20]
       [--width 16] [--rounds 5]"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

RUN = "wide-quantized"
FIRST, SECOND = "wide_mlp eightbit", "wide_mlp eightbit, 60 dB"


def letters(k: int) -> str:
    """a, b, …, z, aa, ab: names that differ by more than a number (no series forms)."""
    name, k = "", k + 1
    while k:
        k, rest = divmod(k - 1, 26)
        name = chr(97 + rest) + name
    return name


def wide_mlp(stages: int, units: int, width: int, seed: int = 0):
    """images [None, width] -> stages x units dense+relu units -> probabilities."""
    import engine as tf
    from engine.graph_def import graph_def_from_graph
    rng = np.random.default_rng(seed)
    graph = tf.Graph()
    with graph.as_default():
        hidden = tf.placeholder(tf.float32, [None, width], name="images")
        for stage in range(stages):
            for unit in range(units):
                with tf.name_scope(f"stage_{letters(stage)}/unit_{letters(unit)}"):
                    kernel = tf.constant(rng.normal(0, width ** -0.5, (width, width))
                                         .astype(np.float32), name="kernel")
                    bias = tf.constant(rng.normal(0, 0.1, width).astype(np.float32),
                                       name="bias")
                    hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(hidden, kernel), bias))
        tf.nn.softmax(hidden, name="probabilities")
    return graph_def_from_graph(graph)


def record(logdir: Path, stages: int, units: int, width: int) -> None:
    from engine.compression import quantize
    from engine.compression.report import record_comparison
    from engine.record import RunWriter
    started = time.perf_counter()
    original = wide_mlp(stages, units, width)
    quantized = quantize(original, "eightbit", output_names=["probabilities"])
    built = time.perf_counter()
    feeds = {"images": np.random.default_rng(1).normal(size=(64, width)).astype(np.float32)}
    with RunWriter(logdir, RUN) as writer:
        result = record_comparison(writer, original, quantized, feeds, name=FIRST)
        writer.quantization_comparison(_second(result))
    print(f"recorded {len(original.node)} original and {len(quantized.graph_def.node)} "
          f"quantized nodes ({len(result.nodes)} compared): quantize "
          f"{built - started:.1f} s, compare and record {time.perf_counter() - built:.1f} s")


def _second(result):
    """The same comparison at a 60 dB threshold, over the same graph versions (1, 2)."""
    from engine.record.schema import QuantizationComparisonRecord
    nodes = tuple(dataclasses.replace(n, flagged=False) for n in result.nodes)
    below = next((n.original for n in nodes if n.sqnr_db < 60.0), None)
    return QuantizationComparisonRecord(SECOND, 1, 2, 60.0, below, nodes, dict(result.skipped))


def visit(page, data, run: str) -> dict[str, float]:
    """One visit's steps, each timed (ms): every callback the step fires, as Dash fires it."""
    from viz.quantization import SIDES
    times: dict[str, float] = {}

    def timed(label: str, step) -> object:
        start = time.perf_counter()
        got = step()
        times[label] = (time.perf_counter() - start) * 1000
        return got

    def draw(opened, comparison=FIRST):
        return [page.draw_side(side, run, comparison, opened) for side in SIDES]

    def style(selected, opened, comparison=FIRST):
        return [page.side_style(selected, side, run, comparison, opened) for side in SIDES]

    data.clear_cache()
    first = timed("first view: open groups (cold: read, group)", lambda: page.expansion(
        None, None, None, run, FIRST, None))
    timed("first view drawn (lay out, paint)", lambda: draw(first))
    timed("the same view again", lambda: draw(first))
    record = data.quantization_comparison(run, FIRST)
    every = sorted({gid for version in (record.original_graph_version,
                                        record.quantized_graph_version)
                    for gid, group in data.version_hierarchy(run, version).groups.items()
                    if group.kind != "op"})
    timed("open every group (new expansion)", lambda: draw(every))
    timed("close back to the first view", lambda: draw(first))
    timed("open every group again", lambda: draw(every))
    worst = min((n for n in record.nodes if n.sqnr_db != float("inf")),
                key=lambda n: n.sqnr_db).original
    other = record.nodes[len(record.nodes) // 2].original
    timed("a selection (select, both styles, details)", lambda: (
        page.select(None, None, None, run, FIRST, {"run": run, "node": other}),
        style(other, every), page.details(run, FIRST, other)))
    timed("a selection: both styles only", lambda: style(worst, every))
    timed("read the other comparison (the run store)", lambda: data.quantization_comparison(
        run, SECOND))
    timed("another comparison of the same graphs", lambda: draw(every, SECOND))
    timed("back to the first comparison", lambda: draw(every, FIRST))
    drawn = draw(every)
    times["_leaves"] = sum(1 for element in drawn[1][0]
                           if "leaf" in element.get("classes", ""))
    return times


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="record into (or reuse) this log directory")
    parser.add_argument("--stages", type=int, default=4)
    parser.add_argument("--units", type=int, default=20)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    logdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-quantization-"))
    if not (logdir / RUN).is_dir():
        record(logdir, args.stages, args.units, args.width)
    from workbench import data
    from workbench.pages import quantization as page
    data.set_logdir(logdir)
    rounds = [visit(page, data, RUN) for _ in range(args.rounds)]
    print(f"{args.rounds} rounds, quantized side drawn with every group open: "
          f"{rounds[0]['_leaves']:.0f} leaves; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for label in rounds[0]:
        if not label.startswith("_"):
            figures = [one[label] for one in rounds]
            print(f"  {label:<52} median {statistics.median(figures):8.1f} ms "
                  f"(min {min(figures):.1f})")


if __name__ == "__main__":
    main()
