"""`prune`: the client graph for one Session.run signature. Fed tensors become `_Arg` nodes
and fetched tensors `_Retval` nodes on the client device (TF 1.12's in-process convention),
then everything not needed for the fetches and targets is dropped."""

from __future__ import annotations

from dataclasses import dataclass

from engine.graph_def import GraphDef, NodeDef, parse_input, tensor_spelling, topological_order


@dataclass
class ClientGraph:
    nodes: list[NodeDef]                 # topological order
    devices: dict[str, str]              # node name -> assigned device
    arg_names: list[str]                 # one _Arg per feed, in feed order
    retval_names: list[str]              # one _Retval per fetch, in fetch order


def _endpoint(name: str) -> tuple[str, int]:
    op, _, index = name.rpartition(":")
    return (op, int(index)) if op and index.isdigit() else (name, 0)


def prune(graph_def: GraphDef, placement: dict[str, str], feeds: list[str],
          fetches: list[str], targets: list[str], client_device: str) -> ClientGraph:
    """feeds/fetches are tensor names ("x:0"), targets op names. Returns the nodes needed,
    with feeds and fetches rewritten, each mapped to its device."""
    fed = {_endpoint(f): f"_arg_{op}_{i}_{k}" for k, f in enumerate(feeds)
           for op, i in [_endpoint(f)]}
    needed = _needed_nodes(graph_def, fed, fetches, targets)
    nodes, devices = [], {}
    for n in graph_def.node:
        if n.name not in needed:
            continue
        rewritten = [_rewrite_input(spelling, fed) for spelling in n.input]
        nodes.append(NodeDef(n.name, n.op, rewritten, n.device, n.attr, n.output_dtypes,
                             n.output_shapes, n.meta) if rewritten != n.input else n)
        devices[n.name] = placement[n.name]
    args = []
    for k, f in enumerate(feeds):
        op, i = _endpoint(f)
        src = graph_def.by_name(op)
        name = fed[(op, i)]
        args.append(name)
        nodes.insert(len(args) - 1, NodeDef(
            name, "_Arg", [], client_device, {"T": src.output_dtypes[i].base_dtype, "index": k},
            (src.output_dtypes[i].base_dtype,), (src.output_shapes[i],), {"feed": f}))
        devices[name] = client_device
    retvals = []
    for k, f in enumerate(fetches):
        op, i = _endpoint(f)
        src = graph_def.by_name(op)
        name = f"_retval_{op}_{i}_{k}"
        retvals.append(name)
        nodes.append(NodeDef(name, "_Retval", [_rewrite_input(tensor_spelling(op, i), fed)],
                             client_device, {"T": src.output_dtypes[i].base_dtype, "index": k},
                             (), (), {"fetch": f}))
        devices[name] = client_device
    return ClientGraph(topological_order(nodes), devices, args, retvals)


def _rewrite_input(spelling: str, fed: dict) -> str:
    src, index = parse_input(spelling)
    if index >= 0 and (src, index) in fed:
        return fed[(src, index)]
    return spelling


def _needed_nodes(graph_def: GraphDef, fed: dict, fetches: list[str],
                  targets: list[str]) -> set[str]:
    """Backwards closure from fetches and targets, not crossing fed tensors."""
    stack = [_endpoint(f)[0] for f in fetches if _endpoint(f) not in fed] + list(targets)
    needed = set()
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        for spelling in graph_def.by_name(name).input:
            src, index = parse_input(spelling)
            if index >= 0 and (src, index) in fed:
                continue
            stack.append(src)
    return needed
