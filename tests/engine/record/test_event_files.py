"""EventFileReader over event files written by torch.utils.tensorboard, tensorboardX and
real TensorFlow (the committed fixture tf_run/, 4 KB, from fixtures/make_tf_run.py):
scalars' values, steps and wall times, histograms' buckets, images' pixels, text, graphs;
tensorboard's own reader as the reference for framing and for where damage stops reading;
corrupt, truncated and hostile files listed as DAMAGED or UNREADABLE with file and reason."""

from __future__ import annotations

import os
import shutil
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorboard")
pytest.importorskip("crc32c")

from tensorboard.backend.event_processing import event_accumulator as tb_accumulator  # noqa: E402
from tensorboard.backend.event_processing import event_file_loader  # noqa: E402
from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: E402

from engine.record import EventFileReader, RunReader, RunWriter, list_runs, open_run  # noqa: E402
from engine.record.event_files import FORMAT, clear_memo  # noqa: E402
from engine.record.reader import RunStoreError, RunStoreKeyError  # noqa: E402
from engine.record.schema import DAMAGED, FINISHED, RUNNING, UNREADABLE  # noqa: E402
from engine.record.tfrecord import RecordFile, write_record  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "tf_run"
LOSSES = [2.5, 1.25, 0.75, 0.5, 0.375]
WALL0 = 1_700_000_000.0
STALE = time.time() - 3600


@pytest.fixture(autouse=True)
def _fresh_memo():
    clear_memo()
    yield
    clear_memo()


def _age(run_dir: Path) -> Path:
    """Makes every file of the run look long finished (not being written)."""
    for path in run_dir.iterdir():
        os.utime(path, (STALE, STALE))
    return run_dir


def _event_file(run_dir: Path) -> Path:
    (path,) = [p for p in run_dir.iterdir() if "tfevents" in p.name]
    return path


class _Net:
    @staticmethod
    def build():
        import torch

        class Net(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.fc1 = torch.nn.Linear(3, 4)
                self.fc2 = torch.nn.Linear(4, 2)

            def forward(self, x):
                return self.fc2(torch.relu(self.fc1(x)))

        return Net(), torch.zeros(1, 3)


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory):
    """Written once for the module: tracing the graph takes seconds."""
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    run_dir = tmp_path_factory.mktemp("torch") / "logs" / "torch_run"
    writer = torch_tb.SummaryWriter(str(run_dir))
    rng = np.random.default_rng(0)
    histogram_values = {}
    for step, loss in enumerate(LOSSES):
        writer.add_scalar("loss", loss, step * 10, walltime=WALL0 + step)
        writer.add_scalar("lr", 0.1 / (step + 1), step * 10, walltime=WALL0 + step)
        values = rng.normal(size=200) + step
        histogram_values[step * 10] = values
        writer.add_histogram("weights", values, step * 10, bins=8, walltime=WALL0 + step)
    pixels = rng.integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    writer.add_image("sample", pixels, 20, dataformats="HWC", walltime=WALL0 + 2)
    writer.add_text("notes", "first *note*", 10, walltime=WALL0 + 1)
    net, example = _Net.build()
    with warnings.catch_warnings():   # torch.jit.trace's deprecation, inside add_graph
        warnings.simplefilter("ignore", DeprecationWarning)
        writer.add_graph(net, example)
    writer.close()
    _age(run_dir)
    return run_dir, histogram_values, pixels


def test_torch_scalars_values_steps_and_wall_times(torch_run):
    run_dir, _, _ = torch_run
    reader = open_run(run_dir)
    assert isinstance(reader, EventFileReader)
    assert reader.tags() == ["loss", "lr"]
    steps, values = reader.scalars("loss")
    assert steps.dtype == np.int64 and values.dtype == np.float64
    assert steps.tolist() == [0, 10, 20, 30, 40]
    # torch writes simple_value, a float32.
    assert values.tolist() == np.float32(LOSSES).astype(np.float64).tolist()
    assert reader.scalar_wall_times("loss").tolist() == [WALL0 + i for i in range(5)]
    _, lr = reader.scalars("lr")
    np.testing.assert_allclose(lr, [0.1 / (i + 1) for i in range(5)], rtol=1e-7)


