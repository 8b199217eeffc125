"""The workbench's query cache: least-recently-used, bounded in entries and in (estimated)
bytes, and single-flight: requests that arrive together for one key wait for one fill, and
a fill that fails fails for each of them without being cached."""

from __future__ import annotations

import copy
import dataclasses
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np


class FillTimeout(TimeoutError):
    """Waited too long for another request's fill of the same key."""


class _Flight:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.waiting = 0


class SingleFlightCache:
    """get(key, compute): the cached value, or compute()'s, computed once however many
    threads ask together (with keep=False shared by the requests that overlap, never
    stored). At most `max_fills` computations run at once (each holds its working memory),
    so a burst of different keys cannot exhaust memory. A fill may call get() for the parts
    it is built from (the Graph page's first view measures drawings that are cached
    themselves): those nested fills run under the slot their outer fill holds, since
    taking a slot of their own could wait forever on slots held by outer fills that each
    wait for a nested one (the Compare page's two sides, drawn at once, did)."""

    def __init__(self, max_entries: int, max_bytes: int, max_fills: int = 4,
                 wait_s: float = 120.0) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.wait_s = wait_s
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._flights: dict[Hashable, _Flight] = {}
        self._lock = threading.Lock()
        self._fill_slots = threading.BoundedSemaphore(max_fills)
        self._filling = threading.local()       # .depth: fills this thread is inside

    def get(self, key: Hashable, compute: Callable[[], Any], keep: bool = True) -> Any:
        with self._lock:
            if keep and key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key][0]
            flight = self._flights.get(key)
            leader = flight is None
            if leader:
                flight = self._flights[key] = _Flight()
            else:
                flight.waiting += 1
        if leader:
            return self._fill(key, flight, compute, keep)
        finished = flight.done.wait(self.wait_s)
        with self._lock:
            flight.waiting -= 1
        if not finished:
            raise FillTimeout(f"still computing after {self.wait_s:.0f} s; try again shortly")
        if flight.error is not None:
            raise _copy(flight.error) from flight.error
        return flight.value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def waiting(self, key: Hashable) -> int:
        """How many requests wait for the fill of `key` now (tests and the bench watch it)."""
        with self._lock:
            flight = self._flights.get(key)
            return 0 if flight is None else flight.waiting

    def stats(self) -> tuple[int, int]:
        """(entries, estimated bytes) held now."""
        with self._lock:
            return len(self._entries), self._bytes

    def _fill(self, key: Hashable, flight: _Flight, compute: Callable[[], Any],
              keep: bool) -> Any:
        size = 0
        try:
            value = self._compute_in_slot(compute)
            if keep:
                size = estimated_bytes(value) + estimated_bytes(key)
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            # Whatever happened, the flight ends here: no waiter is left waiting for it.
            with self._lock:
                del self._flights[key]
                if flight.error is None and keep and size <= self.max_bytes:
                    self._store(key, value, size)
            if flight.error is None:
                flight.value = value
            flight.done.set()
        return value

    def _compute_in_slot(self, compute: Callable[[], Any]) -> Any:
        depth = getattr(self._filling, "depth", 0)
        if depth:
            return self._compute_nested(compute, depth)
        # Bounded like a waiter's wait: a server whose slots are all stuck says so to each
        # request rather than hanging every later one.
        if not self._fill_slots.acquire(timeout=self.wait_s):
            raise FillTimeout(f"every one of the cache's fill slots stayed busy for "
                              f"{self.wait_s:.0f} s; try again shortly")
        try:
            return self._compute_nested(compute, depth)
        finally:
            self._fill_slots.release()

    def _compute_nested(self, compute: Callable[[], Any], depth: int) -> Any:
        self._filling.depth = depth + 1
        try:
            return compute()
        finally:
            self._filling.depth = depth

    def _store(self, key: Hashable, value: Any, size: int) -> None:
        if key in self._entries:
            self._bytes -= self._entries.pop(key)[1]
        self._entries[key] = (value, size)
        self._bytes += size
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._bytes -= self._entries.popitem(last=False)[1][1]


def _copy(error: BaseException) -> BaseException:
    """A waiter's own copy, so concurrent raises do not share one traceback."""
    try:
        return copy.copy(error)
    except Exception:  # noqa: BLE001 -- an exception that cannot be copied is raised as is
        return error


def estimated_bytes(value: Any, limit_items: int = 1_000_000) -> int:
    """Roughly what `value` holds in memory: numpy arrays by their buffers, containers and
    dataclasses by their members (walked without recursion, each object once, at most
    `limit_items` of them; the rest are counted at the average so far)."""
    total, seen, stack, walked = 0, set(), [value], 0
    while stack and walked < limit_items:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        walked += 1
        if isinstance(item, np.ndarray):
            total += item.nbytes + 112
            continue
        total += sys.getsizeof(item, 64)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
    if stack:
        total += len(stack) * (total // max(walked, 1))
    return total
