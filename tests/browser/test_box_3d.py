"""3D boxes edited as 3D: a correction drawn on one CT slice keeps the box's slices unless the
reviewer sets them (First/Last slice), and the change reads before/after on the slices, in
voxels and in mm. A drag that starts on a box pans; box captions never cover each other."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotations.models import Box, Review, Volume
from tests.browser.conftest import screenshot
from tests.browser.test_ct_tools import at_voxel, drag
from tests.browser.test_ct_viewer import stage_box
from tests.browser.test_gastric_review import _media, box_item, switch_to  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BOX_FIELDS = ("x0", "y0", "z0", "x1", "y1", "z1")


def fields(page) -> list[int]:
    return [int(page.locator(f"input[name={name}]").input_value()) for name in BOX_FIELDS]


def test_a_correction_drawn_on_one_slice_keeps_the_box_slices(page, live_server, login, box_item):  # noqa: F811
    people, item = box_item
    volume = Volume.objects.get(case=item.case, phase="venous")
    original = list(item.target["voxel"])
    z0, z1 = original[2], original[5]
    page.set_default_timeout(120_000)
    switch_to(page, login, people["reviewer"].username)
    page.goto(f"{live_server.url}/review/items/{item.pk}/")
    page.wait_for_selector("[data-case-panel] #ct-viewer[data-loaded=true]")
    if not page.locator("details.case-boxes[open]").count():
        page.locator(".case-boxes summary").click()

    # Draw the new outline on one slice of the box (the viewer sits inside z0..z1).
    z = int(page.locator('.ct-viewport[data-phase="venous"]').get_attribute("data-z"))
    assert z0 <= z < z1
    page.locator("#ct-viewer").focus()
    page.keyboard.press("b")
    stage = stage_box(page, "venous")
    drag(page, at_voxel(stage, volume, 8.5, 9.5), at_voxel(stage, volume, 21.5, 19.5))
    page.click("[data-review-form] [data-mode-set=edit]")
    page.click("[data-box-use]")
    expect(page.locator("[data-box-use-status]")).to_have_text("Filled from the selected box.")
    assert fields(page) == [8, 9, z0, 22, 20, z1]
    change = page.locator("[data-box-change]")
    expect(change).to_contain_text(f"slices {z0 + 1}–{z1}")
    expect(page.locator("[data-box-kept-slices]")).to_be_visible()
    sx, sy, sz = volume.spacing
    before_mm = " × ".join(
        f"{n * s:.1f}"
        for n, s in zip(
            (original[3] - original[0], original[4] - original[1], z1 - z0),
            (sx, sy, sz),
            strict=True,
        )
    )
    expect(change).to_contain_text(f"{before_mm} mm")
    expect(change).to_contain_text(f"14 × 11 × {z1 - z0} voxels")
    # On the slices: the box before (dashed, captioned) beside the new one.
    venous = page.locator('.ct-viewport[data-phase="venous"]')
    expect(venous.locator(".ct-box.before")).to_have_count(1)
    expect(venous.locator(".ct-box.draft")).to_have_count(1)
    # Three boxes at one corner (the imported one, before, the new one): no caption covers another.
    rects = venous.locator(".ct-box span").evaluate_all(
        "tags => tags.map((t) => { const r = t.getBoundingClientRect();"
        " return [r.left, r.top, r.right, r.bottom]; })"
    )
    assert len(rects) >= 3
    for i, a in enumerate(rects):
        for b in rects[i + 1 :]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
    screenshot(page, "box_3d_before_after")

    # Setting a slice bound explicitly changes the depth: last slice = this slice.
    page.locator("#ct-viewer").focus()
    page.keyboard.press("l")
    page.click("[data-box-use]")
    assert fields(page)[2:6:3] == [z0, z + 1]
    expect(page.locator("[data-box-kept-slices]")).to_have_count(0)
    page.click("[data-review-form] button[data-verdict=edit]")
    page.wait_for_load_state("networkidle")
    review = Review.objects.get(item=item, reviewer=people["reviewer"])
    assert review.content["target"]["voxel"] == [8, 9, z0, 22, 20, z + 1]


def test_a_drag_on_a_box_pans_and_a_click_selects_it(page, live_server, login, box_item):  # noqa: F811
    people, item = box_item
    volume = Volume.objects.get(case=item.case, phase="venous")
    box = Box.objects.get(volume=volume)
    page.set_default_timeout(120_000)
    switch_to(page, login, people["reviewer"].username)
    page.goto(f"{live_server.url}/review/items/{item.pk}/")
    page.wait_for_selector("[data-case-panel] #ct-viewer[data-loaded=true]")
    x0, y0, _z0, x1, y1, _z1 = box.voxel
    inside = ((x0 + x1) / 2, (y0 + y1) / 2)
    pannable = page.locator('.ct-viewport[data-phase="venous"] .ct-stage')
    expect(pannable).to_have_attribute("style", re.compile(r"^(?!.*translate)"))
    stage = stage_box(page, "venous")
    start = at_voxel(stage, volume, *inside)
    drag(page, start, (start[0] + 40, start[1] + 25))
    expect(pannable).to_have_attribute("style", re.compile(r"translate\(40px, 25px\)"))
    expect(page.locator("#box-editor")).to_be_hidden()  # not selected by a drag
    stage = stage_box(page, "venous")
    page.mouse.click(*at_voxel(stage, volume, *inside))
    expect(page.locator("#box-editor")).to_be_visible()
    expect(page.locator("#box-title")).to_contain_text(f"Box #{box.pk}")
