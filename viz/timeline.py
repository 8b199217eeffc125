"""The timeline of one traced step (pure): op executions as bars in one lane per device (the
task named too when devices span several), Send/Recv transfers as arrows between lanes, and
the same step as Chrome trace JSON, following TF's Timeline (TF_BEHAVIOUR 4.9)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from engine.record.schema import CutEdgeRecord, DeviceRecord, OpStatRecord, TransferRecord
from viz.colors import device_color, device_label, parse_device

OP, TRANSFER = "op", "transfer"    # customdata[0] of a bar / of a transfer arrow
TRANSFER_LEGEND = "transfer (Send → Recv)"
TRANSFER_COLOR = "#d62728"
ROW_HEIGHT_PX = 30
BAR_WIDTH = 0.8                    # of a row: rows of one lane do not touch
LANE_SHADES = ("#f7f8fa", "#ffffff")


@dataclass(frozen=True)
class StepTrace:
    """What the timeline of one traced step shows. Times are microseconds since the step
    began; a node inside a while loop has one stat per iteration."""
    run: str
    step: int
    stats: tuple[OpStatRecord, ...]
    transfers: tuple[TransferRecord, ...] = ()
    cut_edges: tuple[CutEdgeRecord, ...] = ()
    devices: tuple[DeviceRecord, ...] = ()
    wall_start: float = 0.0        # seconds since the epoch


@dataclass(frozen=True)
class Lane:
    device: str
    label: str
    first_row: int                 # rows of all lanes are numbered top to bottom
    rows: int                      # sub-rows, so executions that overlap in time stay visible


@dataclass(frozen=True)
class Transfer:
    """One Send/Recv execution pair: the arrow goes from the send's end to the recv's end."""
    tensor: str
    key: str
    send: OpStatRecord
    recv: OpStatRecord
    bytes: int


@dataclass(frozen=True)
class Layout:
    lanes: tuple[Lane, ...]
    rows: tuple[int, ...]          # the row of each stat, in trace.stats order


def _device_order(name: str) -> tuple:
    device = parse_device(name)
    return (device.job, device.task, device.device_type != "CPU", device.device_type,
            device.index, name)


def lane_label(name: str, several_tasks: bool, virtual: bool = False) -> str:
    """The device's short label; with several tasks, always prefixed by job and task (the
    local job's tasks would otherwise read alike)."""
    device = parse_device(name)
    if not several_tasks or not device.device_type:
        return device_label(name, virtual)
    short = f"{device.job or 'localhost'}/{device.task} {device.device_type}:{device.index}"
    return f"{short} (virtual)" if virtual else short


def _rows_in_lane(spans: Sequence[tuple[float, float, int]]) -> dict[int, int]:
    """Greedy, as TF's Timeline assigns lanes: in start order, each execution takes the first
    row whose last execution ended before it started (strictly, as TF). Returns stat index ->
    row within the lane."""
    free_at: list[float] = []
    rows: dict[int, int] = {}
    for start, end, index in sorted(spans):
        row = next((r for r, free in enumerate(free_at) if free < start), len(free_at))
        if row == len(free_at):
            free_at.append(end)
        else:
            free_at[row] = end
        rows[index] = row
    return rows


def timeline_layout(trace: StepTrace) -> Layout:
    """Lanes in device order (job, task, CPUs first, index) and each stat's row."""
    spans: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for index, stat in enumerate(trace.stats):
        spans[stat.device].append((stat.start_us, max(stat.end_us, stat.start_us), index))
    names = sorted(spans, key=_device_order)
    tasks = {(parse_device(name).job, parse_device(name).task) for name in names}
    virtual = {record.name for record in trace.devices if record.virtual}
    lanes, rows = [], [0] * len(trace.stats)
    first = 0
    for name in names:
        in_lane = _rows_in_lane(spans[name])
        for index, row in in_lane.items():
            rows[index] = first + row
        count = max(in_lane.values()) + 1
        lanes.append(Lane(name, lane_label(name, len(tasks) > 1, name in virtual), first, count))
        first += count
    return Layout(tuple(lanes), tuple(rows))


def step_transfers(trace: StepTrace) -> list[Transfer]:
    """Each cut edge's k-th Send execution paired with its k-th Recv (a loop sends once per
    iteration); bytes from the step's k-th transfer of that key, else what the Recv output."""
    runs: dict[str, list[OpStatRecord]] = defaultdict(list)
    for stat in trace.stats:
        if stat.op in ("_Send", "_Recv", "_HostSend", "_HostRecv"):
            runs[stat.node].append(stat)
    moved: dict[str, list[int]] = defaultdict(list)
    for record in trace.transfers:
        moved[record.key].append(record.bytes)
    found, seen = [], set()
    for edge in trace.cut_edges:
        if (edge.send_node, edge.recv_node) in seen:
            continue
        seen.add((edge.send_node, edge.recv_node))
        sends = sorted(runs.get(edge.send_node, ()), key=lambda s: s.start_us)
        recvs = sorted(runs.get(edge.recv_node, ()), key=lambda s: s.start_us)
        sizes = moved.get(edge.key, [])
        for k, (send, recv) in enumerate(zip(sends, recvs)):
            size = sizes[k] if k < len(sizes) else recv.output_bytes
            found.append(Transfer(edge.tensor, edge.key, send, recv, size))
    return found


