"""The rendezvous protocol (what a partition's Send/Recv talk to: RendezvousProtocol, and the
key format with `parse_key`), the in-process rendezvous behind it (TF_BEHAVIOUR 3.10) and what
bounds a step's waiting: per key a FIFO; send never blocks, recv waits for the value, for an
abort (which wakes every waiter with the abort's error) or for the step's Deadline; a Gate caps
how many partitions run kernels at once, and a partition waiting in recv does not hold it."""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from engine import errors

_WAIT_SLICE_S = 1.0
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


@dataclass(frozen=True)
class ParsedKey:
    """A rendezvous key, `src_device;src_incarnation;dst_device;tensor_name;frame_id:iter`
    (TF's Rendezvous::CreateKey; the incarnation in 16 hex digits, frame_id:iter `0:0` outside
    loops, else the frame instance's id and the iteration: engine/runtime/frames.py)."""

    src_device: str
    src_incarnation: int
    dst_device: str
    tensor_name: str
    frame_id: int
    iteration: int

    def key(self) -> str:
        return (f"{self.src_device};{self.src_incarnation:016x};{self.dst_device};"
                f"{self.tensor_name};{self.frame_id}:{self.iteration}")


def parse_key(key: str) -> ParsedKey:
    """The five fields of a rendezvous key; InvalidArgumentError (TF's wording) otherwise."""
    parts = key.split(";")
    frame, sep, iteration = parts[-1].partition(":") if len(parts) == 5 else ("", "", "")
    if not (sep and parts[0] and parts[2] and parts[3] and _is_hex(parts[1])
            and frame.isdigit() and iteration.isdigit()):
        raise errors.InvalidArgumentError(
            None, None, f"Invalid rendezvous key: {key!r} (a key is "
                        "src_device;incarnation;dst_device;tensor_name;frame_id:iter)")
    return ParsedKey(parts[0], int(parts[1], 16), parts[2], parts[3], int(frame),
                     int(iteration))


def _is_hex(text: str) -> bool:
    return 0 < len(text) <= 16 and all(c in "0123456789abcdefABCDEF" for c in text)


@runtime_checkable
class RendezvousProtocol(Protocol):
    """What a step's partitions exchange cut edges through, in process or (later) across
    processes. `send` never blocks; `recv` returns the value sent under the key, or NO_VALUE
    (engine.kernels.control_flow) for a dead tensor, waiting at most until `deadline`
    (DeadlineExceededError) or an `abort` (every waiter gets a CancelledError naming the
    abort's cause); `recv_any` waits for the first of several keys. One rendezvous serves one
    step (`step_id`)."""

    step_id: int
    deadline: Deadline | None

    def send(self, key: str, value, dead: bool = False) -> None: ...

    def recv(self, key: str): ...

    def recv_any(self, keys) -> tuple[int, object]: ...

    def abort(self, error: BaseException) -> None: ...


class Rendezvous:
    """The in-process RendezvousProtocol."""

    def __init__(self, deadline: Deadline | None = None, gate: Gate | None = None,
                 step_id: int = 0):
        self._cond = threading.Condition()
        self._values: dict[str, collections.deque] = {}
        self._aborted: BaseException | None = None
        self._deadline = deadline
        self._gate = gate
        self.step_id = step_id
        self.bytes_sent = 0

    @property
    def deadline(self) -> Deadline | None:
        return self._deadline

    def send(self, key: str, value, dead: bool = False) -> None:
        if dead:
            # Imported here: the kernels package imports the runtime.
            from engine.kernels.control_flow import NO_VALUE
            value = NO_VALUE
        with self._cond:
            if self._aborted is not None:
                raise self._aborted
            self._values.setdefault(key, collections.deque()).append(value)
            self.bytes_sent += getattr(value, "nbytes", 0)
            self._cond.notify_all()

    def recv(self, key: str):
        return self.recv_any((key,))[1]

    def recv_any(self, keys) -> tuple[int, object]:
        """The first of `keys` (in their order) that has a value, as (its index, the value),
        waiting as `recv` does. The dynamic executor waits on all of its pending Recvs at once,
        so no order of transfers between loop iterations can make two partitions wait on each
        other."""
        with self._cond:
            found = self._take(keys)
            if found is not None:
                return found
        if self._gate is not None:
            self._gate.pause()
        with self._cond:
            while True:
                found = self._take(keys)   # an abort or the deadline raises, slot not taken back
                if found is not None:
                    break
                self._wait()
        if self._gate is not None:
            self._gate.resume(self._deadline)
        return found

    def _take(self, keys) -> tuple[int, object] | None:
        if self._aborted is not None:
            raise self._aborted
        values = self._values
        for i, key in enumerate(keys):
            queue = values.get(key)
            if queue:
                value = queue.popleft()
                if not queue:
                    del values[key]       # a loop makes a key per iteration: keep none empty
                return i, value
        return None

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
