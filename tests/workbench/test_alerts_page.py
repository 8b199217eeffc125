"""The Alerts page's callbacks against a real run: the demo's deliberately broken MLP (the
naive cross entropy at learning rate 5, check_numerics on) stops at its first Inf, and the
page lists that op once with links to the graph and to the loss curve at that step."""

import pytest

from engine.record import RunWriter
from engine.record.schema import AlertRecord, TensorSummaryRecord
from viz.alerts import first_occurrences, tensor_text
from workbench import data
from workbench.demo import train_broken_mlp
from workbench.pages import alerts, scalars


@pytest.fixture(scope="module")
def broken_logdir(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("alerts")
    path, failed = train_broken_mlp(str(logdir), "broken", steps=40)
    with RunWriter(logdir, "healthy") as writer:
        writer.scalar("loss", 1.0, 1)
    return logdir, failed


@pytest.fixture
def broken(broken_logdir):
    data.set_logdir(broken_logdir[0])
    yield broken_logdir
    data.set_logdir("runs")


def test_the_broken_run_is_chosen_and_its_first_alert_listed(broken, text_of):
    _, failed = broken
    assert failed is not None and failed <= 40
    options, chosen, notice = alerts.run_choice(None)
    assert notice == ""
    assert {o["value"] for o in options} == {"broken", "healthy"}
    assert chosen == ["broken"]             # the runs that have alerts
    rows, messages, style, selected = alerts.alerts_table(chosen)
    assert style == {"display": "block"} and messages == [] and selected == []
    (row,) = rows
    (alert,) = data.alerts("broken")        # at its Session step (the initializer counts)
    assert row["node"] == "loss/Log" and row["op"] == "Log" and row["step"] == alert.step
    assert row["id"] == alerts.row_id("broken", "loss/Log", alert.kind)
    assert 'class="alert-link"' in row["open"]
    assert "/graph?run=broken&amp;step=" in row["open"] and "node=loss%2FLog" in row["open"]
    assert "/scalars?run=broken&amp;tag=loss&amp;step=" in row["open"]
    panel = text_of(alerts.details([row["id"]], chosen))
    assert panel.startswith(f"broken · loss/Log (Log) at step {alert.step}")
    assert alerts.details([], chosen) == alerts.DETAILS_HINT
    assert alerts.details(["nope|x|nan"], chosen) == alerts.DETAILS_HINT


def test_the_address_chooses_the_run(broken):
    """/alerts?run=NAME: that run alone, even one without alerts; a name that is no run
    falls back to every run that has alerts, and the page names it (as every page does)."""
    assert alerts.run_choice("healthy")[1:] == (["healthy"], "")
    assert alerts.run_choice("broken")[1:] == (["broken"], "")
    assert alerts.run_choice("nope")[1:] == (
        ["broken"], "No readable run named 'nope' in the log directory; showing broken.")
    assert alerts.run_choice("")[2] == ""


def test_a_run_without_alerts_says_how_to_get_them(broken, text_of):
    rows, messages, style, _ = alerts.alerts_table(["healthy"])
    assert rows == [] and style == {"display": "none"}
    assert "check_numerics=True" in text_of(messages)
    assert "Choose at least one run" in text_of(alerts.alerts_table([])[1])
    assert "Not a run name" in text_of(alerts.alerts_table(["../etc"])[1])
    assert "Not a run name" in text_of(alerts.details(["a|b|c"], ["../etc"]))


def test_a_poll_replaces_the_rows_and_the_selection_follows_its_row(broken):
    rows, *_ = alerts.alerts_table(["broken"])
    tick = {"runs": {}, "changed": ["alerts"]}
    # The table's sort, filter and page are not outputs at all; the selection is sent only
    # when its row moved.
    got = alerts.alerts_table(["broken"], tick, [rows[0]["id"]], [0])
    assert got[0] == rows and got[3] is alerts.no_update
    assert alerts.alerts_table(["broken"], tick, [rows[0]["id"]], [3])[3] == [0]
    assert alerts.alerts_table(["broken"], tick, ["gone|x|nan"], [0])[3] == []
    assert alerts.alerts_table(["broken"], None, [rows[0]["id"]], [0])[3] == []   # a new choice


def test_the_loss_curve_marks_the_alert_step(broken):
    _, failed = broken
    (graph,) = scalars.curves(["broken"], ["loss"], 0.0, None, "step", [], failed - 1)
    shapes = graph.figure.layout.shapes
    assert len(shapes) == 1 and shapes[0].x0 == failed - 1
    assert graph.figure.layout.annotations[0].text == f"step {failed - 1}"
    assert "step number" in str(scalars.curves(["broken"], ["loss"], 0.0, None, "step", [],
                                               "seven"))
    page = scalars.layout(run="broken", tag="loss", step=str(failed))
    assert f"'data': {failed}" in str(page) or f"data={failed}" in str(page)


def _summary(node, nan=0, pos=0):
    return TensorSummaryRecord(node, 3, "float32", (2, 5), 10, -1.0, 2.0, 0.5, 0.7,
                               nan_count=nan, pos_inf_count=pos)


def test_recurring_alerts_collapse_to_their_first_step():
    records = [AlertRecord(step, "a/Log", "Log", "/cpu:0", "inf", "m", seq=step)
               for step in (9, 4, 7)]
    records.append(AlertRecord(5, "a/Log", "Log", "/cpu:0", "nan", "m", seq=10))
    entries = first_occurrences("r", records)
    assert [(e.alert.step, e.alert.kind, e.occurrences, e.last_step) for e in entries] == \
        [(4, "inf", 3, 9), (5, "nan", 1, 5)]
    assert tensor_text(_summary("x:0", nan=2, pos=1)) == \
        "x:0 float32[2, 5]: min -1 max 2 mean 0.5; 2 NaN, 1 +Inf of 10"
    assert tensor_text(_summary("x:0")).endswith("; 10 finite")
