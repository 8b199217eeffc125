"""The query cache: one fill per key however many threads ask together (an error reaches
every waiter and is not cached), bounds in entries and bytes, and keys built only from a
graph's real scopes; the data module reads a 1M-point series once for 20 requests."""

from __future__ import annotations

import contextlib
import threading
import time

import numpy as np
import pytest

from engine.record import RunReader, RunWriter
from viz.scalars import MAX_POINTS
from workbench import data
from workbench.cache import FillTimeout, SingleFlightCache, estimated_bytes
from workbench.pages.common import answers

THREADS = 16
DEADLINE_S = 60


def wait_for_waiters(cache: SingleFlightCache, key, count: int) -> None:
    """Inside a fill: returns once `count` other threads wait for it (a deadline, not a
    sleep, bounds the spin if something is wrong)."""
    deadline = time.monotonic() + DEADLINE_S
    while cache.waiting(key) < count:
        assert time.monotonic() < deadline, f"only {cache.waiting(key)} of {count} waiting"


def run_together(target, count: int = THREADS) -> list:
    results: list = [None] * count

    def one(index):
        try:
            results[index] = target()
        except Exception as exc:  # noqa: BLE001 -- the test inspects what each thread got
            results[index] = exc
    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S)
    assert not any(thread.is_alive() for thread in threads)
    return results


def test_threads_asking_together_share_one_fill():
    cache = SingleFlightCache(max_entries=8, max_bytes=1 << 20)
    computed = []

    def compute():
        computed.append(1)
        wait_for_waiters(cache, "k", THREADS - 1)
        return np.arange(10)

    results = run_together(lambda: cache.get("k", compute))
    assert len(computed) == 1
    assert all(result is results[0] for result in results)
    assert cache.get("k", lambda: pytest.fail("cached")) is results[0]


def test_a_failed_fill_fails_for_every_waiter_and_is_not_cached():
    cache = SingleFlightCache(max_entries=8, max_bytes=1 << 20)
    computed = []

    def compute():
        computed.append(1)
        wait_for_waiters(cache, "k", THREADS - 1)
        raise KeyError("no such tag")

    results = run_together(lambda: cache.get("k", compute))
    assert len(computed) == 1
    assert all(isinstance(result, KeyError) and result.args == ("no such tag",)
               for result in results)
    assert len({id(result) for result in results}) == THREADS   # each its own copy
    assert cache.stats() == (0, 0)
    assert cache.get("k", lambda: 7) == 7                        # the next ask computes


@contextlib.contextmanager
def fill_held(cache: SingleFlightCache, key):
    """Inside: another thread's fill of `key` is under way (holding a fill slot) until the
    block ends."""
    started, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=lambda: cache.get(key, lambda: (started.set(),
                                                                      release.wait())))
    holder.start()
    started.wait(DEADLINE_S)
    try:
        yield
    finally:
        release.set()
        holder.join(DEADLINE_S)


def test_a_waiter_gives_up_after_its_deadline():
    cache = SingleFlightCache(max_entries=8, max_bytes=1 << 20, wait_s=0.05)
    with fill_held(cache, "k"), pytest.raises(FillTimeout, match="still computing"):
        cache.get("k", lambda: pytest.fail("a second fill"))


def test_fills_that_need_nested_fills_finish_when_every_slot_is_taken():
    # Two outer fills hold both slots at once (a barrier makes them overlap), then each
    # asks for a part that is not cached yet: with a slot per nested fill both would wait
    # forever for a slot (the Compare page's two sides hung this way).
    cache = SingleFlightCache(max_entries=8, max_bytes=1 << 20, max_fills=2)
    both_inside = threading.Barrier(2, timeout=DEADLINE_S)
    results: dict[str, str] = {}

    def outer(side: str) -> str:
        both_inside.wait()
        part = cache.get(("part", side), lambda: f"part of {side}")
        return cache.get(("deeper", side), lambda: part + " and deeper")

    def ask(side: str) -> None:
        results[side] = cache.get(("view", side), lambda: outer(side))

    threads = [threading.Thread(target=ask, args=(side,), daemon=True) for side in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not any(thread.is_alive() for thread in threads), "the nested fills deadlocked"
    assert results == {"a": "part of a and deeper", "b": "part of b and deeper"}
    assert cache.get(("part", "a"), lambda: pytest.fail("refilled")) == "part of a"


def test_a_fill_gives_up_when_no_slot_frees_in_time():
    cache = SingleFlightCache(max_entries=8, max_bytes=1 << 20, max_fills=1, wait_s=0.05)
    with fill_held(cache, "held"), pytest.raises(FillTimeout, match="fill slots stayed busy"):
        cache.get("other", lambda: pytest.fail("filled without a slot"))
    assert cache.get("other", lambda: "filled") == "filled"


def test_the_cache_is_bounded_in_entries_and_bytes():
    cache = SingleFlightCache(max_entries=4, max_bytes=10_000)
    for i in range(10):
        cache.get(i, lambda: np.zeros(100))                      # ~1 kB each
    assert cache.stats()[0] == 4
    for i in range(10, 20):
        cache.get(i, lambda: np.zeros(1000))                     # ~8 kB each
    entries, held = cache.stats()
    assert entries == 1 and held <= 10_000
    big = cache.get("big", lambda: np.zeros(10_000))             # larger than the budget
    assert big.size == 10_000 and cache.stats()[1] <= 10_000
    assert estimated_bytes((np.zeros(1000), np.zeros(1000))) >= 16_000


def test_junk_scopes_cannot_grow_the_layout_cache(recorded):
    real = frozenset(data.hierarchy(recorded.run).groups) - {""}
    data.view(recorded.run, real)
    before = data.cache_stats()
    rng = np.random.default_rng(0)
    for _ in range(100):
        junk = {f"junk/{rng.integers(1 << 60)}" for _ in range(1000)}
        drawn = data.view(recorded.run, real | junk)
        assert drawn.expanded <= real
    assert data.cache_stats() == before


def test_twenty_requests_for_a_long_series_read_it_once(empty_logdir, monkeypatch):
    with RunWriter(empty_logdir, "long") as writer:
        for step in range(2000):
            writer.scalar("loss", 1.0 / (step + 1), step)
    reads = []
    original = RunReader.scalar_values      # the curve's read of every value

    def counted(self, tag):
        reads.append(tag)
        key = next(key for key in data._cache._flights if key[2] == "curve_values")
        wait_for_waiters(data._cache, key, 19)
        return original(self, tag)
    monkeypatch.setattr(RunReader, "scalar_values", counted)
    curves = run_together(lambda: data.curve("long", "loss", 0.6), count=20)
    assert reads == ["loss"]
    assert all(curve is curves[0] for curve in curves)
    assert curves[0].steps[-1] == 1999 and len(curves[0].steps) == MAX_POINTS


def test_a_bug_in_a_callback_is_logged_and_still_answered(caplog):
    @answers(lambda problem: ("message", problem))
    def broken():
        raise TypeError("a bug")

    assert broken() == ("message", "Could not show this (TypeError); the server log has the "
                                   "details.")
    assert [record.levelname for record in caplog.records] == ["ERROR"]
