"""Summary kernels (CPU only: their outputs are strings, which live in host memory). Each
returns a 0-d numpy object array holding the serialized summary (engine/summary/proto.py)."""

from __future__ import annotations

import numpy as np
import torch

from engine import errors
from engine.kernels.registry import kernel
from engine.ops.summary_ops import IMAGE_TYPES, REAL_TYPES
from engine.summary import proto

HISTOGRAM_BINS = 30          # as RunWriter.histogram, so both paths draw alike
_ZERO_THRESHOLD = 1e-6       # TF's kZeroThreshold for float image scaling
_ANY = {}


def _serialized(values: list[dict]) -> np.ndarray:
    return np.array(proto.serialize_values(values), dtype=object)


def _tags(tags: np.ndarray) -> list[str]:
    return [t.decode("utf-8", errors="replace") for t in tags.reshape(-1)]


def _host(x: torch.Tensor) -> np.ndarray:
    x = x.detach().cpu()
    if x.dtype == torch.bfloat16:
        x = x.float()
    return x.numpy()


def _shape_text(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


@kernel("ScalarSummary", CPU={"T": REAL_TYPES})
def scalar_summary(node, ctx):
    def run(tags, values):
        if tuple(tags.shape) != tuple(values.shape):
            first = _tags(tags)[0] if tags.size else ""
            raise errors.InvalidArgumentError(
                node, None, f"tags and values are not the same shape: "
                            f"{_shape_text(tags.shape)} != {_shape_text(values.shape)} "
                            f"(tag '{first}')")
        numbers = _host(values).astype(np.float64).reshape(-1).tolist()
        return _serialized([{"tag": t, "simple_value": v}
                            for t, v in zip(_tags(tags), numbers)])
    return run


@kernel("HistogramSummary", CPU={"T": REAL_TYPES})
def histogram_summary(node, ctx):
    def run(tag, values):
        array = _host(values).astype(np.float64).reshape(-1)
        if not np.isfinite(array).all():
            text = "Nan in summary histogram for" if np.isnan(array).any() else \
                "Infinity in Histogram for"
            raise errors.InvalidArgumentError(node, None, f"{text}: {node.name}")
        return _serialized([{"tag": _tags(tag)[0], "histo": histogram_fields(array)}])
    return run


def histogram_fields(array: np.ndarray) -> dict:
    """HistogramProto fields over HISTOGRAM_BINS equal buckets from min to max."""
    if array.size == 0:
        return proto.HistogramProto()._fields()
    counts, edges = np.histogram(array, bins=HISTOGRAM_BINS)
    return proto.HistogramProto(
        min=array.min(), max=array.max(), num=array.size, sum=array.sum(),
        sum_squares=array @ array, bucket_limit=edges[1:], bucket=counts)._fields()


@kernel("ImageSummary", CPU={"T": IMAGE_TYPES})
def image_summary(node, ctx):
    max_images = int(node.attr["max_images"])
    bad_color = np.asarray(node.attr["bad_color"], dtype=np.uint8).reshape(-1)

    def run(tag, tensor):
        shape = tuple(tensor.shape)
        if len(shape) != 4 or shape[3] not in (1, 3, 4):
            raise errors.InvalidArgumentError(
                node, None, f"Tensor must be 4-D with last dim 1, 3, or 4, not "
                            f"{_shape_text(shape)}")
        if bad_color.size < shape[3]:
            raise errors.InvalidArgumentError(
                node, None, f"bad_color has {bad_color.size} channels but the images have "
                            f"{shape[3]}")
        base = _tags(tag)[0]
        batch = _host(tensor[:max_images])
        values = []
        for i, pixels in enumerate(batch):
            name = f"{base}/image" if max_images == 1 else f"{base}/image/{i}"
            image = pixels if pixels.dtype == np.uint8 else \
                to_uint8_image(pixels, bad_color[:shape[3]])
            encoded = proto.Summary.Image.from_pixels(image)
            values.append(proto.Summary.Value(tag=name, image=encoded).to_json())
        return _serialized(values)
    return run


def to_uint8_image(pixels: np.ndarray, bad_color: np.ndarray) -> np.ndarray:
    """TF's NormalizeFloatImage: min and max over the finite pixels (in float32); all
    non-negative images scale by 255/max, others by 127/max|v| around 128; the affine map
    runs in the image's own type and truncates to uint8; non-finite pixels get bad_color."""
    finite = np.isfinite(pixels).all(axis=-1)
    good = pixels[finite].astype(np.float32)
    low = good.min() if good.size else np.float32(np.inf)
    high = good.max() if good.size else np.float32(-np.inf)
    if low < 0:
        top = max(abs(low), abs(high))
        scale = np.float32(0.0) if top < _ZERO_THRESHOLD else np.float32(127.0) / top
        offset = 128.0
    else:
        scale = np.float32(0.0) if high < _ZERO_THRESHOLD else np.float32(255.0) / high
        offset = 0.0
    kind = pixels.dtype
    with np.errstate(invalid="ignore", over="ignore"):     # non-finite pixels: replaced
        mapped = pixels * kind.type(scale) + kind.type(offset)
    out = np.where(finite[..., None], np.nan_to_num(mapped), 0).astype(np.uint8)
    out[~finite] = bad_color
    return out


@kernel("TensorSummaryV2", CPU=_ANY)
def tensor_summary(node, ctx):
    def run(tag, tensor, serialized_metadata):
        array = tensor.copy() if isinstance(tensor, np.ndarray) else _host(tensor).copy()
        metadata = proto.SummaryMetadata.FromString(serialized_metadata.reshape(-1)[0])
        value = proto.Summary.Value(tag=_tags(tag)[0], tensor=array, metadata=metadata)
        return _serialized([value.to_json()])
    return run


@kernel("MergeSummary", CPU=_ANY)
def merge_summary(node, ctx):
    def run(*inputs):
        merged, seen = [], set()
        for serialized in inputs:
            for value in proto.parse_values(serialized):
                tag = value.get("tag", "")
                if tag in seen:
                    raise errors.InvalidArgumentError(
                        node, None, f"Duplicate tag {tag} found in summary inputs")
                seen.add(tag)
                merged.append(value)
        return _serialized(merged)
    return run
