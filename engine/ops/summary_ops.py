"""Summary ops (ScalarSummary, HistogramSummary, ImageSummary, TensorSummaryV2, MergeSummary),
each outputting a string scalar that holds a serialized summary, as TF1's do, and their
tf.summary builders (scalar ... merge_all), which engine/summary re-exports."""

from __future__ import annotations

import contextlib
import logging
import re

import numpy as np

from engine import dtypes
from engine.ops.core import check_dtype_allowed, convert_to_tensor, graph_of, make_constant
from engine.ops.registry import register_op
from engine.ops.variables import GraphKeys
from engine.shapes import TensorShape

# No top-level tf.* names: the builders are reached as tf.summary.* (engine/summary).
__all__: list[str] = []

logger = logging.getLogger("engine")

# TF's allowed types for ScalarSummary / HistogramSummary `T`, in TF's order.
REAL_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16,
              dtypes.int8, dtypes.int64, dtypes.bfloat16, dtypes.uint16, dtypes.float16,
              dtypes.uint32, dtypes.uint64)
IMAGE_TYPES = (dtypes.uint8, dtypes.float32, dtypes.float16, dtypes.float64)
BAD_COLOR = np.array([255, 0, 0, 255], dtype=np.uint8)     # TF's default: opaque red
TEXT_PLUGIN = "text"
_ILLEGAL_TAG_CHARS = re.compile(r"[^-/\w\.]")


def _scalar_string(op):
    return [(dtypes.string, TensorShape([]))]


def _check_strings(op, slots, what: str) -> None:
    for slot in slots:
        t = op.inputs[slot]
        if not t.dtype.base_dtype.is_string:
            raise TypeError(f"Input '{what}' of '{op.type}' Op ('{op.name}') has type "
                            f"{t.dtype.base_dtype.name} that does not match expected type of "
                            "string.")


def _real_summary_infer(op):
    _check_strings(op, [0], "tags" if op.type == "ScalarSummary" else "tag")
    check_dtype_allowed(op, op.inputs[1].dtype, REAL_TYPES, arg="values")
    return _scalar_string(op)


def _image_summary_infer(op):
    _check_strings(op, [0], "tag")
    check_dtype_allowed(op, op.inputs[1].dtype, IMAGE_TYPES, arg="tensor")
    return _scalar_string(op)


def _tensor_summary_infer(op):
    _check_strings(op, [0, 2], "tag")
    return _scalar_string(op)


def _merge_summary_infer(op):
    _check_strings(op, range(len(op.inputs)), "inputs")
    return _scalar_string(op)


register_op("ScalarSummary", _real_summary_infer)
register_op("HistogramSummary", _real_summary_infer)
register_op("ImageSummary", _image_summary_infer)
register_op("TensorSummaryV2", _tensor_summary_infer)
register_op("MergeSummary", _merge_summary_infer)


# -- tf.summary builders --------------------------------------------------------------------

def clean_tag(name: str | None) -> str | None:
    """TF's rule: characters other than letters, digits, `_ - / .` become `_`; a leading `/`
    is dropped."""
    if name is None:
        return None
    cleaned = _ILLEGAL_TAG_CHARS.sub("_", name).lstrip("/")
    if cleaned != name:
        logger.info("Summary name %s is illegal; using %s instead.", name, cleaned)
    return cleaned


@contextlib.contextmanager
def summary_scope(name: str, family: str | None = None, values=None):
    """Yields (tag, scope): the op is named by the unique scope, and the tag is that scope
    (prefixed by the family, so it shows in the family's group)."""
    name, family = clean_tag(name), clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    graph = graph_of(*(values or ()))
    with graph.as_default(), graph.name_scope(base) as scope:
        plain = scope.rstrip("/")
        yield (plain if family is None else f"{family}/{plain}"), scope


def _collect(value, collections, default) -> None:
    for key in (collections if collections is not None else default):
        value.graph.add_to_collection(key, value)


