"""Gradients through nested while loops beside torch eager doing the same work in the same
run: h <- tanh(h @ w) ten times in an inner loop, ten outer iterations adding the inner
result to h (batch 32, 128 units), loss sum(h * h), d loss / d(h0, w). The engine runs it as
a loop in a loop (each inner loop's accumulators made per outer iteration) and, for
comparison, as one flat loop of 100 iterations with a cond doing the outer step; torch
unrolls it with autograd.

Both sides run on one torch thread.
Usage: python bench/bench_nested_loop_grads.py [--repeats N] [--inner N]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

# This checkout's engine, not whichever one the venv has installed.
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
from bench_training import paired_medians  # noqa: E402  (alternated blocks, median ratio)

import engine as tf  # noqa: E402

BATCH, UNITS, OUTER, INNER = 32, 128, 10, 10


def values() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((BATCH, UNITS)).astype(np.float32),
            (rng.standard_normal((UNITS, UNITS)) * 0.05).astype(np.float32))


def _nested(h, w):
    def outer(i, v):
        inner = tf.while_loop(lambda j, u: j < INNER,
                              lambda j, u: (j + 1, tf.tanh(tf.matmul(u, w))), [0, v])[1]
        return i + 1, inner + v
    return tf.while_loop(lambda i, v: i < OUTER, outer, [0, h])[1]


def _flat(h, w):
    def body(i, v, base):
        u = tf.tanh(tf.matmul(v, w))
        ends = tf.equal(tf.mod(i + 1, INNER), 0)
        return (i + 1,) + tuple(tf.cond(ends, lambda: (u + base, u + base), lambda: (u, base)))
    return tf.while_loop(lambda i, v, b: i < OUTER * INNER, body, [0, h, h])[1]


def engine_step(program):
    h0, w0 = values()
    graph = tf.Graph()
    with graph.as_default():
        h, w = tf.constant(h0), tf.constant(w0)
        y = program(h, w)
        grads = tf.gradients(tf.reduce_sum(y * y), [h, w])
        sess = tf.Session(graph=graph)
    return lambda: sess.run(grads)


def torch_step():
    h0, w0 = values()
    h = torch.tensor(h0, requires_grad=True)
    w = torch.tensor(w0, requires_grad=True)

    def run():
        v = h
        for _ in range(OUTER):
            u = v
            for _ in range(INNER):
                u = torch.tanh(u @ w)
            v = u + v
        return torch.autograd.grad((v * v).sum(), [h, w])
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--inner", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"d/d(h, w) of {OUTER} x {INNER} tanh(h @ w) steps (batch {BATCH}, {UNITS} units)")
    for label, program in (("engine: while_loop in a while_loop", _nested),
                           ("engine: one while_loop with a cond", _flat)):
        peer, ours, ratio = paired_medians(torch_step(), engine_step(program), args.repeats,
                                           args.inner)
        print(f"  {'torch eager, unrolled + autograd':40} {peer * 1e3:8.3f} ms")
        print(f"  {label:40} {ours * 1e3:8.3f} ms   ratio {ratio:5.2f}x")


if __name__ == "__main__":
    main()
