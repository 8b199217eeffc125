"""PNG payloads of hand-built image summaries: decoded to the pixels TensorFlow encoded
(the PNGs below come from tf.image.encode_png in TF 2.21; between them their rows use all
five PNG filters) and written to the run store through FileWriter."""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np
import pytest

import engine as tf
from engine.record import RunReader
from engine.summary.png import decode_png

# (png, pixels, shape); rgb rows use filters 0 4 2 0, rgba rows 1 2 3 4 3.
RGB = ("iVBORw0KGgoAAAANSUhEUgAAAAUAAAAECAIAAADJUWIXAAAAS0lEQVQImQFAAL//AItK5fGpQQaglWomr7zNrwRa"
       "GBQZ6x5Q/zHYAaQZ3sMCwtdMR6OvQx8RCg29JZ2qADKh33CsoekmEVkB3Qbyf5p7HBsegM4GAAAAAElFTkSuQmCC",
       "i0rl8alBBqCVaiavvM2v5WL5CpRfVpPGQidq1astpzlFUTcOmbLXTDQn+kjXMqHfcKyh6SYRWQHdBvJ/",
       (4, 5, 3))
RGBA = ("iVBORw0KGgoAAAANSUhEUgAAAAMAAAAFCAYAAACAcVaiAAAANUlEQVQImQXBgQEAIAgCMARS/3+3rLaoqHBRTDZH"
        "44GaSCn5Viy80b4+FtqiaQm+cxa5E/EBd74Nhauo1HEAAAAASUVORK5CYII=",
        "BwEHAQsICQQNDgsMBAQEBQgIDAwPDhEPCAQBBwkLBggJDwYJBAgEBwwPCQoQEQ0NAggAAAMQBgcEFgkL",
        (5, 3, 4))


@pytest.mark.parametrize("case", [RGB, RGBA], ids=["rgb", "rgba"])
def test_tensorflow_pngs_decode_to_their_pixels(case):
    encoded, pixels, shape = case
    want = np.frombuffer(base64.b64decode(pixels), np.uint8).reshape(shape)
    np.testing.assert_array_equal(decode_png(base64.b64decode(encoded)), want)


def _png(pixels: np.ndarray, colour: int, depth: int = 8, palette: bytes = b"") -> bytes:
    """A minimal unfiltered PNG (filter byte 0 on every row)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + \
            struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    height, width = pixels.shape[:2]
    rows = pixels.reshape(height, -1).astype(">u2" if depth == 16 else np.uint8).tobytes()
    stride = len(rows) // height
    raw = b"".join(b"\0" + rows[y * stride:(y + 1) * stride] for y in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    plte = chunk(b"PLTE", palette) if palette else b""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + plte +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_palette_gray_alpha_and_16_bit_pngs():
    index = np.array([[0, 1], [1, 0]], np.uint8)
    colours = decode_png(_png(index, 3, palette=bytes([10, 20, 30, 200, 100, 0])))
    assert colours.tolist() == [[[10, 20, 30], [200, 100, 0]], [[200, 100, 0], [10, 20, 30]]]
    gray_alpha = decode_png(_png(np.array([[[7, 255]]], np.uint8), 4))
    assert gray_alpha.tolist() == [[[7, 7, 7, 255]]]
    deep = decode_png(_png(np.array([[[0x1234], [0xFF00]]], np.uint16), 0, depth=16))
    assert deep.reshape(-1).tolist() == [0x12, 0xFF]


def test_unreadable_payloads_are_named():
    with pytest.raises(ValueError, match="not a PNG"):
        decode_png(b"GIF89a")
    with pytest.raises(ValueError, match="bit depth 4"):
        decode_png(_png(np.zeros((1, 1), np.uint8), 0, depth=4))
    image = tf.Summary.Image(height=1, width=1, colorspace=3, encoded_image_string=b"\xff\xd8")
    with pytest.raises(ValueError, match="JPEG and GIF are not decoded"):
        image.pixels()


def test_a_hand_built_png_image_summary_reaches_the_run_store(tmp_path):
    encoded, pixels, shape = RGBA
    image = tf.Summary.Image(height=shape[0], width=shape[1], colorspace=shape[2],
                             encoded_image_string=base64.b64decode(encoded))
    with tf.summary.FileWriter(str(tmp_path / "run")) as writer:
        writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="plot", image=image)]), 3)
    record, = RunReader(tmp_path / "run").images("plot")
    want = np.frombuffer(base64.b64decode(pixels), np.uint8).reshape(shape)
    assert record.step == 3
    np.testing.assert_array_equal(record.pixels, want)
