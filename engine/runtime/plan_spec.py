"""A plan as data: `PlanSpec` holds what a step runs (the pruned graph and its placement, one
partition GraphDef per device with its Send/Recv keys in attrs, the executor kind and run order
of each partition, the feeds/fetches/targets mapping) and nothing that runs it;
`to_json`/`from_json` carry it through the graph JSON codec, so a partition can be registered on
another process. engine/runtime/plan.py builds executors from it."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from engine import dtypes
from engine.graph_def import GraphDef, NodeDef, graph_def_from_document
from engine.graph_json import ArrayStore, decode_dtype, decode_shape, document_to_json
from engine.graph_schema import fail, kind_of, short
from engine.passes.cross_device_loops import add_control_loops
from engine.passes.partition import CutEdge, PartitionResult, by_device, key_of, partition
from engine.passes.prune import ClientGraph, prune
from engine.runtime.executor_api import EXECUTORS, choose_executors
from engine.runtime.frames import check_feeds_outside_loops
from engine.shapes import TensorShape

PLAN_FORMAT = "engine.planspec"
PLAN_VERSION = 1
_FIELDS = ("format", "version", "fetches", "feeds", "targets", "graph_version",
           "client_device", "placement", "arg_names", "retval_names", "pruned", "partitions",
           "cut_edges")
_EDGE_FIELDS = ("tensor", "src_device", "dst_device", "send_node", "recv_node", "key",
                "dtype", "shape", "consumers")


@dataclass
class PlanKey:
    fetches: tuple[str, ...]
    feeds: tuple[str, ...]
    targets: tuple[str, ...]
    graph_version: int

    def as_tuple(self) -> tuple:
        return (self.fetches, self.feeds, self.targets, self.graph_version)


@dataclass
class PlanSpec:
    key: PlanKey
    client_device: str
    client: ClientGraph                     # pruned graph, placement, _Arg/_Retval names
    partitions: dict[str, list[NodeDef]]    # device -> nodes; the client's partition first
    executors: dict[str, str]               # device -> executor kind (executor_api)
    cut_edges: list[CutEdge]

    @classmethod
    def build(cls, key: PlanKey, graph_def: GraphDef, placement: dict[str, str],
              client_device: str) -> PlanSpec:
        """Prunes and partitions (by device) `graph_def` for one Session.run signature."""
        check_feeds_outside_loops(graph_def.node, key.feeds)
        client = add_control_loops(prune(graph_def, placement, list(key.feeds),
                                         list(key.fetches), list(key.targets), client_device))
        result = partition(client, location=by_device)
        kinds = choose_executors(result.partitions)
        ordered = sorted(result.partitions, key=lambda d: (d != client_device, d))
        return cls(key, client_device, client, {d: result.partitions[d] for d in ordered},
                   {d: kinds[d] for d in ordered}, result.cut_edges)

    def result(self) -> PartitionResult:
        return PartitionResult(self.partitions, self.cut_edges)

    def partition_graph(self, device: str) -> GraphDef:
        return GraphDef(self.partitions[device], self.key.graph_version)

    # -- JSON -------------------------------------------------------------------------------

    def to_json(self) -> str:
        """One JSON document; each partition (and the pruned graph) is a graph document of
        the JSON GraphDef form, every tensor inline."""
        key = self.key
        doc = {"format": PLAN_FORMAT, "version": PLAN_VERSION, "fetches": list(key.fetches),
               "feeds": list(key.feeds), "targets": list(key.targets),
               "graph_version": key.graph_version, "client_device": self.client_device,
               "placement": dict(self.client.devices), "arg_names": self.client.arg_names,
               "retval_names": self.client.retval_names,
               "pruned": _graph_document(self.client.nodes, key.graph_version),
               "partitions": [{"device": d, "executor": self.executors[d],
                               "graph": _graph_document(nodes, key.graph_version)}
                              for d, nodes in self.partitions.items()],
               "cut_edges": [_edge_json(e) for e in self.cut_edges]}
        return json.dumps(doc, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "<plan>") -> PlanSpec:
        """The spec `to_json` wrote; each graph is checked by the graph schema (GraphFileError
        naming `source`, the graph and the field otherwise)."""
        try:
            doc = json.loads(text)
        except (ValueError, UnicodeDecodeError) as e:
            raise fail(source, f"not a JSON document ({e})") from None
        _check_document(doc, source)
        key = PlanKey(tuple(doc["fetches"]), tuple(doc["feeds"]), tuple(doc["targets"]),
                      doc["graph_version"])
        pruned = _graph_from(doc["pruned"], key, f"{source} pruned graph")
        client = ClientGraph(pruned, dict(doc["placement"]), list(doc["arg_names"]),
                             list(doc["retval_names"]))
        partitions, executors = {}, {}
        for j, part in enumerate(doc["partitions"]):
            where = f"{source} partitions[{j}]"
            if not isinstance(part, dict) or set(part) != {"device", "executor", "graph"}:
                raise fail(where, "a partition is {\"device\", \"executor\", \"graph\"}")
            if part["executor"] not in EXECUTORS:
                raise fail(f"{where}['executor']", f"unknown executor {short(part['executor'])} "
                                                   f"(known: {', '.join(sorted(EXECUTORS))})")
            partitions[part["device"]] = _graph_from(part["graph"], key, where)
            executors[part["device"]] = part["executor"]
        edges = [_edge_from(e, f"{source} cut_edges[{j}]")
                 for j, e in enumerate(doc["cut_edges"])]
        return cls(key, doc["client_device"], client, partitions, executors, edges)


def _graph_document(nodes: list[NodeDef], version: int) -> dict:
    inline = ArrayStore(inline_limit=sys.maxsize)     # bitwise: no tensor elided or set aside
    return json.loads(document_to_json(GraphDef(nodes, version), arrays=inline))


def _graph_from(raw, key: PlanKey, where: str) -> list[NodeDef]:
    """A partition's nodes; the runtime's Python-side meta (rendezvous keys, the feed or fetch
    an _Arg or _Retval stands for) is derived from the attrs and the spec's key."""
    if not isinstance(raw, dict):
        raise fail(where, f"a graph is a graph document object, got {kind_of(raw)}")
    graph, _ = graph_def_from_document(json.dumps(raw, allow_nan=False), where, runtime=True)
    for n in graph.node:
        if n.op in ("_Send", "_Recv"):
            n.meta["key"] = key_of(n)
        elif n.op == "_Arg":
            n.meta["feed"] = _named(key.feeds, n, where)
        elif n.op == "_Retval":
            n.meta["fetch"] = _named(key.fetches, n, where)
    return graph.node


