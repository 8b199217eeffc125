"""Logging helpers for plain training loops: RunWriter (re-exported), log_scalars, a
ScalarLogger context that opens a run, logs per-step values and closes it, and
log_module_graph, which records a PyTorch module's graph."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from engine.record import RunWriter

__all__ = ["RunWriter", "ScalarLogger", "log_module_graph", "log_scalars"]


def log_scalars(writer: RunWriter, step: int, **values: Any) -> None:
    """writer.scalar(tag, value, step) for each keyword; values may be Python numbers, numpy
    scalars or one-element tensors (the writer converts and checks them)."""
    for tag, value in values.items():
        writer.scalar(tag, value, step)


class ScalarLogger:
    """with ScalarLogger("runs", "mlp") as log:
           for step in range(steps): ...; log(step, loss=loss.item(), lr=lr)
    The run is closed (marked finished, or with the exception that ended the loop) on exit."""

    def __init__(self, logdir: str | os.PathLike, name: str | None = None,
                 config: Mapping[str, Any] | None = None) -> None:
        self.writer = RunWriter(logdir, name, config=config)

    @property
    def path(self) -> str:
        return self.writer.path

    def __call__(self, step: int, **values: Any) -> None:
        log_scalars(self.writer, step, **values)

    def graph(self, module: Any, *example_inputs: Any) -> None:
        """log_module_graph into this run."""
        log_module_graph(self.writer, module, *example_inputs)

    def __enter__(self) -> ScalarLogger:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.writer.__exit__(exc_type, exc, tb)


def log_module_graph(writer: RunWriter, module: Any, *example_inputs: Any,
                     concrete_args: Mapping[str, Any] | None = None) -> None:
    """Records a torch.nn.Module's graph (traced with torch.fx, module paths as name scopes)
    as the run's graph, for the Graph page: log_module_graph(writer, model, images[:1]).
    With example inputs every node shows its output shapes and dtypes. A module torch.fx
    cannot trace raises workbench.module_graph.ModuleGraphError, saying why."""
    from workbench.module_graph import module_graph  # torch is imported only when asked

    writer.add_graph(module_graph(module, example_inputs, concrete_args))
