"""Checks each Dash callback request against the callbacks the app registered before Dash
dispatches it, so a malformed one (not JSON, not an object, an unknown output, inputs or
outputs that are not the callback's) is a 400 saying what is wrong instead of an exception
inside Dash (a 500); Dash's own refusal of an unknown component-suite file becomes a 404,
and any other error a bare 500 that shows no traceback or server path."""

from __future__ import annotations

import json
import logging
from typing import Any

import dash
from dash.exceptions import DependencyException
from flask import request
from werkzeug.exceptions import HTTPException

from workbench.inputs import clipped
from workbench.serving import MAX_REQUEST_BYTES

DISPATCH = "_dash-update-component"
_log = logging.getLogger("workbench")


def install(app: dash.Dash) -> None:
    """Adds the checks to app's Flask server (create_app does this)."""
    server = app.server
    endpoint = app.config.routes_pathname_prefix + DISPATCH
    # Whatever server runs the app: a body streamed without a Content-Length (chunked) is
    # cut off at the same limit the RequestGuard applies to declared lengths.
    server.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES

    def check_callback_request():
        if request.endpoint != endpoint:
            return None
        if not request.is_json:
            return _refusal(415, "A callback request must be application/json.")
        problem = callback_request_problem(request.get_data(cache=True), app.callback_map)
        return None if problem is None else _refusal(400, f"Malformed callback request: "
                                                          f"{problem}.")

    def unexpected(exc: Exception):
        if isinstance(exc, HTTPException):
            return exc
        if isinstance(exc, DependencyException):
            return _refusal(404, "No such file.")
        _log.error("request %s %s failed", request.method, request.path, exc_info=exc)
        return _refusal(500, "Internal error; the server log has the details.")

    # After Dash's own before_request hooks, which register the pages' routing callback.
    server.before_request(check_callback_request)
    server.register_error_handler(Exception, unexpected)


def callback_request_problem(raw: bytes, callback_map: dict[str, dict]) -> str | None:
    """What makes this /_dash-update-component body unlike anything Dash's renderer sends
    for a registered callback, or None."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return "the body is not JSON"
    if not isinstance(body, dict):
        return f"the body must be a JSON object, got {type(body).__name__}"
    output = body.get("output")
    spec = callback_map.get(output) if isinstance(output, str) else None
    if spec is None or "callback" not in spec:   # clientside callbacks run in the browser
        return f"no server callback has output {clipped(output)}"
    for field in ("inputs", "state"):
        problem = _dependencies_problem(field, body.get(field, []), spec[field])
        if problem:
            return problem
    problem = _outputs_problem(body.get("outputs"), spec)
    if problem:
        return problem
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(item, str) for item in changed):
        return "changedPropIds must be a list of texts"
    return None


def _dependencies_problem(field: str, given: Any, registered: list[dict]) -> str | None:
    if not isinstance(given, list) or len(given) != len(registered):
        return f"{field} must be a list of {len(registered)} entries"
    for index, (item, expected) in enumerate(zip(given, registered)):
        if not _matches(item, expected["id"], expected["property"]):
            return f"{field}[{index}] is not {expected['id']!r}.{expected['property']}"
    return None


def _outputs_problem(given: Any, spec: dict) -> str | None:
    outputs = spec["output"]
    if spec.get("no_output"):
        return None if given in (None, []) else "outputs must be empty"
    if not isinstance(outputs, list):
        return None if _matches(given, outputs.component_id, outputs.component_property) \
            else "outputs is not the callback's output"
    if not isinstance(given, list) or len(given) != len(outputs):
        return f"outputs must be a list of {len(outputs)} entries"
    for index, (item, output) in enumerate(zip(given, outputs)):
        if not _matches(item, output.component_id, output.component_property):
            return f"outputs[{index}] is not {output}"
    return None


def _matches(item: Any, component_id: Any, prop: str) -> bool:
    """An entry names the registered component and property; a pattern-matching one (a
    dict id) names a dict id, or is a list of such entries (ALL, ALLSMALLER). Dash keeps
    a pattern-matching input's or state's id as its JSON text."""
    if isinstance(component_id, str) and component_id.startswith("{"):
        component_id = json.loads(component_id)
    if isinstance(component_id, dict) and isinstance(item, list):
        return all(_matches(entry, component_id, prop) for entry in item)
    # An output declared allow_duplicate comes as "prop@<hash>" (Dash strips the suffix).
    given = item.get("property") if isinstance(item, dict) else None
    if not isinstance(given, str) or given.partition("@")[0] != prop:
        return False
    if isinstance(component_id, dict):
        return isinstance(item.get("id"), dict)
    return item.get("id") == component_id


def _refusal(status: int, text: str):
    return text, status, {"Content-Type": "text/plain; charset=utf-8"}
