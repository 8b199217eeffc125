"""Session.run from many threads: updates kept of those made (tf.assign_add with
use_locking=True, beside TF's default use_locking=False, which may lose updates as TF
documents), and repeated stress runs of many threads on a 3-device graph (every hop a
Send/Recv) with a hard time limit per run: how many finished, how many deadlocked. The
peer for the stress runs is the same graph on a bounded 64-thread partition pool (the
session's pool before issue 6).

Usage: python bench/bench_concurrency.py [--runs N] [--threads T]"""

from __future__ import annotations

import argparse
import concurrent.futures
import threading
import time

import numpy as np
import torch

import engine as tf
import engine.runtime.session as session_module

TIME_LIMIT_S = 30.0


def updates_kept(use_locking: bool, threads: int = 4, per_thread: int = 500,
                 size: int = 200_000) -> tuple[int, int]:
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.zeros(size, np.float32))
        inc = tf.assign_add(v, tf.ones([size]), use_locking=use_locking)
        with tf.Session(graph=g) as sess:
            sess.run(v.initializer)
            workers = [threading.Thread(target=lambda: [sess.run(inc.op)
                                                        for _ in range(per_thread)])
                       for _ in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            return int(sess.run(v)[0]), threads * per_thread


def relay_graph(hops: int = 7):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        y = x
        for hop in range(hops):
            with tf.device(("/gpu:0", "/gpu:1", "/cpu:0")[hop % 3]):
                y = tf.negative(y + 1.0)
    return g, x, y


def wide_graph(gpus: int = 80):
    """One step of gpus + 1 partitions, each waiting for the next GPU's Send."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        y = x
        for k in reversed(range(gpus)):
            with tf.device(f"/gpu:{k}"):
                y = y + 1.0
        with tf.device("/cpu:0"):
            y = tf.identity(y)
    return g, x, y, gpus


def stress_run(threads: int, steps: int, wide: bool) -> tuple[bool, float]:
    """(finished within TIME_LIMIT_S, seconds). A deadlocked run's threads are left behind
    as daemons; the caller stops after reporting."""
    g, x, y, gpus = wide_graph() if wide else (*relay_graph(), 2)
    sess = tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=gpus))
    start = time.perf_counter()

    def work(index: int) -> None:
        for step in range(steps):
            sess.run(y, {x: np.full(4, index + step, np.float32)})
    workers = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(max(TIME_LIMIT_S - (time.perf_counter() - start), 0.0))
    finished = not any(w.is_alive() for w in workers)
    if finished:
        sess.close()
    return finished, time.perf_counter() - start


def stress(label: str, runs: int, threads: int, steps: int, wide: bool = False) -> None:
    results = [stress_run(threads, steps, wide) for _ in range(runs)]
    done = [seconds for ok, seconds in results if ok]
    print(f"  {label}: {len(done)}/{runs} runs of {threads} threads x {steps} steps finished, "
          f"{runs - len(done)} deadlocked (time limit {TIME_LIMIT_S:.0f} s)"
          + (f"; median {np.median(done):.2f} s per run" if done else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=96)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("assign_add from 4 threads x 500 runs, 200k floats")
    for locking in (True, False):
        kept, made = updates_kept(locking)
        print(f"  use_locking={locking}: {kept}/{made} updates kept")
    pools = (("ours (a thread per partition at once)", session_module.PartitionThreads),
             ("peer (bounded 64-thread pool)",
              lambda: concurrent.futures.ThreadPoolExecutor(64)))
    for title, wide, threads in (("3-device relay graph (7 Send/Recv hops per step)", False,
                                  args.threads),
                                 ("81-device chain (each partition waits on the next)", True,
                                  4)):
        print(title)
        for label, pool in pools:
            session_module.PartitionThreads = pool
            stress(label, args.runs, threads, args.steps, wide)


if __name__ == "__main__":
    main()
