"""viz.graph_elements: cytoscape elements (compound boxes, sized and labelled leaves, edges
with stable ids), colour modes with their legends, the partition view and its cut labels."""

from __future__ import annotations

import pytest
from viz_records import CPU0, GPU0, GPU1, make_node, placed

from engine.record.schema import (
    CutEdgeRecord,
    DeviceRecord,
    GraphRecord,
    OpStatRecord,
    TransferRecord,
)
from viz.colors import CPU_COLORS, GPU_COLORS, SEQUENTIAL_COLORS, text_color
from viz.graph_elements import (
    BUNDLE_MIN,
    CUT_LEGEND,
    NO_STEP_COLOR,
    bundled,
    cytoscape_layout,
    graph_elements,
    leaf_colors,
    step_facts,
    stylesheet,
)
from viz.graph_svg import graph_svg
from viz.hierarchy import build_hierarchy, hierarchy_view

WORKER1_GPU0 = "/job:worker/replica:0/task:1/device:GPU:0"


def by_id(elements):
    return {element["data"]["id"]: element for element in elements}


def test_boxes_leaves_and_edges(mlp):
    graph, placements = mlp
    tree = build_hierarchy(graph)
    elements, legend = graph_elements(hierarchy_view(tree, ["layer1"]), graph, placements)
    found = by_id(elements)
    assert found["layer1"] == {"data": {"id": "layer1", "label": "layer1/", "kind": "scope"},
                               "classes": "box scope"}
    weights = found["layer1/weights"]["data"]         # a closed scope inside the open one
    assert weights["parent"] == "layer1" and weights["label"] == "weights\n2 ops · CPU:0"
    assert found["layer1/weights"]["classes"] == "leaf scope"
    relu = found["layer1/Relu"]["data"]
    assert relu["label"] == "Relu" and relu["width"] > 30 and relu["height"] == 26
    assert weights["width"] > relu["width"] and weights["height"] > relu["height"]
    assert found["layer2"]["data"]["label"] == "layer2\n3 ops · GPU:0"
    edges = [e for e in elements if "source" in e["data"]]
    assert len({e["data"]["id"] for e in edges}) == len(edges)
    assert found["layer1/Relu->layer2"]["classes"] == "edge cut"
    assert found["layer1/Relu->layer2"]["data"]["count"] == 2     # data and control edges
    assert [item.label for item in legend] == ["CPU:0", "GPU:0", "GPU:1", CUT_LEGEND]


def test_a_closed_scope_on_several_devices_names_the_one_most_members_use():
    graph = GraphRecord(1, (make_node("s/a", "Const"), make_node("s/b", "Const"),
                            make_node("s/c", "Add", ("s/a", "s/b"))))
    placements = [placed(graph.nodes[0], GPU0), placed(graph.nodes[1], CPU0),
                  placed(graph.nodes[2], GPU0)]
    elements, _ = graph_elements(hierarchy_view(build_hierarchy(graph), []), graph, placements)
    assert by_id(elements)["s"]["data"]["label"] == "s\n3 ops · GPU:0"


def test_leaf_text_reads_on_its_fill():
    assert text_color("#fde725") == "#111111" and text_color("#440154") == "#ffffff"


def test_device_colours_mark_virtual_gpus_and_requested_devices(mlp):
    graph, placements = mlp
    view = hierarchy_view(build_hierarchy(graph), ["layer1", "layer1/weights", "layer2"])
    devices = [DeviceRecord(GPU0, "GPU", 0, "virtual GPU", True)]
    colors, legend = leaf_colors("device", view.leaves(), graph,
                                 {p.node: p.assigned for p in placements}, devices=devices)
    assert colors["x"] == CPU_COLORS[0] and colors["layer2/MatMul"] == GPU_COLORS[0]
    assert [(i.label, i.outline) for i in legend] == [
        ("CPU:0", ""), ("GPU:0 (virtual)", "#333333"), ("GPU:1", "")]
    colors, legend = leaf_colors("requested", view.leaves(), graph, {})
    assert [item.label for item in legend] == ["/device:GPU:3", "(none requested)"]
    assert colors["layer2/weights"] != colors["x"]


