"""The Quantization page's pictures from recorded comparisons: SQNR colour bins and legend,
graph elements painted by the SQNR of the original node each leaf stands for (the flagged
one marked), the two outputs' histograms and the error's, the metrics and the cost table."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
import plotly.io as pio

from engine.record.schema import (
    QuantizationComparisonRecord,
    QuantizationCostRecord,
    QuantizationNodeRecord,
)
from viz.graph_elements import repainted_leaves

ORIGINAL, QUANTIZED = "original", "quantized"
SIDES = (ORIGINAL, QUANTIZED)
# Low to high SQNR: Paul Tol's colour-blind-safe "sunset" ends (red below the threshold,
# blue where exact), grey where nothing was compared.
BELOW_COLOR = "#d6604d"
EXACT_COLOR = "#2166ac"
UNCOMPARED_COLOR = "#d9d9d9"
BIN_COLORS = ("#f4a582", "#fddbc7", "#92c5de", "#4393c3")
BIN_WIDTH_DB = 10.0
FLAGGED_OUTLINE = "#111111"
ORIGINAL_COLOR, QUANTIZED_COLOR, ERROR_COLOR = "#0072b2", "#e69f00", "#cc79a7"


@dataclass(frozen=True)
class SqnrBin:
    label: str
    color: str
    text: str = "#111111"


def sqnr_bins(threshold_db: float) -> tuple[SqnrBin, ...]:
    """Below the threshold, four 10 dB bands above it (the last open), exact, not compared."""
    bands = []
    for k, color in enumerate(BIN_COLORS):
        low = threshold_db + k * BIN_WIDTH_DB
        label = (f"≥ {_db(low)} dB" if k == len(BIN_COLORS) - 1
                 else f"{_db(low)}–{_db(low + BIN_WIDTH_DB)} dB")
        bands.append(SqnrBin(label, color, "#ffffff" if k == len(BIN_COLORS) - 1 else "#111111"))
    return (SqnrBin(f"< {_db(threshold_db)} dB", BELOW_COLOR, "#ffffff"), *bands,
            SqnrBin("exact", EXACT_COLOR, "#ffffff"), SqnrBin("not compared", UNCOMPARED_COLOR))


def sqnr_bin(sqnr_db: float | None, threshold_db: float) -> SqnrBin:
    bins = sqnr_bins(threshold_db)
    if sqnr_db is None or math.isnan(sqnr_db):
        return bins[-1]
    if sqnr_db == math.inf:
        return bins[-2]
    if sqnr_db < threshold_db:
        return bins[0]
    band = int((sqnr_db - threshold_db) // BIN_WIDTH_DB)
    return bins[1 + min(band, len(BIN_COLORS) - 1)]


def _db(value: float) -> str:
    return f"{value:g}"


def format_db(value: float) -> str:
    if value == math.inf:
        return "∞ (exact)"
    if value == -math.inf:
        return "−∞ (the original is all zeros)"
    return f"{value:.2f} dB"


def owners(comparison: QuantizationComparisonRecord, side: str) -> dict[str, str]:
    """Node name as `side` draws it -> the original node it stands for."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    if side == ORIGINAL:
        return {record.original: record.original for record in comparison.nodes}
    found = {}
    for record in comparison.nodes:
        for name in record.quantized:
            found.setdefault(name, record.original)
    return found


def painted_by_sqnr(elements: Sequence[dict], members: Mapping[str, Sequence[str]],
                    comparison: QuantizationComparisonRecord, side: str) -> list[dict]:
    """Copies of the graph page's elements, each leaf coloured by the lowest SQNR among the
    original nodes its members stand for and carrying that node's name (`original`); the
    leaf standing for the flagged node gets the class "flagged"."""
    owner = owners(comparison, side)
    by_original = {record.original: record for record in comparison.nodes}

    def paint(names: Sequence[str]) -> tuple[dict, str]:
        originals = [owner[name] for name in names if name in owner]
        worst = min((by_original[name] for name in originals),
                    key=lambda record: record.sqnr_db, default=None)
        shown = sqnr_bin(None if worst is None else worst.sqnr_db, comparison.threshold_db)
        flagged = comparison.flagged is not None and comparison.flagged in originals
        return ({"color": shown.color, "text": shown.text,
                 "original": worst.original if worst else ""}, " flagged" if flagged else "")
    return repainted_leaves(elements, members, paint)


def holding_leaves(comparison: QuantizationComparisonRecord, side: str,
                   rep: Mapping[str, str], original: str) -> list[str]:
    """The ids of the drawn leaves of `side` (`rep`: node name -> the visible leaf holding
    it, as the hierarchy view maps it) that hold a node standing for the original node
    `original`: the op itself, or the collapsed scope or series around it; in graph order."""
    names = [name for name, owner in owners(comparison, side).items() if owner == original]
    return list(dict.fromkeys(rep[name] for name in names if name in rep))


def flagged_style() -> list[dict]:
    return [{"selector": "node.leaf.flagged", "style": {
        "border-width": 4, "border-color": FLAGGED_OUTLINE, "border-style": "double"}}]


