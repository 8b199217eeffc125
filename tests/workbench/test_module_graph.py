"""workbench.module_graph / hooks.log_module_graph: a PyTorch module's graph traced with
torch.fx, module paths as name scopes, shapes from example inputs, recorded into a run that
the Graph page groups into boxes."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from engine.record import RunReader, RunWriter
from engine.record.schema import TensorSpec
from viz.graph_elements import graph_elements
from workbench import data
from workbench.hooks import ScalarLogger, log_module_graph
from workbench.module_graph import ModuleGraphError, module_graph


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x))) + x.mean()


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Block(), nn.Conv2d(4, 3, 1), Block())
        self.fc = nn.Linear(4 * 8 * 8, 10)
        self.lstm = nn.LSTM(10, 5, batch_first=True)

    def forward(self, x):
        z = self.fc(self.blocks(x).flatten(1)).softmax(-1)
        out, (h, _) = self.lstm(z.unsqueeze(1))
        return out[:, -1] + h[0]


class Shared(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return self.fc(self.fc(x))


class DataDependent(nn.Module):
    def forward(self, x, flip):
        return -x if flip else x * (x.sum() > 0)


def by_name(graph):
    return {node.name: node for node in graph.nodes}


def test_module_paths_are_scopes_and_parameters_feed_their_module():
    nodes = by_name(module_graph(Net()))
    conv = nodes["blocks/0/conv"]
    assert conv.op == "Conv2d" and conv.inputs == ("x", "blocks/0/conv/weight",
                                                    "blocks/0/conv/bias")
    assert conv.attrs["module"] == "torch.nn.modules.conv.Conv2d"
    assert "kernel_size=(3, 3)" in conv.attrs["config"]
    assert nodes["blocks/0/conv/weight"].op == "Parameter"
    assert nodes["blocks/1"].op == "Conv2d"                 # a Sequential's child by index
    # functions and tensor methods called inside a module live in its scope
    assert nodes["blocks/0/relu"].inputs == ("blocks/0/bn",)
    assert nodes["blocks/0/mean"].op == "mean" and nodes["blocks/2/add"].op == "add"
    assert nodes["flatten"].attrs == {"arg1": "1"}
    assert nodes["output"].op == "Output"
    assert all(node.outputs == () for node in nodes.values() if node.op != "Parameter")


def test_example_inputs_give_every_node_its_shapes_and_tuple_outputs_their_index():
    nodes = by_name(module_graph(Net(), [torch.randn(2, 3, 8, 8)]))
    assert nodes["x"].outputs == (TensorSpec("float32", (2, 3, 8, 8)),)
    assert nodes["blocks/0/mean"].outputs == (TensorSpec("float32", ()),)
    assert nodes["fc"].outputs == (TensorSpec("float32", (2, 10)),)
    assert nodes["fc/weight"].outputs == (TensorSpec("float32", (10, 256)),)
    # nn.LSTM returns (output, (h, c)): h and c are its second output
    assert nodes["lstm"].outputs == (TensorSpec("float32", (2, 1, 5)),
                                     TensorSpec("float32", (1, 2, 5)))
    second = [node for node in nodes.values() if node.inputs == ("lstm:1",)]
    assert len(second) == 1 and second[0].op == "getitem"
    assert nodes["output"].outputs == (TensorSpec("float32", (2, 5)),)


def test_a_module_called_twice_gets_two_nodes_sharing_one_set_of_parameters():
    nodes = by_name(module_graph(Shared(), [torch.randn(1, 3)]))
    assert nodes["fc"].inputs == ("x", "fc/weight", "fc/bias")
    assert nodes["fc_1"].inputs == ("fc", "fc/weight", "fc/bias")
    assert [name for name in nodes if name.endswith("/weight")] == ["fc/weight"]


def test_the_creation_site_is_the_users_forward_not_torch():
    nodes = by_name(module_graph(Net()))
    (site,) = nodes["blocks/0/relu"].stack[-1:]
    assert site.startswith("test_module_graph.py:") and site.endswith(" in forward")
    assert all("torch" not in frame for node in nodes.values() for frame in node.stack)


def test_untraceable_control_flow_is_named_with_the_way_out():
    with pytest.raises(ModuleGraphError, match=r"cannot trace DataDependent with torch\.fx: "
                                               r".*concrete_args"):
        module_graph(DataDependent())
    fixed = by_name(module_graph(DataDependent(), concrete_args={"flip": False}))
    assert [node.op for node in fixed.values() if node.op != "Placeholder"][-3:] == [
        "gt", "mul", "Output"]                 # the tensor comparison stays in the graph


def test_wrong_example_inputs_and_non_modules_are_refused_by_name():
    with pytest.raises(ModuleGraphError, match=r"Net failed on the example inputs "
                                               r"\(\(2, 5\) float32\): RuntimeError"):
        module_graph(Net(), [torch.randn(2, 5)])
    with pytest.raises(TypeError, match="expects a torch.nn.Module, got function"):
        module_graph(lambda x: x)


def test_the_recorded_graph_opens_as_boxes_on_the_graph_page(empty_logdir):
    with RunWriter(empty_logdir, "torch-net") as writer:
        log_module_graph(writer, Net(), torch.randn(2, 3, 8, 8))
    with RunReader(empty_logdir / "torch-net") as reader:
        recorded = reader.graph()
    assert by_name(recorded)["fc"].outputs == (TensorSpec("float32", (2, 10)),)
    tree = data.hierarchy("torch-net")
    assert {"blocks", "blocks/0", "blocks/0/conv", "lstm"} <= set(tree.groups)
    drawn = data.view("torch-net", frozenset({"blocks", "blocks/0"}))
    boxes = {node.id for node in drawn.nodes if node.expanded}
    assert boxes == {"blocks", "blocks/0"}
    elements, _ = graph_elements(drawn, recorded, [])
    assert {element["data"]["id"] for element in elements} >= {"blocks/0", "blocks/0/relu"}


def test_scalar_logger_records_the_graph_beside_the_scalars(tmp_path):
    with ScalarLogger(tmp_path, "logged") as log:
        log.graph(Shared(), torch.randn(1, 3))
        log(0, loss=1.0)
    with RunReader(tmp_path / "logged") as reader:
        assert {node.name for node in reader.graph().nodes} >= {"fc", "fc_1"}
        assert reader.scalars("loss")[1].tolist() == [1.0]
