"""What summaries and NaN/Inf checks cost on one MLP training step (64-64-10, batch 64,
softmax cross entropy, SGD), beside the same step without them, in the same process:

  1. the plain step (the peer);
  2. the step under ConfigProto(check_numerics=True);
  3. the step also fetching merge_all of a scalar and a 64x64 weight histogram;
  4. that, plus FileWriter.add_summary of the result into a run store.

One torch thread. Usage: python bench/bench_summary.py [--steps N] [--repeats N]"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
import torch

import engine as tf


def build(rng):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [64, 64])
        y = tf.placeholder(tf.float32, [64, 10])
        w1 = tf.Variable(rng.normal(size=(64, 64)).astype(np.float32) * 0.1)
        w2 = tf.Variable(rng.normal(size=(64, 10)).astype(np.float32) * 0.1)
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y,
                                                                         logits=logits))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        tf.summary.scalar("loss", loss)
        tf.summary.histogram("w1", w1)
        merged = tf.summary.merge_all()
        init = tf.global_variables_initializer()
    return g, x, y, train, merged, init


def step_ms(config, with_summary: bool, logdir: str | None, steps: int, rng) -> float:
    g, x, y, train, merged, init = build(rng)
    feeds = {x: rng.normal(size=(64, 64)).astype(np.float32),
             y: np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)]}
    fetches = [train, merged] if with_summary else [train]
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        writer = tf.summary.FileWriter(logdir) if logdir else None
        for _ in range(20):
            sess.run(fetches, feeds)
        start = time.perf_counter()
        for i in range(steps):
            out = sess.run(fetches, feeds)
            if writer is not None:
                writer.add_summary(out[1], i)
        elapsed = time.perf_counter() - start
        if writer is not None:
            writer.close()
    return elapsed / steps * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as root:
        cases = [
            ("plain step (peer)", lambda i: step_ms(tf.ConfigProto(), False, None,
                                                    args.steps, rng)),
            ("check_numerics=True", lambda i: step_ms(tf.ConfigProto(check_numerics=True),
                                                      False, None, args.steps, rng)),
            ("+ fetch merged summaries", lambda i: step_ms(tf.ConfigProto(), True, None,
                                                           args.steps, rng)),
            ("+ FileWriter.add_summary", lambda i: step_ms(tf.ConfigProto(), True,
                                                           f"{root}/run{i}", args.steps,
                                                           rng)),
        ]
        print(f"MLP train step (64-64-10, batch 64, SGD), one torch thread, median of "
              f"{args.repeats} x {args.steps} steps")
        peer = None
        for label, run in cases:
            ms = statistics.median(run(i) for i in range(args.repeats))
            peer = peer or ms
            print(f"  {label:28s} {ms:7.3f} ms   {ms / peer:5.2f}x")


if __name__ == "__main__":
    main()
