"""Writes quantized_conv_tf_reference.npz: TF 2.21's fused quantized Conv2D ops (graph mode,
where its oneDNN kernels run them) on random quint8 inputs, qint8 filters and float biases,
for several geometries. test_quantized_conv_tf.py runs ours on the same inputs and compares.

    /work/tfref/bin/python tests/engine/data/make_quantized_conv_reference.py

Accumulators stay below 2^24: above it TF's oneDNN kernel sums in float32 and is off by a
few units from the exact sum (measured: up to 3 at 1.9e7), where ours stays exact.
"""

from __future__ import annotations

import pathlib

import numpy as np

# (batch, h, w, depth, kh, kw, filters, stride, padding, dilation)
GEOMETRIES = [(2, 6, 6, 3, 3, 3, 4, 1, "SAME", 1), (1, 7, 5, 8, 3, 2, 5, 2, "SAME", 1),
              (3, 9, 9, 4, 3, 3, 6, 1, "VALID", 2), (1, 8, 8, 16, 1, 1, 16, 1, "VALID", 1),
              (2, 10, 7, 6, 5, 5, 3, 3, "SAME", 1)]
# (min_input, max_input, min_filter, max_filter, min_freezed, max_freezed)
RANGES = [(0.0, 2.5, -0.8, 0.8, -10.0, 10.0), (0.0, 6.0, -0.31, 0.5, 0.0, 8.0),
          (-1.0, 3.0, -2.0, 1.5, -20.0, 12.0)]
INT32_OPS = ("QuantizedConv2DWithBias", "QuantizedConv2DWithBiasAndRelu",
             "QuantizedConv2DAndRelu")
REQUANTIZE_OPS = ("QuantizedConv2DWithBiasAndRequantize",
                  "QuantizedConv2DWithBiasAndReluAndRequantize",
                  "QuantizedConv2DAndRequantize", "QuantizedConv2DAndReluAndRequantize")
BIASED = ("QuantizedConv2DWithBias", "QuantizedConv2DWithBiasAndRelu",
          "QuantizedConv2DWithBiasAndRequantize", "QuantizedConv2DWithBiasAndReluAndRequantize")


def case(i: int):
    n, h, w, c, kh, kw, k, _, _, _ = GEOMETRIES[i % len(GEOMETRIES)]
    rng = np.random.default_rng(i)
    bits = 8 if i % 2 else 7
    x = rng.integers(0, 256, size=(n, h, w, c)).astype(np.uint8)
    f = rng.integers(-(1 << (bits - 1)) + 1, 1 << (bits - 1), size=(kh, kw, c, k)).astype(np.int8)
    bias = rng.normal(0.0, 2.0, size=k).astype(np.float32)
    return x, f, bias


def cases():
    """(index, geometry, ranges): TF registers the requantizing kernels for one output type
    each, qint8 without Relu and quint8 with it."""
    for i in range(len(GEOMETRIES) * len(RANGES)):
        yield i, GEOMETRIES[i % len(GEOMETRIES)], RANGES[i % len(RANGES)]


def main() -> None:
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    out: dict[str, np.ndarray] = {}
    with tf.Session() as s:
        for i, geo, ranges in cases():
            x, f, bias = case(i)
            stride, padding, dilation = geo[7:]
            common = dict(input=tf.constant(x, tf.quint8), filter=tf.constant(f, tf.qint8),
                          min_input=ranges[0], max_input=ranges[1], min_filter=ranges[2],
                          max_filter=ranges[3], strides=[1, stride, stride, 1],
                          padding=padding, dilations=[1, dilation, dilation, 1])
            for op in INT32_OPS + REQUANTIZE_OPS:
                kw = dict(common)
                if op in BIASED:
                    kw["bias"] = bias
                if op in REQUANTIZE_OPS:
                    kw.update(min_freezed_output=ranges[4], max_freezed_output=ranges[5])
                    kw["out_type"] = tf.quint8 if "Relu" in op else tf.qint8
                got = s.run(getattr(tf.raw_ops, op)(**kw))
                out[f"{op}/{i}"] = got[0]
                out[f"{op}/{i}/range"] = np.asarray(got[1:], np.float32)
    path = pathlib.Path(__file__).with_name("quantized_conv_tf_reference.npz")
    np.savez_compressed(path, **out)
    print(f"wrote {path} ({path.stat().st_size} bytes, {len(out)} arrays)")


if __name__ == "__main__":
    main()
