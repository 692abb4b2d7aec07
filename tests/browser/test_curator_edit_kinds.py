"""A curator corrects a Gastric-X case's items of every kind from their Edit page (multiple
choice, report, classification label, 3D box), each a new version, with the case's CT in view
(a box is redrawn there); the Edit page fits a phone (375 px) without sideways scroll. A curator opens a human baseline choosing the clinician (none is
preselected); the clinician answers it from its page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotations.models import Item, ItemRevision, ItemStatus, Prediction, Run, Volume
from annotations.services.cases import gastricx_import
from annotations.services.item_content import label_set
from tests.browser.conftest import screenshot
from tests.browser.test_ct_tools import at_voxel, drag
from tests.browser.test_ct_viewer import stage_box
from tests.browser.test_gastric_review import _media  # noqa: F401
from tests.cases.builders import write_case
from tests.factories import make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"


@pytest.fixture
def case_items(tmp_path):
    people = make_personas()
    write_case(tmp_path / "cases", "GX-EDIT-1")
    benchmark = gastricx_import(path=tmp_path / "cases", name="gx-edit", user=people["curator"])
    Item.objects.filter(benchmark=benchmark).update(status=ItemStatus.AGREED)
    return people, benchmark


def open_edit(page, live_server, item) -> None:
    page.goto(f"{live_server.url}/items/{item.pk}/")
    page.click("[data-edit-item]")
    page.wait_for_selector("html[data-review-keys=ready] [data-edit-form]")
    scroll_width, width = page.evaluate(WIDTHS)
    assert scroll_width <= width, item.kind  # no sideways scroll, on a phone too


def save(page, item, note: str) -> Item:
    page.fill("input[name=note]", note)
    page.click("[data-save]")
    page.wait_for_url(f"**/items/{item.pk}/")
    expect(page.locator(".messages")).to_contain_text("Saved as version 2.")
    saved = Item.objects.get(pk=item.pk)
    assert ItemRevision.objects.get(item=item, version=2).note == note
    return saved


def test_a_curator_corrects_every_kind_from_its_edit_page(page, live_server, login, case_items):
    people, benchmark = case_items
    items = Item.objects.filter(benchmark=benchmark)
    login(people["curator"].username)
    page.set_viewport_size({"width": 375, "height": 740})

    mcq = items.filter(kind="mcq").order_by("source_index").first()
    open_edit(page, live_server, mcq)
    page.fill("textarea[name=question]", "Which clinical stage fits this case?")
    saved = save(page, mcq, "Clearer question")
    assert saved.question == "Which clinical stage fits this case?"

    report = items.get(kind="open", category="ct")
    open_edit(page, live_server, report)
    page.fill("textarea[name=reference]", "Wall thickening of the greater curvature, 14 mm.")
    saved = save(page, report, "Measured")
    assert saved.reference == "Wall thickening of the greater curvature, 14 mm."

    # The T stage's item (the whole TNM code's label set is the codes of this one case).
    label = next(item for item in items.filter(kind="label") if len(label_set(item)) > 1)
    open_edit(page, live_server, label)
    choices = page.locator("select[name=label] option").all_inner_texts()
    other = next(choice for choice in choices if choice != label.content()["answer"] and choice)
    page.select_option("select[name=label]", label=other)
    saved = save(page, label, "Restaged")
    assert saved.content()["answer"] == other

    box = items.filter(kind="box").order_by("source_index").first()
    open_edit(page, live_server, box)
    screenshot(page, "item_edit_box_375")
    voxel = list(box.target["voxel"])
    page.fill("input[name=x1]", str(voxel[3] - 2))
    saved = save(page, box, "Tighter box")
    assert saved.target["voxel"] == [*voxel[:3], voxel[3] - 2, *voxel[4:]]


def test_a_human_baseline_is_opened_for_a_chosen_clinician_and_answered(
    page, live_server, login, case_items
):
    people, benchmark = case_items
    login(people["curator"].username)
    page.goto(f"{live_server.url}/benchmarks/{benchmark.name}/assign/")
    clinician = page.locator("form#baseline select[name=clinician]")
    expect(clinician).to_have_value("")  # nobody preselected, the adjudicator least of all
    clinician.select_option(people["reviewer"].username)
    page.fill("form#baseline input[name=limit]", "2")
    page.click("form#baseline button[type=submit]")
    expect(page.locator(".messages")).to_contain_text(people["reviewer"].username)
    run = Run.objects.get(kind="human", benchmark=benchmark)
    assert run.human == people["reviewer"]
    page.context.clear_cookies()

    login(people["reviewer"].username)
    page.goto(f"{live_server.url}/baseline/{run.pk}/")
    first = page.locator("[data-baseline-form] input[name=item]").input_value()
    page.locator("[data-baseline-form] .answer-btn").first.click()
    expect(page.locator("[data-baseline-form] input[name=item]")).not_to_have_value(first)
    answered = Prediction.objects.get(run=run, item_id=int(first))
    assert answered.extracted == "A"


def test_a_curator_redraws_a_3d_box_on_the_ct_of_its_edit_page(
    page, live_server, login, case_items
):
    people, benchmark = case_items
    box = Item.objects.filter(benchmark=benchmark, kind="box").order_by("source_index").first()
    volume = Volume.objects.get(case=box.case, phase=box.target["phase"])
    z0, z1 = box.target["voxel"][2], box.target["voxel"][5]
    page.set_default_timeout(60_000)  # four phases of voxels to a loaded machine
    page.set_viewport_size({"width": 1024, "height": 768})
    login(people["curator"].username)
    open_edit(page, live_server, box)
    expect(page.locator("[data-case-panel] #ct-viewer")).to_have_attribute("data-loaded", "true")
    expect(page.locator("[data-edit-form] [data-box-use]")).to_be_in_viewport()

    # The outline redrawn on one slice of the item's phase; the box keeps its slices.
    page.locator("#ct-viewer").focus()
    page.keyboard.press("b")
    stage = stage_box(page, volume.phase)
    drag(page, at_voxel(stage, volume, 3.5, 4.5), at_voxel(stage, volume, 12.5, 11.5))
    page.click("[data-box-use]")
    expect(page.locator("[data-box-use-status]")).to_have_text("Filled from the selected box.")
    expect(page.locator("[data-box-kept-slices]")).to_be_visible()
    saved = save(page, box, "Redrawn on the CT")
    assert saved.target["voxel"] == [3, 4, z0, 13, 12, z1]
