"""tf.Summary (Value, Image), tf.HistogramProto, tf.SummaryMetadata and tf.SessionLog with TF's
field names, and the bytes summary ops output: our own UTF-8 JSON with arrays as base64 .npy
(read with allow_pickle=False), not TF's protobuf wire format."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from engine.summary import png

FORMAT = "engine.summary"
VERSION = 1
_NPY_MAGIC = b"\x93NUMPY"


class _Repeated(list):
    """A repeated message field: a list with protobuf's `add(**fields)`."""

    def __init__(self, factory: Callable, items: Iterable = ()):
        super().__init__(items)
        self._factory = factory

    def add(self, **fields):
        item = self._factory(**fields)
        self.append(item)
        return item


class HistogramProto:
    """TF's histogram: bucket i holds the values in (bucket_limit[i-1], bucket_limit[i]]; the
    first bucket starts at `min`."""

    def __init__(self, min: float = 0.0, max: float = 0.0, num: float = 0.0,  # noqa: A002
                 sum: float = 0.0, sum_squares: float = 0.0,  # noqa: A002 - TF's names
                 bucket_limit: Iterable[float] = (), bucket: Iterable[float] = ()):
        self.min, self.max, self.num = float(min), float(max), float(num)
        self.sum, self.sum_squares = float(sum), float(sum_squares)
        self.bucket_limit = [float(v) for v in bucket_limit]
        self.bucket = [float(v) for v in bucket]

    def edges_and_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """len(counts) + 1 bucket edges, the outer ones clamped to [min, max] (TF's last limit
        is DBL_MAX)."""
        counts = np.asarray(self.bucket, dtype=np.float64)
        limits = np.clip(np.asarray(self.bucket_limit, dtype=np.float64), self.min, self.max)
        if counts.size == 0 or limits.size != counts.size:
            raise ValueError(f"histogram has {counts.size} buckets but {limits.size} bucket "
                             "limits; they must match and be non-empty")
        return np.concatenate([[self.min], limits]), counts

    def _fields(self) -> dict:
        return {k: getattr(self, k) for k in ("min", "max", "num", "sum", "sum_squares",
                                               "bucket_limit", "bucket")}

    def __eq__(self, other) -> bool:
        return isinstance(other, HistogramProto) and self._fields() == other._fields()

    def __repr__(self) -> str:
        return f"HistogramProto(num={self.num:g}, min={self.min:g}, max={self.max:g})"


class SummaryMetadata:
    """Which plugin reads a tensor value (`text` for tf.summary.text)."""

    class PluginData:
        def __init__(self, plugin_name: str = "", content: bytes = b""):
            self.plugin_name = plugin_name
            self.content = content

    def __init__(self, display_name: str = "", summary_description: str = "",
                 plugin_data: SummaryMetadata.PluginData | None = None):
        self.display_name = display_name
        self.summary_description = summary_description
        self.plugin_data = plugin_data or SummaryMetadata.PluginData()

    def to_json(self) -> dict:
        return {"display_name": self.display_name,
                "summary_description": self.summary_description,
                "plugin_name": self.plugin_data.plugin_name,
                "plugin_content": _b64(self.plugin_data.content)}

    @classmethod
    def from_json(cls, doc: dict) -> SummaryMetadata:
        return cls(doc.get("display_name", ""), doc.get("summary_description", ""),
                   cls.PluginData(doc.get("plugin_name", ""),
                                  _unb64(doc.get("plugin_content", ""))))

    def SerializeToString(self) -> bytes:  # noqa: N802 - protobuf's spelling
        return json.dumps(self.to_json()).encode("utf-8")

    @classmethod
    def FromString(cls, data: bytes) -> SummaryMetadata:  # noqa: N802
        return cls.from_json(json.loads(data.decode("utf-8")) if data else {})


