"""The Graph page's first view (no expansion in the address): the default expansion when
its drawing fits the window at a readable zoom, else the same with its biggest outer scopes
closed one by one until it does, so the first thing a user sees has text they can read."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator, Sequence

from viz.fit_layout import rects_fit_zoom
from viz.graph_labels import drawn
from viz.hierarchy import Hierarchy, default_expansion, hierarchy_view

# At 0.6 the 11 px labels draw at about 7 px: the smallest that still reads.
READABLE_ZOOM = 0.6
MAX_TRIES = 12                 # drawings measured at most (each is a layout)


def closings(hierarchy: Hierarchy, expanded: frozenset[str]) -> Iterator[frozenset[str]]:
    """`expanded`, then it with its biggest open group closed (the one that draws the most
    leaves: an outermost one; what it holds closes with it), and so on until none is open."""
    current = hierarchy_view(hierarchy, expanded).expanded
    yield current
    while current:
        drawn_view = hierarchy_view(hierarchy, current)
        parents = {node.id: node.parent for node in drawn_view.nodes}
        under: Counter = Counter()
        for leaf in drawn_view.leaves():
            parent = leaf.parent
            while parent:
                under[parent] += 1
                parent = parents[parent]
        biggest = max(sorted(current), key=lambda gid: under[gid])
        current = frozenset(gid for gid in current if gid != biggest
                            and biggest not in _above(parents, gid))
        yield current


def _above(parents: dict[str, str], gid: str) -> list[str]:
    chain = []
    while parents.get(gid, ""):
        gid = parents[gid]
        chain.append(gid)
    return chain


def first_view(hierarchy: Hierarchy, zoom_of: Callable[[frozenset[str]], float],
               least: float = READABLE_ZOOM) -> frozenset[str]:
    """The first of closings(default expansion) whose drawing fits at `least` or more
    (`zoom_of(expanded)`: the fit zoom of its drawing); after MAX_TRIES, or when none
    does, the one of those tried that fits largest."""
    if not least > 0:
        raise ValueError(f"the least readable zoom must be positive, got {least!r}")
    best, best_zoom = frozenset(), -1.0
    for expanded in itertools.islice(closings(hierarchy, default_expansion(hierarchy)),
                                     MAX_TRIES):
        zoom = zoom_of(expanded)
        if zoom >= least:
            return expanded
        if zoom > best_zoom:
            best, best_zoom = expanded, zoom
    return best


def element_fit_zoom(elements: Sequence[dict]) -> float:
    """The zoom at which graph_elements' drawing fits the Graph page's canvas at 1280x800
    (its footprints, title bands included; viz.fit_layout.CANVAS)."""
    found = drawn([e for e in elements if "source" not in e["data"]])
    return rects_fit_zoom(found.footprints.values())
