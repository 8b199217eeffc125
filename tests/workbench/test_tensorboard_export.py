"""`workbench export --format tensorboard RUN_DIR OUT`: the event file it writes, read back
with our EventFileReader and with tensorboard's own EventAccumulators, holds every scalar
(as float32, TensorBoard's scalar type; NaN included), histogram, text, image and the graph,
with their steps and wall times; refusals are one line on stderr with exit status 2."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tensorboard")
pytest.importorskip("crc32c")

from tensorboard.backend.event_processing import event_accumulator as legacy  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_accumulator as plugin  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

from engine.record import EventFileReader, RunReader, RunWriter  # noqa: E402
from engine.record.event_files import clear_memo  # noqa: E402
from engine.record.schema import GraphRecord, NodeRecord, TensorSpec  # noqa: E402
from workbench.cli import main  # noqa: E402

WALL0 = 1_700_000_000.25
NODES = (
    NodeRecord("x", "Placeholder", (), "/device:CPU:0", {"dtype": "float32"},
               (TensorSpec("float32", (None, 3)),), ("model.py:3 in build",)),
    NodeRecord("dense/w", "VariableV2", (), "", {"shape": [3, 2], "trainable": True},
               (TensorSpec("float32_ref", (3, 2)),), ()),
    NodeRecord("dense/y", "MatMul", ("x", "dense/w", "^x"), "/device:GPU:0",
               {"transpose_a": False, "alpha": 0.5}, (TensorSpec("float32", None),), ()),
)


@pytest.fixture
def recorded(tmp_path):
    clear_memo()
    rng = np.random.default_rng(3)
    with RunWriter(tmp_path, "source") as writer:
        writer.graph(GraphRecord(1, NODES))
        for step in range(40):
            writer.scalar("loss", 1.0 / 3.0 + step * 1e-12, step, wall_time=WALL0 + step / 7)
            writer.scalar("lr", float("nan") if step == 5 else 0.1 * 0.9 ** step, step,
                          wall_time=WALL0 + step)
            if step % 10 == 0:
                writer.histogram("weights", rng.normal(size=500) * (step + 1), step, bins=12)
                writer.text("notes", f"step {step}: **ok** ✓", step)
        writer.histogram_from_buckets("buckets", [0.0, 0.5, 2.0], [3, 4], 7, sum=5.5)
        writer.image("rgb", rng.integers(0, 256, (4, 6, 3), dtype=np.uint8), 3)
        writer.image("gray", rng.integers(0, 256, (5, 2), dtype=np.uint8), 4)
    yield tmp_path / "source"
    clear_memo()


@pytest.fixture
def exported(recorded, tmp_path, capsys):
    out = tmp_path / "tb"
    assert main(["export", "--format", "tensorboard", str(recorded), str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("Exported 80 scalar points, 5 histograms, 4 texts, 2 images "
                                "and a graph of 3 nodes")
    assert "scalars loss: 40 points" in lines
    return RunReader(recorded), out


def test_round_trip_through_our_reader(exported):
    source, out = exported
    back = EventFileReader(out)
    assert back.tags() == source.tags() == ["loss", "lr"]
    for tag in source.tags():
        (steps, values), (back_steps, back_values) = source.scalars(tag), back.scalars(tag)
        np.testing.assert_array_equal(back_steps, steps)
        np.testing.assert_array_equal(back_values, values.astype(np.float32))  # NaN included
        np.testing.assert_array_equal(source.scalar_wall_times(tag), back.scalar_wall_times(tag))
    for tag in ("weights", "buckets"):
        assert back.histograms(tag) == source.histograms(tag)
    assert back.texts("notes") == source.texts("notes")
    for tag in ("rgb", "gray"):
        (ours,), (theirs,) = source.images(tag), back.images(tag)
        assert (theirs.step, theirs.wall_time, theirs.channels) == \
            (ours.step, ours.wall_time, ours.channels)
        np.testing.assert_array_equal(theirs.pixels, ours.pixels)
    nodes = back.graph().nodes
    assert [(n.name, n.op, n.inputs, n.device) for n in nodes] == \
        [(n.name, n.op, n.inputs, n.device) for n in NODES]
    # A dtype attribute travels as a DataType (the reader takes output dtypes from it).
    assert [n.outputs for n in nodes] == [(TensorSpec("float32", (None, 3)),),
                                          (TensorSpec("", (3, 2)),), (TensorSpec("", None),)]
    assert nodes[0].attrs == {"dtype": "float32"}
    assert nodes[2].attrs == {"transpose_a": False, "alpha": 0.5}
    assert nodes[1].attrs == {"shape": "[3, 2]", "trainable": True}


def test_tensorboards_accumulators_read_every_value(exported):
    source, out = exported
    scalars = legacy.EventAccumulator(str(out), size_guidance={legacy.SCALARS: 0})
    scalars.Reload()
    accumulator = plugin.EventAccumulator(str(out), size_guidance={plugin.TENSORS: 0})
    accumulator.Reload()
    # TensorBoard's loaders turn a simple_value into a scalars-plugin tensor.
    assert accumulator.SummaryMetadata("loss").plugin_data.plugin_name == "scalars"
    for tag in source.tags():
        steps, values = source.scalars(tag)
        walls = source.scalar_wall_times(tag).tolist()
        legacy_events, events = scalars.Scalars(tag), accumulator.Tensors(tag)
        for read in (legacy_events, events):
            assert [e.step for e in read] == steps.tolist()
            assert [e.wall_time for e in read] == walls
        np.testing.assert_array_equal([e.value for e in legacy_events],
                                      values.astype(np.float32))
        np.testing.assert_array_equal(
            [tensor_util.make_ndarray(e.tensor_proto).item() for e in events],
            values.astype(np.float32))
    texts = accumulator.Tensors("notes")
    assert [tensor_util.make_ndarray(e.tensor_proto).item().decode() for e in texts] == \
        [t.text for t in source.texts("notes")]
    assert accumulator.SummaryMetadata("notes").plugin_data.plugin_name == "text"


def test_tensorboards_legacy_accumulator_reads_histograms_images_graph(exported):
    source, out = exported
    accumulator = legacy.EventAccumulator(str(out), size_guidance={
        legacy.HISTOGRAMS: 0, legacy.IMAGES: 0})
    accumulator.Reload()
    for ours, event in zip(source.histograms("weights"), accumulator.Histograms("weights"),
                           strict=True):
        histo = event.histogram_value
        assert (event.step, event.wall_time) == (ours.step, ours.wall_time)
        assert (histo.min, histo.max, histo.num, histo.sum) == \
            (ours.min, ours.max, ours.count, ours.sum)
        assert list(histo.bucket_limit) == list(ours.edges[1:])
        assert list(histo.bucket) == list(ours.counts)
    (image,) = accumulator.Images("rgb")
    assert (image.step, image.height, image.width) == (3, 4, 6)
    graph_def = accumulator.Graph()
    assert [(n.name, n.op, list(n.input)) for n in graph_def.node] == \
        [(n.name, n.op, list(n.inputs)) for n in NODES]


def test_export_refuses_a_folder_with_event_files(exported, capsys):
    source, out = exported
    assert main(["export", "--format", "tensorboard", source.path, str(out)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"workbench: error: {out} already holds event files")


def test_export_of_a_folder_that_is_no_run(tmp_path, capsys):
    assert main(["export", "--format", "tensorboard", str(tmp_path / "nope"),
                 str(tmp_path / "out")]) == 2
    assert "not a run store (no such folder)" in capsys.readouterr().err


def test_export_needs_a_known_format(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["export", "--format", "csv", str(tmp_path), str(tmp_path / "out")])
    assert "invalid choice: 'csv'" in capsys.readouterr().err
