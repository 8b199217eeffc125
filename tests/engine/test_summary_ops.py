"""Summary ops and kernels: tags and op names as TF builds them (name scopes, families,
illegal characters, collections), the serialized values each kernel outputs (scalars,
histograms, images with TF's float rescaling, text and tensors, merges) and TF's runtime
errors. Summary kernels run on the CPU only (their outputs are strings)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_harness import OpRunner, covers, mark_executed

import engine as tf
from engine.kernels.summary import HISTOGRAM_BINS


class CpuRunner(OpRunner):
    """The harness runner on the CPU; a string fetch comes back as bytes (0-d) or an object
    array, as TF returns it."""

    def __init__(self):
        super().__init__("cpu")

    @staticmethod
    def _check_static(fetch, value) -> None:
        if isinstance(fetch, tf.Tensor) and fetch.dtype.base_dtype is tf.string:
            assert isinstance(value, bytes) or value.dtype == object
            return
        OpRunner._check_static(fetch, value)


@pytest.fixture
def cpu():
    r = CpuRunner()
    yield r
    r.close()


def parsed(serialized: bytes) -> dict:
    return {v.tag: v for v in tf.Summary.FromString(serialized).value}


@covers("ScalarSummary")
def test_scalar_summary_tag_name_and_value(cpu):
    with cpu.scope():
        with tf.name_scope("train"):
            loss = tf.summary.scalar("loss", tf.constant(2.5))
        count = tf.summary.scalar("count", tf.constant(7, dtype=tf.int64), family="stats")
    assert loss.op.name == "train/loss" and loss.op.type == "ScalarSummary"
    assert loss.dtype is tf.string and loss.shape.as_list() == []
    assert [t.op.name for t in loss.op.inputs][0] == "train/loss/tags"
    assert count.op.name == "stats/count"
    values = parsed(cpu.run(loss)) | parsed(cpu.run(count))
    assert values["train/loss"].simple_value == 2.5
    assert values["stats/stats/count"].simple_value == 7.0
    assert values["train/loss"].WhichOneof("value") == "simple_value"


def test_summary_names_follow_tf_rules():
    with tf.Graph().as_default() as g:
        first = tf.summary.scalar("loss", 1.0)
        second = tf.summary.scalar("loss", 2.0)
        odd = tf.summary.scalar("bad name!", 3.0)
        off = tf.summary.scalar("private", 4.0, collections=[])
        extra = tf.summary.histogram("h", [1.0], collections=["mine"])
    assert (first.op.name, second.op.name, odd.op.name) == ("loss", "loss_1", "bad_name_")
    assert g.get_collection(tf.GraphKeys.SUMMARIES) == [first, second, odd]
    assert off not in g.get_collection(tf.GraphKeys.SUMMARIES)
    assert g.get_collection("mine") == [extra]


def test_build_time_type_errors_use_tf_wording():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="parameter 'values' of op 'ScalarSummary'"):
            tf.summary.scalar("s", tf.constant("text"))
        with pytest.raises(TypeError, match="parameter 'values' of op 'HistogramSummary'"):
            tf.summary.histogram("h", tf.constant("text"))
        with pytest.raises(ValueError, match="Expected tensor Const_2:0 to have dtype string, "
                                             "got <dtype: 'float32'>"):
            tf.summary.text("t", tf.constant(1.0))
        with pytest.raises(ValueError, match="'max_images' of 0 must be at least minimum 1"):
            tf.summary.image("i", tf.zeros([1, 2, 2, 1]), max_outputs=0)


@covers("ScalarSummary")
def test_scalar_summary_of_a_vector_fails_as_in_tf(cpu):
    with cpu.scope():
        vec = tf.summary.scalar("vec", tf.constant([1.0, 2.0]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"tags and values are not the same shape: \[\] != \[2\] "
                             r"\(tag 'vec'\)"):
        cpu.run(vec)
    mark_executed("ScalarSummary")


@covers("HistogramSummary")
def test_histogram_summary_buckets_and_statistics(cpu):
    data = np.random.default_rng(0).normal(size=200).astype(np.float32)
    with cpu.scope():
        h = tf.summary.histogram("weights", tf.constant(data))
    histo = parsed(cpu.run(h))["weights"].histo
    counts, edges = np.histogram(data.astype(np.float64), bins=HISTOGRAM_BINS)
    assert histo.num == 200 and histo.bucket == counts.tolist()
    np.testing.assert_allclose(histo.bucket_limit, edges[1:])
    np.testing.assert_allclose([histo.min, histo.max], [data.min(), data.max()], rtol=1e-6)
    np.testing.assert_allclose(histo.sum, data.astype(np.float64).sum(), rtol=1e-9)
    np.testing.assert_allclose(histo.sum_squares, np.square(data.astype(np.float64)).sum())
    got_edges, got_counts = histo.edges_and_counts()
    np.testing.assert_allclose(got_edges, edges)


@pytest.mark.parametrize("bad, message", [(np.nan, "Nan in summary histogram for: h"),
                                          (np.inf, "Infinity in Histogram for: h")])
@covers("HistogramSummary")
def test_histogram_of_non_finite_values_fails_as_in_tf(cpu, bad, message):
    with cpu.scope():
        h = tf.summary.histogram("h", tf.constant([1.0, bad]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        cpu.run(h)
    mark_executed("HistogramSummary")


@covers("ImageSummary")
def test_float_images_rescale_as_tf_does(cpu):
    """Numbers from TF 2.21 (compat.v1), decoding its PNGs: a negative image maps around 128
    by 127/max|v| and a non-negative one by 255/max, truncating; NaN pixels get red."""
    negative = np.array([[[[-1.0], [0.5]], [[2.0], [np.nan]]]], np.float32)
    positive = np.array([[[[0.0], [0.5]], [[2.0], [1.0]]]], np.float32)
    with cpu.scope():
        one = tf.summary.image("one", tf.constant(negative), max_outputs=1)
        two = tf.summary.image("two", tf.constant(positive), max_outputs=1)
    got_one = parsed(cpu.run(one))["one/image"].image
    got_two = parsed(cpu.run(two))["two/image"].image
    assert (got_one.height, got_one.width, got_one.colorspace) == (2, 2, 1)
    assert got_one.pixels().reshape(-1).tolist() == [64, 159, 255, 255]
    assert got_two.pixels().reshape(-1).tolist() == [0, 63, 255, 127]


@covers("ImageSummary")
def test_uint8_images_pass_through_and_max_outputs_limits_the_batch(cpu):
    batch = np.arange(5 * 2 * 2 * 3, dtype=np.uint8).reshape(5, 2, 2, 3)
    rgba = np.full((1, 1, 2, 4), [1.0, 0.5, 0.0, np.inf], np.float64)
    with cpu.scope():
        rgb = tf.summary.image("rgb", tf.constant(batch), max_outputs=2)
        alpha = tf.summary.image("alpha", tf.constant(rgba))
    values = parsed(cpu.run(rgb))
    assert sorted(values) == ["rgb/image/0", "rgb/image/1"]
    np.testing.assert_array_equal(values["rgb/image/1"].image.pixels(), batch[1])
    red = parsed(cpu.run(alpha))["alpha/image/0"].image.pixels()
    assert red.shape == (1, 2, 4) and red[0, 0].tolist() == [255, 0, 0, 255]


@covers("ImageSummary")
def test_image_with_a_bad_shape_fails_as_in_tf(cpu):
    with cpu.scope():
        wide = tf.summary.image("wide", tf.zeros([2, 3, 3, 5]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Tensor must be 4-D with last dim 1, 3, or 4, not \[2,3,3,5\]"):
        cpu.run(wide)
    mark_executed("ImageSummary")


@covers("TensorSummaryV2")
def test_text_and_tensor_summaries(cpu):
    with cpu.scope():
        note = tf.summary.text("note", tf.constant(["line one", "line two"]))
        grid = tf.summary.tensor_summary("grid", tf.constant([[1, 2], [3, 4]]),
                                         summary_description="a grid")
    assert note.op.type == "TensorSummaryV2"
    assert [t.op.name for t in note.op.inputs][2] == "note/serialized_summary_metadata"
    text = parsed(cpu.run(note))["note"]
    assert text.tensor.tolist() == [b"line one", b"line two"]
    assert text.metadata.plugin_data.plugin_name == "text"
    value = parsed(cpu.run(grid))["grid"]
    assert value.tensor.dtype == np.int32 and value.tensor.tolist() == [[1, 2], [3, 4]]
    assert value.metadata.summary_description == "a grid"


@covers("MergeSummary")
def test_merge_and_merge_all(cpu):
    with cpu.scope():
        a = tf.summary.scalar("a", 1.0)
        b = tf.summary.histogram("b", [1.0, 2.0])
        merged = tf.summary.merge([a, b])
        everything = tf.summary.merge_all()
        named = tf.summary.merge([a], name="pick")
    assert merged.op.name == "Merge/MergeSummary" and named.op.name == "pick/pick"
    assert [t.name for t in everything.op.inputs] == ["a:0", "b:0"]
    assert tf.summary.merge_all(key="nothing here") is None
    values = parsed(cpu.run(everything))
    assert values["a"].simple_value == 1.0 and values["b"].histo.num == 2


@covers("MergeSummary")
def test_merging_duplicate_tags_fails_as_in_tf(cpu):
    with cpu.scope():
        a = tf.summary.scalar("q", 1.0)
        twice = tf.summary.merge([a, a])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Duplicate tag q found in summary inputs"):
        cpu.run(twice)
    mark_executed("MergeSummary")


def test_summaries_of_gpu_tensors_run_on_the_cpu():
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            loss = tf.square(tf.constant(3.0), name="loss")
        s = tf.summary.scalar("loss", loss)
        with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
            got = parsed(sess.run(s))
            placed = sess.placement.as_dict()
    assert got["loss_1"].simple_value == 9.0
    assert placed["loss"].endswith("GPU:0") and placed["loss_1"].endswith("CPU:0")


def test_summary_round_trips_and_hand_built_summaries():
    summary = tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.75)])
    summary.value.add(tag="h", histo=tf.HistogramProto(min=0, max=2, num=3, sum=3,
                                                       bucket_limit=[1, 2], bucket=[1, 2]))
    again = tf.Summary.FromString(summary.SerializeToString())
    assert again == summary and again.value[0].tag == "acc"
    with pytest.raises(ValueError, match="not a summary this engine serialized"):
        tf.Summary.FromString(b"\n\x08\n\x01a\x15\x00\x00\xc0?")
