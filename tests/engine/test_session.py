"""Session.run: fetch structures, feeds and their errors, the plan cache, variables,
RunMetadata, errors naming the failing node, default sessions, and recording to a run
store."""

import collections

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.record import RunReader
from engine.record.schema import SOFT_FALLBACK


@pytest.fixture
def g():
    graph = tf.Graph()
    with graph.as_default():
        yield graph


def test_nested_fetch_structures(g):
    a = tf.constant(1.0, name="a")
    b = tf.constant([2, 3], name="b")
    noop = tf.no_op(name="noop")
    Pair = collections.namedtuple("Pair", "x y")
    with tf.Session() as sess:
        out = sess.run({"a": a, "pair": Pair(a, b), "list": [b, "a:0", noop], "t": (a,)})
    assert out["a"] == 1.0 and isinstance(out["a"], np.float32)
    assert isinstance(out["pair"], Pair) and out["pair"].y.tolist() == [2, 3]
    assert out["list"][1] == 1.0 and out["list"][2] is None
    assert out["t"] == (1.0,)


def test_plan_is_cached_per_signature(g):
    x = tf.placeholder(tf.float32, [None], name="x")
    y = x * 2.0
    with tf.Session() as sess:
        for value in ([1.0], [2.0, 3.0]):
            sess.run(y, {x: value})
        assert len(sess._plans) == 1
        sess.run([y, x], {x: [1.0]})
        assert len(sess._plans) == 2
        z = y + 1.0   # the graph grows: a new version, a new plan
        assert sess.run(z, {x: [1.0]}).tolist() == [3.0]
        assert len(sess._plans) == 3


def test_fetching_a_fed_tensor_returns_the_feed(g):
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.Session() as sess:
        assert sess.run(x, {x: [5.0, 6.0]}).tolist() == [5.0, 6.0]


def test_missing_feed_names_placeholder_dtype_and_shape(g):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.reduce_sum(x, name="total")
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"You must feed a value for placeholder tensor 'x' with dtype "
                                 r"float and shape \[\?,3\]"):
            sess.run(y)


@pytest.mark.parametrize("feed, exc, match", [
    ([1.0, 2.0], ValueError, r"Cannot feed value of shape \(2,\) for Tensor 'x:0', which has "
                             r"shape '\(\?, 3\)'"),
    ([["a", "b", "c"]], TypeError, r"Cannot feed value of type list for Tensor 'x:0' of dtype "
                                   r"float32"),
])
def test_badly_shaped_or_typed_feeds(g, feed, exc, match):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    with tf.Session() as sess:
        with pytest.raises(exc, match=match):
            sess.run(x * 1.0, {x: feed})


def test_bad_feed_keys_and_values(g):
    x = tf.placeholder(tf.float32, [1], name="x")
    y = x + 1.0
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key 42"):
            sess.run(y, {42: [1.0]})
        with pytest.raises(TypeError, match="The value of a feed cannot be a tf.Tensor"):
            sess.run(y, {x: y})
        assert sess.run(y, {"x:0": [1.0]}).tolist() == [2.0]


def test_fetch_from_another_graph_is_rejected():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.constant(1.0, name="a")
    with tf.Session(graph=g2) as sess:
        with pytest.raises(ValueError, match="is not an element of this graph"):
            sess.run(a)


def test_bad_fetch_names(g):
    tf.constant(1.0, name="a")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
            sess.run("nope:0")
        with pytest.raises(TypeError, match="Fetch argument None"):
            sess.run(None)


def test_variables_assign_and_update(g):
    v = tf.Variable([1.0, 2.0], name="v")
    add = tf.assign_add(v, [1.0, 1.0])
    sub = tf.assign_sub(v, [0.5, 0.5])
    with tf.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value v"):
            sess.run(v)
        sess.run(tf.global_variables_initializer())
        assert sess.run(add).tolist() == [2.0, 3.0]
        assert sess.run(sub).tolist() == [1.5, 2.5]
        assert sess.run(v).tolist() == [1.5, 2.5]
        sess.run(tf.assign(v, [9.0, 9.0]))
        assert v.eval().tolist() == [9.0, 9.0]


def test_fetched_arrays_do_not_alias_engine_state(g):
    c = tf.constant([1.0, 2.0], name="c")
    with tf.Session() as sess:
        first = sess.run(c)
        first[0] = 100.0
        assert sess.run(c).tolist() == [1.0, 2.0]


def test_runtime_error_names_node_and_creation_site(g):
    x = tf.placeholder(tf.float32, [None], name="x")
    r = tf.reshape(x, [2, 2], name="r")
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(r, {x: [1.0, 2.0, 3.0]})
    text = str(info.value)
    assert "[[node r (defined at" in text and "test_session.py" in text
    assert "Caused by op 'r', defined at:" in text


def test_eval_and_run_with_default_session(g):
    v = tf.Variable(3.0, name="v")
    with pytest.raises(ValueError, match="No default session is registered"):
        v.eval()
    with tf.Session():
        v.initializer.run()
        assert v.eval() == 3.0
        assert (v * 2.0).eval() == 6.0


def test_closed_session_and_unknown_target(g):
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(tf.constant(1.0))
    with pytest.raises(errors.UnimplementedError, match="grpc://x:1"):
        tf.Session("grpc://x:1")


