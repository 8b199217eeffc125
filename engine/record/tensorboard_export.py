"""export_tensorboard: a recorded run's scalars, histograms, text, images and graph written as
one TensorBoard event file (TFRecord framing, tensorboard's protos). Scalars are TF1's
simple_value, a float32: TensorBoard's fast data server shows no float64 scalar tensor."""

from __future__ import annotations

import heapq
import io
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.record.event_files import EVENT_FILE_MARK, INSTALL_HINT
from engine.record.reader import RunStoreError, open_run
from engine.record.schema import GraphRecord, ImageRecord

_FILE_VERSION = "brain.Event:2"     # what TF2 and torch write; TensorBoard then never purges
                                    # by out-of-order steps
_KIND_ORDER = {"scalar": 0, "histogram": 1, "text": 2, "image": 3}


@dataclass(frozen=True)
class ExportSummary:
    path: Path                  # the event file written
    scalars: int                # points, over every scalar tag
    histograms: int
    texts: int
    images: int
    graph_nodes: int            # 0 when the run recorded no graph


def export_tensorboard(run_dir: str | os.PathLike, out_dir: str | os.PathLike,
                       progress: Callable[[str], None] | None = None) -> ExportSummary:
    """Writes run_dir's summaries into a new event file in out_dir (created when absent;
    refused when it already holds event files, which TensorBoard would merge with these)."""
    try:
        from tensorboard.compat.proto import event_pb2

        from engine.record.tfrecord import write_record
    except ImportError as exc:
        raise RunStoreError(f"exporting to TensorBoard needs the {exc.name} package "
                            f"({INSTALL_HINT})") from exc
    reader = open_run(run_dir)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    existing = [p.name for p in out.iterdir() if EVENT_FILE_MARK in p.name]
    if existing:
        raise FileExistsError(f"{out} already holds event files ({existing[0]}); TensorBoard "
                              "would show them as one run with these: choose an empty folder")
    say = progress or (lambda _line: None)
    info = reader.info()
    started = info.started if info.started is not None else time.time()
    path = out / (f"events.out.tfevents.{int(started):010d}.{socket.gethostname()}."
                  f"{os.getpid()}.0")
    counts = dict.fromkeys(_KIND_ORDER, 0)
    graph = reader.graph()
    with open(path, "wb") as handle:
        write_record(handle, event_pb2.Event(wall_time=started,
                                             file_version=_FILE_VERSION).SerializeToString())
        if graph is not None:
            write_record(handle, _graph_event(graph).SerializeToString())
            say(f"graph: {len(graph.nodes)} nodes")
        for kind, _step, _wall, event in _merged(reader, say):
            write_record(handle, event.SerializeToString())
            counts[kind] += 1
    say(f"wrote {path}")
    return ExportSummary(path, counts["scalar"], counts["histogram"], counts["text"],
                         counts["image"], 0 if graph is None else len(graph.nodes))


def _merged(reader: Any, say: Callable[[str], None]) -> Iterator[tuple]:
    """Every summary as (kind, step, wall time, Event), in step order across tags."""
    streams = []
    for tag in reader.tags():
        steps, values = reader.scalars(tag)
        walls = reader.scalar_wall_times(tag)
        say(f"scalars {tag}: {len(steps)} points")
        streams.append(_scalar_events(tag, steps.tolist(), values.tolist(), walls.tolist()))
    for kind, tags, query, build in (
            ("histogram", reader.histogram_tags(), reader.histograms, _histogram_event),
            ("text", reader.text_tags(), reader.texts, _text_event),
            ("image", reader.image_tags(), reader.images, _image_event)):
        for tag in tags:
            records = query(tag)
            say(f"{kind}s {tag}: {len(records)}")
            streams.append(_record_events(kind, records, build))
    return heapq.merge(*streams, key=lambda item: (item[1], _KIND_ORDER[item[0]]))


def _scalar_events(tag: str, steps: list, values: list, walls: list) -> Iterator[tuple]:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    for step, value, wall in zip(steps, values, walls):
        summary_value = summary_pb2.Summary.Value(tag=tag, simple_value=value)
        yield ("scalar", step, wall, event_pb2.Event(
            wall_time=wall, step=step, summary=summary_pb2.Summary(value=[summary_value])))


