"""The real thing end to end: `workbench demo` trains the MLP on the engine and records it;
the workbench opens that run, draws its graph, shows a clicked node in the inspector with
the device the placer chose, shows the soft fallback, and draws the loss curves; and every
page of the workbench shows the demo's data at 1280x800 without scrolling sideways."""

from __future__ import annotations

import pytest
from browser_helpers import click_node, open_page, wait_for_graph

from engine.record import RunReader
from workbench import plotly_js
from workbench.app import PAGES, create_app
from workbench.demo import run_demo

DEMO_STEPS = 30


@pytest.fixture(scope="module")
def demo_logdir(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("demo-runs")
    paths = run_demo(str(logdir), steps=DEMO_STEPS, progress=False)
    return logdir, [p.rsplit("/", 1)[-1] for p in paths]


def test_demo_run_graph_inspector_and_loss_curve(dash_duo, demo_logdir):
    logdir, runs = demo_logdir
    run = runs[0]
    placed = {p.node: p for p in RunReader(logdir / run).placements()}
    assert placed["layer1/MatMul"].assigned.endswith("CPU:0")
    assert placed["layer2/MatMul"].assigned.endswith("GPU:0")

    dash_duo.start_server(create_app(logdir))
    dash_duo.wait_for_element(f".runs-table a[href='/graph?run={run}']").click()
    wait_for_graph(dash_duo)
    dash_duo.wait_for_contains_text("#graph-legend-div", "Send/Recv cut")
    dash_duo.wait_for_contains_text("#graph-legend-div", "GPU:1 (virtual)")
    click_node(dash_duo, "layer2/MatMul")
    dash_duo.wait_for_contains_text(".inspector-title", "layer2/MatMul")
    dash_duo.wait_for_contains_text(".inspector-op", "MatMul")
    dash_duo.wait_for_contains_text(".inspector", "GPU:0")
    dash_duo.wait_for_contains_text(".inspector", "explicit")

    open_page(dash_duo, f"/placement?run={run}")
    dash_duo.wait_for_contains_text("#placement-log-pre",
                                    "layer2/MatMul: (MatMul): /job:localhost/replica:0/task:0/"
                                    "device:GPU:0")
    dash_duo.wait_for_element("#placement-search-input").send_keys("steps_seen\n")
    dash_duo.wait_for_contains_text("#placement-nodes-table", "counter/steps_seen")
    dash_duo.wait_for_contains_text("#placement-nodes-table", "soft_fallback")

    dash_duo.find_element("#app-nav-scalars-link").click()
    dash_duo.wait_for_element("#scalars-curves-div .js-plotly-plot .scatterlayer .trace")
    for name in runs:
        if RunReader(logdir / name).tags():        # the quantized run logs no scalar
            dash_duo.wait_for_contains_text("#scalars-curves-div .legend", name)
    assert dash_duo.get_logs() == []


def test_demo_broken_run_alert_links_to_the_node_and_the_marked_loss(dash_duo, demo_logdir):
    """The deliberately broken third run stopped at its first Inf: the Alerts page lists the
    op that made it (the naive cross entropy's Log), its loss link marks that step and its
    graph link selects the op."""
    logdir, runs = demo_logdir
    broken = runs[-1]
    (alert,) = RunReader(logdir / broken).alerts()
    assert alert.node == "loss/Log" and alert.kind in ("inf", "nan", "nan_and_inf")
    dash_duo.start_server(create_app(logdir))
    open_page(dash_duo, "/alerts")
    dash_duo.wait_for_contains_text(".alerts-table", "loss/Log")
    dash_duo.wait_for_contains_text(".alerts-table", broken)
    dash_duo.find_element(".alerts-table .alert-link[href*='scalars']").click()
    dash_duo.wait_for_contains_text("#scalars-curves-div .annotation-text",
                                    f"step {alert.step}")
    # Its graph link opens the graph with the op selected in the inspector.
    open_page(dash_duo, "/alerts")
    dash_duo.wait_for_element(".alerts-table .alert-link[href*='graph']").click()
    wait_for_graph(dash_duo)
    dash_duo.wait_for_contains_text(".inspector-title", "loss/Log")
    assert f"run={broken}" in dash_duo.driver.current_url
    assert dash_duo.get_logs() == []


# What shows that a page has the demo's data (not a "nothing recorded" message). A page
# added to the workbench without an entry here fails the test below.
FILLED = {
    "Runs": ".runs-table .run-row",
    "Graph": "#graph-cytoscape",
    "Placement": "#placement-nodes-table td",
    "Scalars": "#scalars-curves-div .js-plotly-plot .scatterlayer .trace",
    "Histograms": "#histograms-figures-div .js-plotly-plot .scatterlayer .trace",
    "Images": "#images-picture-img",
    "Text": "#text-entries-div .text-entry",
    "Timeline": "#timeline-bars-graph .barlayer .point",
    "Alerts": ".alerts-table .alert-link",
    "Compare": "#compare-diff-table-div table",
    "Replay": "#replay-curve-graph .xaxislayer-above .xtick",  # the first step logged none yet
    "Pruning": "#pruning-sensitivity-graph .scatterlayer .trace",
    "Quantization": "#quantization-details-div .quantization-metrics",
}


# The trace types plotly.js has registered, and those of every figure on the page.
TRACE_TYPES = """
const drawn = [...document.querySelectorAll('.js-plotly-plot')].flatMap(
    plot => (plot.data || []).map(trace => trace.type || 'scatter'));
return [window.Plotly ? Object.keys(Plotly.PlotSchema.get().traces) : [], drawn];"""


def test_the_demo_fills_every_page_at_1280x800(dash_duo, demo_logdir):
    """...and each page's figures are of trace types that the basic plotly.js bundle the
    browser got has registered (a type it lacks would draw nothing)."""
    logdir, runs = demo_logdir
    assert set(FILLED) == {page.NAME for page in PAGES}
    dash_duo.start_server(create_app(logdir))
    dash_duo.driver.set_window_size(1280, 800)
    drawn_types = set()
    for page in PAGES:
        query = ("" if page.NAME in ("Runs", "Alerts", "Compare", "Pruning", "Quantization")
                 else f"?run={runs[0]}")
        open_page(dash_duo, page.PATH + query)
        if page.NAME == "Graph":
            wait_for_graph(dash_duo, at_least=5)
        else:
            dash_duo.wait_for_element(FILLED[page.NAME])
        assert dash_duo.driver.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth"), (
            f"the {page.NAME} page scrolls sideways at 1280x800")
        assert dash_duo.get_logs() == [], f"console errors on the {page.NAME} page"
        registered, drawn = dash_duo.driver.execute_script(TRACE_TYPES)
        if drawn:
            assert set(registered) == plotly_js.TRACES, "not the basic plotly.js bundle"
            assert set(drawn) <= set(registered), f"the {page.NAME} page draws {drawn}"
        drawn_types.update(drawn)
    assert drawn_types == {"scatter", "bar"}
