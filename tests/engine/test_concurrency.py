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


def _relay_graph(hops: int):
    """x -> negate on GPU:0 -> GPU:1 -> CPU -> GPU:0 ... : every hop is a Send/Recv pair, so
    each step's three partitions wait on each other several times."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        y = x
        for hop in range(hops):
            with tf.device(("/gpu:0", "/gpu:1", "/cpu:0")[hop % 3]):
                y = tf.negative(y + 1.0, name=f"hop{hop}")
    return g, x, y


def _relay_expected(value: np.ndarray, hops: int) -> np.ndarray:
    for _ in range(hops):
        value = -(value + 1.0)
    return value


def _many_threads(fn, threads: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            fn(index)
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            errors.append(e)
    workers = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(WATCHDOG_S)
    assert not any(t.is_alive() for t in workers), "concurrent multi-device steps deadlocked"
    return errors


def test_many_threads_on_a_three_device_graph_finish_with_their_own_results():
    """96 threads of 3-partition steps: 192 partitions wait in Recv at once, more than any
    bounded pool the session used to have (64), which then deadlocked."""
    hops = 7
    g, x, y = _relay_graph(hops)
    with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=2)) as sess:
        def steps(index: int) -> None:
            for step in range(5):
                value = np.full(4, index * 100 + step, np.float32)
                np.testing.assert_array_equal(sess.run(y, {x: value}),
                                              _relay_expected(value, hops))
        assert _many_threads(steps, 96) == []
        devices = {sess.placement.device_of(f"hop{hop}") for hop in range(hops)}
        assert len(devices) == 3


def test_a_step_with_more_partitions_than_any_bounded_pool_finishes():
    """81 partitions in one step, each waiting for the next GPU's Send: the old 64-thread
    pool ran the first 64 submitted and left the ones they waited on queued, for good."""
    gpus = 80
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        y = x
        for k in reversed(range(gpus)):
            with tf.device(f"/gpu:{k}"):
                y = y + 1.0
        with tf.device("/cpu:0"):
            y = tf.identity(y)
    with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=gpus)) as sess:
        def steps(index: int) -> None:
            for _ in range(3):
                np.testing.assert_array_equal(sess.run(y, {x: np.full(4, index, np.float32)}),
                                              np.full(4, index + gpus, np.float32))
        assert _many_threads(steps, 4) == []


def test_gated_concurrent_steps_with_deadlines_and_failures_release_everything():
    """inter_op_parallelism_threads=2 over 24 threads; a third of the steps have a deadline
    they cannot meet, a third fail in a kernel on GPU:1: those raise their own errors, the
    rest get their results, and afterwards every gate slot is free and new steps run."""
    hops = 6
    g, x, y = _relay_graph(hops)
    with g.as_default():
        with tf.device("/gpu:1"):
            checked = tf.check_numerics(tf.log(y * y), "bad input")
    config = tf.ConfigProto(virtual_gpus=2, inter_op_parallelism_threads=2)
    with tf.Session(graph=g, config=config) as sess:
        outcomes = {"ok": 0, "deadline": 0, "failed": 0}
        lock = threading.Lock()

        def steps(index: int) -> None:
            for step in range(6):
                kind = (index + step) % 3
                value = np.full(4, index + step, np.float32)
                if kind == 0:
                    np.testing.assert_array_equal(sess.run(y, {x: value}),
                                                  _relay_expected(value, hops))
                    outcome = "ok"
                elif kind == 1:
                    try:
                        sess.run(y, {x: value}, options=tf.RunOptions(timeout_in_ms=1))
                        outcome = "ok"      # a fast machine may finish within 1 ms
                    except tf.errors.DeadlineExceededError:
                        outcome = "deadline"
                else:
                    try:     # six hops bring 0 back to 0, and log(0 * 0) is -inf
                        sess.run(checked, {x: np.zeros(4, np.float32)})
                        raise AssertionError("check_numerics let -inf through")
                    except tf.errors.InvalidArgumentError as e:
                        assert "bad input" in str(e)
                        outcome = "failed"
                with lock:
                    outcomes[outcome] += 1
        assert _many_threads(steps, 24) == []
        assert sum(outcomes.values()) == 24 * 6
        assert outcomes["failed"] == 48 and outcomes["ok"] >= 48
        assert sess._gate.free_slots() == 2
        value = np.arange(4, dtype=np.float32)
        np.testing.assert_array_equal(sess.run(y, {x: value}), _relay_expected(value, hops))
