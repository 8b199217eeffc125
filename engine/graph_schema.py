"""The graph file's schema and limits, GraphFileError (the one error a document that breaks
them raises, naming the file, the node and the field), and the checks that span a node's
fields, other nodes or the op registry. engine/graph_json.py decodes and checks each field.

A graph document (written by engine.save_graph, read by engine.load_graph, load_graph_def
and graph_def_from_json) is one UTF-8 JSON object of at most MAX_FILE_BYTES (a regular file,
when read from one), nested at most MAX_NESTING_DEPTH containers deep, no object holding a key
twice, no string holding a lone surrogate. Its fields, all checked before anything is imported
(a field not listed is an error):

    format         "engine.graphdef"
    version        1, 2 or 3 (2 is written as JSON, 3 in a compact file; 1 lacks arrays and
                   collections)
    graph_version  int64, default 0
    arrays         null or the plain name of the side .npz beside the file ("g.json.npz"),
                   or "." in a compact file (below): its own members
    node           list of <node>, in any order; the graph they form has no cycle
    collections    {"<key>": [<item>, ...]}, default {}

    <node> fields:
    name           required; TF's rule [A-Za-z0-9.][A-Za-z0-9_.\\-/>]*; unique, also ignoring
                   case (tf.Graph's names are unique that way, so import would rename one)
    op             required; an op type the engine registers (registry.registered_op_types())
    input          list of "node" | "node:k" | "^node", data inputs first, default []: each names
                   a node of the file and k one of its outputs (their count comes from the
                   producer's signature, else its output_dtypes); as many data inputs as the
                   op's signature takes (engine/graph_signatures.py: an arg `x*N` takes attr N)
    device         string, default "": a device spec tf.device accepts ("/device:GPU:0")
    attr           {"<name>": <attr>}, names [A-Za-z_][A-Za-z0-9_]*, default {}: every attr the
                   op's signature requires; each attr it declares of its type (type, shape,
                   tensor, int, float, bool, string or list(...) of one) and minimum; Const's
                   "value" of Const's "dtype"; "_class" a list of "loc:@<node of the file>"
    output_dtypes  list of dtype names, default []: one per output of the op, if given
    output_shapes  list of <shape>, default []: one per output of the op, if given
    stack          list of strings, default []: creation sites, outermost first
    (A version 3 document leaves out the defaulted fields that are empty.)

    <attr>  = true | <int> | <float> | "text" | null | [<attr>, ...] (one level)
            | {"float": "NaN" | "Infinity" | "-Infinity"} | {"dtype": "<dtype name>", not a
              reference dtype (TF's rule)} | {"shape": <shape>} | {"tensor": <tensor>}
    <int>   = an integer in int64 range (also every dim and count below)
    <shape> = null (unknown rank) | [<dim>, ...] of at most MAX_RANK (254, TF's limit) dims,
              a dim >= 0, or -1 or null when unknown
    <tensor> = {"dtype": "<dtype name>", "shape": [<count>, ...] (at most 64 dims, numpy's limit),
                "values": [...] | null | "array": "<key of the side .npz>" | [<offset>,
                <byte length>] (version 3: a span of the compact file's "arrays.bin")}
              at most MAX_TENSOR_ELEMENTS elements and MAX_TENSOR_BYTES bytes, and a file's side
              arrays at most MAX_SIDE_FILE_BYTES together. "values": flat, C order; numbers for
              float dtypes ("NaN", "Infinity", "-Infinity" too), complex as re, im pairs,
              integers fitting the dtype for integer dtypes, true/false for bool, text or
              {"base64": "..."} for string; null marks a tensor too large to inline (not
              loadable). "array": the side array of that key, its npy header (dtype, shape)
              equal to the declared one, read with allow_pickle=False; or (version 3) the
              span's bytes, little-endian, exactly the declared dtype's itemsize times the
              shape's elements, a bool, integer, float or complex dtype.
    <item>  = {"variable": {"name", "initializer", "snapshot", "initial_value": <names>,
                            "trainable": bool}}
            | {"tensor": "node:k"} | {"operation": "node"} | {"value": <JSON scalar>}

A compact graph file (engine.save_graph(..., compact=True), or a ".graphz" path) is a zip
archive; it is recognised by its content (b"PK\\x03\\x04"), whatever its name. Version 3
(written: LZMA, deflate for a member over 16 MiB) holds the document as member "graph.json" and,
if any tensor has a span, every array back to back as member "arrays.bin": the spans tile it (no
overlap, no byte that no tensor names). Version 2 (deflate, still read) holds each numeric array
as a member "<key>.npy". Every member is a plain name ([A-Za-z0-9_][A-Za-z0-9_.-]*, no "/" or
".."), stored, deflated or LZMA, unencrypted, given once, named by the document and at most its
cap uncompressed: the document MAX_FILE_BYTES, a .npy array its declared bytes plus
MAX_NPY_HEADER_BYTES; at most MAX_CONTAINER_MEMBERS members, and the file and its members' sizes
together at most MAX_FILE_BYTES + MAX_SIDE_FILE_BYTES. Members are decompressed 4 KiB at a time
(an LZMA step then gives at most about 30 MB), each no further than its cap, and "arrays.bin" no
further than the spans asked for so far.

The limits are module attributes read at each load: set, for example,
`engine.graph_schema.MAX_TENSOR_BYTES = 4 << 30` to load a file with larger constants.

Checked in this order, the first broken rule raising: the text (size, UTF-8, JSON, keys given
once), each node's fields in file order (graph_json), names and references, cycles (graph_def,
Tarjan's SCCs), then each node against its op. What only shape inference can see (inputs whose
shapes cannot work together, a saved output dtype the op does not give) is named the same way
by import_graph_def, as GraphFileError at the node.
"""

