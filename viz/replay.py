"""Replay of a recorded run (pure): which recorded step a requested number lands on, the state
of a traced step at a playhead time (each node pending, running or done; the Send/Recv
transfers in flight), the loss curve cut where a step ended, the alerts up to it, and the cytoscape
rules and figure that show them. Times are microseconds since the step began."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.record.schema import AlertRecord, OpStatRecord, PlanRecord, StepRecord
from viz.edges import input_source
from viz.timeline import StepTrace, step_transfers

PENDING, RUNNING, DONE, IDLE = "pending", "running", "done", "idle"
PENDING_COLOR = "#d9dde3"
RUNNING_COLOR = "#ffd400"
FLIGHT_COLOR = "#e6007e"
ALERT_COLOR = "#d62728"
_FED = re.compile(r"^_arg_(.+)_\d+_\d+$")   # a fed tensor's argument node: _arg_x_0_0
STEPS_LISTED = 10              # an untraced step's message names at most this many traced ones


@dataclass(frozen=True)
class NodeState:
    """One node of a traced step at the playhead: a node inside a while loop runs once per
    iteration, so `runs` counts its executions and `done` those finished by the playhead."""
    node: str
    state: str                 # PENDING | RUNNING | DONE
    done: int
    runs: int
    first_start_us: float
    last_end_us: float
    busy_us: float             # the executions' total time
    device: str


@dataclass(frozen=True)
class Flight:
    """One Send/Recv execution pair: in flight from the send's start to the recv's end."""
    tensor: str
    key: str
    producer: str
    consumers: tuple[str, ...]
    src_device: str
    dst_device: str
    start_us: float
    end_us: float
    bytes: int


@dataclass(frozen=True)
class StepState:
    """A step at playhead `at_us` (None: the whole step, every node done)."""
    step: int
    traced: bool
    at_us: float | None
    span_us: float             # where the playhead can go: the step's last end
    nodes: Mapping[str, NodeState]
    in_flight: tuple[Flight, ...]
    order: tuple[str, ...]     # graph nodes by their first start


# -- which step ---------------------------------------------------------------------------


def step_numbers(steps: Iterable[StepRecord]) -> list[int]:
    """The distinct recorded step numbers, ascending."""
    return sorted({record.step for record in steps})


def snapped_step(numbers: Sequence[int], wanted: int | None) -> int | None:
    """The recorded step nearest `wanted` (the earlier of two as near); the first step when
    none was asked for; None when the run recorded no step."""
    if not numbers:
        return None
    if wanted is None:
        return numbers[0]
    index = int(np.searchsorted(numbers, wanted))
    if index < len(numbers) and numbers[index] == wanted:
        return wanted
    near = [numbers[i] for i in (index - 1, index) if 0 <= i < len(numbers)]
    return min(near, key=lambda n: (abs(n - wanted), n))


def nearest_traced(traced: Sequence[int], step: int) -> int | None:
    return snapped_step(sorted(traced), step) if traced else None


def untraced_text(step: int, traced: Sequence[int]) -> str:
    """"Step 57 was not traced; traced steps: 1, 101, 201." (those nearest it when many)."""
    if not traced:
        return f"Step {step} was not traced; no step of this run was traced."
    ordered = sorted(traced)
    if len(ordered) > STEPS_LISTED:
        ordered = sorted(sorted(ordered, key=lambda n: (abs(n - step), n))[:STEPS_LISTED])
    listed = ", ".join(str(n) for n in ordered)
    more = f" (of {len(traced)})" if len(traced) > STEPS_LISTED else ""
    return f"Step {step} was not traced; traced steps: {listed}{more}."


def traced_spans(steps: Iterable[StepRecord], traced: Iterable[int]) -> dict[int, float]:
    """Traced step -> how long it took (us, at least 1): the playhead's range."""
    wanted = set(traced)
    spans: dict[int, float] = {}
    for record in sorted(steps, key=lambda record: record.seq):
        if record.step in wanted:
            spans[record.step] = max(float(record.duration_us), 1.0)
    return spans


def step_record(steps: Iterable[StepRecord], step: int) -> StepRecord | None:
    """The latest recording of step number `step`."""
    found = [record for record in steps if record.step == step]
    return max(found, key=lambda record: record.seq) if found else None


