"""Session.run overhead beside torch eager doing the same work in the same process.

  1. a 1000-op elementwise chain (add/mul on a small vector): per-op cost and the ratio;
  2. one MLP training step (64-64-32-10, batch 64, softmax cross entropy, SGD) on one device
     and on CPU + two virtual GPUs, beside a torch eager step with autograd.

Both sides run on one torch thread (two threads on small machines stall 10-50 ms per op).
Usage: python bench/bench_engine.py [--repeats N]"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

import engine as tf

CHAIN_OPS = 1000
VECTOR = 256


def median_seconds(fn, repeats: int, inner: int = 1) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def chain_engine(data: np.ndarray):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [VECTOR], name="x")
        y = x
        for i in range(CHAIN_OPS):
            y = y + 0.5 if i % 2 == 0 else y * 0.999
        sess = tf.Session(graph=g)
    return lambda: sess.run(y, {x: data}), sess


def chain_torch(data: np.ndarray):
    half = torch.tensor(0.5)
    scale = torch.tensor(0.999)

    def run():
        y = torch.from_numpy(np.array(data))
        for i in range(CHAIN_OPS):
            y = torch.add(y, half) if i % 2 == 0 else torch.mul(y, scale)
        return y.numpy()
    return run


def mlp_data(seed=0):
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data[:64] / 16.0).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[d.target[:64]]
    rng = np.random.RandomState(seed)
    shapes = [(64, 64), (64, 32), (32, 10)]
    weights = [(rng.randn(*s) * 0.1).astype(np.float32) for s in shapes]
    return x, y, weights


def mlp_engine(virtual_gpus: int, config=None, logdir: str | None = None,
               run_name: str | None = None):
    """The MLP step on CPU (or CPU + 2 virtual GPUs); `config`, `logdir` and `run_name` go to
    the Session (bench_recording records it)."""
    x_np, y_np, weights = mlp_data()
    g = tf.Graph()
    devices = ("/cpu:0", "/gpu:0", "/gpu:1") if virtual_gpus else ("/cpu:0",) * 3
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 64])
        y = tf.placeholder(tf.float32, [None, 10])
        h = x
        for i, (w0, dev) in enumerate(zip(weights, devices)):
            with tf.device(dev):
                w = tf.Variable(w0)
                b = tf.Variable(np.zeros(w0.shape[1], np.float32))
                h = tf.matmul(h, w) + b
                if i < 2:
                    h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=h))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        sess = tf.Session(graph=g, config=config or tf.ConfigProto(virtual_gpus=virtual_gpus),
                          logdir=logdir, run_name=run_name)
        sess.run(tf.global_variables_initializer())
    return lambda: sess.run([train, loss], {x: x_np, y: y_np}), sess


def mlp_torch():
    x_np, y_np, weights = mlp_data()
    params = []
    for w0 in weights:
        params += [torch.tensor(w0, requires_grad=True),
                   torch.zeros(w0.shape[1], requires_grad=True)]

    def step():
        x, y = torch.from_numpy(np.array(x_np)), torch.from_numpy(np.array(y_np))
        h = x
        for i in range(3):
            h = h @ params[2 * i] + params[2 * i + 1]
            if i < 2:
                h = torch.relu(h)
        loss = -(y * torch.log_softmax(h, -1)).sum(-1).mean()
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, gr in zip(params, grads):
                p -= 0.1 * gr
        return loss.item()
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = np.random.RandomState(0).randn(VECTOR).astype(np.float32)

    run_engine, sess = chain_engine(data)
    ours = median_seconds(run_engine, args.repeats)
    peer = median_seconds(chain_torch(data), args.repeats)
    np.testing.assert_allclose(run_engine(), chain_torch(data)(), rtol=1e-5)
    sess.close()
    print(f"{CHAIN_OPS}-op elementwise chain ({VECTOR} floats), one torch thread")
    print(f"  engine Session.run   {ours * 1e3:8.3f} ms   {ours / CHAIN_OPS * 1e6:6.2f} us/op")
    print(f"  torch eager          {peer * 1e3:8.3f} ms   {peer / CHAIN_OPS * 1e6:6.2f} us/op")
    print(f"  ratio engine/eager   {ours / peer:8.2f}x   (goal <= 1.5x)")

    peer = median_seconds(mlp_torch(), args.repeats, inner=20)
    print("MLP train step (64-64-32-10, batch 64, SGD), one torch thread")
    print(f"  torch eager+autograd {peer * 1e3:8.3f} ms")
    for gpus, label in ((0, "engine, CPU only"), (2, "engine, CPU + 2 virtual GPUs")):
        step, sess = mlp_engine(gpus)
        ours = median_seconds(step, args.repeats, inner=20)
        sess.close()
        print(f"  {label:20s} {ours * 1e3:8.3f} ms   ratio {ours / peer:5.2f}x")


if __name__ == "__main__":
    main()
