"""Placement records as table rows and as TensorFlow's log_device_placement text, with the
soft-fallback flag the UI highlights."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from engine.record.schema import SOFT_FALLBACK, PlacementRecord

COLUMNS = ("node", "op", "requested", "assigned", "reason", "detail")


def is_soft_fallback(record: PlacementRecord) -> bool:
    return record.reason == SOFT_FALLBACK


def log_line(record: PlacementRecord) -> str:
    """The recorded line, or TF's stdout format when the engine left it empty."""
    return record.log_line or f"{record.node}: ({record.op}): {record.assigned}"


def placement_log_text(placements: Iterable[PlacementRecord]) -> str:
    return "\n".join(log_line(record) for record in placements)


def placement_rows(placements: Iterable[PlacementRecord]) -> list[dict]:
    """One row per record in placement order; `soft_fallback` is "yes"/"" for table filters."""
    return [
        {**{column: getattr(record, column) for column in COLUMNS},
         "soft_fallback": "yes" if is_soft_fallback(record) else ""}
        for record in placements
    ]


def filter_placement_rows(rows: Sequence[dict], text: str = "",
                          reasons: Iterable[str] = (), devices: Iterable[str] = ()) -> list[dict]:
    """Rows whose node, op or detail contains `text` (case-insensitive) and whose reason and
    assigned device are among the chosen ones (an empty choice means all)."""
    needle = text.strip().lower()
    reasons, devices = set(reasons), set(devices)
    return [
        row for row in rows
        if (not needle or any(needle in row[key].lower() for key in ("node", "op", "detail")))
        and (not reasons or row["reason"] in reasons)
        and (not devices or row["assigned"] in devices)
    ]
