"""The dynamic executor's cost beside the compiled one and beside torch eager.

  1. the 1000-op elementwise chain of bench_engine.py run by each executor (the dynamic one
     forced on a partition without control flow): per-op overhead of pending counts, the
     ready queue and deadness;
  2. a tf.while_loop of 1000 iterations (x = x * 0.999 + 0.001 on 256 floats, a counter and
     its test: 9 node executions an iteration) beside the same Python loop in torch eager;
  3. tf.map_fn over 256 rows (TensorArray reads and writes in the loop) beside a torch loop.

Both sides run on one torch thread. Usage: python bench/bench_control_flow.py [--repeats N]"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from bench_engine import CHAIN_OPS, VECTOR, chain_engine, chain_torch, median_seconds

import engine as tf
from engine.kernels.registry import KernelContext
from engine.runtime.executor_api import DYNAMIC, make_executor

ITERATIONS = 1000


def dynamic_chain(sess, data):
    """The chain's plan with its partition rebuilt on the dynamic executor."""
    (plan,) = sess._plans.values()
    part = plan.partitions[0]
    dynamic = make_executor(DYNAMIC, part.device, part.nodes,
                            KernelContext(part.device, part.device.torch_device,
                                          sess._variables), "bench dynamic", {})
    feeds = [torch.from_numpy(data)]

    def run():
        out = [None]
        dynamic.run(feeds, out, None, None)
        return out[0]
    return run, dynamic


def loop_engine(data):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [VECTOR], name="x")
        _, y = tf.while_loop(lambda i, v: i < ITERATIONS,
                             lambda i, v: (i + 1, v * 0.999 + 0.001), [0, x])
        sess = tf.Session(graph=g)
    return lambda: sess.run(y, {x: data}), sess


def loop_torch(data):
    scale, shift = torch.tensor(0.999), torch.tensor(0.001)

    def run():
        v = torch.from_numpy(np.array(data))
        i = 0
        while i < ITERATIONS:
            i, v = i + 1, v * scale + shift
        return v.numpy()
    return run


def map_engine(rows):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, rows.shape, name="x")
        y = tf.map_fn(lambda r: tf.reduce_sum(r * r), x)
        sess = tf.Session(graph=g)
    return lambda: sess.run(y, {x: rows}), sess


def map_torch(rows):
    def run():
        x = torch.from_numpy(np.array(rows))
        return torch.stack([torch.sum(r * r) for r in x]).numpy()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = np.random.RandomState(0).randn(VECTOR).astype(np.float32)

    run_compiled, sess = chain_engine(data)
    run_compiled()
    run_dynamic, _ = dynamic_chain(sess, data)
    np.testing.assert_allclose(run_dynamic().numpy(), run_compiled(), rtol=1e-6)
    compiled = median_seconds(run_compiled, args.repeats)
    dynamic = median_seconds(run_dynamic, args.repeats)
    peer = median_seconds(chain_torch(data), args.repeats)
    sess.close()
    print(f"{CHAIN_OPS}-op elementwise chain ({VECTOR} floats), one torch thread")
    print(f"  compiled executor    {compiled * 1e3:8.3f} ms   "
          f"{compiled / CHAIN_OPS * 1e6:6.2f} us/op   (Session.run)")
    print(f"  dynamic executor     {dynamic * 1e3:8.3f} ms   "
          f"{dynamic / CHAIN_OPS * 1e6:6.2f} us/op   (the partition's run alone)")
    print(f"  torch eager          {peer * 1e3:8.3f} ms   {peer / CHAIN_OPS * 1e6:6.2f} us/op")
    print(f"  ratio dynamic/eager  {dynamic / peer:8.2f}x")

    run_loop, sess = loop_engine(data)
    np.testing.assert_allclose(run_loop(), loop_torch(data)(), rtol=1e-4)
    ours = median_seconds(run_loop, args.repeats)
    peer = median_seconds(loop_torch(data), args.repeats)
    sess.close()
    print(f"tf.while_loop, {ITERATIONS} iterations of v * 0.999 + 0.001 ({VECTOR} floats)")
    print(f"  engine Session.run   {ours * 1e3:8.3f} ms   {ours / ITERATIONS * 1e6:6.2f} us/iter")
    print(f"  torch eager loop     {peer * 1e3:8.3f} ms   {peer / ITERATIONS * 1e6:6.2f} us/iter")
    print(f"  ratio engine/eager   {ours / peer:8.2f}x")

    rows = np.random.RandomState(1).randn(256, 64).astype(np.float32)
    run_map, sess = map_engine(rows)
    np.testing.assert_allclose(run_map(), map_torch(rows)(), rtol=1e-4)
    ours = median_seconds(run_map, args.repeats)
    peer = median_seconds(map_torch(rows), args.repeats)
    sess.close()
    print("tf.map_fn(sum(r * r)) over 256 rows of 64 floats")
    print(f"  engine Session.run   {ours * 1e3:8.3f} ms")
    print(f"  torch eager loop     {peer * 1e3:8.3f} ms")
    print(f"  ratio engine/eager   {ours / peer:8.2f}x")


if __name__ == "__main__":
    main()
