"""Graph files: `engine.save_graph` / `engine.load_graph` / `engine.load_graph_def`. A file is
a JSON document in the schema of engine/graph_json.py, its large constants in a side .npz beside
it (written with np.savez, read member by member with allow_pickle=False after checking each
header against the document), and the collections a MetaGraph keeps, so a loaded graph can
resume training. The compact form (compact=True, or a ".graphz" path) is one zip file (LZMA)
of two members, the document (version 3) and every numeric array back to back in "arrays.bin",
each tensor naming its span; by default without creation stacks. Readers tell the two forms
apart by content, and still read version 2 compact files (deflated, one .npy member an
array). Files are replaced atomically; a damaged or hostile file raises GraphFileError
(engine/graph_schema.py: an InvalidArgumentError and a ValueError) naming the file, the node
and the field, checked against the file's schema before anything is imported.

save_graph keeps every collection whose items are all variables, tensors, operations or plain
strings and numbers: in a TF1 program that is `variables`, `trainable_variables`,
`local_variables`, `global_step`, `moving_average_variables`, `train_op`, `losses`,
`regularization_losses`, `summaries` and `update_ops`. Other collections (Python objects such as
queue runners or hooks) are left out with a logged warning, as TF's export_meta_graph does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import re
import stat
import threading
import zipfile
from pathlib import Path

import numpy as np

from engine import errors, graph_json, graph_schema
from engine.graph import Graph, Operation, Tensor
from engine.graph_def import GraphDef, graph_def_from_document, import_graph_def
from engine.graph_json import (
    COMPACT_VERSION,
    IN_CONTAINER,
    ArrayStore,
    BlobStore,
    document_to_json,
)
from engine.graph_schema import (
    INT64_MAX,
    decode_utf8,
    document_field,
    fail,
    kind_of,
    limit_error,
    short,
)
from engine.ops.variables import Variable

__all__ = ["load_graph", "load_graph_def", "save_graph"]

logger = logging.getLogger("engine")

COMPACT_SUFFIX = ".graphz"
# Tensors of at most this many elements stay inline in a compact file's (compressed) document:
# in version 2 a .npy member cost about 200 bytes of zip and npy headers even for a scalar, and
# in version 3 the JSON numbers compress about as well as their raw bytes.
COMPACT_INLINE_VALUES = 16
DOCUMENT_MEMBER = "graph.json"
BLOB_MEMBER = "arrays.bin"
# Chosen by measurement (bench/bench_quantize_costs.py --members): on the digits graphs LZMA
# stores the int8 kernels 5-8% smaller than deflate -9, which puts the calibrated MLP at 0.265x
# of its float file instead of 0.272x. Python's zipfile and 7-Zip read it; Info-ZIP unzip 6.0
# as Debian builds it does not (method 14). LZMA writes about 15x slower than deflate -9 (under
# 1 MB/s against 10 MB/s on 16 MB of float32 noise here) for 0.5% smaller output on such
# data, so a member above COMPACT_LZMA_MAX_BYTES is deflated instead; readers take either.
COMPACT_METHOD = zipfile.ZIP_LZMA
COMPACT_LZMA_MAX_BYTES = 16 << 20
_READABLE_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_LZMA)
# Members are read in steps of at most this many bytes: zipfile inflates an LZMA member without
# an output bound, so one step (at most 4 KiB of compressed input) yields at most about 30 MB
# (LZMA's best ratio, about 7,000:1, on zeros) however the member's sizes lie.
_READ_STEP = 4096
# The numpy kinds an "arrays.bin" span may hold: bool, integers, floats, complex (raw bytes).
_BLOB_KINDS = "biufc"
# A zip archive's first bytes: a local file header, or the end record of an empty archive.
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_MEMBER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
# Fixed member dates, so that saving the same graph twice gives the same bytes.
_MEMBER_DATE = (1980, 1, 1, 0, 0, 0)


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

    def _check_member(self, member: str, dtype: np.dtype, shape: list, where: str) -> None:
        """A compact file caps each member's size here; a side .npz has no extra checks."""

    def __call__(self, key, dtype: np.dtype, shape: list, where: str) -> np.ndarray:
        """`where` locates the tensor's "array" field; its size is within the per-tensor
        limits already (graph_json checks them)."""
        member = f"{key}.npy" if isinstance(key, str) else None
        if member not in self._names:
            raise fail(where, f"names {short(key)}, which {self.path.name} does not hold")
        self._check_member(member, dtype, shape, where)
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
            with self._open(member) as f:
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

    def _open(self, member: str):
        return self._zip.open(member)

    def close(self) -> None:
        self._zip.close()


