"""The `checkpoint` state file TF writes beside checkpoints (protobuf text format, read with a
small parser: no exec, no pickle) and the functions over it: get_checkpoint_state,
update_checkpoint_state, latest_checkpoint, checkpoint_exists, get_checkpoint_mtimes."""

from __future__ import annotations

import logging
import os
import re

from engine.train.checkpoint_file import checkpoint_files, file_errors, index_path

__all__ = [
    "CheckpointState",
    "checkpoint_exists",
    "generate_checkpoint_state_proto",
    "get_checkpoint_mtimes",
    "get_checkpoint_state",
    "latest_checkpoint",
    "remove_checkpoint",
    "update_checkpoint_state",
]

logger = logging.getLogger("engine.train")


class CheckpointState:
    """TF's CheckpointState message: the latest checkpoint and those still kept."""

    def __init__(self, model_checkpoint_path: str = "", all_model_checkpoint_paths=(),
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp: float = 0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def to_text(self) -> str:
        """The text format, as protobuf's MessageToString writes it."""
        lines = []
        if self.model_checkpoint_path:
            lines.append(f'model_checkpoint_path: "{_escape(self.model_checkpoint_path)}"')
        lines += [f'all_model_checkpoint_paths: "{_escape(p)}"'
                  for p in self.all_model_checkpoint_paths]
        lines += [f"all_model_checkpoint_timestamps: {t!r}"
                  for t in self.all_model_checkpoint_timestamps]
        if self.last_preserved_timestamp:
            lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "".join(line + "\n" for line in lines)

    __str__ = to_text

    def __repr__(self) -> str:
        return f"CheckpointState({self.to_text()!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, CheckpointState) and self.to_text() == other.to_text()


# -- protobuf text format (the four CheckpointState fields) ---------------------------------

class ParseError(ValueError):
    pass


_FIELD = re.compile(r"""\s*(?:\#[^\n]*\s*)*          # blanks and comments
                        ([A-Za-z_]\w*)\s*:\s*           # field name
                        ("(?:[^"\\\n]|\\.)*"           # a double-quoted string
                        |'(?:[^'\\\n]|\\.)*'           # a single-quoted string
                        |[-+.\w]+)                      # or a number""", re.VERBOSE)
_SIMPLE_ESCAPES = {"n": 10, "r": 13, "t": 9, "\\": 92, "'": 39, '"': 34, "a": 7, "b": 8,
                   "f": 12, "v": 11, "?": 63}


def _escape(text: str) -> str:
    """protobuf's CEscape: printable ASCII as is, everything else as octal UTF-8 bytes."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in "\\\"'":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


def _unescape(quoted: str) -> str:
    body, out, i = quoted[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[nxt])
            i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1:]).group(0)
            out.append(int(digits, 8) & 0xFF)
            i += 1 + len(digits)
        elif nxt in "xX" and re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:]):
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:]).group(0)
            out.append(int(digits, 16))
            i += 2 + len(digits)
        else:
            raise ParseError(f"invalid escape \\{nxt}")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ParseError(f"string is not UTF-8: {e}") from None


def _number(token: str, field: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise ParseError(f"field {field} expects a number, got {token!r}") from None


def parse_checkpoint_state(text: str) -> CheckpointState:
    state, pos = CheckpointState(), 0
    text = text.rstrip()
    while pos < len(text):
        match = _FIELD.match(text, pos)
        if match is None:
            line = text.count("\n", 0, pos) + 1
            raise ParseError(f"{line}: expected 'field: value', got {text[pos:pos + 40]!r}")
        field, token = match.groups()
        pos = match.end()
        quoted = token[0] in "\"'"
        if field in ("model_checkpoint_path", "all_model_checkpoint_paths"):
            if not quoted:
                raise ParseError(f"field {field} expects a string, got {token!r}")
            if field == "model_checkpoint_path":
                state.model_checkpoint_path = _unescape(token)
            else:
                state.all_model_checkpoint_paths.append(_unescape(token))
        elif field == "all_model_checkpoint_timestamps":
            state.all_model_checkpoint_timestamps.append(_number(token, field))
        elif field == "last_preserved_timestamp":
            state.last_preserved_timestamp = _number(token, field)
        else:
            raise ParseError(f'Message type "tensorflow.CheckpointState" has no field named '
                             f'"{field}".')
    return state


# -- the state file -------------------------------------------------------------------------

def _state_filename(save_dir: str, latest_filename: str | None) -> str:
    return os.path.join(save_dir, latest_filename or "checkpoint")


def generate_checkpoint_state_proto(save_dir: str, model_checkpoint_path: str,
                                    all_model_checkpoint_paths=None) -> CheckpointState:
    """TF's rule: the latest path ends the list; with a relative save_dir, relative paths are
    rewritten relative to it."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if not os.path.isabs(save_dir):
        base = save_dir or os.curdir
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, base)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, base) for p in paths]
    return CheckpointState(model_checkpoint_path, paths)