def test_torch_run_info(torch_run):
    run_dir, _, _ = torch_run
    info = open_run(run_dir).info()
    assert info.status == FINISHED and info.error is None
    assert info.num_steps == 41 and info.tags == ("loss", "lr")
    assert info.config["format"] == FORMAT
    assert info.config["event_files"] == [_event_file(run_dir).name]
    assert info.started <= WALL0


def test_torch_histograms_match_tensorboards_reading(torch_run):
    run_dir, written, _ = torch_run
    records = open_run(run_dir).histograms("weights")
    assert [r.step for r in records] == [0, 10, 20, 30, 40]
    reference = tb_accumulator.EventAccumulator(
        str(run_dir), size_guidance={tb_accumulator.HISTOGRAMS: 0})
    reference.Reload()
    for record, event in zip(records, reference.Histograms("weights")):
        histo = event.histogram_value
        values = written[record.step]
        assert record.count == len(values) == int(histo.num)
        assert record.min == values.min() and record.max == values.max()
        assert record.sum == pytest.approx(values.sum(), rel=1e-12)
        assert record.counts == tuple(histo.bucket)
        # TensorBoard's own drawing: bucket 0 from min, the last to max.
        assert record.edges == (histo.min, *histo.bucket_limit[:-1], histo.max)
        assert len(record.edges) == len(record.counts) + 1
        assert sum(record.counts) == len(values)
        assert record.wall_time == event.wall_time


def test_torch_image_pixels_survive(torch_run):
    run_dir, _, pixels = torch_run
    reader = open_run(run_dir)
    assert reader.image_tags() == ["sample"]
    (image,) = reader.images("sample")
    assert (image.step, image.wall_time) == (20, WALL0 + 2)
    assert (image.height, image.width, image.channels) == (5, 7, 3)
    assert image.pixels.dtype == np.uint8
    np.testing.assert_array_equal(image.pixels, pixels)


def test_torch_text(torch_run):
    run_dir, _, _ = torch_run
    reader = open_run(run_dir)
    # torch's add_text names the tag <tag>/text_summary, as TensorBoard shows it.
    assert reader.text_tags() == ["notes/text_summary"]
    (text,) = reader.texts("notes/text_summary")
    assert (text.step, text.wall_time, text.text) == (10, WALL0 + 1, "first *note*")


def test_torch_graph_becomes_a_graph_record(torch_run):
    run_dir, _, _ = torch_run
    reader = open_run(run_dir)
    graph = reader.graph()
    assert reader.graph_versions() == [0] and reader.graph(0) == graph
    assert reader.graph(1) is None
    names = {node.name for node in graph.nodes}
    ops = [node.op for node in graph.nodes]
    assert ops.count("aten::linear") == 2 and "aten::relu" in ops
    linear = [node for node in graph.nodes if node.op == "aten::linear"]
    # As torch wrote them (TensorBoard draws a dangling input, here a module's `self`, too).
    assert all(source in names for node in linear for source in node.inputs)
    assert linear[0].inputs[0] == "input/x"
    # module paths are the name scopes
    assert {node.name.split("/")[1] for node in linear} == {"Linear[fc1]", "Linear[fc2]"}
    assert [spec.shape for spec in linear[0].outputs] in ([(1, 4)], [(1, 2)])


def test_queries_event_files_cannot_answer_are_empty(torch_run):
    run_dir, _, _ = torch_run
    reader = open_run(run_dir)
    assert reader.placements() == [] and reader.plans() == [] and reader.steps() == []
    assert reader.devices() == [] and reader.alerts() == [] and reader.cut_edges() == []
    assert reader.partitions() == [] and reader.tensor_summaries() == []
    assert reader.last_traced_step() is None and reader.damage() is None
    with pytest.raises(RunStoreKeyError, match="no step 3"):
        reader.step_stats(3)
    with pytest.raises(RunStoreKeyError, match=r"no scalar tag 'nope'.*\['loss', 'lr'\]"):
        reader.scalars("nope")
    kinds = [kind for _, _, kind, _ in reader.events(limit=100)]
    assert kinds.count("scalar") == 10 and kinds.count("histogram") == 5
    assert "graph" in kinds and "image" in kinds and "text" in kinds
    seqs = [seq for seq, *_ in reader.events(limit=100)]
    assert seqs == sorted(seqs)
    assert reader.events(after_seq=seqs[2], limit=2) == reader.events(limit=100)[3:5]


