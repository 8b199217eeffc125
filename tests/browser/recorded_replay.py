"""Runs recorded by real Sessions for the Replay tests: one on CPU:0 and two virtual GPUs with
Send/Recv transfers and a while loop, some steps traced and a loss curve; one stopped by a
NaN alert (check_numerics); one that recorded a single step; one with no step at all."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

import engine as tf
from engine.record import RunWriter

LOOP_ITERATIONS = 4


@dataclass(frozen=True)
class ReplayRuns:
    logdir: Path
    run: str                   # 6 steps (1-6), steps 2 and 4 traced, scalar "loss" at each
    steps: tuple[int, ...]
    traced: tuple[int, ...]
    loop_node: str             # runs LOOP_ITERATIONS times in each traced step
    alert_run: str             # steps 1-2 fine, step 3 makes a NaN (the alert), then stops
    alert_step: int
    one_step: str              # one untraced step, no graph-changing surprise
    no_steps: str              # a graph and scalars, no Session.run


def _mlp_with_loop():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [16, 16], name="x")
        with tf.device("/gpu:0"), tf.name_scope("layer1"):
            h = tf.matmul(x, x, name="MatMul")
        with tf.device("/gpu:1"), tf.name_scope("layer2"):
            y = tf.tanh(tf.matmul(h, x, name="MatMul"), name="Tanh")
        with tf.device("/cpu:0"):
            total = tf.reduce_sum(y, name="total")
            _, acc = tf.while_loop(
                lambda i, a: i < LOOP_ITERATIONS,
                lambda i, a: (i + 1, tf.add(a, total, name="accumulate")),
                [tf.constant(0), tf.constant(0.0)])
            loss = tf.identity(acc, name="loss")
    return g, x, loss


def record_replay_runs(logdir: Path) -> ReplayRuns:
    logdir = Path(logdir)
    g, x, loss = _mlp_with_loop()
    full = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    config = tf.ConfigProto(virtual_gpus=2, trace_every_n_steps=0)
    rng = np.random.RandomState(0)
    traced = (2, 4)
    with tf.Session(graph=g, config=config, logdir=str(logdir), run_name="replay") as sess:
        for step in range(1, 7):
            value = sess.run(loss, {x: rng.rand(16, 16).astype(np.float32) / 16},
                             options=full if step in traced else None)
            sess.run_writer.scalar("loss", float(value) / (step * step), step)
    alert_step = _record_alert_run(logdir)
    with tf.Session(graph=g, config=config, logdir=str(logdir), run_name="one-step") as sess:
        sess.run(loss, {x: np.ones((16, 16), np.float32)})
    with RunWriter(logdir, "no-steps") as writer:
        writer.add_graph(g)
        writer.scalar("loss", 1.0, 0)
    return ReplayRuns(logdir, "replay", (1, 2, 3, 4, 5, 6), traced, "while/accumulate",
                      "alerting", alert_step, "one-step", "no-steps")


def _record_alert_run(logdir: Path) -> int:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        loss = tf.reduce_mean(tf.log(x), name="loss")
    config = tf.ConfigProto(check_numerics=True, trace_every_n_steps=1)
    with tf.Session(graph=g, config=config, logdir=str(logdir), run_name="alerting") as sess:
        for step, sign in ((1, 1.0), (2, 1.0), (3, -1.0)):
            try:
                value = sess.run(loss, {x: np.full(4, sign * (step + 1), np.float32)})
            except tf.errors.InvalidArgumentError:
                return step
            sess.run_writer.scalar("train/loss", float(value), step)
    raise AssertionError("the alert run made no NaN")


def record_training_counter_run(logdir: Path, name: str = "counted", steps: int = 8,
                                eval_every: int = 3) -> str:
    """A run whose loss is logged by the script's own training step (from 0), as the demo
    does, while its Session steps also count the initializer run and an evaluation run every
    `eval_every` training steps: the two numberings drift apart."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        w = tf.Variable(tf.ones([4]), name="w")
        loss = tf.reduce_sum(tf.square(w * x), name="loss")
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    feed = np.linspace(0.5, 1.0, 4).astype(np.float32)
    with tf.Session(graph=g, config=tf.ConfigProto(trace_every_n_steps=0),
                    logdir=str(logdir), run_name=name) as sess:
        sess.run(init)
        for step in range(steps):
            _, value = sess.run([train, loss], {x: feed})
            sess.run_writer.scalar("loss", float(value), step)
            if step % eval_every == eval_every - 1:
                sess.run(loss, {x: feed})
    return name