def outputs_figure(record: QuantizationNodeRecord, height: int = 260) -> go.Figure:
    """Both outputs' histograms on their shared bucket edges."""
    centres, widths = _buckets(record.edges)
    bars = [_bars(centres, widths, counts, label, color, opacity=0.6)
            for label, counts, color in ((ORIGINAL, record.original_counts, ORIGINAL_COLOR),
                                         (QUANTIZED, record.quantized_counts,
                                          QUANTIZED_COLOR))]
    layout = _frame(f"{record.original}: output values", "value", height)
    layout.update(barmode="overlay", legend={"orientation": "h", "y": -0.25})
    return go.Figure(data=bars, layout=layout, _validate=False)


def error_figure(record: QuantizationNodeRecord, height: int = 260) -> go.Figure:
    """The histogram of the error, quantized minus original."""
    centres, widths = _buckets(record.error_edges)
    layout = _frame(f"{record.original}: error (quantized − original)", "error", height)
    layout["showlegend"] = False
    return go.Figure(data=[_bars(centres, widths, record.error_counts, "error", ERROR_COLOR)],
                     layout=layout, _validate=False)


def _bars(centres: list[float], widths: list[float], counts: Sequence[float], name: str,
          color: str, opacity: float = 1.0) -> dict:
    return {"type": "bar", "x": centres, "y": list(counts), "width": widths, "name": name,
            "marker": {"color": color}, "opacity": opacity}


def _buckets(edges: Sequence[float]) -> tuple[list[float], list[float]]:
    centres = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])]
    widths = [b - a for a, b in zip(edges[:-1], edges[1:])]
    return centres, widths


# plotly.js's own look (white, #eee grid) instead of plotly.py's template, which each figure
# would copy and carry; built without plotly.py's per-property checks (the tests rebuild it
# checked): a selection drew its two figures in 80 ms, most of it those two.
_NO_TEMPLATE = pio.templates["none"].to_plotly_json()


def _frame(title: str, x_title: str, height: int) -> dict:
    return {"template": _NO_TEMPLATE, "height": height, "plot_bgcolor": "white",
            "margin": {"l": 50, "r": 10, "t": 36, "b": 40},
            "title": {"text": title, "font": {"size": 13}},
            "xaxis": {"title": {"text": x_title}, "gridcolor": "#eee"},
            "yaxis": {"title": {"text": "elements"}, "gridcolor": "#eee"}}


def metrics_rows(record: QuantizationNodeRecord, threshold_db: float) -> list[tuple[str, str]]:
    """(label, value) lines of one node's comparison."""
    verdict = "below the threshold" if record.sqnr_db < threshold_db else "passes"
    return [
        ("original node", f"{record.original} ({record.op})"),
        ("compared with", record.compared),
        ("quantized nodes", ", ".join(record.quantized)),
        ("shape", "×".join(str(d) for d in record.shape) or "scalar"),
        ("SQNR", f"{format_db(record.sqnr_db)}: {verdict} ({_db(threshold_db)} dB)"),
        ("MSE", f"{record.mse:.4g}"),
        ("max abs error", f"{record.max_abs_error:.4g}"),
        ("cosine similarity", f"{record.cosine:.6f}"),
        ("flagged", "yes: the first node below the threshold" if record.flagged else "no"),
    ]


COST_COLUMNS = ("Model", "Form", "Accuracy", "File size", "× float", "Batch 1",
                "Speed-up", "Batch 256", "Speed-up")


def cost_rows(costs: Sequence[QuantizationCostRecord]) -> list[tuple[str, ...]]:
    """The cost table's cells, in COST_COLUMNS order."""
    return [(c.model, c.variant, f"{100 * c.accuracy:.1f}%", _bytes(c.file_bytes),
             f"{c.bytes_ratio:.3f}", _us(c.batch1_us), f"{c.batch1_speedup:.2f}×",
             _us(c.batch256_us), f"{c.batch256_speedup:.2f}×") for c in costs]


def _bytes(value: int) -> str:
    return f"{value / 1024:.1f} KB" if value >= 1024 else f"{value} B"


def _us(value: float) -> str:
    return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.0f} µs"


def summary(comparison: QuantizationComparisonRecord) -> str:
    """One line: how many nodes, the worst, the flagged one."""
    nodes = comparison.nodes
    if not nodes:
        return f"{comparison.name}: no node compared."
    finite = [r for r in nodes if r.sqnr_db != math.inf]
    worst = min(finite, key=lambda r: r.sqnr_db, default=None)
    parts = [f"{comparison.name}: {len(nodes)} nodes compared, "
             f"{len(nodes) - len(finite)} exact"]
    if worst is not None:
        parts.append(f"lowest SQNR {format_db(worst.sqnr_db)} at {worst.original}")
    parts.append(f"first below {_db(comparison.threshold_db)} dB: {comparison.flagged}"
                 if comparison.flagged else f"none below {_db(comparison.threshold_db)} dB")
    if comparison.skipped:
        parts.append(f"{len(comparison.skipped)} not compared")
    return "; ".join(parts) + "."
