"""The JSON form of a graph: encoding attrs, tensors, nodes and whole documents, and decoding
them with every field checked against the schema in engine/graph_schema.py, so a damaged or
hostile document raises GraphFileError naming the file, the node and the field, never anything
else. Files, side arrays and collections are engine/graph_io.py's."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re

import numpy as np

from engine import dtypes, graph_schema
from engine.graph_schema import (
    INT64_MAX,
    INT64_MIN,
    GraphFileError,
    document_field,
    fail,
    field_at,
    kind_of,
    limit_error,
    node_at,
    short,
)
from engine.shapes import TensorShape

JSON_FORMAT = "engine.graphdef"
# Version 2: the JSON + side .npz form (still written, so older builds read it); version 3:
# the compact file's document, whose arrays are spans of one binary member (engine/graph_io.py).
JSON_VERSION = 2
COMPACT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
# Tensors above this many elements go to the side .npz when saving a file (and are elided,
# as "values": null, from the JSON forms that have no side file, such as the run store's).
MAX_INLINE_VALUES = 1 << 10
MAX_ELIDED_INLINE_VALUES = 1 << 16
# The "arrays" field of a document inside a compact graph file (engine/graph_io.py): its arrays
# are in the same archive (version 2: .npy members; version 3: spans of one member), not a side
# file.
IN_CONTAINER = "."
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_NODE_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*")
_INPUT = re.compile(r"\^?[A-Za-z0-9.][A-Za-z0-9_.\-/>]*(:[0-9]+)?")
# A partition's runtime nodes (_arg_x_0_0, _retval_y_0_0) start with "_", as TF's do.
_RUNTIME_NODE_NAME = re.compile(r"[A-Za-z0-9._][A-Za-z0-9_.\-/>]*")
_RUNTIME_INPUT = re.compile(r"\^?[A-Za-z0-9._][A-Za-z0-9_.\-/>]*(:[0-9]+)?")
_ATTR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SIDE_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\.npz")
_PLAIN_ATTRS = (bool, str, float, type(None))
DOCUMENT_FIELDS = ("format", "version", "graph_version", "arrays", "node", "collections")
NODE_FIELDS = ("name", "op", "input", "device", "attr", "output_dtypes", "output_shapes",
               "stack")


# -- attrs: encoding ------------------------------------------------------------------------

class ArrayStore:
    """Collects the arrays that go to the side .npz (or, inline_limit 0, every numeric array:
    the compact file's .npy members) while a document is written."""

    def __init__(self, inline_limit: int = MAX_INLINE_VALUES):
        self.inline_limit = inline_limit
        self.arrays: dict[str, np.ndarray] = {}

    def add(self, value: np.ndarray) -> str:
        key = f"t{len(self.arrays)}"
        # Not np.ascontiguousarray, which makes a 0-d array 1-d.
        self.arrays[key] = np.asarray(value, order="C")
        return key


class BlobStore(ArrayStore):
    """Collects every numeric array above `inline_limit` elements back to back in one byte
    string (each little-endian, C order, unpadded: the reader copies each span out, so nothing
    gains from alignment); a tensor names its span as [offset, byte length]."""

    def __init__(self, inline_limit: int):
        super().__init__(inline_limit)
        self._chunks: list[bytes] = []
        self._size = 0

    def add(self, value: np.ndarray) -> list[int]:
        value = np.asarray(value, order="C")
        data = value.astype(value.dtype.newbyteorder("<"), copy=False).tobytes()
        span = [self._size, len(data)]
        self.arrays[f"t{len(self.arrays)}"] = value
        self._chunks.append(data)
        self._size += len(data)
        return span

    def blob(self) -> bytes:
        return b"".join(self._chunks)


def encode_attr(value, arrays: ArrayStore | None, where: str):
    if isinstance(value, dtypes.DType):
        return {"dtype": value.name}
    if isinstance(value, TensorShape):
        return {"shape": None if value.dims is None else list(value.dims)}
    if isinstance(value, np.ndarray):
        return {"tensor": _encode_tensor(value, arrays)}
    if isinstance(value, (list, tuple)):
        return [encode_attr(v, arrays, where) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": "NaN" if math.isnan(value) else
                "Infinity" if value > 0 else "-Infinity"}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"{where}: cannot save an attr of type {type(value).__name__}; attrs are "
                     "numbers, strings, dtypes, shapes, tensors or lists of them")


