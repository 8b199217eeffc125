"""tf.summary: the summary ops' builders (scalar, histogram, image, text, tensor_summary, merge,
merge_all), the Summary messages, and FileWriter / FileWriterCache, which write into the run
store."""

from engine.ops.summary_ops import (
    histogram,
    image,
    merge,
    merge_all,
    scalar,
    tensor_summary,
    text,
)
from engine.summary.proto import HistogramProto, SessionLog, Summary, SummaryMetadata
from engine.summary.writer import FileWriter, FileWriterCache

__all__ = ["FileWriter", "FileWriterCache", "HistogramProto", "SessionLog", "Summary",
           "SummaryMetadata", "histogram", "image", "merge", "merge_all", "scalar",
           "tensor_summary", "text"]