def test_config_rejects_bad_fields():
    with pytest.raises(ValueError, match='Protocol message ConfigProto has no "log_placement" '
                                         'field. Known fields: log_device_placement'):
        tf.ConfigProto(log_placement=True)
    with pytest.raises(ValueError, match="virtual_gpus"):
        tf.ConfigProto(virtual_gpus=-1)


def test_training_reduces_loss_on_three_devices(g):
    rng = np.random.RandomState(0)
    data = rng.randn(64, 4).astype(np.float32)
    target = data @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.placeholder(tf.float32, [None, 1])
    with tf.device("/gpu:0"):
        w = tf.Variable(np.zeros((4, 1), np.float32), name="w")
    with tf.device("/gpu:1"):
        pred = tf.matmul(x, w)
    with tf.device("/cpu:0"):
        loss = tf.reduce_mean(tf.square(pred - y))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session(config=tf.ConfigProto(virtual_gpus=2)) as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: data, y: target})
        for _ in range(100):
            sess.run(train, {x: data, y: target})
        last = sess.run(loss, {x: data, y: target})
        assert sess.placement.device_of("GradientDescent/update_w/ApplyGradientDescent") == \
            "/job:localhost/replica:0/task:0/device:GPU:0"
    assert last < first * 1e-3


def test_session_records_graph_placement_partitions_and_steps(g, tmp_path):
    x = tf.placeholder(tf.float32, [None], name="x")
    with tf.device("/gpu:1"):
        y = tf.negative(x, name="y")
    with tf.device("/gpu:0"):
        counter = tf.Variable(0, name="counter")   # int32: soft fallback to CPU
    config = tf.ConfigProto(virtual_gpus=2, allow_soft_placement=True, trace_every_n_steps=2)
    with tf.Session(config=config, logdir=str(tmp_path), run_name="rec") as sess:
        sess.run(counter.initializer)
        for step in range(3):
            sess.run(y, {x: np.ones(10, np.float32)})
            sess.run_writer.scalar("loss", 1.0 / (step + 1), step)
    reader = RunReader(tmp_path / "rec")
    assert {n.name for n in reader.graph().nodes} >= {"x", "y", "counter", "counter/read"}
    by_node = {p.node: p for p in reader.placements()}
    assert by_node["y"].assigned.endswith("GPU:1") and by_node["y"].reason == "explicit"
    assert by_node["counter"].reason == SOFT_FALLBACK
    assert by_node["y"].log_line == "y: (Neg): /job:localhost/replica:0/task:0/device:GPU:1"
    edges = reader.cut_edges()
    to_gpu = [e for e in edges if e.dst_device.endswith("GPU:1")]
    assert to_gpu and to_gpu[-1].bytes == 40   # ten float32 values
    steps = reader.steps()
    assert [s.step for s in steps] == [1, 2, 3, 4]
    # Traced: the first step and every 2nd after it; the others keep only their StepRecord.
    assert [bool(reader.step_stats(s.step)) for s in steps] == [True, False, True, False]
    stats = reader.step_stats(3)
    assert {s.node for s in stats} >= {"y"}
    assert next(s for s in stats if s.node == "y").output_bytes == 40
    assert [s.bytes_moved for s in steps[1:]] == [80, 80, 80]   # x to GPU:1, y back
    assert steps[3].num_ops == steps[2].num_ops == len(stats)
    steps_, values = reader.scalars("loss")
    assert steps_.tolist() == [0, 1, 2]
    np.testing.assert_allclose(values, [1.0, 0.5, 1 / 3])
    assert len(reader.devices()) == 3


def test_empty_fetches_return_their_structure_without_running():
    """TF 2.21: sess.run([]), run({}), run(()) give [], {}, (); the feeds are still checked."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.Session(graph=g) as sess:
            assert sess.run([]) == [] and sess.run({}) == {} and sess.run(()) == ()
            assert sess.run({"a": [], "b": ()}) == {"a": [], "b": ()}
            with pytest.raises(ValueError, match="shape"):
                sess.run([], {x: [1.0, 2.0, 3.0]})


@pytest.mark.parametrize("kwargs, name", [({"options": "fast"}, "options"),
                                          ({"run_metadata": 5}, "run_metadata"),
                                          ({"options": tf.RunMetadata()}, "options")])
def test_run_arguments_of_the_wrong_type_are_named(kwargs, name):
    g = tf.Graph()
    with g.as_default():
        y = tf.constant(1.0) + 1.0
        with tf.Session(graph=g) as sess, pytest.raises(TypeError, match=rf"run\({name}="):
            sess.run(y, **kwargs)


def test_python_ints_that_overflow_the_feed_dtype_name_the_tensor():
    """TF 2.21 wraps a fed 300 into int8 silently (giving 44); here a Python int that does not
    fit is refused, naming the tensor and the range. A numpy array of a wider dtype is cast
    (and wraps) as TF casts it."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.int8, [None], name="x")
        y = x + 1
        with tf.Session(graph=g) as sess:
            for bad in ([300], [2 ** 40], -129):
                with pytest.raises(ValueError, match=r"Tensor 'x:0' of dtype int8: out of its "
                                                     r"range \[-128, 127\]"):
                    sess.run(y, {x: bad})
            np.testing.assert_array_equal(sess.run(y, {x: np.array([300])}), [45])
            np.testing.assert_array_equal(sess.run(y, {x: [127, -128]}), [-128, -127])
