"""The session wrappers a MonitoredSession stacks around one Session (TF's
monitored_session.py): recoverable (recreated after a preemption error), coordinated (a
Coordinator's stop and errors), hooked (hooks' fetches, feeds and options merged into each
run), and the creator that builds the stack and calls after_create_session."""

from __future__ import annotations

import logging

from engine import errors
from engine.runtime.config import RunMetadata, RunOptions
from engine.train.coordinator import Coordinator
from engine.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues

logger = logging.getLogger("engine.train")
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)


class StepContext:
    """What run_step_fn hands its step_fn: the raw session and a run through the hooks."""

    def __init__(self, session, run_with_hooks_fn):
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self):
        return self._session

    def run_with_hooks(self, *args, **kwargs):
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self):
        raise StopIteration("step_fn has requested the iterations to stop.")


class CoordinatedSessionCreator:
    """Creates the raw session, a Coordinator, and calls after_create_session on the hooks."""

    def __init__(self, session_creator, hooks, stop_grace_period_secs: float):
        self._session_creator = session_creator
        self._hooks = hooks
        self._stop_grace_period_secs = stop_grace_period_secs
        self.coord: Coordinator | None = None
        self.tf_sess = None

    def create_session(self):
        self.tf_sess = self._session_creator.create_session()
        self.coord = Coordinator(clean_stop_exception_types=[])
        for hook in self._hooks:
            hook.after_create_session(self.tf_sess, self.coord)
        return CoordinatedSession(HookedSession(self.tf_sess, self._hooks), self.coord,
                                  self._stop_grace_period_secs)


class WrappedSession:
    def __init__(self, sess):
        self._sess = sess
        self._wrapped_is_stoppable = isinstance(sess, WrappedSession)

    @property
    def graph(self):
        return self._sess.graph

    @property
    def sess_str(self) -> str:
        return self._sess.sess_str

    def should_stop(self) -> bool:
        if self._check_stop():
            return True
        if self._sess:
            return self._wrapped_is_stoppable and self._sess.should_stop()
        return True

    def _check_stop(self) -> bool:
        return False

    def close(self) -> None:
        if self._sess:
            try:
                self._sess.close()
            except _PREEMPTION_ERRORS as e:
                logger.error("An error occurred when attempting to close the session. This may "
                             "be due to a preemption in a connected worker or parameter "
                             "server. Error: %s", e)
            finally:
                self._sess = None

    def run(self, *args, **kwargs):
        return self._sess.run(*args, **kwargs)

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        run_with_hooks = run_with_hooks or self.run
        return step_fn(StepContext(raw_session, run_with_hooks))


class RecoverableSession(WrappedSession):
    """Recreates the session after an AbortedError or UnavailableError (a preempted worker)."""

    def __init__(self, sess_creator):
        self._sess_creator = sess_creator
        super().__init__(self._create_session())

    def _create_session(self):
        while True:
            try:
                return self._sess_creator.create_session()
            except _PREEMPTION_ERRORS as e:
                logger.info("An error was raised while a session was being created. This may "
                            "be due to a preemption of a connected worker or parameter server. "
                            "A new session will be created. Error: %s", e)

    def _check_stop(self) -> bool:
        try:
            return self._sess._check_stop() if self._sess else True
        except _PREEMPTION_ERRORS as e:
            logger.info("An error was raised while considering whether the session is "
                        "complete. The current session will be closed and a new session will "
                        "be created. Error: %s", e)
            self.close()
            self._sess = self._create_session()
            return False
        except Exception:  # noqa: BLE001 - TF's rule: any other error means "stop"
            return True

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return self._sess.run(fetches, feed_dict=feed_dict, options=options,
                                      run_metadata=run_metadata)
            except _PREEMPTION_ERRORS as e:
                logger.info("An error was raised. This may be due to a preemption in a "
                            "connected worker or parameter server. The current session will be "
                            "closed and a new session will be created. Error: %s", e)
                self.close()
                self._sess = None

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return self._sess.run_step_fn(step_fn, raw_session, self._sess.run)
            except _PREEMPTION_ERRORS as e:
                logger.info("An error was raised. The current session will be closed and a new "
                            "session will be created. Error: %s", e)
                self.close()
                self._sess = None


