"""Name scopes of a recorded graph: every scope a node name implies and the scopes that are
while-loop frames. viz.hierarchy groups and draws them."""

from __future__ import annotations

from engine.record.schema import GraphRecord

OP = "op"
SCOPE = "scope"


def all_scopes(graph: GraphRecord) -> frozenset[str]:
    """Every proper name prefix: "a/b/c" lives in scopes "a" and "a/b"."""
    scopes: set[str] = set()
    for node in graph.nodes:
        parts = node.name.split("/")
        scopes.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
    return frozenset(scopes)


def loop_frames(graph: GraphRecord) -> frozenset[str]:
    """The scopes of while loops: those that directly hold a LoopCond (`while`, `rnn/while`,
    `map/while`), as TF's while_loop names its frame."""
    return frozenset(node.name.rpartition("/")[0] for node in graph.nodes
                     if node.op == "LoopCond" and "/" in node.name)