def _encode_tensor(value: np.ndarray, arrays: ArrayStore | None) -> dict:
    shape = list(value.shape)
    if value.dtype.kind in "SUO":
        # Strings stay inline (np.savez could keep them only as pickled object arrays).
        return {"dtype": "string", "shape": shape,
                "values": [_encode_bytes(_as_bytes(v)) for v in value.reshape(-1)]}
    dtype = dtypes.as_dtype(value.dtype).name
    if arrays is not None and value.size > arrays.inline_limit:
        return {"dtype": dtype, "shape": shape, "array": arrays.add(value)}
    if arrays is None and value.size > MAX_ELIDED_INLINE_VALUES:
        return {"dtype": dtype, "shape": shape, "values": None}
    flat = value.reshape(-1)
    if value.dtype.kind == "c":
        flat = np.stack([flat.real, flat.imag], axis=-1).reshape(-1)
    values = flat.tolist()
    if flat.dtype.kind == "f" and not np.isfinite(flat).all():
        values = [v if math.isfinite(v) else encode_attr(v, None, "")["float"] for v in values]
    return {"dtype": dtype, "shape": shape, "values": values}


def _as_bytes(v) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode("utf-8")


def _encode_bytes(value: bytes):
    """A string element: its text when it is UTF-8, else {"base64": ...}."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


# -- attrs: decoding ------------------------------------------------------------------------

def decode_attr(raw, where: str, arrays, nested: bool = False):
    """`where` locates the attr ("g.json: node 3 ('x'), field 'attr'['value']");
    `arrays(key, dtype, shape, where)` returns a side array (None: no side file)."""
    if raw is None or isinstance(raw, (bool, str, float)):
        return raw
    if isinstance(raw, int):
        return _checked_int(raw, where)
    if isinstance(raw, list):
        if nested:
            raise fail(where, "attr lists hold values, not further lists")
        return [decode_attr(v, f"{where}[{i}]", arrays, nested=True) for i, v in enumerate(raw)]
    if not isinstance(raw, dict) or len(raw) != 1:
        raise fail(where, f"an encoded attr is a single-key object (dtype, shape, float or "
                          f"tensor), got {_kind_with_keys(raw)}")
    (kind, body), = raw.items()
    if kind == "dtype":
        dtype = decode_dtype(body, f"{where}['dtype']")
        if dtype.is_ref:
            raise fail(f"{where}['dtype']", f"AttrValue must not have reference type value of "
                                            f"{dtype.name} (as in TF)")
        return dtype
    if kind == "shape":
        return decode_shape(body, f"{where}['shape']")
    if kind == "float":
        if not isinstance(body, str) or body not in _NON_FINITE:
            raise fail(f"{where}['float']", f"must be one of {sorted(_NON_FINITE)}, got "
                                            f"{short(body)}")
        return _NON_FINITE[body]
    if kind == "tensor":
        return _decode_tensor(body, f"{where}['tensor']", arrays)
    raise fail(where, f"unknown attr encoding {short(kind)} (expected dtype, shape, float or "
                      "tensor)")


def _kind_with_keys(raw) -> str:
    if isinstance(raw, dict):
        return f"an object with keys {short(sorted(raw))}"
    return kind_of(raw)


def _checked_int(value: int, where: str) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise fail(where, f"{short(value)} is outside the int64 range")
    return value


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= INT64_MAX


def decode_dtype(raw, where: str) -> dtypes.DType:
    if not isinstance(raw, str):
        raise fail(where, f"a dtype is a name such as \"float32\", got {kind_of(raw)}")
    try:
        return dtypes.as_dtype(raw)
    except (TypeError, ValueError, KeyError):
        raise fail(where, f"unknown dtype {short(raw)}") from None


def decode_shape(raw, where: str) -> TensorShape:
    """null (unknown rank) or a list of dims: ints >= 0, and -1 or null for unknown ones."""
    if raw is None:
        return TensorShape(None)
    if not isinstance(raw, list):
        raise fail(where, f"a shape is null or a list of dims, got {kind_of(raw)}")
    if len(raw) > graph_schema.MAX_RANK:
        raise fail(where, f"a shape has at most {graph_schema.MAX_RANK} dims (TF's limit), this "
                          f"one has {len(raw)}")
    for i, d in enumerate(raw):
        if not (d is None or d == -1 and not isinstance(d, bool) or _is_count(d)):
            raise fail(f"{where}[{i}]", f"a dim is an int >= 0, or -1 or null for unknown, got "
                                        f"{short(d)}")
    return TensorShape([None if d == -1 else d for d in raw])


def _decode_tensor(body, where: str, arrays) -> np.ndarray:
    if not isinstance(body, dict):
        raise fail(where, f"a tensor is an object, got {kind_of(body)}")
    unknown = sorted(set(body) - {"dtype", "shape", "values", "array"})
    if unknown:
        raise fail(f"{where}[{unknown[0]!r}]", "unknown field (a tensor has dtype, shape and "
                                               "values or array)")
    shape = body.get("shape")
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        raise fail(f"{where}['shape']", f"a tensor's shape is a list of ints >= 0, got "
                                        f"{short(shape)}")
    if len(shape) > graph_schema.MAX_TENSOR_RANK:
        raise fail(f"{where}['shape']", f"a constant has at most {graph_schema.MAX_TENSOR_RANK} "
                                        f"dims (numpy's limit), this one has {len(shape)}")
    size = math.prod(shape)
    if size > graph_schema.MAX_TENSOR_ELEMENTS:
        raise limit_error(f"{where}['shape']", f"shape {short(shape)} is {size:,} elements",
                          "MAX_TENSOR_ELEMENTS")
    if body.get("dtype") == "string":
        return _decode_strings(body, shape, size, where)
    dtype = decode_dtype(body.get("dtype"), f"{where}['dtype']")
    if dtype.numpy_dtype is None:
        raise fail(f"{where}['dtype']", f"dtype {dtype.name} has no numpy form to hold constant "
                                        "values")
    np_dtype = np.dtype(dtype.numpy_dtype)
    if size * np_dtype.itemsize > graph_schema.MAX_TENSOR_BYTES:
        raise limit_error(f"{where}['shape']", f"shape {short(shape)} of {dtype.name} is "
                          f"{size * np_dtype.itemsize:,} bytes", "MAX_TENSOR_BYTES")
    if "array" in body:
        if "values" in body:
            raise fail(where, "a tensor has 'values' or 'array', not both")
        if arrays is None:
            raise fail(f"{where}['array']", "refers to a side array but the document has no "
                                            "side file (field 'arrays')")
        return arrays(body["array"], np_dtype, shape, f"{where}['array']")
    if "values" not in body:
        raise fail(where, "a tensor has 'values' or 'array'; this one has neither")
    values = body["values"]
    if values is None:
        raise fail(f"{where}['values']", "null: the tensor was too large to inline (save graphs "
                                         "with engine.save_graph to keep large constants in the "
                                         "side .npz)")
    count = size * 2 if np_dtype.kind == "c" else size
    if not isinstance(values, list) or len(values) != count:
        raise fail(f"{where}['values']", f"must be a list of {count} numbers for shape {shape}"
                                         f"{' (re, im pairs)' if np_dtype.kind == 'c' else ''}, "
                                         f"got {_length_of(values)}")
    return _values_array(values, dtype, np_dtype, shape, f"{where}['values']")


def _length_of(values) -> str:
    return f"{len(values)} items" if isinstance(values, list) else kind_of(values)


# Python types a "values" list may hold, per numpy kind (the non-finite strings are checked
# apart); bool is not an int here, unlike in Python.
_VALUE_TYPES = {"f": {int, float, str}, "c": {int, float, str}, "i": {int}, "u": {int},
                "b": {bool}}
_VALUE_NAMES = {"f": "a number", "c": "a number", "i": "an integer", "u": "an integer",
                "b": "true or false"}


def _values_array(values: list, dtype, np_dtype, shape, where: str) -> np.ndarray:
    allowed = _VALUE_TYPES.get(np_dtype.kind, set())
    found = set(map(type, values))
    if not found <= allowed or str in found and not all(
            v in _NON_FINITE for v in values if isinstance(v, str)):
        i, v = next((i, v) for i, v in enumerate(values) if type(v) not in allowed or
                    isinstance(v, str) and v not in _NON_FINITE)
        expected = _VALUE_NAMES.get(np_dtype.kind, "a value")
        raise fail(f"{where}[{i}]", f"holds {short(v)}, not {expected} (dtype {dtype.name})")
    try:
        if str in found:
            values = [_NON_FINITE[v] if isinstance(v, str) else v for v in values]
        if np_dtype.kind == "c":
            pairs = np.asarray(values, dtype=np.float64).reshape(-1, 2)
            return (pairs[:, 0] + 1j * pairs[:, 1]).astype(np_dtype).reshape(shape)
        with np.errstate(over="ignore"):
            return np.asarray(values, dtype=np_dtype).reshape(shape)
    except (OverflowError, ValueError, TypeError):
        i, v = _first_unfit(values, np_dtype)
        raise fail(f"{where}[{i}]", f"{short(v)} does not fit {dtype.name}") from None


def _first_unfit(values: list, np_dtype) -> tuple[int, object]:
    for i, v in enumerate(values):
        try:
            np.asarray([v], dtype=np.float64 if np_dtype.kind == "c" else np_dtype)
        except (OverflowError, ValueError, TypeError):
            return i, v
    return 0, values[0] if values else None


def _decode_strings(body, shape, size, where: str) -> np.ndarray:
    if "array" in body:
        raise fail(f"{where}['array']", "string tensors are always inline ('values')")
    items = body.get("values")
    if not isinstance(items, list) or len(items) != size:
        raise fail(f"{where}['values']", f"must be a list of {size} strings for shape {shape}, "
                                         f"got {_length_of(items)}")
    out = np.empty(size, dtype=object)
    for i, item in enumerate(items):
        if isinstance(item, str):
            out[i] = item.encode("utf-8")
        elif isinstance(item, dict) and list(item) == ["base64"] and \
                isinstance(item["base64"], str):
            try:
                out[i] = base64.b64decode(item["base64"], validate=True)
            except (binascii.Error, ValueError):
                raise fail(f"{where}['values'][{i}]", "not valid base64") from None
        else:
            raise fail(f"{where}['values'][{i}]", f"a string element is text or "
                                                  f"{{\"base64\": ...}}, got {short(item)}")
    return out.reshape(shape)


# -- nodes ----------------------------------------------------------------------------------

# Node fields a reader defaults when absent (decode_node): a version 3 document leaves them out
# when empty, which changes no GraphDef read back.
_DEFAULTED_FIELDS = ("input", "device", "attr", "output_dtypes", "output_shapes", "stack")


def encode_node(n, arrays: ArrayStore | None = None, strip_prefix: str = "",
                trim: bool = False) -> dict:
    """One NodeDef as a JSON object (schema above); `trim` leaves out empty defaulted fields."""
    where = f"node '{n.name}'"
    stack = list(n.meta.get("stack", ()))
    if strip_prefix:
        stack = [s[len(strip_prefix):] if s.startswith(strip_prefix) else s for s in stack]
    node = {"name": n.name, "op": n.op, "input": list(n.input), "device": n.device,
            "attr": {k: encode_attr(v, arrays, f"{where} attr '{k}'")
                     for k, v in n.attr.items()},
            "output_dtypes": [d.name for d in n.output_dtypes],
            "output_shapes": [None if s.dims is None else list(s.dims)
                              for s in n.output_shapes],
            "stack": stack}
    if trim:
        return {k: v for k, v in node.items() if k not in _DEFAULTED_FIELDS or v}
    return node


def decode_node(raw, index: int, source: str, arrays, runtime: bool = False) -> dict:
    """The checked fields of one node, as NodeDef keyword arguments; `runtime` also accepts the
    names of a partition's runtime nodes (a plan's JSON form)."""
    where = node_at(source, index, raw.get("name") if isinstance(raw, dict) else None)
    if not isinstance(raw, dict):
        raise fail(where, f"a node is an object, got {kind_of(raw)}")
    unknown = [k for k in raw if k not in NODE_FIELDS]
    if unknown:
        raise fail(field_at(where, unknown[0]), f"unknown field (a node has "
                                                f"{', '.join(NODE_FIELDS)})")
    name = _string(raw, "name", where, required=True)
    if not (_RUNTIME_NODE_NAME if runtime else _NODE_NAME).fullmatch(name):
        raise fail(field_at(where, "name"), "a node name is letters, digits and _ . - / > (not "
                                            "starting with _ - / >), as in TF")
    op = _string(raw, "op", where, required=True)
    if not op:
        raise fail(field_at(where, "op"), "is empty")
    inputs = _string_list(raw, "input", where)
    for j, spelling in enumerate(inputs):
        if not (_RUNTIME_INPUT if runtime else _INPUT).fullmatch(spelling):
            raise fail(field_at(where, "input", j), f"{short(spelling)} is not \"node\", "
                                                    "\"node:N\" or \"^node\"")
    device = _string(raw, "device", where)
    attrs = raw.get("attr", {})
    if not isinstance(attrs, dict):
        raise fail(field_at(where, "attr"), f"must be an object, got {kind_of(attrs)}")
    attr = {}
    for k, v in attrs.items():
        if not _ATTR_NAME.fullmatch(k):
            raise fail(field_at(where, "attr", k), "an attr name is letters, digits and _, not "
                                                   "starting with a digit")
        value = _plain_attr(v)
        attr[k] = value if value is not _NOT_PLAIN else \
            decode_attr(v, field_at(where, "attr", k), arrays)
    if "_class" in attr:
        _check_colocation(attr["_class"], field_at(where, "attr", "_class"))
    return {"name": name, "op": op, "input": inputs, "device": device, "attr": attr,
            "output_dtypes": tuple(_output_dtype(d, where, j) for j, d in
                                   enumerate(_list(raw, "output_dtypes", where))),
            "output_shapes": tuple(_output_shape(s, where, j) for j, s in
                                   enumerate(_list(raw, "output_shapes", where))),
            "meta": {"stack": tuple(_string_list(raw, "stack", where))}}


# Every node repeats these fields: their location is formatted only for an error.
def _output_dtype(raw, where: str, j: int) -> dtypes.DType:
    if type(raw) is str:
        try:
            return dtypes.as_dtype(raw)
        except (TypeError, ValueError, KeyError):
            pass
    return decode_dtype(raw, field_at(where, "output_dtypes", j))


def _output_shape(raw, where: str, j: int) -> TensorShape:
    if type(raw) is list and len(raw) <= graph_schema.MAX_RANK and all(
            d is None or type(d) is int and 0 <= d <= INT64_MAX for d in raw):
        return TensorShape(raw)
    return decode_shape(raw, field_at(where, "output_shapes", j))


_NOT_PLAIN = object()


def _plain_attr(v):
    """The decoded value of the attrs most nodes carry (numbers, strings, bools, lists of them,
    a dtype), or _NOT_PLAIN: those go through decode_attr, which formats locations for its
    errors. This runs for every attr of every node."""
    kind = type(v)
    if kind in _PLAIN_ATTRS or kind is int and INT64_MIN <= v <= INT64_MAX:
        return v
    if kind is list and all(type(x) in _PLAIN_ATTRS or type(x) is int and
                            INT64_MIN <= x <= INT64_MAX for x in v):
        return v
    if kind is dict and len(v) == 1 and type(v.get("dtype")) is str:
        try:
            dtype = dtypes.as_dtype(v["dtype"])
        except (TypeError, ValueError, KeyError):
            return _NOT_PLAIN
        return _NOT_PLAIN if dtype.is_ref else dtype
    return _NOT_PLAIN


def _string(raw: dict, key: str, where: str, required: bool = False) -> str:
    if key not in raw and required:
        raise fail(field_at(where, key), f"missing (every node has a string {key!r})")
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise fail(field_at(where, key), f"must be a string, got {kind_of(value)}")
    return value


def _list(raw: dict, key: str, where: str) -> list:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise fail(field_at(where, key), f"must be a list, got {kind_of(value)}")
    return value


def _string_list(raw: dict, key: str, where: str) -> list[str]:
    value = _list(raw, key, where)
    for j, v in enumerate(value):
        if not isinstance(v, str):
            raise fail(field_at(where, key, j), f"must be a string, got {short(v)}")
    return value


def _check_colocation(groups, where: str) -> None:
    if not isinstance(groups, list):
        raise fail(where, "must be a list of \"loc:@<node>\" strings")
    for j, g in enumerate(groups):
        if not (isinstance(g, str) and g.startswith("loc:@")):
            raise fail(f"{where}[{j}]", f"must be a \"loc:@<node>\" string, got {short(g)}")


# -- documents --------------------------------------------------------------------------------

def document_to_json(graph_def, strip_prefix: str = "", arrays: ArrayStore | None = None,
                     collections: dict | None = None, side_file: str | None = None,
                     version: int = JSON_VERSION) -> str:
    """One node a line (diff-friendly); `strip_prefix` is removed from creation sites, so
    files written from a checkout do not carry the machine's absolute paths. `side_file` is
    recorded only if some tensor went to `arrays`. `version` COMPACT_VERSION: a compact file's
    document (empty defaulted node fields left out)."""
    trim = version >= COMPACT_VERSION
    lines = [json.dumps(encode_node(n, arrays, strip_prefix, trim), separators=(",", ":"),
                        allow_nan=False) for n in graph_def.node]
    head = {"format": JSON_FORMAT, "version": version, "graph_version": graph_def.version,
            "arrays": side_file if arrays is not None and arrays.arrays else None}
    tail = json.dumps(collections or {}, separators=(",", ":"), allow_nan=False)
    return (json.dumps(head)[:-1] + ', "node": [\n' + ",\n".join(lines) +
            f"\n], \"collections\": {tail}}}\n")


def document_from_json(text: str | bytes, source: str, open_arrays=None,
                       runtime: bool = False) -> tuple[dict, list, dict]:
    """(header, node field dicts, raw collections), every field checked; `text` may also be the
    file's bytes. `open_arrays(name, version)` gives the side file's reader for documents
    that name one; `runtime`: a partition's document (decode_node)."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = graph_schema.decode_utf8(text, source)
    if len(text) > graph_schema.MAX_FILE_BYTES:
        raise limit_error(source, f"the document is {len(text):,} characters",
                          "MAX_FILE_BYTES")
    doc = graph_schema.parse_json(text, source)
    if not isinstance(doc, dict) or doc.get("format") != JSON_FORMAT:
        raise fail(document_field(source, "format"), f"not an {JSON_FORMAT} document")
    # The decoders look at every container but not inside every string: lone surrogates (only
    # ever from "\\ud800"-style escapes, which a regex finds) are looked for first.
    surrogates = graph_schema.may_hold_surrogates(text)
    if surrogates:
        graph_schema.check_tree(doc, source, strings=True)
    try:
        return _decode_document(doc, source, open_arrays, runtime)
    except GraphFileError as e:
        error = e
    # The decoders accept no container nested deeper than the schema's own (about 10 deep),
    # so a document past MAX_NESTING_DEPTH always fails in them: say that instead, at the deep
    # node's field.
    if not surrogates:
        graph_schema.check_tree(doc, source, strings=False)
    raise error


