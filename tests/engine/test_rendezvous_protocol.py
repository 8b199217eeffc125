"""The rendezvous protocol: the key format and its parser, the in-process Rendezvous behind the
protocol (dead flag, step id, abort, deadline)."""

import pytest

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
