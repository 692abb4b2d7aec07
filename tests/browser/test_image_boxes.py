"""2D boxes on the review page: drawn, moved, resized, relabelled, deleted and undone, by mouse
and keyboard, every change a revision; coordinate options drawn on the image with their letters."""

from __future__ import annotations

import json
import shutil

import pytest
from playwright.sync_api import expect

from annotations.models import Box, BoxRevision
from annotations.services import boxes as box_services
from annotations.services.review import assignments_create
from demo.endobench import endobench_rows
from tests.browser.conftest import docs_picture, screenshot
from tests.factories import jpeg_bytes, make_benchmark, make_item, make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WIDTH, HEIGHT = 640, 480
ROI_OPTIONS = [  # normalized, as EndoBench's ROI-selection questions
    "[0.10, 0.20, 0.30, 0.45]",
    "[0.55, 0.15, 0.80, 0.40]",
    "[0.20, 0.60, 0.45, 0.90]",
    "[0.60, 0.55, 0.90, 0.85]",
]


@pytest.fixture
def roi_item():
    people = make_personas()
    benchmark = make_benchmark("endo-boxes", family="endobench")
    item = make_item(
        benchmark,
        index=1,
        image=jpeg_bytes((150, 70, 60), size=(WIDTH, HEIGHT)),
        question="Which bounding box [x0, y0, x1, y1] (relative to image size) contains the polyp?",
        options=ROI_OPTIONS,
        answer="B",
        category="Spatial Localization",
    )
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]])
    return people, item


def open_review(page, live_server, login, people, item, username="reviewer"):
    page.set_default_timeout(45_000)  # the shared test machine can be slow to serve a page
    login(people[username].username)
    page.goto(f"{live_server.url}/review/items/{item.pk}/")
    page.wait_for_selector("html[data-review-keys=ready] [data-box-tool][data-loaded=true]")


def layer_box(page) -> dict:
    return page.locator("[data-box-layer]").first.bounding_box()


def screen(layer: dict, x: float, y: float, image=None) -> tuple[float, float]:
    """The screen point of image pixel coordinates (x, y)."""
    width, height = (image.width, image.height) if image else (WIDTH, HEIGHT)
    return layer["x"] + x * layer["width"] / width, layer["y"] + y * layer["height"] / height


def drag(page, start, end, steps: int = 8):
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*end, steps=steps)
    page.mouse.up()


def demo_roi_row() -> tuple[dict, bytes]:
    """The first ROI-selection question of the demo's EndoBench generator, with its frame."""
    images: dict[int, bytes] = {}
    for row in endobench_rows(seed=11, n_items=400):
        if isinstance(row["image"], bytes):
            images[row["index"]] = row["image"]
        if row["task"] == "ROI Selection":
            image = row["image"]
            return row, image if isinstance(image, bytes) else images[image]
    raise AssertionError("the demo generator asks no ROI-selection question")


