"""PartitionThreads: every submitted partition starts at once (a bounded pool, where queued
partitions wait for threads their blocked siblings hold, deadlocks), results and errors come
back through futures, idle threads retire, and shutdown stops them all."""

from __future__ import annotations

import concurrent.futures
import threading
import time

import pytest

from engine.runtime.partition_threads import PartitionThreads

WAIT_S = 60.0


def wait_until(condition, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def _all_at_once(executor, tasks: int) -> list:
    """Each task waits at a barrier that opens only when all `tasks` run at the same time."""
    barrier = threading.Barrier(tasks, timeout=WAIT_S)
    futures = [executor.submit(barrier.wait) for _ in range(tasks)]
    return [f.result(timeout=2 * WAIT_S) for f in futures]


def test_every_submitted_task_runs_at_once_however_many():
    threads = PartitionThreads()
    try:
        assert sorted(_all_at_once(threads, 200)) == list(range(200))
        assert threads.thread_count() == 200
        wait_until(lambda: threads.idle_count() == 200)
        # A second wave reuses the idle threads instead of making new ones.
        assert sorted(_all_at_once(threads, 150)) == list(range(150))
        assert threads.thread_count() == 200
    finally:
        threads.shutdown()
    assert threads.thread_count() == 0


def test_a_bounded_pool_fails_the_same_check():
    """The check above can fail: ThreadPoolExecutor(64) cannot run 65 waiting tasks."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=64)
    barrier = threading.Barrier(65, timeout=0.5)
    futures = [pool.submit(barrier.wait) for _ in range(65)]
    with pytest.raises(threading.BrokenBarrierError):
        for f in futures:
            f.result(timeout=WAIT_S)
    pool.shutdown()


def test_results_and_errors_come_back_through_the_future():
    threads = PartitionThreads()
    try:
        assert threads.submit(lambda a, b: a + b, 2, 3).result(timeout=WAIT_S) == 5
        failing = threads.submit(lambda: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            failing.result(timeout=WAIT_S)
        assert threads.submit(lambda: "still works").result(timeout=WAIT_S) == "still works"
    finally:
        threads.shutdown()


def test_idle_threads_retire():
    threads = PartitionThreads(idle_secs=0.05)
    try:
        _all_at_once(threads, 20)
        wait_until(lambda: threads.thread_count() == 0)
        assert threads.submit(lambda: 7).result(timeout=WAIT_S) == 7
    finally:
        threads.shutdown()


def test_shutdown_waits_for_busy_threads_and_refuses_new_work():
    threads = PartitionThreads()
    release = threading.Event()
    started = threading.Event()

    def busy():
        started.set()
        release.wait(WAIT_S)
        return "done"
    future = threads.submit(busy)
    started.wait(WAIT_S)
    stopper = threading.Thread(target=threads.shutdown)
    stopper.start()
    with pytest.raises(RuntimeError, match="shut down"):
        wait_until(lambda: threads._closed)
        threads.submit(lambda: None)
    release.set()
    stopper.join(WAIT_S)
    assert not stopper.is_alive() and future.result() == "done"
    assert threads.thread_count() == 0