def graph_version_at(record: StepRecord | None, plans: Iterable[PlanRecord]) -> int | None:
    """The graph version the step's plan ran (None when the plan was not recorded): its
    placements are the ones in force at that step."""
    if record is None:
        return None
    return next((plan.graph_version for plan in plans if plan.plan == record.plan), None)


# -- a traced step at the playhead ----------------------------------------------------------


_TRANSFER_OPS = ("_Send", "_Recv", "_HostSend", "_HostRecv")


def execution_order(trace: StepTrace) -> list[str]:
    """Graph nodes (Send/Recv left out) by the start of their first execution, ties in the
    order they were recorded."""
    first: dict[str, float] = {}
    for stat in trace.stats:
        if stat.op not in _TRANSFER_OPS:
            first[stat.node] = min(first.get(stat.node, math.inf), stat.start_us)
    return sorted(first, key=lambda node: first[node])


def stats_span(stats: Iterable[OpStatRecord]) -> float:
    """Where a step's last op execution ended (0 for none)."""
    return max((max(stat.start_us, stat.end_us) for stat in stats), default=0.0)


def span_us(trace: StepTrace) -> float:
    return stats_span(trace.stats)


def node_states(trace: StepTrace, at_us: float | None) -> dict[str, NodeState]:
    """Each node that ran in the step: DONE when all its executions ended by `at_us`,
    PENDING when none had started, RUNNING otherwise (an execution in progress, or a loop
    node between two of its iterations). None: the end of the step."""
    runs: dict[str, list] = {}
    for stat in trace.stats:
        if stat.op not in _TRANSFER_OPS:
            runs.setdefault(stat.node, []).append(stat)
    at = math.inf if at_us is None else at_us
    states = {}
    for node, found in runs.items():
        started = sum(1 for stat in found if stat.start_us <= at)
        done = sum(1 for stat in found if max(stat.end_us, stat.start_us) <= at)
        state = PENDING if started == 0 else DONE if done == len(found) else RUNNING
        states[node] = NodeState(
            node, state, done, len(found), min(stat.start_us for stat in found),
            max(stat.end_us for stat in found),
            sum(max(0.0, stat.end_us - stat.start_us) for stat in found),
            found[0].device)
    return states


def flights(trace: StepTrace) -> list[Flight]:
    """The step's Send/Recv pairs (viz.timeline pairs the k-th send with the k-th recv of a
    cut edge), each with the producer and the consumers its cut edge names."""
    consumers = {edge.key: edge.consumers for edge in trace.cut_edges}
    found = []
    for transfer in step_transfers(trace):
        producer = input_source(transfer.tensor)[0]
        found.append(Flight(transfer.tensor, transfer.key, producer,
                            tuple(dict.fromkeys(consumers.get(transfer.key, ()))),
                            transfer.send.device,
                            transfer.recv.device, transfer.send.start_us,
                            max(transfer.recv.end_us, transfer.send.start_us), transfer.bytes))
    return sorted(found, key=lambda flight: (flight.start_us, flight.end_us))


def in_flight(found: Iterable[Flight], at_us: float | None) -> tuple[Flight, ...]:
    """The transfers under way at `at_us`: from the send's start up to (not at) the recv's
    end. None (the end of the step): none."""
    if at_us is None:
        return ()
    return tuple(flight for flight in found if flight.start_us <= at_us < flight.end_us)


def step_state(step: int, trace: StepTrace | None, at_us: float | None) -> StepState:
    """The replay's view of one step; an untraced step (trace None) has no node states."""
    if trace is None or not trace.stats:
        return StepState(step, False, None, 0.0, {}, (), ())
    span = span_us(trace)
    at = None if at_us is None or at_us >= span else max(0.0, float(at_us))
    return StepState(step, True, at, span, node_states(trace, at),
                     in_flight(flights(trace), at), tuple(execution_order(trace)))


# -- the drawing ---------------------------------------------------------------------------