class _Stepped:
    """A zip member's reader whose every read decompresses at most _READ_STEP bytes at a time
    (see _READ_STEP), for numpy's .npy parser and the document."""

    def __init__(self, f):
        self._f = f

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            raise ValueError("a stepped member reader reads a given number of bytes")
        parts, left = [], n
        while left > 0:
            chunk = self._f.read(min(left, _READ_STEP))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._f.close()


class CompactFile(SideArrays):
    """A compact graph file open for reading: every member checked (plain name, stored,
    deflated or LZMA, unencrypted, given once, at most its cap uncompressed) before any is read,
    every member read in bounded steps, the document no further than MAX_FILE_BYTES and each
    array no further than its declared bytes; `check_all_named` then refuses members (and, in
    version 3, bytes of "arrays.bin") the document does not name."""

    def __init__(self, f, path: Path):
        self.path = path
        self.bytes_read = 0
        self._used: set[str] = set()
        self._blob: BlobArrays | None = None
        try:
            self._zip = zipfile.ZipFile(f)
            infos = self._zip.infolist()
        # As in SideArrays._read: a damaged archive fails in many library-specific ways.
        except Exception as e:  # noqa: BLE001
            raise fail(str(path), f"byte 0: starts like a zip archive (a compact graph file) "
                                  f"but is not a readable one ({type(e).__name__}: {e})") from None
        self._infos = {}
        for info in infos:
            self._check_info(info)
        self._names = set(self._infos)

    def _check_info(self, info: zipfile.ZipInfo) -> None:
        name, where = info.filename, f"{self.path}: member {short(info.filename)}"
        if len(self._infos) >= graph_schema.MAX_CONTAINER_MEMBERS:
            raise limit_error(str(self.path), f"the archive has more than "
                              f"{graph_schema.MAX_CONTAINER_MEMBERS:,} members",
                              "MAX_CONTAINER_MEMBERS")
        if not _MEMBER_NAME.fullmatch(name) or ".." in name:
            raise fail(where, "is not a plain member name (no folders, '..' or absolute paths: "
                              f"a compact graph file holds {DOCUMENT_MEMBER}, {BLOB_MEMBER} or "
                              "<key>.npy)")
        if name not in (DOCUMENT_MEMBER, BLOB_MEMBER) and not name.endswith(".npy"):
            raise fail(where, f"is neither {DOCUMENT_MEMBER}, {BLOB_MEMBER} nor a <key>.npy "
                              "array")
        if name in self._infos:
            raise fail(where, "is given twice")
        if info.flag_bits & 0x1:
            raise fail(where, "is encrypted")
        if info.compress_type not in _READABLE_METHODS:
            raise fail(where, f"uses compression method {info.compress_type} (stored, deflated "
                              "or LZMA only)")
        total = sum(i.file_size for i in self._infos.values()) + info.file_size
        if total > _archive_cap():
            raise _archive_limit(self.path, f"its members are {total:,} bytes uncompressed")
        self._infos[name] = info

    def document(self) -> str:
        info = self._infos.get(DOCUMENT_MEMBER)
        if info is None:
            raise fail(str(self.path), f"a compact graph file holds its document as member "
                                       f"{DOCUMENT_MEMBER!r}; this one has none")
        limit = graph_schema.MAX_FILE_BYTES
        where = f"{self.path}: member {DOCUMENT_MEMBER!r}"
        if info.file_size > limit:
            raise limit_error(where, f"it is {info.file_size:,} bytes", "MAX_FILE_BYTES")
        try:
            with self._open(info) as f:
                data = f.read(limit + 1)
        except Exception as e:  # noqa: BLE001
            raise fail(where, f"cannot be read ({type(e).__name__}: {e})") from None
        if len(data) > limit:
            raise limit_error(where, f"it is over {limit:,} bytes", "MAX_FILE_BYTES")
        return decode_utf8(data, str(self.path))

    def _open(self, member):
        return _Stepped(self._zip.open(member))

    def arrays_for(self, version: int):
        """The reader of the document's arrays: version 3 spans of arrays.bin, else the .npy
        members."""
        if version < COMPACT_VERSION:
            return self
        if self._blob is None:
            self._blob = BlobArrays(self)
        return self._blob

    def blob_stream(self):
        """arrays.bin, opened raw: BlobArrays reads it in steps of at most _READ_STEP."""
        return self._zip.open(self._infos[BLOB_MEMBER])

    def _check_member(self, member: str, dtype: np.dtype, shape: list, where: str) -> None:
        cap = math.prod(shape) * dtype.itemsize + graph_schema.MAX_NPY_HEADER_BYTES
        size = self._infos[member].file_size
        if size > cap:
            raise limit_error(where, f"member {member!r} of {self.path.name} is {size:,} bytes "
                              f"uncompressed, more than the {dtype} {shape} it declares needs",
                              "MAX_NPY_HEADER_BYTES")
        self._used.add(member)

    def check_all_named(self, source: str) -> None:
        if self._blob is not None:
            self._blob.check_tiled(source)
            self._used.add(BLOB_MEMBER)
        extra = sorted(self._names - self._used - {DOCUMENT_MEMBER})
        if extra:
            raise fail(document_field(source, "arrays"), f"member {short(extra[0])} of "
                       f"{self.path.name} is not named by any tensor of the document")


