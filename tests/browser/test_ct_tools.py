"""The CT viewer's OHIF-like tools: the grid fits the window, zoom and pan, enlarging one phase,
a crosshair across phases, lengths in mm; CT boxes moved, deleted and undone."""

from __future__ import annotations

import json
import math
import re
import shutil

import pytest
from playwright.sync_api import expect

from annotations.imaging import ct
from annotations.models import Box, Case, Volume
from annotations.services.cases import gastricx_import
from annotations.services.review import assignments_create
from tests.browser import test_ct_viewer
from tests.browser.conftest import docs_picture, screenshot
from tests.browser.test_ct_viewer import stage_box
from tests.cases.builders import write_case
from tests.factories import make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(name="seeded_case")
def _seeded_case(tmp_path):
    people = make_personas()
    write_case(tmp_path / "cases", "GX-BROWSER-01")
    benchmark = gastricx_import(path=tmp_path / "cases", name="gx-browser", user=people["curator"])
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]])
    return people, Case.objects.get(case_id="GX-BROWSER-01")


def open_case(page, live_server, login, people, case):
    page.set_default_timeout(45_000)  # the shared test machine can be slow to serve a page
    test_ct_viewer.open_case(page, live_server, login, people, case)


def at_voxel(stage: dict, volume: Volume, x: float, y: float) -> tuple[float, float]:
    """The screen point of continuous voxel coordinates (x, y) on a phase's stage."""
    return (
        stage["x"] + x * stage["width"] / volume.size_x,
        stage["y"] + y * stage["height"] / volume.size_y,
    )


def drag(page, start, end, steps: int = 6):
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*end, steps=steps)
    page.mouse.up()


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_the_four_phases_and_their_sliders_fit_the_window(
    page, live_server, login, seeded_case, size
):
    people, case = seeded_case
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_case(page, live_server, login, people, case)
    boxes = [
        page.locator(selector).nth(i).bounding_box()
        for selector in (".ct-viewport", ".ct-slider")
        for i in range(4)
    ]
    for box in boxes:
        assert box["y"] >= 0 and box["y"] + box["height"] <= size[1], (size, box)
        assert box["x"] + box["width"] <= size[0]
    assert page.evaluate("window.scrollY") == 0
    # Each phase keeps a usable picture, not a sliver.
    assert min(stage_box(page, p)["height"] for p in ("arterial", "venous")) > 200


def test_ctrl_wheel_zooms_drag_pans_and_zero_fits_again(page, live_server, login, seeded_case):
    people, case = seeded_case
    volume = Volume.objects.get(case=case, phase="arterial")
    open_case(page, live_server, login, people, case)
    viewport = page.locator('.ct-viewport[data-phase="arterial"]')
    stage = stage_box(page, "arterial")
    point = at_voxel(stage, volume, 40, 30)
    z_before = viewport.get_attribute("data-z")

    page.mouse.move(*point)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -120)
    page.mouse.wheel(0, -120)
    page.keyboard.up("Control")
    assert float(viewport.get_attribute("data-zoom")) == pytest.approx(1.44)
    assert viewport.get_attribute("data-z") == z_before  # zooming is not scrolling
    # The voxel under the pointer stays under it.
    zoomed = stage_box(page, "arterial")
    assert at_voxel(zoomed, volume, 40, 30) == pytest.approx(point, abs=1.0)

    drag(page, point, (point[0] - 60, point[1] - 30))
    panned = stage_box(page, "arterial")
    assert (panned["x"], panned["y"]) == pytest.approx((zoomed["x"] - 60, zoomed["y"] - 30), abs=1)
    # Other phases keep their own view.
    assert page.locator('.ct-viewport[data-phase="venous"]').get_attribute("data-zoom") is None

    page.keyboard.press("0")
    assert stage_box(page, "arterial") == pytest.approx(stage, abs=0.5)


