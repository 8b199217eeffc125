"""tf.train.Coordinator: a stop flag shared by threads, the first error reported through it
(re-raised by join / raise_requested_exception), and join with a grace period."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time

from engine import errors

__all__ = ["Coordinator"]

logger = logging.getLogger("engine.train")


class Coordinator:
    """Coordinates the termination of a set of threads (TF's tf.train.Coordinator)."""

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._error: BaseException | None = None
        self._joined = False
        self._threads: set[threading.Thread] = set()

    def _as_error(self, ex) -> BaseException | None:
        """The exception of `ex` (an exception or an exc_info triple), None for a clean stop."""
        if isinstance(ex, tuple):
            ex = ex[1]
        if ex is None or isinstance(ex, self._clean_stop):
            return None
        return ex

    def request_stop(self, ex=None) -> None:
        """Asks every thread to stop; `ex` (if not a clean-stop type) is kept and re-raised
        by join(). After join(), reporting an error raises it at once."""
        with self._lock:
            error = self._as_error(ex)
            if self._joined and error is not None:
                raise error
            if self._stop_event.is_set():
                return
            if error is not None and self._error is None:
                logger.info("Error reported to Coordinator: %s, %s", type(error), error)
                self._error = error
            self._stop_event.set()

    def clear_stop(self) -> None:
        with self._lock:
            self._joined = False
            self._error = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """Any exception in the block requests a stop with it (and is swallowed)."""
        try:
            yield
        except BaseException:  # noqa: BLE001 - reported to the coordinator, as in TF
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        with self._lock:
            self._threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs: float = 120,
             ignore_live_threads: bool = False) -> None:
        """Waits for the stop request, then up to the grace period for the threads to end;
        raises the first reported error, or names the threads still alive."""
        with self._lock:
            threads = list(self._threads | set(threads or ()))
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._threads = set()
            if self._error is not None:
                raise self._error
            if stragglers:
                message = f"Coordinator stopped with threads still running: {' '.join(stragglers)}"
                if not ignore_live_threads:
                    raise RuntimeError(message)
                logger.info(message)

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        with self._lock:
            if self._error is not None:
                raise self._error