def test_op_type_colours_rank_the_most_common_first(mlp):
    graph, placements = mlp
    view = hierarchy_view(build_hierarchy(graph), ["layer1", "layer1/weights", "layer2", "loss"])
    colors, legend = leaf_colors("op", view.leaves(), graph, {})
    labels = [item.label for item in legend]
    assert labels[:3] == ["MatMul", "Relu", "VariableV2"]
    assert colors["layer1/MatMul"] == colors["layer2/MatMul"] != colors["layer1/Relu"]


def test_time_and_bytes_bins_and_what_did_not_run(mlp):
    graph, _ = mlp
    view = hierarchy_view(build_hierarchy(graph), [])
    stats = [OpStatRecord(4, "layer1/MatMul", "MatMul", CPU0, 0, 10, 64),
             OpStatRecord(4, "layer1/Relu", "Relu", CPU0, 10, 20, 64),
             OpStatRecord(4, "loss/Mean", "Mean", GPU1, 0, 10_000, 4)]
    facts = step_facts(4, stats)
    colors, legend = leaf_colors("time", view.leaves(), graph, {}, facts)
    assert colors["layer1"] == SEQUENTIAL_COLORS[0]            # 20 us, the least
    assert colors["loss"] == SEQUENTIAL_COLORS[-1]             # 10 ms, the most
    assert colors["x"] == NO_STEP_COLOR
    assert legend[0].label == "20 us – 56.3 us" and legend[-1].label == "did not run in step 4"
    colors, legend = leaf_colors("bytes", view.leaves(), graph, {}, facts)
    assert colors["layer1"] == SEQUENTIAL_COLORS[-1] and legend[-2].label.endswith("128 B")
    colors, legend = leaf_colors("time", view.leaves(), graph, {})
    assert set(colors.values()) == {NO_STEP_COLOR} and legend[-1].label == "no traced step"
    with pytest.raises(ValueError, match="unknown colour mode 'rainbow'"):
        leaf_colors("rainbow", view.leaves(), graph, {})


def test_partition_view_boxes_each_device_and_labels_cut_edges(mlp):
    graph, placements = mlp
    view = hierarchy_view(build_hierarchy(graph), ["layer1", "layer2", "loss"])
    cut = CutEdgeRecord(1, "layer1/Relu:0", CPU0, GPU0, "layer1/Relu/_0", "layer1/Relu/_1",
                        "key-1", "float32", (None, 4), ("layer2/MatMul",), 100)
    facts = step_facts(4, [OpStatRecord(4, "layer1/Relu/_1", "_Recv", GPU0, 0, 35, 0)],
                       [TransferRecord(4, "key-1", "layer1/Relu:0", CPU0, GPU0, 2048)])
    elements, _ = graph_elements(view, graph, placements, facts=facts, partition=True,
                                 cuts=[cut])
    found = by_id(elements)
    boxes = [e["data"]["label"] for e in elements if "device" in e["classes"]]
    assert boxes == ["CPU:0", "GPU:0", "GPU:1"]
    assert found[f"{CPU0}|layer1"]["data"]["parent"] == f"device:{CPU0}"
    assert found[f"{CPU0}|layer1/Relu"]["data"]["parent"] == f"{CPU0}|layer1"
    # layer2's soft-fallback weights ran on GPU:0 with the rest of layer2
    assert found[f"{GPU0}|layer2/weights"]["data"]["parent"] == f"{GPU0}|layer2"
    edge = found[f"{CPU0}|layer1/Relu->{GPU0}|layer2/MatMul"]
    assert set(edge["classes"].split()) <= {"edge", "cut", "labelled", "routed"}
    assert {"cut", "labelled"} <= set(edge["classes"].split())
    assert edge["data"]["label"] == "layer1/Relu:0 · 2 KB · 35 us"


