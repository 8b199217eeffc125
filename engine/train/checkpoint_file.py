"""The checkpoint bundle on disk: `<prefix>.safetensors` (the values) plus `<prefix>.index`
(JSON: the data size, and each tensor's TF dtype, shape and CRC-32), and the readers over
it (tf.train.NewCheckpointReader, list_variables, load_variable). No pickle anywhere: the
index is JSON, the values raw little-endian bytes, and every byte read is checked."""

from __future__ import annotations

import contextlib
import json
import os
import zlib

import numpy as np
import safetensors

from engine import dtypes, errors

__all__ = [
    "NewCheckpointReader",
    "list_variables",
    "load_variable",
]

INDEX_FORMAT = "engine.checkpoint"
INDEX_VERSION = 1
INDEX_SUFFIX = ".index"
DATA_SUFFIX = ".safetensors"

# TF dtype -> (safetensors dtype written, header code read back, numpy storage dtype).
# bfloat16 travels as its raw 16 bits; complex128 (which safetensors lacks) as float64 pairs.
_STORAGE = {
    dtypes.float16: ("float16", "F16", np.float16),
    dtypes.bfloat16: ("bfloat16", "BF16", np.uint16),
    dtypes.float32: ("float32", "F32", np.float32),
    dtypes.float64: ("float64", "F64", np.float64),
    dtypes.complex64: ("complex64", "C64", np.complex64),
    dtypes.complex128: ("float64", "F64", np.float64),
    dtypes.int8: ("int8", "I8", np.int8),
    dtypes.int16: ("int16", "I16", np.int16),
    dtypes.int32: ("int32", "I32", np.int32),
    dtypes.int64: ("int64", "I64", np.int64),
    dtypes.uint8: ("uint8", "U8", np.uint8),
    dtypes.uint16: ("uint16", "U16", np.uint16),
    dtypes.uint32: ("uint32", "U32", np.uint32),
    dtypes.uint64: ("uint64", "U64", np.uint64),
    dtypes.bool: ("bool", "BOOL", np.bool_),
    # Quantized values are their plain integers; the index keeps the quantized name.
    dtypes.quint8: ("uint8", "U8", np.uint8),
    dtypes.qint8: ("int8", "I8", np.int8),
    dtypes.quint16: ("uint16", "U16", np.uint16),
    dtypes.qint16: ("int16", "I16", np.int16),
    dtypes.qint32: ("int32", "I32", np.int32),
}
_STORED_BY_NAME = {d.name: d for d in _STORAGE}


def can_store(dtype: dtypes.DType) -> bool:
    return dtype.base_dtype in _STORAGE


def index_path(prefix: str) -> str:
    return prefix + INDEX_SUFFIX


def data_path(prefix: str) -> str:
    return prefix + DATA_SUFFIX


def checkpoint_files(prefix: str) -> list[str]:
    """Every file a checkpoint prefix owns (the meta graph aside)."""
    return [index_path(prefix), data_path(prefix)]


# -- writing -------------------------------------------------------------------------------

def _to_storage(value: np.ndarray, dtype: dtypes.DType) -> np.ndarray:
    """The contiguous little-endian array whose bytes are written for `value`."""
    if dtype is dtypes.bfloat16:
        # Values fetched from a bfloat16 variable arrive as float32 holding bfloat16 numbers,
        # so the top 16 bits are exactly the bfloat16 encoding.
        bits = np.asarray(value, dtype="<f4", order="C").view("<u4")
        return np.asarray(bits >> 16, dtype="<u2", order="C")
    if dtype is dtypes.complex128:
        pairs = np.asarray(value, dtype="<c16", order="C")
        return pairs.reshape(-1).view("<f8").reshape(pairs.shape + (2,))
    storage = np.dtype(_STORAGE[dtype][2]).newbyteorder("<")
    return np.asarray(value, dtype=storage, order="C")


def write_checkpoint(prefix: str, tensors: dict[str, tuple[np.ndarray, dtypes.DType]]) -> None:
    """Writes the bundle for `prefix`. The data file goes first and the index last, each
    through a temporary file and a rename, so the index (which makes the checkpoint exist)
    never names a half-written data file."""
    stored, entries, specs = {}, {}, {}
    for name, (value, dtype) in tensors.items():
        dtype = dtype.base_dtype
        array = _to_storage(np.asarray(value), dtype)
        stored[name] = array
        entries[name] = {"dtype": dtype.name, "shape": list(np.shape(value)),
                         "crc32": zlib.crc32(array.reshape(-1).view(np.uint8))}
        specs[name] = safetensors.TensorSpec(dtype=_STORAGE[dtype][0], shape=list(array.shape),
                                             data_ptr=array.ctypes.data, data_len=array.nbytes)
    data = data_path(prefix)
    _write_atomically(data, lambda tmp: safetensors.serialize_file(
        specs, tmp, metadata={"format": INDEX_FORMAT}))
    del stored   # the arrays had to outlive serialize_file, which reads their raw pointers
    index = {"format": INDEX_FORMAT, "version": INDEX_VERSION,
             "data_bytes": os.path.getsize(data), "tensors": entries}
    text = json.dumps(index, indent=1, sort_keys=True) + "\n"
    _write_atomically(index_path(prefix), lambda tmp: _write_text(tmp, text))


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


