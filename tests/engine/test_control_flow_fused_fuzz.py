"""Differential check of the dynamic executor's fused twin (clusters and compiled loops) against
the node-by-node run (a traced step) on generated programs: loops up to three deep whose bodies
read values of every enclosing body (loop variables, and values an inner loop only reads),
inner trip counts that depend on outer counters, conds on the counters inside bodies, and
gradients through all of it. A cluster that waits on itself ends the step without a value (or
a different one); both bugs found so far in the cycle check were of that kind. Seeded, so a
failure names its program and reruns the same."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf

PROGRAMS = 40


class _Program:
    """Builds one random program from a seed; `describe` says what it built."""

    def __init__(self, seed: int):
        self.rng = np.random.RandomState(seed)
        self.parts: list[str] = []

    def pick(self, options):
        return options[self.rng.randint(len(options))]

    def mix(self, value, pool):
        """One or two random elementwise steps reading `value` and values from `pool`."""
        for _ in range(1 + self.rng.randint(2)):
            other = self.pick(pool)
            kind = self.pick(["sin", "tanh_mul", "add_scaled", "mul_small"])
            self.parts.append(kind)
            if kind == "sin":
                value = tf.sin(value) + 0.5 * other
            elif kind == "tanh_mul":
                value = tf.tanh(value * other)
            elif kind == "add_scaled":
                value = value * 0.8 + 0.3 * other
            else:
                value = value * (0.5 + 0.1 * tf.cos(other))
        return value

    def body(self, depth: int, value, pool, counters):
        value = self.mix(value, pool)
        if self.rng.rand() < 0.4:
            counter = self.pick(counters)
            self.parts.append("cond")
            parity = tf.equal(counter % 2, 0)
            value = tf.cond(parity, lambda: self.mix(value, pool) * 1.0,
                            lambda: value * 0.9 - 0.1)
        if depth < 3 and self.rng.rand() < 0.7:
            inner_pool = pool + [value]
            if self.rng.rand() < 0.5:
                # A value of this body that the inner loop only reads (not a loop variable).
                self.parts.append("side")
                inner_pool.append(tf.sin(value) * 0.7)
            value = self.loop(depth + 1, value, inner_pool, counters)
            value = self.mix(value, inner_pool)
        return value

    def loop(self, depth: int, start, pool, counters):
        if counters and self.rng.rand() < 0.5:
            outer = self.pick(counters)
            limit = lambda i: i < outer + 1          # noqa: E731  (the trip count follows it)
            self.parts.append(f"loop{depth}(outer+1)")
        else:
            trips = 1 + self.rng.randint(3)
            limit = lambda i: i < trips              # noqa: E731
            self.parts.append(f"loop{depth}({trips})")

        def loop_body(i, v):
            return i + 1, self.body(depth, v, pool, counters + [i])
        return tf.while_loop(lambda i, v: limit(i), loop_body, [0, start])[1]

    def build(self):
        x = tf.placeholder(tf.float32, [3], name="x")
        w = tf.constant(self.rng.uniform(-1, 1, 3).astype(np.float32), name="w")
        y = self.loop(1, x * 1.0, [x, w], [])
        loss = tf.reduce_sum(y * y)
        return x, [y] + tf.gradients(loss, [x])

    def describe(self) -> str:
        return " ".join(self.parts)


@pytest.mark.parametrize("seed", range(PROGRAMS))
def test_the_fused_twin_gives_the_node_by_node_results(seed):
    program = _Program(seed)
    feed = np.random.RandomState(1000 + seed).uniform(-1, 1, 3).astype(np.float32)
    with tf.Graph().as_default():
        x, fetches = program.build()
        with tf.Session() as sess:
            traced = sess.run(fetches, {x: feed}, options=tf.RunOptions(trace_level=3),
                              run_metadata=tf.RunMetadata())
            fused = sess.run(fetches, {x: feed})
            again = sess.run(fetches, {x: feed})
    for a, b, c in zip(traced, fused, again):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=program.describe())
        np.testing.assert_array_equal(b, c, err_msg=program.describe())