def test_tensorboardx_writer(tmp_path):
    tbx = pytest.importorskip("tensorboardX")
    run_dir = tmp_path / "tbx"
    writer = tbx.SummaryWriter(str(run_dir))
    for step, loss in enumerate(LOSSES):
        writer.add_scalar("train/loss", loss, step, walltime=WALL0 + step)
    writer.add_histogram("h", np.arange(10.0), 3, walltime=WALL0)
    writer.add_text("t", "from tensorboardX", 4)
    writer.close()
    reader = open_run(run_dir)
    steps, values = reader.scalars("train/loss")
    assert steps.tolist() == list(range(5)) and values.tolist() == LOSSES
    assert reader.scalar_wall_times("train/loss").tolist() == [WALL0 + i for i in range(5)]
    (histogram,) = reader.histograms("h")
    assert (histogram.step, histogram.count, histogram.min, histogram.max, histogram.sum) == \
        (3, 10, 0.0, 9.0, 45.0)
    assert reader.texts(reader.text_tags()[0])[0].text == "from tensorboardX"


def test_tensorflow_written_fixture(tmp_path):
    run_dir = _age(Path(shutil.copytree(FIXTURE, tmp_path / "tf_run")))
    reader = open_run(run_dir)
    info = reader.info()
    assert info.status == FINISHED and info.num_steps == 3 and len(info.config["event_files"]) == 2
    steps, values = reader.scalars("loss")
    assert steps.tolist() == [0, 1, 2]
    assert values.tolist() == np.float32([1.0, 0.5, 1 / 3]).astype(np.float64).tolist()
    walls = reader.scalar_wall_times("loss")
    assert np.all(np.diff(walls) >= 0) and walls[0] > 1.7e9
    records = reader.histograms("weights")
    assert [r.edges for r in records] == [(0.0, 1.0, 2.0, 3.0)] * 3
    assert [r.counts for r in records] == [(1.0, 2.0 + s, 1.0) for s in range(3)]
    assert [(r.min, r.max, r.count, r.sum) for r in records] == \
        [(0.0, 3.0, 4 + s, 0.5 + 1.5 * (2 + s) + 2.5) for s in range(3)]
    pixels = np.arange(2 * 3 * 4 * 3, dtype=np.uint8).reshape(2, 3, 4, 3)
    assert reader.image_tags() == ["picture/0", "picture/1"]
    for i, tag in enumerate(reader.image_tags()):
        (image,) = reader.images(tag)
        assert (image.step, image.height, image.width, image.channels) == (1, 3, 4, 3)
        np.testing.assert_array_equal(image.pixels, pixels[i])
    assert [(t.step, t.text) for t in reader.texts("note")] == [(2, "hello from TF")]


def test_tensorflow_graph_def(tmp_path):
    reader = open_run(shutil.copytree(FIXTURE, tmp_path / "tf_run"))
    nodes = {node.name: node for node in reader.graph().nodes}
    matmul = nodes["dense/y"]
    assert matmul.op == "MatMul"
    assert matmul.inputs == ("x", "dense/y/ReadVariableOp")
    assert matmul.attrs["T"] == "float32" and matmul.attrs["transpose_a"] is False
    assert [spec.shape for spec in matmul.outputs] == [(None, 2)]
    assert nodes["x"].op == "Placeholder" and nodes["x"].attrs["shape"] == [None, 3]
    assert nodes["x"].outputs[0].dtype == "float32"
    assert nodes["dense/ones"].attrs["value"].startswith("tensor<float32>[3, 2]")
    assert nodes["out"].inputs == ("dense/y",)