class BlobArrays:
    """The arrays of a version 3 compact file: each tensor's "array" is [offset, byte length]
    of member arrays.bin, little-endian, its length that of the declared dtype and shape. The
    member is read forward in bounded steps, never past the furthest span asked for, so a
    member larger than its spans (a decompression bomb) is refused by `check_tiled` (its spans
    must tile it: no overlaps, no bytes no tensor names) before it is read past them."""

    def __init__(self, container: CompactFile):
        self.container = container
        self.path = container.path
        self.info = container._infos.get(BLOB_MEMBER)
        self._stream = None
        self._data = bytearray()
        self._spans: list[tuple[int, int, str]] = []

    def __call__(self, key, dtype: np.dtype, shape: list, where: str) -> np.ndarray:
        offset, length = self._span(key, where)
        if dtype.kind not in _BLOB_KINDS:
            raise fail(where, f"dtype {dtype} cannot be read from raw bytes (bool, integer, "
                              "float and complex only)")
        need = math.prod(shape) * dtype.itemsize
        if length != need:
            raise fail(where, f"span [{offset}, {length}] is {length:,} bytes, but {dtype} "
                              f"{shape} takes {need:,}")
        if self.info is None:
            raise fail(where, f"names a span of member {BLOB_MEMBER!r}, which "
                              f"{self.path.name} does not hold")
        end = offset + length
        if end > self.info.file_size:
            raise fail(where, f"span [{offset}, {length}] ends at byte {end:,}, past the end "
                              f"of member {BLOB_MEMBER!r} ({self.info.file_size:,} bytes)")
        self._spans.append((offset, end, where))
        self._read_to(end, where)
        raw = bytes(memoryview(self._data)[offset:end])
        return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)

    def _span(self, key, where: str) -> tuple[int, int]:
        if not (isinstance(key, list) and len(key) == 2 and all(
                type(v) is int and 0 <= v <= INT64_MAX for v in key)):
            raise fail(where, f"a version 3 compact file names each array as [offset, byte "
                              f"length] in member {BLOB_MEMBER!r}, got {short(key)}")
        return key[0], key[1]

    def _read_to(self, end: int, where: str) -> None:
        """Reads arrays.bin up to byte `end`, at most _READ_STEP bytes a step."""
        try:
            if self._stream is None:
                self._stream = self.container.blob_stream()
            while len(self._data) < end:
                chunk = self._stream.read(min(_READ_STEP, end - len(self._data)))
                if not chunk:
                    raise fail(where, f"member {BLOB_MEMBER!r} of {self.path.name} ends at "
                                      f"byte {len(self._data):,}, before this span's end "
                                      f"(byte {end:,}): the file is truncated")
                self._data += chunk
            if end == self.info.file_size and self._stream.read(1):
                raise fail(where, f"member {BLOB_MEMBER!r} of {self.path.name} holds more "
                                  f"than the {end:,} bytes its header says")
        except errors.InvalidArgumentError:
            raise
        # As in SideArrays._read: a damaged member fails in library-specific ways (EOFError,
        # zlib.error, lzma.LZMAError, BadZipFile for a CRC mismatch, ...).
        except Exception as e:  # noqa: BLE001
            raise fail(where, f"cannot read member {BLOB_MEMBER!r} of {self.path} "
                              f"({type(e).__name__}: {e})") from None

    def check_tiled(self, source: str) -> None:
        """The spans, in offset order, cover arrays.bin exactly once."""
        prefix = f"{source}: "
        covered, before = 0, None
        for offset, end, where in sorted(self._spans):
            if offset < covered:
                other = before[len(prefix):] if before.startswith(prefix) else before
                raise fail(where, f"span [{offset}, {end - offset}] overlaps bytes "
                                  f"{offset:,}-{covered:,} of {BLOB_MEMBER!r}, named by "
                                  f"{other}")
            if offset > covered:
                self._unnamed(source, covered, offset)
            covered, before = end, where
        if self.info is not None and covered < self.info.file_size:
            self._unnamed(source, covered, self.info.file_size)

    def _unnamed(self, source: str, start: int, end: int) -> None:
        raise fail(document_field(source, "arrays"), f"bytes {start:,} to {end:,} of member "
                   f"{BLOB_MEMBER!r} of {self.path.name} are not named by any tensor")


