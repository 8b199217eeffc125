"""Writes version 2 compact graph files (deflated zip: graph.json plus one .npy member an array),
the form save_graph wrote before version 3, so tests can pin that this build still reads them."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np

from engine import graph_io, graph_json
from engine.graph_def import GraphDef


def members_of(path: Path) -> dict[str, bytes]:
    """Every member of a zip file, by name."""
    with zipfile.ZipFile(path) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def save_v2(graph, path: Path, stacks: bool = False) -> None:
    """`graph` (a Graph or GraphDef) as the version 2 compact writer laid it out."""
    is_graph_def = isinstance(graph, GraphDef)
    graph_def = graph if is_graph_def else graph.as_graph_def()
    if not stacks:
        graph_def = graph_io.without_stacks(graph_def)
    collections = {} if is_graph_def else graph_io.encode_collections(graph)
    store = graph_json.ArrayStore(graph_io.COMPACT_INLINE_VALUES)
    text = graph_json.document_to_json(graph_def, "", store, collections,
                                       graph_json.IN_CONTAINER, version=2)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("graph.json", text.encode("utf-8"))
        for key, value in store.arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, value, allow_pickle=False)
            archive.writestr(f"{key}.npy", buffer.getvalue())


def assert_same_graph_def(a: GraphDef, b: GraphDef) -> None:
    """Node for node the same fields; tensors equal in dtype, shape and every value (NaNs at
    the same places)."""
    assert [n.name for n in a.node] == [n.name for n in b.node]
    assert a.version == b.version
    for x, y in zip(a.node, b.node):
        assert (x.op, list(x.input), x.device, x.output_dtypes, _dims(x.output_shapes),
                _stack(x)) == (y.op, list(y.input), y.device, y.output_dtypes,
                                  _dims(y.output_shapes), _stack(y)), x.name
        assert set(x.attr) == set(y.attr), x.name
        for key, value in x.attr.items():
            _assert_same_attr(value, y.attr[key], f"{x.name} attr {key}")


def _stack(node) -> tuple:
    # A read node's meta holds "stack", () when the file has none; without_stacks drops the key.
    return tuple(node.meta.get("stack", ()))


def _dims(shapes) -> list:
    # TensorShape's == follows TF (an unknown dim equals nothing): compare the dims as data.
    return [None if s.dims is None else list(s.dims) for s in shapes]


def _assert_same_attr(x, y, where: str) -> None:
    if hasattr(x, "dims") and not isinstance(x, np.ndarray):
        assert _dims([x]) == _dims([y]), where
    elif isinstance(x, np.ndarray):
        assert isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape, where
        if x.dtype.kind == "O":
            assert x.tolist() == y.tolist(), where
        else:
            np.testing.assert_array_equal(x, y, err_msg=where)
    elif isinstance(x, (list, tuple)):
        assert type(x) is type(y) and len(x) == len(y), where
        for u, v in zip(x, y):
            _assert_same_attr(u, v, where)
    elif isinstance(x, float) and x != x:
        assert isinstance(y, float) and y != y, where
    else:
        assert type(x) is type(y) and x == y, where
