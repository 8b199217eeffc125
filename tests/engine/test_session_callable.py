"""Session.make_callable (TF1): the callable returns what Session.run returns for the same
fetches and feeds (structures, single ops, name keys, repeated keys), fails as run fails,
follows a graph that grows, honours options when asked for, and records its steps."""

import threading

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.record import RunReader


@pytest.fixture
def g():
    graph = tf.Graph()
    with graph.as_default():
        yield graph


def _xy():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    return x, tf.multiply(x, 2.0, name="y")


def test_single_tensor_list_and_dict_fetches_match_run(g):
    x, y = _xy()
    z = tf.reduce_sum(y, name="z")
    value = np.array([[1.0, 2.0]], np.float32)
    with tf.Session() as sess:
        single = sess.make_callable(y, [x])(value)
        assert isinstance(single, np.ndarray)
        np.testing.assert_array_equal(single, sess.run(y, {x: value}))
        got = sess.make_callable([y, z], [x])(value)
        assert isinstance(got, list) and got[1] == np.float32(6.0)
        np.testing.assert_array_equal(got[0], [[2.0, 4.0]])
        nested = sess.make_callable({"a": y, "b": (z,)}, [x])(value)
        want = sess.run({"a": y, "b": (z,)}, {x: value})
        assert nested["b"] == want["b"] == (np.float32(6.0),)
        np.testing.assert_array_equal(nested["a"], want["a"])


def test_an_operation_runs_and_returns_none(g):
    counter = tf.Variable(0, name="counter")
    bump = tf.assign_add(counter, 1).op
    with tf.Session() as sess:
        sess.run(counter.initializer)
        step = sess.make_callable(bump)
        assert step() is None and step() is None
        assert sess.run(counter) == 2


def test_feed_keys_by_name_and_a_repeated_key_takes_the_last_value(g):
    x, y = _xy()
    with tf.Session() as sess:
        assert sess.make_callable(y, ["x:0"])([[1, 2]]).tolist() == [[2.0, 4.0]]
        twice = sess.make_callable(y, [x, x])
        assert twice([[1, 1]], [[3, 4]]).tolist() == [[6.0, 8.0]]


def test_each_call_sees_its_own_feed_values(g):
    x, y = _xy()
    with tf.Session() as sess:
        run = sess.make_callable(y, [x])
        for value in (np.ones((3, 2), np.float32), np.arange(4.0).reshape(2, 2)):
            np.testing.assert_array_equal(run(value), value * 2.0)
        assert len(sess._plans) == 1


@pytest.mark.parametrize("args, exc, match", [
    ((), errors.InvalidArgumentError, r"You must feed a value for placeholder tensor 'x'"),
    (([[1.0, 2.0, 3.0]],), ValueError, r"Cannot feed value of shape \(1, 3\) for Tensor 'x:0'"),
])
def test_a_bad_call_fails_as_run_fails(g, args, exc, match):
    x, y = _xy()
    with tf.Session() as sess:
        with pytest.raises(exc, match=match):
            sess.make_callable(y, [x])(*args)


def test_bad_arguments_are_refused_with_tfs_messages(g):
    x, y = _xy()
    with tf.Session() as sess:
        with pytest.raises(TypeError, match=r"Argument `feed_list` must be a list or tuple"):
            sess.make_callable(y, x)
        with pytest.raises(TypeError, match=r"Argument `fetch` = None has invalid type"):
            sess.make_callable(None)
        with pytest.raises(TypeError, match=r"accept_options=True"):
            sess.make_callable(y)(options=tf.RunOptions())


def test_a_closed_session_refuses_the_callable(g):
    x, y = _xy()
    sess = tf.Session()
    run = sess.make_callable(y, [x])
    sess.close()
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
        run([[1.0, 2.0]])


def test_the_graph_grows_after_the_callable_is_made(g):
    x, y = _xy()
    with tf.Session() as sess:
        run = sess.make_callable(y, [x])
        assert run([[1, 2]]).tolist() == [[2.0, 4.0]]
        tf.add(y, 1.0, name="later")
        assert run([[1, 2]]).tolist() == [[2.0, 4.0]]
        assert run([[3, 4]]).tolist() == [[6.0, 8.0]]
        assert len(sess._plans) == 2      # one per graph version, not one per call


def test_options_and_run_metadata_when_accepted(g):
    x, y = _xy()
    with tf.Session() as sess:
        run = sess.make_callable(y, [x], accept_options=True)
        metadata = tf.RunMetadata()
        got = run([[1, 2]], options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                  run_metadata=metadata)
        assert got.tolist() == [[2.0, 4.0]]
        names = {s.node_name for d in metadata.step_stats.dev_stats for s in d.node_stats}
        assert "y" in names


def test_a_recorded_session_records_the_callables_steps(g, tmp_path):
    x, y = _xy()
    with tf.Session(logdir=str(tmp_path), run_name="rec") as sess:
        run = sess.make_callable(y, [x])
        for _ in range(3):
            run(np.ones((1, 2), np.float32))
    assert [s.step for s in RunReader(tmp_path / "rec").steps()] == [1, 2, 3]


def test_one_callable_from_many_threads_loses_no_locked_update_and_mixes_no_feeds(g):
    x, y = _xy()
    counter = tf.Variable(0.0, name="counter")
    bump = tf.assign_add(counter, 1.0, use_locking=True)
    with tf.Session() as sess:
        sess.run(counter.initializer)
        step = sess.make_callable([y, bump.op], [x])
        wrong = []

        def body(k: int) -> None:
            value = np.full((k + 1, 2), float(k), np.float32)
            for _ in range(25):
                got, _ = step(value)
                if not np.array_equal(got, value * 2.0):
                    wrong.append(k)

        threads = [threading.Thread(target=body, args=(k,)) for k in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not any(thread.is_alive() for thread in threads)
        assert wrong == []
        assert sess.run(counter) == 8 * 25


def test_a_read_under_a_control_dependency_sees_the_update_as_in_run(g):
    """TF orders a read after the assign it depends on: the callable gives the new value, as
    Session.run does, call after call."""
    v = tf.Variable(1.0, name="v")
    update = tf.assign_add(v, 2.0)
    with tf.control_dependencies([update]):
        read = tf.identity(v.read_value(), name="read")
    with tf.Session() as sess:
        sess.run(v.initializer)
        step = sess.make_callable(read)
        assert [float(step()) for _ in range(3)] == [3.0, 5.0, 7.0]
        assert float(sess.run(read)) == 9.0
