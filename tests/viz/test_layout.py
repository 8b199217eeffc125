"""Layered layout: edges point down the rows, rows have distinct slots, crossings shrink."""

from __future__ import annotations

import random

from viz.layout import assign_layers, layered_layout


def random_dag(count: int, seed: int = 0) -> tuple[list[str], list[tuple[str, str]]]:
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(count)]
    edges = []
    for i in range(1, count):
        for _ in range(rng.randint(1, 3)):
            edges.append((nodes[rng.randrange(max(0, i - 200), i)], nodes[i]))
    return nodes, edges


def assert_layered(positions: dict, edges: list) -> None:
    for src, dst in edges:
        assert positions[src][1] > positions[dst][1], (src, dst)
    slots = [(x, y) for x, y in positions.values()]
    assert len(slots) == len(set(slots))


def test_edges_go_from_lower_to_higher_layer_and_slots_are_distinct():
    nodes, edges = random_dag(300, seed=1)
    positions = layered_layout(nodes, edges)
    assert set(positions) == set(nodes)
    assert_layered(positions, edges)


def test_layer_is_longest_path_and_sources_sit_above_their_first_consumer():
    edges = [("a", "b"), ("b", "c"), ("a", "c"), ("d", "c"), ("e", "b"), ("e", "c")]
    layer = assign_layers(["a", "b", "c", "d", "e", "lonely"], edges)
    assert layer == {"a": 0, "b": 1, "c": 2, "d": 1, "e": 0, "lonely": 0}


def test_ten_thousand_nodes_lay_out():
    nodes, edges = random_dag(10_000, seed=2)
    positions = layered_layout(nodes, edges)
    assert len(positions) == 10_000
    assert_layered(positions, edges)


def test_barycenter_sweeps_undo_a_crossing():
    # Insertion order puts d before c, so the first row order crosses a->c and b->d.
    positions = layered_layout(["a", "b", "d", "c"], [("a", "c"), ("b", "d")])
    assert positions["a"][0] < positions["b"][0]
    assert positions["c"][0] < positions["d"][0]


def test_a_cycle_from_collapsed_scopes_still_places_every_node():
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
    positions = layered_layout(["a", "b", "c", "d"], edges)
    assert set(positions) == {"a", "b", "c", "d"}
    ys = [y for _, y in positions.values()]
    assert len(set(ys)) == 4
    dropped = [e for e in edges if positions[e[0]][1] <= positions[e[1]][1]]
    assert len(dropped) == 1


def test_rows_are_centred_on_zero():
    positions = layered_layout(["r", "a", "b", "c"], [("r", "a"), ("r", "b"), ("r", "c")])
    assert sorted(x for name, (x, _) in positions.items() if name != "r") == [-1.0, 0.0, 1.0]
    assert positions["r"] == (0.0, 0.0)
