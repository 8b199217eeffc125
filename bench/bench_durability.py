"""Steps lost to kill -9: a heavily logging training process (a recorded MLP session with
per-op traces every 10th step; per step 8 scalars, a 2,000-value histogram, a text, every 5th
step an image) is killed with SIGKILL at random moments; each trial counts the steps it had
reported finished that the run store does not hold in full (goal: at most 1, the step whose
commit was in flight). The peer is the same victim with the writer's step-boundary wait
switched off (the writer before issue 6: asynchronous, no back-pressure).

Usage: python bench/bench_durability.py [--trials N] [--seed S]"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "engine" / "record"))
from kill_trials import Zygote  # noqa: E402


def run_trials(trials: int, seed: int, wait: bool) -> list:
    zygote = Zygote(writer_waits=wait)
    rng = random.Random(seed)
    try:
        with tempfile.TemporaryDirectory() as logdir:
            return [zygote.trial(Path(logdir), f"victim-{n}", rng) for n in range(trials)]
    finally:
        zygote.close()


def report(label: str, results: list) -> None:
    lost = collections.Counter(r.steps_lost for r in results)
    damaged = sum(1 for r in results if r.problems)
    print(f"  {label}: {len(results)} trials, steps reported per trial "
          f"{min(r.reported for r in results)}..{max(r.reported for r in results)}")
    print(f"    steps lost per trial: max {max(lost)}, "
          + ", ".join(f"{n} lost in {count}" for n, count in sorted(lost.items()))
          + f"; trials with a hole before the last step: {damaged}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"kill -9 of a heavily logging training process, {args.trials} trials each")
    report("ours (commit at every step boundary, the writer waits for the step before)",
           run_trials(args.trials, args.seed, wait=True))
    report("peer (same writer, no step-boundary wait)",
           run_trials(args.trials, args.seed, wait=False))


if __name__ == "__main__":
    main()
