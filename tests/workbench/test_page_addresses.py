"""Every page's address round-trips: the choices a page writes into the address bar (its
view_address or view_link callback) are parsed as Dash parses a query string for the page's
layout, read back by the page's own address handling, and give the same choices, for run,
tag, node, comparison and device names with commas, spaces, slashes, unicode and regex
characters; and the shared writer and reader (common.address, address_values) agree."""

from __future__ import annotations

import urllib.parse

import numpy as np
import pytest
import recorded_mlp
from dash._pages import _parse_query_string
from test_robust_callbacks import call_with_every_hostile_value

from engine.record import RunWriter
from engine.record.schema import (
    LayerSparsityRecord,
    PruneStageRecord,
    QuantizationComparisonRecord,
    QuantizationNodeRecord,
)
from workbench import data
from workbench.inputs import BadInput, finite_number
from workbench.pages import (
    alerts,
    compare,
    graph,
    histograms,
    images,
    placement,
    pruning,
    quantization,
    replay,
    runs,
    scalars,
    text,
    timeline,
)
from workbench.pages.common import address, address_values

ODD = "lr 0.1, α=[a+b]*?&#%"            # a run name no address may garble
PLAIN = "mlp-plain"
SUMMARIES = "summaries, ünïcode (1)"
ODD_TAG = "layer/w, b [σ]+?"
TEXT_TAG = "notes & more/ä,b"
COMPARED = ("eightbit, calibrated on 100", "float/16 (σ=+1)")
STAGE_RUN = "pruned: 1&2"


def _node(original: str) -> QuantizationNodeRecord:
    return QuantizationNodeRecord(original, "MatMul", original, (original,), 0, (1,), 0.0, 0.0,
                                  20.0, 1.0, (0.0, 1.0), (1.0,), (1.0,), (0.0, 1.0), (1.0,))


def _write_summaries(logdir) -> None:
    with RunWriter(logdir, SUMMARIES) as run:
        for step in (0, 2, 4):
            run.histogram(ODD_TAG, np.arange(10.0) + step, step)
            run.histogram("plain", np.arange(10.0), step)
            run.image(ODD_TAG, np.full((4, 4), 40 * step, np.uint8), step)
            run.text(TEXT_TAG, f"entry {step}", step)
            run.scalar(ODD_TAG, float(step), step)


def _write_quantized_and_pruned(logdir) -> None:
    with RunWriter(logdir, "quantized ∑") as run:
        for name in COMPARED:
            run.quantization_comparison(QuantizationComparisonRecord(
                name, 1, 2, 30.0, None, (_node("dense/Mat Mul+1"), _node("dense/b,c"))))
    with RunWriter(logdir, STAGE_RUN) as run:
        for stage in (0, 1, 2):
            run.prune_stage(PruneStageRecord(stage, 10 * stage, 0.5, 0.9, (
                LayerSparsityRecord("layer1/weights", 0.2 * stage, 0.2 * stage),)))


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("addresses")
    recorded_mlp.write_mlp_run(root, PLAIN, 0.5, seed=1)
    recorded_mlp.write_mlp_run(root, ODD, 0.1, seed=2)
    _write_summaries(root)
    _write_quantized_and_pruned(root)
    return root


@pytest.fixture
def store(logdir):
    data.set_logdir(logdir)
    yield logdir
    data.set_logdir("runs")


def parsed(href: str, path: str) -> dict:
    """The query Dash gives the page's layout for the address `href`, which must be the
    page's own."""
    split = urllib.parse.urlsplit(href)
    assert split.path == path and not split.fragment, href
    return _parse_query_string(f"?{split.query}" if split.query else "")