def _darker(color: str, factor: float = 0.65) -> str:
    """#rrggbb scaled towards black: the bar outline that parts adjacent executions."""
    channels = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{int(c * factor):02x}" for c in channels)


def graph_nodes(trace: StepTrace) -> dict[str, str]:
    """Send/Recv node -> the graph node whose tensor it carries: the partitioner adds those
    nodes, so the recorded graph knows only the producer (what a click on them opens)."""
    found = {}
    for edge in trace.cut_edges:
        producer = edge.tensor.lstrip("^").rsplit(":", 1)[0]
        found[edge.send_node] = found[edge.recv_node] = producer
    return found


def _row_centers(layout: Layout) -> np.ndarray:
    return np.asarray(layout.rows, dtype=np.float64)


def _bar_traces(trace: StepTrace, layout: Layout) -> list[dict]:
    """One horizontal bar trace per lane (its colour and legend entry). Traces are dicts:
    go.Figure validates them once, where trace objects would be validated and deep-copied."""
    by_device: dict[str, list[int]] = defaultdict(list)
    for index, stat in enumerate(trace.stats):
        by_device[stat.device].append(index)
    rows = _row_centers(layout)
    in_graph = graph_nodes(trace)
    bars = []
    for lane in layout.lanes:
        indexes = by_device[lane.device]
        stats = [trace.stats[i] for i in indexes]
        starts = np.fromiter((s.start_us for s in stats), np.float64, len(stats))
        ends = np.fromiter((s.end_us for s in stats), np.float64, len(stats))
        durations = np.maximum(ends - starts, 0.0)
        # Text only, numbers written out for the hover: plotly checks a list of tuples
        # element by element and deep-copies an object array, but copies text in one go.
        custom = np.array([(OP, s.node, s.op, lane.label, f"{s.start_us:,.1f}", f"{d:,.1f}",
                            f"{s.output_bytes:,}", in_graph.get(s.node, s.node))
                           for s, d in zip(stats, durations.tolist())], dtype=str)
        color = device_color(lane.device)
        bars.append(dict(
            type="bar", orientation="h", base=starts, x=durations, y=rows[indexes],
            width=BAR_WIDTH, name=lane.label, customdata=custom,
            # The outline parts back-to-back executions and keeps a 1 µs one visible.
            marker={"color": color, "line": {"color": _darker(color), "width": 1}},
            hovertemplate=("<b>%{customdata[1]}</b><br>op %{customdata[2]}<br>device "
                           "%{customdata[3]}<br>start %{customdata[4]} µs<br>duration "
                           "%{customdata[5]} µs<br>output %{customdata[6]} bytes"
                           "<extra></extra>")))
    return bars


def _transfer_trace(transfers: Sequence[Transfer], layout: Layout, row_of: dict) -> dict:
    """Arrows as one line trace: a segment per transfer, an arrowhead (pointing along the
    segment, whatever the zoom) at the recv's end."""
    label = {lane.device: lane.label for lane in layout.lanes}
    xs: list = []
    ys: list = []
    custom: list = []
    sizes: list = []
    for t in transfers:
        took = max(t.recv.end_us - t.send.end_us, 0.0)
        data = (TRANSFER, t.tensor, label[t.send.device], label[t.recv.device], f"{t.bytes:,}",
                f"{t.send.end_us:,.1f}", f"{t.recv.end_us:,.1f}", f"{took:,.1f}")
        xs += [t.send.end_us, t.recv.end_us, None]
        ys += [row_of[id(t.send)], row_of[id(t.recv)], None]
        custom += [data, data, data]
        sizes += [0, 11, 0]
    return dict(
        type="scatter", x=xs, y=ys, mode="lines+markers", name=TRANSFER_LEGEND,
        customdata=np.array(custom, dtype=str),
        line={"color": TRANSFER_COLOR, "width": 1.5},
        marker={"symbol": "arrow", "angleref": "previous", "size": sizes,
                "color": TRANSFER_COLOR},
        hovertemplate=("<b>%{customdata[1]}</b><br>%{customdata[2]} → %{customdata[3]}<br>"
                       "%{customdata[4]} bytes<br>sent by %{customdata[5]} µs, received by "
                       "%{customdata[6]} µs (%{customdata[7]} µs later)<extra></extra>"))


