"""Graph files: `engine.save_graph` / `engine.load_graph` / `engine.load_graph_def`. A file is
a JSON document in the schema of engine/graph_json.py, its large constants in a side .npz beside
it (written with np.savez, read member by member with allow_pickle=False after checking each
header against the document), and the collections a MetaGraph keeps, so a loaded graph can
resume training. Files are replaced atomically; a damaged or hostile file raises GraphFileError
(engine/graph_schema.py: an InvalidArgumentError and a ValueError) naming the file, the node and
the field, checked against the file's schema before anything is imported.

save_graph keeps every collection whose items are all variables, tensors, operations or plain
strings and numbers: in a TF1 program that is `variables`, `trainable_variables`,
`local_variables`, `global_step`, `moving_average_variables`, `train_op`, `losses`,
`regularization_losses`, `summaries` and `update_ops`. Other collections (Python objects such as
queue runners or hooks) are left out with a logged warning, as TF's export_meta_graph does.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import stat
import threading
import zipfile
from pathlib import Path

import numpy as np

from engine import errors, graph_schema
from engine.graph import Graph, Operation, Tensor
from engine.graph_def import GraphDef, graph_def_from_document, import_graph_def
from engine.graph_json import ArrayStore, document_to_json
from engine.graph_schema import decode_utf8, document_field, fail, kind_of, limit_error, short
from engine.ops.variables import Variable

__all__ = ["load_graph", "load_graph_def", "save_graph"]

logger = logging.getLogger("engine")


# -- the side .npz ----------------------------------------------------------------------------

class SideArrays:
    """Reads arrays from a side .npz without pickle, checking each one's header (dtype and
    shape) against what the document declares before reading its data."""

    def __init__(self, path: Path, source: str):
        self.path = path
        self.bytes_read = 0
        try:
            self._zip = zipfile.ZipFile(path)
            self._names = set(self._zip.namelist())
        # As in _read: a damaged archive fails in many library-specific ways.
        except Exception as e:  # noqa: BLE001
            raise fail(document_field(source, "arrays"), f"cannot read its side file {path} "
                                                         f"({type(e).__name__}: {e})") from None

    def __call__(self, key, dtype: np.dtype, shape: list, where: str) -> np.ndarray:
        """`where` locates the tensor's "array" field; its size is within the per-tensor
        limits already (graph_json checks them)."""
        member = f"{key}.npy" if isinstance(key, str) else None
        if member not in self._names:
            raise fail(where, f"names {short(key)}, which {self.path.name} does not hold")
        found_shape, _, found_dtype = self._read(member, where, header_only=True)
        if (tuple(found_shape), found_dtype) != (tuple(shape), dtype):
            raise fail(where, f"side array '{key}' in {self.path.name} is {found_dtype} "
                               f"{list(found_shape)}, the document says {dtype} {shape}")
        self.bytes_read += math.prod(shape) * dtype.itemsize
        if self.bytes_read > graph_schema.MAX_SIDE_FILE_BYTES:
            raise limit_error(where, f"the side arrays read so far are {self.bytes_read:,} "
                              "bytes", "MAX_SIDE_FILE_BYTES")
        return self._read(member, where, header_only=False)

    def _read(self, member: str, where: str, header_only: bool):
        try:
            with self._zip.open(member) as f:
                if not header_only:
                    return np.lib.format.read_array(f, allow_pickle=False)
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    return np.lib.format.read_array_header_1_0(f)
                return np.lib.format.read_array_header_2_0(f)
        # A damaged archive fails in library-specific ways (zlib.error, BadZipFile, EOFError,
        # ValueError from numpy's header parser, ...): all of them mean "unreadable".
        except Exception as e:  # noqa: BLE001
            raise fail(where, f"cannot read side array {member!r} from {self.path} "
                               f"({type(e).__name__}: {e})") from None

    def close(self) -> None:
        self._zip.close()


def _write_atomically(path: Path, write) -> None:
    """Writes through a temporary file in the same folder, so a crash never leaves half a
    file under the real name. The temporary is opened like any new file (mode from the umask,
    unlike mkstemp's 0600), so the renamed file is as readable as one written directly."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "xb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


# -- collections --------------------------------------------------------------------------

def encode_collections(graph) -> dict:
    out = {}
    # Graph has no public list of its collection keys (TF's get_all_collection_keys).
    for key in sorted(graph._collections):
        items = graph.get_collection(key)
        encoded = [_encode_item(i) for i in items]
        if any(e is None for e in encoded):
            logger.warning("Issue encountered when serializing %s. Type is unsupported, or the "
                           "types of the items don't match field type in CollectionDef. It is "
                           "left out of the saved graph.", key)
            continue
        out[key] = encoded
    return out


def _encode_item(item):
    if isinstance(item, Variable):
        return {"variable": {"name": item.op.name, "initializer": item.initializer.name,
                             "snapshot": item.value().name,
                             "initial_value": item.initial_value.name,
                             "trainable": bool(item.trainable)}}
    if isinstance(item, Tensor):
        return {"tensor": item.name}
    if isinstance(item, Operation):
        return {"operation": item.name}
    if item is None or isinstance(item, (bool, int, str)) or \
            (isinstance(item, float) and math.isfinite(item)):
        return {"value": item}
    return None


def restore_collections(graph, raw: dict, source: str) -> None:
    """Adds the saved collections (their shape checked by graph_schema.check_collections) to
    `graph`; a variable listed in several collections is one Variable object."""
    variables: dict[str, object] = {}
    for key, items in raw.items():
        if not isinstance(items, list):
            raise fail(document_field(source, "collections", key), f"must be a list, got "
                                                                   f"{kind_of(items)}")
        for i, item in enumerate(items):
            where = document_field(source, "collections", key, i)
            graph.add_to_collection(key, _restore_item(graph, item, where, variables))


def _restore_item(graph, item, where: str, variables: dict):
    if not isinstance(item, dict) or len(item) != 1:
        raise fail(where, "an item is a single-key object (variable, tensor, operation or "
                           "value)")
    (kind, body), = item.items()
    if kind == "value":
        if not (body is None or isinstance(body, (bool, int, float, str))):
            raise fail(where, f"field 'value' must be a JSON scalar, got {kind_of(body)}")
        return body
    if kind in ("tensor", "operation"):
        return _element(graph, body, kind, f"{where}[{kind!r}]")
    if kind != "variable":
        raise fail(where, f"unknown item kind {short(kind)}")
    if not isinstance(body, dict):
        raise fail(f"{where}['variable']", "must be an object")
    name = body.get("name")
    if not isinstance(name, str):
        raise fail(f"{where}['variable']['name']", f"must be a string, got {kind_of(name)}")
    if name not in variables:
        variables[name] = _restore_variable(graph, body, f"{where}['variable']")
    return variables[name]


def _element(graph, name, kind: str, where: str):
    if not isinstance(name, str):
        raise fail(where, f"must be a name, got {kind_of(name)}")
    try:
        if kind == "tensor":
            return graph.get_tensor_by_name(name)
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        raise fail(where, f"{kind} {short(name)} is not in the graph") from None


def _restore_variable(graph, body: dict, where: str):
    """A tf.Variable over existing ops (TF's Variable(variable_def=...)): the VariableV2 node,
    its initializer, its snapshot and initial value, all found by name."""
    var_op = _element(graph, body.get("name"), "operation", f"{where}['name']")
    if not var_op.outputs or not var_op.outputs[0].dtype.is_ref:
        raise fail(f"{where}['name']", f"'{var_op.name}' ({var_op.type}) is not a variable")
    trainable = body.get("trainable", True)
    if not isinstance(trainable, bool):
        raise fail(f"{where}['trainable']", "must be true or false")
    # The fields Variable.__init__ sets (engine/ops/variables.py); a Python constraint or
    # caching device is not part of the saved graph, as in TF's VariableDef.
    v = Variable.__new__(Variable)
    v.__dict__.update(
        _variable=var_op.outputs[0],
        _initializer_op=_element(graph, body.get("initializer"), "operation",
                                 f"{where}['initializer']"),
        _snapshot=_element(graph, body.get("snapshot"), "tensor", f"{where}['snapshot']"),
        _initial_value=_element(graph, body.get("initial_value"), "tensor",
                                f"{where}['initial_value']"),
        _trainable=trainable, _constraint=None, _caching_device=None)
    return v


# -- files ----------------------------------------------------------------------------------

def side_file_for(path: Path) -> Path:
    return path.with_name(path.name + ".npz")


def save_graph(graph, path, strip_prefix: str = "") -> None:
    """Writes `graph` (a Graph, or a GraphDef such as a frozen one) to `path` as JSON: every
    op's name, type, inputs, control inputs, requested device, attrs, output dtypes and shapes
    and creation stack, and a Graph's collections. Constants of more than 1024
    elements go to `<path>.npz` beside it. Both files are replaced atomically."""
    path = Path(path)
    is_graph_def = isinstance(graph, GraphDef)
    graph_def = graph if is_graph_def else graph.as_graph_def()
    collections = {} if is_graph_def else encode_collections(graph)
    arrays = ArrayStore()
    side = side_file_for(path)
    text = document_to_json(graph_def, strip_prefix, arrays, collections, side.name)
    if arrays.arrays:
        _write_atomically(side, lambda f: np.savez(f, **arrays.arrays))
    else:
        with contextlib.suppress(FileNotFoundError):
            side.unlink()
    _write_atomically(path, lambda f: f.write(text.encode("utf-8")))


def load_graph(path):
    """Reads a graph file written by save_graph (or a version 1 graph file) into a new Graph,
    with its collections. The file is checked against its schema first (engine/graph_schema.py);
    a damaged one raises GraphFileError naming the file, node and field."""
    graph_def, collections = _read_document(Path(path))
    graph = Graph()
    import_graph_def(graph_def, name="", graph=graph)
    restore_collections(graph, collections, graph_def.source)
    return graph


def load_graph_def(path):
    """The GraphDef of a graph file (no collections), e.g. a frozen graph to bring into
    another graph with tf.import_graph_def(graph_def, input_map=..., name=...)."""
    return _read_document(Path(path))[0]


def _read_document(path: Path):
    text = _read_text(path)
    opened: list[SideArrays] = []

    def open_arrays(name: str) -> SideArrays:
        opened.append(SideArrays(path.with_name(name), str(path)))
        return opened[-1]
    try:
        return graph_def_from_document(text, str(path), open_arrays)
    finally:
        for side in opened:
            side.close()


def _read_text(path: Path) -> str:
    """The file's text: a regular file (a FIFO would block the read), at most MAX_FILE_BYTES
    (read no further than that), UTF-8."""
    limit = graph_schema.MAX_FILE_BYTES
    try:
        # Non-blocking, so that opening a FIFO returns at once (for a file it changes nothing).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise fail(str(path), "not a regular file")
        with open(fd, "rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}: no such graph file") from None
    except OSError as e:
        raise errors.PermissionDeniedError(None, None, f"{path}: cannot read ({e})") from None
    if len(data) > limit:
        raise limit_error(str(path), f"the file is {max(info.st_size, len(data)):,} bytes",
                          "MAX_FILE_BYTES")
    return decode_utf8(data, str(path))