def _summary_op(op_type: str, name: str, tensor, collections, family, make_inputs, attrs):
    with summary_scope(name, family, [tensor]) as (tag, scope):
        inputs = make_inputs(tag)
        op = graph_of(*inputs).create_op(op_type, inputs, attrs(inputs), name=scope)
    value = op.outputs[0]
    _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def scalar(name: str, tensor, collections=None, family=None):
    """tf.summary.scalar: a ScalarSummary whose tag is the op's scope name."""
    def inputs(tag):
        return [make_constant(tag, name="tags"), convert_to_tensor(tensor)]
    return _summary_op("ScalarSummary", name, tensor, collections, family, inputs,
                       lambda ins: {"T": ins[1].dtype.base_dtype})


def histogram(name: str, values, collections=None, family=None):
    def inputs(tag):
        return [make_constant(tag, name="tag"), convert_to_tensor(values)]
    return _summary_op("HistogramSummary", name, values, collections, family, inputs,
                       lambda ins: {"T": ins[1].dtype.base_dtype})


def image(name: str, tensor, max_outputs: int = 3, collections=None, family=None):
    """tf.summary.image: up to max_outputs images of a [batch, height, width, 1|3|4] tensor;
    float images are rescaled to uint8 per image as TF does."""
    if int(max_outputs) < 1:
        raise ValueError(f"Value for attr 'max_images' of {max_outputs} must be at least "
                         "minimum 1")

    def inputs(tag):
        return [make_constant(tag, name="tag"), convert_to_tensor(tensor)]
    return _summary_op("ImageSummary", name, tensor, collections, family, inputs,
                       lambda ins: {"T": ins[1].dtype.base_dtype,
                                    "max_images": int(max_outputs),
                                    "bad_color": BAD_COLOR.copy()})


def tensor_summary(name: str, tensor, summary_description: str | None = None,
                   collections=None, summary_metadata=None, family=None,
                   display_name: str | None = None):
    """tf.summary.tensor_summary: the whole tensor; the run store keeps its statistics."""
    from engine.summary.proto import SummaryMetadata
    metadata = summary_metadata or SummaryMetadata()
    if display_name is not None:
        metadata.display_name = display_name
    if summary_description is not None:
        metadata.summary_description = summary_description
    return _tensor_summary_v2(name, tensor, metadata, collections, family)


def text(name: str, tensor, collections=None):
    """tf.summary.text: a string tensor, shown as text."""
    tensor = convert_to_tensor(tensor)
    if not tensor.dtype.base_dtype.is_string:
        raise ValueError(f"Expected tensor {tensor.name} to have dtype string, got "
                         f"{tensor.dtype}")
    from engine.summary.proto import SummaryMetadata
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(TEXT_PLUGIN))
    return _tensor_summary_v2(name, tensor, metadata, collections, None)


def _tensor_summary_v2(name, tensor, metadata, collections, family):
    def inputs(tag):
        return [make_constant(tag, name="tag"), convert_to_tensor(tensor),
                make_constant(metadata.SerializeToString(),
                              name="serialized_summary_metadata")]
    return _summary_op("TensorSummaryV2", name, tensor, collections, family, inputs,
                       lambda ins: {"T": ins[1].dtype.base_dtype})


def merge(inputs, collections=None, name: str | None = None):
    """tf.summary.merge: one summary holding every value of `inputs` (tags must differ)."""
    tensors = [convert_to_tensor(t) for t in inputs]
    graph = graph_of(tensors)
    with graph.as_default(), graph.name_scope(name or "Merge"):
        op = graph.create_op("MergeSummary", tensors, {"N": len(tensors)},
                             name=name or "MergeSummary")
    value = op.outputs[0]
    _collect(value, collections, [])
    return value


def merge_all(key: str = GraphKeys.SUMMARIES, scope: str | None = None,
              name: str | None = None):
    """Merges the summaries in collection `key` (None when there are none, as in TF)."""
    from engine.graph import get_default_graph
    found = get_default_graph().get_collection(key, scope)
    if not found:
        return None
    return merge(found, name=name)