def _named(names: tuple[str, ...], n: NodeDef, where: str) -> str:
    index = n.attr["index"]
    if index >= len(names):
        raise fail(f"{where} node {short(n.name)} attr 'index'",
                   f"{index} is past the plan's {len(names)} {n.op[1:].lower()}s")
    return names[index]


def _edge_json(e: CutEdge) -> dict:
    return {"tensor": e.tensor, "src_device": e.src_device, "dst_device": e.dst_device,
            "send_node": e.send_node, "recv_node": e.recv_node, "key": e.key,
            "dtype": e.dtype.name, "shape": None if e.shape.dims is None else list(e.shape.dims),
            "consumers": list(e.consumers)}


def _edge_from(raw, where: str) -> CutEdge:
    if not isinstance(raw, dict) or set(raw) != set(_EDGE_FIELDS):
        raise fail(where, f"a cut edge has the fields {', '.join(_EDGE_FIELDS)}")
    for name in _EDGE_FIELDS[:6]:
        if not isinstance(raw[name], str):
            raise fail(f"{where}['{name}']", f"must be a string, got {kind_of(raw[name])}")
    dtype: dtypes.DType = decode_dtype(raw["dtype"], f"{where}['dtype']")
    shape: TensorShape = decode_shape(raw["shape"], f"{where}['shape']")
    return CutEdge(raw["tensor"], raw["src_device"], raw["dst_device"], raw["send_node"],
                   raw["recv_node"], raw["key"], dtype, shape, tuple(raw["consumers"]))


def _check_document(doc, source: str) -> None:
    if not isinstance(doc, dict) or doc.get("format") != PLAN_FORMAT:
        raise fail(source, f"not an {PLAN_FORMAT} document")
    if doc.get("version") != PLAN_VERSION:
        raise fail(f"{source} field 'version'", f"unsupported version "
                                                f"{short(doc.get('version'))} (this build "
                                                f"reads {PLAN_VERSION})")
    missing = [k for k in _FIELDS if k not in doc]
    unknown = [k for k in doc if k not in _FIELDS]
    if missing or unknown:
        raise fail(source, f"{'missing' if missing else 'unknown'} field "
                           f"{(missing or unknown)[0]!r} (a plan has {', '.join(_FIELDS)})")
    for name in ("fetches", "feeds", "targets", "arg_names", "retval_names"):
        if not isinstance(doc[name], list) or not all(isinstance(v, str) for v in doc[name]):
            raise fail(f"{source} field {name!r}", "must be a list of strings")
    if not isinstance(doc["placement"], dict) or not all(
            isinstance(v, str) for v in doc["placement"].values()):
        raise fail(f"{source} field 'placement'", "must map node names to device names")
    if type(doc["graph_version"]) is not int or not isinstance(doc["client_device"], str):
        raise fail(source, "'graph_version' is an integer and 'client_device' a string")
    if not isinstance(doc["partitions"], list) or not isinstance(doc["cut_edges"], list):
        raise fail(source, "'partitions' and 'cut_edges' are lists")