class _Image:
    """Summary.Image. Our image ops put the uint8 pixels (height, width, colorspace) in
    `encoded_image_string` as .npy bytes; a hand-built summary may put PNG bytes there (as
    TF1 scripts that log plots do). `pixels()` reads either."""

    def __init__(self, height: int = 0, width: int = 0, colorspace: int = 0,
                 encoded_image_string: bytes = b""):
        self.height, self.width, self.colorspace = int(height), int(width), int(colorspace)
        self.encoded_image_string = bytes(encoded_image_string)

    @classmethod
    def from_pixels(cls, pixels: np.ndarray) -> _Image:
        height, width, channels = pixels.shape
        return cls(height, width, channels, npy_bytes(np.ascontiguousarray(pixels, np.uint8)))

    def pixels(self) -> np.ndarray:
        data = self.encoded_image_string
        if data.startswith(png.SIGNATURE):
            return png.decode_png(data)
        if not data.startswith(_NPY_MAGIC):
            raise ValueError("Summary.Image.encoded_image_string is neither PNG nor the .npy "
                             "pixels our image ops write (JPEG and GIF are not decoded)")
        array = from_npy_bytes(data)
        if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] not in (1, 3, 4):
            raise ValueError(f"Summary.Image holds a {array.dtype} array of shape "
                             f"{array.shape}; expected uint8 (height, width, 1|3|4)")
        return array

    def __eq__(self, other) -> bool:
        return isinstance(other, _Image) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"Image(height={self.height}, width={self.width}, colorspace={self.colorspace})"


class _Value:
    """Summary.Value: a tag and exactly one of simple_value, histo, image, tensor."""

    _KINDS = ("simple_value", "histo", "image", "tensor")

    def __init__(self, tag: str = "", simple_value: float | None = None,
                 histo: HistogramProto | None = None, image: _Image | None = None,
                 tensor: np.ndarray | None = None, metadata: SummaryMetadata | None = None):
        self.tag = tag
        self.simple_value = None if simple_value is None else float(simple_value)
        self.histo = histo
        self.image = image
        self.tensor = None if tensor is None else np.asarray(tensor)
        self.metadata = metadata

    def WhichOneof(self, oneof: str) -> str | None:  # noqa: N802 - protobuf's spelling
        if oneof != "value":
            raise ValueError(f"Summary.Value has no oneof named {oneof!r}; it has 'value'")
        return next((k for k in self._KINDS if getattr(self, k) is not None), None)

    def HasField(self, name: str) -> bool:  # noqa: N802
        return getattr(self, name, None) is not None

    def to_json(self) -> dict:
        kind = self.WhichOneof("value")
        doc: dict[str, Any] = {"tag": self.tag}
        if kind == "simple_value":
            doc["simple_value"] = self.simple_value
        elif kind == "histo":
            doc["histo"] = self.histo._fields()
        elif kind == "image":
            image = self.image
            doc["image"] = {"height": image.height, "width": image.width,
                            "colorspace": image.colorspace,
                            "encoded_image_string": _b64(image.encoded_image_string)}
        elif kind == "tensor":
            doc["tensor"] = encode_array(self.tensor)
        if self.metadata is not None:
            doc["metadata"] = self.metadata.to_json()
        return doc

    @classmethod
    def from_json(cls, doc: dict) -> _Value:
        value = cls(tag=doc.get("tag", ""))
        if "simple_value" in doc:
            value.simple_value = float(doc["simple_value"])
        elif "histo" in doc:
            value.histo = HistogramProto(**doc["histo"])
        elif "image" in doc:
            image = doc["image"]
            value.image = _Image(image["height"], image["width"], image["colorspace"],
                                 _unb64(image["encoded_image_string"]))
        elif "tensor" in doc:
            value.tensor = decode_array(doc["tensor"])
        if "metadata" in doc:
            value.metadata = SummaryMetadata.from_json(doc["metadata"])
        return value

    def __eq__(self, other) -> bool:
        if not isinstance(other, _Value):
            return False
        mine, theirs = self.to_json(), other.to_json()
        return mine == theirs

    def __repr__(self) -> str:
        kind = self.WhichOneof("value")
        return f"Value(tag={self.tag!r}, {kind}={getattr(self, kind) if kind else None!r})"


