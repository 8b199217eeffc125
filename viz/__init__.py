"""Pure functions from recorded data (engine.record.schema) to plotly figures and graph
elements. Never imports dash or torch, so every picture can be tested without a browser."""

from viz.colors import device_color, device_label, legend_entries
from viz.edges import cut_edges, graph_edges
from viz.inspector import node_details
from viz.layout import assign_layers, layered_layout
from viz.message import message_figure
from viz.placement import filter_placement_rows, placement_log_text, placement_rows
from viz.scalars import Curve, curves_figure, downsample, scalar_curve, scalars_figure, smooth

__all__ = [
    "Curve", "assign_layers", "curves_figure", "cut_edges", "device_color", "device_label",
    "downsample", "filter_placement_rows", "graph_edges", "layered_layout", "legend_entries",
    "message_figure", "node_details", "placement_log_text", "placement_rows", "scalar_curve",
    "scalars_figure", "smooth",
]
