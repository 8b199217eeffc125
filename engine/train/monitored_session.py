"""tf.train.MonitoredSession, SingularMonitoredSession, MonitoredTrainingSession, the
Scaffold and the session creators (TF_BEHAVIOUR 8.1-8.3). The wrappers a monitored session
stacks around its Session are in engine/train/wrapped_sessions.py."""

from __future__ import annotations

import inspect
import logging

from engine import errors
from engine.graph import get_default_graph
from engine.train.session_manager import SessionManager
from engine.train.wrapped_sessions import (
    CoordinatedSessionCreator,
    RecoverableSession,
    StepContext,
)

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
        self._coordinated_creator = CoordinatedSessionCreator(
            session_creator or ChiefSessionCreator(), self._hooks, stop_grace_period_secs)
        try:
            if should_recover:
                self._sess = RecoverableSession(self._coordinated_creator)
            else:
                self._sess = self._coordinated_creator.create_session()
        except BaseException:
            # A failed start (a checkpoint that does not match, say) leaves the graph as it
            # found it, so the user can fix the graph and try again.
            self._unfinalize()
            raise

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

    StepContext = StepContext

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
                self._unfinalize()

    def _unfinalize(self) -> None:
        if not self._graph_was_finalized:
            # TF's _unsafe_unfinalize: the graph takes new ops again after the close.
            self._graph._unsafe_unfinalize()

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
    from engine.train.hooks import StepCounterHook
    from engine.train.saving_hooks import CheckpointSaverHook
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