class Summary:
    """tf.Summary: `Summary(value=[Summary.Value(tag="loss", simple_value=0.5)])` or
    `summary.value.add(tag=..., simple_value=...)`; SerializeToString / ParseFromString use
    this engine's encoding (FORMAT), which is what the summary ops output."""

    Value = _Value
    Image = _Image

    def __init__(self, value: Iterable[_Value] | None = None):
        self.value = _Repeated(_Value, value or ())

    def SerializeToString(self) -> bytes:  # noqa: N802 - protobuf's spelling
        return serialize_values([v.to_json() for v in self.value])

    def ParseFromString(self, data: bytes) -> None:  # noqa: N802
        self.value = _Repeated(_Value, (_Value.from_json(v) for v in parse_values(data)))

    @classmethod
    def FromString(cls, data: bytes) -> Summary:  # noqa: N802
        summary = cls()
        summary.ParseFromString(data)
        return summary

    def __eq__(self, other) -> bool:
        return isinstance(other, Summary) and list(self.value) == list(other.value)

    def __repr__(self) -> str:
        return f"Summary(value={list(self.value)!r})"


class SessionLog:
    """tf.SessionLog: START marks a (re)start, STOP a clean end, CHECKPOINT a saved model."""

    STATUS_UNSPECIFIED, START, STOP, CHECKPOINT = 0, 1, 2, 3
    _NAMES = {0: "STATUS_UNSPECIFIED", 1: "START", 2: "STOP", 3: "CHECKPOINT"}

    def __init__(self, status: int = 0, checkpoint_path: str = "", msg: str = ""):
        if status not in self._NAMES:
            raise ValueError(f"SessionLog status must be one of START (1), STOP (2), "
                             f"CHECKPOINT (3), got {status!r}")
        self.status = status
        self.checkpoint_path = checkpoint_path
        self.msg = msg

    @property
    def status_name(self) -> str:
        return self._NAMES[self.status]

    def __repr__(self) -> str:
        return f"SessionLog(status={self.status_name})"


# -- the serialized form ----------------------------------------------------------------------

def serialize_values(values: list[dict]) -> bytes:
    return json.dumps({"format": FORMAT, "version": VERSION, "value": values},
                      separators=(",", ":")).encode("utf-8")


def parse_values(data) -> list[dict]:
    """The value dicts of one serialized summary (arrays still encoded)."""
    if isinstance(data, np.ndarray) and data.dtype == object and data.ndim == 0:
        data = data[()]
    if isinstance(data, str):
        data = data.encode("utf-8")
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"a serialized summary is bytes, got {type(data).__name__}")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        doc = None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError("not a summary this engine serialized (expected the output of a "
                         "tf.summary op or Summary.SerializeToString(); TensorFlow's protobuf "
                         "summaries are not read)")
    if doc.get("version") != VERSION:
        raise ValueError(f"summary format version {doc.get('version')!r}; this build reads "
                         f"{VERSION}")
    return list(doc["value"])


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def from_npy_bytes(data: bytes) -> np.ndarray:
    return np.load(io.BytesIO(data), allow_pickle=False)


def encode_array(array: np.ndarray) -> dict:
    if array.dtype == object:     # a string tensor: each element base64
        return {"dtype": "string", "shape": list(array.shape),
                "strings": [_b64(v) for v in array.reshape(-1)]}
    return {"npy": _b64(npy_bytes(array))}


def decode_array(doc: dict) -> np.ndarray:
    if doc.get("dtype") == "string":
        items = [_unb64(v) for v in doc["strings"]]
        array = np.empty(len(items), dtype=object)
        array[:] = items
        return array.reshape(doc["shape"])
    return from_npy_bytes(_unb64(doc["npy"]))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text)
