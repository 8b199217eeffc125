"""Every callback, called as a plain function with what a hostile or unlucky client can send
(unknown and malformed run names, wrong types, out-of-range smoothing, junk scope lists and
click data, damaged runs), answers with a message; and the real server, behind waitress and
the RequestGuard, answers a battery of bad requests with no 5xx."""

from __future__ import annotations

import http.client
import json
import threading

import pytest
from dash import no_update
from dash._utils import to_json
from dash.exceptions import PreventUpdate

from engine.record import RunWriter
from engine.record.schema import DAMAGED
from workbench import data
from workbench.pages import graph, placement, runs, scalars
from workbench.pages.common import follow
from workbench.pages.graph_inspector import INSPECTOR_HINT

HUGE = "x" * 100_000
HOSTILE = [None, 5, -1, 3.5, True, 10**30, float("nan"), float("inf"), "", "nope", "..",
           "../../etc/passwd", "a/b", "nul\0byte", HUGE, "😀" * 300, [], ["nope"], [[1]],
           [{"a": 1}], {}, {"points": [{"customdata": 7}]}, [None, 5, "x"]]


def called(function, args):
    """function(*args) as Dash would run it: a PreventUpdate is an answer too (204)."""
    try:
        result = function(*args)
    except PreventUpdate:
        return None
    to_json(result)             # what Dash sends must serialize, or Dash answers 500
    return result


CALLBACKS = {
    "runs_table": (runs.runs_table, lambda r: (None,)),
    "graph.run_choice": (graph.run_choice, lambda r: (r.run,)),
    "graph.next_state": (graph.next_state, lambda r: (graph.EXPAND_BUTTON, r.run, None, "",
                                                        ["layer1"], "", None)),
    "graph.next_state.tap": (graph.next_state, lambda r: (graph.CYTO, r.run, {
        "id": "layer1", "kind": "scope"}, "", ["layer1"], "", {"run": r.run})),
    "graph.next_state.search": (graph.next_state, lambda r: (graph.SEARCH_BUTTON, r.run, None,
                                                               "Mat.*", [], "", None)),
    "graph.step_choice": (graph.step_choice, lambda r: (r.run, {"run": r.run, "step": "3"})),
    "graph.draw": (graph.draw, lambda r: (r.run, ["layer1"], "device", None, [])),
    "graph.draw.partition": (graph.draw, lambda r: (r.run, ["layer1"], "time", 49,
                                                    [graph.PARTITION])),
    "graph.selection_style": (graph.selection_style, lambda r: ("layer1/MatMul",)),
    "graph.inspect": (graph.inspect, lambda r: (r.run, "layer1/MatMul", 49)),
    "graph.export": (graph.export, lambda r: (graph.SVG_BUTTON, r.run, ["layer1"], "device",
                                               None, [])),
    "graph.draw.selected": (graph.draw, lambda r: (r.run, ["layer1"], "device", None, [],
                                                   "layer1/MatMul")),
    "graph.initial_view": (graph.initial_view, lambda r: ({"run": r.run, "step": "3",
                                                            "node": "layer1/MatMul"},)),
    "placement.run_choice": (placement.run_choice, lambda r: (r.run,)),
    "placement.device_options": (placement.device_options, lambda r: (r.run,)),
    "placement.placement_content": (placement.placement_content, lambda r: (r.run, "", [], [])),
    "scalars.run_choice": (scalars.run_choice, lambda r: (r.run,)),
    "scalars.tag_choice": (scalars.tag_choice, lambda r: ([r.run], ["loss"])),
    "scalars.curves": (scalars.curves, lambda r: ([r.run], ["loss"], 0.6, 1)),
    "scalars.refresh_curves": (scalars.refresh_curves, lambda r: (
        [{"type": scalars.CURVE_GRAPH, "tag": "loss"}], [r.run], ["loss"], 0.6, None, [], None,
        {"runs": {}, "changed": ["steps"]})),
    "scalars.zoom_curves": (scalars.zoom_curves, lambda r: (
        {"relayout": {"xaxis.range[0]": 1, "xaxis.range[1]": 3}, "n": 1},
        [{"type": scalars.CURVE_GRAPH, "tag": "loss"}], [r.run], ["loss"],
        0.6, "step", [], None, {"axis": "step", "from": 0, "to": 2})),
    "scalars.tag_choice.poll": (scalars.tag_choice, lambda r: ([r.run], ["loss"], None, {})),
    "graph.step_choice.poll": (graph.step_choice, lambda r: (r.run, None, 3, [], {})),
    # The parts a page follows are the server's own; the client sends the runs and state.
    "live.follow": (lambda runs, state: follow(runs, state, ("steps", "graph", "alerts")),
                    lambda r: ((r.run,), None)),
}


