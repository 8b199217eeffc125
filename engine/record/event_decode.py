"""Decoding TensorBoard's protos (tensorboard.compat.proto) into run store records: summary
values of the scalars, histograms, images and text plugins in both their TF1 form
(simple_value, histo, image) and their TF2 form (a tensor tagged with the plugin's name), and
GraphDefs into GraphRecord. Images stay encoded until someone asks for their pixels."""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.record.schema import GraphRecord, HistogramRecord, NodeRecord, TensorSpec, TextRecord

SCALARS, HISTOGRAMS, IMAGES, TEXT = "scalars", "histograms", "images", "text"
MAX_IMAGE_PIXELS = 64 << 20        # a larger (or bomb-sized) encoded image is refused
_TENSOR_ATTR_CHARS = 200

# TensorFlow's DataType names (types_pb2) as the engine spells dtypes.
_DTYPES = {"DT_FLOAT": "float32", "DT_DOUBLE": "float64", "DT_HALF": "float16",
           "DT_BFLOAT16": "bfloat16", "DT_INT8": "int8", "DT_INT16": "int16",
           "DT_INT32": "int32", "DT_INT64": "int64", "DT_UINT8": "uint8", "DT_UINT16": "uint16",
           "DT_UINT32": "uint32", "DT_UINT64": "uint64", "DT_BOOL": "bool",
           "DT_STRING": "string", "DT_COMPLEX64": "complex64", "DT_COMPLEX128": "complex128",
           "DT_QINT8": "qint8", "DT_QUINT8": "quint8", "DT_QINT32": "qint32",
           "DT_RESOURCE": "resource", "DT_VARIANT": "variant"}

DTYPE_ENUM_NAMES = {engine: enum for enum, engine in _DTYPES.items()}


class DecodeError(ValueError):
    """A summary value or graph that parsed as a proto but does not hold what its plugin
    promises (a histogram tensor that is not k x 3, an image that does not decode)."""


@dataclass(frozen=True, eq=False)
class EncodedImage:
    """An image as the event file holds it (PNG, JPEG or GIF bytes), decoded on demand."""
    tag: str
    step: int
    wall_time: float
    data: bytes


def dtype_name(enum_value: int) -> str:
    from tensorboard.compat.proto import types_pb2

    try:
        name = types_pb2.DataType.Name(enum_value)
    except ValueError:
        return f"dtype_{enum_value}"
    ref = name.endswith("_REF")
    base = name[:-4] if ref else name
    return _DTYPES.get(base, base.lower().removeprefix("dt_")) + ("_ref" if ref else "")


def tensor_array(tensor: Any) -> np.ndarray:
    """A TensorProto as a numpy array, by tensorboard's own converter (strings as bytes)."""
    from tensorboard.util import tensor_util

    try:
        return tensor_util.make_ndarray(tensor)
    except (ValueError, TypeError) as exc:
        raise DecodeError(f"tensor does not decode ({exc})") from exc


def tensor_scalar(tensor: Any) -> float:
    # The TF2 writers put one float or double in the repeated field; others pack the bytes.
    if len(tensor.float_val) == 1:
        return float(tensor.float_val[0])
    if len(tensor.double_val) == 1:
        return float(tensor.double_val[0])
    array = tensor_array(tensor)
    if array.size != 1 or array.dtype.kind not in "fiub":
        raise DecodeError(f"a scalars-plugin tensor must hold one number, got "
                          f"{array.dtype} {list(array.shape)}")
    return float(array.reshape(()))


def legacy_histogram(tag: str, step: int, wall_time: float, histo: Any) -> HistogramRecord:
    """TF1's HistogramProto: bucket_limit holds right edges (the last is often DBL_MAX);
    TensorBoard draws bucket 0 from min and the last bucket to max, and so do we."""
    limits = list(histo.bucket_limit)
    counts = tuple(float(c) for c in histo.bucket)
    if not counts or len(limits) != len(counts):
        raise DecodeError(f"histogram {tag!r} at step {step}: {len(limits)} bucket limits "
                          f"for {len(counts)} buckets")
    edges = (histo.min, *limits[:-1], histo.max)
    return HistogramRecord(tag, step, wall_time, tuple(float(e) for e in edges), counts,
                           float(histo.min), float(histo.max), float(histo.sum), int(histo.num))


def tensor_histogram(tag: str, step: int, wall_time: float, tensor: Any) -> HistogramRecord:
    """TF2's histogram: a k x 3 tensor of (left edge, right edge, count). It keeps no min,
    max or sum: min and max are the outer edges, sum the bucket centres times their counts
    (as RunWriter.histogram_from_buckets does)."""
    array = tensor_array(tensor)
    if array.ndim != 2 or array.shape[1] != 3 or array.shape[0] == 0:
        raise DecodeError(f"histogram {tag!r} at step {step}: a histograms-plugin tensor "
                          f"is k x 3 with k >= 1, got shape {list(array.shape)}")
    buckets = array.astype(np.float64)
    edges = np.append(buckets[:, 0], buckets[-1, 1])
    counts = buckets[:, 2]
    centres = (buckets[:, 0] + buckets[:, 1]) / 2
    return HistogramRecord(tag, step, wall_time, tuple(edges.tolist()), tuple(counts.tolist()),
                           float(edges[0]), float(edges[-1]), float(centres @ counts),
                           int(counts.sum()))


