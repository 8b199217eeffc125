"""The rendezvous protocol: the key format and its parser, the in-process Rendezvous behind the
protocol (dead flag, step id, abort, deadline)."""

import pytest

import engine as tf
from engine import errors
from engine.kernels.control_flow import NO_VALUE
from engine.passes.partition import rendezvous_key
from engine.runtime import rendezvous as rv
from engine.runtime.frames import rendezvous_key_in
from engine.runtime.rendezvous import ParsedKey, Rendezvous, RendezvousProtocol, parse_key

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"


def test_a_partition_key_parses_into_its_five_fields():
    key = rendezvous_key(CPU0, GPU1, "edge_1_a")
    assert key == f"{CPU0};0000000000000001;{GPU1};edge_1_a;0:0"
    assert parse_key(key) == ParsedKey(CPU0, 1, GPU1, "edge_1_a", 0, 0)
    assert parse_key(key).key() == key


def test_a_loop_iteration_key_carries_frame_id_and_iteration():
    key = rendezvous_key_in(rendezvous_key(CPU0, GPU1, "edge_7_x"), 12345678901234, 3)
    parsed = parse_key(key)
    assert (parsed.frame_id, parsed.iteration, parsed.tensor_name) == (12345678901234, 3,
                                                                      "edge_7_x")
    assert parsed.key() == key


@pytest.mark.parametrize("key", ["", "a;1;b;t", "a;1;b;t;0", "a;xyz;b;t;0:0", ";1;b;t;0:0",
                                 "a;1;b;;0:0", "a;1;b;t;0:x", "a;1;b;t;0:0;extra"])
def test_a_malformed_key_is_an_invalid_argument(key):
    with pytest.raises(errors.InvalidArgumentError, match="Invalid rendezvous key"):
        parse_key(key)


def test_the_in_process_rendezvous_is_a_protocol_implementation():
    r = Rendezvous(step_id=7)
    assert isinstance(r, RendezvousProtocol)
    assert (r.step_id, r.deadline) == (7, None)


def test_send_recv_keep_fifo_order_and_the_dead_flag():
    r = Rendezvous()
    r.send("k", 1)
    r.send("k", 2, dead=True)
    r.send("k", NO_VALUE)
    assert [r.recv("k"), r.recv("k"), r.recv("k")] == [1, NO_VALUE, NO_VALUE]


def test_abort_wakes_recv_with_a_cancelled_error_naming_the_cause():
    r = Rendezvous()
    r.abort(ValueError("boom"))
    with pytest.raises(errors.CancelledError, match="boom"):
        r.recv("k")
    with pytest.raises(errors.CancelledError):
        r.send("k", 1)


def test_recv_honours_the_deadline(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(rv, "_clock", lambda: now[0])
    deadline = rv.Deadline(50)
    now[0] += 1.0
    r = Rendezvous(deadline)
    assert r.deadline is deadline
    with pytest.raises(errors.DeadlineExceededError, match="deadline of 50 ms"):
        r.recv("never")


def test_each_session_step_gets_its_own_step_id(monkeypatch):
    """A multi-device step's rendezvous carries the session's step counter (the distributed
    runtime keys a worker's per-step state by it)."""
    seen = []
    original = Rendezvous.__init__

    def init(self, deadline=None, gate=None, step_id=0):
        seen.append(step_id)
        original(self, deadline, gate, step_id)
    monkeypatch.setattr(Rendezvous, "__init__", init)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        with tf.device("/gpu:0"):
            y = x * 2.0
        with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
            assert [sess.run(y, {x: float(v)}) for v in range(3)] == [0.0, 2.0, 4.0]
    assert len(seen) == 3 and len(set(seen)) == 3 and seen == sorted(seen)


def test_recv_any_takes_whichever_key_has_a_value_and_waits_for_one():
    """The dynamic executor waits on all its pending Recvs at once: values of several loop
    iterations may come in any order."""
    import threading

    r = Rendezvous()
    keys = [f"{CPU0};0000000000000001;{GPU1};edge_{i};5:{i}" for i in range(3)]
    r.send(keys[2], "late iteration")
    assert r.recv_any(keys) == (2, "late iteration")
    r.send(keys[1], 1, dead=True)
    assert r.recv_any(keys) == (1, NO_VALUE)
    got = []
    waiter = threading.Thread(target=lambda: got.append(r.recv_any(keys[:1])))
    waiter.start()
    r.send(keys[0], "first")
    waiter.join(30)
    assert got == [(0, "first")]
    assert not r._values, "no empty per-iteration queues are kept"
    r.abort(RuntimeError("partition failed"))
    with pytest.raises(errors.CancelledError, match="partition failed"):
        r.recv_any(keys)