@contextlib.contextmanager
def file_errors(path: str, doing: str):
    """OS-level failures on a checkpoint file as engine errors naming the file."""
    try:
        yield
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path} not found while {doing}") from None
    except PermissionError:
        raise errors.PermissionDeniedError(
            None, None, f"{path}: permission denied while {doing}") from None
    except OSError as e:
        raise errors.UnknownError(None, None, f"{path}: {e} (while {doing})") from None


def _write_atomically(path: str, write) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with file_errors(path, "writing a checkpoint"):
            try:
                write(tmp)
            except safetensors.SafetensorError as e:     # its I/O errors (a full disk, ...)
                raise OSError(str(e)) from None
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# -- reading -------------------------------------------------------------------------------

def _corrupt(path: str, detail: str) -> errors.DataLossError:
    return errors.DataLossError(
        None, None, f"Unable to read file ({path}). Perhaps the file is corrupt or was produced "
                    f"by a newer version of the engine with format changes ({detail})")


class _Entry:
    __slots__ = ("name", "dtype", "shape", "crc32")

    def __init__(self, name: str, dtype: dtypes.DType, shape: tuple[int, ...], crc32: int):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.crc32 = crc32


def _parse_index(path: str) -> tuple[int, dict[str, _Entry]]:
    with file_errors(path, "reading a checkpoint index"):
        with open(path, "rb") as f:
            raw_index = f.read()
    try:
        doc = json.loads(raw_index.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise _corrupt(path, f"the index is not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != INDEX_FORMAT:
        raise _corrupt(path, f"not an {INDEX_FORMAT} index (field 'format')")
    if doc.get("version") != INDEX_VERSION:
        raise _corrupt(path, f"index version {doc.get('version')!r}; this build reads "
                             f"{INDEX_VERSION} (field 'version')")
    data_bytes, raw = doc.get("data_bytes"), doc.get("tensors")
    if not _is_count(data_bytes) or not isinstance(raw, dict):
        raise _corrupt(path, "fields 'data_bytes' (a size) and 'tensors' (an object) are needed")
    return data_bytes, {name: _parse_entry(path, name, e) for name, e in raw.items()}


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _parse_entry(path: str, name: str, raw) -> _Entry:
    where = f"tensor '{name}'"
    if not isinstance(raw, dict):
        raise _corrupt(path, f"{where}: entry is not an object")
    dtype = _STORED_BY_NAME.get(raw.get("dtype")) if isinstance(raw.get("dtype"), str) else None
    if dtype is None:
        raise _corrupt(path, f"{where}: unknown dtype {raw.get('dtype')!r}")
    shape = raw.get("shape")
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        raise _corrupt(path, f"{where}: shape {shape!r} is not a list of sizes")
    if not _is_count(raw.get("crc32")):
        raise _corrupt(path, f"{where}: no crc32")
    return _Entry(name, dtype, tuple(shape), raw["crc32"])


def _stored_layout(entry: _Entry) -> tuple[str, tuple[int, ...]]:
    """The safetensors dtype code and shape an index entry must be stored with."""
    extra = (2,) if entry.dtype is dtypes.complex128 else ()
    return _STORAGE[entry.dtype][1], entry.shape + extra


def _decode(path: str, index: str, entry: _Entry, data: bytearray) -> np.ndarray:
    """The numpy value of one stored tensor (its layout already matched the index); the
    array shares `data`'s buffer where no conversion is needed."""
    crc = zlib.crc32(data)
    if crc != entry.crc32:
        raise _corrupt(path, f"tensor '{entry.name}': checksum does not match: stored "
                             f"{entry.crc32} in {index} vs. calculated on the restored bytes "
                             f"{crc}")
    storage = np.dtype(_STORAGE[entry.dtype][2]).newbyteorder("<")
    array = np.frombuffer(data, dtype=storage).reshape(_stored_layout(entry)[1])
    if entry.dtype is dtypes.bfloat16:
        return (array.astype(np.uint32) << 16).view(np.float32)
    if entry.dtype is dtypes.complex128:
        return array.astype(np.float64).view(np.complex128).reshape(entry.shape)
    return array.astype(array.dtype.newbyteorder("="), copy=False)


class CheckpointReader:
    """Reads one checkpoint (tf.train.NewCheckpointReader). Opening it checks the index
    against the data file's size and safetensors header (names, dtypes, shapes); the values
    are read on first use and each checked against its CRC-32 before any is returned.
    bfloat16 values come back as float32 arrays holding the same numbers (numpy has no
    bfloat16)."""

    def __init__(self, prefix: str):
        self._prefix = os.fspath(prefix)
        self._index = index_path(self._prefix)
        if not os.path.isfile(self._index):
            raise errors.NotFoundError(
                None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find any "
                            f"matching files for {self._prefix}")
        data_bytes, self._entries = _parse_index(self._index)
        # As in TF, the data file's name follows from the prefix, so a renamed checkpoint
        # (all its files renamed alike) still opens.
        self._data = data_path(self._prefix)
        self._check_data_file(data_bytes)
        self._values: dict[str, np.ndarray] | None = None

    def _check_data_file(self, data_bytes: int) -> None:
        path = self._data
        if not os.path.isfile(path):
            raise errors.NotFoundError(
                None, None, f"{path} not found: the data file of checkpoint {self._index} is "
                            "missing (was it deleted, or not copied with its .index?)")
        size = os.path.getsize(path)
        if size != data_bytes:
            raise _corrupt(path, f"it holds {size} bytes, the index says {data_bytes}: "
                                 "truncated or overwritten")
        try:
            with file_errors(path, "opening a checkpoint"), \
                    safetensors.safe_open(path, framework="numpy") as f:
                stored = {k: (f.get_slice(k).get_dtype(), tuple(f.get_slice(k).get_shape()))
                          for k in f.keys()}
        except safetensors.SafetensorError as e:
            raise _corrupt(path, str(e)) from None
        both = f"{self._index} and {path}"
        if set(stored) != set(self._entries):
            raise _corrupt(both, f"the index lists tensors {sorted(self._entries)}, the data "
                                 f"file holds {sorted(stored)}")
        for name, entry in self._entries.items():
            code, shape = _stored_layout(entry)
            if stored[name] != (code, shape):
                raise _corrupt(both, f"tensor '{name}': stored as {stored[name][0]} "
                                     f"{list(stored[name][1])}, the index says {code} "
                                     f"{list(shape)}")

    @property
    def prefix(self) -> str:
        return self._prefix

    def has_tensor(self, name: str) -> bool:
        return name in self._entries

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {name: list(e.shape) for name, e in self._entries.items()}

    def get_variable_to_dtype_map(self) -> dict[str, dtypes.DType]:
        return {name: e.dtype for name, e in self._entries.items()}

    def debug_string(self) -> bytes:
        lines = [f"{name} ({e.dtype.proto_name}) {list(e.shape)}\n"
                 for name, e in sorted(self._entries.items())]
        return "".join(lines).encode()

    def get_tensor(self, name: str) -> np.ndarray:
        if name not in self._entries:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint")
        if self._values is None:
            self._values = self.read_all()
        return self._values[name].copy()

    def read_all(self) -> dict[str, np.ndarray]:
        """Every tensor, checked, in arrays the caller owns (one read of the data file)."""
        return self._read_values()

    def _read_values(self) -> dict[str, np.ndarray]:
        path = self._data
        with file_errors(path, "reading a checkpoint"), open(path, "rb") as f:
            raw = f.read()
        try:
            stored = dict(safetensors.deserialize(raw))
        except safetensors.SafetensorError as e:
            raise _corrupt(path, str(e)) from None
        if set(stored) != set(self._entries):
            raise _corrupt(path, "the file changed since the checkpoint was opened")
        return {name: _decode(path, self._index, e, stored[name]["data"])
                for name, e in self._entries.items()}


def NewCheckpointReader(filepattern: str) -> CheckpointReader:  # noqa: N802 - TF's name
    return CheckpointReader(filepattern)


def _checkpoint_prefix(ckpt_dir_or_file: str) -> str:
    from engine.train.checkpoint_state import latest_checkpoint
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        found = latest_checkpoint(path)
        if found is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {path}")
        return found
    return path


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """(name, shape) of every tensor in a checkpoint (or the latest one in a directory)."""
    reader = CheckpointReader(_checkpoint_prefix(ckpt_dir_or_file))
    return sorted(reader.get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    if name.endswith(":0"):
        name = name[:-2]
    return CheckpointReader(_checkpoint_prefix(ckpt_dir_or_file)).get_tensor(name)