def test_framing_matches_tensorboards_record_reader(torch_run):
    """Our framing yields exactly the records tensorboard's own loader yields."""
    path = _event_file(torch_run[0])
    with_ours = [bytes(record) for _, record in RecordFile(path)]
    reference = list(event_file_loader.RawEventFileLoader(str(path)).Load())
    assert with_ours == reference and len(with_ours) > 15


def _scalar_file(run_dir: Path, count: int) -> Path:
    run_dir.mkdir(parents=True)
    path = run_dir / "events.out.tfevents.1.test"
    with open(path, "wb") as handle:
        write_record(handle, event_pb2.Event(wall_time=WALL0,
                                             file_version="brain.Event:2").SerializeToString())
        for step in range(count):
            value = summary_pb2.Summary.Value(tag="loss", simple_value=float(step))
            event = event_pb2.Event(wall_time=WALL0 + step, step=step,
                                    summary=summary_pb2.Summary(value=[value]))
            write_record(handle, event.SerializeToString())
    return path


def _offsets(path: Path) -> list[int]:
    return [offset for offset, _ in RecordFile(path)]


def _tensorboard_reads(path: Path) -> list[float]:
    loader = event_file_loader.LegacyEventFileLoader(str(path))
    return [event.summary.value[0].simple_value for event in loader.Load()
            if event.HasField("summary")]


def test_corrupt_record_keeps_everything_before_it(tmp_path):
    path = _scalar_file(tmp_path / "logs" / "corrupt", 10)
    offsets = _offsets(path)
    data = bytearray(path.read_bytes())
    data[offsets[6] + 14] ^= 0xFF            # a data byte of the 6th scalar record
    path.write_bytes(bytes(data))
    _age(path.parent)
    (info,) = list_runs(tmp_path / "logs")
    assert info.status == DAMAGED
    assert info.error.startswith(f"corrupt/{path.name}: the record at byte {offsets[6]} "
                                 "fails its data CRC-32C; 6 records before it were read")
    steps, values = open_run(path.parent).scalars("loss")
    # Where TensorFlow's loader stops too (it drops the rest of the file silently).
    assert values.tolist() == _tensorboard_reads(path) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert steps.tolist() == [0, 1, 2, 3, 4]


def test_corrupt_length_header(tmp_path):
    path = _scalar_file(tmp_path / "logs" / "header", 4)
    offsets = _offsets(path)
    data = bytearray(path.read_bytes())
    data[offsets[2]] ^= 0x01
    path.write_bytes(bytes(data))
    _age(path.parent)
    (info,) = list_runs(tmp_path / "logs")
    assert info.status == DAMAGED and "fails its length CRC-32C" in info.error
    assert open_run(path.parent).scalars("loss")[1].tolist() == [0.0]


def test_truncated_file_is_damaged_once_it_stopped_growing(tmp_path):
    path = _scalar_file(tmp_path / "logs" / "cut", 6)
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.truncate(size - 5)
    _age(path.parent)
    (info,) = list_runs(tmp_path / "logs")
    assert info.status == DAMAGED
    assert f"cut/{path.name}: the record at byte" in info.error
    assert "truncated in its data" in info.error and "6 records before it were read" in info.error
    values = open_run(path.parent).scalars("loss")[1].tolist()
    assert values == _tensorboard_reads(path) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_partial_last_record_of_a_live_file_is_not_damage(tmp_path):
    path = _scalar_file(tmp_path / "logs" / "live", 3)
    with open(path, "ab") as handle:
        handle.write(b"\x20\x00\x00")          # a writer mid-way through its next record
    (info,) = list_runs(tmp_path / "logs")
    assert info.status == RUNNING and info.error is None
    assert open_run(path.parent).scalars("loss")[1].tolist() == [0.0, 1.0, 2.0]


