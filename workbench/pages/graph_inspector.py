"""The graph page's inspector panel: Dash components for viz.inspector's node details."""

from __future__ import annotations

from dash import html

from viz.colors import device_color, device_label
from viz.graph_elements import format_bytes, format_us

INSPECTOR_HINT = ("Click a node to inspect it; click a collapsed scope or series (a box "
                  "with a count) to open it, an open box to close it.")


def _field(label: str, *value) -> html.Tr:
    return html.Tr([html.Th(label), html.Td(list(value))])


def _device(name: str) -> html.Span:
    if not name:
        return html.Span("(none)", className="muted")
    return html.Span([
        html.Span(className="device-swatch", style={"backgroundColor": device_color(name)}),
        html.Span(device_label(name), className="device-short"), " ",
        html.Code(name, className="device-full")])


def _tensor_list(rows: list[dict], key: str) -> html.Ul | html.Span:
    if not rows:
        return html.Span("(none)", className="muted")
    return html.Ul(className="tensor-list", children=[
        html.Li([html.Code(str(row[key])), " ",
                 html.Span("control" if row.get("control") else f"{row['dtype']} {row['shape']}",
                           className="muted")])
        for row in rows])


def _stats(stats: dict | None) -> html.Span:
    """A loop node runs once per iteration: its count and total time, from the latest
    traced step."""
    if not stats:
        return html.Span("did not run (or no step was traced)", className="muted")
    runs = stats["executions"]
    times = "once" if runs == 1 else f"{runs} times"
    return html.Span(f"step {stats['step']}: ran {times}, {stats['total_us']:.0f} us in all",
                     className="node-stats")


def _step(step: dict | None) -> html.Span:
    """The chosen step's time and bytes of this node, or why there are none."""
    if not step or step["step"] is None:
        return html.Span("no traced step", className="muted")
    if not step["executions"]:
        return html.Span(f"did not run in step {step['step']} (or it was not traced)",
                         className="muted")
    runs = step["executions"]
    times = "once" if runs == 1 else f"{runs} times"
    return html.Span(f"step {step['step']}: ran {times}, {format_us(step['time_us'])}, "
                     f"{format_bytes(step['bytes'])} out", className="node-step")


def _summaries(step: dict | None) -> html.Span | html.Ul:
    rows = (step or {}).get("summaries") or []
    if not rows:
        return html.Span("(none watched)", className="muted")
    return html.Ul(className="tensor-list", children=[
        html.Li([html.Code(row.node), f" step {row.step}: {row.dtype} {list(row.shape)} "
                 f"min {row.min:.4g} max {row.max:.4g} mean {row.mean:.4g} std {row.std:.4g}"
                 + (f", {row.nan_count} NaN" if row.nan_count else "")])
        for row in rows])


def op_panel(details: dict) -> html.Div:
    reason = details["reason"] or "not placed"
    return html.Div(className="inspector", children=[
        html.H4(details["name"], className="inspector-title"),
        html.Table(className="inspector-table", children=[
            _field("Op", html.Code(details["op"], className="inspector-op")),
            _field("Requested", html.Code(details["requested"] or "(none)")),
            _field("Assigned", _device(details["assigned"])),
            _field("Placement", html.Span(reason, className=f"reason reason-{reason}"),
                   html.Div(details["detail"], className="muted")),
            _field("Last traced step", _stats(details.get("stats"))),
            _field("Chosen step", _step(details.get("step"))),
            _field("Watched", _summaries(details.get("step"))),
            _field("Inputs", _tensor_list(details["inputs"], "name")),
            _field("Outputs", _tensor_list(details["outputs"], "index")),
            _field("Created at", html.Pre("\n".join(details["stack"]) or "(unknown)",
                                          className="stack")),
        ]),
        html.Details([html.Summary("Attributes"),
                      html.Pre("\n".join(f"{k} = {v}" for k, v in sorted(
                          details["attrs"].items())) or "(none)")]),
    ])


def scope_panel(details: dict) -> html.Div:
    series = details.get("series_size")
    kind = (f"series of {series} siblings, {details['members']} nodes" if series
            else f"{details['members']} nodes")
    return html.Div(className="inspector", children=[
        html.H4(details["name"] + "/", className="inspector-title"),
        html.Table(className="inspector-table", children=[
            _field("Series" if series else "Scope", kind),
            _field("Devices", html.Ul([html.Li([_device(name), f" × {count}"])
                                       for name, count in details["devices"]])),
            _field("Op types", ", ".join(f"{op} × {count}" for op, count in details["ops"])),
        ]),
    ])


def inspector_panel(details: dict) -> html.Div:
    return op_panel(details) if details["kind"] == "op" else scope_panel(details)