def _record_events(kind: str, records: list, build: Callable) -> Iterator[tuple]:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    for i, record in enumerate(records):
        value = build(record, i == 0)
        yield (kind, record.step, record.wall_time, event_pb2.Event(
            wall_time=record.wall_time, step=record.step,
            summary=summary_pb2.Summary(value=[value])))


def _histogram_event(record: Any, _first: bool) -> Any:
    """TF1's HistogramProto, which keeps min, max, sum and count; TensorBoard draws bucket 0
    from min, so edges[0] survives when it is the minimum (RunWriter.histogram's are)."""
    from tensorboard.compat.proto import summary_pb2

    histo = summary_pb2.HistogramProto(
        min=record.min, max=record.max, num=record.count, sum=record.sum,
        bucket_limit=list(record.edges[1:]), bucket=list(record.counts))
    return summary_pb2.Summary.Value(tag=record.tag, histo=histo)


def _text_event(record: Any, first: bool) -> Any:
    """The text plugin's string tensor, its shape kept (TensorBoard draws a table)."""
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2

    tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING,
                                    string_val=[cell.encode("utf-8") for cell in record.cells])
    tensor.tensor_shape.SetInParent()
    tensor.tensor_shape.dim.extend(tensor_shape_pb2.TensorShapeProto.Dim(size=size)
                                   for size in record.shape)
    value = summary_pb2.Summary.Value(tag=record.tag, tensor=tensor)
    if first:
        value.metadata.CopyFrom(_plugin_metadata("text", summary_pb2.DATA_CLASS_TENSOR))
    return value


def _image_event(record: ImageRecord, _first: bool) -> Any:
    from PIL import Image
    from tensorboard.compat.proto import summary_pb2

    pixels = record.pixels[:, :, 0] if record.channels == 1 else record.pixels
    encoded = io.BytesIO()
    Image.fromarray(pixels).save(encoded, format="PNG")
    image = summary_pb2.Summary.Image(height=record.height, width=record.width,
                                      colorspace=record.channels,
                                      encoded_image_string=encoded.getvalue())
    return summary_pb2.Summary.Value(tag=record.tag, image=image)


def _plugin_metadata(plugin: str, data_class: int) -> Any:
    from tensorboard.compat.proto import summary_pb2

    return summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin),
        data_class=data_class)


def _graph_event(graph: GraphRecord) -> Any:
    """The graph as a GraphDef: names, ops, inputs, devices, plain attributes (the rest as
    JSON text) and output shapes, which TensorBoard's graph view reads."""
    from tensorboard.compat.proto import event_pb2, graph_pb2

    graph_def = graph_pb2.GraphDef()
    for record in graph.nodes:
        node = graph_def.node.add(name=record.name, op=record.op, input=list(record.inputs),
                                  device=record.device)
        for key, value in record.attrs.items():
            _set_attr(node.attr[key], key, value)
        if record.outputs:
            shapes = node.attr["_output_shapes"].list
            for spec in record.outputs:
                shape = shapes.shape.add()
                if spec.shape is None:
                    shape.unknown_rank = True
                for dim in spec.shape or ():
                    shape.dim.add(size=-1 if dim is None else dim)
    return event_pb2.Event(wall_time=graph.wall_time or time.time(),
                           graph_def=graph_def.SerializeToString())


def _set_attr(attr: Any, key: str, value: Any) -> None:
    dtype = _dtype_enum(value) if key in _TYPE_ATTRS else None
    if dtype is not None:
        attr.type = dtype
    elif isinstance(value, bool):
        attr.b = value
    elif isinstance(value, int) and -2**63 <= value < 2**63:
        attr.i = value
    elif isinstance(value, float):
        attr.f = value
    elif isinstance(value, str):
        attr.s = value.encode("utf-8")
    else:
        attr.s = json.dumps(value, default=str).encode("utf-8")


# Attributes that TensorFlow's ops declare as `type`: our graphs spell their values as the
# engine's dtype names ("float32"), a GraphDef as DataType enums.
_TYPE_ATTRS = frozenset({"T", "dtype", "DstT", "SrcT", "Tidx", "Tindices", "out_type"})


def _dtype_enum(value: Any) -> int | None:
    from tensorboard.compat.proto import types_pb2

    from engine.record.event_decode import DTYPE_ENUM_NAMES

    if not isinstance(value, str):
        return None
    ref = value.endswith("_ref")
    name = DTYPE_ENUM_NAMES.get(value[:-4] if ref else value)
    return None if name is None else types_pb2.DataType.Value(name + ("_REF" if ref else ""))