def test_coordinate_options_are_drawn_with_their_letters(page, live_server, login):
    people = make_personas()
    benchmark = make_benchmark("endobench-demo", family="endobench")
    row, jpeg = demo_roi_row()
    letters = [letter for letter in "ABCDEF" if row.get(letter)]
    item = make_item(
        benchmark,
        index=row["index"],
        image=jpeg,
        question=row["question"],
        options=[row[letter] for letter in letters],
        answer=row["answer"],
        category=row["category"],
        task=row["task"],
        subtask=row["subtask"],
        scene=row["scene"],
        dataset=row["dataset"],
    )
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]])
    image = item.item_images.get().image
    page.set_viewport_size({"width": 1440, "height": 900})
    open_review(page, live_server, login, people, item)

    note = page.locator("[data-option-note]")
    assert note.get_attribute("data-convention") == "normalized"
    assert "fractions of the image size (normalized, 0–1)" in note.inner_text()
    layer = layer_box(page)
    options = page.locator(".option-box")
    assert [options.nth(i).inner_text() for i in range(options.count())] == letters
    for i, letter in enumerate(letters):
        x0, y0, x1, y1 = json.loads(row[letter])
        shown = options.nth(i).bounding_box()
        w, h = image.width, image.height
        expected = (*screen(layer, x0 * w, y0 * h, image), *screen(layer, x1 * w, y1 * h, image))
        got = (shown["x"], shown["y"], shown["x"] + shown["width"], shown["y"] + shown["height"])
        assert got == pytest.approx(expected, abs=1.5), letter
    path = screenshot(page, "review_option_boxes")
    shutil.copyfile(path, docs_picture("screenshot.png"))

    # They follow the zoom, and can be hidden.
    pane = page.locator("[data-zoom-pane]").first.bounding_box()
    page.mouse.move(pane["x"] + pane["width"] / 2, pane["y"] + pane["height"] / 2)
    page.mouse.wheel(0, -240)
    before, layer = layer, layer_box(page)
    assert layer["width"] == pytest.approx(1.15 * before["width"], abs=1)  # zoomed in
    x0, y0, _, _ = json.loads(row[letters[1]])
    zoomed = options.nth(1).bounding_box()
    assert (zoomed["x"], zoomed["y"]) == pytest.approx(
        screen(layer, x0 * image.width, y0 * image.height, image), abs=1.5
    )
    page.uncheck("[data-option-toggle]")
    assert page.locator(".option-box").count() == 0


def test_pixel_coordinate_options_are_said_to_be_pixels(page, live_server, login):
    people = make_personas()
    benchmark = make_benchmark("endo-pixels", family="endobench")
    item = make_item(
        benchmark,
        index=1,
        image=jpeg_bytes((150, 70, 60), size=(WIDTH, HEIGHT)),
        options=["[64, 96, 192, 216]", "[352, 72, 512, 192]", "[500, 400, 700, 470]"],
    )
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]])
    open_review(page, live_server, login, people, item)
    note = page.locator("[data-option-note]")
    assert note.get_attribute("data-convention") == "pixels"
    assert "Option C does not fit the image." in note.inner_text()
    layer = layer_box(page)
    first = page.locator('.option-box[data-letter="A"]').bounding_box()
    assert (first["x"], first["y"]) == pytest.approx(screen(layer, 64, 96), abs=1.5)