from __future__ import annotations

import importlib
import json
import re

import numpy as np

from engine import devices, errors
from engine.graph_signatures import (
    RUNTIME_OP_TYPES,
    Signature,
    describe_args,
    describe_value,
    has_kind,
    kind_text,
    signature,
)
from engine.ops import registry

MAX_FILE_BYTES = 256 << 20
MAX_NESTING_DEPTH = 32
MAX_TENSOR_ELEMENTS = 1 << 28
MAX_TENSOR_BYTES = 1 << 30
MAX_SIDE_FILE_BYTES = 4 << 30
MAX_NODE_OUTPUTS = 1 << 16
MAX_CONTAINER_MEMBERS = 1 << 20
MAX_NPY_HEADER_BYTES = 1 << 16
# Fixed, not knobs: TF's TensorShape::kMaxDims, and numpy's most dims for an array.
MAX_RANK = 254
MAX_TENSOR_RANK = 64
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
VARIABLE_FIELDS = ("name", "initializer", "snapshot", "initial_value", "trainable")


class GraphFileError(errors.InvalidArgumentError, ValueError):
    """A graph document that breaks its schema. The message starts with the file, then the node
    (index and name) or top-level field, then the field inside it, then what is wrong. It is an
    InvalidArgumentError (TF's status for a bad GraphDef) and a ValueError (what TF's
    import_graph_def raises for one)."""

    def __init__(self, node_def, op, message: str, *args):
        errors.InvalidArgumentError.__init__(self, node_def, op, message)


class UnregisteredOpError(GraphFileError, errors.NotFoundError):
    """A node's op type is not registered: also a NotFoundError, as TF reports it."""

    error_code = errors.NOT_FOUND

    def __init__(self, node_def, op, message: str, *args):
        errors.OpError.__init__(self, node_def, op, message, errors.NOT_FOUND)


def fail(where: str, detail: str) -> GraphFileError:
    """`where` is a location (node_at, field_at); the error reads `<where>: <detail>`."""
    return GraphFileError(None, None, f"{where}: {detail}")


def node_at(source: str, index: int, name=None) -> str:
    label = f" ({short(name)})" if isinstance(name, str) else ""
    return f"{source}: node {index}{label}"


def field_at(where: str, field: str, *keys) -> str:
    """`field_at("g.json: node 3 ('x')", "input", 1)` -> "g.json: node 3 ('x'), field
    'input'[1]"."""
    return f"{where}, field {field_path(field, *keys)}"


def document_field(source: str, field: str, *keys) -> str:
    """A top-level field: "g.json: field 'version'"."""
    return f"{source}: field {field_path(field, *keys)}"


def field_path(field: str, *keys) -> str:
    path = f"'{field}'"
    for k in keys:
        path += f"[{k!r}]"
    return path


def kind_of(v) -> str:
    return "null" if v is None else type(v).__name__