def _lane_axes(layout: Layout) -> tuple[dict, list[dict]]:
    """The y axis (lane labels at lane centres, top lane first) and a shaded band per lane."""
    total = sum(lane.rows for lane in layout.lanes)
    ticks = [lane.first_row + (lane.rows - 1) / 2 for lane in layout.lanes]
    yaxis = {"tickvals": ticks, "ticktext": [lane.label for lane in layout.lanes],
             "range": [total - 0.5, -0.5], "fixedrange": True, "zeroline": False,
             "showgrid": False}
    bands = [{"type": "rect", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "layer": "below",
              "y0": lane.first_row - 0.5, "y1": lane.first_row + lane.rows - 0.5,
              "fillcolor": LANE_SHADES[k % 2], "line": {"width": 0}}
             for k, lane in enumerate(layout.lanes)]
    return yaxis, bands


def timeline_figure(trace: StepTrace) -> go.Figure:
    """Bars per lane, transfer arrows, time along x (zoom and pan with plotly's tools; the
    lanes stay put). Each bar's customdata is text: (OP, node, op, lane, start, duration,
    bytes, graph node); the graph node is the node itself, or a Send/Recv's tensor producer."""
    layout = timeline_layout(trace)
    traces = _bar_traces(trace, layout)
    transfers = step_transfers(trace)
    if transfers:
        row_of = {id(stat): row for stat, row in zip(trace.stats, layout.rows)}
        traces.append(_transfer_trace(transfers, layout, row_of))
    figure = go.Figure(traces)
    yaxis, bands = _lane_axes(layout)
    rows = sum(lane.rows for lane in layout.lanes)
    figure.update_layout(
        barmode="overlay", height=max(260, 120 + ROW_HEIGHT_PX * rows), yaxis=yaxis,
        shapes=bands, xaxis={"title": {"text": "µs since the step began"}, "zeroline": False,
                             "rangemode": "tozero"},
        hovermode="closest", dragmode="zoom", plot_bgcolor="white", paper_bgcolor="white",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        margin={"l": 10, "r": 10, "t": 40, "b": 50})
    return figure


def timeline_summary(trace: StepTrace) -> str:
    """One line: executions, lanes, transfers and the span of the step."""
    if not trace.stats:
        return f"step {trace.step}: no op executions recorded"
    transfers = step_transfers(trace)
    span = max(s.end_us for s in trace.stats) - min(s.start_us for s in trace.stats)
    lanes = len({s.device for s in trace.stats})
    moved = sum(t.bytes for t in transfers)
    return (f"step {trace.step}: {len(trace.stats)} op executions on {lanes} device"
            f"{'' if lanes == 1 else 's'}, {len(transfers)} transfer"
            f"{'' if len(transfers) == 1 else 's'} ({moved:,} bytes), {span:,.1f} µs")


def _metadata(layout: Layout) -> list[dict]:
    """Process per device ("<device> Compute", TF's name), thread per row of its lane."""
    events = []
    for pid, lane in enumerate(layout.lanes, start=1):
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": f"{lane.device} Compute"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                       "args": {"sort_index": pid}})
        for tid in range(lane.rows):
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": f"{lane.label} lane {tid}"}})
    return events


def chrome_trace(trace: StepTrace) -> dict:
    """`{"traceEvents": [...]}` that Perfetto and chrome://tracing open: metadata events
    naming processes (one per device) and threads (one per lane row), an "X" event per op
    execution (TF's cat "Op", name the op type, args name and op), and each transfer as a
    flow from the send's end to the recv's end ("s" then "f", cat "DataFlow", one id each).
    ts and dur are microseconds since the step began; otherData says when it began."""
    layout = timeline_layout(trace)
    pid_of = {lane.device: pid for pid, lane in enumerate(layout.lanes, start=1)}
    first_row = {lane.device: lane.first_row for lane in layout.lanes}
    tid_of = {}
    events = _metadata(layout)
    for stat, row in zip(trace.stats, layout.rows):
        tid = row - first_row[stat.device]
        tid_of[id(stat)] = tid
        events.append({"ph": "X", "cat": "Op", "name": stat.op, "pid": pid_of[stat.device],
                       "tid": tid, "ts": stat.start_us,
                       "dur": max(stat.end_us - stat.start_us, 0.0),
                       "args": {"name": stat.node, "op": stat.op, "device": stat.device,
                                "output_bytes": stat.output_bytes}})
    for flow_id, t in enumerate(step_transfers(trace)):
        common = {"cat": "DataFlow", "name": t.tensor, "id": flow_id}
        events.append({"ph": "s", **common, "pid": pid_of[t.send.device],
                       "tid": tid_of[id(t.send)], "ts": t.send.end_us,
                       "args": {"key": t.key, "bytes": t.bytes}})
        # bp "e": the flow ends on the slice that encloses ts (the Recv), not the next one.
        events.append({"ph": "f", "bp": "e", **common, "pid": pid_of[t.recv.device],
                       "tid": tid_of[id(t.recv)], "ts": t.recv.end_us})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"run": trace.run, "step": trace.step,
                          "wall_start": trace.wall_start}}

