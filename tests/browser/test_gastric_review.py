"""A reviewer edits a Gastric-X reference report with the CT and the indicators on screen; the
adjudicator reads the two reviewers' edits as word diffs and takes one. A reviewer corrects a
tumor box by drawing it in the viewer."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from annotations.models import Item, ItemRevision, Review, Volume
from annotations.services.cases import gastricx_import
from annotations.services.review import assignments_create, review_submit
from tests.browser.conftest import docs_picture, screenshot
from tests.browser.test_ct_tools import at_voxel, drag
from tests.browser.test_ct_viewer import stage_box
from tests.cases.builders import write_case
from tests.factories import make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ADDED = "Two perigastric nodes, the largest 9 mm in short axis."
BOX_FIELDS = ("x0", "y0", "z0", "x1", "y1", "z1")


@pytest.fixture
def report_item(tmp_path):
    people = make_personas()
    write_case(tmp_path / "cases", "GX-BROWSER-R")
    benchmark = gastricx_import(path=tmp_path / "cases", name="gx-report", user=people["curator"])
    report = Item.objects.get(benchmark=benchmark, kind="open", category="ct")
    assignments_create(
        benchmark=benchmark,
        reviewers=[people["reviewer"], people["reviewer2"]],
        filters={"task": "report_generation"},
    )
    return people, Item.objects.get(pk=report.pk)


def switch_to(page, login, username):
    page.context.clear_cookies()
    login(username)


def test_a_reviewer_edits_a_report_beside_the_ct_and_the_adjudicator_reads_the_diff(
    page, live_server, login, report_item
):
    people, item = report_item
    original = item.reference
    # Four phases of voxels to a live server on a shared machine: patience, not a time limit.
    page.set_default_timeout(120_000)
    switch_to(page, login, people["reviewer"].username)
    page.goto(f"{live_server.url}/review/items/{item.pk}/")
    page.wait_for_selector("[data-case-panel] #ct-viewer[data-loaded=true]")
    # The four phases drawn on their canvases, and CEA flagged high in words, not by colour.
    assert page.locator(".ct-canvas:visible").count() == 4
    flag = page.locator("[data-out-of-range]")
    assert flag.count() == 1 and flag.is_visible() and "high" in flag.inner_text()
    assert page.is_visible("[data-case-reports]")  # the case's other reports
    page.keyboard.press("2")  # a window preset on a case page, never a verdict
    expect(page.locator("[data-review-form]")).to_have_attribute("data-mode", "view")

    page.click("[data-review-form] [data-mode-set=edit]")
    editor = page.locator("textarea[name=reference]")
    expect(editor).to_be_visible()
    expect(editor).to_have_value(original)
    editor.fill(f"{original}\n{ADDED}")
    screenshot(page, "gastric_review_edit")
    page.screenshot(path=str(docs_picture("gastric-review.png")), full_page=False)
    page.click("[data-review-form] button[data-verdict=edit]")
    page.wait_for_load_state("networkidle")

    # My edit is recorded: back on the item, it reads as a diff against the report.
    page.goto(f"{live_server.url}/review/items/{item.pk}/")
    own = page.locator("[data-own-edit]")
    assert own.is_visible() and ADDED in own.locator("ins").inner_text()

    # The second reviewer rewrites the impression instead: a dispute.
    other = original.replace("Wall thickening", "Marked wall thickening")
    review_submit(
        item=item,
        reviewer=people["reviewer2"],
        version=1,
        verdict="edit",
        content={"reference": other},
    )
    assert Item.objects.get(pk=item.pk).status == "disputed"

    switch_to(page, login, people["adjudicator"].username)
    page.goto(f"{live_server.url}/adjudication/items/{item.pk}/")
    page.wait_for_selector("[data-case-panel] #ct-viewer[data-loaded=true]")
    diffs = page.locator("[data-report-diff]")
    assert diffs.count() == 3  # A, B, and B against A
    assert ADDED in diffs.nth(0).locator("ins").inner_text()
    assert "Marked" in diffs.nth(1).locator("ins").inner_text()
    screenshot(page, "gastric_adjudicate_diff")
    page.click("[data-adjudicate-form] [data-choice=a]")
    page.wait_for_load_state("networkidle")

    item.refresh_from_db()
    assert (item.status, item.version) == ("adjudicated", 2)
    assert item.reference == f"{original}\n{ADDED}"
    assert ItemRevision.objects.get(item=item, version=2).content["reference"] == item.reference


@pytest.fixture(autouse=True)
def _media(settings, tmp_path_factory):
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    yield
    shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)


@pytest.fixture
def box_item(tmp_path):
    people = make_personas()
    write_case(tmp_path / "cases", "GX-BROWSER-B")
    benchmark = gastricx_import(path=tmp_path / "cases", name="gx-box", user=people["curator"])
    assignments_create(
        benchmark=benchmark,
        reviewers=[people["reviewer"], people["reviewer2"]],
        filters={"task": "localization"},
    )
    item = Item.objects.get(benchmark=benchmark, kind="box", target__phase="venous")
    return people, item


def test_a_reviewer_corrects_a_tumor_box_by_drawing_it_in_the_viewer(
    page, live_server, login, box_item
):
    people, item = box_item
    volume = Volume.objects.get(case=item.case, phase="venous")
    page.set_default_timeout(120_000)
    switch_to(page, login, people["reviewer"].username)
    page.goto(f"{live_server.url}/review/items/{item.pk}/")
    page.wait_for_selector("[data-case-panel] #ct-viewer[data-loaded=true]")
    z = int(page.locator('.ct-viewport[data-phase="venous"]').get_attribute("data-z"))

    # Asked before a box is selected, the form says what to do and keeps the imported box.
    page.click("[data-review-form] [data-mode-set=edit]")
    page.click("[data-box-use]")
    expect(page.locator("[data-box-use-status]")).to_contain_text("Select or draw a box")
    expect(page.locator("input[name=x0]")).to_have_value(str(item.target["voxel"][0]))

    # Draw the tumor's extent on the venous phase with the box tool, then use it.
    page.keyboard.press("Escape")
    page.locator("#ct-viewer").focus()
    page.keyboard.press("b")
    stage = stage_box(page, "venous")
    drag(page, at_voxel(stage, volume, 10.5, 10.5), at_voxel(stage, volume, 19.5, 17.5))
    page.click("#box-save")
    page.wait_for_selector("#box-status:has-text('Saved.')")
    page.click("[data-review-form] [data-mode-set=edit]")
    page.click("[data-box-use]")
    expect(page.locator("[data-box-use-status]")).to_have_text("Filled from the selected box.")
    # Drawn on one slice, the correction keeps the item box's slices (issue 28: it shrank them).
    z0, z1 = item.target["voxel"][2], item.target["voxel"][5]
    assert z0 <= z < z1
    fields = [page.locator(f"input[name={name}]").input_value() for name in BOX_FIELDS]
    assert fields == [str(v) for v in (10, 10, z0, 20, 18, z1)]
    page.click("[data-review-form] button[data-verdict=edit]")
    page.wait_for_load_state("networkidle")

    review = Review.objects.get(item=item, reviewer=people["reviewer"])
    assert review.verdict == "edit"
    assert review.content["target"]["voxel"] == [10, 10, z0, 20, 18, z1]
    assert review.content["target"]["phase"] == "venous"