def short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def a_an(op_type: str) -> str:
    """"a MatMul", "an AddN"."""
    return f"{'an' if op_type[:1] in 'AEIOU' else 'a'} {op_type}"


def limit_error(where: str, what: str, limit_name: str) -> GraphFileError:
    return fail(where, over_limit(what, limit_name))


def over_limit(what: str, limit_name: str) -> str:
    limit = globals()[limit_name]
    return (f"{what}, over the limit of {limit:,} (engine.graph_schema.{limit_name}; raise it "
            "to load this file)")


# -- the document ---------------------------------------------------------------------------

class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _DuplicateKey(key, out.get("name"))
    return out


def parse_json(text: str, source: str):
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        key, name = e.args
        within = f" (in the object named {short(name)})" if isinstance(name, str) else ""
        raise fail(source, f"an object holds key {short(key)} twice{within}; each field is "
                           "given once") from None
    except json.JSONDecodeError as e:
        raise fail(source, f"not valid JSON ({e})") from None
    except RecursionError:
        raise limit_error(source, "JSON nested too deeply for the parser",
                          "MAX_NESTING_DEPTH") from None
    # Python refuses integers of more than 4300 digits with a plain ValueError.
    except ValueError as e:
        raise fail(source, f"not valid JSON ({e})") from None


def decode_utf8(data: bytes, source: str) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise fail(source, f"byte {e.start}: not UTF-8 text ({e.reason}); a graph file is "
                           "UTF-8 JSON") from None


def may_hold_surrogates(text: str) -> bool:
    """Whether a string parsed from `text` may hold a lone surrogate: `text` has one itself, or
    a "\\ud800"-style escape."""
    return _SURROGATE_ESCAPE.search(text) is not None or not _is_utf8(text)


def check_tree(doc: dict, source: str, strings: bool) -> None:
    """Nesting depth, and with `strings` lone surrogates, located at the node's field (or the
    top-level field) holding them."""
    for key, value in doc.items():
        if key != "node" or type(value) is not list:
            problem = _problem(value, 2, strings)
            if problem:
                raise fail(document_field(source, key), problem)
            continue
        for i, node in enumerate(value):
            # A node that is not an object is graph_json's to refuse; a node's problem is
            # looked for again field by field only to say where it is.
            if type(node) is dict and _problem(node, 3, strings):
                where = node_at(source, i, node.get("name"))
                for field, item in node.items():
                    problem = _problem(field, 4, strings) or _problem(item, 4, strings)
                    if problem:
                        raise fail(field_at(where, field), problem)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_CONTAINERS = (list, dict)
_TEXT_OR_CONTAINERS = (list, dict, str)


def _problem(value, depth: int, strings: bool) -> str | None:
    """What is wrong with `value` (nested `depth` containers deep), or None. Visits containers
    only (and strings when `strings`): lists of numbers, most of a document, are passed over
    after one C-speed look at their element types."""
    wanted = _TEXT_OR_CONTAINERS if strings else _CONTAINERS
    todo = [(value, depth)]
    while todo:
        v, d = todo.pop()
        if type(v) is str:
            if not _is_utf8(v):
                return (f"holds a string with a lone surrogate ({short(v)}), which is not UTF-8 "
                        "text")
            continue
        if type(v) not in _CONTAINERS:
            continue
        if d > MAX_NESTING_DEPTH:
            return over_limit(f"holds JSON nested {d} containers deep", "MAX_NESTING_DEPTH")
        if type(v) is dict:
            if strings:
                todo.extend([(k, d) for k in v])
            v = v.values()
        kinds = set(map(type, v))
        if list in kinds or dict in kinds or strings and str in kinds:
            todo.extend([(x, d + 1) for x in v if type(x) in wanted])
    return None


def _is_utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_collections(raw, source: str) -> None:
    """The shape of the "collections" field; names are looked up when the graph is built."""
    if not isinstance(raw, dict):
        raise fail(document_field(source, "collections"), f"must be an object, got "
                                                          f"{kind_of(raw)}")
    for key, items in raw.items():
        if not isinstance(items, list):
            raise fail(document_field(source, "collections", key), f"must be a list, got "
                                                                   f"{kind_of(items)}")
        for i, item in enumerate(items):
            _check_item(item, document_field(source, "collections", key, i))


