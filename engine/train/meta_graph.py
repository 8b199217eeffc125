"""Meta graph files (`<checkpoint>.meta`): the graph as the engine's JSON GraphDef plus the
Saver's def, written beside each checkpoint; tf.train.export_meta_graph / import_meta_graph,
and the graph file CheckpointSaverHook writes where TF writes graph.pbtxt."""

from __future__ import annotations

import json
import os
from dataclasses import asdict

from engine import errors
from engine.graph import Graph, get_default_graph
from engine.graph_def import JSON_FORMAT as GRAPH_JSON_FORMAT
from engine.graph_def import JSON_VERSION as GRAPH_JSON_VERSION
from engine.graph_def import node_to_json
from engine.train.saver import Saver, SaverDef

__all__ = [
    "export_meta_graph",
    "import_meta_graph",
]

META_FORMAT = "engine.meta_graph"
META_VERSION = 1


def export_meta_graph(filename: str | None = None, saver_def: SaverDef | None = None,
                      graph: Graph | None = None, clear_devices: bool = False,
                      **unused) -> dict:
    """The graph (engine JSON GraphDef) and the saver's def, written to `filename` as JSON."""
    graph = graph or get_default_graph()
    doc = {"format": META_FORMAT, "version": META_VERSION, "graph_def": _graph_doc(graph),
           "saver_def": asdict(saver_def) if saver_def is not None else None,
           "collections": {"variables": [v.op.name for v in graph.get_collection("variables")
                                         if hasattr(v, "op")]}}
    if clear_devices:
        for node in doc["graph_def"]["node"]:
            node["device"] = ""
    if filename:
        with open(filename, "w", encoding="utf-8") as f:
            json.dump(doc, f, separators=(",", ":"))
    return doc


def _graph_doc(graph: Graph) -> dict:
    """The graph as the engine's JSON GraphDef document (engine.graph_def_from_json reads it)."""
    graph_def = graph.as_graph_def()
    return {"format": GRAPH_JSON_FORMAT, "version": GRAPH_JSON_VERSION,
            "graph_version": graph_def.version,
            "node": [_jsonable(node_to_json(n)) for n in graph_def.node]}


def write_graph_json(graph: Graph, path: str) -> None:
    """What CheckpointSaverHook writes where TF writes graph.pbtxt: the JSON GraphDef."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(_graph_doc(graph), f, separators=(",", ":"))


def _jsonable(node: dict) -> dict:
    """The engine's graph JSON holds no complex numbers: such constants keep their dtype and
    shape but not their values (importing them then says so, as for oversized constants)."""
    for attr in node["attr"].values():
        tensor = attr.get("tensor") if isinstance(attr, dict) else None
        if tensor is not None and tensor["dtype"].startswith("complex"):
            tensor["values"] = None
    return node


def import_meta_graph(meta_graph_or_file, clear_devices: bool = False, import_scope=None,
                      **unused) -> Saver | None:
    """Rebuilds the graph of a `.meta` file in the default graph (ops only: Python Variable
    objects are not recreated) and returns a Saver over its restore ops."""
    from engine.graph_def import graph_def_from_json, import_graph_def
    doc = meta_graph_or_file
    if not isinstance(doc, dict):
        path = os.fspath(meta_graph_or_file)
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except FileNotFoundError:
            raise OSError(f"File {path} does not exist.") from None
        except (UnicodeDecodeError, ValueError) as e:
            raise errors.DataLossError(None, None, f"Unable to read meta graph file ({path}): "
                                                   f"{e}") from None
    if doc.get("format") != META_FORMAT or doc.get("version") != META_VERSION:
        raise ValueError(f"not an {META_FORMAT} document of version {META_VERSION}")
    graph_def = graph_def_from_json(json.dumps(doc["graph_def"]))
    if clear_devices:
        for node in graph_def.node:
            node.device = ""
    import_graph_def(graph_def, name=import_scope or "")
    if doc.get("saver_def") is None:
        return None
    return Saver(saver_def=SaverDef(**doc["saver_def"]), name=import_scope)
