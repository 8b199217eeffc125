"""Text summaries as string tensors (schema version 4): RunWriter.text takes a str, a list,
a nested list or a numpy array of strings and the reader gives back its cells and shape
(inline and in a side file); ragged or non-string input is refused naming the tag; runs of
older versions read their texts as single strings and upgrade; event files hold the shapes
TensorFlow writes (checked against tf.compat.v1.summary.text of TF 2.21: DT_STRING, the
tensor's dims, string_val in row-major order, plugin "text") and read back with them; the
TensorBoard export keeps them; tf.summary.text through FileWriter keeps them."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from test_record_v2 import make_v1_run

from engine.record import RunReader, RunWriter, open_run, upgrade_run
from engine.record.schema import SCHEMA_VERSION, TextRecord
from engine.record.store import BLOB_THRESHOLD

TABLE = [["name", "value"], ["lr", "`0.5`"], ["batch", "**64**"]]
WALL0 = 1_700_000_000.0


def _written(tmp_path, *texts) -> RunReader:
    with RunWriter(tmp_path, "r") as writer:
        for step, (tag, value) in enumerate(texts):
            writer.text(tag, value, step)
    return RunReader(tmp_path / "r")


def test_strings_lists_tables_and_arrays_keep_their_shapes(tmp_path):
    cube = np.array([[["a", "b"], ["c", "d"]], [["e", "f"], ["g", "h"]]])
    reader = _written(tmp_path, ("one", "# one *string*"), ("column", ["x", "y", "z"]),
                      ("table", TABLE), ("cube", cube), ("tuple", ("p", "q")),
                      ("bytes", np.array([b"caf\xc3\xa9", b"\xff"], dtype=object)),
                      ("fixed", np.array([[b"s1"], [b"s2"]])), ("empty", []),
                      ("empty_rows", [[], []]), ("scalar_array", np.array("zero-d")),
                      ("arrays_in_a_list", [np.array(["r", "s"]), [np.array("t"), "u"]]))
    got = {tag: reader.texts(tag)[0] for tag in reader.text_tags()}
    assert (got["one"].cells, got["one"].shape, got["one"].text) == (
        ("# one *string*",), (), "# one *string*")
    assert (got["column"].cells, got["column"].shape) == (("x", "y", "z"), (3,))
    assert got["table"].shape == (3, 2)
    assert got["table"].cells == tuple(cell for row in TABLE for cell in row)
    assert (got["cube"].cells, got["cube"].shape) == (tuple("abcdefgh"), (2, 2, 2))
    assert (got["tuple"].cells, got["tuple"].shape) == (("p", "q"), (2,))
    assert got["bytes"].cells == ("café", "\ufffd")      # UTF-8, a bad byte replaced
    assert (got["fixed"].cells, got["fixed"].shape) == (("s1", "s2"), (2, 1))
    assert (got["empty"].cells, got["empty"].shape) == ((), (0,))
    assert (got["empty_rows"].cells, got["empty_rows"].shape) == ((), (2, 0))
    assert (got["scalar_array"].cells, got["scalar_array"].shape) == (("zero-d",), ())
    assert got["table"].step == 2 and got["table"].tag == "table"
    assert (got["arrays_in_a_list"].cells, got["arrays_in_a_list"].shape) == (
        ("r", "s", "t", "u"), (2, 2))


def test_a_large_table_goes_to_a_side_file_and_reads_back_whole(tmp_path):
    rows = [[f"row {r} " + "x" * 100, f"{r}"] for r in range(1000)]
    reader = _written(tmp_path, ("big", rows))
    (record,) = reader.texts("big")
    assert record.shape == (1000, 2) and record.cells[-2:] == (rows[-1][0], "999")
    assert sum(len(cell) for cell in record.cells) > BLOB_THRESHOLD
    assert len(list((tmp_path / "r" / "blobs").glob("*-text.npy"))) == 1


def test_events_name_a_tensor_by_its_shape(tmp_path):
    reader = _written(tmp_path, ("note", "plain words"), ("table", TABLE))
    texts = [summary for _, _, kind, summary in reader.events() if kind == "text"]
    assert texts == ["note at step 0: plain words", "table at step 1: string tensor [3, 2]"]


@pytest.mark.parametrize("value, error, match", [
    ([["a", "b"], ["c"]], ValueError,
     r"text 'bad': ragged nested list: item \[1\] has shape \[1\] where item \[0\] has \[2\]"),
    ([["a"], "b"], ValueError,
     r"text 'bad': ragged nested list: item \[1\] is a string where item \[0\] is a list"),
    (["a", ["b"]], ValueError,
     r"text 'bad': ragged nested list: item \[1\] is a list where item \[0\] is a string"),
    ([[["a"], ["b"]], [["c"], ["d", "e"]]], ValueError, r"item \[1, 1\] has shape \[2\]"),
    ([["a", 3]], TypeError, r"text 'bad': every cell must be a str, got int at \[0, 1\]"),
    (np.array([1, 2]), TypeError, "text 'bad': text must be a str, a list of str .* got a "
                                  "int64 array"),
    (np.array(["a", None], dtype=object), TypeError, r"got NoneType at \[1\]"),
    (3.5, TypeError, "text 'bad': text must be a str, .* got float"),
    (None, TypeError, "got NoneType"),
    ({"a": "b"}, TypeError, "got dict"),
])
def test_ragged_and_non_string_text_is_refused_naming_the_tag(tmp_path, value, error, match):
    with RunWriter(tmp_path, "r") as writer:
        with pytest.raises(error, match=match):
            writer.text("bad", value)
        writer.text("good", "still writable")
    reader = RunReader(tmp_path / "r")
    assert reader.text_tags() == ["good"]


def test_a_record_must_hold_as_many_cells_as_its_shape():
    with pytest.raises(ValueError, match=r"text 't' at step 3: shape \[2, 2\] holds 4 "
                                         r"strings, got 3"):
        TextRecord("t", 3, 0.0, ("a", "b", "c"), (2, 2))
    assert TextRecord("t", 0, 0.0, ("a", "b"), (2,)).text == "a\nb"


def _with_old_text(run_dir) -> None:
    """A version-1 run (the first store's DDL) holding one text row, as the old writer left
    it."""
    make_v1_run(run_dir)
    conn = sqlite3.connect(run_dir / "run.sqlite")
    conn.execute("INSERT INTO tags VALUES (2, 'text', 'notes')")
    conn.execute("INSERT INTO texts VALUES (3, ?, 2, 3, ?, NULL)", (WALL0, "| a | b |"))
    conn.commit()
    conn.close()


def test_an_old_run_reads_its_texts_as_single_strings_and_upgrades(tmp_path):
    run = tmp_path / "logs" / "old"
    _with_old_text(run)
    before = (run / "run.sqlite").read_bytes()
    reader = RunReader(run)
    assert reader.texts("notes") == [TextRecord("notes", 3, WALL0, ("| a | b |",), ())]
    assert [e[3] for e in reader.events() if e[2] == "text"] == ["notes at step 3: | a | b |"]
    assert (run / "run.sqlite").read_bytes() == before        # reading never wrote
    assert upgrade_run(run) == SCHEMA_VERSION >= 4
    conn = sqlite3.connect(run / "run.sqlite")
    columns = [row[1] for row in conn.execute("PRAGMA table_info(texts)")]
    version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    conn.close()
    assert columns[-1] == "shape" and json.loads(version) == SCHEMA_VERSION
    assert RunReader(run).texts("notes")[0].shape == ()
    assert upgrade_run(run) == SCHEMA_VERSION          # idempotent


def test_a_damaged_tensor_row_is_the_runs_fault(tmp_path):
    from engine.record.reader import RunStoreError

    _written(tmp_path, ("table", TABLE))
    conn = sqlite3.connect(tmp_path / "r" / "run.sqlite")
    conn.execute("UPDATE texts SET shape = '[5]'")
    conn.commit()
    conn.close()
    with pytest.raises(RunStoreError, match=r"damaged record in texts\(\).*shape \[5\] holds 5"):
        RunReader(tmp_path / "r").texts("table")


# Event files, as TensorFlow writes them; encoded with tensorboard's protos (no TensorFlow).

def _text_value(tag: str, strings: list[bytes], shape: list[int], first: bool):
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2

    tensor = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_STRING, string_val=strings,
        tensor_shape=tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=size) for size in shape]))
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if first:
        value.metadata.plugin_data.plugin_name = "text"
    return value


def _tf_text_run(run_dir, values) -> None:
    """One event file: each (tag, strings, shape) a text summary at its own step."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from engine.record.tfrecord import write_record

    run_dir.mkdir(parents=True)
    with open(run_dir / "events.out.tfevents.1700000000.host.1.0", "wb") as handle:
        write_record(handle, event_pb2.Event(wall_time=WALL0,
                                             file_version="brain.Event:2").SerializeToString())
        for step, (tag, strings, shape) in enumerate(values):
            summary = summary_pb2.Summary(value=[_text_value(tag, strings, shape, True)])
            event = event_pb2.Event(wall_time=WALL0 + step, step=step, summary=summary)
            write_record(handle, event.SerializeToString())


@pytest.fixture
def event_reader():
    pytest.importorskip("tensorboard")
    pytest.importorskip("crc32c")
    from engine.record.event_files import clear_memo

    clear_memo()
    yield open_run
    clear_memo()


def test_event_file_text_tensors_read_with_their_shapes(tmp_path, event_reader):
    run = tmp_path / "tf"
    _tf_text_run(run, [("t0", [b"hello"], []), ("t1", [b"x", b"y", b"z"], [3]),
                       ("t2d", [b"p", b"q", b"r", b"s"], [2, 2]),
                       ("t3d", [b"a", b"b", b"c", b"d"], [2, 1, 2]),
                       ("empty", [], [0])])
    reader = event_reader(run)
    got = {tag: reader.texts(tag)[0] for tag in reader.text_tags()}
    assert (got["t0"].cells, got["t0"].shape) == (("hello",), ())
    assert (got["t1"].cells, got["t1"].shape) == (("x", "y", "z"), (3,))
    assert (got["t2d"].cells, got["t2d"].shape) == (("p", "q", "r", "s"), (2, 2))
    assert (got["t3d"].cells, got["t3d"].shape) == (("a", "b", "c", "d"), (2, 1, 2))
    assert (got["empty"].cells, got["empty"].shape) == ((), (0,))
    assert (got["t2d"].step, got["t2d"].wall_time) == (2, WALL0 + 2)


def test_a_numeric_text_tensor_is_named_as_damage(tmp_path, event_reader):
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2

    from engine.record.tfrecord import write_record

    run = tmp_path / "tf"
    _tf_text_run(run, [("fine", [b"ok"], [])])
    value = summary_pb2.Summary.Value(tag="nums", tensor=tensor_pb2.TensorProto(
        dtype=types_pb2.DT_INT32, int_val=[1]))
    value.metadata.plugin_data.plugin_name = "text"
    with open(next(run.iterdir()), "ab") as handle:
        write_record(handle, event_pb2.Event(wall_time=WALL0 + 5, step=5, summary=summary_pb2.
                                             Summary(value=[value])).SerializeToString())
    reader = event_reader(run)
    assert reader.text_tags() == ["fine"]
    assert "text 'nums' at step 5: a text-plugin tensor holds strings, got int32" in \
        reader.info().error


def test_the_tensorboard_export_keeps_a_tables_shape(tmp_path, event_reader):
    from tensorboard.backend.event_processing import plugin_event_accumulator
    from tensorboard.util import tensor_util

    from engine.record.tensorboard_export import export_tensorboard

    source = _written(tmp_path, ("note", "one *string*"), ("table", TABLE),
                      ("cube", np.array([[["a"], ["b"]]])))
    export_tensorboard(source.path, tmp_path / "out")
    back = event_reader(tmp_path / "out")
    for tag in ("note", "table", "cube"):
        assert back.texts(tag) == source.texts(tag)
    accumulator = plugin_event_accumulator.EventAccumulator(str(tmp_path / "out"))
    accumulator.Reload()
    (event,) = accumulator.Tensors("table")
    array = tensor_util.make_ndarray(event.tensor_proto)
    assert array.shape == (3, 2) and array[1, 1] == b"`0.5`"


def test_tf_summary_text_through_file_writer_keeps_its_shape(tmp_path):
    import engine as tf

    graph = tf.Graph()
    with graph.as_default():
        table = tf.summary.text("table", tf.constant([["a", "b", "c"], ["d", "e", "f"]]))
        line = tf.summary.text("line", tf.constant("just one"))
        with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path / "run")) as writer:
            for summary in sess.run([table, line]):
                writer.add_summary(summary, 4)
    reader = RunReader(tmp_path / "run")
    (record,) = reader.texts("table")
    assert (record.cells, record.shape, record.step) == (tuple("abcdef"), (2, 3), 4)
    assert reader.texts("line")[0].shape == ()
