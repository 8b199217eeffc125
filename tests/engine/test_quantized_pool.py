"""QuantizedMaxPool through engine/kernels/quantized_pool.py (torch's max_pool2d on the CPU,
windows + amax elsewhere) against the NumPy reference: windows, strides, SAME's uneven pads,
the range passed through, and an empty batch."""

from __future__ import annotations

import numpy as np
import pytest
import quantized_reference as ref
from kernel_harness import covers

import engine as tf

# (batch, h, w, channels, window, stride, padding)
CASES = [(2, 8, 8, 16, 2, 2, "VALID"), (3, 7, 5, 3, 3, 2, "SAME"), (1, 6, 6, 4, 2, 1, "SAME"),
         (2, 5, 9, 2, 3, 3, "VALID"), (1, 1, 1, 1, 1, 1, "SAME"), (0, 4, 4, 2, 2, 2, "SAME")]


@covers("QuantizedMaxPool")
@pytest.mark.parametrize("case", CASES)
def test_max_pool_matches_the_reference(runner, case):
    n, h, w, c, k, s, padding = case
    x = np.random.default_rng(sum(case[:6])).integers(0, 256, (n, h, w, c)).astype(np.uint8)
    with runner.scope():
        outs = tf.raw_ops.QuantizedMaxPool(
            input=tf.constant(x, dtype=tf.quint8), min_input=-1.0, max_input=3.0,
            ksize=[1, k, k, 1], strides=[1, s, s, 1], padding=padding)
    got = runner.run(list(outs))
    np.testing.assert_array_equal(got[0], ref.max_pool(x, (k, k), (s, s), padding))
    assert (float(got[1]), float(got[2])) == (-1.0, 3.0)
