"""The Images page's callbacks as plain functions against a real run store written with
RunWriter.image (and a TensorBoard event-file run written by torch's SummaryWriter): the
slider stops only at steps with an image, the image decodes back to the recorded pixels
(scaled up by whole pixels when tiny), the caption, and hostile inputs as messages."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from engine.record import RunWriter
from workbench import data
from workbench.pages import images as page
from workbench.pages import step_slider

RUN, PLAIN, TORCH = "img-run", "no-images", "tb-images"
DIGIT_STEPS = [0, 5, 10]


def digit(step: int) -> np.ndarray:
    pixels = np.zeros((8, 8), np.uint8)
    pixels[:, step % 8] = 255
    pixels[step % 8, :] = 128
    return pixels


def photo() -> np.ndarray:
    rng = np.random.default_rng(2)
    return rng.integers(0, 256, (300, 400, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("image-logs")
    with RunWriter(root, RUN) as run:
        for step in range(11):
            run.scalar("loss", 1.0, step)
            if step in DIGIT_STEPS:
                run.image("digits", digit(step), step)
        run.image("photo", photo(), 3)
        rgba = np.zeros((4, 6, 4), np.uint8)
        rgba[..., 0], rgba[..., 3] = 200, 100
        run.image("rgba", rgba, 7)
    with RunWriter(root, PLAIN) as run:
        run.scalar("loss", 1.0, 0)
    return root


@pytest.fixture
def store(logdir):
    data.set_logdir(logdir)
    yield logdir
    data.set_logdir("runs")


def decoded(src: str) -> np.ndarray:
    assert src.startswith("data:image/png;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))))


def picture(children):
    return next(child for child in children if type(child).__name__ == "Img")


def test_run_and_tag_choice_prefer_images_and_the_address(store):
    options, chosen, notice = page.run_choice(None)
    assert {o["value"] for o in options} == {RUN, PLAIN} and (chosen, notice) == (RUN, "")
    assert page.run_choice({"run": PLAIN})[1:] == (PLAIN, "")
    assert "No readable run named 'gone'" in page.run_choice({"run": "gone"})[2]
    assert page.tag_choice(RUN, None) == (["digits", "photo", "rgba"], "digits")
    assert page.tag_choice(RUN, {"tag": "photo"})[1] == "photo"
    assert page.tag_choice(RUN, {"tag": "nope"})[1] == "digits"
    assert page.tag_choice(PLAIN, None) == ([], None)


def test_the_slider_stops_only_at_steps_with_an_image(store):
    low, high, marks, value, notice = page.step_choice(RUN, "digits", None)
    assert (low, high, marks, value, notice) == (0, 2, {0: "0", 1: "5", 2: "10"}, 2, "")
    assert page.step_choice(RUN, "digits", {"run": RUN, "step": "5"})[3] == 1
    assert page.step_choice(RUN, "digits", {"run": "other", "step": "5"})[3] == 2
    *_, value, notice = page.step_choice(RUN, "digits", {"run": RUN, "step": "4"})
    assert value == 2
    assert notice == "Step 4 of img-run has no digits image; showing the latest, step 10."
    assert page.step_choice(PLAIN, None, None)[4] == "Run no-images logged no images."


def test_marks_label_at_most_ten_steps():
    marks = step_slider.step_marks(list(range(0, 1000, 10)))
    assert len(marks) == step_slider.MAX_MARK_LABELS
    assert (marks[0], marks[99]) == ("0", "990")
    assert all(label == str(10 * position) for position, label in marks.items())


def test_a_tiny_image_is_scaled_up_by_whole_pixels(store, text_of):
    children = page.image_view(RUN, "digits", 1)
    pixels = decoded(picture(children).src)
    scale = page.MIN_SIDE // 8
    assert pixels.shape == (8 * scale, 8 * scale)
    np.testing.assert_array_equal(pixels[::scale, ::scale], digit(5))
    np.testing.assert_array_equal(pixels, np.kron(digit(5), np.ones((scale, scale), np.uint8)))
    caption = text_of(children).strip()
    assert caption.startswith("img-run · digits · step 5 · ")
    assert "8×8 px, drawn ×32" in caption


def test_large_and_rgba_images_keep_their_pixels(store, text_of):
    children = page.image_view(RUN, "photo", 0)
    np.testing.assert_array_equal(decoded(picture(children).src), photo())
    assert "400×300 px" in text_of(children) and "drawn" not in text_of(children)
    rgba = decoded(picture(page.image_view(RUN, "rgba", 0.0)).src)
    assert rgba.shape[2] == 4 and rgba[0, 0].tolist() == [200, 0, 0, 100]


def test_no_step_chosen_shows_the_latest(store, text_of):
    assert "step 10" in text_of(page.image_view(RUN, "digits", None))


@pytest.mark.parametrize("run, tag, step, expected", [
    (RUN, "digits", 3, "The step slider's position must be a whole number from 0 to 2, got 3."),
    (RUN, "digits", -1, "The step slider's position must be a whole number from 0 to 2, got -1."),
    (RUN, "digits", 1.5, "The step slider's position must be a whole number from 0 to 2, got "
                         "1.5."),
    (RUN, "digits", "1", "The step slider's position must be a whole number from 0 to 2, got "
                         "'1'."),
    (RUN, "digits", 2 ** 70, "The step slider's position must be a whole number from 0 to 2, "
                             f"got {2 ** 70}."),
    (RUN, "digits", [1], "The step slider's position must be a whole number from 0 to 2, got "
                         "[1]."),
    (RUN, "nope", 0, "Run img-run has no image tag 'nope'."),
    (RUN, {"x": 1}, 0, "Run img-run has no image tag {'x': 1}."),
    ("gone", "digits", 0, "No run named 'gone' in the log directory."),
    ("../x", "digits", 0, "Not a run name: '../x'."),
    (5, "digits", 0, "A run name must be text, got int."),
    (None, None, None, "No readable run in the log directory."),
])
def test_hostile_inputs_become_a_message(store, text_of, run, tag, step, expected):
    assert text_of(page.image_view(run, tag, step)) == expected


def test_hostile_step_choice_and_queries_answer(store):
    *_, notice = page.step_choice(RUN, "digits", {"run": RUN, "step": "x" * 50})
    assert notice == f"The step in the address must be a step number, got {'x' * 50!r}."
    assert page.step_choice(RUN, "nope", None)[4] == "Run img-run has no image tag 'nope'."
    for query in (5, {"run": ["x"]}, {"run": RUN, "tag": ["x"], "step": {"a": 1}}):
        assert page.run_choice(query)[1] == RUN
        assert page.tag_choice(RUN, query)[1] == "digits"


def test_an_event_file_run_answers_the_same_queries(tmp_path, text_of):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter
    writer = SummaryWriter(str(tmp_path / TORCH))
    for step in (1, 4):
        writer.add_image("sample", np.full((3, 8, 8), step * 40, np.uint8), step)
    writer.close()
    data.set_logdir(tmp_path)
    try:
        assert page.run_choice(None)[1] == TORCH
        assert page.tag_choice(TORCH, None) == (["sample"], "sample")
        assert page.step_choice(TORCH, "sample", None)[2] == {0: "1", 1: "4"}
        children = page.image_view(TORCH, "sample", 1)
        assert (decoded(picture(children).src) == 160).all()
        assert "tb-images · sample · step 4" in text_of(children)
    finally:
        data.set_logdir("runs")
