"""The graph page's inspector panel: Dash components for viz.inspector's node details."""

from __future__ import annotations

from dash import html

from viz.colors import device_color, device_label

INSPECTOR_HINT = "Click a node to inspect it; click a square (a collapsed scope) to open it."


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
    return html.Div(className="inspector", children=[
        html.H4(details["name"] + "/", className="inspector-title"),
        html.Table(className="inspector-table", children=[
            _field("Scope", f"{details['members']} nodes"),
            _field("Devices", html.Ul([html.Li([_device(name), f" × {count}"])
                                       for name, count in details["devices"]])),
            _field("Op types", ", ".join(f"{op} × {count}" for op, count in details["ops"])),
        ]),
    ])


def inspector_panel(details: dict) -> html.Div:
    return scope_panel(details) if details["kind"] == "scope" else op_panel(details)
