"""Benchmark: viz.layout.layered_layout on a 10,000-node random DAG, beside networkx's
multipartite_layout on the same layering (which places rows but does not order them).
Run: python bench/bench_layout.py [--nodes N] [--repeat R]"""

from __future__ import annotations

import argparse
import random
import time

import networkx as nx

from viz.layout import assign_layers, layered_layout


def random_dag(count: int, seed: int) -> tuple[list[str], list[tuple[str, str]]]:
    """Each node reads one to three of the 200 nodes before it, like a deep model graph."""
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(count)]
    edges = [
        (nodes[rng.randrange(max(0, i - 200), i)], nodes[i])
        for i in range(1, count)
        for _ in range(rng.randint(1, 3))
    ]
    return nodes, edges


def crossings(positions: dict, edges: list, sample: int = 3000, seed: int = 0) -> int:
    """Crossings among a fixed sample of edges between adjacent rows (a rough quality figure;
    both layouts are judged on the same sample)."""
    rng = random.Random(seed)
    adjacent = [
        (positions[s], positions[d]) for s, d in edges
        if abs(positions[s][1] - positions[d][1]) == 1
    ]
    chosen = rng.sample(adjacent, min(sample, len(adjacent)))
    count = 0
    for i, ((ax0, ay0), (ax1, _)) in enumerate(chosen):
        for (bx0, by0), (bx1, _) in chosen[i + 1:]:
            if ay0 == by0 and (ax0 - bx0) * (ax1 - bx1) < 0:
                count += 1
    return count


def best_time(function, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    nodes, edges = random_dag(args.nodes, seed=0)

    ours, positions = best_time(lambda: layered_layout(nodes, edges), args.repeat)

    def peer() -> dict:
        graph = nx.DiGraph(edges)
        graph.add_nodes_from(nodes)
        nx.set_node_attributes(graph, assign_layers(nodes, edges), "layer")
        return nx.multipartite_layout(graph, subset_key="layer", align="horizontal")

    theirs, peer_positions = best_time(peer, args.repeat)
    layer = assign_layers(nodes, edges)
    peer_rows = {name: (float(xy[0]), -float(layer[name])) for name, xy in peer_positions.items()}
    print(f"graph: {len(nodes)} nodes, {len(edges)} edges, best of {args.repeat}")
    print(f"{'layout':<40} {'seconds':>8} {'crossings (sample)':>20}")
    print(f"{'viz.layered_layout (layers + 4 sweeps)':<40} {ours:>8.3f} "
          f"{crossings(positions, edges):>20}")
    print(f"{'networkx.multipartite_layout (peer)':<40} {theirs:>8.3f} "
          f"{crossings(_rank_rows(peer_rows), edges):>20}")
    print(f"ratio ours/peer: {ours / theirs:.2f}")


def _rank_rows(positions: dict) -> dict:
    """Peer x values are floats scaled to [-1, 1]; ranks make crossings comparable."""
    rows: dict[float, list] = {}
    for name, (x, y) in positions.items():
        rows.setdefault(y, []).append((x, name))
    ranked = {}
    for y, row in rows.items():
        for rank, (_, name) in enumerate(sorted(row)):
            ranked[name] = (float(rank), y)
    return ranked


if __name__ == "__main__":
    main()
