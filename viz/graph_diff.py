"""The structural diff of two recorded graphs (nodes added, removed, changed by field) and
the compare page's painting of drawn elements by diff status. Pure: records in, plain
data out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from engine.record.schema import GraphRecord, NodeRecord
from viz.graph_elements import repainted_leaves

ADDED = "added"            # in B only
REMOVED = "removed"        # in A only
CHANGED = "changed"        # in both, with a different op, inputs, device request or attrs
UNCHANGED = "unchanged"
FIELDS = ("op", "inputs", "device", "attrs")
STATUS_COLORS = {ADDED: "#2ca02c", REMOVED: "#d62728", CHANGED: "#ff7f0e",
                 UNCHANGED: "#e4e7eb"}
STATUS_TEXT = {ADDED: "#ffffff", REMOVED: "#ffffff", CHANGED: "#111111",
               UNCHANGED: "#333333"}
SHOWN_VALUE = 60           # characters of a changed value the table shows
_MISSING = object()        # an attr one node has and the other lacks


@dataclass(frozen=True)
class NodeChange:
    name: str
    fields: tuple[str, ...]            # of FIELDS, in that order
    details: tuple[str, ...]           # one "field: A -> B" per field


@dataclass(frozen=True)
class GraphDiff:
    added: tuple[str, ...]             # B's order
    removed: tuple[str, ...]           # A's order
    changed: tuple[NodeChange, ...]    # B's order
    unchanged: int

    @property
    def same(self) -> bool:
        return not (self.added or self.removed or self.changed)


def _clip(text: str) -> str:
    return text if len(text) <= SHOWN_VALUE else text[:SHOWN_VALUE - 1] + "…"


def _detail(field: str, a: NodeRecord, b: NodeRecord) -> str:
    if field == "inputs":
        return f"inputs: {_clip(', '.join(a.inputs)) or '(none)'} -> " \
               f"{_clip(', '.join(b.inputs)) or '(none)'}"
    if field == "attrs":
        keys = sorted(set(a.attrs) | set(b.attrs), key=str)
        differ = [str(k) for k in keys if a.attrs.get(k, _MISSING) != b.attrs.get(k, _MISSING)]
        return f"attrs: {_clip(', '.join(differ))}"
    before, after = getattr(a, field), getattr(b, field)
    return f"{field}: {_clip(before) or '(none)'} -> {_clip(after) or '(none)'}"


def node_change(a: NodeRecord, b: NodeRecord) -> NodeChange | None:
    """What differs between two nodes of one name, or None when nothing does (the creation
    site and output specs are not compared: they follow from the rest or from the code)."""
    fields = tuple(f for f in FIELDS if getattr(a, f) != getattr(b, f))
    if not fields:
        return None
    return NodeChange(b.name, fields, tuple(_detail(f, a, b) for f in fields))


def graph_diff(a: GraphRecord | None, b: GraphRecord | None) -> GraphDiff:
    """B against A: a missing graph counts as an empty one."""
    nodes_a = {node.name: node for node in (a.nodes if a else ())}
    nodes_b = {node.name: node for node in (b.nodes if b else ())}
    added = tuple(name for name in nodes_b if name not in nodes_a)
    removed = tuple(name for name in nodes_a if name not in nodes_b)
    changed, unchanged = [], 0
    for name, node in nodes_b.items():
        if name in nodes_a:
            change = node_change(nodes_a[name], node)
            if change is None:
                unchanged += 1
            else:
                changed.append(change)
    return GraphDiff(added, removed, tuple(changed), unchanged)


def summary(diff: GraphDiff) -> str:
    if diff.same:
        return f"The graphs are the same ({diff.unchanged} nodes)."
    return (f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} "
            f"changed, {diff.unchanged} unchanged.")


def rows(diff: GraphDiff) -> list[dict]:
    """The table's rows: removed, then added, then changed; name, status, what differs."""
    return ([{"name": name, "status": REMOVED, "detail": "only in A"} for name in diff.removed]
            + [{"name": name, "status": ADDED, "detail": "only in B"} for name in diff.added]
            + [{"name": c.name, "status": CHANGED, "detail": "; ".join(c.details)}
               for c in diff.changed])


def side_statuses(diff: GraphDiff, side: str) -> dict[str, str]:
    """Status of each node name that differs, as side "a" or "b" draws it (A has the removed
    nodes, B the added ones); names absent are unchanged."""
    if side not in ("a", "b"):
        raise ValueError(f"side must be 'a' or 'b', got {side!r}")
    own = diff.removed if side == "a" else diff.added
    statuses = {name: (REMOVED if side == "a" else ADDED) for name in own}
    statuses.update({change.name: CHANGED for change in diff.changed})
    return statuses


def leaf_status(members: Iterable[str], statuses: Mapping[str, str]) -> str:
    """One status for a drawn leaf: its op's, or for a closed scope the one all its members
    share, else "changed" when any member differs."""
    found = {statuses.get(name, UNCHANGED) for name in members}
    if len(found) == 1:
        return found.pop()
    return CHANGED if found - {UNCHANGED} else UNCHANGED


def painted(elements: Sequence[dict], members: Mapping[str, Sequence[str]],
            statuses: Mapping[str, str]) -> list[dict]:
    """Copies of the graph page's elements with each leaf coloured by its diff status (the
    originals are the graph page's cached ones and stay as they are)."""
    def paint(names: Sequence[str]) -> tuple[dict, str]:
        status = leaf_status(names, statuses)
        return ({"color": STATUS_COLORS[status], "text": STATUS_TEXT[status], "diff": status},
                f" diff-{status}")
    return repainted_leaves(elements, members, paint)
