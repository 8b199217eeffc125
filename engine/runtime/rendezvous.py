"""The in-process rendezvous (TF_BEHAVIOUR 3.10) and what bounds a step's waiting: per key a
FIFO; send never blocks, recv waits for the value, for an abort (which wakes every waiter
with the abort's error) or for the step's Deadline; a Gate caps how many partitions run
kernels at once, and a partition waiting in recv does not hold it."""

from __future__ import annotations

import collections
import contextlib
import threading
import time

from engine import errors

_WAIT_SLICE_S = 1.0
_EMPTY = object()
_clock = time.monotonic    # module-level so tests can drive a deadline without sleeping


class Deadline:
    """A step's deadline: RunOptions.timeout_in_ms, else ConfigProto.operation_timeout_in_ms."""

    def __init__(self, timeout_ms: int):
        self.timeout_ms = timeout_ms
        self._at = _clock() + timeout_ms / 1e3

    def remaining_s(self) -> float:
        return self._at - _clock()

    def check(self) -> None:
        if self.remaining_s() <= 0:
            raise self.error()

    def error(self) -> errors.DeadlineExceededError:
        return errors.DeadlineExceededError(
            None, None, f"Timed out waiting for notification: the step ran past its deadline "
                        f"of {self.timeout_ms} ms (RunOptions.timeout_in_ms, or "
                        f"ConfigProto.operation_timeout_in_ms when that is 0)")


class Gate:
    """ConfigProto.inter_op_parallelism_threads: at most `n` partitions (of all the session's
    steps) run kernels at the same time. Waiting for a slot honours the step's deadline, and
    a partition that fails while it waits in recv holds no slot, so `held` releases only what
    the calling thread really holds (a thread runs one partition at a time)."""

    def __init__(self, n: int):
        self.n = n
        self._slots = threading.BoundedSemaphore(n)
        self._holding = threading.local()

    @contextlib.contextmanager
    def held(self, deadline: Deadline | None):
        self.resume(deadline)
        try:
            yield self
        finally:
            if getattr(self._holding, "slot", False):
                self.pause()

    def pause(self) -> None:
        self._holding.slot = False
        self._slots.release()

    def resume(self, deadline: Deadline | None) -> None:
        if deadline is None:
            self._slots.acquire()
        else:
            while not self._slots.acquire(timeout=max(min(_WAIT_SLICE_S,
                                                          deadline.remaining_s()), 0.0)):
                deadline.check()
        self._holding.slot = True

    def free_slots(self) -> int:
        """Slots nobody holds (for tests: a finished or failed step leaves all of them)."""
        return self._slots._value


class Rendezvous:
    def __init__(self, deadline: Deadline | None = None, gate: Gate | None = None):
        self._cond = threading.Condition()
        self._values: dict[str, collections.deque] = {}
        self._aborted: BaseException | None = None
        self._deadline = deadline
        self._gate = gate
        self.bytes_sent = 0

    def send(self, key: str, value) -> None:
        with self._cond:
            if self._aborted is not None:
                raise self._aborted
            self._values.setdefault(key, collections.deque()).append(value)
            self.bytes_sent += getattr(value, "nbytes", 0)
            self._cond.notify_all()

    def recv(self, key: str):
        with self._cond:
            value = self._take(key)
            if value is not _EMPTY:
                return value
        if self._gate is not None:
            self._gate.pause()
        with self._cond:
            while True:
                value = self._take(key)   # an abort or the deadline raises, slot not taken back
                if value is not _EMPTY:
                    break
                self._wait()
        if self._gate is not None:
            self._gate.resume(self._deadline)
        return value

    def _take(self, key: str):
        if self._aborted is not None:
            raise self._aborted
        queue = self._values.get(key)
        return queue.popleft() if queue else _EMPTY

    def _wait(self) -> None:
        timeout = _WAIT_SLICE_S
        if self._deadline is not None:
            remaining = self._deadline.remaining_s()
            if remaining <= 0:
                raise self._deadline.error()
            timeout = min(timeout, remaining)
        self._cond.wait(timeout)

    def abort(self, error: BaseException) -> None:
        with self._cond:
            if self._aborted is None:
                self._aborted = errors.CancelledError(
                    None, None, f"Step was aborted because another partition failed: "
                                f"{str(error).splitlines()[0] if str(error) else error!r}")
            self._cond.notify_all()
