"""Device colours: a stable colour per device name from colour-blind-safe palettes (Okabe-Ito
and Paul Tol's: CPUs in blues, GPUs in orange, green, vermillion, purple), short labels,
legend entries that mark virtual GPUs, and the categorical and sequential palettes the graph's
other colour modes use."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from engine.record.schema import DeviceRecord

CPU_COLORS = ("#0072b2", "#56b4e9", "#332288", "#88ccee")
GPU_COLORS = (
    "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#f0e442", "#117733", "#882255", "#999933",
)
OTHER_COLORS = ("#44aa99", "#aa4499", "#ddcc77", "#661100")
# Op types (most common first), then grey for the rest: Paul Tol's "muted" scheme.
CATEGORY_COLORS = (
    "#332288", "#88ccee", "#44aa99", "#117733", "#999933", "#ddcc77", "#cc6677", "#882255",
    "#aa4499",
)
OTHER_CATEGORY_COLOR = "#dddddd"
# Compute time and bytes, low to high: viridis, readable with every common colour blindness.
SEQUENTIAL_COLORS = ("#440154", "#414487", "#2a788e", "#22a884", "#7ad151", "#fde725")
UNPLACED_COLOR = "#b5b5b5"
UNPLACED_LABEL = "unplaced"
VIRTUAL_OUTLINE = "#333333"

_COMPONENT = re.compile(r"/(job|replica|task|device|cpu|gpu|CPU|GPU):([^/]*)")


@dataclass(frozen=True)
class DeviceName:
    job: str
    task: int
    device_type: str
    index: int


@dataclass(frozen=True)
class LegendEntry:
    device: str                # full name ("" for unplaced)
    label: str
    color: str
    virtual: bool


def parse_device(name: str) -> DeviceName:
    """Read job, task, type and index from a full or legacy name; missing parts default."""
    fields = {"job": "", "task": "0", "device": ""}
    for key, value in _COMPONENT.findall(name):
        if key.lower() in ("cpu", "gpu"):
            fields["device"] = f"{key.upper()}:{value}"
        else:
            fields[key] = value
    device_type, _, index = fields["device"].partition(":")
    return DeviceName(
        job=fields["job"],
        task=int(fields["task"]) if fields["task"].isdigit() else 0,
        device_type=device_type.upper(),
        index=int(index) if index.isdigit() else 0,
    )


def _job_offset(job: str) -> int:
    """Local devices keep the base colours; other jobs shift by a stable hash of the name."""
    return 0 if job in ("", "localhost") else zlib.crc32(job.encode())


def device_color(name: str) -> str:
    if not name:
        return UNPLACED_COLOR
    device = parse_device(name)
    slot = device.index + 3 * device.task + _job_offset(device.job)
    if device.device_type == "CPU":
        return CPU_COLORS[slot % len(CPU_COLORS)]
    if device.device_type == "GPU":
        return GPU_COLORS[slot % len(GPU_COLORS)]
    return OTHER_COLORS[(slot + zlib.crc32(device.device_type.encode())) % len(OTHER_COLORS)]


def device_label(name: str, virtual: bool = False) -> str:
    """"GPU:1" for local devices, "worker/1 GPU:0" for a cluster task."""
    if not name:
        return UNPLACED_LABEL
    device = parse_device(name)
    if not device.device_type:
        return name
    short = f"{device.device_type}:{device.index}"
    if device.job not in ("", "localhost"):
        short = f"{device.job}/{device.task} {short}"
    return f"{short} (virtual)" if virtual else short


def legend_entries(
    names: Iterable[str], records: Iterable[DeviceRecord] = ()
) -> list[LegendEntry]:
    """One entry per distinct name, CPUs first, then by task and index; unplaced last."""
    virtual = {record.name for record in records if record.virtual}

    def order(name: str) -> tuple:
        if not name:
            return (1,)
        device = parse_device(name)
        return (0, device.job, device.task, device.device_type != "CPU", device.index, name)

    return [
        LegendEntry(name, device_label(name, name in virtual), device_color(name), name in virtual)
        for name in sorted(set(names), key=order)
    ]


def text_color(background: str) -> str:
    """Black or white, whichever reads better on `background` ("#rrggbb")."""
    red, green, blue = (int(background[i:i + 2], 16) for i in (1, 3, 5))
    return "#111111" if 0.299 * red + 0.587 * green + 0.114 * blue > 150 else "#ffffff"