def leaf_states(state: StepState, rep: Mapping[str, str]) -> dict[str, str]:
    """Drawn leaf id -> state for a traced step: a leaf standing for several nodes is
    RUNNING while any of them runs or some are done and others not, DONE when all that ran
    are done, PENDING before any started, IDLE when none of them ran in the step."""
    members: dict[str, list[str]] = {}
    for node, leaf in rep.items():
        members.setdefault(leaf, []).append(node)
    found = {}
    for leaf, names in members.items():
        states = {state.nodes[name].state for name in names if name in state.nodes}
        if not states:
            found[leaf] = IDLE
        elif states == {DONE}:
            found[leaf] = DONE
        elif states == {PENDING}:
            found[leaf] = PENDING
        else:
            found[leaf] = RUNNING
    return found


def flight_edge_ids(state: StepState, rep: Mapping[str, str],
                    edge_ids: Iterable[str]) -> list[str]:
    """Ids of the drawn edges ("SRC->DST", as viz.graph_elements names them) that carry a
    transfer in flight."""
    drawn = set(edge_ids)
    found: list[str] = []
    for flight in state.in_flight:
        src = rep.get(flight.producer) or rep.get(fed_node(flight.producer))
        for consumer in flight.consumers:
            ident = f"{src}->{rep.get(consumer)}"
            if src is not None and ident in drawn and ident not in found:
                found.append(ident)
    return found


def fed_node(producer: str) -> str:
    """The placeholder a fed value stands for: the runtime sends a feed from its argument
    node ("_arg_x_0_0" for x), which the recorded graph does not hold."""
    found = _FED.match(producer)
    return found.group(1) if found else producer


def _selector(kind: str, ids: Iterable[str]) -> str:
    # Ids hold "/" and "(": quoted attribute selectors need no escaping beyond the quotes.
    quoted = ", ".join(f'{kind}[id = "{_quoted(ident)}"]' for ident in ids)
    return quoted


def _quoted(ident: str) -> str:
    return ident.replace("\\", "\\\\").replace('"', '\\"')


def replay_rules(leaves: Mapping[str, str], flying: Sequence[str]) -> list[dict]:
    """Cytoscape rules painting a traced step: pending leaves grey, running ones highlighted,
    done ones in their device colour (the element's own), idle ones faded; edges in flight
    thick and magenta. Only the stylesheet changes from tick to tick, never the layout."""
    by_state: dict[str, list[str]] = {}
    for leaf, found in leaves.items():
        by_state.setdefault(found, []).append(leaf)
    looks = {
        PENDING: {"background-color": PENDING_COLOR, "color": "#555555"},
        RUNNING: {"background-color": RUNNING_COLOR, "color": "#111111", "border-width": 4,
                  "border-color": "#111111"},
        DONE: {},
        IDLE: {"opacity": 0.35},
    }
    rules = []
    for state in (PENDING, RUNNING, DONE, IDLE):
        ids = sorted(by_state.get(state, ()))
        if ids and looks[state]:
            rules.append({"selector": _selector("node", ids), "style": looks[state]})
    if flying:
        rules.append({"selector": _selector("edge", flying), "style": {
            "line-color": FLIGHT_COLOR, "target-arrow-color": FLIGHT_COLOR, "width": 5,
            "line-style": "solid", "opacity": 1, "z-index": 10}})
    return rules


# -- curve, alerts ---------------------------------------------------------------------------


def curve_tag(tags: Sequence[str]) -> str | None:
    """The tag a replay draws: "loss", else one ending in /loss, else the first naming loss,
    else the first."""
    ranked = ([tag for tag in tags if tag.lower() == "loss"]
              + [tag for tag in tags if tag.lower().rpartition("/")[2] == "loss"]
              + [tag for tag in tags if "loss" in tag.lower()] + list(tags))
    return ranked[0] if ranked else None


def curve_until(steps: np.ndarray, values: np.ndarray, step: int) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """The points recorded at steps up to `step`, in step order."""
    steps, values = np.asarray(steps), np.asarray(values, dtype=np.float64)
    order = np.argsort(steps, kind="stable")
    steps, values = steps[order], values[order]
    keep = steps <= step
    return steps[keep], values[keep]


def step_end_wall(record: StepRecord) -> float:
    """When a recorded step ended (seconds since the epoch)."""
    return float(record.wall_start) + max(float(record.duration_us), 0.0) / 1e6