def component(tree, ident):
    """The component of a layout with the id `ident` (None when it has none)."""
    if getattr(tree, "id", None) == ident:
        return tree
    children = getattr(tree, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        found = component(child, ident) if child is not None else None
        if found is not None:
            return found
    return None


# -- the shared writer and reader ------------------------------------------------------------


@pytest.mark.parametrize("items", [
    ["a", "b"], ["a,b"], ["a,b", "c d"], [ODD, PLAIN, "é/ü"], ["x+y", "100%", "a=b&c#d"],
    ["[0-9]+.*?", "(a|b)^$"]])
def test_a_list_reads_back_as_the_same_items(items):
    query = parsed(address("/p", {"run": items}), "/p")
    assert address_values(query["run"]) == items
    assert address_values(query["run"], items) == items


def test_the_writer_leaves_out_what_is_not_chosen_and_keeps_an_empty_choice():
    assert address("/p", {"run": None, "tag": [], "step": 0}) == "/p?step=0"
    assert address("/p", {}) == "/p"
    assert parsed(address("/p", {"open": ""}), "/p") == {"open": ""}
    assert address("/p", {"run": ["a", "b"], "tag": "x y"}) == "/p?run=a,b&tag=x%20y"


def test_a_hand_typed_name_with_a_comma_is_one_name_when_its_parts_are_not_names():
    assert address_values("a,b", ["a,b", "c"]) == ["a,b"]
    assert address_values("a,b", ["a,b", "a", "b"]) == ["a", "b"]
    assert address_values("a,,b,a") == ["a", "b"]
    assert address_values(["a,b", ""]) == ["a,b"]
    assert address_values(None) == address_values(5) == []


@pytest.mark.parametrize(("value", "read"), [
    ("12", 12.0), (" 0.5 ", 0.5), ("1e3", 1000.0), (".5", 0.5), (3, 3.0), (2.5, 2.5),
    (None, None), ("", None)])
def test_finite_number_reads_decimal_text_and_numbers(value, read):
    assert finite_number(value, "x", 0) == read


@pytest.mark.parametrize(("value", "told"), [
    ("nan", "must be a number, got 'nan'"), ("inf", "must be a number, got 'inf'"),
    ("1e400", "must be a finite number from 0 to 8, got '1e400'"),
    (float("nan"), "must be a finite number from 0 to 8, got nan"),
    (10 ** 400, "must be a finite number from 0 to 8, got 1000"),
    ("-1", "must be a finite number from 0 to 8, got '-1'"),
    (9, "must be a finite number from 0 to 8, got 9"),
    ("1_0", "must be a number, got '1_0'"), ("0x10", "must be a number, got '0x10'"),
    (True, "must be a number, got True"), ([1], "must be a number, got [1]"),
    ("9" * 100_000, "must be a number, got '9999")])
def test_finite_number_tells_what_is_wrong(value, told):
    with pytest.raises(BadInput) as caught:
        finite_number(value, "the speed", 0, 8)
    assert str(caught.value).startswith(f"the speed {told}") and len(str(caught.value)) < 150


# -- each page: its choices -> its address -> its own reading -> the same choices -----------


def test_graph(store):
    tree = data.hierarchy(ODD)
    selected = tree.op_ids["layer1/MatMul"]
    href = graph.view_address(ODD, 3, selected, "op", [graph.PARTITION], ["layer1"])
    first = graph.initial_view(parsed(href, graph.PATH))
    assert (first["run"], first["step"], first["selected"], first["color"],
            first["partition"], first["expanded"]) == (ODD, 3, selected, "op",
                                                       [graph.PARTITION], ["layer1"])
    assert first["notice"] == ""
    page = graph.layout(**parsed(href, graph.PATH))
    assert component(page, graph.COLOR_DROPDOWN).value == "op"
    assert component(page, graph.PARTITION_CHECK).value == [graph.PARTITION]
    # The default view writes no `open`; all closed writes an empty one; a scope selected.
    default = sorted(data.graph_first_view(ODD))
    href = graph.view_address(ODD, None, "layer1", "device", [], default)
    assert "open=" not in href and "step=" not in href and "color=" not in href
    first = graph.initial_view(parsed(href, graph.PATH))
    assert (first["expanded"], first["selected"], first["color"]) == (default, "layer1",
                                                                      "device")
    first = graph.initial_view(parsed(graph.view_address(ODD, 2, "", "time", [], []),
                                      graph.PATH))
    assert (first["expanded"], first["selected"], first["step"]) == ([], "", 2)


def test_graph_search(store):
    """`search=REGEX` is the search last run: written with the view, it fills the search box
    on load and, with no node in the address, reveals and selects the first match as the
    search box does; a node in the address stays the selection."""
    tree = data.hierarchy(ODD)
    pattern = "layer2/Mat.*"
    href = graph.view_address(ODD, None, "", "device", [], [], pattern)
    query = parsed(href, graph.PATH)
    assert query["search"] == pattern and query["open"] == ""
    first = graph.initial_view(query)
    match = tree.op_ids["layer2/MatMul"]
    assert first["selected"] == match and "layer2" in first["expanded"]
    assert first["search"] == "3 matches; showing layer2/MatMul."
    page = graph.layout(**query)
    assert component(page, graph.SEARCH_INPUT).value == pattern
    assert component(page, graph.SEARCH_STORE).data == pattern
    # The node the user selected after searching is what the address selects.
    selected = tree.op_ids["layer1/MatMul"]
    href = graph.view_address(ODD, None, selected, "device", [], ["layer1"], pattern)
    first = graph.initial_view(parsed(href, graph.PATH))
    assert (first["selected"], first["expanded"]) == (selected, ["layer1"])
    assert component(graph.layout(**parsed(href, graph.PATH)), graph.SEARCH_INPUT).value == (
        pattern)
    # No search run: none written; an address naming a run that is not there opens another
    # run, where its search is not run.
    assert "search=" not in graph.view_address(ODD, None, "", "device", [], [], "")
    other = graph.initial_view({"run": "nope", "search": pattern})
    assert other["run"] != "nope" and other["selected"] == "" and other["search"] == ""


@pytest.mark.parametrize(("pattern", "told"), [
    ("layer1/[", "Not a regular expression: unterminated character set at position 7."),
    ("(a", "Not a regular expression: missing ), unterminated subpattern at position 0."),
    ("nothing-like-this", "No node matches 'nothing-like-this'."),
])
def test_graph_search_in_the_address_says_what_is_wrong(store, pattern, told):
    first = graph.initial_view(parsed(address(graph.PATH, {"run": ODD, "search": pattern}),
                                      graph.PATH))
    assert first["search"] == told and first["selected"] == ""
    assert first["expanded"] == sorted(data.graph_first_view(ODD))
    assert first["message"] == "" and first["elements"]          # the graph still draws


def test_graph_search_too_long_or_not_text_is_left_out(store):
    assert graph.address_search({"search": "x" * 5000}) == ""
    assert graph.address_search({"search": ["a.*", "b"]}) == "a.*"
    assert graph.address_search({"search": 5}) == graph.address_search(None) == ""
    first = graph.initial_view({"run": ODD, "search": "x" * 5000})
    assert first["search"].startswith("The search in the address is 5000 characters long")


def test_graph_names_a_colour_it_cannot_show():
    first = graph.view_choice({"color": "rainbow"})
    assert first[:2] == ("device", []) and "'rainbow' is not one of" in first[2]


def test_timeline(store):
    href = timeline.view_address(ODD, 3, {timeline.BARS_GRAPH: {"xaxis": [5.0, 1234.56]}})
    query = parsed(href, timeline.PATH)
    assert timeline.run_choice(query)[1:] == (ODD, "")
    assert timeline.step_choice(ODD, query)[1:] == (3, "")
    assert (query["from"], query["to"]) == ("5", "1234.6")
    asked = component(timeline.layout(**query), timeline.QUERY_STORE).data
    assert asked["window"] == [5.0, 1234.6]


def test_images(store):
    href = images.view_address(SUMMARIES, ODD_TAG, 1)         # the second step with one
    query = parsed(href, images.PATH)
    assert images.run_choice(query)[1:] == (SUMMARIES, "")
    assert images.tag_choice(SUMMARIES, query)[1] == ODD_TAG
    assert images.step_choice(SUMMARIES, ODD_TAG, query)[3:] == (1, "")


def test_histograms(store):
    href = histograms.view_link([SUMMARIES, ODD], [ODD_TAG, "plain"], "overlay")
    query = parsed(href, histograms.PATH)
    assert histograms.run_choice(query)[1:] == ([SUMMARIES, ODD], "")
    assert histograms.tag_choice([SUMMARIES, ODD], None, query)[1] == [ODD_TAG, "plain"]
    assert component(histograms.layout(**query), histograms.MODE_RADIO).value == "overlay"


def test_text(store):
    href = text.view_link([SUMMARIES], [TEXT_TAG], 2, [])
    query = parsed(href, text.PATH)
    assert text.run_choice(query)[1:] == ([SUMMARIES], "")
    assert text.tag_choice([SUMMARIES], None, query)[1:] == ([TEXT_TAG], "")
    assert text.step_choice([SUMMARIES], [TEXT_TAG], query)[3] == 2


def test_scalars(store):
    href = scalars.view_link([ODD, PLAIN], ["loss"], "wall", ["log"], 0.85, 7)
    query = parsed(href, scalars.PATH)
    assert scalars.run_choice(query["run"])[1:] == ([ODD, PLAIN], "")
    assert scalars.tag_choice([ODD, PLAIN], None, query["tag"])[1] == ["loss"]
    assert (query["x"], query["log"], query["step"]) == ("wall", "1", "7")
    assert scalars.address_smoothing(query["smoothing"]) == 0.85
    page = scalars.layout(**query)
    assert component(page, scalars.SMOOTHING_SLIDER).value == 0.85
    assert component(page, scalars.RUN_DROPDOWN).value == [ODD, PLAIN]
    href = scalars.view_link([SUMMARIES], [ODD_TAG], "step", [], 0.6, None)
    assert "smoothing" not in href and "x=" not in href
    query = parsed(href, scalars.PATH)
    assert scalars.tag_choice([SUMMARIES], None, query["tag"])[1] == [ODD_TAG]
    assert scalars.address_smoothing("2") == scalars.address_smoothing(None) == 0.6


def test_compare(store):
    href = compare.view_address(ODD, PLAIN, "layer1/MatMul")
    query = parsed(href, compare.PATH)
    options, a, _options, b, notice = compare.run_choice(query)
    assert (a, b, notice) == (ODD, PLAIN, "")
    assert compare.select(compare.A_DROPDOWN, None, None, a, b, query) == "layer1/MatMul"
    # Other runs than the address's: the selection starts empty.
    assert compare.select(compare.A_DROPDOWN, None, None, PLAIN, ODD, query) == ""


def test_quantization(store):
    run = "quantized ∑"
    for chosen in COMPARED:
        href = quantization.view_address(run, chosen, "dense/b,c")
        query = parsed(href, quantization.PATH)
        assert quantization.run_choice(query)[1:] == (run, "")
        assert quantization.comparison_choice(run, query=query)[1] == chosen
        assert quantization.select(None, None, None, run, chosen, query) == "dense/b,c"


def test_placement(store):
    devices = [recorded_mlp.GPU0, recorded_mlp.CPU0]
    href = placement.view_address(ODD, "Mat Mul+?", ["soft_fallback", "default"], devices)
    query = parsed(href, placement.PATH)
    first = placement.layout(**query)
    asked = component(first, placement.QUERY_STORE).data
    assert placement.run_choice(asked)[1:] == (ODD, "")
    devices_asked = component(first, placement.DEVICE_QUERY_STORE).data
    assert placement.device_choice(ODD, devices_asked)[1] == devices
    assert component(first, placement.SEARCH_INPUT).value == "Mat Mul+?"
    assert component(first, placement.REASON_DROPDOWN).value == ["soft_fallback", "default"]


def test_alerts(store):
    href = alerts.view_address([PLAIN, ODD])
    assert alerts.run_choice(parsed(href, alerts.PATH)["run"])[1:] == ([PLAIN, ODD], "")
    lone = parsed(alerts.view_address([ODD]), alerts.PATH)["run"]
    assert alerts.run_choice(lone)[1:] == ([ODD], "")


def test_pruning(store):
    for stage in (0, 1):
        query = parsed(pruning.view_address(STAGE_RUN, stage), pruning.PATH)
        first = pruning.layout(**query)
        asked = component(first, pruning.QUERY_STORE).data
        assert pruning.run_choice(asked)[1:] == (STAGE_RUN, "")
        stage_asked = component(first, pruning.STAGE_QUERY_STORE).data
        assert pruning.run_view(STAGE_RUN, query=stage_asked)[3] == stage
    assert pruning.run_view(STAGE_RUN, query={"run": PLAIN, "stage": "1"})[3] == 2


def test_runs(store):
    assert runs.view_address(0) == "/"
    assert runs.address_page(parsed(runs.view_address(0), runs.PATH).get("page")) == 0
    assert runs.address_page("2") == 1 and runs.address_page("x") == 0


def test_replay(store):
    """The Replay page writes its address in the browser (assets/replay.js); what it reads
    back: the run, and the open scopes written as the shared writer writes a list."""
    opened = sorted(data.graph_first_view(ODD) | {"layer1"})
    query = parsed(address(replay.PATH, {"run": ODD, "step": 3, "open": opened}), replay.PATH)
    assert replay.run_choice(query)[1:] == (ODD, "")
    assert replay.step_bounds(ODD, query)[1] == {"step": 3, "t": None}
    assert replay.draw(ODD, None, None, None, query)[0] == opened


@pytest.mark.parametrize(("speed", "shown", "told"), [
    (None, 1, ""), ("4", 4, ""), ("0.5", 0.5, ""), ("8", 8, ""), (["2", "8"], 2, ""),
    ("3", 1, "The speed in the address must be one of 0.5, 1, 2, 4, 8, got '3'"),
    ("nan", 1, "The speed in the address must be a number, got 'nan'"),
    ("inf", 1, "The speed in the address must be a number, got 'inf'"),
    ("1e400", 1, "The speed in the address must be a finite number from 0, got '1e400'"),
    ("-2", 1, "The speed in the address must be a finite number from 0, got '-2'"),
    ("fast", 1, "The speed in the address must be a number, got 'fast'"),
    ("9" * 5000, 1, "The speed in the address must be a number, got '9999"),
])
def test_replay_speed(speed, shown, told):
    """`speed=N` chooses the speed the page plays at (the browser writes it back,
    assets/replay.js); a value that is not one of the speeds is told and 1x played."""
    page = replay.layout(run=ODD, speed=speed)
    assert component(page, replay.SPEED_DROPDOWN).value == shown
    notice = component(page, replay.SPEED_NOTICE_TEXT).children
    assert notice.startswith(told) and len(notice) < 200
    assert notice.endswith("; playing at 1x.") if told else notice == ""


ADDRESS_CALLBACKS = {
    "graph": (graph.view_address, (ODD, 3, "layer1", "op", [], ["layer1"])),
    "timeline": (timeline.view_address, (ODD, 3, {timeline.BARS_GRAPH: {"xaxis": [1, 2]}})),
    "timeline.view": (timeline.timeline_view, (ODD, 3, None, None, {"run": ODD,
                                                                    "window": [1, 2]})),
    "graph.search": (graph.view_address, (ODD, 3, "", "device", [], ["layer1"], "Mat.*")),
    "images": (images.view_address, (SUMMARIES, ODD_TAG, 1)),
    "compare": (compare.view_address, (ODD, PLAIN, "layer1")),
    "quantization": (quantization.view_address, ("quantized ∑", COMPARED[0], "dense/b,c")),
    "placement": (placement.view_address, (ODD, "x", ["default"], [recorded_mlp.GPU0])),
    "placement.devices": (placement.device_choice, (ODD, "a,b", None)),
    "alerts": (alerts.view_address, ([ODD],)),
    "pruning": (pruning.view_address, (STAGE_RUN, 1)),
    "runs": (runs.view_address, (1,)),
    "scalars": (scalars.view_link, ([ODD], ["loss"], "step", [], 0.6, 3)),
    "replay.draw": (lambda run, query: replay.draw(run, None, None, None, query),
                    (ODD, {"run": ODD, "open": "layer1"})),
    "replay.open": (lambda opened: replay.draw(ODD, None, None, None, {"open": opened}),
                    (["layer1"],)),
}


@pytest.mark.parametrize("name", sorted(ADDRESS_CALLBACKS))
def test_every_address_callback_takes_any_value(store, name, caplog):
    """What a forged request sends answers with no update (or the page's path), never an
    error: the address bar keeps what it shows."""
    function, args = ADDRESS_CALLBACKS[name]
    call_with_every_hostile_value(function, args)
    assert [r.getMessage() for r in caplog.records if r.levelno >= 40] == []


def test_placement_reads_only_reasons_from_the_address():
    page = placement.layout(reason="default,nonsense", search=["a b", "c"])
    assert component(page, placement.REASON_DROPDOWN).value == ["default"]
    assert component(page, placement.SEARCH_INPUT).value == "a b"
    assert component(placement.layout(), placement.REASON_DROPDOWN).value is None
