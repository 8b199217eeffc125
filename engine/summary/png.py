"""Reads the PNG payloads of hand-built image summaries (tf.Summary.Image(encoded_image_string=
png)): 8- or 16-bit non-interlaced gray, RGB, palette, gray+alpha and RGBA images become
uint8 (height, width, 1|3|4) arrays."""

from __future__ import annotations

import struct
import zlib

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}     # colour type -> samples per pixel


def decode_png(data: bytes) -> np.ndarray:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG (bad signature)")
    chunks = _chunks(data[len(SIGNATURE):])
    if "IHDR" not in chunks or "IDAT" not in chunks:
        raise ValueError("PNG without IHDR or IDAT chunk")
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB",
                                                                 chunks["IHDR"][:13])
    if colour not in _CHANNELS or depth not in (8, 16) or (colour == 3 and depth != 8):
        raise ValueError(f"PNG colour type {colour} at bit depth {depth} is not read; use "
                         "8 or 16 bits per sample")
    if interlace:
        raise ValueError("interlaced (Adam7) PNGs are not read")
    samples = _CHANNELS[colour]
    bpp = samples * depth // 8
    raw = np.frombuffer(zlib.decompress(chunks["IDAT"]), dtype=np.uint8)
    stride = width * bpp
    if raw.size != height * (stride + 1):
        raise ValueError(f"PNG data holds {raw.size} bytes, expected {height * (stride + 1)}")
    rows = _unfilter(raw.reshape(height, stride + 1), bpp)
    if depth == 16:
        rows = rows.reshape(height, width * samples, 2)[:, :, 0]   # the high byte
    pixels = rows.reshape(height, width, samples)
    if colour == 3:
        palette = np.frombuffer(chunks.get("PLTE", b""), dtype=np.uint8).reshape(-1, 3)
        return palette[pixels[:, :, 0]]
    if colour == 4:                # gray + alpha -> RGBA
        gray, alpha = pixels[:, :, :1], pixels[:, :, 1:]
        return np.concatenate([gray, gray, gray, alpha], axis=2)
    return np.ascontiguousarray(pixels)


def _chunks(body: bytes) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    pos = 0
    while pos + 8 <= len(body):
        length, kind = struct.unpack(">I4s", body[pos:pos + 8])
        name = kind.decode("latin-1")
        found[name] = found.get(name, b"") + body[pos + 8:pos + 8 + length]  # IDATs join
        pos += 12 + length
        if name == "IEND":
            break
    return found


def _unfilter(filtered: np.ndarray, bpp: int) -> np.ndarray:
    """Undoes PNG's per-row filters (None, Sub, Up, Average, Paeth)."""
    height, stride = filtered.shape[0], filtered.shape[1] - 1
    out = np.zeros((height, stride), dtype=np.uint8)
    prior = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        kind, line = filtered[y, 0], filtered[y, 1:].astype(np.int32)
        if kind == 0:
            row = line
        elif kind == 1:          # Sub: a running sum along each channel
            row = np.empty(stride, dtype=np.int32)
            for c in range(bpp):
                row[c::bpp] = np.cumsum(line[c::bpp]) % 256
        elif kind == 2:          # Up
            row = (line + prior) % 256
        elif kind in (3, 4):     # Average, Paeth: each byte needs the one before it
            row = _sequential(line, prior, bpp, paeth=kind == 4)
        else:
            raise ValueError(f"PNG row {y} has unknown filter type {kind}")
        out[y] = row
        prior = row.astype(np.int32)
    return out


def _sequential(line: np.ndarray, prior: np.ndarray, bpp: int, paeth: bool) -> np.ndarray:
    row = [0] * len(line)
    up = prior.tolist()
    for i, value in enumerate(line.tolist()):
        left = row[i - bpp] if i >= bpp else 0
        if not paeth:
            row[i] = (value + (left + up[i]) // 2) % 256
            continue
        corner = up[i - bpp] if i >= bpp else 0
        guess = left + up[i] - corner
        dl, du, dc = abs(guess - left), abs(guess - up[i]), abs(guess - corner)
        pick = left if dl <= du and dl <= dc else up[i] if du <= dc else corner
        row[i] = (value + pick) % 256
    return np.asarray(row, dtype=np.int32)