def _check_item(item, where: str) -> None:
    if not isinstance(item, dict) or len(item) != 1:
        raise fail(where, "an item is a single-key object (variable, tensor, operation or "
                          "value)")
    (kind, body), = item.items()
    if kind == "value":
        if not (body is None or isinstance(body, (bool, int, float, str))):
            raise fail(f"{where}['value']", f"must be a JSON scalar, got {kind_of(body)}")
    elif kind in ("tensor", "operation"):
        if not isinstance(body, str):
            raise fail(f"{where}[{kind!r}]", f"must be a name, got {kind_of(body)}")
    elif kind == "variable":
        if not isinstance(body, dict):
            raise fail(f"{where}['variable']", f"must be an object, got {kind_of(body)}")
        for field in body:
            if field not in VARIABLE_FIELDS:
                raise fail(f"{where}['variable'][{field!r}]", "unknown field (a variable has "
                                                              f"{', '.join(VARIABLE_FIELDS)})")
        for field in VARIABLE_FIELDS[:-1]:
            if not isinstance(body.get(field), str):
                raise fail(f"{where}['variable'][{field!r}]", f"must be a name, got "
                                                              f"{kind_of(body.get(field))}")
        if not isinstance(body.get("trainable", True), bool):
            raise fail(f"{where}['variable']['trainable']", "must be true or false")
    else:
        raise fail(where, f"unknown item kind {short(kind)} (variable, tensor, operation or "
                          "value)")


# -- the nodes -------------------------------------------------------------------------------

def check_names_and_references(nodes: list, source: str,
                               runtime: bool = False) -> dict[str, int]:
    """Unique names, and inputs and colocation groups that name nodes of the file (not for a
    plan's pruned graph or partition, `runtime`, whose groups may name pruned nodes); returns
    each name's index. Run before the cycle check, which needs every input to resolve."""
    index_of: dict[str, int] = {}
    folded: dict[str, int] = {}
    for i, n in enumerate(nodes):
        _check_unique(n.name, i, source, index_of, folded, nodes)
    # Locations are formatted only for an error: this runs on every load.
    for i, n in enumerate(nodes):
        for j, spelling in enumerate(n.input):
            src = parse_input(spelling)[0]
            if src not in index_of:
                raise fail(field_at(node_at(source, i, n.name), "input", j),
                           f"{short(spelling)} names node {short(src)}, which is not in the file")
        for j, group in enumerate(() if runtime else n.attr.get("_class", ())):
            if group[5:] not in index_of:
                raise fail(field_at(node_at(source, i, n.name), "attr", "_class", j),
                           f"colocation with {short(group[5:])}, which is not a node of the file")
    return index_of


def check_ops(nodes: list, source: str, index_of: dict[str, int],
              runtime: bool = False) -> None:
    """The rules that need each node's op: registered op types (and, for a partition's
    document, `runtime`, the runtime's _Send/_Recv/_Arg/_Retval), devices, required and typed
    attrs, input counts and order, and inputs naming outputs their producer has."""
    _register_every_op()
    outputs = [_check_node(n, _NodeAt(source, i, n.name), runtime)
               for i, n in enumerate(nodes)]
    for i, n in enumerate(nodes):
        for j, spelling in enumerate(n.input):
            src, index = parse_input(spelling)
            have = outputs[index_of[src]]
            if index >= 0 and have is not None and index >= have:
                raise fail(field_at(node_at(source, i, n.name), "input", j),
                           f"{short(spelling)} names output {index} of {short(src)}, which has "
                           f"{have} output{'s' if have != 1 else ''}")


class _NodeAt:
    """node_at(...), formatted only when an error message uses it (this runs for every node
    of every file loaded)."""

    __slots__ = ("source", "index", "name")

    def __init__(self, source: str, index: int, name: str):
        self.source, self.index, self.name = source, index, name

    def __str__(self) -> str:
        return node_at(self.source, self.index, self.name)


def _register_every_op() -> None:
    # Op types register when their module is imported; engine.api imports every op module.
    importlib.import_module("engine.api")


def _check_unique(name: str, i: int, source: str, index_of: dict, folded: dict, nodes) -> None:
    if name in index_of:
        raise fail(field_at(node_at(source, i, name), "name"), f"duplicate node name: node "
                                                               f"{index_of[name]} is also named "
                                                               f"{short(name)}")
    key = name.lower()
    if key in folded:
        other = folded[key]
        raise fail(field_at(node_at(source, i, name), "name"), f"{short(name)} differs only in "
                   f"case from node {other} ({short(nodes[other].name)}); node names are unique "
                   "ignoring case here, as tf.Graph's are, so import would rename one of them")
    index_of[name] = i
    folded[key] = i


