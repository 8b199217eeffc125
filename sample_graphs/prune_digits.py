"""Prunes the digits MLP (build_frozen.py's 64 -> 64 -> 32 -> 10) by magnitude: trains it,
runs the per-layer sensitivity analysis, prunes and retrains in stages to per-layer targets,
fine-tunes at a lower learning rate, freezes the pruned graph with its kernels stored as CSR,
checks that the saved file gives the masked dense graph's outputs, and prints (and with
--logdir records) the curves, the stages and the compression figures.

Usage: python sample_graphs/prune_digits.py [--logdir DIR] [--out pruned.json]"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

import engine as tf
from engine.compression import pruning

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import build_frozen  # noqa: E402
import digits  # noqa: E402

# Chosen from the sensitivity curves: the output layer (320 weights, 10 classes) is the most
# sensitive per weight, the 64x64 input layer holds most of the weights.
TARGETS = {"dense/kernel": 0.91, "dense_1/kernel": 0.88, "logits/kernel": 0.75}


def parse_targets(text: str) -> dict[str, float]:
    """"layer=0.9,other=0.8" -> {layer: 0.9, other: 0.8}."""
    targets = {}
    for part in filter(None, text.split(",")):
        name, _, value = part.partition("=")
        try:
            targets[name.strip()] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--targets: expected layer=sparsity, got {part!r}") from None
    return targets


def run(steps: int = 400, stages: int = 6, steps_per_stage: int = 200,
        fine_tune_steps: int = 400, targets: dict | None = None, l2: float = 1e-3,
        seed: int = 0, logdir: str | None = None, run_name: str | None = None,
        out: str | None = None, sparsities=pruning.DEFAULT_SPARSITIES) -> dict:
    """The whole analysis; returns its figures (and the run folder when recording)."""
    data = digits.read_data_sets(seed)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = build_frozen.build_mlp()
        pruner = pruning.MagnitudePruning()
        # Retraining adds L2 on the kernels (Han et al.): with Adam it drives the weights of
        # never-lit border pixels to zero, so the magnitude ranking stops keeping them.
        decay = tf.add_n([tf.reduce_sum(tf.square(v)) for v in pruner.variables])
        retrain = tf.train.AdamOptimizer(0.01).minimize(model["loss"] + l2 * decay)
        fine = tf.train.AdamOptimizer(0.001).minimize(model["loss"])
        ops = {"train": model["train_op"], "retrain": pruner.train_op(retrain),
               "fine": pruner.train_op(fine)}
        session = tf.Session(logdir=logdir, run_name=run_name) if logdir else tf.Session()
        with session as sess:
            sess.run(tf.global_variables_initializer())

            def step(op: str) -> None:
                x, y = data.train.next_batch(64)
                sess.run(ops[op], {model["images"]: x, model["labels"]: y})

            def evaluate() -> float:
                return float(sess.run(model["accuracy"], {model["images"]: data.test.images,
                                                          model["labels"]: data.test.labels}))

            for _ in range(steps):
                step("train")
            baseline = evaluate()
            curves = pruning.sensitivity_analysis(sess, pruner, evaluate, sparsities)
            history = pruning.prune_and_retrain(
                sess, pruner, lambda: step("retrain"), evaluate, targets or TARGETS,
                stages=stages, steps_per_stage=steps_per_stage,
                fine_tune_step=lambda: step("fine"), fine_tune_steps=fine_tune_steps)
            figures = pruning.compression(pruner.weights(sess))
            probabilities = sess.run(build_frozen.OUTPUT + ":0",
                                     {model["images"]: data.test.images})
            frozen = tf.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), [build_frozen.OUTPUT])
            result = {"baseline": baseline, "accuracy": history[-1].accuracy,
                      "curves": curves, "history": history, "compression": figures}
            if logdir:
                writer = sess.run_writer
                writer.set_config({"model": "digits mlp 64-64-32-10", "pruning": "magnitude",
                                   "targets": targets or TARGETS, "steps": steps,
                                   "stages": stages, "steps_per_stage": steps_per_stage,
                                   "fine_tune_steps": fine_tune_steps, "l2": l2})
                pruning.record_pruning(writer, curves, history, figures, baseline)
                result["run"] = writer.path
    result["max_output_difference"] = _check_saved(frozen, pruner.names, probabilities,
                                                   data.test.images, out)
    return result


def _check_saved(frozen, names, expected: np.ndarray, images: np.ndarray,
                 out: str | None) -> float:
    """Saves the CSR graph, loads it back, and returns its largest output difference from
    the masked dense graph's."""
    sparse = pruning.sparse_freeze(frozen, names)
    with tempfile.TemporaryDirectory() as scratch:
        path = out or os.path.join(scratch, "digits_mlp_pruned.json")
        tf.save_graph(sparse, path)
        loaded = tf.load_graph(path)
    with loaded.as_default(), tf.Session() as sess:
        got = sess.run(build_frozen.OUTPUT + ":0", {build_frozen.INPUT + ":0": images})
    return float(np.abs(got - expected).max())


def report(result: dict) -> str:
    lines = ["sensitivity (accuracy with one layer pruned, no retraining):"]
    for layer, curve in result["curves"].items():
        points = "  ".join(f"{s:.0%}:{acc:.3f}" for s, acc in curve)
        lines.append(f"  {layer:16s} {points}")
    lines.append("prune-retrain stages:")
    for stage in result["history"]:
        layers = ", ".join(f"{n} {s:.1%}" for n, s in stage.sparsities.items())
        lines.append(f"  stage {stage.stage} step {stage.step:4d}: pruned "
                     f"{stage.pruned_accuracy:.4f} -> retrained {stage.accuracy:.4f} ({layers})")
    c = result["compression"]
    lines += [
        f"kernels: {c.dense_values} dense values -> {c.stored_values} stored "
        f"({c.ratio:.2f}x fewer); bytes {c.dense_bytes} -> {c.sparse_bytes} with CSR "
        f"indices ({c.bytes_ratio:.2f}x)",
        f"accuracy: unpruned {result['baseline']:.4f}, pruned {result['accuracy']:.4f} "
        f"({100 * (result['accuracy'] - result['baseline']):+.2f} points)",
        f"saved CSR graph vs masked dense graph: max |difference| "
        f"{result['max_output_difference']:.2e}",
    ]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", help="record the analysis as a run here")
    parser.add_argument("--run-name", help="the run's name (default: a dated one)")
    parser.add_argument("--out", help="also keep the pruned CSR graph file here")
    parser.add_argument("--steps", type=int, default=400, help="initial training steps")
    parser.add_argument("--stages", type=int, default=6)
    parser.add_argument("--steps-per-stage", type=int, default=200)
    parser.add_argument("--fine-tune-steps", type=int, default=400)
    parser.add_argument("--targets", type=parse_targets,
                        help="per-layer sparsity, e.g. dense/kernel=0.9,logits/kernel=0.7")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    result = run(args.steps, args.stages, args.steps_per_stage, args.fine_tune_steps,
                 args.targets, seed=args.seed, logdir=args.logdir, run_name=args.run_name,
                 out=args.out)
    print(report(result))
    if "run" in result:
        print(f"recorded in {result['run']}")


if __name__ == "__main__":
    main()