def tensor_images(tag: str, step: int, wall_time: float, tensor: Any) -> list[EncodedImage]:
    """TF2's image summary: a string vector [width, height, image 0, image 1, ...]. One
    image keeps the tag; several become tag/0, tag/1, ... (TF1's tag/image/N spelling)."""
    array = tensor_array(tensor)
    if array.ndim != 1 or array.shape[0] < 3 or array.dtype != object:
        raise DecodeError(f"image {tag!r} at step {step}: an images-plugin tensor is a "
                          f"string vector [width, height, image, ...], got {array.dtype} "
                          f"{list(array.shape)}")
    encoded = list(array[2:])
    if len(encoded) == 1:
        return [EncodedImage(tag, step, wall_time, bytes(encoded[0]))]
    return [EncodedImage(f"{tag}/{i}", step, wall_time, bytes(data))
            for i, data in enumerate(encoded)]


def tensor_text(tag: str, step: int, wall_time: float, tensor: Any) -> TextRecord:
    """The text plugin's string tensor with its shape: [1] from torch's add_text and
    tensorboardX, any shape from tf.summary.text (TensorBoard draws all but a scalar as a
    table)."""
    array = tensor_array(tensor)
    if array.dtype != object:
        raise DecodeError(f"text {tag!r} at step {step}: a text-plugin tensor holds strings, "
                          f"got {array.dtype}")
    cells = tuple(_utf8(value) for value in array.reshape(-1).tolist())
    return TextRecord(tag, step, wall_time, cells, tuple(int(d) for d in array.shape))


def _utf8(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def decode_image(image: EncodedImage) -> np.ndarray:
    """uint8 pixels (height, width, channels) with 1, 3 or 4 channels."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(image.data)) as opened:
            width, height = opened.size
            if width * height > MAX_IMAGE_PIXELS:
                raise DecodeError(f"image {image.tag!r} at step {image.step}: "
                                  f"{width}x{height} pixels, more than this reader decodes")
            pixels = np.asarray(opened.convert(_pil_mode(opened)), dtype=np.uint8)
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError, ValueError) as exc:
        if isinstance(exc, DecodeError):
            raise
        raise DecodeError(f"image {image.tag!r} at step {image.step} does not decode "
                          f"({exc})") from exc
    return pixels.reshape(pixels.shape[0], pixels.shape[1], -1)


def _pil_mode(opened: Any) -> str:
    if opened.mode in ("L", "RGB", "RGBA"):
        return opened.mode
    if opened.mode in ("1", "I", "I;16", "F"):
        return "L"
    if opened.mode in ("LA", "PA") or "transparency" in opened.info:
        return "RGBA"
    return "RGB"


def graph_record(graph_def: Any, seq: int, wall_time: float) -> GraphRecord:
    """A GraphDef (TensorFlow's, or torch's add_graph) as version 0 of the run's graph."""
    return GraphRecord(0, tuple(_node_record(node) for node in graph_def.node), seq, wall_time)


def _node_record(node: Any) -> NodeRecord:
    attrs = {key: _attr_value(node.attr[key]) for key in sorted(node.attr)}
    shapes = attrs.pop("_output_shapes", None)
    dtype = attrs.get("T", attrs.get("dtype", ""))
    outputs: tuple[TensorSpec, ...] = ()
    if isinstance(shapes, list):
        outputs = tuple(TensorSpec(dtype if isinstance(dtype, str) else "",
                                   None if shape is None else tuple(shape))
                        for shape in shapes)
    return NodeRecord(node.name, node.op, tuple(node.input), node.device, attrs, outputs, ())


def _attr_value(value: Any) -> Any:
    """An AttrValue as a JSON-safe value (tensors summarised, never expanded)."""
    kind = value.WhichOneof("value")
    if kind == "list":
        items = value.list
        for field in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
            found = getattr(items, field)
            if len(found):
                return [_scalar_attr(field, item) for item in found]
        return []
    if kind is None:
        return None
    return _scalar_attr(kind, getattr(value, kind))


def _scalar_attr(kind: str, item: Any) -> Any:
    if kind == "s":
        return item.decode("utf-8", "replace")
    if kind == "f":
        return float(item) if math.isfinite(item) else str(item)
    if kind in ("i", "b"):
        return item
    if kind == "type":
        return dtype_name(item)
    if kind == "shape":
        return None if item.unknown_rank else [None if d.size < 0 else d.size
                                                   for d in item.dim]
    if kind == "tensor":
        shape = [d.size for d in item.tensor_shape.dim]
        return f"tensor<{dtype_name(item.dtype)}>{json.dumps(shape)}"[:_TENSOR_ATTR_CHARS]
    if kind == "func":
        return item.name
    if kind == "placeholder":
        return f"${item}"
    return str(item)[:_TENSOR_ATTR_CHARS]
