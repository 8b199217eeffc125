"""The versioned JSON schema of a graph: encoding attrs, tensors, nodes and whole documents,
and decoding them with every field checked, so a damaged or hostile document raises ValueError
naming the file, the node and the field, never anything else. Files, side arrays and
collections are engine/graph_io.py's.

Schema `engine.graphdef`, version 2 (version 1 files, which lack "arrays" and "collections",
are still read):

    {"format": "engine.graphdef", "version": 2, "graph_version": <int>,
     "arrays": null | "<file>.npz",        side file beside this one, holding large constants
     "node": [<node>, ...],                in creation order
     "collections": {"<key>": [<item>, ...], ...}}

    <node> = {"name": "scope/op", "op": "MatMul",
              "input": ["a", "b:1", "^c"],   data inputs "node[:index]", then control "^node"
              "device": "/device:GPU:0",      the requested device ("" for none)
              "attr": {"<name>": <attr>, ...},   including "_class": ["loc:@other"]
              "output_dtypes": ["float32", ...], "output_shapes": [null | [2, null], ...],
              "stack": ["file.py:12 in build", ...]}   creation site, outermost first

    <attr> = true | 3 | 0.5 | "text" | null | [<attr>, ...] (one level)
           | {"float": "NaN" | "Infinity" | "-Infinity"}
           | {"dtype": "float32"} | {"shape": null | [2, null]}
           | {"tensor": {"dtype": "float32", "shape": [2, 2], "values": [1.0, ...]}}
                 values flat in C order; complex values as re, im pairs; non-finite floats as
                 the strings above; "values": null marks a tensor too large to inline (not
                 loadable); string tensors as {"dtype": "string", "shape", "values":
                 [<UTF-8 text> | {"base64": <bytes not UTF-8>}, ...]}, always inline
           | {"tensor": {"dtype": "float32", "shape": [512, 512], "array": "t0"}}
                 the array under key "t0" of the side .npz (saved with np.savez, loaded with
                 allow_pickle=False)

    <item> = {"variable": {"name": "w", "initializer": "w/Assign", "snapshot": "w/read:0",
                           "initial_value": "w/initial_value:0", "trainable": true}}
           | {"tensor": "loss:0"} | {"operation": "train"} | {"value": <JSON scalar>}"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re

import numpy as np

from engine import dtypes
from engine.shapes import TensorShape

JSON_FORMAT = "engine.graphdef"
JSON_VERSION = 2
READABLE_VERSIONS = (1, 2)
# Tensors above this many elements go to the side .npz when saving a file (and are elided,
# as "values": null, from the JSON forms that have no side file, such as the run store's).
MAX_INLINE_VALUES = 1 << 10
MAX_ELIDED_INLINE_VALUES = 1 << 16
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_NODE_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*")
_INPUT = re.compile(r"\^?[A-Za-z0-9.][A-Za-z0-9_.\-/>]*(:[0-9]+)?")
_SIDE_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\.npz")


def bad(where: str, detail: str) -> ValueError:
    return ValueError(f"{where}: {detail}")


# -- attrs: encoding ------------------------------------------------------------------------

class ArrayStore:
    """Collects the arrays that go to the side .npz while a document is written."""

    def __init__(self, inline_limit: int = MAX_INLINE_VALUES):
        self.inline_limit = inline_limit
        self.arrays: dict[str, np.ndarray] = {}

    def add(self, value: np.ndarray) -> str:
        key = f"t{len(self.arrays)}"
        self.arrays[key] = np.ascontiguousarray(value)
        return key


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
    """`arrays(key, dtype, shape, where)` returns a side array (None: no side file)."""
    if raw is None or isinstance(raw, (bool, int, str)):
        return raw
    if isinstance(raw, float):
        return raw
    if isinstance(raw, list):
        if nested:
            raise bad(where, "attr lists hold values, not further lists")
        return [decode_attr(v, where, arrays, nested=True) for v in raw]
    if not isinstance(raw, dict) or len(raw) != 1:
        raise bad(where, f"an encoded attr is a single-key object, got {kind_of(raw)}")
    (kind, body), = raw.items()
    if kind == "dtype":
        return decode_dtype(body, where)
    if kind == "shape":
        return decode_shape(body, where)
    if kind == "float":
        if body not in _NON_FINITE:
            raise bad(where, f"'float' must be one of {sorted(_NON_FINITE)}, got {body!r}")
        return _NON_FINITE[body]
    if kind == "tensor":
        return _decode_tensor(body, where, arrays)
    raise bad(where, f"unknown attr encoding '{kind}' (expected dtype, shape, float or "
                      "tensor)")


def decode_dtype(raw, where: str) -> dtypes.DType:
    if not isinstance(raw, str):
        raise bad(where, f"a dtype is a name such as \"float32\", got {kind_of(raw)}")
    try:
        return dtypes.as_dtype(raw)
    except (TypeError, ValueError, KeyError):
        raise bad(where, f"unknown dtype {raw!r}") from None


def decode_shape(raw, where: str) -> TensorShape:
    if raw is None:
        return TensorShape(None)
    if not isinstance(raw, list) or not all(d is None or _is_count(d) for d in raw):
        raise bad(where, f"a shape is null or a list of non-negative ints and nulls, got "
                          f"{short(raw)}")
    return TensorShape(raw)


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _decode_tensor(body, where: str, arrays) -> np.ndarray:
    where = f"{where} tensor"
    if not isinstance(body, dict):
        raise bad(where, f"expected an object, got {kind_of(body)}")
    shape = body.get("shape")
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        raise bad(where, f"field 'shape' must be a list of non-negative ints, got "
                          f"{short(shape)}")
    size = math.prod(shape)
    if body.get("dtype") == "string":
        return _decode_strings(body, shape, size, where)
    dtype = decode_dtype(body.get("dtype"), f"{where} field 'dtype'")
    if dtype.numpy_dtype is None:
        raise bad(where, f"dtype {dtype.name} has no numpy form to hold constant values")
    if "array" in body:
        if arrays is None:
            raise bad(where, "refers to a side array but the document has no side file "
                              "(field 'arrays')")
        return arrays(body["array"], np.dtype(dtype.numpy_dtype), shape, where)
    values = body.get("values")
    if values is None:
        raise bad(where, "has no values (it was too large to inline; save graphs with "
                          "engine.save_graph to keep large constants in the side .npz)")
    count = size * 2 if np.dtype(dtype.numpy_dtype).kind == "c" else size
    if not isinstance(values, list) or len(values) != count:
        raise bad(where, f"field 'values' must be a list of {count} numbers for shape "
                          f"{shape}, got {short(values)}")
    return _values_array(values, dtype, shape, where)


def _values_array(values: list, dtype, shape, where: str) -> np.ndarray:
    np_dtype = np.dtype(dtype.numpy_dtype)
    for v in values:
        if not (isinstance(v, (int, float)) or
                (isinstance(v, str) and v in _NON_FINITE and np_dtype.kind in "fc")):
            raise bad(where, f"field 'values' holds {short(v)}, not a number")
    try:
        if np_dtype.kind == "c":
            pairs = np.asarray([_NON_FINITE.get(v, v) if isinstance(v, str) else v
                                for v in values], dtype=np.float64).reshape(-1, 2)
            return (pairs[:, 0] + 1j * pairs[:, 1]).astype(np_dtype).reshape(shape)
        floats = [_NON_FINITE[v] if isinstance(v, str) else v for v in values]
        return np.asarray(floats, dtype=np_dtype).reshape(shape)
    except (OverflowError, ValueError, TypeError) as e:
        raise bad(where, f"field 'values' does not fit {dtype.name}: {e}") from None


def _decode_strings(body, shape, size, where: str) -> np.ndarray:
    items = body.get("values")
    if not isinstance(items, list) or len(items) != size:
        raise bad(where, f"field 'values' must be a list of {size} strings for shape {shape}, "
                         f"got {short(items)}")
    out = np.empty(size, dtype=object)
    for i, item in enumerate(items):
        if isinstance(item, str):
            out[i] = item.encode("utf-8")
        elif isinstance(item, dict) and list(item) == ["base64"] and \
                isinstance(item["base64"], str):
            try:
                out[i] = base64.b64decode(item["base64"], validate=True)
            except (binascii.Error, ValueError):
                raise bad(where, f"field 'values' item {i} is not valid base64") from None
        else:
            raise bad(where, f"field 'values' item {i} must be text or {{\"base64\": ...}}, "
                             f"got {short(item)}")
    return out.reshape(shape)


def kind_of(v) -> str:
    return "null" if v is None else type(v).__name__


def short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


# -- nodes ----------------------------------------------------------------------------------

def encode_node(n, arrays: ArrayStore | None = None, strip_prefix: str = "") -> dict:
    """One NodeDef as a JSON object (schema above)."""
    where = f"node '{n.name}'"
    stack = list(n.meta.get("stack", ()))
    if strip_prefix:
        stack = [s[len(strip_prefix):] if s.startswith(strip_prefix) else s for s in stack]
    return {"name": n.name, "op": n.op, "input": list(n.input), "device": n.device,
            "attr": {k: encode_attr(v, arrays, f"{where} attr '{k}'")
                     for k, v in n.attr.items()},
            "output_dtypes": [d.name for d in n.output_dtypes],
            "output_shapes": [None if s.dims is None else list(s.dims)
                              for s in n.output_shapes],
            "stack": stack}


def decode_node(raw, index: int, source: str, arrays) -> dict:
    """The checked fields of one node, as NodeDef keyword arguments."""
    if not isinstance(raw, dict):
        raise bad(f"{source}: node[{index}]", f"a node is an object, got {kind_of(raw)}")
    name, op = raw.get("name"), raw.get("op")
    if not isinstance(name, str) or not isinstance(op, str):
        raise bad(f"{source}: node[{index}]", "needs string fields 'name' and 'op'")
    where = f"{source}: node '{name}'"
    if not _NODE_NAME.fullmatch(name):
        raise bad(where, "field 'name' must be letters, digits and _ . - / > (not starting "
                          "with _ - / >)")
    if not op:
        raise bad(where, "field 'op' is empty")
    inputs = _string_list(raw, "input", where)
    for spelling in inputs:
        if not _INPUT.fullmatch(spelling):
            raise bad(where, f"field 'input' holds {spelling!r}, not \"node\", \"node:N\" or "
                              "\"^node\"")
    device = raw.get("device", "")
    if not isinstance(device, str):
        raise bad(where, f"field 'device' must be a string, got {kind_of(device)}")
    attrs = raw.get("attr", {})
    if not isinstance(attrs, dict):
        raise bad(where, f"field 'attr' must be an object, got {kind_of(attrs)}")
    attr = {k: decode_attr(v, f"{where} attr '{k}'", arrays) for k, v in attrs.items()}
    _check_colocation(attr.get("_class"), where)
    return {"name": name, "op": op, "input": inputs, "device": device, "attr": attr,
            "output_dtypes": tuple(decode_dtype(d, f"{where} field 'output_dtypes'")
                                   for d in _list(raw, "output_dtypes", where)),
            "output_shapes": tuple(decode_shape(s, f"{where} field 'output_shapes'")
                                   for s in _list(raw, "output_shapes", where)),
            "meta": {"stack": tuple(_string_list(raw, "stack", where))}}


def _list(raw: dict, key: str, where: str) -> list:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise bad(where, f"field '{key}' must be a list, got {kind_of(value)}")
    return value


def _string_list(raw: dict, key: str, where: str) -> list[str]:
    value = _list(raw, key, where)
    for v in value:
        if not isinstance(v, str):
            raise bad(where, f"field '{key}' must hold strings, got {short(v)}")
    return value


def _check_colocation(groups, where: str) -> None:
    if groups is None:
        return
    if not isinstance(groups, list) or not all(isinstance(g, str) and g.startswith("loc:@")
                                               for g in groups):
        raise bad(where, "attr '_class' must be a list of \"loc:@<node>\" strings")


# -- documents --------------------------------------------------------------------------------

def document_to_json(graph_def, strip_prefix: str = "", arrays: ArrayStore | None = None,
                     collections: dict | None = None, side_file: str | None = None) -> str:
    """One node a line (diff-friendly); `strip_prefix` is removed from creation sites, so
    files written from a checkout do not carry the machine's absolute paths. `side_file` is
    recorded only if some tensor went to `arrays`."""
    lines = [json.dumps(encode_node(n, arrays, strip_prefix), separators=(",", ":"),
                        allow_nan=False) for n in graph_def.node]
    head = {"format": JSON_FORMAT, "version": JSON_VERSION, "graph_version": graph_def.version,
            "arrays": side_file if arrays is not None and arrays.arrays else None}
    tail = json.dumps(collections or {}, separators=(",", ":"), allow_nan=False)
    return (json.dumps(head)[:-1] + ', "node": [\n' + ",\n".join(lines) +
            f"\n], \"collections\": {tail}}}\n")


def document_from_json(text: str, source: str, open_arrays=None) -> tuple[dict, list, dict]:
    """(header, node field dicts, raw collections). `open_arrays(name)` gives the side file's
    reader for documents that name one."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{source}: not valid JSON ({e})") from None
    except RecursionError:
        raise ValueError(f"{source}: not valid JSON (nested too deeply)") from None
    if not isinstance(doc, dict) or doc.get("format") != JSON_FORMAT:
        raise ValueError(f"{source}: not an {JSON_FORMAT} document (field 'format')")
    version = doc.get("version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise ValueError(f"{source}: unsupported version {version!r} (field 'version'; this "
                         f"build reads {', '.join(map(str, READABLE_VERSIONS))})")
    graph_version = doc.get("graph_version", 0)
    if not isinstance(graph_version, int) or isinstance(graph_version, bool):
        raise ValueError(f"{source}: field 'graph_version' must be an integer")
    nodes = doc.get("node", [])
    if not isinstance(nodes, list):
        raise ValueError(f"{source}: field 'node' must be a list, got {kind_of(nodes)}")
    arrays = _side_arrays(doc.get("arrays"), source, open_arrays) if version >= 2 else None
    collections = doc.get("collections", {}) if version >= 2 else {}
    if not isinstance(collections, dict):
        raise ValueError(f"{source}: field 'collections' must be an object")
    fields = [decode_node(raw, i, source, arrays) for i, raw in enumerate(nodes)]
    return {"version": version, "graph_version": graph_version}, fields, collections


def _side_arrays(name, source: str, open_arrays):
    if name is None:
        return None
    if not isinstance(name, str) or not _SIDE_FILE.fullmatch(name):
        raise ValueError(f"{source}: field 'arrays' must be the plain name of a .npz file "
                         f"beside the document, got {short(name)}")
    if open_arrays is None:
        raise ValueError(f"{source}: field 'arrays' names side file {name!r}; load the "
                         "document from its file (engine.load_graph) so the side file is found")
    return open_arrays(name)
