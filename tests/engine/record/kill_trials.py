"""Kill -9 fault trials: a heavily logging training process is killed at a random moment, and
the run it leaves must hold every step it reported finished but the last (the step whose
commit was in flight). Used by test_kill_durability.py (a few trials) and
bench/bench_durability.py (many, for the figure).

Trials fork from a zygote: one subprocess imports the engine once, then forks a fresh victim
per trial, so a trial costs the victim's work, not an interpreter start and a torch import.
The zygote speaks lines on stdin/stdout ("trial <logdir> <name>" -> "pid <n>"; "reap <n>" ->
"reaped <n>"); victims report "step <trial> <k>" on the same stdout after step k's work and
logging returned."""

from __future__ import annotations

import dataclasses
import os
import queue
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
LINE_TIMEOUT_S = 120.0
SCALAR_TAGS = tuple(f"metric/{i}" for i in range(8))
IMAGE_EVERY = 5

# The victim: a small recorded MLP session (per-op traces every 10th step) and, per step,
# 8 scalars, a 2,000-value histogram, a text and every 5th step a 28x28 image. The values are
# functions of the step, so the checker knows what each must be.
VICTIM = textwrap.dedent("""
    import sys
    import numpy as np
    import torch
    import engine as tf

    def victim_graph():
        graph = tf.Graph()
        with graph.as_default():
            x = tf.constant(np.random.RandomState(0).rand(32, 64).astype(np.float32))
            w = tf.get_variable("w", [64, 10])
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
            train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
            init = tf.global_variables_initializer()
        return graph, train, init

    def victim(logdir, name, trial):
        torch.set_num_threads(1)
        graph, train, init = victim_graph()
        config = tf.ConfigProto(trace_every_n_steps=10)
        sess = tf.Session(graph=graph, config=config, logdir=logdir, run_name=name)
        sess.run(init)
        writer = sess.run_writer
        step = 0
        while True:
            sess.run(train)
            for index, tag in enumerate(TAGS):
                writer.scalar(tag, step + index / 10, step)
            writer.histogram("values", np.full(2000, float(step)), step)
            writer.text("note", f"step {step}", step)
            if step % IMAGE_EVERY == 0:
                writer.image("picture", np.full((28, 28), step % 256, np.uint8), step)
            sys.stdout.write(f"step {trial} {step}\\n")
            sys.stdout.flush()
            step += 1
""")

ZYGOTE = textwrap.dedent("""
    import os, sys
    TAGS = %r
    IMAGE_EVERY = %d
    WRITER_WAITS = %r
    %s
    if not WRITER_WAITS:   # the peer in bench_durability.py: no back-pressure at boundaries
        from engine.record.committer import Committer
        Committer.wait_durable = lambda self, count: None
    victim_graph()   # every lazy import and first-use cost is paid once, before any fork
    for line in sys.stdin:
        command, *args = line.split()
        if command == "trial":
            logdir, name, trial = args
            pid = os.fork()
            if pid == 0:
                try:
                    victim(logdir, name, trial)
                finally:
                    os._exit(1)
            sys.stdout.write(f"pid {pid}\\n")
            sys.stdout.flush()
        elif command == "reap":
            pid = int(args[0])
            _, status = os.waitpid(pid, 0)
            sys.stdout.write(f"reaped {pid} {os.waitstatus_to_exitcode(status)}\\n")
            sys.stdout.flush()
""")


@dataclasses.dataclass
class TrialResult:
    reported: int          # the last step the victim reported finished (-1: none)
    complete: int          # every step up to this one is fully readable (-1: none)
    exit_code: int
    problems: list[str]    # what the checker found wrong with steps before `reported`

    @property
    def steps_lost(self) -> int:
        """Reported steps the store lacks (the store may hold a step whose report the kill
        cut off: that is not a loss)."""
        return max(self.reported - self.complete, 0)


class Zygote:
    def __init__(self, *, writer_waits: bool = True) -> None:
        code = ZYGOTE % (SCALAR_TAGS, IMAGE_EVERY, writer_waits, VICTIM)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.split())
        self.lines.put(None)

    def _send(self, line: str) -> None:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def _next(self) -> list[str]:
        words = self.lines.get(timeout=LINE_TIMEOUT_S)
        if words is None:
            raise RuntimeError(f"the zygote exited with {self.process.wait()}")
        return words

    def trial(self, logdir: Path, name: str, rng: random.Random) -> TrialResult:
        """Starts a victim, kills it with SIGKILL once it has reported a random number of
        steps (0..60) plus a random fraction of a step, and checks the run it left."""
        self._send(f"trial {logdir} {name} {name}")
        words = self._next()
        assert words[0] == "pid", words
        pid = int(words[1])
        kill_after = rng.randrange(0, 61)
        reported = -1
        while reported < kill_after:
            words = self._next()
            assert words[:2] == ["step", name], words
            reported = int(words[2])
        time.sleep(rng.random() * 0.004)   # anywhere inside the next step (about 2-4 ms)
        os.kill(pid, signal.SIGKILL)
        self._send(f"reap {pid}")
        while (words := self._next())[0] == "step":   # reported before the kill landed
            reported = int(words[2])
        assert words[:2] == ["reaped", str(pid)], words
        complete, problems = check_run(logdir / name, reported)
        return TrialResult(reported, complete, int(words[2]), problems)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def check_run(run_dir: Path, reported: int) -> tuple[int, list[str]]:
    """(the last step up to which every step is fully readable, what is wrong before
    `reported`). Step k is complete when its 8 scalars, histogram, text, image (every 5th)
    and its session step record (run k + 2: run 1 initialised) hold the values written."""
    from engine.record import RunReader
    reader = RunReader(run_dir)
    scalars = {tag: dict(zip(*(a.tolist() for a in reader.scalars(tag))))
               for tag in reader.tags()}
    histograms = {h.step: h for h in reader.histograms("values")} \
        if "values" in reader.histogram_tags() else {}
    texts = {t.step: t.text for t in reader.texts("note")} if "note" in reader.text_tags() \
        else {}
    images = {i.step for i in reader.images("picture")} if "picture" in reader.image_tags() \
        else set()
    runs = {s.step for s in reader.steps()}

    def missing(step: int) -> list[str]:
        wrong = [f"scalar {tag}" for index, tag in enumerate(SCALAR_TAGS)
                 if not np.isclose(scalars.get(tag, {}).get(step, np.nan), step + index / 10)]
        if step not in histograms or histograms[step].max != step:
            wrong.append("histogram")
        if texts.get(step) != f"step {step}":
            wrong.append("text")
        if step % IMAGE_EVERY == 0 and step not in images:
            wrong.append("image")
        if step + 2 not in runs:
            wrong.append(f"session step {step + 2}")
        return wrong

    complete = -1
    while not missing(complete + 1):
        complete += 1
    problems = [f"step {step}: {', '.join(missing(step))}"
                for step in range(complete + 1, reported) if missing(step)]
    info = reader.info()
    if info.num_steps < max(runs, default=-1) + 1:   # the heartbeat may lag; the rows do not
        problems.append(f"info() counts {info.num_steps} steps, the rows hold "
                        f"{max(runs) + 1}")
    return complete, problems
