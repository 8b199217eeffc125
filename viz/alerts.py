"""NaN/Inf alerts as the Alerts page lists them: the first occurrence of each (node, kind) in
a run with how often it recurred, and short readable statistics of the tensors involved."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.record.schema import INF, NAN, NAN_AND_INF, AlertRecord, TensorSummaryRecord

KIND_TEXT = {NAN: "NaN", INF: "Inf", NAN_AND_INF: "NaN and Inf"}


@dataclass(frozen=True)
class FirstAlert:
    run: str
    alert: AlertRecord          # the first occurrence (lowest step, then first written)
    occurrences: int            # how many steps this node raised this kind of alert
    last_step: int


def first_occurrences(run: str, alerts: Iterable[AlertRecord]) -> list[FirstAlert]:
    """One entry per (node, kind), at its first step, in the order they first happened."""
    groups: dict[tuple[str, str], list[AlertRecord]] = {}
    for alert in sorted(alerts, key=lambda a: (a.step, a.seq)):
        groups.setdefault((alert.node, alert.kind), []).append(alert)
    return [FirstAlert(run, found[0], len(found), found[-1].step) for found in groups.values()]


def in_order(entries: Sequence[FirstAlert]) -> list[FirstAlert]:
    """Several runs' first alerts, earliest wall time first (where they came from)."""
    return sorted(entries, key=lambda e: (e.alert.wall_time, e.run, e.alert.step))


def _number(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.4g}"


def tensor_text(summary: TensorSummaryRecord) -> str:
    """`x:0 float32[64, 10]: min -3.2 max 4.1 mean 0.02; 3 NaN, 1 +Inf of 640`."""
    shape = ", ".join(str(d) for d in summary.shape)
    counts = [f"{n} {label}" for n, label in ((summary.nan_count, "NaN"),
                                              (summary.pos_inf_count, "+Inf"),
                                              (summary.neg_inf_count, "-Inf")) if n]
    bad = f"; {', '.join(counts)} of {summary.count}" if counts else f"; {summary.count} finite"
    return (f"{summary.node} {summary.dtype}[{shape}]: min {_number(summary.min)} max "
            f"{_number(summary.max)} mean {_number(summary.mean)}{bad}")
