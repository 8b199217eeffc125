"""The SessionRunHook interface (TF_BEHAVIOUR 8.1) and the values that pass through one
hooked run: SessionRunArgs (what a hook adds), SessionRunContext, SessionRunValues."""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
]


class SessionRunHook:
    """Extends MonitoredSession.run; every method is a no-op by default.

    begin() runs once, before the graph is finalized (it may add ops);
    after_create_session(session, coord) after each session (re)creation;
    before_run(run_context) may return SessionRunArgs to fetch, feed or set options;
    after_run(run_context, run_values) sees the results of those fetches;
    end(session) runs at a clean close only."""

    def begin(self) -> None:
        pass

    def after_create_session(self, session, coord) -> None:
        pass

    def before_run(self, run_context) -> SessionRunArgs | None:
        return None

    def after_run(self, run_context, run_values) -> None:
        pass

    def end(self, session) -> None:
        pass


class SessionRunArgs(NamedTuple):
    """Fetches (any structure Session.run takes), feeds and RunOptions a hook adds."""
    fetches: object
    feed_dict: dict | None = None
    options: object = None


class SessionRunValues(NamedTuple):
    """`results` mirrors the hook's fetches; `options` and `run_metadata` are the run's."""
    results: object
    options: object
    run_metadata: object


class SessionRunContext:
    """What the hooks of one run share: the caller's arguments, the raw session, and a stop
    request any hook may make (MonitoredSession.should_stop latches it after the run)."""

    def __init__(self, original_args: SessionRunArgs, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        self._stop_requested = True
