"""QuantizedMatMul (quint8 x quint8 -> qint32 with TF's zero-point offsets) beside float32
MatMul at 256x1024x1024 on one torch thread: the kernel with each exact int8 backend
(torch._int_mm; the float32 GEMM in exact 1024-long blocks), and both ops run through a
Session with the backend "auto" picks. Prints times and the float/int8 ratio (above 1: int8
is faster).

Usage: python bench/bench_quantized.py [--m 256] [--k 1024] [--n 1024] [--repeat 10]"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import engine as tf
from engine.kernels import quantized as qk


def best_time(function, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def kernel_times(a8: np.ndarray, b8: np.ndarray, af: np.ndarray, bf: np.ndarray,
                 repeat: int, backend: str) -> tuple[float, float]:
    ta, tb = torch.from_numpy(a8), torch.from_numpy(b8)
    fa, fb = torch.from_numpy(af), torch.from_numpy(bf)
    qk.CPU_INT8_BACKEND = backend
    try:
        int8 = best_time(lambda: qk.offset_matmul(ta, tb, 85, 128), repeat)
    finally:
        qk.CPU_INT8_BACKEND = "auto"
    float32 = best_time(lambda: torch.mm(fa, fb), repeat)
    return int8, float32


def session_times(a8: np.ndarray, b8: np.ndarray, af: np.ndarray, bf: np.ndarray,
                  repeat: int) -> tuple[float, float]:
    with tf.Graph().as_default() as g:
        qa = tf.constant(a8, dtype=tf.quint8)
        qb = tf.constant(b8, dtype=tf.quint8)
        product = tf.raw_ops.QuantizedMatMul(a=qa, b=qb, min_a=-1.0, max_a=2.0, min_b=-0.5,
                                             max_b=0.5, Toutput=tf.qint32).out
        dense = tf.matmul(tf.constant(af), tf.constant(bf))
        with tf.Session(graph=g) as sess:
            sess.run([product, dense])
            int8 = best_time(lambda: sess.run(product), repeat)
            float32 = best_time(lambda: sess.run(dense), repeat)
    return int8, float32


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--k", type=int, default=1024)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--int-mm-repeat", type=int, default=2,
                        help="repeats for torch._int_mm, seconds per call on CPUs without VNNI")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    a8 = rng.integers(0, 256, size=(args.m, args.k)).astype(np.uint8)
    b8 = rng.integers(0, 256, size=(args.k, args.n)).astype(np.uint8)
    af, bf = a8.astype(np.float32), b8.astype(np.float32)
    print(f"{args.m}x{args.k}x{args.n}, torch threads: {torch.get_num_threads()}, best of "
          f"{args.repeat}")
    print(f"{'':<28}{'int8 (ms)':>12}{'float32 (ms)':>14}{'float/int8':>12}")
    rows = [(f"kernel, {backend}", kernel_times(a8, b8, af, bf, args.int_mm_repeat
                                                if backend == "int_mm" else args.repeat,
                                                backend))
            for backend in ("int_mm", "exact_float")]
    rows.append((f"session ({qk.cpu_int8_backend()})",
                 session_times(a8, b8, af, bf, args.repeat)))
    for label, (int8, float32) in rows:
        print(f"{label:<28}{int8 * 1e3:>12.2f}{float32 * 1e3:>14.2f}{float32 / int8:>12.2f}x")


if __name__ == "__main__":
    main()
