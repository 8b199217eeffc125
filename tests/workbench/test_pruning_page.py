"""The Pruning page's callbacks and figures against a real run store: the demo's pruned
MLP (sensitivity curves, three prune-retrain stages, compression figures) beside a run with
no pruning records."""

from __future__ import annotations

import dash
import pytest

from engine.record import RunWriter
from engine.record.schema import CompressionRecord
from viz.pruning import compression_rows, schedule_figure
from workbench import data
from workbench.demo import train_pruned_mlp
from workbench.pages import pruning

LAYERS = ["layer1/weights", "layer2/weights", "logits/weights"]


@pytest.fixture(scope="module")
def pruned_logdir(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("pruning")
    train_pruned_mlp(str(logdir), "pruned", steps=20)
    with RunWriter(logdir, "plain") as writer:
        writer.scalar("loss", 1.0, 1)
    return logdir


@pytest.fixture
def pruned(pruned_logdir):
    data.set_logdir(pruned_logdir)
    yield pruned_logdir
    data.set_logdir("runs")


def test_the_pruned_run_is_chosen_over_a_newer_plain_one(pruned):
    options, chosen, notice = pruning.run_choice(None)
    assert {o["value"] for o in options} == {"pruned", "plain"}
    assert chosen == "pruned" and notice == ""
    assert pruning.run_choice("plain")[1] == "plain"
    assert "No readable run named 'nope'" in pruning.run_choice("nope")[2]


def test_run_view_lists_layers_stages_and_compression(pruned, text_of):
    layer_options, shown, stage_options, stage, table = pruning.run_view("pruned")
    assert [o["value"] for o in layer_options] == LAYERS and shown == LAYERS
    assert [o["value"] for o in stage_options] == [0, 1, 2, 3] and stage == 3
    assert stage_options[1]["label"] == "stage 1 (step 5)"
    text = text_of(table)
    assert "Stored weight values" in text and "× fewer" in text
    assert "6,464 dense" in text and "80.0% pruned" in text


def test_sensitivity_figure_hides_unchecked_layers(pruned):
    figure = pruning.sensitivity("pruned", LAYERS)
    assert [trace.name for trace in figure.data] == LAYERS
    assert list(figure.data[0].x) == [0.0, 50.0, 80.0, 90.0, 95.0]
    assert all(0 <= y <= 1 for y in figure.data[0].y)
    hidden = pruning.sensitivity("pruned", ["logits/weights"])
    assert [trace.name for trace in hidden.data] == ["logits/weights"]
    # A layer keeps its colour when others are hidden.
    assert hidden.data[0].line.color == figure.data[2].line.color


def test_stage_view_draws_sparsity_bars_and_marks_the_stage(pruned):
    bars, schedule = pruning.stage_view("pruned", 2)
    assert list(bars.data[0].x) == LAYERS
    stages = data.prune_stages("pruned")
    expected = [100 * layer.sparsity for layer in stages[2].layers]
    assert list(bars.data[0].y) == pytest.approx(expected)
    assert "stage 2" in bars.layout.title.text
    assert [t.name for t in schedule.data] == ["after pruning", "after retraining"]
    assert list(schedule.data[1].x) == [0, 1, 2, 3]
    assert schedule.layout.shapes[0].x0 == 2
    final_bars, _ = pruning.stage_view("pruned", None)
    assert list(final_bars.data[0].y) == pytest.approx([80.0, 80.0, 80.0], abs=0.1)


def test_bad_and_empty_inputs_answer_with_messages(pruned, text_of):
    assert "No pruning recorded" in text_of(pruning.run_view("plain")[4])
    empty = pruning.sensitivity("plain", None)
    assert "No sensitivity analysis" in empty.layout.annotations[0].text
    bars, _ = pruning.stage_view("pruned", 99)
    assert "no stage 99" in bars.layout.annotations[0].text
    bars, _ = pruning.stage_view("pruned", "two")
    assert "step number" in bars.layout.annotations[0].text
    assert "Not a run name" in text_of(pruning.run_view("../etc")[4])
    assert "Choose a run" in text_of(pruning.run_view(None)[4])
    figure = pruning.sensitivity("pruned", {"bad": 1})
    assert figure.layout.annotations


def test_layout_takes_the_run_from_the_address():
    assert "'data': 'pruned'" in str(pruning.layout(run="pruned")) or \
        "data='pruned'" in str(pruning.layout(run="pruned"))


def test_compression_rows_and_schedule_without_a_chosen_stage():
    record = CompressionRecord(100, 10, 400, 120, 0.98, 0.975, {"a": (100, 10)})
    rows = dict(compression_rows(record))
    assert rows["Stored weight values"] == "100 dense → 10 nonzero (10.00× fewer)"
    assert "-0.50 points" in rows["Accuracy"] and rows["a"] == "10 of 100 kept (90.0% pruned)"
    assert schedule_figure([], None).layout.shapes == ()


# -- live follow: a run still being written shows its new pruning records --


def _stage(k: int, layers=("a/kernel", "b/kernel")):
    from engine.compression.pruning import Stage
    return Stage(k, 10 * k, {n: 0.2 * k for n in layers}, {n: 0.2 * k for n in layers},
                 0.9 - 0.01 * k, 0.95 - 0.01 * k)


def _poll(changed=("pruning",)) -> dict:
    return {"runs": {}, "changed": list(changed)}


def test_a_poll_shows_new_stages_and_keeps_the_users_choice(tmp_path):
    from engine.compression.pruning import record_pruning
    from workbench.live import PARTS
    data.set_logdir(tmp_path)
    try:
        with RunWriter(tmp_path, "live") as writer:
            record_pruning(writer, {"a/kernel": [(0.0, 0.9), (0.5, 0.8)]}, [_stage(0), _stage(1)])
            writer.flush()
            layers, shown, stages, stage, _ = pruning.run_view("live")
            before = PARTS["pruning"]("live", None)
            assert [o["value"] for o in stages] == [0, 1] and stage == 1 and shown == ["a/kernel"]
            assert pruning.run_view("live", shown, stage, layers, stages, _poll(["alerts"])) == (
                dash.no_update,) * 5            # nothing the page shows changed
            record_pruning(writer, {"b/kernel": [(0.0, 0.9), (0.5, 0.7)]}, [_stage(2)])
            writer.flush()
            assert PARTS["pruning"]("live", None) != before
            # At the newest stage: the new newest is chosen; the new layer is shown.
            got = pruning.run_view("live", shown, 1, layers, stages, _poll())
            assert [o["value"] for o in got[0]] == ["a/kernel", "b/kernel"]
            assert got[1] == ["a/kernel", "b/kernel"]
            assert [o["value"] for o in got[2]] == [0, 1, 2] and got[3] == 2
            # An earlier stage the user chose stays, a layer they hid stays hidden, and what
            # did not change is not sent again.
            kept = pruning.run_view("live", ["b/kernel"], 0, got[0], got[2], _poll())
            assert kept[:4] == (dash.no_update,) * 4
            sparsity, schedule = pruning.stage_view("live", 0, _poll())
            assert schedule.layout.uirevision == "live:schedule"
            assert pruning.stage_view("live", 0, _poll(["alerts"])) == (dash.no_update,) * 2
            curves = pruning.sensitivity("live", ["a/kernel", "b/kernel"], _poll())
            assert len(curves.data) == 2 and curves.layout.uirevision == "live:sensitivity"
            assert pruning.sensitivity("live", None, _poll(["steps"])) is dash.no_update
    finally:
        data.set_logdir("runs")


def test_hostile_state_after_a_poll_becomes_a_message(pruned, text_of):
    got = pruning.run_view("pruned", {"x": 1}, "s", 5, None, _poll())
    assert "the layers must be a list" in text_of(got[4]).lower()