def test_partition_view_groups_devices_by_task_when_there_are_several():
    nodes = (make_node("a", "Const"), make_node("b", "Neg", ("a",)))
    graph = GraphRecord(1, nodes)
    placements = [placed(nodes[0], CPU0), placed(nodes[1], WORKER1_GPU0)]
    view = hierarchy_view(build_hierarchy(graph), [])
    elements, _ = graph_elements(view, graph, placements, partition=True)
    found = by_id(elements)
    assert found["task:/job:worker/task:1"]["classes"] == "box task"
    assert found[f"device:{WORKER1_GPU0}"]["data"]["parent"] == "task:/job:worker/task:1"
    assert found[f"device:{WORKER1_GPU0}"]["data"]["label"] == "worker/1 GPU:0"


def test_stylesheet_and_layout():
    selectors = [rule["selector"] for rule in stylesheet()]
    for wanted in ("node.leaf", "node.box", "node.series", "edge.cut", "edge.labelled"):
        assert wanted in selectors
    layout = cytoscape_layout()
    assert layout["name"] == "preset" and layout["fit"] and not layout["animate"]


def test_every_leaf_has_a_position_and_leaves_do_not_overlap(mlp):
    graph, placements = mlp
    view = hierarchy_view(build_hierarchy(graph), ["layer1", "layer1/weights", "layer2"])
    elements, _ = graph_elements(view, graph, placements)
    leaves = [e for e in elements if "leaf" in e.get("classes", "")]
    assert leaves and all("position" in e for e in leaves)
    boxes = [(e["position"]["x"], e["position"]["y"], e["data"]["width"], e["data"]["height"])
             for e in leaves]
    for i, (x, y, w, h) in enumerate(boxes):
        for x2, y2, w2, h2 in boxes[i + 1:]:
            assert abs(x - x2) * 2 >= w + w2 or abs(y - y2) * 2 >= h + h2


def _fanned_in() -> GraphRecord:
    """Five ops of scope "net" feed "save" (as variables feed a saver); two feed "loss"."""
    inner = ("net/conv", "net/pool", "net/relu", "net/bias", "net/norm")
    return GraphRecord(1, (*(make_node(name, "Const") for name in inner),
                           make_node("save", "SaveV2", inner),
                           make_node("loss", "Add", inner[:2])))


def test_many_edges_from_one_open_box_to_one_node_are_drawn_as_one_from_the_box():
    graph = _fanned_in()
    view = hierarchy_view(build_hierarchy(graph), ["net"])
    elements, _ = graph_elements(view, graph, [])
    edges = {e["data"]["id"]: e for e in elements if "source" in e["data"]}
    assert BUNDLE_MIN == 4
    assert edges["net->save"]["data"]["count"] == 5     # all five, from the box
    assert {"net/conv->loss", "net/pool->loss"} <= edges.keys()   # two stay as they are
    assert not any(key.endswith("->save") and key != "net->save" for key in edges)
    closed, _ = graph_elements(hierarchy_view(build_hierarchy(graph), []), graph, [])
    assert "net->save" in by_id(closed)      # the same edge as when the box is closed


def test_bundled_keeps_every_underlying_edge_once():
    graph = _fanned_in()
    view = hierarchy_view(build_hierarchy(graph), ["net"])
    drawn = bundled(list(view.nodes), view.edges)
    stood = [(one.src, one.dst) for _, under in drawn for one in under]
    assert sorted(stood) == sorted((edge.src, edge.dst) for edge in view.edges)
    assert len(drawn) < len(view.edges)
    assert sum(len(edge.edges) for edge, _ in drawn) == sum(len(e.edges) for e in view.edges)


def test_the_partition_view_keeps_each_edge_to_label_its_cut():
    graph = _fanned_in()
    view = hierarchy_view(build_hierarchy(graph), ["net"])
    elements, _ = graph_elements(view, graph, [], partition=True)
    targets = [e["data"]["id"] for e in elements if "source" in e["data"]
               and e["data"]["target"].endswith("|save")]
    assert len(targets) == 5


def test_the_svg_draws_an_edge_that_ends_at_a_box():
    graph = _fanned_in()
    elements, _ = graph_elements(hierarchy_view(build_hierarchy(graph), ["net"]), graph, [])
    edges = [e for e in elements if "source" in e["data"]]
    assert graph_svg(elements).count("<polyline") == len(edges)