def _archive_cap() -> int:
    return graph_schema.MAX_FILE_BYTES + graph_schema.MAX_SIDE_FILE_BYTES


def _archive_limit(path: Path, what: str) -> errors.InvalidArgumentError:
    return fail(str(path), f"{what}, over the limit of {_archive_cap():,} for a compact file "
                           "(engine.graph_schema.MAX_FILE_BYTES + MAX_SIDE_FILE_BYTES; raise "
                           "them to load this file)")


def _write_compact(f, text: str, arrays: BlobStore) -> None:
    with zipfile.ZipFile(f, "w") as archive:
        _write_member(archive, DOCUMENT_MEMBER, text.encode("utf-8"))
        if arrays.arrays:
            _write_member(archive, BLOB_MEMBER, arrays.blob())


def _write_member(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_MEMBER_DATE)
    info.compress_type = COMPACT_METHOD if len(data) <= COMPACT_LZMA_MAX_BYTES else \
        zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    archive.writestr(info, data, compresslevel=9)


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


def is_compact_path(path) -> bool:
    """Whether save_graph writes `path` in the compact form when not told (a .graphz name)."""
    return Path(path).name.endswith(COMPACT_SUFFIX)


def save_graph(graph, path, strip_prefix: str = "", compact: bool | None = None,
               stacks: bool | None = None) -> None:
    """Writes `graph` (a Graph, or a GraphDef such as a frozen one) to `path`: every op's name,
    type, inputs, control inputs, requested device, attrs, output dtypes and shapes and
    creation stack, and a Graph's collections. As JSON (the default) constants of more than
    1024 elements go to `<path>.npz` beside it; `compact=True` (the default for a ".graphz"
    path) writes one zip of two members (LZMA; deflate for one above 16 MiB): the document and
    every numeric constant of more than 16 elements back to back in "arrays.bin". `stacks`:
    keep creation stacks (default: in JSON yes, in the compact form no, as in TF's GraphDef,
    since they cost as much as a small model's weights). Files are replaced atomically."""
    path = Path(path)
    compact = is_compact_path(path) if compact is None else bool(compact)
    stacks = not compact if stacks is None else bool(stacks)
    is_graph_def = isinstance(graph, GraphDef)
    graph_def = graph if is_graph_def else graph.as_graph_def()
    if not stacks:
        graph_def = without_stacks(graph_def)
    collections = {} if is_graph_def else encode_collections(graph)
    arrays = BlobStore(COMPACT_INLINE_VALUES) if compact else \
        ArrayStore(graph_json.MAX_INLINE_VALUES)
    side = side_file_for(path)
    text = document_to_json(graph_def, strip_prefix, arrays, collections,
                            IN_CONTAINER if compact else side.name,
                            COMPACT_VERSION if compact else graph_json.JSON_VERSION)
    if arrays.arrays and not compact:
        _write_atomically(side, lambda f: np.savez(f, **arrays.arrays))
    else:
        with contextlib.suppress(FileNotFoundError):
            side.unlink()
    if compact:
        _write_atomically(path, lambda f: _write_compact(f, text, arrays))
    else:
        _write_atomically(path, lambda f: f.write(text.encode("utf-8")))


