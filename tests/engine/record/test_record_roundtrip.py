"""Round trips through RunWriter and RunReader: every record type, summaries against numpy,
side files for large payloads, "latest wins" rules, cut-edge bytes and the event stream."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.record import RunReader, RunWriter
from engine.record.schema import (
    FINISHED,
    PLACEMENT_REASONS,
    SOFT_FALLBACK,
    CutEdgeRecord,
    DeviceRecord,
    GraphRecord,
    NodeRecord,
    PartitionRecord,
    PlacementRecord,
    PlanRecord,
    TensorSpec,
    TransferRecord,
)
from engine.record.store import BLOB_DIR


def test_scalars_from_several_tags_round_trip(logdir):
    with RunWriter(logdir, "r") as writer:
        for step in range(50):
            writer.scalar("loss", 1.0 / (step + 1), step)
            writer.scalar("accuracy", np.float32(step / 50), step, wall_time=1000.0 + step)
            if step % 10 == 0:
                writer.scalar("lr", np.array(0.1 * 0.5 ** (step // 10)), step)
    reader = RunReader(writer.path)
    assert reader.tags() == ["accuracy", "loss", "lr"]
    steps, values = reader.scalars("loss")
    assert steps.dtype == np.int64 and values.dtype == np.float64
    np.testing.assert_array_equal(steps, np.arange(50))
    np.testing.assert_allclose(values, 1.0 / (np.arange(50) + 1), rtol=0, atol=0)
    steps, values = reader.scalars("accuracy")
    np.testing.assert_array_equal(values, np.arange(50, dtype=np.float32) / np.float32(50))
    np.testing.assert_array_equal(reader.scalar_wall_times("accuracy"), 1000.0 + np.arange(50))
    steps, values = reader.scalars("lr")
    np.testing.assert_array_equal(steps, [0, 10, 20, 30, 40])
    np.testing.assert_allclose(values, [0.1, 0.05, 0.025, 0.0125, 0.00625])


def test_scalar_steps_default_to_last_step_of_the_tag_plus_one(logdir):
    with RunWriter(logdir, "r") as writer:
        writer.scalar("a", 1.0)
        writer.scalar("a", 2.0)
        writer.scalar("b", 3.0, step=7)
        writer.scalar("b", 4.0)
        writer.scalar("a", 5.0, step=20)
        writer.scalar("a", 6.0)
    reader = RunReader(writer.path)
    assert reader.scalars("a")[0].tolist() == [0, 1, 20, 21]
    assert reader.scalars("b")[0].tolist() == [7, 8]
    assert reader.info().num_steps == 22


def test_nan_and_inf_scalars_are_stored_as_is(logdir):
    with RunWriter(logdir, "r") as writer:
        for value in (1.5, float("nan"), float("inf"), -float("inf"), np.float64("nan")):
            writer.scalar("x", value)
    _, values = RunReader(writer.path).scalars("x")
    assert values[0] == 1.5
    assert math.isnan(values[1]) and math.isnan(values[4])
    assert values[2] == math.inf and values[3] == -math.inf


def test_scalar_ties_keep_write_order_and_sort_by_step(logdir):
    with RunWriter(logdir, "r") as writer:
        for step, value in ((5, 1.0), (2, 2.0), (5, 3.0), (0, 4.0)):
            writer.scalar("x", value, step)
    steps, values = RunReader(writer.path).scalars("x")
    assert steps.tolist() == [0, 2, 5, 5]
    assert values.tolist() == [4.0, 2.0, 1.0, 3.0]


def test_histogram_numbers_match_numpy(logdir):
    rng = np.random.default_rng(0)
    first = rng.normal(size=10_000)
    second = rng.uniform(-2, 5, size=(40, 25)).astype(np.float32)
    with RunWriter(logdir, "r") as writer:
        writer.histogram("weights", first, step=3)
        writer.histogram("weights", second, bins=7)
        writer.histogram("bias", [2.0, 2.0, 2.0], step=0, bins=4)
    reader = RunReader(writer.path)
    assert reader.histogram_tags() == ["bias", "weights"]
    records = reader.histograms("weights")
    assert [h.step for h in records] == [3, 4]
    for record, values, bins in ((records[0], first, 30), (records[1], second, 7)):
        values = np.asarray(values, dtype=np.float64).ravel()
        counts, edges = np.histogram(values, bins=bins)
        assert record.tag == "weights"
        np.testing.assert_array_equal(record.edges, edges)
        np.testing.assert_array_equal(record.counts, counts)
        assert (record.min, record.max, record.count) == (values.min(), values.max(), values.size)
        assert record.sum == pytest.approx(values.sum(), rel=1e-12)
    (bias,) = reader.histograms("bias")
    counts, edges = np.histogram([2.0, 2.0, 2.0], bins=4)
    assert bias.edges == tuple(edges) and bias.counts == tuple(counts)
    assert (bias.min, bias.max, bias.sum, bias.count) == (2.0, 2.0, 6.0, 3)


def test_histogram_buckets_finite_values_and_reports_nonfinite_in_min_max_sum(logdir):
    with RunWriter(logdir, "r") as writer:
        writer.histogram("h", [1.0, 2.0, 3.0, float("inf")], bins=2)
        writer.histogram("h", [1.0, float("nan")], bins=2)
        writer.histogram("h", [], bins=3)
    inf_record, nan_record, empty = RunReader(writer.path).histograms("h")
    assert inf_record.counts == (1.0, 2.0) and inf_record.edges == (1.0, 2.0, 3.0)
    assert (inf_record.max, inf_record.sum, inf_record.count) == (math.inf, math.inf, 4)
    assert math.isnan(nan_record.max) and math.isnan(nan_record.sum)
    assert sum(nan_record.counts) == 1 and nan_record.count == 2
    assert empty.count == 0 and empty.counts == (0.0, 0.0, 0.0) and len(empty.edges) == 4


def test_histogram_of_a_torch_tensor_is_a_copy_taken_at_call_time(logdir):
    torch = pytest.importorskip("torch")
    weights = torch.arange(6, dtype=torch.float32, requires_grad=True)
    with RunWriter(logdir, "r") as writer:
        writer.histogram("w", weights, bins=3)
        writer.scalar("loss", torch.tensor(0.25))
        with torch.no_grad():
            weights.mul_(100)   # after the call: must not change what was recorded
    reader = RunReader(writer.path)
    (record,) = reader.histograms("w")
    assert (record.min, record.max, record.sum) == (0.0, 5.0, 15.0)
    assert reader.scalars("loss")[1].tolist() == [0.25]


def test_texts_round_trip(logdir):
    with RunWriter(logdir, "r") as writer:
        writer.text("notes", "first\nline two")
        writer.text("notes", "ünïcode ✓", step=9)
        writer.text("config", "")
    reader = RunReader(writer.path)
    assert reader.text_tags() == ["config", "notes"]
    notes = reader.texts("notes")
    assert [(t.tag, t.step, t.text) for t in notes] == [
        ("notes", 0, "first\nline two"), ("notes", 9, "ünïcode ✓")]
    assert all(t.wall_time > 0 for t in notes)
    assert reader.texts("config")[0].text == ""


def test_large_payloads_go_to_npy_side_files_and_come_back(logdir):
    big_text = "x" * 70_000 + "✓"
    name = "model/encoder/layer_block/dense_{:05d}/kernel_read".format
    nodes = tuple(NodeRecord(name(i), "Identity", (name(i - 1),), "",
                             {"T": "float32"}, (TensorSpec("float32", (128,)),),
                             ("model.py:1 in build",)) for i in range(1, 1500))
    partition = PartitionRecord(0, "/cpu:0", tuple(node.name for node in nodes))
    values = np.random.default_rng(1).normal(size=50_000)
    with RunWriter(logdir, "r") as writer:
        writer.text("log", big_text)
        writer.graph(GraphRecord(1, nodes))
        writer.plan(*_plan_with(partition))
        writer.histogram("h", values, bins=5000)
    blobs = [p.name.split("-", 1) for p in (logdir / "r" / BLOB_DIR).iterdir()]
    assert [kind for _, kind in sorted(blobs, key=lambda b: int(b[0]))] == [
        "text.npy", "graph.npy", "partition.npy", "histogram.npy"]
    reader = RunReader(writer.path)
    assert reader.texts("log")[0].text == big_text
    assert reader.graph(1).nodes == nodes
    assert reader.partitions(0) == [partition]
    counts, edges = np.histogram(values, bins=5000)
    (record,) = reader.histograms("h")
    np.testing.assert_array_equal(record.edges, edges)
    np.testing.assert_array_equal(record.counts, counts)
    summary = next(e for e in reader.events() if e[2] == "text")[3]
    assert summary == "log at step 0: " + "x" * 80 + "..."


def _plan_with(partition):
    return PlanRecord(0, 1, ("y:0",), (), (), ("/cpu:0",)), [partition], []


def test_every_engine_record_type_round_trips(logdir, samples):
    plan, partitions, edges = samples.plan()
    step, stats, transfers = samples.step()
    with RunWriter(logdir, "r") as writer:
        writer.devices(samples.devices())
        writer.graph(samples.graph())
        writer.placements(samples.placements())
        writer.plan(plan, partitions, edges)
        writer.step(step, stats, transfers)
    reader = RunReader(writer.path)
    assert reader.devices() == samples.devices()
    graph = reader.graph()
    assert graph.seq > 0 and graph.wall_time > 0
    assert samples.without_stamps(graph) == samples.graph()
    assert reader.graph_versions() == [1]
    placements = reader.placements()
    assert [samples.without_stamps(p) for p in placements] == samples.placements()
    assert all(p.reason in PLACEMENT_REASONS for p in placements)
    assert [samples.without_stamps(p) for p in reader.plans()] == [plan]
    assert reader.partitions() == partitions == reader.partitions(0)
    (edge,) = reader.cut_edges()
    assert edge == CutEdgeRecord(*[getattr(edges[0], f) for f in (
        "plan", "tensor", "src_device", "dst_device", "send_node", "recv_node", "key", "dtype",
        "shape", "consumers")], bytes=48)
    (recorded,) = reader.steps()
    assert recorded.seq > 0 and samples.without_stamps(recorded) == step
    assert reader.step_stats(0) == stats
    assert reader.transfers(0) == transfers
    seqs = [graph.seq, placements[0].seq, reader.plans()[0].seq, recorded.seq]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4


def test_latest_recordings_win(logdir, samples):
    cpu, gpu = samples.devices()
    with RunWriter(logdir, "r") as writer:
        writer.devices([cpu, gpu])
        writer.devices([DeviceRecord(gpu.name, "GPU", 0, "a real GPU now", False)])
        writer.graph(samples.graph(1))
        writer.graph(samples.graph(2))
        writer.placements(samples.placements(1))
        late = PlacementRecord("w", "VariableV2", "/device:GPU:0", samples.CPU, SOFT_FALLBACK,
                               "no GPU kernel", "w: (VariableV2): CPU", graph_version=2)
        writer.placements([late])
        writer.plan(*samples.plan(0, 1))
        replanned, _, _ = samples.plan(0, 2)
        writer.plan(replanned, [PartitionRecord(0, samples.CPU, ("x", "w", "y"))], [])
        writer.plan(*samples.plan(1, 2))
        for step, ops in ((0, 2), (1, 3), (0, 4)):   # step 0 recorded twice: the later wins
            writer.step(*samples.step(step, ops=ops))
    reader = RunReader(writer.path)
    assert [d.physical for d in reader.devices()] == ["host CPU", "a real GPU now"]
    assert reader.graph_versions() == [1, 2]
    assert reader.graph().version == 2 and reader.graph(1).version == 1
    assert reader.graph(7) is None
    assert {p.node: p.assigned for p in reader.placements(1)}["w"] == samples.GPU
    latest = {p.node: p for p in reader.placements()}
    assert latest["w"].reason == SOFT_FALLBACK and latest["w"].assigned == samples.CPU
    assert set(latest) == {"x", "w", "y"}
    assert reader.placements(0) == []
    assert [(p.plan, p.graph_version) for p in reader.plans()] == [(0, 2), (1, 2)]
    assert reader.partitions(0) == [PartitionRecord(0, samples.CPU, ("x", "w", "y"))]
    assert reader.cut_edges(0) == [] and len(reader.cut_edges(1)) == 1
    assert [p.plan for p in reader.partitions()] == [0, 1, 1]
    assert [s.step for s in reader.steps()] == [0, 1, 0]
    assert len(reader.step_stats(0)) == 4 and len(reader.step_stats(1)) == 3


def test_cut_edge_bytes_come_from_the_latest_step_of_the_plan(logdir, samples):
    plan, partitions, (edge,) = samples.plan(0)
    other = CutEdgeRecord(0, "^init", samples.GPU, samples.CPU, "send_c", "recv_c", "ctl-key",
                          "bool", (), ("x",), 0)
    never_run, _, (unrun_edge,) = samples.plan(1)
    unrun_edge = CutEdgeRecord(**{**unrun_edge.__dict__, "bytes": 7})
    with RunWriter(logdir, "r") as writer:
        writer.plan(plan, partitions, [edge, other])
        writer.plan(never_run, [], [unrun_edge])
        record, stats, _ = samples.step(0)
        writer.step(record, stats, [TransferRecord(0, samples.KEY, "x:0", samples.CPU,
                                                   samples.GPU, 100)])
        record, stats, _ = samples.step(1)
        writer.step(record, stats, [
            TransferRecord(1, samples.KEY, "x:0", samples.CPU, samples.GPU, 120),
            TransferRecord(1, samples.KEY, "x:0", samples.CPU, samples.GPU, 80),
            TransferRecord(1, "unrelated", "z:0", samples.CPU, samples.GPU, 999)])
    reader = RunReader(writer.path)
    assert [(e.tensor, e.bytes) for e in reader.cut_edges(0)] == [("x:0", 200), ("^init", 0)]
    assert [(e.plan, e.bytes) for e in reader.cut_edges(1)] == [(1, 7)]
    assert [e.bytes for e in reader.cut_edges()] == [200, 0, 7]
    assert reader.cut_edges(5) == []


def test_events_follow_the_order_things_happened(logdir, samples):
    with RunWriter(logdir, "r", config={"lr": 0.1}) as writer:
        writer.devices(samples.devices())
        writer.graph(samples.graph())
        writer.scalar("loss", 0.5, 0)
        writer.placements(samples.placements())
        writer.plan(*samples.plan())
        writer.step(*samples.step(0, ops=500))
        writer.histogram("w", [1.0, 2.0])
        writer.text("note", "hi")
        writer.set_config({"batch": 32})
    reader = RunReader(writer.path)
    events = reader.events()
    kinds = [kind for _, _, kind, _ in events]
    assert kinds == ["run", "device", "device", "graph", "scalar", "placement", "placement",
                     "placement", "plan", "step", "histogram", "text", "run", "run"]
    seqs = [seq for seq, _, _, _ in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    summaries = {kind: summary for _, _, kind, summary in events}
    assert summaries["step"] == (
        "step 0 (plan 0): 500 ops in 0.125 ms, 1 transfers, 48 bytes moved")
    assert summaries["scalar"] == "loss = 0.5 at step 0"
    assert summaries["plan"] == "plan 0 for graph version 1: 2 partitions, 1 cut edges"
    assert [e[3] for e in events if e[2] == "run"] == [
        "run started", "config updated: batch", "run finished"]
    page = reader.events(after_seq=seqs[3], limit=4)
    assert page == events[4:8]
    assert reader.events(after_seq=seqs[-1]) == []
    assert reader.events(limit=0) == []


def test_info_reports_config_steps_and_exception(logdir):
    config = {"lr": 0.1, "layers": [64, 64]}
    with pytest.raises(RuntimeError, match="boom"), RunWriter(logdir, "r", config=config) as writer:
        writer.set_config({"lr": 0.05, "optimizer": "adam"})
        writer.scalar("loss", 1.0, step=41)
        raise RuntimeError("boom")
    info = RunReader(writer.path).info()
    assert info.name == "r" and info.path == writer.path
    assert info.status == FINISHED
    assert info.config == {"lr": 0.05, "layers": [64, 64], "optimizer": "adam"}
    assert info.num_steps == 42 and info.tags == ("loss",)
    assert info.exception == "RuntimeError: boom"
    assert info.started <= info.updated
    assert RunReader(writer.path).events()[-1][3] == (
        "run finished with an exception: RuntimeError: boom")


def test_unknown_tags_and_steps_raise_key_error_naming_what_is_known(logdir, samples):
    with RunWriter(logdir, "r") as writer:
        writer.scalar("loss", 1.0)
        writer.step(*samples.step(3))
    reader = RunReader(writer.path)
    with pytest.raises(KeyError, match=r"'acc'.*\['loss'\]"):
        reader.scalars("acc")
    with pytest.raises(KeyError, match="'loss'"):
        reader.histograms("loss")
    with pytest.raises(KeyError, match=r"no step 4 .*recorded steps: 3\.\.3"):
        reader.step_stats(4)
    with pytest.raises(KeyError, match="no step 0"):
        reader.transfers(0)