def _check_node(n, where, runtime: bool = False) -> int | None:
    """Checks one node alone; returns how many outputs it has (None: not known)."""
    if not registry.is_registered(n.op) and not (runtime and n.op in RUNTIME_OP_TYPES):
        raise UnregisteredOpError(None, None, f"{field_at(where, 'op')}: Op type not registered "
                                  f"{short(n.op)} in this engine (engine.ops.registry."
                                  "registered_op_types() lists the registered op types)")
    _check_device(n.device, where)
    sig = signature(n.op)
    if sig is None:
        return len(n.output_dtypes) or None
    _check_attrs(n, sig, where)
    _check_input_count(n, sig, where)
    count = sig.count(sig.outputs, n.attr)
    if count > MAX_NODE_OUTPUTS:
        raise limit_error(field_at(where, "attr"), f"{a_an(n.op)} with these attrs has {count:,} "
                          "outputs", "MAX_NODE_OUTPUTS")
    for field, listed in (("output_dtypes", n.output_dtypes), ("output_shapes", n.output_shapes)):
        if listed and len(listed) != count:
            raise fail(field_at(where, field), f"lists {len(listed)} outputs, {a_an(n.op)} with "
                                               f"these attrs has {count}")
    if n.op == "Const":
        _check_const(n, where)
    return count


def _check_device(device: str, where: str) -> None:
    if not device:
        return
    try:
        devices.DeviceSpec.from_string(device)
    # The parser raises MalformedDeviceError, or ValueError for an id too long for int().
    except ValueError as e:
        raise fail(field_at(where, "device"), str(e)) from None


def _check_attrs(n, sig: Signature, where: str) -> None:
    for name, spec in sig.attrs.items():
        if name not in n.attr:
            if spec.required:
                raise fail(field_at(where, "attr"), f"missing attr {name!r} ({spec.kind}), "
                                                    f"which {a_an(n.op)} requires ({sig.op}: "
                                                    f"{sig.text})")
            continue
        value = n.attr[name]
        if not has_kind(value, spec.kind):
            raise fail(field_at(where, "attr", name), f"{a_an(n.op)}'s attr {name!r} is "
                                                      f"{kind_text(spec.kind)}, got "
                                                      f"{describe_value(value)}")
        size = len(value) if isinstance(value, list) else value
        if spec.minimum is not None and size < spec.minimum:
            what = "length" if isinstance(value, list) else "value"
            raise fail(field_at(where, "attr", name), f"{a_an(n.op)}'s attr {name!r} has minimum "
                                                      f"{what} {spec.minimum}, got {size}")


def _check_input_count(n, sig: Signature, where: str) -> None:
    seen_control = None
    for j, spelling in enumerate(n.input):
        if spelling.startswith("^"):
            seen_control = j if seen_control is None else seen_control
        elif seen_control is not None:
            raise fail(field_at(where, "input", j), f"data input {short(spelling)} follows "
                       f"control input {short(n.input[seen_control])}; control inputs come "
                       "after the data inputs, as in TF")
    expected = sig.count(sig.inputs, n.attr)
    got = len(n.input) if seen_control is None else seen_control
    if got != expected:
        raise fail(field_at(where, "input"), f"{a_an(n.op)} takes {expected} data input"
                   f"{'s' if expected != 1 else ''} ({describe_args(sig.inputs)}), got {got}")


def _check_const(n, where: str) -> None:
    value, dtype = n.attr["value"], n.attr["dtype"]
    is_text = value.dtype.kind in "OSU"
    if (dtype.name == "string") != is_text or \
            (not is_text and np.dtype(dtype.numpy_dtype or object) != value.dtype):
        raise fail(field_at(where, "attr", "value"), f"the value is {value.dtype} but attr "
                                                     f"'dtype' says {dtype.name}")


def parse_input(spelling: str) -> tuple[str, int]:
    """"a" -> ("a", 0); "a:2" -> ("a", 2); "^a" -> ("a", -1)."""
    if spelling.startswith("^"):
        return spelling[1:], -1
    name, sep, index = spelling.rpartition(":")
    if sep and index.isdigit():
        return name, int(index)
    return spelling, 0
