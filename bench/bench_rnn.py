"""An LSTM training step on the engine beside torch eager doing the same work in the same run:
batch 32, 28 steps of 28 inputs (an MNIST image row by row), 128 units, a dense readout of
the last output into 10 classes, softmax cross entropy, forward + backward + a plain SGD
update. The engine runs a BasicLSTMCell through tf.nn.dynamic_rnn (a while loop on the
dynamic executor, its gradient a second loop) and unrolled through tf.nn.static_rnn (one
Session.run per step, feeds converted each step); torch runs an nn.LSTMCell loop with
autograd.

Both sides run on one torch thread. The issue's goal is dynamic_rnn within 1.5x of torch.
Usage: python bench/bench_rnn.py [--repeats N] [--inner N]"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

# This checkout's engine, not whichever one the venv has installed.
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
from bench_training import paired_medians  # noqa: E402  (alternated blocks, median ratio)

import engine as tf  # noqa: E402

BATCH, STEPS, DEPTH, UNITS, CLASSES = 32, 28, 28, 128, 10


def batch(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(seed)
    return (rng.uniform(0, 1, (BATCH, STEPS, DEPTH)).astype(np.float32),
            rng.randint(0, CLASSES, BATCH).astype(np.int64))


def engine_step(device: str | None, batch_dim: int | None, rnn: str = "static_rnn"):
    """A TF1 program: static_rnn over the unstacked rows (or dynamic_rnn over the batch-major
    images), dense readout, SGD. With the batch dim unknown (as tutorials write the
    placeholder) some elementwise gradients compute their broadcast shapes at run time."""
    x, y = batch()
    graph = tf.Graph()
    with graph.as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        images = tf.placeholder(tf.float32, [batch_dim, STEPS, DEPTH])
        labels = tf.placeholder(tf.int64, [batch_dim])
        with tf.device(device):
            cell = tf.nn.rnn_cell.BasicLSTMCell(UNITS)
            if rnn == "dynamic_rnn":
                outputs, _ = tf.nn.dynamic_rnn(cell, images, dtype=tf.float32)
                last = outputs[:, -1]
            else:
                outputs, _ = tf.nn.static_rnn(cell, tf.unstack(images, axis=1),
                                              dtype=tf.float32)
                last = outputs[-1]
            logits = tf.layers.dense(last, CLASSES)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits))
            train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        sess = tf.Session(graph=graph, config=tf.ConfigProto(
            intra_op_parallelism_threads=1, virtual_gpus=None if device is None else 1))
        sess.run(tf.global_variables_initializer())
    feeds = {images: x, labels: y}
    return (lambda: sess.run(train_op, feeds)), sess, len(graph.get_operations())


def torch_step(device: str = "cpu"):
    x, y = batch()
    cell = torch.nn.LSTMCell(DEPTH, UNITS).to(device)
    readout = torch.nn.Linear(UNITS, CLASSES).to(device)
    opt = torch.optim.SGD(list(cell.parameters()) + list(readout.parameters()), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        images = torch.from_numpy(np.array(x)).to(device)
        h = c = torch.zeros(BATCH, UNITS, device=device)
        for t in range(STEPS):
            h, c = cell(images[:, t], (h, c))
        opt.zero_grad()
        loss = loss_fn(readout(h), torch.from_numpy(np.array(y)).to(device))
        loss.backward()
        opt.step()
        return loss.item()
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--inner", type=int, default=10)
    parser.add_argument("--cuda", action="store_true",
                        help="also run both sides on the first CUDA device")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cases = [("CPU", None, "cpu")]
    if args.cuda and torch.cuda.is_available():
        cases.append(("CUDA", "/gpu:0", "cuda:0"))
    for label, device, torch_device in cases:
        print(f"LSTM train step on {label} (batch {BATCH}, {STEPS} steps, {UNITS} units, SGD), "
              "one torch thread")
        for rnn, batch_dim, placeholder in (("dynamic_rnn", None, "[None, 28, 28]"),
                                            ("dynamic_rnn", BATCH, "[32, 28, 28]"),
                                            ("static_rnn", None, "[None, 28, 28]"),
                                            ("static_rnn", BATCH, "[32, 28, 28]")):
            step, sess, ops = engine_step(device, batch_dim, rnn)
            peer, ours, ratio = paired_medians(torch_step(torch_device), step, args.repeats,
                                               args.inner)
            sess.close()
            print(f"  {'torch eager nn.LSTMCell loop + autograd':52} {peer * 1e3:8.3f} ms")
            engine = f"engine {rnn}, inputs {placeholder} ({ops} ops)"
            print(f"  {engine:52} {ours * 1e3:8.3f} ms   ratio {ratio:5.2f}x "
                  "(dynamic_rnn goal <= 1.5x)")


if __name__ == "__main__":
    main()