def test_a_reviewer_draws_moves_resizes_relabels_deletes_and_undoes_a_box(
    page, live_server, login, roi_item
):
    people, item = roi_item
    image = item.item_images.get().image
    open_review(page, live_server, login, people, item)
    layer = layer_box(page)

    # Draw: B, then a drag.
    page.keyboard.press("b")
    page.locator("[data-box-label]").select_option("polyp")
    drag(page, screen(layer, 100, 80), screen(layer, 260, 200))
    page.wait_for_selector("[data-box-status]:has-text('Box saved.')")
    box = Box.objects.get(image=image)
    x0, y0, x1, y1 = box.voxel
    assert (box.label, box.author, box.state) == ("polyp", people["reviewer"], "proposed")
    assert (x0, y0) == pytest.approx((100, 80), abs=3) and (x1, y1) == pytest.approx(
        (260, 200), abs=3
    )

    def saved(version: int) -> Box:
        page.wait_for_function(
            f"document.querySelector('.box-row[data-box-id=\"{box.pk}\"]') && "
            f"window.imageBoxTool.find({box.pk}).box.version === {version}"
        )
        return Box.objects.get(pk=box.pk)

    # Move: drag from inside by (+80, +40) pixels.
    drag(
        page,
        screen(layer, (x0 + x1) / 2, (y0 + y1) / 2),
        screen(layer, (x0 + x1) / 2 + 80, (y0 + y1) / 2 + 40),
    )
    moved = saved(2)
    mx0, my0, mx1, my1 = moved.voxel
    assert (mx0 - x0, my0 - y0) == pytest.approx((80, 40), abs=3)
    assert (mx1 - mx0, my1 - my0) == (x1 - x0, y1 - y0)  # the same size

    # Resize: the south-east handle out by (+40, +30).
    handle = page.locator(f'.img-box[data-box-id="{box.pk}"] .box-handle.se').bounding_box()
    corner = (handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2)
    drag(
        page,
        corner,
        (corner[0] + 40 * layer["width"] / WIDTH, corner[1] + 30 * layer["height"] / HEIGHT),
    )
    resized = saved(3)
    assert resized.voxel[:2] == moved.voxel[:2]
    assert (resized.voxel[2] - mx1, resized.voxel[3] - my1) == pytest.approx((40, 30), abs=3)

    # Keyboard: Shift+arrows move the selected box by 5 pixels; saved once the keys pause.
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Shift+ArrowUp")
    nudged = saved(4)
    assert nudged.voxel == [
        resized.voxel[0] + 10,
        resized.voxel[1] - 5,
        resized.voxel[2] + 10,
        resized.voxel[3] - 5,
    ]
    assert page.url.endswith(f"/review/items/{item.pk}/")  # ArrowRight did not go to the next item

    # Relabel.
    page.locator("[data-box-label]").select_option("lesion")
    relabelled = saved(5)
    assert relabelled.label == "lesion"

    # Delete (withdraw), then undo it, then undo the relabel.
    page.keyboard.press("Delete")
    page.wait_for_selector("[data-box-status]:has-text('withdrawn')")
    assert saved(6).state == "withdrawn"
    assert page.locator(".img-box").count() == 0
    page.locator('[data-filter="state"]').select_option("withdrawn")
    expect(page.locator("[data-box-count]")).to_have_text("1 of 1 boxes")
    page.locator('[data-filter="state"]').select_option("")
    screenshot(page, "review_box_withdrawn")

    page.keyboard.press("Control+z")
    assert saved(7).state == "proposed"
    page.click("[data-box-undo]")
    restored = saved(8)
    assert (restored.label, restored.voxel) == ("polyp", nudged.voxel)
    assert list(BoxRevision.objects.filter(box=box).values_list("reason", flat=True)) == [
        "drawn",
        "edited",
        "edited",
        "edited",
        "edited",
        "withdrawn",
        "restored",
        "edited",
    ]
    screenshot(page, "review_box_edited")


def test_another_reviewers_box_is_hidden_and_an_imported_one_is_selectable_but_not_changed(
    page, live_server, login, roi_item
):
    people, item = roi_item
    image = item.item_images.get().image
    theirs = box_services.box_create_2d(
        image=image, label="polyp", coords=[300, 100, 420, 220], user=people["reviewer2"]
    )
    open_review(page, live_server, login, people, item)
    layer = layer_box(page)
    # Blinded: the other reviewer's proposal is not on the page while the review is open.
    page.wait_for_selector("[data-box-count]:has-text('box')")  # the list has loaded
    assert page.locator(f'.img-box[data-box-id="{theirs.pk}"]').count() == 0
    # The same box as part of the imported benchmark is shown, and stays nobody's to change.
    Box.objects.filter(pk=theirs.pk).update(source="imported")
    page.reload()
    layer = layer_box(page)
    element = page.locator(f'.img-box[data-box-id="{theirs.pk}"]')
    element.focus()  # Tab reaches boxes; focusing one selects it
    assert element.get_attribute("aria-pressed") == "true"
    assert page.locator(".box-handle").count() == 0
    assert page.locator("[data-box-delete]").is_disabled()
    drag(page, screen(layer, 360, 160), screen(layer, 420, 200))
    page.keyboard.press("Shift+ArrowLeft")
    page.keyboard.press("Delete")
    page.wait_for_selector("[data-box-status]:has-text('Only your own proposed box')")
    theirs.refresh_from_db()
    assert (theirs.voxel, theirs.version, theirs.state) == ([300, 100, 420, 220], 1, "proposed")
    page.locator('[data-filter="author"]').select_option(people["reviewer2"].username)
    expect(page.locator(".box-row")).to_have_count(1)