def update_checkpoint_state(save_dir: str, model_checkpoint_path: str,
                            all_model_checkpoint_paths=None, latest_filename: str | None = None,
                            save_relative_paths: bool = False) -> None:
    """Rewrites `<save_dir>/checkpoint` (atomically: a reader never sees half a file)."""
    filename = _state_filename(save_dir, latest_filename)
    paths = list(all_model_checkpoint_paths or [])
    if save_relative_paths:
        model_checkpoint_path = _relative(model_checkpoint_path, save_dir)
        paths = [_relative(p, save_dir) for p in paths]
    state = generate_checkpoint_state_proto(save_dir, model_checkpoint_path, paths)
    if filename == state.model_checkpoint_path:
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for "
                           "checkpoint state.  Please use a different save path.")
    tmp = f"{filename}.tmp{os.getpid()}"
    with file_errors(filename, "writing the checkpoint state"):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(state.to_text())
        os.replace(tmp, filename)


def _relative(path: str, save_dir: str) -> str:
    return os.path.relpath(path, save_dir or os.curdir) if os.path.isabs(path) else path


def get_checkpoint_state(checkpoint_dir: str, latest_filename: str | None = None):
    """The CheckpointState in `checkpoint_dir`, paths joined to the directory where relative;
    None when there is no state file or it cannot be parsed (logged, as in TF)."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    filename = _state_filename(checkpoint_dir, latest_filename)
    if not os.path.isfile(filename):
        return None
    try:
        with open(filename, "rb") as f:
            state = parse_checkpoint_state(f.read().decode("utf-8"))
        if not state.model_checkpoint_path:
            # TF raises ValueError here; a damaged state file should not stop a resume that
            # can simply start afresh, so it is ignored like an unparsable one.
            raise ParseError("Invalid checkpoint state loaded from " + checkpoint_dir)
    except (ParseError, UnicodeDecodeError, OSError) as e:
        logger.warning("%s: %s", type(e).__name__, e)
        logger.warning("%s: Checkpoint ignored", filename)
        return None
    if not os.path.isabs(state.model_checkpoint_path):
        state.model_checkpoint_path = os.path.join(checkpoint_dir, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [
        p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
        for p in state.all_model_checkpoint_paths]
    return state


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    return os.path.isfile(index_path(os.fspath(checkpoint_prefix)))


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The prefix of the newest checkpoint named by the state file, if its files exist."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not state.model_checkpoint_path:
        return None
    if checkpoint_exists(state.model_checkpoint_path):
        return state.model_checkpoint_path
    logger.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


def get_checkpoint_mtimes(checkpoint_prefixes) -> list[float]:
    """Modification time of each existing checkpoint's index (missing ones are skipped)."""
    found = []
    for prefix in checkpoint_prefixes:
        path = index_path(os.fspath(prefix))
        if os.path.isfile(path):
            found.append(os.path.getmtime(path))
    return found


def remove_checkpoint(checkpoint_prefix: str, checkpoint_format_version=None,
                      meta_graph_suffix: str = "meta") -> None:
    """Deletes a checkpoint's files: the index first, so it stops existing before its data
    goes."""
    for path in checkpoint_files(checkpoint_prefix) + [f"{checkpoint_prefix}.{meta_graph_suffix}"]:
        if os.path.exists(path):
            os.remove(path)
