"""The Pruning page's figures from recorded pruning data: per-layer sensitivity curves
(accuracy versus sparsity), per-layer sparsity bars at a stage, accuracy over the
prune-retrain schedule, and the compression figures as label/value rows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import plotly.graph_objects as go

from engine.record.schema import CompressionRecord, PruneStageRecord, SensitivityPoint
from viz.colors import CATEGORY_COLORS

HEIGHT = 330


def layer_color(layers: Sequence[str], layer: str) -> str:
    """A layer keeps its colour whichever layers are shown (its index among all of them)."""
    return CATEGORY_COLORS[list(layers).index(layer) % len(CATEGORY_COLORS)]


def _layout(figure: go.Figure, title: str, xaxis: dict, yaxis: dict) -> go.Figure:
    figure.update_layout(
        title={"text": title, "x": 0.01, "font": {"size": 14}}, height=HEIGHT,
        margin={"l": 60, "r": 20, "t": 40, "b": 45}, plot_bgcolor="white", xaxis=xaxis,
        yaxis=yaxis, legend={"orientation": "h", "y": -0.22}, hovermode="closest")
    figure.update_xaxes(gridcolor="#eeeeee", zeroline=False)
    figure.update_yaxes(gridcolor="#eeeeee", zeroline=False)
    return figure


def sensitivity_figure(curves: Mapping[str, Sequence[SensitivityPoint]],
                       shown: Iterable[str] | None = None) -> go.Figure:
    """One line per shown layer: held-out accuracy with only that layer pruned."""
    layers = list(curves)
    visible = set(layers if shown is None else shown)
    traces = []
    for layer in layers:
        if layer not in visible:
            continue
        points = curves[layer]
        traces.append(go.Scatter(
            x=[100 * p.sparsity for p in points], y=[p.accuracy for p in points],
            mode="lines+markers", name=layer, line={"color": layer_color(layers, layer)},
            hovertemplate=f"{layer}<br>sparsity %{{x:.0f}}%<br>accuracy %{{y:.4f}}"
                          "<extra></extra>"))
    return _layout(go.Figure(data=traces), "Sensitivity: accuracy with one layer pruned",
                   {"title": "sparsity of the layer (%)", "range": [-2, 101]},
                   {"title": "held-out accuracy", "rangemode": "tozero"})


def sparsity_figure(stage: PruneStageRecord, layers: Sequence[str] = ()) -> go.Figure:
    """Bars: each layer's sparsity after the stage, its target as a marker."""
    order = list(layers) or [layer.layer for layer in stage.layers]
    names = [layer.layer for layer in stage.layers]
    colors = [layer_color(order, n) if n in order else CATEGORY_COLORS[0] for n in names]
    bars = go.Bar(x=names, y=[100 * layer.sparsity for layer in stage.layers], name="sparsity",
                  marker={"color": colors},
                  text=[f"{100 * layer.sparsity:.1f}%" for layer in stage.layers],
                  textposition="outside", hovertemplate="%{x}<br>sparsity %{y:.1f}%"
                                                        "<extra></extra>")
    targets = go.Scatter(x=names, y=[100 * layer.target for layer in stage.layers],
                         mode="markers", name="target", marker={"symbol": "line-ew-open",
                                                                "size": 28, "color": "#333333"},
                         hovertemplate="%{x}<br>target %{y:.1f}%<extra></extra>")
    return _layout(go.Figure(data=[bars, targets]),
                   f"Sparsity per layer after stage {stage.stage} (step {stage.step})",
                   {"title": "layer"}, {"title": "weights pruned (%)", "range": [0, 110]})


def schedule_figure(stages: Sequence[PruneStageRecord], chosen: int | None = None
                    ) -> go.Figure:
    """Accuracy right after each stage's pruning and after its retraining, by stage; the
    chosen stage marked."""
    x = [s.stage for s in stages]
    hover = [f"stage {s.stage}, step {s.step}<br>" + "<br>".join(
        f"{layer.layer}: {100 * layer.sparsity:.1f}%" for layer in s.layers) for s in stages]
    traces = [
        go.Scatter(x=x, y=[s.pruned_accuracy for s in stages], mode="lines+markers",
                   name="after pruning", line={"dash": "dot", "color": CATEGORY_COLORS[6]},
                   customdata=hover, hovertemplate="%{customdata}<br>after pruning %{y:.4f}"
                                                   "<extra></extra>"),
        go.Scatter(x=x, y=[s.accuracy for s in stages], mode="lines+markers",
                   name="after retraining", line={"color": CATEGORY_COLORS[0]},
                   customdata=hover, hovertemplate="%{customdata}<br>after retraining "
                                                   "%{y:.4f}<extra></extra>"),
    ]
    figure = _layout(go.Figure(data=traces), "Accuracy over the prune-retrain schedule",
                     {"title": "stage", "dtick": 1}, {"title": "held-out accuracy"})
    if chosen is not None and chosen in x:
        figure.add_vline(x=chosen, line={"color": "#999999", "dash": "dash"})
    return figure


def compression_rows(record: CompressionRecord) -> list[tuple[str, str]]:
    """(label, value) rows of the compression figures, per layer last."""
    change = 100 * (record.accuracy - record.baseline_accuracy)
    rows = [
        ("Stored weight values", f"{record.dense_values:,} dense → {record.stored_values:,} "
                                 f"nonzero ({record.ratio:.2f}× fewer)"),
        ("Weight bytes", f"{record.dense_bytes:,} dense → {record.sparse_bytes:,} as CSR with "
                         f"indices ({record.bytes_ratio:.2f}× smaller)"),
        ("Accuracy", f"{record.baseline_accuracy:.4f} unpruned → {record.accuracy:.4f} pruned "
                     f"({change:+.2f} points)"),
    ]
    for layer, (dense, stored) in record.per_layer.items():
        kept = stored / dense if dense else 0.0
        rows.append((layer, f"{stored:,} of {dense:,} kept ({100 * (1 - kept):.1f}% pruned)"))
    return rows