class CoordinatedSession(WrappedSession):
    """Stops when the coordinator does; an error a thread reported wins over the run's."""

    def __init__(self, sess, coord: Coordinator, stop_grace_period_secs: float = 120):
        super().__init__(sess)
        self._coord = coord
        self._stop_grace_period_secs = stop_grace_period_secs

    def _check_stop(self) -> bool:
        self._coord.raise_requested_exception()
        return self._coord.should_stop()

    def close(self) -> None:
        self._coord.request_stop()
        try:
            self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs,
                             ignore_live_threads=True)
        finally:
            try:
                WrappedSession.close(self)
            except Exception:  # noqa: BLE001 - closing must not mask the first error
                pass

    def run(self, *args, **kwargs):
        try:
            return self._sess.run(*args, **kwargs)
        except _PREEMPTION_ERRORS:
            raise
        except Exception as original:
            try:
                self._coord.raise_requested_exception()
            except _PREEMPTION_ERRORS:
                raise
            except Exception:  # noqa: BLE001 - the run's own error is the one to report
                raise original from None
            raise


class HookedSession(WrappedSession):
    """One run: the caller's fetches under 'caller', each hook's under the hook; hook feeds
    and options merged; after_run for every hook; should_stop latches a stop request."""

    def __init__(self, sess, hooks):
        super().__init__(sess)
        self._hooks = hooks
        self._should_stop = False

    def _check_stop(self) -> bool:
        return self._should_stop

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        actual_fetches = {"caller": fetches}
        run_context = SessionRunContext(original_args=SessionRunArgs(fetches, feed_dict),
                                        session=self._sess)
        options = options or RunOptions()
        feed_dict = self._call_hook_before_run(run_context, actual_fetches, feed_dict, options)
        run_metadata = run_metadata or RunMetadata()
        outputs = WrappedSession.run(self, fetches=actual_fetches, feed_dict=feed_dict,
                                      options=options, run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(run_context, SessionRunValues(
                results=outputs.get(hook), options=options, run_metadata=run_metadata))
        self._should_stop = self._should_stop or run_context.stop_requested
        return outputs["caller"]

    def _call_hook_before_run(self, run_context, fetch_dict: dict, user_feed_dict, options):
        hook_feeds: dict = {}
        for hook in self._hooks:
            request = hook.before_run(run_context)
            if request is None:
                continue
            if request.fetches is not None:
                fetch_dict[hook] = request.fetches
            if request.feed_dict:
                _raise_if_feeds_intersect(hook_feeds, request.feed_dict,
                                          "Same tensor is fed by two hooks.")
                hook_feeds.update(request.feed_dict)
            if request.options:
                _merge_run_options(options, request.options)
        if not hook_feeds:
            return user_feed_dict
        if not user_feed_dict:
            return hook_feeds
        _raise_if_feeds_intersect(user_feed_dict, hook_feeds,
                                  "Same tensor is fed by a SessionRunHook and user.")
        hook_feeds.update(user_feed_dict)
        return hook_feeds


def _raise_if_feeds_intersect(feeds1: dict, feeds2: dict, message: str) -> None:
    clash = [k for k in feeds1 if k in feeds2]
    if clash:
        raise RuntimeError(f"{message} Conflict(s): {clash}")


def _merge_run_options(options, incoming) -> None:
    """TF's rule: the strongest request wins, field by field."""
    for name in ("trace_level", "timeout_in_ms", "inter_op_thread_pool"):
        if hasattr(options, name) and hasattr(incoming, name):
            setattr(options, name, max(getattr(options, name), getattr(incoming, name)))
    for name in ("output_partition_graphs", "report_tensor_allocations_upon_oom"):
        if hasattr(options, name) and hasattr(incoming, name):
            setattr(options, name, bool(getattr(options, name) or getattr(incoming, name)))
