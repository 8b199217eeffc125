"""The standard SessionRunHooks (TF_BEHAVIOUR 8.4-8.10): SecondOrStepTimer, LoggingTensorHook,
StopAtStepHook, StepCounterHook, NanTensorHook, FeedFnHook, FinalOpsHook. The hooks that write
files are in engine/train/saving_hooks.py; SummarySaverHook lives with the summaries
(engine.summary.hook)."""

from __future__ import annotations

import logging
import time

import numpy as np

from engine import errors
from engine.graph import Tensor, get_default_graph
from engine.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = [
    "FeedFnHook",
    "FinalOpsHook",
    "LoggingTensorHook",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "SecondOrStepTimer",
    "StepCounterHook",
    "StopAtStepHook",
]

logger = logging.getLogger("engine.train")
_now = time.time     # the timers' clock (tests replace it)


# -- timers ---------------------------------------------------------------------------------

class SecondOrStepTimer:
    """Fires the first time, never twice for one step, then once `every_secs` seconds have
    passed or `step >= last + every_steps` (exactly one of the two is set)."""

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self) -> None:
        self._last_step: int | None = None
        self._last_time: float | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None and _now() >= self._last_time + self._every_secs:
            return True
        return self._every_steps is not None and step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Records a trigger; returns (seconds, steps) since the previous one (None the first
        time)."""
        now = _now()
        elapsed = (None, None) if self._last_time is None else \
            (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self) -> int | None:
        return self._last_step


class _NeverTriggerTimer(SecondOrStepTimer):
    def __init__(self):
        self.reset()

    def should_trigger_for_step(self, step: int) -> bool:
        return False


# -- helpers --------------------------------------------------------------------------------

GLOBAL_STEP_READ = "__global_step_read"


def _global_step_read(hook: str) -> Tensor:
    """TF's _get_or_create_global_step_read: a copy of the global step (`global_step/add`,
    made once per graph), so that a run which also increments the step can fetch the value
    it had when the copy ran; or TF's RuntimeError naming the hook that needs a global step."""
    from engine import train
    graph = get_default_graph()
    found = graph.get_collection(GLOBAL_STEP_READ)
    if found:
        return found[0]
    step = train.get_global_step(graph)
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook}.")
    with graph.name_scope(None), graph.name_scope(step.op.name + "/"):
        read = graph.as_graph_element(step) + 0
    graph.add_to_collection(GLOBAL_STEP_READ, read)
    return read


def _as_graph_element(obj):
    """A tensor of the default graph from a Tensor or a name (`op` means `op:0`)."""
    graph = get_default_graph()
    if not isinstance(obj, str):
        if getattr(obj, "graph", None) is not graph:
            raise ValueError(f"Passed {obj} should have graph attribute that is equal to "
                             f"current graph {graph}.")
        return obj
    if ":" in obj:
        return graph.as_graph_element(obj)
    element = graph.as_graph_element(obj + ":0")
    op = graph.get_operation_by_name(obj)
    if len(op.outputs) > 1:
        raise ValueError(f"Name {obj} is ambiguous, as this `Operation` has multiple outputs "
                         "(at least 2).")
    return element


def _writer_for(logdir: str):
    from engine.summary import FileWriterCache
    return FileWriterCache.get(logdir)


# -- logging and stopping -------------------------------------------------------------------

