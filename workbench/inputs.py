"""What callbacks receive from the browser, checked before anything uses it: run and tag
names, lists of them, the smoothing weight, search text, expanded-scope lists, click data.
A request can carry any JSON in any of these, so a bad value raises BadInput, whose message
the page shows; nothing here touches the file system."""

from __future__ import annotations

import math
import re
from typing import Any

MAX_TEXT = 1000                # a name, tag, search text or scope path
MAX_CHOSEN = 200               # runs, tags, reasons or devices chosen at once
MAX_SCOPES = 100_000           # expanded scopes sent back (the graph's own bound them later)
MAX_STEP = 2 ** 63 - 1         # SQLite's largest integer
MAX_NUMBER_TEXT = 40           # a number typed into an address
_DECIMAL = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d{1,4})?")
SMOOTHING_MAX = 0.99           # the slider's range: 1.0 would be a flat line at the first point


class BadInput(ValueError):
    """A value a page's control could not have sent: the message says which and why."""


def clipped(value: Any, limit: int = 60) -> str:
    """A short, printable form of a value for a message (never the whole of a huge one)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def optional_text(value: Any, what: str) -> str | None:
    """A text value, or None when nothing was sent (None or "")."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadInput(f"{what} must be text, got {type(value).__name__} {clipped(value)}")
    if len(value) > MAX_TEXT:
        raise BadInput(f"{what} is {len(value)} characters long (at most {MAX_TEXT})")
    return value


def text(value: Any, what: str) -> str:
    return optional_text(value, what) or ""


def text_list(value: Any, what: str, limit: int = MAX_CHOSEN) -> list[str]:
    """A multi-choice value: a list of texts (one text counts as a list of one; None as
    none), without repeats, in the order sent."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise BadInput(f"{what} must be a list, got {type(value).__name__} {clipped(value)}")
    if len(value) > limit:
        raise BadInput(f"{what}: {len(value)} chosen, at most {limit} at once")
    return list(dict.fromkeys(text(item, what) for item in value if item not in (None, "")))


def smoothing(value: Any, default: float) -> float:
    """The smoothing weight: a number from 0 to SMOOTHING_MAX (default when not sent)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput(f"Smoothing must be a number from 0 to {SMOOTHING_MAX}, got "
                       f"{type(value).__name__} {clipped(value)}")
    if not (math.isfinite(value) and 0.0 <= value <= SMOOTHING_MAX):
        raise BadInput(f"Smoothing must be a number from 0 to {SMOOTHING_MAX}, got "
                       f"{clipped(value)}")
    return float(value)


def finite_number(value: Any, what: str, low: float | None = None,
                  high: float | None = None) -> float | None:
    """A number from the address (decimal text: `12`, `0.5`, `1e3`) or a control (an int or
    float), from `low` to `high` where given; None when nothing was sent (None or ""). NaN,
    infinities (`1e400` is one), other text and numbers out of range raise BadInput."""
    if value is None or value == "":
        return None
    sent = value
    if isinstance(value, str) and len(value) <= MAX_NUMBER_TEXT and _DECIMAL.fullmatch(
            value.strip()):
        value = float(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput(f"{what} must be a number, got {clipped(sent)}")
    try:
        value = float(value)
    except OverflowError:       # an int past float's range
        value = math.inf
    if not math.isfinite(value) or (low is not None and value < low) or (
            high is not None and value > high):
        bounds = " ".join(part for part in (
            "" if low is None else f"from {low:g}", "" if high is None else f"to {high:g}")
            if part)
        raise BadInput(f"{what} must be a finite number{' ' + bounds if bounds else ''}, "
                       f"got {clipped(sent)}")
    return value


def step_number(value: Any, what: str = "the step") -> int | None:
    """A step from the address (text of digits) or a picker (an int); None when none."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and len(value) <= 20 and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{what} must be a step number, got {clipped(value)}")
    if not 0 <= value <= MAX_STEP:
        raise BadInput(f"{what} must be a step number from 0, got {clipped(value)}")
    return value


def scope_list(value: Any) -> list[str] | None:
    """Expanded scopes kept by the page (None before the first choice)."""
    if value is None:
        return None
    return text_list(value, "the expanded scopes", limit=MAX_SCOPES)
