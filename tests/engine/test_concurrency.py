"""Session.run from many threads: use_locking updates are never lost, on one device and on a
graph spread over the CPU and two virtual GPUs, and concurrent multi-device steps finish (a
watchdog fails the test instead of letting a deadlock hang the suite)."""

from __future__ import annotations

import threading

import numpy as np

import engine as tf

THREADS = 4
WATCHDOG_S = 120.0


def _hammer(fn, per_thread: int) -> None:
    """Runs fn per_thread times on each of THREADS threads; fails if any hangs or raises."""
    errors: list[BaseException] = []

    def work():
        try:
            for _ in range(per_thread):
                fn()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, daemon=True) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WATCHDOG_S)
    assert not any(t.is_alive() for t in threads), "concurrent Session.run calls deadlocked"
    assert errors == []


def test_locked_assign_add_on_a_large_variable_loses_no_update():
    """200k floats: torch releases the GIL inside add_, so only the lock keeps updates."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.zeros(200_000, np.float32))
        inc = tf.assign_add(v, tf.ones([200_000]), use_locking=True)
        with tf.Session(graph=g) as sess:
            sess.run(v.initializer)
            _hammer(lambda: sess.run(inc.op), 150)
            np.testing.assert_array_equal(sess.run(v), np.full(200_000, THREADS * 150.0))


def test_locked_optimizer_steps_across_devices_lose_no_update():
    """loss = sum(w): every step subtracts exactly lr from each weight, so the final weights
    count the steps. The weights live on GPU:1, the loss on the CPU, a scale on GPU:0."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/gpu:1"):
            w = tf.Variable(np.zeros(50_000, np.float32), name="w")
        with tf.device("/gpu:0"):
            scaled = w * 1.0
        with tf.device("/cpu:0"):
            loss = tf.reduce_sum(scaled)
        train = tf.train.GradientDescentOptimizer(1.0, use_locking=True).minimize(loss)
        config = tf.ConfigProto(virtual_gpus=2)
        with tf.Session(graph=g, config=config) as sess:
            sess.run(w.initializer)
            _hammer(lambda: sess.run(train), 60)
            np.testing.assert_array_equal(sess.run(w), np.full(50_000, -THREADS * 60.0))
            update = "GradientDescent/update_w/ApplyGradientDescent"
            assert sess.placement.device_of(update).endswith("GPU:1")