def curve_until_wall(steps: np.ndarray, values: np.ndarray, walls: np.ndarray,
                     until: float) -> tuple[np.ndarray, np.ndarray]:
    """The points logged by wall time `until`, in step order: what the curve showed when a
    step ended. A script logs by its own counter (a training step), while Session steps also
    count initializer and evaluation runs, so a cut by step number runs ahead."""
    steps, values = np.asarray(steps), np.asarray(values, dtype=np.float64)
    walls = np.asarray(walls, dtype=np.float64)
    keep = walls <= until
    steps, values = steps[keep], values[keep]
    order = np.argsort(steps, kind="stable")
    return steps[order], values[order]


@dataclass(frozen=True)
class CurveCut:
    """Where a replayed step cuts a curve logged with wall times: the step's end, and the
    first alert step's end (None: no alert, or its step was not recorded)."""
    until: float
    alert_until: float | None = None


def alerts_until(alerts: Iterable[AlertRecord], step: int) -> list[AlertRecord]:
    """Alerts recorded at steps up to `step`, earliest first."""
    return sorted((a for a in alerts if a.step <= step), key=lambda a: (a.step, a.seq))


def first_alert_step(alerts: Iterable[AlertRecord]) -> int | None:
    return min((alert.step for alert in alerts), default=None)


def _vline(x: float, color: str, width: float, dash: str = "solid") -> dict:
    return {"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
            "line": {"color": color, "width": width, "dash": dash}}


def _reached_x(steps: np.ndarray, walls: np.ndarray, until: float) -> float | None:
    """The step of the last point logged by `until` (the first point when none was)."""
    if not len(steps):
        return None
    logged = np.asarray(steps)[np.asarray(walls, dtype=np.float64) <= until]
    return float(np.max(logged)) if logged.size else float(np.min(steps))


def replay_curve_figure(tag: str, steps: np.ndarray, values: np.ndarray, step: int,
                        alert_step: int | None = None, last_step: int | None = None,
                        walls: np.ndarray | None = None, cut: CurveCut | None = None) -> dict:
    """The curve grown up to `step` on the axes of the whole run (its points and steps up to
    `last_step`, so it grows in place), a line at the current step and, once reached, a red
    line at the first alert. With the points' `walls` and a `cut`, the curve holds what had
    been logged when the step ended and both lines stand at the last point logged by then
    (the curve's own numbering); `last_step`, a Session step, then does not widen the axis.
    A plain figure dict: built each tick, it must be cheap (a go.Figure with shapes takes
    tens of milliseconds)."""
    by_wall = walls is not None and cut is not None
    if by_wall:
        shown_steps, shown_values = curve_until_wall(steps, values, walls, cut.until)
        step_x = _reached_x(steps, walls, cut.until)
        alert_x = None if cut.alert_until is None or cut.alert_until > cut.until else \
            _reached_x(steps, walls, cut.alert_until)
        last_step = None
    else:
        shown_steps, shown_values = curve_until(steps, values, step)
        step_x = step
        alert_x = alert_step if alert_step is not None and alert_step <= step else None
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    ends = [float(n) for n in (*((np.min(steps), np.max(steps)) if len(steps) else ()),
                               last_step) if n is not None]
    x_range = [min(ends), max(ends)] if ends else [0.0, 1.0]
    if x_range[0] == x_range[1]:
        x_range = [x_range[0] - 1, x_range[1] + 1]
    yaxis: dict = {"title": {"text": tag}}
    if finite.size:
        low, high = float(finite.min()), float(finite.max())
        pad = (high - low) * 0.05 or 0.5
        yaxis["range"] = [low - pad, high + pad]
    shapes = [] if step_x is None else [_vline(step_x, "#555555", 1, "dot")]
    if alert_x is not None:
        shapes.append(_vline(alert_x, ALERT_COLOR, 2))
    trace = {"type": "scatter", "mode": "lines", "name": tag, "x": shown_steps.tolist(),
             "y": [v if math.isfinite(v) else None for v in shown_values.tolist()],
             "line": {"color": "#1f77b4", "width": 2},
             "hovertemplate": "step %{x}: %{y:.4g}<extra></extra>"}
    return {"data": [trace], "layout": {
        "height": 240, "margin": {"l": 50, "r": 10, "t": 10, "b": 36},
        "xaxis": {"title": {"text": "step"}, "range": x_range}, "yaxis": yaxis,
        "shapes": shapes, "plot_bgcolor": "white", "paper_bgcolor": "white",
        "showlegend": False, "uirevision": tag}}