def unforeseen(caplog) -> list[str]:
    """Errors the callbacks logged as bugs (not a value they checked and told about)."""
    return [record.getMessage() for record in caplog.records if record.levelno >= 40]


def call_with_every_hostile_value(function, args) -> None:
    """Calls `function` with its valid arguments, then with each HOSTILE value in each
    position in turn (the other pages' callback tests share this)."""
    called(function, args)
    for position in range(len(args)):
        for value in HOSTILE:
            hostile = list(args)
            hostile[position] = value
            called(function, hostile)


@pytest.mark.parametrize("name", sorted(CALLBACKS))
def test_every_argument_of_every_callback_takes_any_value(recorded, name, caplog):
    function, valid = CALLBACKS[name]
    call_with_every_hostile_value(function, valid(recorded))
    assert unforeseen(caplog) == []


def test_unknown_and_malformed_run_names_are_told_on_the_graph_page(recorded):
    cases = {"nope": "No run named 'nope' in the log directory.",
             "../../etc": "Not a run name: '../../etc'.",
             HUGE: "Not a run name: 'xxxxxxxx",
             5: "A run name must be text, got int.",
             ("a",): "A run name must be text, got tuple."}
    for run, told in cases.items():
        elements, _, shown, _, summary, _ = graph.draw(run, [], "device", None, [])
        assert shown.startswith(told) and summary == "" and elements == []
        assert len(shown) < 200
    assert graph.draw(recorded.run, 7, "device", None, [])[2] == (
        "The expanded scopes must be a list, got int 7.")
    assert graph.draw(recorded.run, ["layer1"], {"a": 1}, None, [])[2].startswith(
        "The colour mode must be text")
    assert graph.draw(recorded.run, [], "rainbow", None, [])[2].startswith(
        "The colour mode must be one of device, requested, op, time, bytes")
    assert graph.draw(recorded.run, [], "time", 2.5, [])[2] == (
        "A step must be a whole number, got 2.5.")


def test_the_address_asking_for_an_unknown_run_is_told(recorded):
    for page in (graph, placement):
        _, chosen, notice = page.run_choice("../secret")
        assert chosen == recorded.runs[1]
        assert notice == (f"No readable run named '../secret' in the log directory; showing "
                          f"{chosen}.")
    _, chosen, notice = scalars.run_choice({"run": 1})
    assert set(chosen) == set(recorded.runs)
    assert notice == "No readable run named {'run': 1} in the log directory."


def test_smoothing_out_of_range_or_of_the_wrong_type_is_told(recorded, text_of):
    for value, told in ((5, "got 5"), (-0.1, "got -0.1"), (1.0, "got 1.0"),
                        (float("nan"), "got nan"), ("0.5", "got str '0.5'"),
                        (True, "got bool True"), ([0.5], "got list [0.5]")):
        shown = text_of(scalars.curves([recorded.run], ["loss"], value))
        assert shown == f"Smoothing must be a number from 0 to 0.99, {told}.", value
    graphs = scalars.curves([recorded.run], ["loss"], 0)
    assert len(graphs[0].figure.data) == 1        # no smoothing: the raw curve only


def test_malformed_lists_and_clicks_are_told_or_ignored(recorded, text_of):
    rows, log, count = placement.placement_content(recorded.run, {"q": 1}, [], [])
    assert rows == [] and count.startswith("The search text must be text, got dict")
    _, _, count = placement.placement_content(recorded.run, "", [{"x": 1}], [])
    assert count.startswith("The reasons must be text, got dict")
    _, _, count = placement.placement_content(recorded.run, "", ["r"] * 10_000, [])
    assert count == "The reasons: 10000 chosen, at most 200 at once."
    assert "must be text" in text_of(scalars.curves([recorded.run], [7], 0.5))
    for tap in ({"id": 5}, "x", [1, 2], {"id": "ghost", "kind": "op"}, {"kind": "scope"},
                {"id": "device:/cpu:0", "kind": "device"}):
        assert graph.next_state(graph.CYTO, recorded.run, tap, "", [], "", None) == (
            no_update, no_update, no_update)
    assert graph.inspect(recorded.run, "", None) == INSPECTOR_HINT
    assert graph.inspect(recorded.run, ["layer1"], None) == INSPECTOR_HINT
    assert text_of(graph.inspect(recorded.run, "ghost", None)) == (
        "No node or scope 'ghost' in this graph.")


