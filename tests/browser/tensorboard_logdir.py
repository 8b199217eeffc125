"""A log directory with one of our runs and TensorBoard runs beside it, for the workbench
and browser tests of event-file runs: `ours` (RunWriter), `tb_torch` (written by
torch.utils.tensorboard.SummaryWriter: scalars, a histogram, text) and, when asked,
`tb_tf` (the TF-written fixture, which holds a graph)."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.record import RunWriter

TF_FIXTURE = Path(__file__).resolve().parents[1] / "engine" / "record" / "fixtures" / "tf_run"
OURS, TORCH, TF = "ours", "tb_torch", "tb_tf"
STEPS = 30
WALL0 = 1_700_000_000.0


@dataclass(frozen=True)
class MixedLogdir:
    logdir: Path
    ours: str
    torch: str
    tf: str | None
    torch_loss: tuple[float, ...]      # float32 values, as the event file holds them


def torch_loss(step: int) -> float:
    return float(np.float32(2.0 / (step + 1) + 0.01 * step))


def write_mixed_logdir(logdir: Path, with_tf: bool = True) -> MixedLogdir:
    from torch.utils.tensorboard import SummaryWriter

    logdir.mkdir(parents=True, exist_ok=True)
    with RunWriter(logdir, OURS) as writer:
        for step in range(STEPS):
            writer.scalar("loss", 1.0 / (step + 1), step)
            writer.scalar("accuracy", step / STEPS, step)
    tb = SummaryWriter(str(logdir / TORCH))
    for step in range(STEPS):
        tb.add_scalar("loss", torch_loss(step), step, walltime=WALL0 + step)
        tb.add_scalar("lr", 0.1, step, walltime=WALL0 + step)
    tb.add_histogram("weights", np.linspace(-1.0, 1.0, 50), STEPS - 1, walltime=WALL0)
    tb.add_text("notes", "written by torch", 0, walltime=WALL0)
    tb.close()
    if with_tf:
        shutil.copytree(TF_FIXTURE, logdir / TF)
    _age(logdir)
    return MixedLogdir(logdir, OURS, TORCH, TF if with_tf else None,
                       tuple(torch_loss(step) for step in range(STEPS)))


def _age(logdir: Path) -> None:
    """Event files last written an hour ago: finished, not being written."""
    stale = time.time() - 3600
    for folder in logdir.iterdir():
        if folder.name != OURS:
            for path in folder.iterdir():
                os.utime(path, (stale, stale))
