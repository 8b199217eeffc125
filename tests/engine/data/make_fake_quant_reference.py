"""Writes fake_quant_tf_reference.npz: the FakeQuant ops' outputs and gradients as TensorFlow
2.21 computes them, for ranges that need nudging, narrow ranges and 2 to 16 bits, and for the
edge cases (min > max and min == max in the Vars forms). test_fake_quant_tf.py compares.

    /work/tfref/bin/python tests/engine/data/make_fake_quant_reference.py
"""

from __future__ import annotations

import pathlib

import numpy as np

# (min, max, num_bits, narrow_range): each needs a nudge except the symmetric 8-bit one.
CONFIGS = [(-6.0, 6.0, 8, False), (-1.0, 1.0, 8, False), (0.1, 1.0, 8, False),
           (-0.3, 2.7, 4, True), (-2.2, 3.3, 2, True), (-0.37, 5.1, 7, False),
           (-1.7, 0.9, 16, False), (-1.0, -0.1, 8, True)]
# Vars-only ranges that TF accepts without a check (the Args form refuses them).
ODD_RANGES = [(1.0, -1.0), (0.5, 0.5)]


def inputs(lo: float, hi: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    grid = np.linspace(lo - 0.5, hi + 0.5, 300)
    return np.concatenate([grid, rng.uniform(lo - 1, hi + 1, 500)]).astype(np.float32)


def main() -> None:
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    q = tf.quantization
    out: dict[str, np.ndarray] = {"configs": np.asarray(CONFIGS, np.float64),
                                  "odd_ranges": np.asarray(ODD_RANGES, np.float32)}
    with tf.Session() as s:
        for i, (lo, hi, bits, narrow) in enumerate(CONFIGS):
            x = inputs(lo, hi, i)
            g = np.random.default_rng(100 + i).uniform(-2, 2, x.shape).astype(np.float32)
            kw = {"num_bits": bits, "narrow_range": narrow}
            pairs = x.reshape(-1, 2)
            los, his = [lo, lo / 2], [hi, hi * 2]
            out[f"x{i}"], out[f"g{i}"] = x, g
            out[f"args{i}"] = s.run(q.fake_quant_with_min_max_args(x, lo, hi, **kw))
            out[f"args_grad{i}"] = s.run(q.fake_quant_with_min_max_args_gradient(
                g, x, lo, hi, **kw))
            out[f"vars{i}"] = s.run(q.fake_quant_with_min_max_vars(x, lo, hi, **kw))
            out[f"vars_grad{i}"] = np.concatenate([np.ravel(t) for t in s.run(
                q.fake_quant_with_min_max_vars_gradient(g, x, lo, hi, **kw))])
            out[f"pc{i}"] = s.run(q.fake_quant_with_min_max_vars_per_channel(
                pairs, los, his, **kw))
            out[f"pc_grad{i}"] = np.concatenate([np.ravel(t) for t in s.run(
                q.fake_quant_with_min_max_vars_per_channel_gradient(
                    g.reshape(-1, 2), pairs, los, his, **kw))])
        x = inputs(-2.0, 2.0, 99)
        for j, (lo, hi) in enumerate(ODD_RANGES):
            out[f"odd_vars{j}"] = s.run(q.fake_quant_with_min_max_vars(x, lo, hi))
            out[f"odd_vars_grad{j}"] = np.concatenate([np.ravel(t) for t in s.run(
                q.fake_quant_with_min_max_vars_gradient(x, x, lo, hi))])
        out["odd_x"] = x
    np.savez(pathlib.Path(__file__).with_name("fake_quant_tf_reference.npz"), **out)


if __name__ == "__main__":
    main()
