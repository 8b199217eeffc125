"""tf.train.MonitoredSession, SingularMonitoredSession, MonitoredTrainingSession, the
Scaffold and the session creators (TF_BEHAVIOUR 8.1-8.3). A monitored session is a stack of
wrappers around one Session: recoverable (recreated after a preemption error), coordinated
(a Coordinator's stop and errors), hooked (hooks' fetches, feeds and options merged into
each run)."""

from __future__ import annotations

import inspect
import logging

from engine import errors
from engine.graph import get_default_graph
from engine.runtime.config import RunMetadata, RunOptions
from engine.train.coordinator import Coordinator
from engine.train.session_manager import SessionManager
from engine.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues

__all__ = [
    "ChiefSessionCreator",
    "MonitoredSession",
    "MonitoredTrainingSession",
    "Scaffold",
    "SessionCreator",
    "SingularMonitoredSession",
    "WorkerSessionCreator",
]

logger = logging.getLogger("engine.train")
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)
USE_DEFAULT = object()
# tf.GraphKeys names of the collections a Scaffold reads its defaults from.
INIT_OP, READY_OP, READY_FOR_LOCAL_INIT_OP = "init_op", "ready_op", "ready_for_local_init_op"
LOCAL_INIT_OP, SUMMARY_OP = "local_init_op", "summary_op"


class Scaffold:
    """The pieces that make a model ready: init op, local init op, ready ops, summary op and
    saver. finalize() fills the missing ones from the graph's collections or TF's defaults,
    then finalizes the graph."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None, saver=None,
                 copy_from_scaffold=None, local_init_feed_dict=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            other = copy_from_scaffold

            def coalesce(mine, theirs):
                return mine if mine is not None else theirs
            init_op = coalesce(init_op, other.init_op)
            init_feed_dict = coalesce(init_feed_dict, other.init_feed_dict)
            init_fn = coalesce(init_fn, other._user_init_fn)
            ready_op = coalesce(ready_op, other.ready_op)
            ready_for_local_init_op = coalesce(ready_for_local_init_op,
                                               other.ready_for_local_init_op)
            local_init_op = coalesce(local_init_op, other.local_init_op)
            local_init_feed_dict = coalesce(local_init_feed_dict, other.local_init_feed_dict)
            summary_op = coalesce(summary_op, other.summary_op)
            saver = coalesce(saver, other.saver)
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> Scaffold:
        """Fills in the defaults (TF's, except that there is no default ready op: the engine
        has no report_uninitialized_variables yet) and finalizes the graph."""
        from engine.ops.variables import global_variables_initializer
        from engine.train.saver import _get_saver_or_default
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default("init_op", INIT_OP,
                                                    global_variables_initializer)
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default("local_init_op", LOCAL_INIT_OP,
                                                          Scaffold.default_local_init_op)
        if self._summary_op is None:
            from engine.summary import merge_all
            self._summary_op = Scaffold.get_or_default("summary_op", SUMMARY_OP, merge_all)
        if self._saver is None:
            self._saver = _get_saver_or_default()
        self._saver.build()
        get_default_graph().finalize()
        logger.info("Graph was finalized.")
        return self

    @property
    def init_fn(self):
        return self._init_fn

    @property
    def init_op(self):
        return self._init_op

    @property
    def ready_op(self):
        return self._ready_op

    @property
    def ready_for_local_init_op(self):
        return self._ready_for_local_init_op

    @property
    def local_init_op(self):
        return self._local_init_op

    @property
    def local_init_feed_dict(self):
        return self._local_init_feed_dict

    @property
    def summary_op(self):
        return self._summary_op

    @property
    def saver(self):
        return self._saver

    @property
    def init_feed_dict(self):
        return self._init_feed_dict

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str, default_constructor):
        """The one item of a collection, else a new default (added to the collection)."""
        graph = get_default_graph()
        elements = graph.get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(f'More than one item in the collection "{collection_key}". '
                                   f"Please indicate which one to use by passing it to the "
                                   f"tf.Scaffold constructor as:  tf.Scaffold({arg_name}=item "
                                   "to use)")
            return elements[0]
        op = default_constructor()
        if op is not None:
            graph.add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op():
        from engine.ops.control_flow_ops import group
        from engine.ops.variables import local_variables, variables_initializer
        return group(variables_initializer(local_variables(), name="init"))


# -- session creators -----------------------------------------------------------------------

class SessionCreator:
    def create_session(self):
        raise NotImplementedError(f"create_session is not implemented for {self}.")


class ChiefSessionCreator(SessionCreator):
    """Restores the latest checkpoint of checkpoint_dir (or the given file), else
    initializes: the chief's session."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config=None,
                 checkpoint_dir: str | None = None,
                 checkpoint_filename_with_path: str | None = None):
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config

    def create_session(self):
        self._scaffold.finalize()
        manager = _session_manager(self._scaffold)
        return manager.prepare_session(
            self._master, saver=self._scaffold.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config, init_op=self._scaffold.init_op,
            init_feed_dict=self._scaffold.init_feed_dict, init_fn=self._scaffold.init_fn)


