"""Images page (`/images?run=NAME&tag=TAG&step=N`): the images a summary logged under a tag,
one step at a time on a slider whose stops are the steps with an image; drawn at pixel size,
tiny ones (8x8 digits) scaled up by whole pixels, with run, tag, step and wall time. The run,
tag and step shown are kept in the address."""

from __future__ import annotations

import base64
import io
import time
from typing import Any

import dash
import numpy as np
from dash import Input, Output, State, dcc, html
from PIL import Image

from engine.record.schema import ImageRecord
from workbench import data
from workbench.inputs import BadInput, clipped, step_number
from workbench.pages.common import (
    PROBLEMS,
    address,
    address_stores,
    address_value,
    answers,
    choose_run,
    labelled,
    live_follow,
    live_ids,
    loading,
    message,
    page_header,
    polled,
    register_address,
    register_live,
    run_choices,
    run_notice,
    run_options,
)
from workbench.pages.step_slider import followed_steps, slider_position, step_marks

PATH = "/images"
NAME = "Images"
MIN_SIDE = 256                 # images smaller than this are scaled up by a whole factor

QUERY_STORE = "images-query-store"
RUN_DROPDOWN = "images-run-dropdown"
TAG_DROPDOWN = "images-tag-dropdown"
STEP_SLIDER = "images-step-slider"
NOTICE_TEXT = "images-notice-text"
STEP_NOTICE_TEXT = "images-step-notice-text"
IMAGE_DIV = "images-image-div"
IMAGE_LOADING = "images-image-loading"
PICTURE = "images-picture-img"
CAPTION = "images-caption-text"
LIVE = live_ids("images")
LIVE_PARTS = ("steps", "image_tags")


def layout(run: str | None = None, tag: str | None = None, step: str | None = None,
           **_query) -> html.Div:
    return html.Div([
        page_header("Images", "Images logged by summaries; the slider (or the arrow keys) "
                              "moves through the steps that logged one."),
        dcc.Store(id=QUERY_STORE, data={"run": run, "tag": tag, "step": step}),
        *address_stores("images"),
        html.Div(className="controls", children=[
            labelled("Run", dcc.Dropdown(id=RUN_DROPDOWN, clearable=False)),
            labelled("Tag", dcc.Dropdown(id=TAG_DROPDOWN, clearable=False)),
        ]),
        html.P(id=NOTICE_TEXT, className="message notice"),
        live_follow("images"),
        html.Div(className="control", style={"maxWidth": "900px"}, children=[
            html.Label("Step"),
            # Positions 0..n-1 of the steps with an image: a free slider over step numbers
            # would stop (and the arrow keys move) between them.
            dcc.Slider(id=STEP_SLIDER, min=0, max=0, step=1, marks={}, value=None,
                       included=False, updatemode="mouseup", allow_direct_input=False)]),
        html.P(id=STEP_NOTICE_TEXT, className="message notice"),
        loading(IMAGE_LOADING, html.Div(id=IMAGE_DIV)),
    ])


def _query(query: Any) -> dict:
    """The address's run, tag and step (one value each)."""
    query = query if isinstance(query, dict) else {}
    return {key: address_value(query.get(key)) for key in ("run", "tag", "step")}


def _run(run: Any) -> str | None:
    return data.check_name(run) if run else None


@answers(lambda problem: ([], None, problem))
def run_choice(query: dict | None) -> tuple[list[dict], str | None, str]:
    """(options, the run to show, a notice): the run in the address, else the newest healthy
    run that logged images, else the newest healthy one."""
    requested = _query(query).get("run")
    names, healthy = run_choices()
    with_images = next((name for name in healthy if _image_tags(name)), None)
    chosen = choose_run(names, requested, [with_images] if with_images else healthy)
    options = run_options(names, frozenset(names) - frozenset(healthy))
    return options, chosen, run_notice(requested, chosen)


def _image_tags(name: str) -> list[str]:
    try:
        return data.image_tags(name)
    except PROBLEMS:            # the run's own choice tells what is wrong with it
        return []


@answers(lambda problem: ([], None))
def tag_choice(run: str | None, query: dict | None, current: Any = None,
               live: Any = None) -> tuple[list[str], str | None]:
    """The run's image tags; the one in the address when the run has it, else the first.
    After a poll (`live`) the current tag stays while the run still has it."""
    run = _run(run)
    if run is None:
        return [], None
    tags = data.image_tags(run)
    if live is not None and isinstance(current, str) and current in tags:
        return tags, dash.no_update
    requested = _query(query).get("tag")
    return tags, requested if requested in tags else (tags[0] if tags else None)


def image_steps(run: str, tag: Any) -> list[int]:
    """The steps that logged an image under the tag, ascending: the slider's stops."""
    return sorted({record.step for record in _records(run, tag)})


_NO_STEPS = (0, 0, {}, None)


@answers(lambda problem: (*_NO_STEPS, problem))
def step_choice(run: str | None, tag: str | None, query: dict | None, position: Any = None,
                last: Any = None, live: Any = None) -> tuple[int, int, dict, int | None, str]:
    """(slider min, max, marks, position, a notice): one slider position per step with an
    image; the step in the address when it has one, else the latest. After a poll (`live`)
    new steps join the slider and the chosen `position` stays, unless it was the `last`
    one: then the newest step is shown."""
    run = _run(run)
    if run is None:
        return (*_NO_STEPS, "")
    if not tag:
        return (*_NO_STEPS, f"Run {run} logged no images.")
    unique = image_steps(run, tag)
    if not unique:
        return (*_NO_STEPS, f"Tag {tag} of {run} has no image.")
    if live is not None:
        return followed_steps(unique, position, last)
    query = _query(query)
    requested = step_number(query.get("step"), "the step in the address")
    notice = ""
    chosen = unique[-1]
    if query.get("run") in (None, "", run) and requested is not None:
        if requested in unique:
            chosen = requested
        else:
            notice = (f"Step {requested} of {run} has no {tag} image; showing the latest, "
                      f"step {chosen}.")
    return 0, len(unique) - 1, step_marks(unique), unique.index(chosen), notice