def test_junk_scopes_sent_back_are_dropped(recorded):
    junk = [f"junk{i}" for i in range(5000)]
    expanded, _, _ = graph.next_state(graph.EXPAND_BUTTON, recorded.run, None, "", junk, "",
                                      None)
    assert expanded == ["gradients", "layer1", "layer2", "loss", "train"]
    tap = {"id": "not-a-scope", "kind": "scope"}
    assert graph.next_state(graph.CYTO, recorded.run, tap, "", junk, "", None)[0] is no_update
    assert graph.draw(recorded.run, junk, "device", None, [])[4].startswith(
        "graph version 1: 7 nodes drawn for 28")


def test_damaged_runs_are_listed_and_each_page_says_what_is_wrong(damaged, text_of):
    by_name = {info.name: info for info in data.runs()}
    assert by_name[damaged.missing_graph].status == DAMAGED
    table = text_of(runs.runs_table(None))
    assert f"{damaged.missing_graph}/blobs/{damaged.missing_file}: side file missing" in table
    told = graph.draw(damaged.missing_graph, [], "device", None, [])[2]
    assert told.startswith("Cannot show this: the run is damaged (")
    assert f"{damaged.missing_graph}/blobs/{damaged.missing_file}" in told
    assert str(damaged.logdir) not in told and str(damaged.logdir.resolve()) not in told
    assert graph.next_state(graph.RUN_DROPDOWN, damaged.missing_graph, None, "", None, "",
                            None)[:2] == ([], "")
    rows, _, count = placement.placement_content(damaged.missing_graph, "", [], [])
    assert len(rows) == 28                         # placements are whole
    shown = text_of(scalars.curves([damaged.bad_scalars, "mlp-lr0.5"], ["loss"], 0.6))
    assert shown.startswith(f"{damaged.bad_scalars}: Cannot show this: the run is damaged (")
    assert "run.sqlite: damaged record in scalar_values()" in shown
    graphs = scalars.curves([damaged.bad_scalars, "mlp-lr0.5"], ["loss"], 0.6)
    drawn = [t.name for t in graphs[-1].figure.data if t.showlegend is not False]
    assert drawn == ["mlp-lr0.5"]                  # the whole run still draws


def test_a_page_asked_for_no_run_opens_a_healthy_one(damaged):
    options, chosen, notice = graph.run_choice(None)
    assert data.readable_run_names()[0] == damaged.missing_graph    # the newest is damaged
    assert chosen == damaged.bad_scalars and notice == ""            # the newest healthy one
    labels = {o["value"]: o["label"] for o in options}
    assert labels[damaged.missing_graph] == f"{damaged.missing_graph} (damaged)"
    _, chosen, _ = scalars.run_choice(None)
    assert damaged.missing_graph not in chosen


def test_a_run_being_written_shows_what_it_has_so_far(empty_logdir, text_of):
    writer = RunWriter(empty_logdir, "live")
    try:
        assert graph.draw("live", [], "device", None, [])[2] == "Run live recorded no graph."
        assert text_of(scalars.curves(["live"], ["loss"], 0.6)) == \
            "None of the chosen runs has the chosen tags."
        writer.scalar("loss", 1.0, 0)
        writer.flush()
        graphs = scalars.curves(["live"], ["loss"], 0.6)
        assert list(graphs[0].figure.data[-1].y) == [1.0]
    finally:
        writer.close()


# The real server: waitress behind the RequestGuard, on 127.0.0.1.

@pytest.fixture
def server(damaged):
    import waitress

    from workbench.app import create_app
    from workbench.serving import RequestGuard, allowed_host_names

    app = create_app(damaged.logdir)
    guards = []                                 # the guard needs the port waitress picks
    served = waitress.create_server(lambda environ, start: guards[0](environ, start),
                                    host="127.0.0.1", port=0, threads=4)
    port = served.socket.getsockname()[1]
    guards.append(RequestGuard(app.server, allowed_host_names("127.0.0.1", port)))
    stopping = threading.Event()

    def serve():
        try:
            served.run()
        except OSError:                         # the loop meets its closed socket on the way out
            if not stopping.is_set():
                raise
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    app.server.test_client().get("/")          # registers the pages' routing callback
    yield app, port
    stopping.set()
    served.close()
    thread.join(timeout=10)


