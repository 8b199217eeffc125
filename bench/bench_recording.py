"""What recording costs: one MLP training step (64-64-32-10, batch 64, softmax cross entropy,
SGD) with recording off beside the same step recorded into a run store with per-op tracing
every 100th step (ConfigProto(trace_every_n_steps=100)), in the same run, as a ratio
(goal <= 1.10x). Samples of 100 steps alternate between the two sessions, so each recorded
sample holds exactly one traced step and both sides see the same machine load; the median
and the best sample of each side are printed (the best is the steadier on a busy machine).

Both sides run on one torch thread (two threads on small machines stall 10-50 ms per op).
Usage: python bench/bench_recording.py [--samples N]"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch
from bench_engine import mlp_engine

import engine as tf

STEPS_PER_SAMPLE = 100
TRACE_EVERY = 100


def mlp_session(virtual_gpus: int, logdir: str | None):
    config = tf.ConfigProto(virtual_gpus=virtual_gpus, trace_every_n_steps=TRACE_EVERY)
    return mlp_engine(virtual_gpus, config, logdir,
                      None if logdir is None else f"bench-{virtual_gpus}gpu")


def per_step_seconds(step) -> float:
    start = time.perf_counter()
    for _ in range(STEPS_PER_SAMPLE):
        step()
    return (time.perf_counter() - start) / STEPS_PER_SAMPLE


def compare(virtual_gpus: int, samples: int, logdir: str) -> tuple[list, list, int]:
    off, off_sess = mlp_session(virtual_gpus, None)
    on, on_sess = mlp_session(virtual_gpus, logdir)
    for step in (off, on):        # warm up; the recorded session's traced step 1 is done
        for _ in range(STEPS_PER_SAMPLE - 1):
            step()
    off_s, on_s = [], []
    for _ in range(samples):
        off_s.append(per_step_seconds(off))
        on_s.append(per_step_seconds(on))
    path = on_sess.run_writer.path
    off_sess.close()
    on_sess.close()
    from engine.record import RunReader
    reader = RunReader(path)
    traced = sum(1 for s in reader.steps() if reader.step_stats(s.step))
    return off_s, on_s, traced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=21)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"MLP train step, recording off vs on (per-op trace every {TRACE_EVERY}th step), "
          f"one torch thread, median of {args.samples} samples of {STEPS_PER_SAMPLE} steps")
    with tempfile.TemporaryDirectory() as logdir:
        for gpus, label in ((0, "CPU only"), (2, "CPU + 2 virtual GPUs")):
            off_s, on_s, traced = compare(gpus, args.samples, logdir)
            print(f"  {label} ({traced} traced steps stored)")
            for name, pick in (("median", statistics.median), ("best", min)):
                off, on = pick(off_s), pick(on_s)
                print(f"    {name:6s} off {off * 1e3:7.3f} ms   on {on * 1e3:7.3f} ms   "
                      f"ratio {on / off:5.3f}x (goal <= 1.10x)")


if __name__ == "__main__":
    main()