def without_stacks(graph_def: GraphDef) -> GraphDef:
    """The graph with every node's creation stack dropped (what it does, not where it was
    written)."""
    nodes = [dataclasses.replace(n, meta={k: v for k, v in n.meta.items() if k != "stack"})
             for n in graph_def.node]
    return GraphDef(nodes, version=graph_def.version, source=graph_def.source)


def graph_file_bytes(path) -> int:
    """The bytes of a graph file as save_graph wrote it: a compact file, or the JSON and the
    side .npz it names (if any)."""
    path = Path(path)
    side = side_file_for(path)
    size = path.stat().st_size
    if not _is_zip(path) and side.exists():
        size += side.stat().st_size
    return size


def file_format(path) -> str:
    """"compact" or "json": the form of an existing graph file, by content."""
    return "compact" if _is_zip(Path(path)) else "json"


def form_description(form: str) -> dict:
    """What a file form is, for reports that give file bytes: "json" or "compact"."""
    if form == "compact":
        return {"document_version": COMPACT_VERSION, "container": f"zip of {DOCUMENT_MEMBER} "
                f"and {BLOB_MEMBER}", "compression": "lzma"}
    return {"document_version": graph_json.JSON_VERSION, "container": "JSON text and its "
            "side .npz (np.savez, uncompressed)", "compression": "none"}


def _is_zip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) in _ZIP_MAGIC


def load_graph(path):
    """Reads a graph file written by save_graph (JSON or compact, told apart by content, or a
    version 1 graph file) into a new Graph, with its collections. The file is checked against
    its schema first (engine/graph_schema.py); a damaged one raises GraphFileError naming the
    file, node and field."""
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
    with _open_regular(path) as f:
        if f.read(4) in _ZIP_MAGIC:
            f.seek(0)
            return _read_compact(f, path)
        f.seek(0)
        text = _read_text(f, path)
    opened: list[SideArrays] = []

    def open_arrays(name: str, version: int) -> SideArrays:
        if name == IN_CONTAINER:
            raise fail(document_field(str(path), "arrays"), f"{name!r} names the members of a "
                       "compact graph file, but this is a plain JSON file")
        opened.append(SideArrays(path.with_name(name), str(path)))
        return opened[-1]
    try:
        return graph_def_from_document(text, str(path), open_arrays)
    finally:
        for side in opened:
            side.close()


def _read_compact(f, path: Path):
    size = os.fstat(f.fileno()).st_size
    if size > _archive_cap():
        raise _archive_limit(path, f"the file is {size:,} bytes")
    container = CompactFile(f, path)
    try:
        text = container.document()

        def open_arrays(name: str, version: int):
            if name != IN_CONTAINER:
                raise fail(document_field(str(path), "arrays"), f"names side file "
                           f"{short(name)}; a compact graph file keeps its arrays inside it "
                           f"(\"arrays\": {IN_CONTAINER!r})")
            return container.arrays_for(version)
        result = graph_def_from_document(text, str(path), open_arrays)
        container.check_all_named(str(path))
        return result
    finally:
        container.close()


@contextlib.contextmanager
def _open_regular(path: Path):
    """The file, opened for reading: a regular file (a FIFO would block the read)."""
    try:
        # Non-blocking, so that opening a FIFO returns at once (for a file it changes nothing).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}: no such graph file") from None
    except OSError as e:
        raise errors.PermissionDeniedError(None, None, f"{path}: cannot read ({e})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise fail(str(path), "not a regular file")
    with open(fd, "rb") as f:
        yield f


def _read_text(f, path: Path) -> str:
    """The file's text: at most MAX_FILE_BYTES (read no further than that), UTF-8."""
    limit = graph_schema.MAX_FILE_BYTES
    try:
        data = f.read(limit + 1)
    except OSError as e:
        raise errors.PermissionDeniedError(None, None, f"{path}: cannot read ({e})") from None
    if len(data) > limit:
        size = max(os.fstat(f.fileno()).st_size, len(data))
        raise limit_error(str(path), f"the file is {size:,} bytes", "MAX_FILE_BYTES")
    return decode_utf8(data, str(path))
