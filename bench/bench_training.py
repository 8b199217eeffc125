"""Training steps of the sample programs' digits models on the engine, beside torch eager
doing the same work (same layers, same batch, Adam, autograd) in the same run.

  1. the digits CNN (conv 3x3x16 same, pool 2, conv 3x3x32 same, pool 2, dense 64, dense 10),
     batch 64, NHWC on the engine as TF1 programs write it, NCHW in torch as torch code does;
  2. the digits MLP (64-64-32-10), batch 64.

Both sides run on one torch thread (two threads on small machines stall 10-50 ms per op).
Goal: engine/eager <= 1.2x each. Usage: python bench/bench_training.py [--repeats N]"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

# This checkout's engine, not whichever one the venv has installed.
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "sample_graphs")]
import build_frozen  # noqa: E402
import digits  # noqa: E402
import digits_cnn  # noqa: E402

import engine as tf  # noqa: E402

BATCH = 64


def seconds_per_call(fn, inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def paired_medians(peer, ours, repeats: int, inner: int) -> tuple[float, float, float]:
    """(peer s, ours s, ratio): blocks of `inner` calls of each, alternated, so load from
    other processes falls on both sides alike; the ratio is the median of the blocks'."""
    for _ in range(5):
        peer()
        ours()
    pairs = [(seconds_per_call(peer, inner), seconds_per_call(ours, inner))
             for _ in range(repeats)]
    return (statistics.median(p for p, _ in pairs), statistics.median(o for _, o in pairs),
            statistics.median(o / p for p, o in pairs))


def engine_step(build):
    """A Session.run of the train op on one fixed batch (feeds converted each step, as a
    training loop does)."""
    data = digits.read_data_sets(0)
    x, y = data.train.next_batch(BATCH)
    graph = tf.Graph()
    with graph.as_default():
        model = build()
        sess = tf.Session(graph=graph)
        sess.run(tf.global_variables_initializer())
    feeds = {model["images"]: x, model["labels"]: y}
    return (lambda: sess.run(model["train_op"], feeds)), sess


def torch_cnn():
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(128, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10))


def torch_mlp():
    nn = torch.nn
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32),
                         nn.ReLU(), nn.Linear(32, 10))


def torch_step(model, channels_first: bool):
    data = digits.read_data_sets(0)
    x, y = data.train.next_batch(BATCH)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        images = torch.from_numpy(np.array(x))
        if channels_first:
            images = images.permute(0, 3, 1, 2)
        opt.zero_grad()
        loss = loss_fn(model(images), torch.from_numpy(np.array(y)))
        loss.backward()
        opt.step()
        return loss.item()
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--inner", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cases = (("digits CNN train step (batch 64, Adam)", digits_cnn.build_model,
              torch_cnn(), True),
             ("digits MLP train step (64-64-32-10, batch 64, Adam)", build_frozen.build_mlp,
              torch_mlp(), False))
    for label, build, module, channels_first in cases:
        step, sess = engine_step(build)
        peer, ours, ratio = paired_medians(torch_step(module, channels_first), step,
                                           args.repeats, args.inner)
        sess.close()
        print(f"{label}, one torch thread")
        print(f"  torch eager+autograd+Adam  {peer * 1e3:8.3f} ms")
        print(f"  engine Session.run         {ours * 1e3:8.3f} ms   ratio {ratio:5.2f}x "
              "(goal <= 1.2x)")


if __name__ == "__main__":
    main()
