"""tf.train.SummarySaverHook (TF_BEHAVIOUR 8.7): fetches the summaries on trigger steps only,
writes a SessionLog START first, and tags each summary with the post-run global step."""

from __future__ import annotations

from engine.summary.proto import SessionLog
from engine.summary.writer import FileWriterCache
from engine.train.hooks import SecondOrStepTimer, _global_step_read
from engine.train.session_run_hook import SessionRunArgs, SessionRunHook


class SummarySaverHook(SessionRunHook):
    """Saves the summaries every save_steps steps or save_secs seconds into output_dir (its
    FileWriterCache writer) or summary_writer. Give exactly one of scaffold and summary_op."""

    def __init__(self, save_steps: int | None = None, save_secs: float | None = None,
                 output_dir=None, summary_writer=None, scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._next_step: int | None = None
        self._request_summary = False
        self._global_step = None

    def begin(self) -> None:
        # The global step first: without one no run folder is opened for nothing.
        self._global_step = _global_step_read("SummarySaverHook")
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step = None

    def before_run(self, run_context) -> SessionRunArgs:
        self._request_summary = (self._next_step is None
                                 or self._timer.should_trigger_for_step(self._next_step))
        requests = {"global_step": self._global_step}
        if self._request_summary and self._summary_ops():
            requests["summary"] = self._summary_ops()
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values) -> None:
        if not self._summary_writer:
            return
        global_step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            global_step = int(run_context.session.run(self._global_step))
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START),
                                                 global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            for summary in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(summary, global_step)
        self._next_step = global_step + 1

    def end(self, session=None) -> None:
        if self._summary_writer:
            self._summary_writer.flush()

    def _summary_ops(self) -> list:
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return []
        return list(op) if isinstance(op, (list, tuple)) else [op]
