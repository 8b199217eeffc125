"""TensorBoard event-file runs in the workbench: listed beside our own runs, their scalars
drawn by the Scalars page callbacks, their graph by the Graph page's, damage shown as a
reason; the data module refreshes when an event file grows."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorboard")
pytest.importorskip("crc32c")

import tensorboard_logdir  # noqa: E402
from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: E402

from engine.record.event_files import clear_memo  # noqa: E402
from engine.record.tfrecord import write_record  # noqa: E402
from workbench import data  # noqa: E402
from workbench.pages import graph, runs, scalars  # noqa: E402


@pytest.fixture
def mixed(tmp_path):
    pytest.importorskip("torch.utils.tensorboard")
    clear_memo()
    logs = tensorboard_logdir.write_mixed_logdir(tmp_path / "logs")
    data.set_logdir(logs.logdir)
    yield logs
    data.set_logdir("runs")
    clear_memo()


def _rows(text_of) -> dict[str, str]:
    table = runs.runs_table(None)
    return {row.children[0].children: text_of(row) for row in table.children[1].children}


def test_runs_table_lists_event_file_runs_beside_ours(mixed, text_of):
    rows = _rows(text_of)
    assert set(rows) == {mixed.ours, mixed.torch, mixed.tf}
    assert "finished" in rows[mixed.torch] and " 30 " in f" {rows[mixed.torch]} "
    assert "loss, lr" in rows[mixed.torch] and "scalars" in rows[mixed.torch]
    assert "finished" in rows[mixed.ours]
    assert set(data.healthy_run_names()) == set(rows)


def test_scalars_page_draws_an_event_file_run_beside_ours(mixed):
    options, chosen, notice = scalars.run_choice(mixed.torch)
    assert chosen == [mixed.torch] and notice == ""
    assert {o["value"] for o in options} == {mixed.ours, mixed.torch, mixed.tf}
    tags, value = scalars.tag_choice([mixed.ours, mixed.torch], None)
    assert tags == ["accuracy", "loss", "lr"] and value == ["loss"]
    (figure_graph,) = scalars.curves([mixed.ours, mixed.torch], ["loss"], 0.0)
    traces = {trace.name: trace for trace in figure_graph.figure.data}
    assert set(traces) == {mixed.ours, mixed.torch}
    torch_trace = traces[mixed.torch]
    assert list(torch_trace.x) == list(range(30))
    assert list(torch_trace.y) == list(mixed.torch_loss)
    np.testing.assert_allclose(traces[mixed.ours].y, [1 / (s + 1) for s in range(30)])


def test_scalars_page_says_when_an_event_file_run_lacks_the_tag(mixed, text_of):
    notes = scalars.curves([mixed.tf], ["accuracy"], 0.6)
    assert "None of the chosen runs has the chosen tags" in text_of(notes)


def test_graph_page_draws_a_tensorflow_graph_def(mixed):
    expanded, _, _ = graph.next_state(None, mixed.tf, None, None, None, None, {})
    elements, _, problem, _, summary, _ = graph.draw(mixed.tf, expanded, None, None, [])
    assert problem == "" and summary.startswith("graph version 0: ")
    assert "nodes drawn for 9, 0 cross-device edges" in summary
    assert elements
    assert graph.draw(mixed.torch, [], None, None, [])[2] == f"Run {mixed.torch} recorded no graph."


def test_torch_add_graph_with_dangling_inputs_draws(tmp_path, text_of):
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter

    clear_memo()
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    writer = SummaryWriter(str(tmp_path / "logs" / "torch_graph"))
    with warnings.catch_warnings():   # torch.jit.trace's deprecation, inside add_graph
        warnings.simplefilter("ignore", DeprecationWarning)
        writer.add_graph(model, torch.zeros(2, 3))
    writer.close()
    data.set_logdir(tmp_path / "logs")
    try:
        expanded, _, _ = graph.next_state(graph.EXPAND_BUTTON, "torch_graph", None, None, [],
                                          None, {})
        elements, _, problem, _, summary, _ = graph.draw("torch_graph", expanded, None, None,
                                                         [])
        assert problem == "" and "nodes drawn" in summary and elements
        panel = graph.inspect("torch_graph", "Sequential", None)
        assert "Sequential" in text_of(panel)
    finally:
        data.set_logdir("runs")


def _append_scalar(path: Path, step: int, value: float) -> None:
    event = event_pb2.Event(wall_time=time.time(), step=step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="loss", simple_value=value)]))
    with open(path, "ab") as handle:
        write_record(handle, event.SerializeToString())


def test_a_growing_event_file_refreshes_the_cached_queries(mixed):
    (path,) = (mixed.logdir / mixed.torch).iterdir()
    steps, _ = data.scalars(mixed.torch, "loss")
    assert len(steps) == 30
    _append_scalar(path, 99, 0.5)
    steps, values = data.scalars(mixed.torch, "loss")
    assert steps[-1] == 99 and values[-1] == 0.5
    assert data.info(mixed.torch).status == "running"   # written a moment ago


def test_a_damaged_event_file_run_shows_its_reason(mixed, text_of):
    (path,) = (mixed.logdir / mixed.torch).iterdir()
    with open(path, "r+b") as handle:
        handle.seek(200)
        handle.write(b"\x00\x01\x02\x03")
    tensorboard_logdir._age(mixed.logdir)
    row = _rows(text_of)[mixed.torch]
    assert "damaged" in row and f"{mixed.torch}/{path.name}: the record at byte" in row
    assert str(mixed.logdir) not in row
    # What precedes the damage still draws.
    (figure_graph,) = scalars.curves([mixed.torch], ["loss"], 0.0)
    assert 0 < len(figure_graph.figure.data[0].x) < 30


def test_run_path_accepts_event_file_folders_only(mixed):
    assert data.run_path(mixed.torch) == mixed.logdir / mixed.torch
    (mixed.logdir / "plain").mkdir()
    (mixed.logdir / "plain" / "notes.txt").write_text("not a run")
    with pytest.raises(data.UnknownRunError, match="no run named 'plain'"):
        data.run_path("plain")