def _decode_document(doc: dict, source: str, open_arrays,
                     runtime: bool = False) -> tuple[dict, list, dict]:
    unknown = [k for k in doc if k not in DOCUMENT_FIELDS]
    if unknown:
        raise fail(document_field(source, unknown[0]), f"unknown field (a graph document has "
                                                       f"{', '.join(DOCUMENT_FIELDS)})")
    version = doc.get("version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise fail(document_field(source, "version"), f"unsupported version {short(version)} "
                   f"(this build reads {', '.join(map(str, READABLE_VERSIONS))})")
    graph_version = doc.get("graph_version", 0)
    if not isinstance(graph_version, int) or isinstance(graph_version, bool):
        raise fail(document_field(source, "graph_version"), f"must be an integer, got "
                                                            f"{kind_of(graph_version)}")
    _checked_int(graph_version, document_field(source, "graph_version"))
    nodes = doc.get("node", [])
    if not isinstance(nodes, list):
        raise fail(document_field(source, "node"), f"must be a list, got {kind_of(nodes)}")
    arrays = _side_arrays(doc.get("arrays"), source, open_arrays, version) \
        if version >= 2 else None
    collections = doc.get("collections", {}) if version >= 2 else {}
    graph_schema.check_collections(collections, source)
    fields = [decode_node(raw, i, source, arrays, runtime) for i, raw in enumerate(nodes)]
    return {"version": version, "graph_version": graph_version}, fields, collections


def _side_arrays(name, source: str, open_arrays, version: int):
    if name is None:
        return None
    if name != IN_CONTAINER and (not isinstance(name, str) or not _SIDE_FILE.fullmatch(name)):
        raise fail(document_field(source, "arrays"), f"must be the plain name of a .npz file "
                                                     f"beside the document, got {short(name)}")
    if open_arrays is None:
        raise fail(document_field(source, "arrays"), f"names side file {name!r}; load the "
                   "document from its file (engine.load_graph) so the side file is found")
    return open_arrays(name, version)