def test_appended_events_show_on_the_next_query(tmp_path):
    path = _scalar_file(tmp_path / "grow", 2)
    reader = open_run(path.parent)
    assert reader.scalars("loss")[0].tolist() == [0, 1]
    with open(path, "ab") as handle:
        value = summary_pb2.Summary.Value(tag="loss", simple_value=7.0)
        write_record(handle, event_pb2.Event(step=5, summary=summary_pb2.Summary(
            value=[value])).SerializeToString())
    assert reader.scalars("loss")[0].tolist() == [0, 1, 5]


def test_garbage_event_file_is_unreadable_and_hides_no_other_run(tmp_path):
    logdir = tmp_path / "logs"
    (logdir / "garbage").mkdir(parents=True)
    (logdir / "garbage" / "events.out.tfevents.123.host").write_bytes(b"not a record " * 10)
    _age(logdir / "garbage")
    _scalar_file(logdir / "good", 3)
    with RunWriter(logdir, "ours") as writer:
        writer.scalar("loss", 1.0, 0)
    (logdir / "not_a_run").mkdir()
    infos = {info.name: info for info in list_runs(logdir)}
    assert infos["garbage"].status == UNREADABLE
    assert infos["garbage"].error.startswith("garbage/events.out.tfevents.123.host: the "
                                             "record at byte 0 fails its length CRC-32C")
    assert infos["good"].status == RUNNING and infos["good"].tags == ("loss",)
    assert infos["ours"].status == FINISHED and infos["not_a_run"].status == UNREADABLE
    assert isinstance(open_run(logdir / "ours"), RunReader)


def test_record_that_is_not_an_event(tmp_path):
    path = _scalar_file(tmp_path / "logs" / "notevent", 3)
    with open(path, "ab") as handle:
        write_record(handle, b"\xff\xff\xff\xff")
    _age(path.parent)
    (info,) = list_runs(tmp_path / "logs")
    assert info.status == DAMAGED and "is not an Event" in info.error
    assert open_run(path.parent).scalars("loss")[1].tolist() == [0.0, 1.0, 2.0]


def test_bad_plugin_values_are_damage_but_the_rest_reads(tmp_path):
    path = _scalar_file(tmp_path / "logs" / "badvalue", 2)
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="histograms"))
    bad = summary_pb2.Summary.Value(tag="h", metadata=metadata)
    bad.tensor.dtype = 2          # DT_DOUBLE, one value: not k x 3
    bad.tensor.double_val.append(1.0)
    image = summary_pb2.Summary.Value(tag="img", image=summary_pb2.Summary.Image(
        height=2, width=2, colorspace=3, encoded_image_string=b"\x89PNG broken"))
    with open(path, "ab") as handle:
        for value in (bad, image):
            write_record(handle, event_pb2.Event(step=3, summary=summary_pb2.Summary(
                value=[value])).SerializeToString())
    _age(path.parent)
    (info,) = list_runs(tmp_path / "logs")
    assert info.status == DAMAGED and "histogram 'h' at step 3" in info.error
    reader = open_run(path.parent)
    assert reader.scalars("loss")[1].tolist() == [0.0, 1.0]
    assert reader.image_tags() == ["img"]
    with pytest.raises(RunStoreError, match="image 'img' at step 3 does not decode"):
        reader.images("img")


def test_empty_event_file(tmp_path):
    run_dir = tmp_path / "logs" / "empty"
    run_dir.mkdir(parents=True)
    (run_dir / "events.out.tfevents.1.host").write_bytes(b"")
    _age(run_dir)
    (info,) = list_runs(tmp_path / "logs")
    assert (info.status, info.num_steps, info.tags, info.error) == (FINISHED, 0, (), None)
    assert open_run(run_dir).graph() is None


def test_a_folder_without_event_files_is_not_an_event_reader(tmp_path):
    with pytest.raises(RunStoreError, match="no TensorBoard event files"):
        EventFileReader(tmp_path)


def test_an_event_file_run_answers_every_query_a_run_store_does():
    """The pages call the same queries on both kinds of run: none may be missing here."""
    from engine.record import reader
    from engine.record.event_files import EventFileReader

    missing = [name for name in reader._QUERIES if not hasattr(EventFileReader, name)]
    assert missing == []
