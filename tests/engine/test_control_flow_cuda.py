"""Control flow on a real CUDA GPU: a while loop, a cond and a map_fn pinned to the GPU give
the CPU's numbers, and their values live on the GPU (the predicates are read back to the host
by the Switch kernel). Marked `cuda`: skipped where torch sees no GPU (tests/conftest.py)."""

import numpy as np
import pytest

import engine as tf

pytestmark = pytest.mark.cuda

CPU_ONLY = {"GPU": 0}


def _program():
    x = tf.placeholder(tf.float32, [4], name="x")
    with tf.device("/gpu:0"):
        _, looped = tf.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v * 1.5 + 1.0),
                                  [0, x])
        chosen = tf.cond(tf.reduce_sum(x) > 0.0, lambda: tf.exp(x), lambda: -x)
        mapped = tf.map_fn(lambda r: r * r, tf.reshape(x, [2, 2]))
    return x, [looped, chosen, mapped]


def _run(config, value):
    with tf.Graph().as_default():
        x, outs = _program()
        with tf.Session(config=config) as sess:
            got = sess.run(outs, {x: value})
            placed = {sess.placement.device_of(t.op.name) for t in outs}
    return got, placed


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_loops_and_conds_on_the_gpu_match_the_cpu(sign):
    value = sign * np.array([0.5, 1.0, 1.5, 2.0], np.float32)
    on_gpu, placed = _run(tf.ConfigProto(allow_soft_placement=True), value)
    on_cpu, _ = _run(tf.ConfigProto(allow_soft_placement=True, device_count=CPU_ONLY), value)
    assert all(d.endswith("GPU:0") for d in placed)
    for got, want in zip(on_gpu, on_cpu):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_a_loop_whose_body_runs_on_the_gpu_moves_each_iteration_across(monkeypatch):
    """The loop on the CPU, its body on the GPU: each iteration's value is received onto the
    GPU (what the GPU sends back was computed there, so it is a CUDA tensor) and the CPU's
    partition gets host tensors; the numbers are the CPU-only run's."""
    from engine.runtime.rendezvous import Rendezvous, parse_key

    sent = []
    original = Rendezvous.send

    def send(self, key, value, dead=False):
        sent.append((parse_key(key).src_device, getattr(value, "device", None)))
        return original(self, key, value, dead)

    def program():
        x = tf.placeholder(tf.float32, [4], name="x")

        def body(i, v):
            with tf.device("/gpu:0"):
                w = v * 1.5 + 1.0
            return i + 1, w
        with tf.device("/cpu:0"):
            _, out = tf.while_loop(lambda i, v: i < 5, body, [0, x])
        return x, out

    value = np.array([0.5, 1.0, 1.5, 2.0], np.float32)
    results = []
    for config in (tf.ConfigProto(allow_soft_placement=True),
                   tf.ConfigProto(allow_soft_placement=True, device_count=CPU_ONLY)):
        with tf.Graph().as_default():
            x, out = program()
            with tf.Session(config=config) as sess:
                monkeypatch.setattr(Rendezvous, "send", send)
                results.append(sess.run(out, {x: value}))
                monkeypatch.setattr(Rendezvous, "send", original)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
    from_gpu = {str(d) for src, d in sent if src.endswith("GPU:0") and d is not None}
    from_cpu = {str(d) for src, d in sent if src.endswith("CPU:0") and d is not None}
    assert from_gpu == {"cuda:0"} and from_cpu == {"cpu"}
