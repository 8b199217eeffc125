"""Input parsing, cut-edge detection, and stable device colours and labels."""

from __future__ import annotations

from viz_records import CPU0, GPU0, GPU1

from engine.record.schema import DeviceRecord
from viz.colors import (
    CPU_COLORS,
    GPU_COLORS,
    UNPLACED_COLOR,
    device_color,
    device_label,
    legend_entries,
    parse_device,
)
from viz.edges import cut_edges, graph_edges, input_source


def test_input_spellings():
    assert input_source("a") == ("a", 0, False)
    assert input_source("scope/a:2") == ("scope/a", 2, False)
    assert input_source("^scope/a") == ("scope/a", -1, True)


def test_graph_edges_skip_nodes_outside_the_graph(mlp):
    graph, _ = mlp
    edges = {(e.src, e.dst, e.control) for e in graph_edges(graph)}
    assert ("layer1/Relu", "layer2/Relu", True) in edges
    assert ("x", "layer1/MatMul", False) in edges
    assert len(edges) == 10


def test_cut_edges_are_the_device_crossings(mlp):
    graph, placements = mlp
    assert cut_edges(graph, placements) == {
        ("layer1/Relu", "layer2/MatMul"),
        ("layer1/Relu", "layer2/Relu"),
        ("layer2/Relu", "loss/Square"),
    }


def test_unplaced_ends_are_not_cuts(mlp):
    graph, placements = mlp
    assert cut_edges(graph, placements[:6]) == set()


def test_parse_full_and_legacy_names():
    assert parse_device(GPU1) == parse_device("/job:localhost/replica:0/task:0/device:GPU:1")
    legacy = parse_device("/job:worker/task:2/gpu:1")
    assert (legacy.job, legacy.task, legacy.device_type, legacy.index) == ("worker", 2, "GPU", 1)


def test_colors_are_stable_and_by_family():
    assert device_color(CPU0) == CPU_COLORS[0]
    assert device_color(GPU0) == GPU_COLORS[0]
    assert device_color(GPU1) == GPU_COLORS[1]
    assert device_color(GPU1) == device_color("/job:localhost/replica:0/task:0/device:GPU:1")
    assert device_color("") == UNPLACED_COLOR
    worker = [device_color(f"/job:worker/replica:0/task:{t}/device:GPU:0") for t in range(2)]
    assert worker[0] != worker[1]
    assert all(color in GPU_COLORS for color in worker)


def test_labels_and_legend_mark_virtual_gpus():
    assert device_label(GPU1) == "GPU:1"
    assert device_label("/job:worker/replica:0/task:1/device:CPU:0") == "worker/1 CPU:0"
    records = [DeviceRecord(GPU1, "GPU", 1, "virtual GPU backed by host memory", True)]
    entries = legend_entries([GPU1, "", CPU0, GPU0, GPU1], records)
    assert [entry.label for entry in entries] == ["CPU:0", "GPU:0", "GPU:1 (virtual)", "unplaced"]
    assert [entry.virtual for entry in entries] == [False, False, True, False]