def _records(run: str, tag: Any) -> list[ImageRecord]:
    if not isinstance(tag, str) or tag not in data.image_tags(run):
        raise BadInput(f"run {run} has no image tag {clipped(tag)}")
    return data.images(run, tag)


def scale_for(height: int, width: int) -> int:
    """The whole factor tiny images are drawn at (1 for images MIN_SIDE or larger)."""
    return max(1, MIN_SIDE // max(height, width, 1))


def png_data_uri(pixels: np.ndarray, scale: int = 1) -> str:
    """uint8 (height, width, channels) pixels as a PNG data URI, each pixel a scale x scale
    block (nearest neighbour: a digit's pixels stay sharp)."""
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    if pixels.ndim == 3 and pixels.shape[2] == 1:
        pixels = pixels[:, :, 0]
    if pixels.ndim != 2 and not (pixels.ndim == 3 and pixels.shape[2] in (3, 4)):
        raise BadInput(f"an image must be gray, RGB or RGBA pixels, got shape {pixels.shape}")
    picture = Image.fromarray(pixels)           # L, RGB or RGBA from the shape
    if scale > 1:
        picture = picture.resize((picture.width * scale, picture.height * scale),
                                 Image.Resampling.NEAREST)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def caption(run: str, record: ImageRecord, scale: int) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.wall_time))
    size = f"{record.width}×{record.height} px" + (f", drawn ×{scale}" if scale > 1 else "")
    return f"{run} · {record.tag} · step {record.step} · {when} · {size}"


@answers(lambda problem: [message(problem)])
def image_view(run: str | None, tag: str | None, position: Any) -> list:
    """The tag's image at the slider's step (the last one logged there; the latest step when
    no position is chosen yet) with its caption."""
    run = _run(run)
    if run is None:
        return [message("No readable run in the log directory.")]
    if not tag:
        return [message(f"Run {run} logged no images.")]
    records = _records(run, tag)
    steps = sorted({record.step for record in records})
    if not steps:
        return [message(f"Tag {tag} of {run} has no image.")]
    position = slider_position(position, len(steps))
    step = steps[-1 if position is None else position]
    record = [record for record in records if record.step == step][-1]
    scale = scale_for(record.height, record.width)
    return [html.Img(id=PICTURE, src=png_data_uri(record.pixels, scale),
                     alt=f"{tag} at step {step}",
                     style={"maxWidth": "100%", "imageRendering": "pixelated",
                            "border": "1px solid #ddd", "marginTop": "12px"}),
            html.P(caption(run, record, scale), id=CAPTION, className="muted")]


@answers(lambda _problem: dash.no_update)
def view_address(run: Any, tag: Any, position: Any) -> str:
    """The address of the shown image, as the run, tag and step choices read it: the step
    of the slider's position (none before the slider has one)."""
    run = _run(run)
    if run is None:
        return PATH
    tag = tag if isinstance(tag, str) and tag in data.image_tags(run) else None
    steps = image_steps(run, tag) if tag else []
    position = slider_position(position, len(steps)) if steps else None
    return address(PATH, {"run": run, "tag": tag,
                          "step": None if position is None else steps[position]})


def register_callbacks(app: dash.Dash) -> None:
    app.callback(Output(RUN_DROPDOWN, "options"), Output(RUN_DROPDOWN, "value"),
                 Output(NOTICE_TEXT, "children"), Input(QUERY_STORE, "data"))(run_choice)
    app.callback(Output(TAG_DROPDOWN, "options"), Output(TAG_DROPDOWN, "value"),
                 Input(RUN_DROPDOWN, "value"), State(QUERY_STORE, "data"),
                 State(TAG_DROPDOWN, "value"), Input(LIVE["store"], "data"))(
        polled(tag_choice, LIVE["store"]))
    app.callback(Output(STEP_SLIDER, "min"), Output(STEP_SLIDER, "max"),
                 Output(STEP_SLIDER, "marks"), Output(STEP_SLIDER, "value"),
                 Output(STEP_NOTICE_TEXT, "children"), Input(RUN_DROPDOWN, "value"),
                 Input(TAG_DROPDOWN, "value"), State(QUERY_STORE, "data"),
                 State(STEP_SLIDER, "value"), State(STEP_SLIDER, "max"),
                 Input(LIVE["store"], "data"))(polled(step_choice, LIVE["store"]))
    app.callback(Output(IMAGE_DIV, "children"), Input(RUN_DROPDOWN, "value"),
                 Input(TAG_DROPDOWN, "value"), Input(STEP_SLIDER, "value"))(image_view)
    register_address(app, "images", PATH, view_address, Input(RUN_DROPDOWN, "value"),
                     Input(TAG_DROPDOWN, "value"), Input(STEP_SLIDER, "value"))
    register_live(app, "images", (RUN_DROPDOWN,), LIVE_PARTS)
