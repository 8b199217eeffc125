"""The step slider the Images and Text pages share: one stop per step that logged something,
labels on a few of them, and how a live refresh moves it."""

from __future__ import annotations

from typing import Any

import dash

from workbench.inputs import BadInput, clipped

MAX_MARK_LABELS = 10           # slider stops beyond these are unlabelled ticks


def step_marks(steps: list[int]) -> dict:
    """Slider position -> its step's label, on at most MAX_MARK_LABELS positions (first and
    last kept): the others are unlabelled stops."""
    last = len(steps) - 1
    labelled_at = set(range(len(steps))) if len(steps) <= MAX_MARK_LABELS else {
        round(i * last / (MAX_MARK_LABELS - 1)) for i in range(MAX_MARK_LABELS)}
    return {i: str(step) for i, step in enumerate(steps) if i in labelled_at}


def followed_steps(unique: list[int], position: Any, last: Any) -> tuple:
    """The slider after a live poll, as (min, max, marks, position, notice): new steps join
    it and the chosen position stays, unless it was the `last` one: then the newest step is
    shown. No new step leaves the slider as it is."""
    newest = len(unique) - 1
    position, last = _whole(position), _whole(last)
    if last == newest:
        return (dash.no_update,) * 5           # no new step: the slider stays as it is
    at_latest = position is None or position == last or not 0 <= position <= newest
    return 0, newest, step_marks(unique), newest if at_latest else dash.no_update, dash.no_update


def _whole(value: Any) -> int | None:
    """A slider position sent back (an int, or an integral float), else None."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def slider_position(value: Any, count: int) -> int | None:
    """A slider position (0..count-1; an integral float as the slider may send); None when
    none is chosen yet."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise BadInput(f"the step slider's position must be a whole number from 0 to "
                       f"{count - 1}, got {clipped(value)}")
    return value
