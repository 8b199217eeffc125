"""The in-process rendezvous (TF_BEHAVIOUR 3.10): per key a FIFO; send never blocks, recv
waits for the value or for an abort, which wakes every waiter with the abort's error."""

from __future__ import annotations

import collections
import threading

from engine import errors

_WAIT_SLICE_S = 1.0


class Rendezvous:
    def __init__(self, timeout_s: float | None = None):
        self._cond = threading.Condition()
        self._values: dict[str, collections.deque] = {}
        self._aborted: BaseException | None = None
        self._timeout_s = timeout_s

    def send(self, key: str, value) -> None:
        with self._cond:
            if self._aborted is not None:
                raise self._aborted
            self._values.setdefault(key, collections.deque()).append(value)
            self._cond.notify_all()

    def recv(self, key: str):
        with self._cond:
            waited = 0.0
            while True:
                if self._aborted is not None:
                    raise self._aborted
                queue = self._values.get(key)
                if queue:
                    return queue.popleft()
                if self._timeout_s is not None and waited >= self._timeout_s:
                    raise errors.DeadlineExceededError(
                        None, None, f"Timed out after {self._timeout_s} s waiting for tensor "
                                    f"with rendezvous key {key}")
                self._cond.wait(_WAIT_SLICE_S)
                waited += _WAIT_SLICE_S

    def abort(self, error: BaseException) -> None:
        with self._cond:
            if self._aborted is None:
                self._aborted = errors.CancelledError(
                    None, None, f"Step was aborted because another partition failed: "
                                f"{str(error).splitlines()[0] if str(error) else error!r}")
            self._cond.notify_all()
