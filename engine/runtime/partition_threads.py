"""The threads that run the partitions of concurrent steps. Every submitted partition starts
at once, on an idle thread or a new one: a partition may block in a Recv until a sibling of
its own step sends, so a bounded pool, where queued siblings wait for threads that their
blocked peers hold, can deadlock (issue 6 reproduced it with two threads on three devices).
How many partitions run kernels at the same time is the inter-op Gate's job, not this one's.
Threads idle for IDLE_SECS retire, so a burst of concurrent steps does not leave its peak
number of threads behind. (ThreadPoolExecutor reuses idle threads but never retires them, and
its max_workers is the bound that deadlocks.)"""

from __future__ import annotations

import threading
from concurrent.futures import Future

from engine import errors

IDLE_SECS = 30.0
_STOP = ("stop",)   # handed to an idle worker by shutdown()


class PartitionThreads:
    def __init__(self, name: str = "engine-partition", idle_secs: float = IDLE_SECS):
        self._name = name
        self._idle_secs = idle_secs
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []   # waiting for a task, most recently idle last
        self._workers: set[_Worker] = set()
        self._closed = False
        self._count = 0

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        task = (future, fn, args)
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot run a partition: the session's threads are shut down")
            if self._idle:
                self._idle.pop().give(task)
                return future
            self._count += 1
            worker = _Worker(self, f"{self._name}-{self._count}")
            self._workers.add(worker)
        worker.give(task)
        try:
            worker.start()
        except RuntimeError as e:   # the OS refused another thread
            with self._lock:
                self._workers.discard(worker)
            raise errors.ResourceExhaustedError(
                None, None, f"could not start a thread for a partition ({e}); "
                            f"{len(self._workers)} partitions are running") from e
        return future

    def thread_count(self) -> int:
        with self._lock:
            return len(self._workers)

    def idle_count(self) -> int:
        with self._lock:
            return len(self._idle)

    def shutdown(self, wait: bool = True) -> None:
        """Stops idle threads now and busy ones after their partition; with wait, joins them."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            workers = list(self._workers)
            self._workers.difference_update(idle)
        for worker in idle:
            worker.give(_STOP)
        if wait:
            for worker in workers:
                if worker is not threading.current_thread():
                    worker.join()

    # Called by workers.

    def _park(self, worker: _Worker) -> bool:
        """A worker finished its task: it becomes idle unless the executor is shut down."""
        with self._lock:
            if self._closed:
                self._workers.discard(worker)
                return False
            self._idle.append(worker)
            return True

    def _retire(self, worker: _Worker) -> bool:
        """A worker timed out idle: it leaves unless a task was handed to it meanwhile."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                self._workers.discard(worker)
                return True
            return False


class _Worker(threading.Thread):
    def __init__(self, owner: PartitionThreads, name: str):
        super().__init__(name=name, daemon=True)
        self._owner = owner
        self._task = None
        self._ready = threading.Condition(threading.Lock())

    def give(self, task) -> None:
        with self._ready:
            self._task = task
            self._ready.notify()

    def _take(self, timeout: float | None):
        with self._ready:
            if self._task is None:
                self._ready.wait(timeout)
            task, self._task = self._task, None
            return task

    def run(self) -> None:
        task = self._take(None)
        while task is not _STOP:
            future, fn, args = task
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as e:  # noqa: BLE001 - delivered through the future
                    future.set_exception(e)
            del task, future, fn, args   # drop references to the step's tensors now
            if not self._owner._park(self):
                return
            task = self._take(self._owner._idle_secs)
            if task is None and self._owner._retire(self):
                return
            if task is None:   # handed a task just as it timed out
                task = self._take(None)
