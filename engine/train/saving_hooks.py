"""The hooks that write files while training runs (TF_BEHAVIOUR 8.8, 8.11):
CheckpointSaverHook with its CheckpointSaverListeners, and ProfilerHook's Chrome traces."""

from __future__ import annotations

import logging
import os

from engine.graph import get_default_graph
from engine.train.hooks import SecondOrStepTimer, _global_step_read, _writer_for
from engine.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = [
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "ProfilerHook",
]

logger = logging.getLogger("engine.train")


class CheckpointSaverListener:
    """Called around each save of a CheckpointSaverHook; after_save returning True asks the
    training to stop."""

    def begin(self) -> None:
        pass

    def before_save(self, session, global_step_value: int) -> None:
        pass

    def after_save(self, session, global_step_value: int):
        pass

    def end(self, session, global_step_value: int) -> None:
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves `<checkpoint_dir>/<basename>-<step>` every save_steps steps or save_secs
    seconds, right after session creation, and at the end if the last step is not saved."""

    def __init__(self, checkpoint_dir: str, save_secs: float | None = None,
                 save_steps: int | None = None, saver=None,
                 checkpoint_basename: str = "model.ckpt", scaffold=None, listeners=None,
                 save_graph_def: bool = True):
        logger.info("Create CheckpointSaverHook.")
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._steps_per_run = 1
        self._save_graph_def = save_graph_def

    def begin(self) -> None:
        self._global_step = _global_step_read("CheckpointSaverHook")
        self._summary_writer = _writer_for(self._checkpoint_dir)
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord) -> None:
        from engine.train.meta_graph import write_graph_json
        global_step = int(session.run(self._global_step))
        graph = get_default_graph()
        if self._save_graph_def:
            write_graph_json(graph, os.path.join(self._checkpoint_dir, "graph.json"))
        self._summary_writer.add_graph(graph)
        self._save(session, global_step)
        self._timer.update_last_triggered_step(global_step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values) -> None:
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + self._steps_per_run):
            global_step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(global_step):
                self._timer.update_last_triggered_step(global_step)
                if self._save(run_context.session, global_step):
                    run_context.request_stop()

    def end(self, session) -> None:
        last_step = int(session.run(self._global_step))
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _save(self, session, step: int) -> bool:
        """Saves; True when a listener asks to stop."""
        from engine.summary import SessionLog
        logger.info("Calling checkpoint listeners before saving checkpoint %d...", step)
        for listener in self._listeners:
            listener.before_save(session, step)
        logger.info("Saving checkpoints for %d into %s.", step, self._save_path)
        self._get_saver().save(session, self._save_path, global_step=step,
                               write_meta_graph=self._save_graph_def)
        self._summary_writer.add_session_log(
            SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path), step)
        logger.info("Calling checkpoint listeners after saving checkpoint %d...", step)
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                logger.info("A CheckpointSaverListener requested that training be stopped. "
                            "listener: %s", listener)
                should_stop = True
        return should_stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        from engine.train.saver import SAVERS
        savers = get_default_graph().get_collection(SAVERS)
        if not savers:
            raise RuntimeError(f"No items in collection {SAVERS}. Please add a saver to the "
                               "collection or provide a saver or scaffold.")
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {SAVERS}. Please indicate "
                               "which one to use by passing it to the constructor.")
        self._saver = savers[0]
        return self._saver


# -- profiling ------------------------------------------------------------------------------

class ProfilerHook(SessionRunHook):
    """Every save_steps steps or save_secs seconds (never on the very first run) asks for a
    FULL_TRACE and writes `<output_dir>/timeline-<global step>.json`, a Chrome trace."""

    def __init__(self, save_steps: int | None = None, save_secs: float | None = None,
                 output_dir: str = "", show_dataflow: bool = True, show_memory: bool = False):
        self._output_dir = output_dir
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._show_dataflow = show_dataflow
        self._show_memory = show_memory
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        self._next_step = None
        self._global_step = _global_step_read("ProfilerHook")
        self._file_writer = _writer_for(self._output_dir or os.curdir)

    def before_run(self, run_context):
        from engine.runtime.config import RunOptions
        self._request_trace = (self._next_step is not None
                               and self._timer.should_trigger_for_step(self._next_step))
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._request_trace else None
        return SessionRunArgs({"global_step": self._global_step}, options=options)

    def after_run(self, run_context, run_values) -> None:
        stale = int(run_values.results["global_step"])
        if self._next_step is None:
            self._timer.update_last_triggered_step(stale)
        global_step = stale + 1
        if self._request_trace:
            global_step = int(run_context.session.run(self._global_step))
            self._timer.update_last_triggered_step(global_step)
            self._save(global_step, self._output_file.format(global_step),
                       run_values.run_metadata.step_stats)
            self._file_writer.add_run_metadata(run_values.run_metadata, f"step_{global_step}",
                                               global_step)
        self._next_step = global_step + 1

    def _save(self, step: int, path: str, step_stats) -> None:
        from engine.runtime.timeline import Timeline
        logger.info("Saving timeline for %d into '%s'.", step, path)
        trace = Timeline(step_stats).generate_chrome_trace_format(
            show_dataflow=self._show_dataflow, show_memory=self._show_memory)
        with open(path, "w", encoding="utf-8") as f:
            f.write(trace)