def send(port: int, method: str, path: str, body=None, headers: dict | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        try:
            conn.request(method, path, body=body, headers={
                "Host": f"127.0.0.1:{port}", "Content-Type": "application/json",
                **(headers or {})}, encode_chunked=not isinstance(body, (bytes, type(None))))
        except (ConnectionResetError, BrokenPipeError):
            pass                               # answered and closed before the body was read
        response = conn.getresponse()
        response.read()
        return response.status
    except (ConnectionResetError, BrokenPipeError, http.client.HTTPException):
        return 0                               # closed without an answer
    finally:
        conn.close()


def _input_entry(entry: dict, value) -> dict | list:
    """An input as the renderer sends it: a pattern-matching (ALL) one as the list of the
    components it matches, here one whose ALL keys are "loss" (the Scalars graph's)."""
    if not entry["id"].startswith("{"):
        return {**entry, "value": value}
    ident = {key: "loss" if part == ["ALL"] else part
             for key, part in json.loads(entry["id"]).items()}
    return [{"id": ident, "property": entry["property"], "value": value}]


def callback_body(key: str, spec: dict, values: list) -> bytes:
    """What the renderer sends; a pattern-matching (ALL) output or state matches no
    component here (an empty list)."""
    outputs = spec["output"]
    # An allow_duplicate output's property comes with its key's "@<hash>", as the renderer
    # sends it.
    duplicate = key.partition("@")[2] if not isinstance(outputs, list) else ""
    as_entry = [[] if isinstance(o.component_id, dict) else
                {"id": o.component_id,
                 "property": o.component_property + (f"@{duplicate}" if duplicate else "")}
                for o in (outputs if isinstance(outputs, list) else [outputs])]
    inputs = [_input_entry(entry, value) for entry, value in zip(spec["inputs"], values)]
    state = [[] if entry["id"].startswith("{") else {**entry, "value": None}
             for entry in spec["state"]]
    return json.dumps({
        "output": key, "outputs": as_entry if isinstance(outputs, list) else as_entry[0],
        "inputs": inputs, "state": state,
        "changedPropIds": [_changed(inputs[0])]}).encode()


def _changed(entry: dict | list) -> str:
    if isinstance(entry, list):
        entry = entry[0]
        ident = json.dumps(entry["id"], sort_keys=True, separators=(",", ":"))
        return f"{ident}.{entry['property']}"
    return f"{entry['id']}.{entry['property']}"


def test_the_server_answers_bad_requests_without_a_5xx(server, caplog):
    app, port = server
    statuses = {}
    path = "/_dash-update-component"
    served = {key: spec for key, spec in app.callback_map.items() if "callback" in spec}
    assert len(served) == 100                 # the pages' 99 and Dash's page router
    for key, spec in served.items():
        for value in HOSTILE:
            for position in range(len(spec["inputs"])):
                values = [None] * len(spec["inputs"])
                values[position] = value
                statuses[(key, position, repr(value)[:20])] = send(
                    port, "POST", path, callback_body(key, spec, values))
    malformed = [b"{not json", b"[]", b"null", b"{}", b'{"output": 5}',
                 b"[" * 50_000 + b"]" * 50_000, json.dumps({"output": "x.children"}).encode(),
                 b'{"output": "runs-table-div.children", "inputs": 5}',
                 b'{"output": "runs-table-div.children", "inputs": [{"id": 1}]}',
                 b'{"output": "runs-table-div.children", "outputs": [], "inputs": '
                 b'[{"id": "runs-refresh-interval", "property": "n_intervals"}]}']
    for index, body in enumerate(malformed):
        statuses[("malformed", index)] = send(port, "POST", path, body)
    statuses["not json type"] = send(port, "POST", path, b"{}", {"Content-Type": "text/plain"})
    statuses["oversized"] = send(port, "POST", path, b"x" * (5 << 20))
    statuses["oversized chunks"] = send(port, "POST", path, iter([b"x" * (1 << 16)] * 80))
    statuses["bad host"] = send(port, "GET", "/", headers={"Host": "evil.example"})
    statuses["suite"] = send(port, "GET", "/_dash-component-suites/dash/nope.js")
    statuses["suite trick"] = send(port, "GET", "/_dash-component-suites/../../etc/passwd")
    statuses["get dispatch"] = send(port, "GET", path)
    for page in ("/graph?run=../../x", "/scalars?run=" + "y" * 4000, "/placement?run=%00"):
        statuses[page] = send(port, "GET", page)
    server_errors = {what: status for what, status in statuses.items() if status >= 500}
    assert server_errors == {}
    assert {statuses[("malformed", i)] for i in range(len(malformed))} == {400}
    assert statuses["oversized"] in (0, 413) and statuses["oversized chunks"] in (0, 413)
    assert statuses["bad host"] == 400
    assert statuses["suite"] == 404 and statuses["not json type"] == 415
    odd = {what: status for what, status in statuses.items()
           if isinstance(what, tuple) and what[0] != "malformed" and status not in (200, 204)}
    assert odd == {}
    assert unforeseen(caplog) == []


def test_a_body_without_a_length_is_cut_off_whatever_the_server(recorded):
    from workbench.app import create_app
    from workbench.serving import MAX_REQUEST_BYTES

    client = create_app(recorded.logdir).server.test_client()
    big = client.post("/_dash-update-component", data=b"[" * (MAX_REQUEST_BYTES + 1),
                      content_type="application/json")
    assert big.status_code == 413