def test_double_click_enlarges_one_phase_and_back(page, live_server, login, seeded_case):
    people, case = seeded_case
    open_case(page, live_server, login, people, case)
    small = stage_box(page, "venous")

    page.locator('.ct-viewport[data-phase="venous"] .ct-stage').dblclick()
    visible = page.locator(".ct-viewport:visible")
    assert visible.count() == 1
    assert visible.get_attribute("data-phase") == "venous"
    large = stage_box(page, "venous")
    assert large["width"] > 1.5 * small["width"]
    slider = page.locator('.ct-viewport[data-phase="venous"] .ct-slider').bounding_box()
    assert slider["y"] + slider["height"] <= 900
    screenshot(page, "ct_viewer_enlarged")

    page.locator('.ct-viewport[data-phase="venous"] .ct-stage').dblclick()
    expect(page.locator(".ct-viewport:visible")).to_have_count(4)
    page.keyboard.press("e")  # the keyboard way: the active phase
    expect(page.locator(".ct-viewport:visible")).to_have_count(1)
    page.keyboard.press("e")
    expect(page.locator(".ct-viewport:visible")).to_have_count(4)


def test_the_crosshair_marks_the_same_patient_point_on_every_phase(
    page, live_server, login, seeded_case
):
    people, case = seeded_case
    arterial = Volume.objects.get(case=case, phase="arterial")
    open_case(page, live_server, login, people, case)
    z = int(page.locator('.ct-viewport[data-phase="arterial"]').get_attribute("data-z"))

    page.keyboard.press("x")
    stage = stage_box(page, "arterial")
    page.mouse.click(*at_voxel(stage, arterial, 20.5, 12.5))  # the centre of voxel (20, 12)

    def cross(phase: str) -> list[float]:
        return json.loads(
            page.locator(f'.ct-viewport[data-phase="{phase}"]').get_attribute("data-cross")
        )

    pixel = arterial.size_x / stage["width"]  # one screen pixel, in voxels
    assert cross("arterial") == pytest.approx([20, 12], abs=1.5 * pixel)
    x, y = cross("arterial")
    point = ct.index_to_lps((x, y, z), arterial.spacing, arterial.origin, arterial.direction)
    for volume in Volume.objects.filter(case=case):
        expected = ct.lps_to_index(point, volume.spacing, volume.origin, volume.direction)
        assert cross(volume.phase) == pytest.approx(list(expected[:2]), abs=0.02), volume.phase
    # The venous phase starts 1.6 mm further left and 1.4 mm further back: +2 and −2 voxels.
    assert cross("venous") == pytest.approx([x + 2, y - 2], abs=0.02)
    assert page.locator(".ct-viewport .ct-cross").count() == 8  # two lines on each phase

    page.keyboard.press("x")  # off again
    expect(page.locator(".ct-viewport .ct-cross")).to_have_count(0)


def test_the_length_tool_measures_millimetres_with_the_pixel_spacing(
    page, live_server, login, seeded_case
):
    people, case = seeded_case
    volume = Volume.objects.get(case=case, phase="non_contrast")
    sx, sy = volume.spacing[0], volume.spacing[1]
    assert (sx, sy) == (0.8, 0.7)  # anisotropic on purpose: x and y must not be mixed up
    page.set_viewport_size({"width": 1280, "height": 800})
    open_case(page, live_server, login, people, case)
    page.keyboard.press("m")
    stage = stage_box(page, "non_contrast")
    tolerance = 1.5 * volume.size_x / stage["width"] * max(sx, sy)  # a screen pixel or so

    drag(page, at_voxel(stage, volume, 10, 20), at_voxel(stage, volume, 50, 20))
    drag(page, at_voxel(stage, volume, 10, 5), at_voxel(stage, volume, 10, 45))
    drag(page, at_voxel(stage, volume, 5, 5), at_voxel(stage, volume, 35, 45))

    viewport = page.locator('.ct-viewport[data-phase="non_contrast"]')
    lengths = [float(v) for v in viewport.get_attribute("data-lengths").split()]
    expected = [40 * sx, 40 * sy, math.hypot(30 * sx, 40 * sy)]  # 32.0, 28.0, 36.8 mm
    assert lengths == pytest.approx(expected, abs=tolerance)
    labels = viewport.locator(".ct-length").all_inner_texts()
    assert labels == [f"{mm:.1f} mm" for mm in lengths]

    page.keyboard.press("x")
    page.mouse.click(*at_voxel(stage, volume, 30.5, 24.5))
    page.keyboard.press("?")
    expect(page.locator("[data-ct-help]")).to_be_visible()
    expect(page.locator("[data-ct-help]")).to_contain_text("Length in millimetres")
    path = screenshot(page, "ct_viewer_tools")
    page.keyboard.press("Escape")
    expect(page.locator("[data-ct-help]")).to_be_hidden()
    screenshot(page, "ct_viewer")
    shutil.copyfile(path.parent / "ct_viewer.png", docs_picture("ct-viewer.png"))

    # A measure belongs to its slice: the next slice shows none; back, it is there again.
    page.keyboard.press("Escape")
    page.keyboard.press("ArrowDown")
    expect(viewport).to_have_attribute("data-lengths", "")
    page.keyboard.press("ArrowUp")
    expect(viewport).to_have_attribute("data-lengths", re.compile(r"^\S+ \S+ \S+$"))