class WorkerSessionCreator(SessionCreator):
    """Waits until the chief has made the model ready: a non-chief worker's session."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config=None,
                 max_wait_secs: float = 30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        self._scaffold.finalize()
        return _session_manager(self._scaffold).wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs)


def _session_manager(scaffold: Scaffold) -> SessionManager:
    return SessionManager(local_init_op=scaffold.local_init_op,
                          local_init_feed_dict=scaffold.local_init_feed_dict,
                          ready_op=scaffold.ready_op,
                          ready_for_local_init_op=scaffold.ready_for_local_init_op,
                          graph=get_default_graph())


# -- the monitored sessions ------------------------------------------------------------------

class _MonitoredSession:
    """Calls every hook's begin(), creates the session, and runs through the hooks."""

    def __init__(self, session_creator, hooks, should_recover: bool,
                 stop_grace_period_secs: float = 120):
        self._graph = get_default_graph()
        self._graph_was_finalized = self._graph.finalized
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._coordinated_creator = _CoordinatedSessionCreator(
            session_creator or ChiefSessionCreator(), self._hooks, stop_grace_period_secs)
        if should_recover:
            self._sess = _RecoverableSession(self._coordinated_creator)
        else:
            self._sess = self._coordinated_creator.create_session()

    @property
    def graph(self):
        return None if self._tf_sess() is None else self._tf_sess().graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Session.run through the hooks; the hooks' extra fetches are not returned."""
        return self._sess.run(fetches, feed_dict=feed_dict, options=options,
                              run_metadata=run_metadata)

    def run_step_fn(self, step_fn):
        """Calls step_fn(step_context): step_context.session is the raw session,
        run_with_hooks runs through the hooks, request_stop ends the loop."""
        arguments = tuple(inspect.signature(step_fn).parameters)
        if arguments not in (("step_context",), ("self", "step_context")):
            raise ValueError(f"`step_fn` may either have one `step_context` argument, or "
                             f"`self` and `step_context` arguments if it's an instance method. "
                             f"Got {arguments} instead.")
        return self._sess.run_step_fn(step_fn, self._tf_sess(), run_with_hooks=None)

    class StepContext:
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

    def should_stop(self) -> bool:
        return self._sess is None or self._sess.should_stop()

    def close(self) -> None:
        self._close_internal()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        # Running out of input (or a step_fn's stop) ends training cleanly.
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None

    def _close_internal(self, exception_type=None) -> None:
        try:
            if not exception_type:
                for hook in self._hooks:
                    hook.end(self._coordinated_creator.tf_sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None
                if not self._graph_was_finalized:
                    # TF's _unsafe_unfinalize: the graph takes new ops again after the close.
                    self._graph._finalized = False

    def _is_closed(self) -> bool:
        return self._coordinated_creator.tf_sess is None

    def _tf_sess(self):
        return self._coordinated_creator.tf_sess


class MonitoredSession(_MonitoredSession):
    """A session that runs hooks, recovers from preemption errors, and closes cleanly:
    `with MonitoredSession(session_creator, hooks) as sess: while not sess.should_stop(): ...`"""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs: float = 120):
        super().__init__(session_creator, hooks, should_recover=True,
                         stop_grace_period_secs=stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A MonitoredSession without recovery, whose raw session is available."""

    def __init__(self, hooks=None, scaffold=None, master: str = "", config=None,
                 checkpoint_dir=None, stop_grace_period_secs: float = 120,
                 checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, should_recover=False,
                         stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self):
        return self._tf_sess()


def MonitoredTrainingSession(master: str = "", is_chief: bool = True,  # noqa: N802 - TF's name
                             checkpoint_dir: str | None = None, scaffold: Scaffold | None = None,
                             hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=USE_DEFAULT, save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs: float = 120,
                             log_step_count_steps: int | None = 100,
                             max_wait_secs: float = 7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir: str | None = None, save_graph_def: bool = True):
    """A MonitoredSession for training. The chief restores from (or initializes and then
    saves into) checkpoint_dir, and gets a StepCounterHook, a SummarySaverHook and a
    CheckpointSaverHook by default (TF_BEHAVIOUR 8.3); other workers get the user's hooks."""
    from engine.summary.hook import SummarySaverHook
    from engine.train.hooks import CheckpointSaverHook, StepCounterHook
    save_summaries_steps, save_summaries_secs = _one_of(save_summaries_steps,
                                                        save_summaries_secs, 100, None)
    save_checkpoint_steps, save_checkpoint_secs = _one_of(save_checkpoint_steps,
                                                          save_checkpoint_secs, None, 600)
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=creator, hooks=hooks or [],
                                stop_grace_period_secs=stop_grace_period_secs)
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir,
                                  master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(output_dir=summary_dir,
                                             every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or \
                (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                              save_secs=save_summaries_secs,
                                              output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0)
                           or (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                             save_secs=save_checkpoint_secs, scaffold=scaffold,
                                             save_graph_def=save_graph_def))
    all_hooks.extend(hooks or [])
    return MonitoredSession(session_creator=creator, hooks=all_hooks,
                            stop_grace_period_secs=stop_grace_period_secs)


def _one_of(steps, secs, default_steps, default_secs):
    """TF's USE_DEFAULT rule: neither given -> the defaults; one given -> the other off."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


# -- the wrappers ----------------------------------------------------------------------------

class _CoordinatedSessionCreator(SessionCreator):
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
        return _CoordinatedSession(_HookedSession(self.tf_sess, self._hooks), self.coord,
                                   self._stop_grace_period_secs)


class _WrappedSession:
    def __init__(self, sess):
        self._sess = sess
        self._wrapped_is_stoppable = isinstance(sess, _WrappedSession)

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
        return step_fn(_MonitoredSession.StepContext(raw_session, run_with_hooks))


class _RecoverableSession(_WrappedSession):
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


class _CoordinatedSession(_WrappedSession):
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
                _WrappedSession.close(self)
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


class _HookedSession(_WrappedSession):
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
        outputs = _WrappedSession.run(self, fetches=actual_fetches, feed_dict=feed_dict,
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
