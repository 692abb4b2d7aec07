"""A clinician scrolls the synchronised phases, switches windows and draws a 3D box."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from annotations.imaging import ct
from annotations.models import Box, Case, Volume
from annotations.services.cases import gastricx_import
from annotations.services.review import assignments_create
from tests.browser.conftest import nav, screenshot
from tests.cases.builders import write_case
from tests.factories import make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def seeded_case(tmp_path):
    people = make_personas()
    write_case(tmp_path / "cases", "GX-BROWSER-01")
    benchmark = gastricx_import(path=tmp_path / "cases", name="gx-browser", user=people["curator"])
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]])
    return people, Case.objects.get(case_id="GX-BROWSER-01")


def labels(page) -> dict[str, dict[str, str]]:
    """Slice label, z and position (mm) of each phase's viewport, as displayed."""
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('.ct-viewport')].map(v => [
            v.dataset.phase, {
              slice: v.querySelector('[data-role=slice]').textContent,
              z: v.dataset.z,
              mm: v.dataset.positionMm,
            }]))"""
    )


def open_case(page, live_server, login, people, case):
    login(people["reviewer"].username)
    page.goto(f"{live_server.url}/cases/{case.pk}/")
    page.wait_for_selector("#ct-viewer[data-loaded=true]")


def stage_box(page, phase: str) -> dict:
    return page.locator(f'.ct-viewport[data-phase="{phase}"] .ct-stage').bounding_box()


def test_scrolling_one_phase_moves_the_others_to_the_same_patient_position(
    page, live_server, login, seeded_case
):
    people, case = seeded_case
    open_case(page, live_server, login, people, case)
    before = labels(page)
    assert before["arterial"]["slice"] == "Slice 11/20"

    stage = stage_box(page, "arterial")
    page.mouse.move(stage["x"] + stage["width"] / 2, stage["y"] + stage["height"] / 2)
    for _ in range(4):
        page.mouse.wheel(0, 120)
    page.wait_for_function(
        "document.querySelector('.ct-viewport[data-phase=arterial]').dataset.z === '14'"
    )
    after = labels(page)

    assert after["arterial"]["slice"] == "Slice 15/20"
    reference = float(after["arterial"]["mm"])
    assert reference == pytest.approx(float(before["arterial"]["mm"]) + 4 * 2.5)
    for volume in Volume.objects.filter(case=case):
        point = ct.index_to_lps(
            ((volume.size_x - 1) / 2, (volume.size_y - 1) / 2, 14 * 1.0), *_arterial(case)
        )
        expected_z = round(
            ct.lps_to_index(point, volume.spacing, volume.origin, volume.direction)[2]
        )
        shown = after[volume.phase]
        assert int(shown["z"]) == expected_z, volume.phase
        assert shown["slice"] == f"Slice {expected_z + 1}/{volume.size_z}"
        # Same patient position up to half a slice of that phase, whatever its index.
        assert abs(float(shown["mm"]) - reference) <= volume.spacing[2] / 2 + 1e-6
    assert after["non_contrast"]["z"] != after["arterial"]["z"]  # not synchronised by index

    page.keyboard.press("ArrowUp")
    page.wait_for_function(
        "document.querySelector('.ct-viewport[data-phase=arterial]').dataset.z === '13'"
    )
    screenshot(page, "ct_viewer_scrolled")

    nav(page, "review", "CT cases")
    assert page.locator("table.cases tbody tr").count() == 1
    assert "GX-BROWSER-01" in page.locator("table.cases").inner_text()
    screenshot(page, "ct_case_list")


def _arterial(case) -> tuple:
    volume = Volume.objects.get(case=case, phase="arterial")
    return volume.spacing, volume.origin, volume.direction


def test_keys_one_to_five_switch_the_window_presets(page, live_server, login, seeded_case):
    people, case = seeded_case
    open_case(page, live_server, login, people, case)
    assert page.locator("#ct-wl").inner_text() == "Soft tissue · W 400 / L 40"
    first_pixels = page.evaluate("Array.from(ctViewer.viewports[0].pixels.slice(0, 4000))")

    page.keyboard.press("3")
    expect(page.locator("#ct-wl")).to_have_text("Lung · W 1500 / L -600")
    shown = page.locator('.ct-viewport [data-role="wl"]').all_inner_texts()
    assert shown == ["W 1500 L -600"] * 4
    assert page.evaluate("Array.from(ctViewer.viewports[0].pixels.slice(0, 4000))") != first_pixels

    page.keyboard.press("2")
    expect(page.locator("#ct-wl")).to_have_text("Liver · W 150 / L 90")
    page.keyboard.press("4")
    expect(page.locator("#ct-wl")).to_have_text("Bone · W 2500 / L 480")
    page.keyboard.press("5")
    expect(page.locator("#ct-wl")).to_have_text("Brain · W 80 / L 40")
    page.keyboard.press("1")
    expect(page.locator("#ct-wl")).to_have_text("Soft tissue · W 400 / L 40")
    expect(page.locator('button[data-preset="Soft tissue"]')).to_have_attribute("class", "on")


def test_a_drawn_3d_box_is_saved_and_found_after_reload_with_its_mm_corners(
    page, live_server, login, seeded_case
):
    people, case = seeded_case
    volume = Volume.objects.get(case=case, phase="non_contrast")
    open_case(page, live_server, login, people, case)
    first_z = int(labels(page)["non_contrast"]["z"])

    page.keyboard.press("b")
    stage = stage_box(page, "non_contrast")
    start = (stage["x"] + stage["width"] * 0.30, stage["y"] + stage["height"] * 0.35)
    end = (stage["x"] + stage["width"] * 0.62, stage["y"] + stage["height"] * 0.70)
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*end, steps=8)
    page.mouse.up()
    expect(page.locator("#box-editor")).to_be_visible()
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("l")
    expect(page.locator("#box-last")).to_have_value(str(first_z + 4))
    page.locator("#box-label").select_option("tumor")
    page.click("#box-save")
    page.wait_for_selector("#box-status:has-text('Saved.')")
    screenshot(page, "ct_viewer_box_drawn")

    def voxel_of(x: float, y: float) -> tuple[int, int]:
        column = int((x - stage["x"]) / stage["width"] * volume.size_x)
        row = int((y - stage["y"]) / stage["height"] * volume.size_y)
        return column, row

    (x0, y0), (x1, y1) = voxel_of(*start), voxel_of(*end)
    expected_voxel = [x0, y0, first_z, x1 + 1, y1 + 1, first_z + 4]

    page.reload()
    page.wait_for_selector("#ct-viewer[data-loaded=true]")
    row = page.locator('.box-row[data-phase="non_contrast"]')
    assert row.count() == 1
    shown_voxel = json.loads(row.get_attribute("data-voxel"))
    shown_mm = json.loads(row.get_attribute("data-mm"))
    assert shown_voxel == expected_voxel
    expected_mm = ct.box_voxel_to_mm(expected_voxel, ct.VolumeGeometry.of(volume))
    for shown_corner, expected_corner in zip(shown_mm, expected_mm, strict=True):
        assert shown_corner == pytest.approx(expected_corner)
    # The origin is (-250, 180, -900) with spacing (0.8, 0.7, 5): checked by hand too.
    assert shown_mm[0] == pytest.approx([-250 + 0.8 * x0, 180 + 0.7 * y0, -900 + 5 * first_z])
    assert f"slices {first_z + 1}–{first_z + 4}" in row.inner_text()
    box = Box.objects.get(volume=volume)
    assert box.voxel == expected_voxel and box.author == people["reviewer"]
    assert box.revisions.count() == 1

    # The reviewer's box is their proposal: accepting it is adjudication's or a curator's.
    row.locator("button").click()
    expect(page.locator("#box-accept")).to_be_hidden()
    expect(page.locator("#box-reject")).to_be_hidden()
    page.keyboard.press("a")
    box.refresh_from_db()
    assert (box.state, box.version) == ("proposed", 1)

    page.context.clear_cookies()
    login(people["curator"].username)
    page.goto(f"{live_server.url}/cases/{case.pk}/")
    page.wait_for_selector("#ct-viewer[data-loaded=true]")
    page.locator('.box-row[data-phase="non_contrast"] button').click()
    page.keyboard.press("a")  # a curator's correction: accepted, recorded as such
    page.wait_for_selector("#box-status:has-text('Box accepted.')")
    box.refresh_from_db()
    assert (box.state, box.version) == ("accepted", 2)
    assert box.revisions.last().note == "Curator's correction"


def test_dragging_a_drawn_boxs_edges_resizes_it_before_it_is_saved(
    page, live_server, login, seeded_case
):
    people, case = seeded_case
    volume = Volume.objects.get(case=case, phase="venous")
    open_case(page, live_server, login, people, case)
    z = int(labels(page)["venous"]["z"])
    stage = stage_box(page, "venous")
    sx, sy = stage["width"] / volume.size_x, stage["height"] / volume.size_y

    def centre(column: int, row: int) -> tuple[float, float]:
        """The screen point in the middle of a voxel, away from any boundary."""
        return stage["x"] + (column + 0.5) * sx, stage["y"] + (row + 0.5) * sy

    def drag(start, end):
        page.mouse.move(*start)
        page.mouse.down()
        page.mouse.move(*end, steps=6)
        page.mouse.up()

    page.keyboard.press("b")
    drag(centre(8, 10), centre(15, 20))  # voxels x 8–15, y 10–20
    # The right edge (x1 = 16), grabbed halfway down, goes to column 24; then the bottom edge
    # (y1 = 21) goes up to row 16.
    drag((stage["x"] + 16 * sx, centre(0, 15)[1]), centre(24, 15))
    drag((centre(12, 0)[0], stage["y"] + 21 * sy), centre(12, 16))
    page.click("#box-save")
    page.wait_for_selector("#box-status:has-text('Saved.')")

    box = Box.objects.get(volume=volume, author=people["reviewer"])  # beside the imported one
    assert box.voxel == [8, 10, z, 25, 17, z + 1]


def test_the_endoscopy_image_zooms_pans_and_takes_a_2d_box(page, live_server, login, seeded_case):
    people, case = seeded_case
    open_case(page, live_server, login, people, case)
    image = case.endoscopy_image
    frame = page.locator("#endo-panel .endo-frame")
    frame.scroll_into_view_if_needed()
    area = frame.bounding_box()
    middle = (area["x"] + area["width"] / 2, area["y"] + area["height"] / 2)

    page.mouse.move(*middle)
    page.mouse.wheel(0, -120)  # zoom in about the pointer
    zoomed = page.eval_on_selector("#endo-panel .endo-inner", "el => el.style.transform")
    assert "scale(1.2)" in zoomed
    page.mouse.down()
    page.mouse.move(middle[0] + 40, middle[1] + 25, steps=4)  # pan
    page.mouse.up()
    panned = page.eval_on_selector("#endo-panel .endo-inner", "el => el.style.transform")
    assert panned != zoomed
    page.mouse.dblclick(*middle)  # back to the whole image
    assert "scale(1)" in page.eval_on_selector(
        "#endo-panel .endo-inner", "el => el.style.transform"
    )

    page.click("#endo-draw")
    inner = page.locator("#endo-panel .endo-inner").bounding_box()  # the image itself
    px, py = inner["width"] / image.width, inner["height"] / image.height

    def centre(x: int, y: int) -> tuple[float, float]:
        return inner["x"] + (x + 0.5) * px, inner["y"] + (y + 0.5) * py

    page.mouse.move(*centre(20, 15))
    page.mouse.down()
    page.mouse.move(*centre(60, 50), steps=6)
    page.mouse.up()
    page.locator("#endo-label").select_option("lesion")
    page.click("#endo-save")
    page.wait_for_selector("#endo-status:has-text('Saved.')")
    assert page.inner_text("#endo-count") == "1"
    screenshot(page, "endoscopy_box")

    box = Box.objects.get(image=image)
    assert (box.label, box.voxel) == ("lesion", [20, 15, 61, 51])
    assert box.author == people["reviewer"]
