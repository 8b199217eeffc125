"""tf.graph_util: extract_sub_graph and convert_variables_to_constants (freezing a trained
graph: the variables an output needs become Const nodes holding their current values, so the
graph runs by tensor names in a fresh session with no checkpoint)."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from engine.graph_def import GraphDef, NodeDef, parse_input
from engine.shapes import TensorShape

__all__ = ["convert_variables_to_constants", "extract_sub_graph"]

logger = logging.getLogger("engine")
_VARIABLE_OPS = ("Variable", "VariableV2")


def extract_sub_graph(graph_def: GraphDef, dest_nodes) -> GraphDef:
    """The nodes `dest_nodes` need (through data and control inputs), in their original
    order, as copies."""
    if not isinstance(graph_def, GraphDef):
        raise TypeError("graph_def must be a GraphDef proto.")
    if isinstance(dest_nodes, str):
        raise TypeError("dest_nodes must be a list.")
    by_name = {n.name: n for n in graph_def.node}
    for d in dest_nodes:
        if d not in by_name:
            raise ValueError(f"{d} is not in graph")
    keep, stack = set(), list(dest_nodes)
    while stack:
        name = stack.pop()
        if name in keep:
            continue
        keep.add(name)
        stack.extend(parse_input(i)[0] for i in by_name[name].input)
    return GraphDef([_copy(n) for n in graph_def.node if n.name in keep],
                    version=graph_def.version, source=graph_def.source)


def _copy(n: NodeDef) -> NodeDef:
    return dataclasses.replace(n, input=list(n.input), attr=dict(n.attr), meta=dict(n.meta))


def convert_variables_to_constants(sess, input_graph_def: GraphDef, output_node_names,
                                   variable_names_whitelist=None,
                                   variable_names_blacklist=None) -> GraphDef:
    """The subgraph `output_node_names` need, with each variable in it (kept by the whitelist,
    not dropped by the blacklist) replaced by a Const of its value in `sess`."""
    inference = extract_sub_graph(input_graph_def, output_node_names)
    names = [n.name for n in inference.node if n.op in _VARIABLE_OPS
             and (variable_names_whitelist is None or n.name in variable_names_whitelist)
             and (variable_names_blacklist is None or n.name not in variable_names_blacklist)]
    values = sess.run([f"{name}:0" for name in names]) if names else []
    found = dict(zip(names, values))
    logger.info("Froze %d variables.", len(found))
    nodes = [_constant(n, found[n.name]) if n.name in found else n for n in inference.node]
    logger.info("Converted %d variables to const ops.", len(found))
    return GraphDef(nodes, version=inference.version, source=inference.source)


def _constant(variable: NodeDef, value) -> NodeDef:
    """TF's frozen variable: a Const with the variable's name, dtype and value (its device and
    colocation are dropped, as TF does; its creation site is kept)."""
    dtype = variable.attr["dtype"].base_dtype
    value = np.asarray(value, dtype=dtype.numpy_dtype)
    return NodeDef(name=variable.name, op="Const", input=[], device="",
                   attr={"value": value, "dtype": dtype}, output_dtypes=(dtype,),
                   output_shapes=(TensorShape(list(value.shape)),), meta=dict(variable.meta))
