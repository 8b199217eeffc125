"""A blank figure that says why there is nothing to draw (no graph recorded, no run chosen)."""

from __future__ import annotations

import plotly.graph_objects as go


def message_figure(text: str, height: int = 360) -> go.Figure:
    figure = go.Figure()
    figure.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper",
                          showarrow=False, font={"size": 15, "color": "#666"})
    figure.update_layout(height=height, xaxis={"visible": False}, yaxis={"visible": False},
                         plot_bgcolor="white", paper_bgcolor="white",
                         margin={"l": 10, "r": 10, "t": 10, "b": 10})
    return figure
