"""viz.scopes: the name scopes a graph's node names imply, and its while-loop frames."""

from __future__ import annotations

from viz_records import make_node

from engine.record.schema import GraphRecord
from viz.scopes import all_scopes, loop_frames


def test_scopes_are_proper_prefixes(mlp):
    graph, _ = mlp
    assert all_scopes(graph) == {"layer1", "layer1/weights", "layer2", "loss"}


def test_loop_frames_are_the_scopes_that_hold_a_loop_cond():
    nodes = [make_node("x", "Placeholder"),
             make_node("rnn/while/Merge", "Merge", ("x",)),
             make_node("rnn/while/LoopCond", "LoopCond", ("rnn/while/Merge",)),
             make_node("rnn/while/cell/MatMul", "MatMul", ("rnn/while/Merge",)),
             make_node("LoopCond", "LoopCond", ("x",))]       # no scope: no frame to draw
    assert loop_frames(GraphRecord(1, tuple(nodes))) == {"rnn/while"}
