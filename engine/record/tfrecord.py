"""TFRecord framing, the container of TensorBoard event files: each record is a little-endian
uint64 length, its masked CRC-32C, the bytes, and their masked CRC-32C. Reading stops at the
first record that is truncated or fails a check (TensorFlow's loader does the same)."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from crc32c import crc32c

_HEADER = struct.Struct("<QI")     # length, masked crc of the length's 8 bytes
_CRC = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF


def masked_crc32c(data: bytes | memoryview) -> int:
    """TFRecord's CRC: CRC-32C rotated right by 15 bits plus a constant, so a CRC of data
    that holds CRCs stays well spread."""
    return _masked(crc32c(data))


def _masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & _U32


@dataclass(frozen=True)
class FramingProblem:
    """Where reading a record file stopped before its end, and why."""
    offset: int                # byte offset of the record that could not be read
    size: int                  # the file's size in bytes
    records_read: int          # whole records before it
    truncated: bool            # the file ends inside the record (it may still be written)
    reason: str                # in words: "truncated in its data", "fails its data CRC-32C"


class RecordFile:
    """The records of one TFRecord file: iterate for (offset, record bytes); afterwards
    `problem` says where and why reading stopped early (None when every byte was read).
    The file is read once, whole, when the object is made."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        self.problem: FramingProblem | None = None
        self.records_read = 0
        with open(self.path, "rb") as handle:
            self._view = memoryview(handle.read())
        self.size = len(self._view)

    def __iter__(self) -> Iterator[tuple[int, memoryview]]:
        view, size, offset = self._view, self.size, 0
        header, data_crc = _HEADER.unpack_from, _CRC.unpack_from
        # The common case inline (a few hundred thousand small records per file); any
        # failing test falls through to _check, which says what is wrong.
        while offset < size:
            start = offset + _HEADER.size
            if start <= size:
                length, length_crc = header(view, offset)
                end = start + length
                if (end + _CRC.size <= size
                        and _masked(crc32c(view[offset:offset + 8])) == length_crc
                        and _masked(crc32c(view[start:end])) == data_crc(view, end)[0]):
                    yield offset, view[start:end]
                    self.records_read += 1
                    offset = end + _CRC.size
                    continue
            self.problem = self._check(view, offset)
            return

    def _check(self, view: memoryview, offset: int) -> FramingProblem:
        remaining = self.size - offset
        if remaining < _HEADER.size:
            return self._stop(offset, True, "truncated in its length header")
        length, length_crc = _HEADER.unpack_from(view, offset)
        if masked_crc32c(view[offset:offset + 8]) != length_crc:
            return self._stop(offset, False, "fails its length CRC-32C (not a record, or "
                                             "overwritten)")
        if remaining < _HEADER.size + length + _CRC.size:
            part = "data" if remaining < _HEADER.size + length else "data CRC"
            return self._stop(offset, True, f"truncated in its {part} ({length} data bytes "
                                            f"announced, the file ends {remaining} bytes on)")
        start = offset + _HEADER.size
        (data_crc,) = _CRC.unpack_from(view, start + length)
        if masked_crc32c(view[start:start + length]) != data_crc:
            return self._stop(offset, False, "fails its data CRC-32C")
        raise AssertionError(f"{self.path}: record at byte {offset} passed every check")

    def _stop(self, offset: int, truncated: bool, reason: str) -> FramingProblem:
        return FramingProblem(offset, self.size, self.records_read, truncated, reason)


def write_record(handle: BinaryIO, data: bytes) -> None:
    """Appends one record to an open binary file."""
    header = struct.pack("<Q", len(data))
    handle.write(header + _CRC.pack(masked_crc32c(header)) + data
                 + _CRC.pack(masked_crc32c(data)))
