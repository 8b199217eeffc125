"""Label and route audit of the graphs a user opens (the demo MLP, its partition view, the
Inception-sized sample and its tower variant, the digits CNN/MLP quantized graphs): at the
first view, after opening each first-view group one by one, and after each "Expand a level",
the overlaps of labels (viz.graph_labels), edges through boxes they do not belong to
(viz.edge_routes.crossings) and the zoom at which the figure fits the 1280x800 page's
canvas (with the page's first view, viz.first_view, where it closes scopes of the default
expansion; the partition view's own, as `partition=1` in the address opens). Not a test
(tests/viz/test_graph_labels.py pins the same with no overlap).

Usage: python bench/bench_graph_labels.py [--graphs demo inception towers digits]"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "sample_graphs")]

from engine.runtime.recording import graph_record  # noqa: E402
from viz.edge_routes import crossings, geometry, route  # noqa: E402
from viz.first_view import element_fit_zoom, first_view  # noqa: E402
from viz.graph_elements import NO_STEP, graph_elements  # noqa: E402
from viz.graph_labels import drawn, element_overlaps  # noqa: E402
from viz.hierarchy import (  # noqa: E402
    build_hierarchy,
    default_expansion,
    expand_level_within,
    hierarchy_view,
)

CANVAS = (1280 - 360, 800 - 300)     # the graph canvas at 1280x800 (inspector, controls)
EXPAND_LIMIT = 300


def audit(elements) -> dict:
    found = drawn([e for e in elements if "source" not in e["data"]])
    parents = {e["data"]["id"]: e["data"].get("parent", "") for e in elements
               if "source" not in e["data"]}
    at = {i: ((r[0] + r[2]) / 2, (r[1] + r[3]) / 2) for i, r in found.leaves.items()}
    sizes = {i: (r[2] - r[0], r[3] - r[1]) for i, r in found.leaves.items()}
    titles = {e["data"]["id"]: e["data"].get("label", "") for e in elements
              if "source" not in e["data"] and "position" not in e}
    geo = geometry(parents, at, sizes, titles)
    pairs = [(e["data"]["source"], e["data"]["target"]) for e in elements
             if "source" in e["data"]]
    routes = {pair: route(geo, *pair) for pair in pairs}
    found_overlaps = element_overlaps(elements)
    kinds = Counter(f"{o.label.kind}/{o.what}" for o in found_overlaps)
    rects = list(found.footprints.values())
    width = max(r[2] for r in rects) - min(r[0] for r in rects) + 56
    height = max(r[3] for r in rects) - min(r[1] for r in rects) + 56
    zoom = min(CANVAS[0] / width, CANVAS[1] / height)
    return {"leaves": len(found.leaves), "overlaps": len(found_overlaps), "kinds": dict(kinds),
            "through": crossings(geo, pairs, routes, boxes_only=False),
            "zoom": round(zoom, 2), "examples": found_overlaps[:3]}


def demo_graph():
    """The demo's MLP as the demo records it (4 steps on CPU:0 and 2 virtual GPUs): its
    graph, placements, cut edges and last traced step, for the partition view's labels."""
    import tempfile

    from engine.record.reader import open_run
    from viz.graph_elements import step_facts
    from workbench.demo import train_mlp
    path, _ = train_mlp(tempfile.mkdtemp(prefix="labels-demo-"), "demo", 0.1, steps=4)
    reader = open_run(path)
    record = reader.graph()
    step = reader.last_traced_step()
    facts = step_facts(step, reader.step_stats(step), reader.transfers(step))
    return record, reader.placements(record.version), reader.cut_edges(None), facts


def sample(name: str):
    import inception_like
    return graph_record(inception_like.BUILDERS[name]().as_graph_def()), [], (), None


def quantized(name: str):
    from engine.compression import quantize
    from engine.graph_io import load_graph_def
    graph_def = load_graph_def(ROOT / "sample_graphs" / f"{name}_frozen.json")
    return graph_record(quantize(graph_def, "eightbit").graph_def), [], (), None


def views(tree, zoom_of):
    first = default_expansion(tree)
    page = first_view(tree, zoom_of)
    if page != first:
        yield "page's first view (viz.first_view)", page
    yield "first view" if page == first else "default expansion", first
    shown = hierarchy_view(tree, first)
    for node in shown.nodes:
        if not node.expanded and node.kind != "op":
            yield f"+ {node.id}", first | {node.id}
    current = first
    for level in range(1, 4):
        deeper, opened, _ = expand_level_within(tree, current, EXPAND_LIMIT)
        if deeper == current:
            break
        current = deeper
        yield f"expand a level x{level} ({opened} opened)", current


def report(name: str, record, placements, cuts, facts, partition: bool = False) -> None:
    tree = build_hierarchy(record)
    totals = Counter()

    def zoom_of(expanded):       # of the view drawn, as the page measures its first view
        return element_fit_zoom(graph_elements(
            hierarchy_view(tree, expanded), record, placements, partition=partition,
            cuts=cuts if partition else ())[0])
    for title, expanded in views(tree, zoom_of):
        start = time.perf_counter()
        elements, _ = graph_elements(hierarchy_view(tree, expanded), record, placements,
                                     facts=facts or NO_STEP, partition=partition,
                                     cuts=cuts if partition else ())
        took = time.perf_counter() - start
        found = audit(elements)
        totals["views"] += 1
        totals["overlaps"] += found["overlaps"]
        labelled = sum(1 for e in elements if e["data"].get("label") and "source" in e["data"])
        print(f"{name:22} {title[:44]:44} edge labels {labelled:3} leaves "
              f"{found['leaves']:4} overlaps {found['overlaps']:4} {found['kinds']} "
              f"through-box {found['through']} "
              f"fit-zoom {found['zoom']} ({took * 1000:.0f} ms)")
    print(f"{name}: {totals['overlaps']} overlaps over {totals['views']} views")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", nargs="*", default=["demo", "inception", "towers",
                                                        "digits"])
    args = parser.parse_args()
    if "demo" in args.graphs:
        found = demo_graph()
        report("demo", *found)
        report("demo partition", *found, partition=True)
    if "inception" in args.graphs:
        report("inception_v3", *sample("inception_v3"))
    if "towers" in args.graphs:
        report("towers", *sample("towers"))
    if "digits" in args.graphs:
        for name in ("digits_mlp", "digits_cnn"):
            report(f"{name} quantized", *quantized(name))


if __name__ == "__main__":
    main()