def test_a_ct_box_is_moved_deleted_and_brought_back_with_undo(
    page, live_server, login, seeded_case
):
    people, case = seeded_case
    volume = Volume.objects.get(case=case, phase="delayed")
    open_case(page, live_server, login, people, case)
    z = int(page.locator('.ct-viewport[data-phase="delayed"]').get_attribute("data-z"))
    stage = stage_box(page, "delayed")

    page.keyboard.press("b")
    drag(page, at_voxel(stage, volume, 10.5, 10.5), at_voxel(stage, volume, 19.5, 17.5))
    page.click("#box-save")
    page.wait_for_selector("#box-status:has-text('Saved.')")
    box = Box.objects.get(volume=volume, author=people["reviewer"])
    assert box.voxel == [10, 10, z, 20, 18, z + 1]

    # Drag it from inside by (+5, +3) voxels, then one more to the right with the keyboard.
    drag(page, at_voxel(stage, volume, 14.5, 13.5), at_voxel(stage, volume, 19.5, 16.5))
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#box-state').textContent.includes('version 2')")
    box.refresh_from_db()
    assert (box.voxel, box.version) == ([16, 13, z, 26, 21, z + 1], 2)

    page.keyboard.press("Delete")
    page.wait_for_selector("#box-status:has-text('withdrawn')")
    box.refresh_from_db()
    assert (box.state, box.version) == ("withdrawn", 3)
    assert page.locator('.ct-viewport[data-phase="delayed"] .ct-box').count() == 0
    page.locator('[data-filter="state"]').select_option("withdrawn")
    expect(page.locator(".box-row")).to_have_count(1)
    expect(page.locator("#box-count")).to_have_text("1 of 2 boxes")

    page.keyboard.press("Control+z")  # the delete undone
    page.wait_for_selector("#box-status:has-text('Undone.')")
    box.refresh_from_db()
    assert (box.state, box.version) == ("proposed", 4)
    page.locator("#box-status").evaluate("el => el.textContent = ''")
    page.click("#box-undo")  # the move undone
    page.wait_for_selector("#box-status:has-text('Undone.')")
    box.refresh_from_db()
    assert (box.voxel, box.version) == ([10, 10, z, 20, 18, z + 1], 5)
    assert [r.reason for r in box.revisions.all()] == [
        "drawn",
        "edited",
        "withdrawn",
        "restored",
        "edited",
    ]

    # The imported box is nobody's proposal: a reviewer selects it but cannot move or delete it.
    page.locator('[data-filter="state"]').select_option("")
    imported = Box.objects.get(volume__case=case, source="imported")
    page.locator(f'.box-row[data-box-id="{imported.pk}"] button').click()
    expect(page.locator("#box-delete")).to_be_hidden()
    expect(page.locator("#box-save")).to_be_disabled()
    page.keyboard.press("Shift+ArrowLeft")
    page.keyboard.press("Delete")
    imported.refresh_from_db()
    assert (imported.version, imported.state) == (1, "proposed")
