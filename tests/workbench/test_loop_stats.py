"""The Graph page for a recorded while loop: the loop's frame starts collapsed, and the
inspector shows how often a loop node ran in the latest traced step and for how long."""

from __future__ import annotations

import numpy as np

import engine as tf
from engine.record.schema import OpStatRecord
from viz.inspector import node_stats
from workbench import data
from workbench.pages import graph


def test_node_stats_count_executions_and_sum_their_time():
    stats = [OpStatRecord(7, "while/add", "Add", "/cpu:0", 10.0 * i, 10.0 * i + 4.0, 4)
             for i in range(5)] + [OpStatRecord(7, "x", "Placeholder", "/cpu:0", 0.0, 1.0, 4)]
    assert node_stats(stats, "while/add") == {"step": 7, "executions": 5, "total_us": 20.0}
    assert node_stats(stats, "y") is None


def test_a_recorded_loop_shows_its_iteration_count(tmp_path, text_of):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        _, total = tf.while_loop(
            lambda i, acc: i < 6, lambda i, acc: (i + 1, tf.add(acc, x, name="accumulate")),
            [tf.constant(0), tf.zeros([3])])
    config = tf.ConfigProto(trace_every_n_steps=1)
    with tf.Session(graph=g, config=config, logdir=str(tmp_path), run_name="loop") as sess:
        np.testing.assert_array_equal(sess.run(total, {x: np.ones(3, np.float32)}),
                                      np.full(3, 6.0))
    data.set_logdir(tmp_path)
    try:
        assert "while" not in data.graph_first_view("loop")
        # "while/accumulate" is also a scope (its Enter), so the op is drawn as "(accumulate)"
        panel = graph.inspect("loop", "while/accumulate/(accumulate)", None)
        assert "ran 6 times" in text_of(panel)
        panel = graph.inspect("loop", "x", None)
        assert "did not run" in text_of(panel)    # a fed placeholder does not run
    finally:
        data.set_logdir("runs")
