"""Writes quantized_matmul_tf_reference.npz: TF 2.21's fused quantized MatMul ops (graph mode,
where its oneDNN kernels run them) on random quint8 a, qint8 b and float32 or qint32 biases,
in both input_quant_modes and with transposes. test_quantized_matmul_tf.py compares ours.

    /work/tfref/bin/python tests/engine/data/make_quantized_matmul_reference.py
"""

from __future__ import annotations

import pathlib

import numpy as np

SHAPES = [(1, 16, 10), (3, 7, 5), (17, 64, 33), (40, 257, 31), (64, 300, 64)]
OPS = ("QuantizedMatMulWithBias", "QuantizedMatMulWithBiasAndRelu",
       "QuantizedMatMulWithBiasAndRequantize", "QuantizedMatMulWithBiasAndReluAndRequantize")
REQUANTIZE_OPS = OPS[2:]


def case(i: int):
    """(a, b, bias, ranges, mode, transpose, Toutput name) for case i."""
    m, k, n = SHAPES[i % len(SHAPES)]
    rng = np.random.default_rng(100 + i)
    bits = 8 if i % 2 else 7
    a = rng.integers(0, 256, size=(m, k)).astype(np.uint8)
    b = rng.integers(-(1 << (bits - 1)) + 1, 1 << (bits - 1), size=(k, n)).astype(np.int8)
    qint32_bias = i % 4 == 3
    bias = (rng.integers(-50000, 50000, size=n).astype(np.int32) if qint32_bias
            else rng.normal(0.0, 2.0, size=n).astype(np.float32))
    mode = "SCALED" if i % 3 == 2 else "MIN_FIRST"
    lo_a = 0.0 if mode == "SCALED" or i % 2 else float(rng.uniform(-2, 0))
    ranges = (lo_a, 1.5 + i % 3, -float(rng.uniform(0.1, 1)), float(rng.uniform(0.1, 1)))
    transpose = (False, False)      # TF's oneDNN kernel refuses transposes here (primitive error)
    return a, b, bias, ranges, mode, transpose


def freezed_range(i: int, relu: bool):
    top = 2.0 + 3.0 * (i % 4)
    return (0.0, top) if relu or i % 2 else (-top, top)


CASES = range(20)


def run_one(tf, op, i, a, b, bias, ranges, mode, ta, tb):
    """One op in a graph and session of its own: a failed oneDNN primitive aborts the
    session's rendezvous, and every later run in it fails too."""
    with tf.Graph().as_default(), tf.Session() as s:
        kw = dict(a=tf.constant(a.T if ta else a, tf.quint8),
                  b=tf.constant(b.T if tb else b, tf.qint8),
                  bias=tf.constant(bias, tf.qint32 if bias.dtype == np.int32 else tf.float32),
                  min_a=ranges[0], max_a=ranges[1], min_b=ranges[2], max_b=ranges[3],
                  transpose_a=ta, transpose_b=tb, input_quant_mode=mode)
        if op in REQUANTIZE_OPS:
            lo, hi = freezed_range(i, "Relu" in op)
            kw.update(min_freezed_output=lo, max_freezed_output=hi,
                      Toutput=tf.quint8)      # the only Toutput TF registers for both
        try:
            return s.run(getattr(tf.raw_ops, op)(**kw))
        except tf.errors.OpError as e:
            lines = [line for line in str(e).splitlines() if line.strip()]
            print(f"{op} case {i}: {type(e).__name__}: {lines[-2][:300]}")
            return None


def main() -> None:
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    out: dict[str, np.ndarray] = {}
    for i in CASES:
        a, b, bias, ranges, mode, (ta, tb) = case(i)
        for op in OPS:
            if bias.dtype == np.int32 and op == "QuantizedMatMulWithBiasAndRelu":
                continue                       # TF takes only a float bias there
            got = run_one(tf, op, i, a, b, bias, ranges, mode, ta, tb)
            if got is not None:
                out[f"{op}/{i}"] = got[0]
                out[f"{op}/{i}/range"] = np.asarray(got[1:], np.float32)
    path = pathlib.Path(__file__).with_name("quantized_matmul_tf_reference.npz")
    np.savez_compressed(path, **out)
    print(f"wrote {path} ({path.stat().st_size} bytes, {len(out)} arrays)")


if __name__ == "__main__":
    main()