class LoggingTensorHook(SessionRunHook):
    """Logs tensors every N local steps, every N seconds, and/or at the end, as
    `tag = value, tag = value (0.123 sec)` at INFO (no time on the first line)."""

    def __init__(self, tensors, every_n_iter: int | None = None,
                 every_n_secs: float | None = None, at_end: bool = False, formatter=None):
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs "
                             "must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if isinstance(tensors, dict):
            self._tag_order = sorted(tensors)
        else:
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        self._tensors = tensors
        self._formatter = formatter
        self._timer = _NeverTriggerTimer() if only_at_end else \
            SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        self._log_at_end = at_end

    def begin(self) -> None:
        self._timer.reset()
        self._iter_count = 0
        self._current = {tag: _as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current) if self._should_trigger else None

    def _log_tensors(self, values: dict) -> None:
        elapsed, _ = self._timer.update_last_triggered_step(self._iter_count)
        with np.printoptions(suppress=True):
            if self._formatter:
                logger.info(self._formatter(values))
                return
            line = ", ".join(f"{tag!s} = {values[tag]!s}" for tag in self._tag_order)
        if elapsed is None:
            logger.info("%s", line)
        else:
            logger.info("%s (%.3f sec)", line, elapsed)

    def after_run(self, run_context, run_values) -> None:
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session) -> None:
        if self._log_at_end:
            self._log_tensors(session.run(self._current))


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches `last_step` (or the step at session
    creation plus `num_steps`)."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step = _global_step_read("StopAtStepHook")

    def after_create_session(self, session, coord) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values) -> None:
        # The fetched value may predate this run's increment; re-read before stopping.
        if int(run_values.results) + 1 >= self._last_step:
            if int(run_context.session.run(self._global_step)) >= self._last_step:
                run_context.request_stop()


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Fails (NanLossDuringTrainingError) or requests a stop when the loss is NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss: bool = True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values) -> None:
        if np.isnan(run_values.results).any():
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                logger.error(message)
                raise NanLossDuringTrainingError
            logger.warning(message)
            run_context.request_stop()


class StepCounterHook(SessionRunHook):
    """Logs (and writes as a summary) `<global step name>/sec: <rate>`; warns when the global
    step does not move for 20 runs in a row."""

    def __init__(self, every_n_steps: int | None = 100, every_n_secs: float | None = None,
                 output_dir: str | None = None, summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step = None
        self._unchanged_runs = 0
        self._steps_per_run = 1

    def begin(self) -> None:
        from engine import train
        self._global_step = _global_step_read("StepCounterHook")
        self._summary_tag = train.get_global_step().op.name + "/sec"
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _writer_for(self._output_dir)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def _log_and_record(self, elapsed_steps: int, elapsed_time: float, global_step: int):
        steps_per_sec = elapsed_steps / elapsed_time
        if self._summary_writer is not None:
            from engine.summary import Summary
            self._summary_writer.add_summary(
                Summary(value=[Summary.Value(tag=self._summary_tag,
                                             simple_value=steps_per_sec)]), global_step)
        logger.info("%s: %g", self._summary_tag, steps_per_sec)

    def after_run(self, run_context, run_values) -> None:
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + self._steps_per_run):
            global_step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(global_step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(global_step)
                if elapsed_time is not None:
                    self._log_and_record(elapsed_steps, elapsed_time, global_step)
        # Some optimizers move the global step only now and then, so warn only after a run of
        # 20 unchanged readings (TF 1.12's counter).
        if stale == self._last_global_step:
            self._unchanged_runs += 1
            if self._unchanged_runs % 20 == 0:
                self._unchanged_runs = 0
                logger.warning(
                    "It seems that global step (tf.train.get_global_step) has not been "
                    "increased. Current value (could be stable): %s vs previous value: %s. You "
                    "could increase the global step by passing tf.train.get_global_step() to "
                    "Optimizer.apply_gradients or Optimizer.minimize.", stale,
                    self._last_global_step)
        else:
            self._unchanged_runs = 0
        self._last_global_step = stale


# -- feeds and final values -----------------------------------------------------------------

class FeedFnHook(SessionRunHook):
    """Feeds `feed_fn()` into every run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class FinalOpsHook(SessionRunHook):
    """Evaluates `final_ops` when the session ends; the values are in final_ops_values."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session) -> None:
        if self._final_ops is None:
            return
        try:
            self._final_ops_values = session.run(self._final_ops,
                                                 feed_dict=self._final_ops_feed_dict)
        except errors.OutOfRangeError:
            logger.warning("An OutOfRangeError was raised by the ops of a FinalOpsHook: they "
                           "depend on an input source, which they should not (evaluate "
                           "metric values, not their update ops).")
            raise
